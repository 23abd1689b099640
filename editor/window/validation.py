"""Validation of the open workflow, debounced after every change: it drives the node badges,
the Problems list, the status bar's summary and whether Run is enabled."""

from __future__ import annotations

from PySide6.QtCore import QTimer

from engine import Issue, errors_only, validate

from ..issue_text import describe_issue

VALIDATE_DELAY_MS = 150


class ValidationMixin:
    """Runs :func:`engine.validate` 150 ms after the last document change and shows the result."""

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
            self.problems.list.clear()
            self.validation_label.setText("No workflow open")
            self.validation_label.setProperty("state", "")
            self._update_run_action()
            return
        if not hasattr(self, "_search_backend"):
            self._search_backend = self._web_search_available()  # read once, not on every edit
        if issues is None:
            issues = validate(self.document.workflow, web_search_available=self._search_backend)
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
