"""The browser node's inspector page: steps in a table (add, remove, reorder, edit a cell, pick an
action), each change one undo step; the scope's type and domains."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox

from editor.editing import WorkflowDocument
from editor.panels.browser_page import BrowserPage
from editor.panels.inspector import InspectorPanel
from engine import parse_workflow

FLOW = {
    "nodes": [
        {"id": "start", "type": "start", "x": 0, "y": 0, "data": {}},
        {
            "id": "web",
            "type": "browser",
            "x": 300,
            "y": 0,
            "data": {
                "steps": [
                    {"action": "goto", "value": "https://example.com"},
                    {"action": "extractText", "selector": "h1"},
                ]
            },
        },
    ],
    "connections": [{"source": "start", "target": "web", "sourceHandle": "output", "targetHandle": "input"}],
}


def _panel(qtbot) -> tuple[WorkflowDocument, BrowserPage]:
    doc = WorkflowDocument(parse_workflow(FLOW), None)
    insp = InspectorPanel(doc)
    qtbot.addWidget(insp)
    insp.show()
    insp.show_node("web")
    page = insp.stack.currentWidget()
    assert isinstance(page, BrowserPage)
    return doc, page


def _steps(doc: WorkflowDocument) -> list[dict]:
    return [dict(s) for s in doc.node("web").data.model_dump()["steps"]]


def test_the_table_shows_the_steps(qtbot) -> None:
    _doc, page = _panel(qtbot)
    assert page.table.rowCount() == 2
    combo = page.table.cellWidget(0, 0)
    assert isinstance(combo, QComboBox) and combo.currentText() == "goto"
    assert page.table.item(0, 2).text() == "https://example.com"
    assert page.table.item(1, 1).text() == "h1"
    # what the narrow column cuts short is read in full on hover
    assert page.table.item(0, 2).toolTip() == "https://example.com"
    assert "selector" in page.table.horizontalHeaderItem(1).toolTip()


def test_add_edit_reorder_remove_each_one_undo_step(qtbot) -> None:
    doc, page = _panel(qtbot)
    start = doc.undo_stack.count()
    page.add_step()
    assert _steps(doc)[-1] == {"action": "click", "selector": ""}
    page.table.item(2, 1).setText("#go")
    assert _steps(doc)[2]["selector"] == "#go"
    page.table.item(2, 3).setText("1500")
    assert _steps(doc)[2]["timeoutMs"] == 1500
    combo = page.table.cellWidget(2, 0)
    combo.setCurrentText("type")
    combo.activated.emit(combo.currentIndex())
    assert _steps(doc)[2]["action"] == "type"
    page.move_step(2, -1)
    assert [s["action"] for s in _steps(doc)] == ["goto", "type", "extractText"]
    page.remove_step(0)
    assert [s["action"] for s in _steps(doc)] == ["type", "extractText"]
    assert doc.undo_stack.count() == start + 6
    doc.undo_stack.undo()  # the removal
    assert [s["action"] for s in _steps(doc)] == ["goto", "type", "extractText"]
    assert page.table.rowCount() == 3
    for _ in range(5):
        doc.undo_stack.undo()
    assert _steps(doc) == FLOW["nodes"][1]["data"]["steps"]


def test_a_timeout_that_is_not_a_number_is_not_written(qtbot) -> None:
    doc, page = _panel(qtbot)
    page.table.item(0, 3).setText("soon")
    assert "timeoutMs" not in _steps(doc)[0]
    assert page.table.item(0, 3).text() == ""


def test_the_scope_editor_writes_site_domains(qtbot) -> None:
    doc, page = _panel(qtbot)
    page.scope_type.setCurrentIndex(page.scope_type.findData("site"))
    page.scope_type.activated.emit(page.scope_type.currentIndex())
    page.domains.setText("example.com, docs.example.org")
    page.domains.editingFinished.emit()
    assert doc.node("web").data.scope == {"type": "site", "domains": ["example.com", "docs.example.org"]}
    doc.undo_stack.undo()
    assert doc.node("web").data.scope == {"type": "site", "domains": []}
