"""The approval's inspector page: options (a rename carries its link, a removal drops it, one
undo step each; the node's handles follow the labels), problems said in words, and the timeout
with the decision it takes."""

from __future__ import annotations

from editor.editing import WorkflowDocument
from editor.panels.approval_page import ApprovalPage
from editor.panels.inspector import InspectorPanel
from engine import parse_workflow, spec_for

FLOW = {
    "nodes": [
        {"id": "start", "type": "start", "x": 0, "y": 0, "data": {}},
        {"id": "ask", "type": "approval", "x": 300, "y": 0, "data": {"prompt": "Ship?", "options": ["Later"]}},
        {"id": "a", "type": "agent", "x": 600, "y": 0, "data": {}},
        {"id": "b", "type": "agent", "x": 600, "y": 200, "data": {}},
    ],
    "connections": [
        {"source": "start", "target": "ask", "sourceHandle": "output", "targetHandle": "input"},
        {"source": "ask", "target": "a", "sourceHandle": "approve", "targetHandle": "input"},
        {"source": "ask", "target": "b", "sourceHandle": "Later", "targetHandle": "input"},
    ],
}


def _page(qtbot) -> tuple[WorkflowDocument, ApprovalPage]:
    doc = WorkflowDocument(parse_workflow(FLOW), None)
    insp = InspectorPanel(doc)
    qtbot.addWidget(insp)
    insp.show()
    insp.show_node("ask")
    page = insp.stack.currentWidget()
    assert isinstance(page, ApprovalPage)
    return doc, page


def _links(doc: WorkflowDocument) -> set[tuple[str, str]]:
    return {(c.handle, c.target) for c in doc.workflow.connections if c.source == "ask"}


def test_options_rename_add_remove_with_their_links(qtbot):
    doc, page = _page(qtbot)
    original = doc.workflow.model_dump()
    assert [page.options.item(i).text() for i in range(page.options.count())] == ["Later"]
    page.options.item(0).setText("Tomorrow")  # renamed: its link follows
    assert doc.node("ask").data.options == ["Tomorrow"]
    assert _links(doc) == {("approve", "a"), ("Tomorrow", "b")}
    assert spec_for("approval").outputs(doc.node("ask").data) == ("approve", "reject", "Tomorrow")
    page.add_button.click()
    assert doc.node("ask").data.options == ["Tomorrow", "Option 2"]
    page.remove_option(0)  # removed: its link goes too
    assert doc.node("ask").data.options == ["Option 2"] and _links(doc) == {("approve", "a")}
    assert doc.undo_stack.count() == 3
    for _ in range(3):
        doc.undo_stack.undo()
    assert doc.workflow.model_dump() == original


def test_problems_and_the_timeout(qtbot):
    doc, page = _page(qtbot)
    page.options.item(0).setText("Approve")
    assert page.problem.isVisibleTo(page) and "already a decision" in page.problem.text()
    doc.undo_stack.undo()
    assert not page.on_timeout.isEnabled()
    page.timeout.setValue(90)
    assert doc.node("ask").data.timeoutMs == 90_000 and page.on_timeout.isEnabled()
    assert [page.on_timeout.itemText(i) for i in range(page.on_timeout.count())] == ["reject", "approve", "Later"]
    page.on_timeout.setCurrentText("Later")
    assert doc.node("ask").data.onTimeout == "Later"
    page.timeout.setValue(0)
    assert doc.node("ask").data.timeoutMs is None
