"""Validation of the open workflow, debounced after every change: it drives the node badges,
the Problems list, the status bar's summary and (through ``checked``) whether Run is enabled.

A big document (over ``BACKGROUND_NODES`` nodes: a second or more to check) is validated on a
worker thread, on a snapshot of its node and link lists (edits insert and remove in the
document's lists, and replace a node's data whole, so the snapshot stays consistent), and the
window goes on answering; the result is shown when it comes, unless the document was replaced
meanwhile. One check runs at a time: changes made during it start another when it ends."""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QLabel

from engine import Issue, Workflow, errors_only, validate
from engine import web_search_available as engine_web_search_available

from ..canvas.scene import CanvasScene
from ..editing import WorkflowDocument
from ..issue_text import describe_issue
from ..panels.inspector import InspectorPanel
from ..panels.problems import ProblemsPanel
from ..run.console import RunConsole
from ..run.log_model import NodeNames
from ..window.opening import on_worker
from .session import DocumentSession

VALIDATE_DELAY_MS = 150
BACKGROUND_NODES = 2500  # above this many nodes the debounced validation runs on a worker thread


def web_search_available() -> bool | None:
    """Whether agents with web search have a backend (None: the settings cannot be read)."""
    try:
        return engine_web_search_available()
    except Exception:  # a broken settings file is reported where providers are used
        return None


class ValidationController(QObject):
    """Runs :func:`engine.validate` 150 ms after the last document change and shows the result."""

    checked = Signal()  # the issues (or the lack of a document) changed: Run's state may too
    validated = Signal(list)  # list[Issue], after each validation of a document

    def __init__(
        self,
        parent: QObject,
        session: DocumentSession,
        document: WorkflowDocument,
        scene: CanvasScene,
        inspector: InspectorPanel,
        problems: ProblemsPanel,
        console: RunConsole,
        label: QLabel,
    ) -> None:
        super().__init__(parent)
        self.session = session
        self.document = document
        self.scene = scene
        self.inspector = inspector
        self.problems = problems
        self.console = console
        self.label = label
        self.issues: list[Issue] = []
        self._search_backend: bool | None = None
        self._search_known = False
        self._checking: int | None = None  # the serial of the document being checked on a worker
        self._check_again = False
        self._timer = QTimer(self, singleShot=True, interval=VALIDATE_DELAY_MS)
        self._timer.timeout.connect(self.run_validation)
        document.changed.connect(self._timer.start)

    def search_backend(self) -> bool | None:
        """Whether web search has a backend, read once (not on every edit)."""
        if not self._search_known:
            self.refresh_search_backend()
        return self._search_backend

    def refresh_search_backend(self) -> None:
        """Read it again (the provider settings may have changed)."""
        self._search_backend = web_search_available()
        self._search_known = True

    def cancel_pending(self) -> None:
        """Drop the debounced check waiting to run (the change was just validated)."""
        self._timer.stop()

    def run_validation(self, issues: list[Issue] | None = None) -> None:
        """Validate the document and show the result; ``issues`` when they were just computed for
        it (an open did, on a worker thread)."""
        if not self.session.has_document:
            # The welcome page has no workflow to judge.
            self.issues = []
            self.scene.set_issues([])
            self.problems.set_no_workflow()
            self.label.setText("No workflow open")
            self.label.setProperty("state", "")
            self.checked.emit()
            return
        backend = self.search_backend()
        if issues is None and len(self.document.workflow.nodes) > BACKGROUND_NODES:
            self._validate_in_background()
            return
        if issues is None:
            issues = validate(self.document.workflow, web_search_available=backend)
        self._show_issues(issues)

    def _validate_in_background(self) -> None:
        if self._checking == self.session.serial:
            self._check_again = True  # after the one running for this document (its result is shown first)
            return
        wf = self.document.workflow
        snapshot: Workflow = wf.model_copy(update={"nodes": list(wf.nodes), "connections": list(wf.connections)})
        backend, serial = self._search_backend, self.session.serial
        self._checking = serial
        self._check_again = False
        self.label.setText("Checking…")
        self._set_label_state("")

        def work() -> tuple[list[Issue], NodeNames]:
            return validate(snapshot, web_search_available=backend), NodeNames.of(snapshot)

        on_worker(work, lambda result, error: self._checked(serial, result, error), "flowdesk-validate")

    def _checked(self, serial: int, result, error: BaseException | None) -> None:
        if not shiboken6.isValid(self) or not shiboken6.isValid(self.label):
            return  # the window is gone
        if self._checking == serial:
            self._checking = None
        if serial != self.session.serial or not self.session.has_document:
            return  # another document is shown now (it is validated on its own)
        if error is not None or result is None:
            # The validator failed on the worker: once more here, where a failure is seen as for a small document.
            self._show_issues(validate(self.document.workflow, web_search_available=self._search_backend))
        else:
            issues, names = result
            names.workflow = self.document.workflow  # the snapshot's names are the document's
            self.console.use_names(names)
            self._show_issues(issues)
        if self._check_again:
            self._check_again = False
            self._validate_in_background()

    def _set_label_state(self, state: str) -> None:
        self.label.setProperty("state", state)
        self.label.style().unpolish(self.label)
        self.label.style().polish(self.label)

    def _show_issues(self, issues: list[Issue]) -> None:
        self.issues = issues
        self.scene.set_issues(self.issues)
        self.inspector.set_issues(self.issues)  # prompt fields word unknown references as the validator does
        # What Run will start, so the console's input box shows the Start node's text before a run.
        self.console.set_workflow(self.document.workflow, self.document.path)
        self.problems.set_issues(self.issues, self.document.workflow)
        errors = errors_only(self.issues)
        warnings = len(self.issues) - len(errors)
        if errors:
            text = f"{len(errors)} error{'s' * (len(errors) != 1)}"
            if warnings:
                text += f", {warnings} warning{'s' * (warnings != 1)}"
            state = "error"
        elif warnings:
            text = f"✓ Ready to run · {warnings} warning{'s' * (warnings != 1)}"
            state = "warning"
        else:
            text = "✓ Ready to run"
            state = "ok"
        self.label.setProperty("state", state)
        self.label.setText(text)
        self.label.setToolTip(describe_issue(errors[0], self.document.workflow) if errors else "No errors")
        self._set_label_state(state)
        self.checked.emit()
        self.validated.emit(self.issues)
