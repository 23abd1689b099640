"""Copy/paste through the real clipboard: workflow JSON, links inside the selection kept,
fresh ids that never collide."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from engine import loads_workflow

from .conftest import copy_sample, open_flow


def test_copy_paste_keeps_internal_links_and_gets_fresh_ids(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    doc, scene = window.document, window.scene
    old_ids = doc.node_ids()
    scene.select_nodes(["triage", "route", "signoff"])
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier)
    text = QGuiApplication.clipboard().text()
    frag = loads_workflow(text)  # the clipboard holds workflow JSON
    assert {n.id for n in frag.nodes} == {"triage", "route", "signoff"}
    assert {c.key() for c in frag.connections} == {
        ("triage", "output", "route", "input"),
        ("route", "condition-0", "signoff", "input"),
    }
    count = doc.undo_stack.count()
    qtbot.keyClick(window.view, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert doc.undo_stack.count() == count + 1
    new_ids = doc.node_ids() - old_ids
    assert len(new_ids) == 3 and not (new_ids & old_ids)
    assert sorted(scene.selected_node_ids()) == sorted(new_ids)
    new_links = [c for c in doc.workflow.connections if c.source in new_ids or c.target in new_ids]
    assert len(new_links) == 2 and all(c.source in new_ids and c.target in new_ids for c in new_links)
    by_type = {doc.node(i).type: doc.node(i) for i in new_ids}
    assert by_type["agent"].data.agentName == "Triage and draft"
    assert by_type["if"].data.conditions[0].value == "refund"
    # Pasting again never collides either.
    qtbot.keyClick(window.view, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
    assert len(doc.node_ids()) == len(old_ids) + 6


def test_duplicate_and_paste_garbage(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "hello"))
    doc = window.document
    window.scene.select_nodes(["greeter"])
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_D, Qt.KeyboardModifier.ControlModifier)
    assert len(doc.workflow.nodes) == 3
    before = doc.workflow.model_dump()
    QGuiApplication.clipboard().setText("not a workflow")
    window.edit.paste()
    assert doc.workflow.model_dump() == before
    assert "Nothing to paste" in window.statusBar().currentMessage()


def test_select_all_and_delete(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "hello"))
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(window.view, Qt.Key.Key_Backspace)
    assert window.document.workflow.nodes == [] and window.document.workflow.connections == []
    assert window.document.undo_stack.count() == 1
