"""The run history panel and its helpers.

``HistoryPanel`` (a QWidget the main window docks), ``open_store_for_gui`` (open the run
store at start-up without ever stopping the app), ``RunHistoryModel`` (one page of runs)
and ``RunReplay`` (node states and followed links of a stored run, no Qt). Names are
imported lazily, so ``editor.history.replay`` can be used without loading Qt.
"""

from __future__ import annotations

from typing import Any

__all__ = ["HistoryPanel", "open_store_for_gui", "RunHistoryModel", "RunReplay", "PAGE_SIZE"]

_WHERE = {"HistoryPanel": "panel", "open_store_for_gui": "panel", "PAGE_SIZE": "panel", "RunHistoryModel": "model",
          "RunReplay": "replay"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.{_WHERE[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
