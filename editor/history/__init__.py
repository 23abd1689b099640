"""The run history panel and its helpers.

``HistoryPanel`` (a QWidget the main window docks), ``open_store_for_gui`` (open the run
store at start-up without ever stopping the app) and ``RunHistoryModel`` (one page of
runs). What a stored run did is derived by the engine's :class:`engine.RunState`. Names are
imported lazily, so importing this package loads no Qt.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HistoryPanel", "open_store_for_gui", "RunHistoryModel", "PAGE_SIZE"]

_WHERE = {"HistoryPanel": "panel", "open_store_for_gui": "store_open", "PAGE_SIZE": "panel", "RunHistoryModel": "model"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
