"""What the history panel does with a run: open it, open its workflow version, resume it, delete it.

A mixin of :class:`editor.history.panel.HistoryPanel` (which declares the signals these
emit and the store they read); it never raises from a user action.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Slot
from PySide6.QtWidgets import QMessageBox, QWidget

from engine import StoreError, WorkflowLoadError

__all__ = ["RunActions", "warn"]


def warn(parent: QWidget, title: str, text: str) -> None:
    QMessageBox.warning(parent, title, text)


class RunActions:
    """open_run, open_version, resume_run and delete_runs of the history panel."""

    @Slot()
    def open_run(self, run_id: str | None = None) -> bool:
        """Emit ``run_opened`` for the selected run (or ``run_id``); False if it cannot be read.
        A run on the Temporal server is read from there: ``run_opened`` follows when its log arrives."""
        store = self._require_store()
        run_id = self._one(run_id)
        if store is None or not run_id:
            return False
        remote = self.remote_runs
        if remote is not None and any(r.id == run_id for r in self._remote_rows):
            remote.open(run_id)
            return True
        try:
            info = store.get_run(run_id)
            if info is None:
                warn(self, "Open run", "This run is no longer in the run history.")
                self.refresh()
                return False
            events = store.events(run_id)
        except StoreError as err:
            self._fail(err, "Opening the run")
            return False
        workflow = self._recorded_workflow(store, run_id, "Open run", "Opening the run")
        if workflow is None:
            return False
        self.run_opened.emit(run_id, workflow, events, info)
        return True

    def _recorded_workflow(self, store: Any, run_id: str, title: str, doing: str) -> Any:
        """The workflow recorded with run ``run_id``, or None once the user was told why not."""
        try:
            return store.workflow_of(run_id)
        except StoreError as err:
            self._fail(err, doing)
        except (WorkflowLoadError, ValueError) as err:
            warn(self, title, f"The workflow recorded with run {run_id} cannot be read:\n\n{err}")
        return None

    @Slot()
    def open_version(self, run_id: str | None = None) -> bool:
        """Emit ``workflow_version_requested`` with the workflow exactly as it ran."""
        return self._with_recorded_workflow(run_id, "Open this version", self.workflow_version_requested)

    @Slot()
    def run_again(self, run_id: str | None = None) -> bool:
        """Emit ``run_again_requested``: that workflow, as it ran, run again with the same input
        and arguments."""
        return self._with_recorded_workflow(run_id, "Run again", self.run_again_requested)

    def _with_recorded_workflow(self, run_id: str | None, title: str, signal: Any) -> bool:
        """``signal(workflow, run_id)`` with the workflow the (one selected) run used, or False
        once the user was told why it cannot be read."""
        store = self._require_store()
        run_id = self._one(run_id)
        if store is None or not run_id:
            return False
        workflow = self._recorded_workflow(store, run_id, title, "Reading the run's workflow")
        if workflow is None:
            return False
        signal.emit(workflow, run_id)
        return True

    @Slot()
    def resume_run(self, run_id: str | None = None) -> bool:
        """Emit ``resume_requested`` if the run is paused and its state was saved (for a paused
        run on the Temporal server, ``remote_resume_requested``)."""
        store = self._require_store()
        run_id = self._one(run_id)
        if store is None or not run_id:
            return False
        remote = self.remote_row(run_id)
        if remote is not None:
            if remote.status != "paused":
                warn(
                    self,
                    "Resume run",
                    f"This run is {remote.status} on the Temporal server, not waiting for "
                    "approval; only a paused run can be resumed.",
                )
                return False
            self.remote_resume_requested.emit(run_id, remote.server, getattr(remote, "namespace", "") or "default")
            return True
        try:
            info = store.get_run(run_id)
            snap = store.snapshot_of(run_id) if info is not None and info.status == "paused" else None
        except StoreError as err:
            self._fail(err, "Reading the run")
            return False
        if info is None:
            warn(self, "Resume run", "This run is no longer in the run history.")
        elif info.status != "paused":
            warn(
                self,
                "Resume run",
                f"This run is {info.status}, not waiting for approval; only a paused run can be resumed.",
            )
        elif snap is None:
            warn(
                self,
                "Resume run",
                "This run is paused, but its state was not saved (it may have been imported "
                "or recorded by an older Flowdesk), so it cannot be resumed.",
            )
        else:
            self.resume_requested.emit(run_id)
            return True
        self.refresh()
        return False

    @Slot()
    def delete_runs(self, run_ids: list[str] | None = None) -> int:
        """Delete the selected runs (or ``run_ids``) after confirmation; returns how many were deleted."""
        store = self._require_store()
        if store is None:
            return 0
        if run_ids is None:
            runs = self.selected_runs()
        else:
            try:
                runs = [r for r in (store.get_run(i) for i in run_ids) if r is not None]
            except StoreError as err:
                self._fail(err, "Reading the runs")
                return 0
        runs = [r for r in runs if not self.is_remote(r)]  # the server keeps its runs
        running = [r for r in runs if r.status == "running"]
        runs = [r for r in runs if r.status != "running"]
        if not runs:
            if running:
                warn(self, "Delete runs", "A run that is still running cannot be deleted. Cancel it first.")
            return 0
        n = len(runs)
        what = f"run {runs[0].id[:8]} of “{runs[0].workflow_name}”" if n == 1 else f"these {n} runs"
        text = (
            f"Delete {what}? Its log is removed from the run history. This cannot be undone."
            if n == 1
            else f"Delete {what}? Their logs are removed from the run history. This cannot be undone."
        )
        paused = sum(1 for r in runs if r.status == "paused")
        if paused:
            text += (
                f"\n\n{paused} of them {'is' if paused == 1 else 'are'} waiting for approval and can no longer "
                "be resumed."
                if n > 1
                else "\n\nIt is waiting for approval and can no longer be resumed."
            )
        if running:
            text += f"\n\n{len(running)} running run{'s are' if len(running) != 1 else ' is'} not deleted."
        answer = QMessageBox.question(
            self,
            "Delete runs" if n > 1 else "Delete run",
            text,
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel,
        )
        if answer != QMessageBox.StandardButton.Yes:
            return 0
        deleted = 0
        try:
            for r in runs:
                store.delete_run(r.id)
                deleted += 1
        except StoreError as err:
            self._fail(err, "Deleting runs")
        self.refresh()
        if deleted:
            self.show_message(f"Deleted {deleted} run{'s' if deleted != 1 else ''}.")
        return deleted
