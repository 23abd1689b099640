""" "Run this node" with sample inputs: one node run on its own, in memory, from a small dialog.

:func:`one_node_workflow` makes the run's workflow: a copy of the document's workflow (its
top-level fields, ``permissions`` included) holding a Start node and a copy of the chosen node
(its pinned output dropped, so it really runs), linked Start → node. A ``code`` node gets the
sample values as its ``inputs`` (a value typed as JSON is that value: ``[1, 2]`` is a list);
any other kind receives the sample "previous output" as the Start node's output. The Start
node keeps the document's Start variables, so the node's ``{{name}}`` templates resolve.

:class:`RunNodeDialog` runs it with :class:`engine.Run` (no run store: no file is touched),
shows the run's entries as the console does (``code_log`` lines included), then the node's
output, or its error with the failing line marked in the code.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QListView,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from engine import (
    FlowdeskError,
    Run,
    RunEvent,
    RunState,
    Workflow,
    errors_only,
    new_id,
    parse_workflow,
    spec_for,
    validate,
    workflow_to_dict,
)

from ..panels.code_edit import CodeEdit, failed_line, failure_text
from ..screen_fit import fit_resize
from .log_model import LogModel
from .log_view import LogDelegate

__all__ = ["RunNodeDialog", "one_node_workflow", "sample_value", "sample_fields", "start_defaults"]

_CODE_KINDS = ("code",)


def sample_value(text: str) -> Any:
    """A sample typed in the dialog: JSON when it reads as JSON (numbers, lists, objects,
    true/false/null, quoted text), else the text as it is."""
    stripped = text.strip()
    if not stripped:
        return text
    try:
        return json.loads(stripped)
    except ValueError:
        return text


def _as_text(value: Any) -> str:
    """A value as the dialog shows it: text as it is, anything else as JSON (not a Python repr)."""
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, ensure_ascii=False)


def sample_fields(node: Any) -> list[str]:
    """The fields the dialog asks for: a code node's input names; any other node's previous output."""
    if node.type in _CODE_KINDS:
        return [str(k) for k in (getattr(node.data, "inputs", None) or {})]
    return []


def start_defaults(workflow: Workflow) -> dict[str, Any]:
    """The Start variables' default values, by name (the first samples the dialog offers)."""
    start = workflow.start_node()
    rows = start.data.model_dump(mode="json").get("variables") if start is not None else None
    return {r["name"]: r.get("value") for r in rows or [] if isinstance(r, dict) and r.get("name")}


def one_node_workflow(workflow: Workflow, node_id: str, samples: dict[str, str], previous: str = "") -> Workflow:
    """The workflow a one-node run runs (see the module doc). ``samples``: a code node's input
    values as typed; ``previous``: the output that reaches the node from Start."""
    whole = workflow_to_dict(workflow)
    node = next((n for n in whole.get("nodes", []) if n.get("id") == node_id), None)
    if node is None:
        raise KeyError(node_id)
    node = json.loads(json.dumps(node))
    data = node.setdefault("data", {})
    data.pop("pinnedOutput", None)
    if node.get("type") in _CODE_KINDS:
        data["inputs"] = {name: sample_value(samples.get(name, "")) for name in (data.get("inputs") or {})}
    start_data: dict[str, Any] = {"initialInput": previous}
    doc_start = workflow.start_node()
    if doc_start is not None and doc_start.id != node_id:
        variables = doc_start.data.model_dump(mode="json").get("variables")
        if variables:  # the node's {{name}} templates resolve to their defaults; none is required here
            start_data["variables"] = [{**v, "required": False} for v in variables if isinstance(v, dict)]
    spec = spec_for(str(node.get("type")))
    if spec is not None and spec.entry:  # a Start node runs on its own, the sample as its input
        if previous:
            data["initialInput"] = previous
        whole["nodes"], whole["connections"] = [node], []
    else:
        start_id = new_id("start", {node_id})
        whole["nodes"] = [{"id": start_id, "type": "start", "x": 0, "y": 0, "data": start_data}, node]
        whole["connections"] = [
            {"source": start_id, "target": node_id, "sourceHandle": "output", "targetHandle": "input"}
        ]
    for key in ("notes", "groups", "tests"):
        whole.pop(key, None)
    return parse_workflow(whole)


