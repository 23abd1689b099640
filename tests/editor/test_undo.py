"""Every edit type: undo restores the exact model_dump(), redo restores the edited one."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from PySide6.QtCore import Qt

from editor.layout import auto_layout

from .conftest import copy_sample, open_flow


def roundtrip(doc, edit: Callable[[], None], steps: int = 1) -> None:
    before = doc.workflow.model_dump()
    count = doc.undo_stack.count()
    edit()
    after = doc.workflow.model_dump()
    assert after != before, "the edit changed nothing"
    assert doc.undo_stack.count() == count + steps, "one gesture, one undo step"
    doc.undo_stack.undo()
    assert doc.workflow.model_dump() == before
    doc.undo_stack.redo()
    assert doc.workflow.model_dump() == after
    doc.undo_stack.undo()
    assert doc.workflow.model_dump() == before


@pytest.fixture
def review(window, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    return window


EDITS: dict[str, Callable] = {
    "add node": lambda w: w.document.add_node("approval", 10, 10),
    "delete node with its links": lambda w: w.document.delete(["route"]),
    "delete several nodes and a link": lambda w: w.document.delete(
        ["send", "general"], [("start", "output", "triage", "input")]
    ),
    "connect": lambda w: w.document.connect("triage", "output", "general", "input"),
    "reconnect": lambda w: w.document.reconnect(
        ("signoff", "reject", "revise", "input"), "signoff", "reject", "general", "input"
    ),
    "move": lambda w: w.document.move_nodes(
        {"route": (640, 210), "send": (1220, 60)}, {"route": (700, 300), "send": (10, 10)}
    ),
    "edit field": lambda w: w.document.set_node_field("triage", "systemPrompt", "Be brief."),
    "collapse": lambda w: w.document.set_collapsed(["triage", "route"], True),
    "toggle web search": lambda w: w.document.set_node_field("send", "tools.web_search", True, merge=False),
    "add condition": lambda w: w.document.set_conditions(
        "route", [{"operator": "contains", "value": "refund"}, {"operator": "equal", "value": "x"}], {}
    ),
    "remove condition with its link": lambda w: w.document.set_conditions("route", [], {0: None}),
    "workflow name": lambda w: w.document.set_info(name="Renamed"),
    "paste": lambda w: w.document.paste_json(w.document.fragment_json(["triage", "route"])),
    "auto-layout": lambda w: auto_layout(w.document),
}


@pytest.mark.parametrize("name", list(EDITS))
def test_edit_undo_redo_exact(review, name):
    roundtrip(review.document, lambda: EDITS[name](review))


def test_reorder_conditions_moves_links(review):
    doc = review.document
    doc.set_conditions(
        "route", [{"operator": "contains", "value": "refund"}, {"operator": "contains", "value": "late"}], {}
    )
    doc.connect("route", "condition-1", "send", "input")
    assert doc.connection(("route", "condition-0", "signoff", "input")) is not None

    def swap():
        review.inspector.show_node("route")
        review.inspector.page("if").move_condition(0, 1)

    roundtrip(doc, swap)
    swap()
    assert doc.connection(("route", "condition-1", "signoff", "input")) is not None
    assert doc.connection(("route", "condition-0", "send", "input")) is not None
    assert doc.node("route").data.conditions[0].value == "late"


def test_subagents_off_removes_subagent_links_in_one_step(window, tmp_path):
    open_flow(window, copy_sample(tmp_path, "research"))
    doc = window.document
    roundtrip(doc, lambda: doc.set_subagents_enabled("lead", False))
    doc.set_subagents_enabled("lead", False)
    assert not any(c.sourceHandle == "subagent" for c in doc.workflow.connections)


def test_typing_a_prompt_merges_into_one_step(review, qtbot):
    review.scene.select_nodes(["triage"])
    insp = review.inspector
    assert insp.node_id == "triage"
    doc = review.document
    before = doc.workflow.model_dump()
    count = doc.undo_stack.count()
    insp.page("agent").user.setFocus()
    insp.page("agent").user.moveCursor(insp.page("agent").user.textCursor().MoveOperation.End)
    qtbot.keyClicks(insp.page("agent").user, " Please be kind.")
    assert doc.node("triage").data.userPrompt.endswith(" Please be kind.")
    assert doc.undo_stack.count() == count + 1
    # Typing in the name field is its own step, also merged.
    insp.page("agent").name.setFocus()
    doc.end_merge()
    qtbot.keyClicks(insp.page("agent").name, "!!")
    assert doc.node("triage").data.agentName == "Triage and draft!!"
    assert doc.undo_stack.count() == count + 2
    # The canvas shows the edit at once.
    assert review.scene.node_items["triage"].layout.title == "Triage and draft!!"
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    assert doc.workflow.model_dump() == before
    assert insp.page("agent").name.text() == "Triage and draft"


def test_undo_redo_keys(review, qtbot):
    doc = review.document
    before = doc.workflow.model_dump()
    review.scene.select_nodes(["general"])
    review.view.setFocus()
    qtbot.keyClick(review.view, Qt.Key.Key_Delete)
    assert doc.node("general") is None
    review.act_undo.trigger()
    assert doc.workflow.model_dump() == before
    review.act_redo.trigger()
    assert doc.node("general") is None


def test_ctrl_z_in_a_prompt_undoes_the_document(review, qtbot):
    review.scene.select_nodes(["triage"])
    insp = review.inspector
    doc = review.document
    before = doc.workflow.model_dump()
    insp.page("agent").system.setFocus()
    qtbot.keyClicks(insp.page("agent").system, "xyz")
    assert "xyz" in doc.node("triage").data.systemPrompt
    qtbot.keyClick(insp.page("agent").system, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert doc.workflow.model_dump() == before
    assert "xyz" not in insp.page("agent").system.toPlainText()
    qtbot.keyClick(
        insp.page("agent").system, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    )
    assert "xyz" in doc.node("triage").data.systemPrompt


def test_typing_then_deleting_leaves_no_step(review, qtbot):
    review.scene.select_nodes(["signoff"])
    doc = review.document
    count = doc.undo_stack.count()
    edit = review.inspector.page("approval").prompt
    edit.setFocus()
    qtbot.keyClicks(edit, "ab")
    qtbot.keyClick(edit, Qt.Key.Key_Backspace)
    qtbot.keyClick(edit, Qt.Key.Key_Backspace)
    assert doc.undo_stack.count() == count
