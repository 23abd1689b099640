"""Run records in and out of the history: export a run's log (JSON Lines) or its AgentFlow
record, import an AgentFlow record.

A mixin of :class:`editor.history.panel.HistoryPanel`. Files are written atomically
(:func:`engine.atomic_write_text`); every failure ends in a message naming the file. The
record's results (each node's last output) come from the run-state reducer, as the run
console's exports do.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QFileDialog, QMessageBox

from engine import (
    AlreadyImported,
    RunEvent,
    RunState,
    RunStore,
    StoreError,
    WorkflowLoadError,
    agentflow_record,
    atomic_write_text,
    loads_workflow,
)

from .actions import warn

__all__ = ["RunTransfer"]


def _results(wf_json: str, events: list[RunEvent]) -> dict[str, Any]:
    try:
        workflow = loads_workflow(wf_json)
    except (WorkflowLoadError, ValueError):
        workflow = None
    return RunState.of(workflow, events).outputs


class RunTransfer:
    """export_jsonl, export_agentflow and import_agentflow of the history panel."""

    def _save_path(self, title: str, name: str, filters: str) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self, title, os.path.join(self._last_dir, name), filters)
        if not path:
            return None
        self._last_dir = os.path.dirname(path) or self._last_dir
        return path

    def _write(self, path: str, text: str) -> bool:
        try:
            atomic_write_text(path, text)
        except OSError as err:
            warn(self, "Export run", f"{path} could not be written: {err.strerror or err}")
            return False
        self.show_message(f"Saved {os.path.basename(path)}.")
        return True

    def _export(
        self,
        run_id: str | None,
        path: str | None,
        title: str,
        filename: str,
        filters: str,
        make_text: Callable[[RunStore, str], str | None],
        reading: str,
    ) -> str | None:
        """Ask where (unless ``path``), make the text from the store, write it atomically."""
        store = self._require_store()
        run_id = self._one(run_id)
        if store is None or not run_id:
            return None
        path = path or self._save_path(title, filename.format(run_id=run_id), filters)
        if not path:
            return None
        try:
            text = make_text(store, run_id)
        except StoreError as err:
            self._fail(err, reading)
            return None
        if text is None:
            warn(self, "Export run", "This run is no longer in the run history.")
            return None
        return path if self._write(path, text) else None

    @Slot()
    def export_jsonl(self, run_id: str | None = None, path: str | None = None) -> str | None:
        """Save the run's log as JSON Lines (wire form, one event per line); returns the path written."""
        return self._export(
            run_id,
            path,
            "Export Run Log as JSON Lines",
            "run_{run_id}.jsonl",
            "JSON Lines (*.jsonl);;All files (*)",
            lambda store, rid: "".join(line + "\n" for line in store.export_jsonl(rid)),
            "Reading the run's log",
        )

    @Slot()
    def export_agentflow(self, run_id: str | None = None, path: str | None = None) -> str | None:
        """Save the run as an AgentFlow ``run_<id>.json`` record; returns the path written."""

        def record_text(store: RunStore, rid: str) -> str | None:
            info = store.get_run(rid)
            wf_json = store.workflow_json(rid)
            if info is None or wf_json is None:
                return None
            events = store.events(rid)
            record = agentflow_record(info, wf_json, events, _results(wf_json, events))
            return json.dumps(record, ensure_ascii=False, indent=2) + "\n"

        return self._export(
            run_id,
            path,
            "Export as AgentFlow Run Record",
            "run_{run_id}.json",
            "AgentFlow run records (*.json);;All files (*)",
            record_text,
            "Reading the run",
        )

    @Slot()
    def import_agentflow(self, path: str | None = None) -> str | None:
        """Import an AgentFlow run record file; returns the new run's id (None if nothing was imported)."""
        store = self._require_store()
        if store is None:
            return None
        if not path:
            path, _ = QFileDialog.getOpenFileName(
                self, "Import AgentFlow Run Record", self._last_dir, "AgentFlow run records (*.json);;All files (*)"
            )
            if not path:
                return None
            self._last_dir = os.path.dirname(path) or self._last_dir
        name = os.path.basename(path)
        try:
            raw = Path(path).read_bytes()
        except OSError as err:
            warn(self, "Import run", f"{name} could not be read: {err.strerror or err}")
            return None
        try:
            record = json.loads(raw.decode("utf-8-sig"))
        except UnicodeDecodeError:
            warn(
                self,
                "Import run",
                f"{name} is not a text file (not UTF-8), so it is not an AgentFlow run record. Nothing was imported.",
            )
            return None
        except json.JSONDecodeError as err:
            warn(
                self,
                "Import run",
                f"{name} is not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}). Nothing was imported.",
            )
            return None
        try:
            run_id = store.import_agentflow(record)
        except AlreadyImported as err:  # the same record twice: say so, show the one already there
            QMessageBox.information(self, "Import run", f"{name}: {err}")
            self.refresh()
            self.select_run(err.run_id)
            return None
        except StoreError as err:
            self._fail(err, "Importing the run")
            return None
        except (ValueError, TypeError) as err:
            warn(self, "Import run", f"{name} is not an AgentFlow run record: {err}\n\nNothing was imported.")
            return None
        self._recover()  # an imported "running" record has no live process: it is interrupted
        self.refresh()
        self.select_run(run_id)
        self.show_message(f"Imported {name} as run {run_id[:12]}.")
        return run_id
