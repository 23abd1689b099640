"""Autosave of unsaved work every few seconds (its recovery after a crash is the files
controller's, at start-up).

A big document's autosave text (a second or more to make at 100k nodes) is made on a worker
thread from a snapshot of its node and link lists, and written by the GUI thread only if the
document was neither saved, cleared nor replaced meanwhile."""

from __future__ import annotations

import logging

from PySide6.QtCore import QObject, QTimer

from ..editing import WorkflowDocument
from ..files import Autosaver
from ..window.opening import on_worker
from .session import DocumentSession

log = logging.getLogger(__name__)

AUTOSAVE_INTERVAL_MS = 5000
BACKGROUND_NODES = 2500  # above this many nodes the autosave text is made on a worker thread


class AutosaveController(QObject):
    """Writes ``autosaver``'s file when the document changed since the last write and is
    unsaved; clears it when the document is saved (clean)."""

    def __init__(
        self, parent: QObject, session: DocumentSession, document: WorkflowDocument, autosaver: Autosaver
    ) -> None:
        super().__init__(parent)
        self.session = session
        self.document = document
        self.autosaver = autosaver
        self._autosaving = False  # a big document's text is being made on a worker
        self._dirty = False
        self._timer = QTimer(self, interval=AUTOSAVE_INTERVAL_MS)
        self._timer.timeout.connect(self.autosave_now)
        self._timer.start()
        document.changed.connect(self._mark_dirty)
        document.undo_stack.cleanChanged.connect(self._on_clean_changed)

    def _on_clean_changed(self, clean: bool) -> None:
        if clean:
            self.autosaver.clear()

    def _mark_dirty(self) -> None:
        self._dirty = True

    def autosave_now(self) -> None:
        """Write the autosave file if the document changed since the last one and is unsaved."""
        if self.session.has_document and self.document.is_modified() and self._dirty:
            wf = self.document.workflow
            if len(wf.nodes) > BACKGROUND_NODES:
                self._autosave_in_background(wf)
                return
            self.autosaver.write(wf, self.document.path)
            self._dirty = False

    def _autosave_in_background(self, wf) -> None:
        if self._autosaving:
            return  # the next tick writes what changed since
        snapshot = wf.model_copy(update={"nodes": list(wf.nodes), "connections": list(wf.connections)})
        path, serial, autosaver = self.document.path, self.session.serial, self.autosaver
        generation = autosaver.generation
        self._autosaving = True
        self._dirty = False

        def done(text, error) -> None:
            self._autosaving = False
            if error is not None:  # a ValueError: text that UTF-8 cannot hold (a lone surrogate)
                log.warning("autosave failed: %s", error)
                return
            if (
                autosaver is self.autosaver
                and generation == autosaver.generation
                and serial == self.session.serial
                and self.session.has_document
                and self.document.is_modified()
            ):
                autosaver.write_text(text)

        on_worker(lambda: Autosaver.text(snapshot, path), done, "flowdesk-autosave")
