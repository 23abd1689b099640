"""MCP in the desktop: the servers dialog (add, test, remove), an agent's tool picker, the
``mcp`` node's argument form, and the approval card of a tool call."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed (pip install 'flowdesk[mcp]')")

from PySide6.QtCore import Qt  # noqa: E402

from editor.editing import WorkflowDocument  # noqa: E402
from editor.panels.inspector import InspectorPanel  # noqa: E402
from editor.panels.mcp_pages import McpPage, McpServersDialog, McpToolPicker  # noqa: E402
from editor.run.approvals import ApprovalsPanel  # noqa: E402
from editor.run.bridge import ApprovalRequest  # noqa: E402
from engine import mcp_servers, parse_workflow, save_mcp_server  # noqa: E402

SCRIPT = str(Path(__file__).resolve().parents[1] / "mcp" / "server_script.py")


def _listed(widget_status, qtbot, text="tool"):
    qtbot.waitUntil(lambda: text in widget_status.text() or "✗" in widget_status.text(), timeout=30000)
    assert "✗" not in widget_status.text(), widget_status.text()


def test_the_servers_dialog_adds_tests_and_removes_a_server(qtbot):
    dialog = McpServersDialog()
    qtbot.addWidget(dialog)
    dialog.new_server()
    dialog.name.setText("calc")
    dialog.transport.setCurrentIndex(dialog.transport.findData("http"))
    assert dialog.url.isVisibleTo(dialog) and not dialog.command.isVisibleTo(dialog)  # only that way's fields
    dialog.transport.setCurrentIndex(0)
    assert dialog.command.isVisibleTo(dialog) and not dialog.headers.isVisibleTo(dialog)
    dialog.command.setText(sys.executable)
    dialog.args.setText(SCRIPT)
    dialog.env.setPlainText("TOKEN={{secrets.CALC_TOKEN}}")
    qtbot.mouseClick(dialog.save_button, Qt.MouseButton.LeftButton)
    saved = mcp_servers()["calc"]
    assert saved.command == sys.executable and saved.args == [SCRIPT]
    assert saved.env == {"TOKEN": "{{secrets.CALC_TOKEN}}"}  # the template, never a value
    assert [dialog.list.item(i).text() for i in range(dialog.list.count())] == ["calc"]
    qtbot.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    _listed(dialog.status, qtbot, "answered")
    shown = [dialog.tools.item(i).text() for i in range(dialog.tools.count())]
    assert "add — Add two whole numbers." in shown
    qtbot.mouseClick(dialog.remove_button, Qt.MouseButton.LeftButton)
    assert "calc" not in mcp_servers() and dialog.list.count() == 0


def test_a_server_that_cannot_start_says_why(qtbot, tmp_path):
    dialog = McpServersDialog()
    qtbot.addWidget(dialog)
    dialog.name.setText("broken")
    dialog.command.setText(str(tmp_path / "missing"))
    qtbot.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: "✗" in dialog.status.text(), timeout=30000)
    assert "'broken'" in dialog.status.text() and "not found" in dialog.status.text()


def test_the_tool_picker_lists_tools_with_descriptions_to_tick(qtbot):
    save_mcp_server("calc", {"command": sys.executable, "args": [SCRIPT]})
    picker = McpToolPicker(lambda: None)
    qtbot.addWidget(picker)
    edits = []
    picker.edited.connect(edits.append)
    picker.load(None)
    assert picker.server.currentText() == "calc"
    qtbot.mouseClick(picker.list_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: picker.tools.count() > 0, timeout=30000)
    items = {
        picker.tools.item(i).data(Qt.ItemDataRole.UserRole): picker.tools.item(i) for i in range(picker.tools.count())
    }
    assert items["add"].text() == "add — Add two whole numbers."
    items["add"].setCheckState(Qt.CheckState.Checked)
    assert edits[-1] == [{"server": "calc", "tools": ["add"]}]
    picker.ask.setChecked(True)
    assert edits[-1] == [{"server": "calc", "tools": ["add"], "approve": "ask"}]
    picker.all_tools.setChecked(True)
    assert edits[-1] == [{"server": "calc", "tools": "*", "approve": "ask"}]


def test_the_agent_page_writes_tools_mcp(qtbot):
    save_mcp_server("calc", {"command": sys.executable, "args": [SCRIPT]})
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "start", "type": "start", "x": 0, "y": 0, "data": {}},
                {"id": "a", "type": "agent", "x": 0, "y": 0, "data": {"agentName": "A", "tools": {}}},
            ],
            "connections": [],
        }
    )
    doc = WorkflowDocument(wf, None)
    insp = InspectorPanel(doc)
    qtbot.addWidget(insp)
    insp.show_node("a")
    page = insp.stack.currentWidget()
    page.mcp.all_tools.setChecked(True)
    assert doc.node("a").data.tools.mcp == [{"server": "calc", "tools": "*"}]


def test_the_mcp_node_page_fills_its_argument_form_from_the_schema(qtbot):
    wf = parse_workflow(
        {
            "mcpServers": {"calc": {"command": sys.executable, "args": [SCRIPT]}},
            "nodes": [
                {"id": "start", "type": "start", "x": 0, "y": 0, "data": {}},
                {"id": "m", "type": "mcp", "x": 0, "y": 0, "data": {"server": "calc", "tool": "add", "arguments": {}}},
            ],
            "connections": [],
        }
    )
    doc = WorkflowDocument(wf, None)
    insp = InspectorPanel(doc)
    qtbot.addWidget(insp)
    insp.show_node("m")
    page = insp.stack.currentWidget()
    assert isinstance(page, McpPage)
    qtbot.mouseClick(page.list_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: set(page.arg_edits) == {"a", "b"}, timeout=30000)
    assert "integer (required)" in page.arg_edits["a"].placeholderText()
    qtbot.keyClicks(page.arg_edits["a"], "4")
    qtbot.keyClicks(page.arg_edits["b"], "{{x}}")
    assert doc.node("m").data.arguments == {"a": 4, "b": "{{x}}"}


def _tool_request() -> ApprovalRequest:
    call = {
        "kind": "tool_call",
        "tool": "add",
        "server": "calc",
        "arguments": {"a": 2, "b": 3},
        "schema": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    }
    return ApprovalRequest("agent", "Worker", "Worker wants to call the tool 'calc/add'.", "hello", True, call)


def test_the_approval_card_edits_a_tool_calls_arguments_as_checked_json(qtbot):
    panel = ApprovalsPanel()
    qtbot.addWidget(panel)
    decisions = []
    panel.decision_requested.connect(lambda *a: decisions.append(a))
    panel.set_requests([_tool_request()])
    card = panel.active_card
    assert "calc/add" in card.tool_label.text()
    assert json.loads(card.arguments_edit.toPlainText()) == {"a": 2, "b": 3}
    assert panel.edited_arguments("agent") is None  # untouched
    card.arguments_edit.setPlainText('{"a": "x", "b": 3}')
    assert not card.approve_button.isEnabled() and "'x' is not of type 'integer'" in card.arguments_error.text()
    card.arguments_edit.setPlainText("{not json")
    assert not card.approve_button.isEnabled() and "Not valid JSON" in card.arguments_error.text()
    card.arguments_edit.setPlainText('{"a": 5, "b": 5}')
    assert card.approve_button.isEnabled() and card.arguments_error.text() == ""
    assert panel.edited_arguments("agent") == {"a": 5, "b": 5}
    qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
    assert decisions == [("agent", "approve", "")]


def test_the_approval_card_rejects_a_tool_call_with_a_note(qtbot):
    panel = ApprovalsPanel()
    qtbot.addWidget(panel)
    decisions = []
    panel.decision_requested.connect(lambda *a: decisions.append(a))
    panel.set_requests([_tool_request()])
    card = panel.active_card
    card.arguments_edit.setPlainText("{broken")  # a rejection does not need valid arguments
    card.note_edit.setText("not that one")
    qtbot.mouseClick(card.reject_button, Qt.MouseButton.LeftButton)
    assert decisions == [("agent", "reject", "not that one")]


def test_a_flow_tool_that_asks_keeps_asking_when_the_list_is_edited(qtbot):
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "start", "type": "start", "x": 0, "y": 0, "data": {}},
                {
                    "id": "a",
                    "type": "agent",
                    "x": 0,
                    "y": 0,
                    "data": {"agentName": "A", "tools": {"flows": [{"flow": "greet", "approve": "ask"}]}},
                },
            ],
            "connections": [],
        }
    )
    doc = WorkflowDocument(wf, None)
    insp = InspectorPanel(doc)
    qtbot.addWidget(insp)
    insp.show_node("a")
    page = insp.stack.currentWidget()
    shown = [page.flows.list.item(i).text() for i in range(page.flows.list.count())]
    assert shown == ["greet (not in the library)"]
    page._flows_edited(["greet", "other"])
    assert doc.node("a").data.tools.flows == [{"flow": "greet", "approve": "ask"}, "other"]
