"""The agent's structured answer: a fields table that writes a JSON Schema, raw JSON Schema checked
as typed, both written as the agent's ``responseFormat`` in undoable steps; JSON output shown as JSON."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QTextBrowser

from editor.editing import WorkflowDocument
from editor.panels.core_pages import AgentPage
from editor.panels.inspector import InspectorPanel
from editor.panels.schema_editor import DEFAULT_SCHEMA, fields_to_schema, schema_problem, schema_to_fields
from editor.run.details import render_content
from engine import parse_workflow

FLOW = {
    "nodes": [
        {"id": "start", "type": "start", "x": 0, "y": 0, "data": {}},
        {"id": "ask", "type": "agent", "x": 300, "y": 0, "data": {"agentName": "Asker", "userPrompt": "hi"}},
    ],
    "connections": [{"source": "start", "target": "ask", "sourceHandle": "output", "targetHandle": "input"}],
}


def _panel(qtbot) -> tuple[WorkflowDocument, InspectorPanel, AgentPage]:
    doc = WorkflowDocument(parse_workflow(FLOW), None)
    insp = InspectorPanel(doc)
    qtbot.addWidget(insp)
    insp.show()
    insp.show_node("ask")
    page = insp.stack.currentWidget()
    assert isinstance(page, AgentPage)
    return doc, insp, page


def _fmt(doc: WorkflowDocument):
    return doc.node("ask").data.model_dump().get("responseFormat")


def test_fields_make_an_object_schema_and_back():
    fields = [
        {"name": "city", "type": "string", "required": True, "description": "Where"},
        {"name": "days", "type": "integer", "required": False, "description": ""},
        {"name": "", "type": "string", "required": True, "description": "not named yet"},
    ]
    schema = fields_to_schema(fields)
    assert schema == {
        "type": "object",
        "properties": {"city": {"type": "string", "description": "Where"}, "days": {"type": "integer"}},
        "required": ["city"],
        "additionalProperties": False,
    }
    assert schema_to_fields(schema) == fields[:2]
    nested = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}
    assert schema_to_fields(nested) is None  # more than the table shows: edited as text


def test_schema_problems_are_words():
    assert schema_problem('{"type": "object"}') == ({"type": "object"}, "")
    value, problem = schema_problem('{"type": "object",\n "properties": {')
    assert value is None and problem.startswith("Not valid JSON at line 2, column")
    assert schema_problem("[1]")[1] == "A schema is a JSON object ({…})."
    assert "'text' is not a JSON Schema type" in schema_problem('{"type": "text"}')[1]
    assert (
        "'b' is required but is not one of its properties"
        in schema_problem('{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}')[1]
    )
    assert "field 'a'" in schema_problem('{"type": "object", "properties": {"a": {"type": "str"}}}')[1]


def test_turning_it_on_writes_a_response_format_in_one_step(qtbot):
    doc, _insp, page = _panel(qtbot)
    assert not page.structured.isChecked() and not page.schema.isVisible()
    page.structured.setChecked(True)
    assert _fmt(doc) == {"type": "json_schema", "schema": DEFAULT_SCHEMA}
    assert page.schema.isVisible() and page.schema.table.rowCount() == 1
    assert doc.undo_stack.count() == 1
    doc.undo_stack.undo()
    assert _fmt(doc) is None and not page.structured.isChecked()
    assert "responseFormat" not in doc.node("ask").data.model_dump()  # nothing left in the file


def test_the_table_writes_the_schema_and_each_edit_undoes(qtbot):
    doc, _insp, page = _panel(qtbot)
    page.structured.setChecked(True)
    editor = page.schema
    editor.table.item(0, 0).setText("city")
    assert list(_fmt(doc)["schema"]["properties"]) == ["city"] and _fmt(doc)["schema"]["required"] == ["city"]
    editor.add_field()
    editor.table.item(1, 0).setText("days")
    combo = editor.table.cellWidget(1, 1)
    assert isinstance(combo, QComboBox)
    combo.setCurrentText("integer")
    editor.table.item(1, 2).setCheckState(Qt.CheckState.Unchecked)
    editor.table.item(1, 3).setText("How many days")
    schema = _fmt(doc)["schema"]
    assert schema["properties"] == {
        "city": {"type": "string"},
        "days": {"type": "integer", "description": "How many days"},
    }
    assert schema["required"] == ["city"]
    # the raw text follows the table
    assert schema_problem(editor.raw.toPlainText())[0] == schema
    # on, rename, add days, its type, not required, its description: one step each
    assert doc.undo_stack.count() == 6
    doc.undo_stack.undo()
    assert "description" not in _fmt(doc)["schema"]["properties"]["days"]
    assert editor.table.item(1, 3).text() == ""
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    assert _fmt(doc)["schema"]["properties"]["days"] == {"type": "string"}
    assert editor.table.cellWidget(1, 1).currentText() == "string"


def test_raw_schema_is_checked_as_typed_and_typing_is_one_step(qtbot):
    doc, _insp, page = _panel(qtbot)
    page.structured.setChecked(True)
    editor = page.schema
    editor.tabs.setCurrentIndex(1)
    editor.raw.setFocus()
    editor.raw.selectAll()
    before = _fmt(doc)
    text = '{"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"}}}}'
    qtbot.keyClicks(editor.raw, text[:-1])  # every prefix is invalid: shown, never written
    assert editor.problem.isVisible() and editor.problem.text().startswith("Not valid JSON")
    assert _fmt(doc) == before
    qtbot.keyClicks(editor.raw, text[-1])
    assert not editor.problem.isVisible()
    assert _fmt(doc)["schema"]["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert not editor.table.isEnabled() and not editor.table_note.isHidden()  # beyond the table
    # ...shown read-only: its fields, their types in words (no type picker)
    assert editor.table.rowCount() == 1 and editor.table.item(0, 0).text() == "tags"
    assert editor.table.item(0, 1).text() == "array of string" and editor.table.cellWidget(0, 1) is None
    qtbot.keyClicks(editor.raw, " ")  # still the same schema: no new step
    assert doc.undo_stack.count() == 2  # on, then the typing
    doc.undo_stack.undo()
    assert _fmt(doc) == before
    assert editor.table.isEnabled() and editor.table.item(0, 0).text() == "answer"
    assert isinstance(editor.table.cellWidget(0, 1), QComboBox)  # editable again: a type picker


def test_table_and_raw_round_trip(qtbot):
    """Fields typed in the table read back from the raw text, and a raw edit the table can show
    comes back to the table as editable rows, the same schema both ways."""
    doc, _insp, page = _panel(qtbot)
    page.structured.setChecked(True)
    editor = page.schema
    editor.add_field()
    editor.table.item(1, 0).setText("count")
    editor.table.cellWidget(1, 1).setCurrentText("integer")
    written = _fmt(doc)["schema"]
    assert schema_problem(editor.raw.toPlainText()) == (written, "")
    assert written["properties"] == {"answer": {"type": "string"}, "count": {"type": "integer"}}
    editor.tabs.setCurrentIndex(1)
    editor.raw.setFocus()
    editor.raw.selectAll()
    simple = '{"type": "object", "properties": {"city": {"type": "string", "description": "where"}}, "required": []}'
    qtbot.keyClicks(editor.raw, simple)
    assert editor.table.isEnabled() and editor.table.rowCount() == 1
    assert [editor.table.item(0, c).text() for c in (0, 3)] == ["city", "where"]
    assert editor.table.item(0, 2).checkState() == Qt.CheckState.Unchecked
    assert fields_to_schema(schema_to_fields(_fmt(doc)["schema"]), _fmt(doc)["schema"]) == _fmt(doc)["schema"]


def test_a_json_answer_shows_as_json():
    browser = QTextBrowser()
    assert render_content(browser, "llm_response", '{"city": "Oslo", "days": 3}') == "json"
    assert render_content(browser, "llm_response", "Just **text**") == "markdown"
