""" "Run this node" with sample inputs: one node run in memory from a dialog, its output or its
error (the failing line marked) and its log; the document and the files are left alone.

The agent test runs on the echo provider; the code tests need the `code` extra (pydantic-monty
for Python) and skip only when it is missing: with it, a code node that does not run fails them."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from editor.main_window import MainWindow
from editor.run.run_node import RunNodeDialog, one_node_workflow, sample_fields, sample_value
from engine import Run, Workflow, dumps_workflow, load_workflow, parse_workflow, validate
from engine.llm.registry import make_resolver

from .conftest import SAMPLES


def _agent_flow() -> Workflow:
    return parse_workflow(
        {
            "name": "Two steps",
            "permissions": {"network": ["api.example.com"]},
            "nodes": [
                {
                    "id": "start",
                    "type": "start",
                    "data": {"initialInput": "x", "variables": [{"name": "tone", "value": "dry", "required": True}]},
                },
                {"id": "first", "type": "agent", "data": {"agentName": "First", "userPrompt": "never run"}},
                {
                    "id": "second",
                    "type": "agent",
                    "data": {
                        "agentName": "Second",
                        "userPrompt": "In a {{tone}} tone: {{PREVIOUS_OUTPUT}}",
                        "pinnedOutput": "pinned",
                    },
                },
            ],
            "connections": [
                {"source": "start", "target": "first"},
                {"source": "first", "target": "second"},
            ],
        }
    )


def test_one_node_workflow_keeps_the_node_and_the_flows_settings() -> None:
    wf = _agent_flow()
    one = one_node_workflow(wf, "second", {}, "the draft")
    assert [n.type for n in one.nodes] == ["start", "agent"] and one.nodes[1].id == "second"
    assert one.nodes[0].data.initialInput == "the draft"
    assert getattr(one.nodes[1].data, "pinnedOutput", None) is None  # it really runs
    assert one.permissions is not None and one.permissions.network == ["api.example.com"]
    assert [(c.source, c.target) for c in one.connections] == [(one.nodes[0].id, "second")]
    code = parse_workflow(
        {
            "nodes": [{"id": "c", "type": "code", "data": {"code": "x", "inputs": {"rows": "{{rows}}", "n": "{{n}}"}}}],
            "connections": [],
        }
    )
    assert sample_fields(code.nodes[0]) == ["rows", "n"]
    one = one_node_workflow(code, "c", {"rows": "[1, 2]", "n": "plain text"})
    assert one.nodes[1].data.inputs == {"rows": [1, 2], "n": "plain text"}
    assert sample_value("3") == 3 and sample_value("{oops") == "{oops"


def test_run_an_agent_node_on_echo_with_a_sample_previous_output(qtbot, qloop, tmp_path) -> None:
    wf = _agent_flow()
    path = tmp_path / "two.flow.json"
    path.write_text(dumps_workflow(wf))
    before = path.read_bytes()
    dialog = RunNodeDialog(wf, "second", lambda: make_resolver("echo"), path=str(path))
    qtbot.addWidget(dialog)
    dialog.show()
    assert dialog.previous is not None and not dialog.fields and dialog.code is None
    dialog.previous.setPlainText("the draft reply")
    with qtbot.waitSignal(dialog.finished_run, timeout=10000) as done:
        dialog.run_button.click()
    assert done.args[0] == "completed"
    assert dialog.output.toPlainText() == "In a dry tone: the draft reply"
    assert dialog.status.text().startswith("✓")
    kinds = [(e.node_id, e.type) for e in dialog.log.entries]
    assert ("second", "llm_response") in kinds and not any(n == "first" for n, _ in kinds)
    assert path.read_bytes() == before  # nothing written
    assert wf.node("second").data.pinnedOutput == "pinned"  # the document's workflow untouched


def test_code_page_button_and_menu_open_the_dialog(qtbot, qloop, tmp_path) -> None:
    win = MainWindow()
    qtbot.addWidget(win)
    path = tmp_path / "code.flow.json"
    path.write_text((SAMPLES / "code.flow.json").read_text())
    assert win.files.open_path(str(path), ask=False)
    win.inspector.show_node("totals")
    page = win.inspector.stack.currentWidget()
    page.run_button.click()  # the code page's "Run this node…"
    dialog = win.run_node.dialog
    assert dialog is not None and dialog.node_id == "totals" and list(dialog.fields) == ["orders", "currency"]
    assert dialog.code is not None and dialog.code.toPlainText().startswith("total = 0")
    agent = win.run_node.open("say")  # the canvas menu's "Run This Node with Sample Inputs…"
    assert agent is not None and agent.previous is not None and win.run_node.dialog is agent
    agent.close()
    win.close()


@pytest.fixture
def code_runs() -> None:
    """Skips when the `code` extra is missing; with it, a Python code node must run here."""
    pytest.importorskip("pydantic_monty", reason="the code extra (pydantic-monty) is not installed")
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {}},
                {"id": "c", "type": "code", "data": {"language": "python", "code": "1 + 1"}},
            ],
            "connections": [{"source": "s", "target": "c"}],
        }
    )
    run = Run(wf, make_resolver("echo"))
    with ThreadPoolExecutor(1) as pool:  # its own loop, whatever runs on this thread
        status = pool.submit(asyncio.run, run.start()).result(timeout=60)
    assert str(status) == "completed", f"a Python code node does not run with the code extra installed: {run.error}"


def _run(qtbot, dialog) -> str:
    with qtbot.waitSignal(dialog.finished_run, timeout=20000) as done:
        dialog.run_button.click()
    return done.args[0]


def test_run_a_python_code_node_with_sample_inputs(code_runs, qtbot, qloop) -> None:
    wf = load_workflow(SAMPLES / "code.flow.json")
    dialog = RunNodeDialog(wf, "totals", lambda: make_resolver("echo"))
    qtbot.addWidget(dialog)
    dialog.fields["orders"].setPlainText('[{"item": "pen", "qty": 3, "price": 2.0}]')
    dialog.fields["currency"].setPlainText("GBP")
    assert _run(qtbot, dialog) == "completed"
    assert json.loads(dialog.output.toPlainText()) == {"orders": 1, "total": 6.0, "currency": "GBP"}
    logs = [e for e in dialog.log.entries if e.type == "code_log"]
    assert logs and "1 orders read" in (logs[0].extra or {}).get("text", logs[0].content)


def test_a_failing_code_node_marks_its_line(code_runs, qtbot, qloop) -> None:
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {}},
                {
                    "id": "c",
                    "type": "code",
                    "data": {"language": "python", "code": "a = 1\nb = 2\nc = missing + 1\nc", "inputs": {}},
                },
            ],
            "connections": [{"source": "s", "target": "c"}],
        }
    )
    dialog = RunNodeDialog(wf, "c", lambda: make_resolver("echo"))
    qtbot.addWidget(dialog)
    assert _run(qtbot, dialog) == "failed"
    assert dialog.code is not None and dialog.code.marked_line == 3
    assert dialog.status.text() == "✗ Line 3 failed: NameError: name 'missing' is not defined"


def test_a_start_node_runs_alone_and_an_approval_stops_at_its_pause(qtbot, qloop) -> None:
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "start", "type": "start", "data": {"initialInput": "default"}},
                {"id": "ok", "type": "approval", "data": {"prompt": "Send it?"}},
                {"id": "after", "type": "agent", "data": {"userPrompt": "never"}},
            ],
            "connections": [
                {"source": "start", "target": "ok"},
                {"source": "ok", "target": "after", "sourceHandle": "approve"},
            ],
        }
    )
    one = one_node_workflow(wf, "start", {}, "typed")
    assert [n.id for n in one.nodes] == ["start"] and one.nodes[0].data.initialInput == "typed"
    dialog = RunNodeDialog(wf, "start", lambda: make_resolver("echo"))
    qtbot.addWidget(dialog)
    dialog.previous.setPlainText("typed")
    assert _run(qtbot, dialog) == "completed" and dialog.output.toPlainText() == "typed"
    approval = RunNodeDialog(wf, "ok", lambda: make_resolver("echo"))
    qtbot.addWidget(approval)
    assert _run(qtbot, approval) == "paused"
    assert approval.status.text().startswith("⏸") and approval.run.status == "cancelled"


def test_a_node_the_validator_refuses_is_not_run(qtbot, qloop) -> None:
    """The document's own validation errors about the node refuse it here too: a TaskFlow script
    using a blocked identifier (`eval`) is refused with `script_blocked` before anything runs."""
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "start", "type": "start", "data": {}},
                {"id": "s", "type": "script", "data": {"language": "typescript", "script": "eval('1')"}},
            ],
            "connections": [{"source": "start", "target": "s"}],
        }
    )
    dialog = RunNodeDialog(wf, "s", lambda: make_resolver("echo"))
    qtbot.addWidget(dialog)
    problems = dialog.node_errors()
    assert any("`eval` (line 1)" in p for p in problems), problems
    assert "script_blocked" in {i.code for i in validate(wf) if "s" in i.node_ids}
    assert dialog.start() is None and dialog.run is None
    assert dialog.status.text().startswith("Cannot run this node: ") and problems[0] in dialog.status.text()


def test_a_literal_input_is_the_first_sample_shown_as_json(code_runs, qtbot, qloop) -> None:
    """An input written as a value (not a template) fills its field as JSON, never a Python repr,
    so "Run" works straight away."""
    orders = [{"item": "pen", "qty": 3, "price": 2.0}]
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {}},
                {
                    "id": "c",
                    "type": "code",
                    "data": {"code": "sum(o['qty'] for o in orders)", "inputs": {"orders": orders, "who": "{{who}}"}},
                },
            ],
            "connections": [{"source": "s", "target": "c"}],
        }
    )
    dialog = RunNodeDialog(wf, "c", lambda: make_resolver("echo"))
    qtbot.addWidget(dialog)
    field = dialog.fields["orders"]
    assert json.loads(field.toPlainText()) == orders
    assert "'item'" not in field.placeholderText() and '"item": "pen"' in field.placeholderText()
    assert dialog.fields["who"].toPlainText() == ""  # a template: nothing to begin with
    assert _run(qtbot, dialog) == "completed"
    assert dialog.output.toPlainText() == "3"
