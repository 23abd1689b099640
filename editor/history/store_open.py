"""Opening the run store for the GUI: never stops the app, says why when it cannot."""

from __future__ import annotations

import logging
import os
from typing import Protocol, runtime_checkable

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox, QWidget

from engine import RunStore, StoreError

__all__ = ["open_store_for_gui"]

log = logging.getLogger(__name__)

# Non-modal message boxes without a parent must outlive the call that shows them.
_open_boxes: set[QMessageBox] = set()


@runtime_checkable
class StoreHolder(Protocol):
    """What is given the store, or the reason it is unavailable (the history panel)."""

    def set_store(
        self, store: RunStore | None, *, reason: str = "", path: str | os.PathLike[str] | None = None
    ) -> None: ...

    def show_message(self, text: str) -> None: ...


def _show_store_error(parent: QWidget | None, text: str) -> None:
    """Tell the user the run history cannot be used, without blocking start-up."""
    box = QMessageBox(QMessageBox.Icon.Warning, "Run history unavailable", text, QMessageBox.StandardButton.Ok, parent)
    box.setInformativeText("Flowdesk works without it, but runs are not recorded or listed until this is fixed.")
    box.setWindowModality(Qt.WindowModality.NonModal)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    _open_boxes.add(box)
    box.finished.connect(lambda _r, b=box: _open_boxes.discard(b))
    box.show()


def open_store_for_gui(
    parent: QWidget | None = None, *, path: str | os.PathLike[str] | None = None, panel: StoreHolder | None = None
) -> RunStore | None:
    """Open the run store, mark runs left running by a dead process ``interrupted``.

    On :class:`StoreError` shows a non-blocking message and returns None, so the app still
    starts. With ``panel`` (or when ``parent`` is a :class:`HistoryPanel`) the panel is given
    the store, or the reason it is unavailable.
    """
    if panel is None and isinstance(parent, StoreHolder):
        panel = parent
    try:
        store = RunStore(path)
        recovered = store.recover()
    except StoreError as err:
        log.warning("%s", err)
        if panel is not None:
            panel.set_store(None, reason=str(err), path=path)
        _show_store_error(parent, str(err))
        return None
    if panel is not None:
        panel.set_store(store)
        if recovered:
            n = len(recovered)
            panel.show_message(
                f"{n} run{'s' if n != 1 else ''} left running when Flowdesk last stopped "
                f"{'were' if n != 1 else 'was'} marked interrupted."
            )
    return store
