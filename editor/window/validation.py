"""Validation of the open workflow, debounced after every change: it drives the node badges,
the Problems list, the status bar's summary and whether Run is enabled.

A big document (over ``BACKGROUND_NODES`` nodes: a second or more to check) is validated on a
worker thread, on a snapshot of its node and link lists (edits insert and remove in the
document's lists, and replace a node's data whole, so the snapshot stays consistent), and the
window goes on answering; the result is shown when it comes, unless the document was replaced
meanwhile. One check runs at a time: changes made during it start another when it ends."""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QTimer

from engine import Issue, Workflow, errors_only, validate

from ..issue_text import describe_issue
from ..run.log_model import NodeNames
from .opening import on_worker

VALIDATE_DELAY_MS = 150
BACKGROUND_NODES = 2500  # above this many nodes the debounced validation runs on a worker thread


class ValidationMixin:
    """Runs :func:`engine.graph.validate` 150 ms after the last document change and shows the result."""

    def _init_validation(self) -> None:
        self._validate_timer = QTimer(self, singleShot=True, interval=VALIDATE_DELAY_MS)
        self._validate_timer.timeout.connect(self.run_validation)
        self.document.changed.connect(self._validate_timer.start)

    def run_validation(self, issues: list[Issue] | None = None) -> None:
        """Validate the document and show the result; ``issues`` when they were just computed for
        it (an open did, on a worker thread)."""
        if not self._has_document:
            # The welcome page has no workflow to judge.
            self.issues = []
            self.scene.set_issues([])
            self.problems.set_no_workflow()
            self.validation_label.setText("No workflow open")
            self.validation_label.setProperty("state", "")
            self._update_run_action()
            return
        if not hasattr(self, "_search_backend"):
            self._search_backend = self._web_search_available()  # read once, not on every edit
        if issues is None and len(self.document.workflow.nodes) > BACKGROUND_NODES:
            self._validate_in_background()
            return
        if issues is None:
            issues = validate(self.document.workflow, web_search_available=self._search_backend)
        self._show_issues(issues)

    def _validate_in_background(self) -> None:
        if getattr(self, "_checking", None) == self._doc_serial:
            self._check_again = True  # after the one running for this document (its result is shown first)
            return
        wf = self.document.workflow
        snapshot: Workflow = wf.model_copy(update={"nodes": list(wf.nodes), "connections": list(wf.connections)})
        backend, serial = self._search_backend, self._doc_serial
        self._checking = serial
        self._check_again = False
        self.validation_label.setText("Checking…")
        self.validation_label.setProperty("state", "")
        self.validation_label.style().unpolish(self.validation_label)
        self.validation_label.style().polish(self.validation_label)

        def work() -> tuple[list[Issue], NodeNames]:
            return validate(snapshot, web_search_available=backend), NodeNames.of(snapshot)

        on_worker(work, lambda result, error: self._checked(serial, result, error), "flowdesk-validate")

    def _checked(self, serial: int, result, error: BaseException | None) -> None:
        if not shiboken6.isValid(self):
            return  # the window is gone
        if self._checking == serial:
            self._checking = None
        if serial != self._doc_serial or not self._has_document:
            return  # another document is shown now (it is validated on its own)
        if error is not None or result is None:
            # The validator failed on the worker: once more here, where a failure is seen as for a small document.
            self._show_issues(validate(self.document.workflow, web_search_available=self._search_backend))
        else:
            issues, names = result
            names.workflow = self.document.workflow  # the snapshot's names are the document's
            self.run_console.use_names(names)
            self._show_issues(issues)
        if self._check_again:
            self._check_again = False
            self._validate_in_background()

    def _show_issues(self, issues: list[Issue]) -> None:
        self.issues = issues
        self.scene.set_issues(self.issues)
        self.inspector.set_issues(self.issues)  # prompt fields word unknown references as the validator does
        # What Run will start, so the console's input box shows the Start node's text before a run.
        self.run_console.set_workflow(self.document.workflow, self.document.path)
        self.problems.set_issues(self.issues, self.document.workflow)
        errors = errors_only(self.issues)
        warnings = len(self.issues) - len(errors)
        if errors:
            text = f"{len(errors)} error{'s' * (len(errors) != 1)}"
            if warnings:
                text += f", {warnings} warning{'s' * (warnings != 1)}"
            self.validation_label.setProperty("state", "error")
        elif warnings:
            text = f"✓ Ready to run · {warnings} warning{'s' * (warnings != 1)}"
            self.validation_label.setProperty("state", "warning")
        else:
            text = "✓ Ready to run"
            self.validation_label.setProperty("state", "ok")
        self.validation_label.setText(text)
        self.validation_label.setToolTip(describe_issue(errors[0], self.document.workflow) if errors else "No errors")
        self.validation_label.style().unpolish(self.validation_label)
        self.validation_label.style().polish(self.validation_label)
        self._update_run_action()
        self.validated.emit(self.issues)

    def _web_search_available(self) -> bool | None:
        """Whether agents with web search have a backend (None: the settings cannot be read)."""
        from engine import web_search_available

        try:
            return web_search_available()
        except Exception:  # a broken settings file is reported where providers are used
            return None
