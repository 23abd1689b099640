"""The agent page's approve controls (docs/design.md, "Approving tool calls"): the ticked flow
tools ask before each call (``tools.flows`` entries ``{flow, approve: "ask"}``), and a
subagent asks before its parent calls it (its own ``approve: "ask"``); each click is one
undoable edit, and unticking leaves the file as it was."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt

from editor.editing import WorkflowDocument
from editor.panels.inspector import InspectorPanel
from engine import parse_workflow


def _click(qtbot, box):
    qtbot.mouseClick(box, Qt.MouseButton.LeftButton, pos=QPoint(8, box.height() // 2))


def _page(qtbot, wf, node_id):
    doc = WorkflowDocument(parse_workflow(wf), None)
    insp = InspectorPanel(doc)
    qtbot.addWidget(insp)
    insp.show()
    insp.show_node(node_id)
    return doc, insp, insp.stack.currentWidget()


def _agent(node_id, **data):
    return {"id": node_id, "type": "agent", "x": 0, "y": 0, "data": {"agentName": node_id.upper(), **data}}


def test_the_flow_tools_ask_box_sets_approve_on_every_ticked_flow(qtbot):
    wf = {
        "nodes": [
            {"id": "start", "type": "start", "x": 0, "y": 0, "data": {}},
            _agent("a", tools={"flows": ["greet", {"flow": "other", "approve": "ask"}]}),
        ],
        "connections": [],
    }
    doc, _insp, page = _page(qtbot, wf, "a")
    assert page.flow_ask.isEnabled() and page.flow_ask.isVisibleTo(page)
    assert page.flow_ask.checkState() == Qt.CheckState.PartiallyChecked  # only some ask
    _click(qtbot, page.flow_ask)
    assert page.flow_ask.checkState() == Qt.CheckState.Checked
    assert doc.node("a").data.tools.flows == [{"flow": "greet", "approve": "ask"}, {"flow": "other", "approve": "ask"}]
    page._flows_edited(["greet", "other", "third"])  # a flow ticked now does not ask: partly checked again
    assert doc.node("a").data.tools.flows[-1] == "third"
    assert page.flow_ask.checkState() == Qt.CheckState.PartiallyChecked
    _click(qtbot, page.flow_ask)
    assert all(f["approve"] == "ask" for f in doc.node("a").data.tools.flows)
    _click(qtbot, page.flow_ask)
    assert page.flow_ask.checkState() == Qt.CheckState.Unchecked
    assert doc.node("a").data.tools.flows == ["greet", "other", "third"]
    doc.undo_stack.undo()
    assert doc.node("a").data.tools.flows[2] == {"flow": "third", "approve": "ask"}


def test_the_flow_tools_ask_box_is_off_without_flows(qtbot):
    wf = {"nodes": [_agent("a", tools={})], "connections": []}
    _doc, _insp, page = _page(qtbot, wf, "a")
    assert not page.flow_ask.isEnabled() and page.flow_ask.checkState() == Qt.CheckState.Unchecked
    assert not page.flow_ask.isVisibleTo(page)  # shown once a flow is ticked


def test_a_subagent_page_sets_its_own_approve(qtbot):
    wf = {
        "nodes": [
            {"id": "start", "type": "start", "x": 0, "y": 0, "data": {}},
            _agent("p", tools={"subagents": True}),
            _agent("k", tools={}),
        ],
        "connections": [
            {"source": "start", "target": "p", "sourceHandle": "output"},
            {"source": "p", "target": "k", "sourceHandle": "subagent", "targetHandle": "input"},
        ],
    }
    doc, insp, page = _page(qtbot, wf, "k")
    assert page.subagent_ask.isVisibleTo(page) and not page.subagent_ask.isChecked()
    _click(qtbot, page.subagent_ask)
    assert doc.node("k").data.model_dump().get("approve") == "ask"
    assert '"approve":"ask"' in doc.workflow.model_dump_json()
    _click(qtbot, page.subagent_ask)
    assert "approve" not in doc.node("k").data.model_dump()  # "always" is the default: not written
    doc.undo_stack.undo()
    assert doc.node("k").data.model_dump().get("approve") == "ask"
    insp.show_node("k")
    assert page.subagent_ask.isChecked()
    insp.show_node("p")  # the parent is no subagent: no such box
    assert not insp.stack.currentWidget().subagent_ask.isVisibleTo(page)