class RunNodeDialog(QDialog):
    """Fill a node's sample inputs, run just that node, see its output or error and its log."""

    finished_run = Signal(str, object)  # (status, RunState): the run ended

    def __init__(
        self,
        workflow: Workflow,
        node_id: str,
        resolver_factory: Callable[[], Any],
        *,
        path: str | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("runNodeDialog")
        self.workflow = workflow
        self.node_id = node_id
        self.node = workflow.node(node_id)
        self.path = path
        self._resolver_factory = resolver_factory
        self.task: asyncio.Task | None = None
        self.run: Run | None = None
        self.state: RunState | None = None
        title = self.node.title if self.node is not None else node_id
        self.setWindowTitle(f"Run this node — {title}")
        lay = QVBoxLayout(self)
        intro = QLabel(
            "Runs only this node, with the sample values below, in memory: nothing is saved and "
            "nothing downstream runs. A value typed as JSON (a number, [a list], {an object}) is that value."
        )
        intro.setObjectName("hint")
        intro.setWordWrap(True)
        lay.addWidget(intro)
        form = QFormLayout()
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapLongRows)
        self.fields: dict[str, QPlainTextEdit] = {}
        self.previous: QPlainTextEdit | None = None
        names = sample_fields(self.node) if self.node is not None else []
        if self.node is not None and self.node.type in _CODE_KINDS:
            inputs = getattr(self.node.data, "inputs", None) or {}
            defaults = start_defaults(workflow)
            for name in names:
                template = inputs.get(name)
                edit = _small_edit(f"the value of {name} (its template: {_as_text(template)})")
                ref = (
                    template.strip()[2:-2].strip()
                    if isinstance(template, str) and template.strip().startswith("{{")
                    else ""
                )
                if template == "{{" + ref + "}}" and ref in defaults:  # a Start variable's default to begin with
                    edit.setPlainText(_as_text(defaults[ref]))
                elif not (isinstance(template, str) and ("{{" in template or "${" in template)):
                    edit.setPlainText(_as_text(template))  # a literal value: the sample to begin with
                self.fields[name] = edit
                form.addRow(name, edit)
            if not names:
                form.addRow(QLabel("This code node has no inputs."))
        else:
            self.previous = _small_edit("the output the previous node would pass on")
            form.addRow("Previous output", self.previous)
        lay.addLayout(form)
        self.code: CodeEdit | None = None
        code_text = getattr(self.node.data, "code", None) if self.node is not None else None
        if isinstance(code_text, str):
            self.code = CodeEdit(str(getattr(self.node.data, "language", "python") or "python"))
            self.code.setReadOnly(True)
            self.code.setPlainText(code_text)
            self.code.setMinimumHeight(self.code.fontMetrics().lineSpacing() * 6)
            lay.addWidget(self.code, 1)
        self.run_button = QPushButton("▶ Run")
        self.run_button.setObjectName("runNodeButton")
        self.run_button.setDefault(True)
        self.run_button.clicked.connect(self.start)
        lay.addWidget(self.run_button)
        self.status = QLabel("")
        self.status.setObjectName("runNodeStatus")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        self.output = QPlainTextEdit()
        self.output.setObjectName("runNodeOutput")
        self.output.setReadOnly(True)
        self.output.setPlaceholderText("The node's output shows here.")
        self.output.setMaximumHeight(110)
        lay.addWidget(self.output)
        self.log = LogModel(self)
        self.log.set_workflow(workflow)
        self.log_view = QListView()
        self.log_view.setObjectName("runNodeLog")
        self.log_view.setModel(self.log)
        self.log_view.setItemDelegate(LogDelegate(lambda _n: False, self.log_view))
        self.log_view.setUniformItemSizes(True)
        lay.addWidget(self.log_view, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        fit_resize(self, 640, 640)

    # ------------------------------------------------------------------ running
    def node_errors(self) -> list[str]:
        """The validator's errors about this node, in the document's own graph (a script using a
        blocked identifier, say): they refuse the run here as they refuse a whole run."""
        try:
            issues = errors_only(validate(self.workflow, path=self.path))
        except Exception as err:  # noqa: BLE001 - a validator that cannot finish must not crash the dialog
            return [f"the workflow could not be checked: {err}"]
        return [i.message for i in issues if self.node_id in i.node_ids]

    def samples(self) -> dict[str, str]:
        return {name: edit.toPlainText() for name, edit in self.fields.items()}

    def start(self) -> asyncio.Task | None:
        """Start the one-node run (the dialog's Run button); None when it could not start."""
        if self.task is not None and not self.task.done():
            return None
        self.log.clear()
        self.output.clear()
        if self.code is not None:
            self.code.mark_line(None)
        previous = self.previous.toPlainText() if self.previous is not None else ""
        problems = self.node_errors()
        if problems:
            self._show_status("failed", f"Cannot run this node: {problems[0]}")
            return None
        try:
            workflow = one_node_workflow(self.workflow, self.node_id, self.samples(), previous)
            resolver = self._resolver_factory()
            # Not validated as a workflow: cut from its graph, a node breaks rules it keeps in the
            # document (a Start alone "is not connected", an approval has no branch linked).
            self.run = Run(workflow, resolver, on_event=self._event, path=self.path, check=False)
        except (FlowdeskError, KeyError, ValueError) as err:
            self._show_status("failed", f"Cannot run this node: {err}")
            return None
        self.run_button.setEnabled(False)
        self._show_status("running", "Running…")
        self.task = asyncio.ensure_future(self._go(self.run, workflow))
        return self.task

    def _event(self, ev: RunEvent) -> None:
        self.log.add_events([ev])
        self.log_view.scrollToBottom()

    async def _go(self, run: Run, workflow: Workflow) -> None:
        try:
            status = str(await run.start())
        except Exception as err:  # noqa: BLE001 - said in the dialog, never a crash
            status, run.error = "failed", str(err)
        self.run_button.setEnabled(True)
        self.state = RunState.of(workflow, run.events or [])
        error = self.state.errors.get(self.node_id) or (run.error if status != "completed" else None)
        if status == "paused":  # an approval (or a tool call waiting for one): nothing more runs here
            run.cancel("Run this node stops at a pause.")
            self._show_status("paused", "⏸ The node waits for a decision: answer it in a full run.")
        elif status == "completed" and self.node_id in run.outputs:
            value = run.outputs[self.node_id]
            self.output.setPlainText(
                value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)
            )
            self._show_status("completed", "✓ Done.")
        else:
            line = failed_line(error)
            if self.code is not None:
                self.code.mark_line(line)
            self._show_status("failed", f"✗ {failure_text(error or str(status))}")
        self.finished_run.emit(status, self.state)

    def _show_status(self, state: str, text: str) -> None:
        self.status.setText(text)
        colour = {"failed": "#f85149", "completed": "#3fb950"}.get(state, "")
        self.status.setStyleSheet(f"color: {colour};" if colour else "")

    def reject(self) -> None:
        if self.run is not None and self.task is not None and not self.task.done():
            self.run.cancel()
        super().reject()


def _small_edit(placeholder: str) -> QPlainTextEdit:
    edit = QPlainTextEdit()
    edit.setPlaceholderText(placeholder)
    edit.setTabChangesFocus(True)
    edit.setMaximumHeight(edit.fontMetrics().lineSpacing() * 4 + 12)
    return edit
