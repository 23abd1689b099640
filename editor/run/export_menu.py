"""The run console's Export menu: copy the final output, save the log, save the run record.

:class:`ExportMenu` owns the three actions and the save dialogs; what is written comes from
the console's shown run (its events and :meth:`RunConsole.run_record`), made by
:mod:`editor.run.exports`. Files are offered next to the workflow file (else in the home
folder), never in whatever folder the process was started from. A failed save ends in a
message, never in an exception.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction, QGuiApplication
from PySide6.QtWidgets import QFileDialog, QWidget

from engine import RunEvent

from .exports import write_jsonl, write_record

__all__ = ["ExportMenu", "ShownRun"]


class ShownRun(Protocol):
    """What the menu reads of the console."""

    workflow_path: str | None

    @property
    def run_id(self) -> str | None: ...

    def all_events(self) -> list[RunEvent]: ...

    def run_record(self) -> dict[str, Any]: ...

    def final_output(self) -> str | None: ...


class ExportMenu(QObject):
    """Copy final output · Save log as JSON Lines… · Save run record…"""

    def __init__(self, shown: ShownRun, parent: QWidget, on_error: Callable[[str], None]) -> None:
        super().__init__(parent)
        self._shown = shown
        self._parent = parent
        self._on_error = on_error
        self.copy_output_action = QAction("Copy final output", parent)
        self.copy_output_action.triggered.connect(self.copy_final_output)
        self.save_log_action = QAction("Save log as JSON Lines…", parent)
        self.save_log_action.triggered.connect(self.ask_export_jsonl)
        self.save_record_action = QAction("Save run record (run_<id>.json)…", parent)
        self.save_record_action.triggered.connect(self.ask_export_record)
        self.actions = [self.copy_output_action, self.save_log_action, self.save_record_action]

    def update(self, has_events: bool, has_output: bool) -> None:
        for a in (self.save_log_action, self.save_record_action):
            a.setEnabled(has_events)
        self.copy_output_action.setEnabled(has_output)

    def export_jsonl(self, path: str | Path) -> None:
        """Every event of the shown run (streamed deltas included), one JSON object per line."""
        write_jsonl(self._shown.all_events(), path)

    def export_record(self, path: str | Path | None = None) -> Path:
        """Write the AgentFlow-style record; ``path`` may be a folder (the file is then ``run_<id>.json``)."""
        return write_record(self._shown.run_record(), path)

    def copy_final_output(self) -> None:
        text = self._shown.final_output()
        if text is not None:
            QGuiApplication.clipboard().setText(text)

    def folder(self) -> Path:
        path = self._shown.workflow_path
        if path and Path(path).parent.is_dir():
            return Path(path).parent
        return Path.home()

    def ask_export_jsonl(self) -> None:
        name = str(self.folder() / f"run_{self._shown.run_id or 'log'}.jsonl")
        path, _ = QFileDialog.getSaveFileName(self._parent, "Save the run log", name, "JSON Lines (*.jsonl)")
        if path:
            self._guarded(lambda: self.export_jsonl(path))

    def ask_export_record(self) -> None:
        name = str(self.folder() / f"run_{self._shown.run_id or 'unsaved'}.json")
        path, _ = QFileDialog.getSaveFileName(self._parent, "Save the run record", name, "Run record (*.json)")
        if path:
            self._guarded(lambda: self.export_record(path))

    def _guarded(self, fn: Callable[[], Any]) -> None:
        try:
            fn()
        except OSError as err:
            self._on_error(f"Cannot save: {err.strerror or err}")
