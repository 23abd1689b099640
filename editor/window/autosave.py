"""Autosave of unsaved work every few seconds, and its recovery after a crash.

A big document's autosave text (a second or more to make at 100k nodes) is made on a worker
thread from a snapshot of its node and link lists, and written by the GUI thread only if the
document was neither saved, cleared nor replaced meanwhile."""

from __future__ import annotations

import logging

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QMessageBox

from ..files import Autosaver, orphaned_autosaves
from .opening import on_worker

log = logging.getLogger(__name__)

AUTOSAVE_INTERVAL_MS = 5000
BACKGROUND_NODES = 2500  # above this many nodes the autosave text is made on a worker thread


class AutosaveMixin:
    """Writes ``self.autosaver``'s file when the document changed since the last write and is
    unsaved; clears it when the document is saved (clean)."""

    def _init_autosave(self) -> None:
        self._autosave_timer = QTimer(self, interval=AUTOSAVE_INTERVAL_MS)
        self._autosave_timer.timeout.connect(self.autosave_now)
        self._autosave_timer.start()
        self._autosave_dirty = False
        self.document.changed.connect(self._mark_autosave_dirty)
        self.document.undo_stack.cleanChanged.connect(self._on_clean_changed)

    def _on_clean_changed(self, clean: bool) -> None:
        self.setWindowModified(not clean)
        if clean:
            self.autosaver.clear()

    def _mark_autosave_dirty(self) -> None:
        self._autosave_dirty = True

    def autosave_now(self) -> None:
        """Write the autosave file if the document changed since the last one and is unsaved."""
        if self._has_document and self.document.is_modified() and self._autosave_dirty:
            wf = self.document.workflow
            if len(wf.nodes) > BACKGROUND_NODES:
                self._autosave_in_background(wf)
                return
            self.autosaver.write(wf, self.document.path)
            self._autosave_dirty = False

    def _autosave_in_background(self, wf) -> None:
        if getattr(self, "_autosaving", False):
            return  # the next tick writes what changed since
        snapshot = wf.model_copy(update={"nodes": list(wf.nodes), "connections": list(wf.connections)})
        path, serial, generation, autosaver = self.document.path, self._doc_serial, self.autosaver.generation, self.autosaver
        self._autosaving = True
        self._autosave_dirty = False

        def done(text, error) -> None:
            self._autosaving = False
            if error is not None:  # a ValueError: text that UTF-8 cannot hold (a lone surrogate)
                log.warning("autosave failed: %s", error)
                return
            if (autosaver is self.autosaver and generation == autosaver.generation and serial == self._doc_serial
                    and self._has_document and self.document.is_modified()):
                autosaver.write_text(text)

        on_worker(lambda: Autosaver.text(snapshot, path), done, "flowdesk-autosave")

    def offer_recovery(self) -> bool:
        """Offer autosaves left by a crashed session; returns True when one was restored."""
        found = orphaned_autosaves()
        if not found:
            return False
        latest = found[0]
        where = latest.original_path or "an untitled workflow"
        answer = QMessageBox.question(
            self, "Recover unsaved work?",
            f"Flowdesk closed unexpectedly with unsaved changes to {where} "
            f"({latest.workflow.display_name()}). Recover them?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes)
        for rec in found:
            try:
                rec.file.unlink()
            except OSError:
                pass
        if answer != QMessageBox.StandardButton.Yes:
            return False
        self._replace_document(latest.workflow, latest.original_path)
        self.document.undo_stack.resetClean()  # recovered work is unsaved
        self._update_title()
        self.autosave_now()
        return True
