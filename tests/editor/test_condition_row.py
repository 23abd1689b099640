"""The if node's condition row: every operator, a value editor fit for each, a path, one undo step per edit."""

from __future__ import annotations

import pytest

from editor.editing import WorkflowDocument
from editor.panels.conditions import OPERATORS, accepted_operators, value_problem
from editor.panels.core_pages import ConditionPage
from editor.panels.inspector import InspectorPanel
from engine import parse_workflow

FLOW = {
    "nodes": [
        {"id": "start", "type": "start", "x": 0, "y": 0, "data": {}},
        {
            "id": "check",
            "type": "if",
            "x": 300,
            "y": 0,
            "data": {"conditions": [{"operator": "contains", "value": "yes"}]},
        },
    ],
    "connections": [{"source": "start", "target": "check", "sourceHandle": "output", "targetHandle": "input"}],
}

NEW_OPERATORS = ("notContains", "startsWith", "endsWith", "regex", "isEmpty", "gt", "lt")
needs_engine = pytest.mark.skipif(
    not set(NEW_OPERATORS) <= accepted_operators(),
    reason="the engine's if kind does not know the issue-31 operators yet (branch i31a)",
)


def _panel(qtbot) -> tuple[WorkflowDocument, InspectorPanel, ConditionPage]:
    doc = WorkflowDocument(parse_workflow(FLOW), None)
    insp = InspectorPanel(doc)
    qtbot.addWidget(insp)
    insp.show()
    insp.show_node("check")
    page = insp.stack.currentWidget()
    assert isinstance(page, ConditionPage)
    return doc, insp, page


def _conds(doc: WorkflowDocument) -> list[dict]:
    return [c.model_dump() for c in doc.node("check").data.conditions]


def test_the_row_offers_every_operator_of_the_design(qtbot):
    _doc, _insp, page = _panel(qtbot)
    row = page.rows[0]
    offered = [row.operator.itemData(i) for i in range(row.operator.count())]
    assert offered == ["contains", "equal", "notContains", "startsWith", "endsWith", "regex", "isEmpty", "gt", "lt"]
    assert {op for op, _l, _k in OPERATORS} == set(offered)
    # AgentFlow's two are always there and enabled; the others are enabled once the engine knows them
    model = row.operator.model()
    for i, op in enumerate(offered):
        assert model.item(i).isEnabled() == (op in accepted_operators())
    assert {"contains", "equal"} <= accepted_operators()


def test_value_problems_are_words():
    assert value_problem("regex", "^order #\\d+") == ""
    bad = value_problem("regex", "order (")
    assert bad.startswith("Not a valid pattern: missing ), unterminated subpattern") and "character 7" in bad
    assert value_problem("gt", "10") == "" and value_problem("lt", " 2.5 ") == ""
    assert "'ten' is not a number" in value_problem("gt", "ten")
    assert value_problem("gt", "") == "Enter a number to compare with."
    assert value_problem("isEmpty", "") == "" and value_problem("contains", "") == ""


def test_typing_a_value_is_one_undo_step(qtbot):
    doc, _insp, page = _panel(qtbot)
    row = page.rows[0]
    row.value.setFocus()
    qtbot.keyClicks(row.value, "!!")
    assert _conds(doc) == [{"operator": "contains", "value": "yes!!"}]
    assert doc.undo_stack.count() == 1
    doc.undo_stack.undo()
    assert _conds(doc) == [{"operator": "contains", "value": "yes"}] and row.value.text() == "yes"


def test_a_path_is_written_and_an_emptied_one_is_dropped(qtbot):
    doc, _insp, page = _panel(qtbot)
    row = page.rows[0]
    qtbot.keyClicks(row.path, ".items[0]")
    assert _conds(doc) == [{"operator": "contains", "value": "yes", "path": ".items[0]"}]
    assert doc.undo_stack.count() == 1  # typing merged
    doc.end_merge()  # (leaving the field)
    row.path.selectAll()
    qtbot.keyClick(row.path, "\b")
    assert _conds(doc) == [{"operator": "contains", "value": "yes"}]
    doc.undo_stack.undo()
    assert _conds(doc)[0]["path"] == ".items[0]" and row.path.text() == ".items[0]"


def test_choosing_equal_is_its_own_step(qtbot):
    doc, _insp, page = _panel(qtbot)
    row = page.rows[0]
    row.operator.setCurrentIndex(row.operator.findData("equal"))
    assert _conds(doc)[0]["operator"] == "equal" and doc.undo_stack.count() == 1
    doc.undo_stack.undo()
    assert _conds(doc)[0]["operator"] == "contains" and row.current_operator() == "contains"


@needs_engine
def test_the_value_editor_fits_the_operator(qtbot):
    doc, _insp, page = _panel(qtbot)
    row = page.rows[0]
    row.operator.setCurrentIndex(row.operator.findData("isEmpty"))
    assert _conds(doc)[0]["operator"] == "isEmpty"
    assert not row.value.isVisible() and not row.problem.isVisible()
    assert _conds(doc)[0]["value"] == "yes"  # kept, not lost: back to contains, it is there
    row.operator.setCurrentIndex(row.operator.findData("gt"))
    assert row.value.isVisible() and row.problem.isVisible() and "'yes' is not a number" in row.problem.text()
    row.value.selectAll()
    qtbot.keyClicks(row.value, "12")
    assert not row.problem.isVisible() and _conds(doc)[0] == {"operator": "gt", "value": "12"}
    row.operator.setCurrentIndex(row.operator.findData("regex"))
    row.value.selectAll()
    qtbot.keyClicks(row.value, "[a-")
    assert row.problem.isVisible() and row.problem.text().startswith("Not a valid pattern")
    assert _conds(doc)[0] == {"operator": "regex", "value": "[a-"}  # what was typed is kept
    qtbot.keyClicks(row.value, "z]+")
    assert not row.problem.isVisible() and _conds(doc)[0]["value"] == "[a-z]+"
    # isEmpty, gt, its value (merged), regex, its value (merged): five steps
    assert doc.undo_stack.count() == 5
    doc.undo_stack.undo()
    assert _conds(doc)[0] == {"operator": "regex", "value": "12"}
    while doc.undo_stack.canUndo():
        doc.undo_stack.undo()
    assert _conds(doc) == [{"operator": "contains", "value": "yes"}]
    assert row.current_operator() == "contains" and row.value.isVisible()


def test_rows_follow_the_conditions(qtbot):
    flow = {
        **FLOW,
        "nodes": [
            FLOW["nodes"][0],
            {
                **FLOW["nodes"][1],
                "data": {"conditions": [{"operator": "contains", "value": "a"}, {"operator": "equal", "value": "b"}]},
            },
        ],
    }
    doc = WorkflowDocument(parse_workflow(flow), None)
    insp = InspectorPanel(doc)
    qtbot.addWidget(insp)
    insp.show_node("check")
    page = insp.stack.currentWidget()
    assert [r.current_operator() for r in page.rows] == ["contains", "equal"]
    assert not page.rows[0].up.isEnabled() and not page.rows[1].down.isEnabled()
