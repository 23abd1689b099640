"""Stored runs seen from the window: a run opened read-only in a window of its own, a paused
run taken up (here, on its own workflow, or on the Temporal server), and the workflow a run
used opened again (Open this version, Run Again) with that run's input and arguments.

Runs belong to their document: a paused run is resumed in the window's console only on the
canvas of the graph that ran; otherwise in a window of its own (``run_windows`` while open).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDockWidget, QMainWindow, QMessageBox

from engine import RemoteRun, RunStatus, Workflow

from ..editing import WorkflowDocument
from ..history.panel import HistoryPanel
from ..run.console import LONG_INPUT, RunConsole
from ..run_view import RunViewWindow
from .files import FilesController
from .runs import RunController
from .session import DocumentSession
from .validation import ValidationController

Status = Callable[[str, int], None]


def same_graph(a: Workflow, b: Workflow) -> bool:
    """The same nodes (ids and types) and links: a run of ``a`` can be shown on ``b``."""
    return {(n.id, n.type) for n in a.nodes} == {(n.id, n.type) for n in b.nodes} and {
        c.key() for c in a.connections
    } == {c.key() for c in b.connections}


class RunViewsController(QObject):
    """The run history's requests: open a run, resume one, open or run again a version."""

    def __init__(
        self,
        frame: QMainWindow,
        session: DocumentSession,
        document: WorkflowDocument,
        console: RunConsole,
        console_dock: QDockWidget,
        history: HistoryPanel,
        runs: RunController,
        files: FilesController,
        validation: ValidationController,
        act_run: QAction,
        store: Any,
        resolver_factory: Callable[[], Any],
        status: Status,
    ) -> None:
        super().__init__(frame)
        self._frame = frame  # raised when a version opens; the message boxes' parent
        self.session = session
        self.document = document
        self.console = console
        self.console_dock = console_dock
        self.history = history
        self.runs = runs
        self.files = files
        self.validation = validation
        self.act_run = act_run
        self.store = store
        self._resolver_factory = resolver_factory
        self._status = status
        self.run_windows: list[RunViewWindow] = []
        history.run_opened.connect(self.open_run_view)
        history.workflow_version_requested.connect(self.open_workflow_version)
        history.run_again_requested.connect(self.run_workflow_version_again)
        history.resume_requested.connect(self.resume_stored_run)
        history.remote_resume_requested.connect(self.resume_remote_run)
        console.elsewhere_notice.set_offers_open(True)
        console.elsewhere_notice.open_requested.connect(self.show_in_history)

    def show_in_history(self, run_id: str) -> None:
        """The console's *Open in Run history* (its run was answered elsewhere): the run selected
        in the history and opened read-only, as the store has it now."""
        dock = self.history.parentWidget()
        if isinstance(dock, QDockWidget):
            dock.show()
            dock.raise_()
        self.history.refresh()
        self.history.select_run(run_id)
        self.history.open_run(run_id)

    def close_all(self) -> None:
        for win in list(self.run_windows):
            win.close()

    def resume_stored_run(self, run_id: str) -> None:
        """Take up a paused stored run where its own workflow is shown. Runs belong to their
        document: when the open document is the graph that ran, in the window's console on
        that canvas; with no document open, that workflow is opened (as an untitled copy, like
        a sample); when another workflow is open, in a window of its own showing the run's
        workflow read-only, with its approval card, input and title."""
        workflow = None
        if self.store is not None:
            try:
                workflow = self.store.workflow_of(run_id)
            except Exception:  # StoreError, an unreadable workflow: the console says why below
                workflow = None
        has_document = self.session.has_document
        if workflow is not None and has_document and not same_graph(workflow, self.document.workflow):
            self._resume_in_own_window(run_id, workflow)
            return
        self.console_dock.show()
        self.console_dock.raise_()
        if self.console.bridge.is_active:
            self.console.open_paused_run(run_id)  # refused, with the reason in the console
            return
        previous = self.runs.run_doc
        if workflow is not None and not self.session.has_document:
            self.files.replace_document(workflow.model_copy(deep=True), None)
            self._status(f"Opened the workflow of run {run_id[:8]} to resume it; Save As to keep it.", 6000)
        same = workflow is not None and self.session.has_document and same_graph(workflow, self.document.workflow)
        self.runs.run_doc = self.session.serial if same else None
        if not self.console.open_paused_run(run_id):
            self.runs.run_doc = previous
        self.runs.show_run_states()

    def resume_remote_run(self, run_id: str, address: str, namespace: str = "default") -> Any:
        """Take up a paused run on the Temporal server in a window of its own (its workflow as it
        runs there, read-only, with its approval card): the answer goes to the server."""
        for open_win in self.run_windows:
            if open_win.run_id == run_id and open_win.live:
                open_win.show()
                open_win.raise_()
                return None
        self._status(f"Reading run {run_id[:8]} from the Temporal server at {address}…", 4000)

        async def take_up() -> Any:
            try:
                run = await RemoteRun.fetch(run_id, address=address, namespace=namespace)
            except Exception as err:  # TemporalUnavailable: no server, no such run
                QMessageBox.warning(
                    self._frame,
                    "Resume run",
                    f"Run {run_id[:8]} on the Temporal server at {address} cannot be read:\n\n{err}",
                )
                return None
            if run.status != RunStatus.PAUSED:
                QMessageBox.information(
                    self._frame,
                    "Resume run",
                    f"Run {run_id[:8]} is {run.status} on the Temporal server now, not waiting for approval.",
                )
                self.history.refresh()
                return None
            return self._show_live_run_window(
                RunViewWindow(run_id, run.workflow, [], self.history.remote_row(run_id), remote_run=run)
            )

        return asyncio.ensure_future(take_up())

    def _resume_in_own_window(self, run_id: str, workflow: Workflow) -> None:
        for open_win in self.run_windows:
            if open_win.run_id == run_id and open_win.live:
                open_win.show()
                open_win.raise_()
                open_win.activateWindow()
                return
        info = self.store.get_run(run_id) if self.store is not None else None
        self._show_live_run_window(
            RunViewWindow(run_id, workflow, [], info, store=self.store, resolver_factory=self._resolver_factory)
        )

    def _show_live_run_window(self, win: RunViewWindow) -> RunViewWindow:
        """Show a window that takes up a paused run (kept in ``run_windows`` while open)."""
        win.version_requested.connect(self.open_workflow_version)
        win.console.run_finished.connect(lambda _s: self.history.refresh())
        win.destroyed.connect(lambda _=None, w=win: self.run_windows.remove(w) if w in self.run_windows else None)
        self.run_windows.append(win)
        win.show()
        win.raise_()
        win.activateWindow()
        return win

    def open_run_view(self, run_id: str, workflow: Workflow, events: list, info: Any) -> None:
        """Show a stored run read-only, on the workflow snapshot that actually ran."""
        for open_win in self.run_windows:
            # already open: bring it forward instead of a second copy
            if open_win.run_id == run_id and not open_win.live:
                open_win.show()
                open_win.raise_()
                open_win.activateWindow()
                return
        win = RunViewWindow(run_id, workflow, events, info, store=self.store)
        win.version_requested.connect(self.open_workflow_version)
        win.destroyed.connect(lambda _=None, w=win: self.run_windows.remove(w) if w in self.run_windows else None)
        self.run_windows.append(win)
        win.show()

    def open_workflow_version(self, workflow: Workflow, run_id: str = "") -> bool:
        """Open the workflow that a stored run used as a new, unsaved document (False: the user
        kept the open one)."""
        if not self.files.maybe_save():
            return False
        self.files.replace_document(workflow.model_copy(deep=True), None)
        self.document.undo_stack.resetClean()
        given = self._give_run_its_input(run_id)
        self._frame.raise_()
        self._frame.activateWindow()
        self._status(
            f"Opened the workflow of run {run_id[:8]} as a new document"
            + (" with its input and arguments" if given else "")
            + "; Save As to keep it.",
            6000,
        )
        return True

    def run_workflow_version_again(self, workflow: Workflow, run_id: str = "") -> bool:
        """History ▸ Run Again: the workflow as it ran, opened as a new document with that run's
        input and arguments (as Open this version does), then run. False when it did not start
        (unsaved changes kept, or the workflow has errors now: the Problems panel says which)."""
        if not self.open_workflow_version(workflow, run_id):
            return False  # the user kept the open document (Cancel in the save prompt)
        self.validation.run_validation()
        if not self.act_run.isEnabled():
            return False
        self.act_run.trigger()
        return True

    def _give_run_its_input(self, run_id: str) -> bool:
        """The run console set as run ``run_id`` was: its initial input in the box (when it was not
        the Start node's own text) and its arguments in the form, so Run runs it again as it was."""
        info = self.store.get_run(run_id) if self.store is not None and run_id else None
        if info is None or not (info.arguments or info.initial_input):
            return False
        console = self.console
        console.set_workflow(self.document.workflow, None)  # the form's fields, made now
        start = self.document.workflow.start_node()
        own = (getattr(start.data, "initialInput", "") if start is not None else "") or ""
        if info.initial_input and info.initial_input != own and len(info.initial_input) <= LONG_INPUT:
            console.input_edit.setPlainText(info.initial_input)
        console.arguments.set_values(info.arguments or {})
        return True
