"""Sticky notes, groups and run outputs on the canvas (issue 31, item 5): create, edit, resize,
move, undo, collapse, save/load, and the output preview toggle."""

from __future__ import annotations

import json

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication

from engine import NodeDetails, RunState, loads_workflow

from .conftest import agent, flow, link, mouse_drag, open_flow, start, write_flow


def _three(tmp_path, window, **extra):
    data = flow([start("s", 0, 0), agent("a", 320, 0), agent("b", 640, 0)], [link("s", "a"), link("a", "b")], **extra)
    open_flow(window, write_flow(tmp_path, data))
    return window.document, window.scene


def test_note_create_edit_resize_undo(window, qtbot, tmp_path):
    doc, scene = _three(tmp_path, window)
    original = doc.workflow.model_dump()
    window.edit.add_note_at(QPointF(0, 300))
    (note,) = doc.annotations("note")
    item = scene.note_items[note.id]
    assert scene.note_editor is not None  # ready for typing
    scene.note_editor.setPlainText("# Plan\n\n*first* draft")
    scene.finish_note_edit()
    assert doc.annotation("note", note.id).text == "# Plan\n\n*first* draft"
    assert item.text.startswith("# Plan") and scene.note_editor is None
    # resize by the grip: one undo step
    grip = item.pos() + item.grip_rect().center()
    mouse_drag(qtbot, window.view, grip, grip + QPointF(80, 40))
    resized = doc.annotation("note", note.id)
    assert (resized.width, resized.height) == (300, 180)
    assert doc.undo_stack.undoText() == "Resize note"
    # move: one step
    body = item.pos() + QPointF(40, 40)
    mouse_drag(qtbot, window.view, body, body + QPointF(100, 0))
    assert doc.annotation("note", note.id).x == 100
    doc.undo_stack.undo()
    assert doc.annotation("note", note.id).x == 0
    assert item.pos().x() == 0
    doc.undo_stack.undo()  # resize
    assert doc.annotation("note", note.id).width == 220
    doc.undo_stack.undo()  # text
    doc.undo_stack.undo()  # add
    assert doc.workflow.model_dump() == original and not scene.note_items
    doc.undo_stack.redo()
    assert note.id in scene.note_items


def test_note_saved_restored_and_ignored_by_engine(window, tmp_path):
    doc, scene = _three(tmp_path, window)
    nid = doc.add_note(10, 400, "**bold** text", "blue")
    doc.set_note_color(nid, "green")
    path = tmp_path / "saved.flow.json"
    doc.save(str(path))
    raw = json.loads(path.read_text())
    assert raw["notes"] == [
        {"id": nid, "x": 10, "y": 400, "width": 220, "height": 140, "text": "**bold** text", "color": "green"}
    ]
    assert "groups" not in raw  # no empty list written
    open_flow(window, path)
    assert window.scene.note_items[nid].color == "green"
    assert window.document.annotation("note", nid).text == "**bold** text"


def test_group_move_undo_collapse_roundtrip(window, qtbot, tmp_path):
    doc, scene = _three(tmp_path, window)
    scene.select_nodes(["a", "b"])
    window.edit.group_selection()
    (group,) = doc.annotations("group")
    assert group.nodes == ["a", "b"]
    gitem = scene.group_items[group.id]
    # the frame surrounds both cards
    assert gitem.sceneBoundingRect().contains(scene.node_items["a"].sceneBoundingRect().topLeft())
    before = doc.workflow.model_dump()
    # drag the title bar: the frame and both nodes move, one undo step
    title = gitem.pos() + QPointF(60, 12)
    mouse_drag(qtbot, window.view, title, title + QPointF(0, 100))
    assert (doc.node("a").y, doc.node("b").y, doc.node("s").y) == (100, 100, 0)
    assert scene.node_items["b"].pos().y() == 100
    assert doc.undo_stack.undoText() == "Move group"
    doc.undo_stack.undo()
    assert doc.workflow.model_dump() == before
    assert scene.node_items["a"].pos().y() == 0
    # collapse: members hidden, their outside link drawn to the group's card
    doc.set_group_collapsed(group.id, True)
    assert not scene.node_items["a"].isVisible() and not scene.node_items["b"].isVisible()
    edge_in = scene.edge_items[("s", "output", "a", "input")]
    inner = scene.edge_items[("a", "output", "b", "input")]
    assert edge_in.isVisible() and not inner.isVisible()
    assert gitem.collapsed and gitem.isVisible()
    # rename and save/load keep it collapsed
    doc.rename_group(group.id, "Writers")
    path = tmp_path / "grouped.flow.json"
    doc.save(str(path))
    raw = json.loads(path.read_text())
    assert raw["groups"] == [{"id": group.id, "title": "Writers", "nodes": ["a", "b"], "collapsed": True}]
    assert len(loads_workflow(path.read_text()).nodes) == 3  # the engine reads the file as before
    open_flow(window, path)
    scene = window.scene
    assert not scene.node_items["a"].isVisible()
    assert scene.group_items[group.id].title == "Writers"
    window.document.set_group_collapsed(group.id, False)
    assert scene.node_items["a"].isVisible()
    assert scene.edge_items[("a", "output", "b", "input")].isVisible()
    window.document.ungroup(group.id)
    assert not scene.group_items and window.document.workflow.groups is None
    window.document.undo_stack.undo()
    assert group.id in scene.group_items


def test_group_first_node_and_delete_prunes_members(window, tmp_path):
    doc, scene = _three(tmp_path, window)
    gid = doc.group_nodes(["b", "a"])
    assert window.edit.first_node_of_group(gid) == "a"  # b follows a inside the group
    before = doc.workflow.model_dump()
    doc.delete(["a"])
    assert doc.annotation("group", gid).nodes == ["b"]
    doc.delete(["b"])
    assert doc.annotation("group", gid) is None
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    assert doc.workflow.model_dump() == before


def _state(output: str, seconds: float, tokens: int) -> RunState:
    state = RunState()
    d = state.details.setdefault("a", NodeDetails("a"))
    d.output, d.started, d.ended, d.usage = output, 10.0, 10.0 + seconds, {"total_tokens": tokens}
    state.states["a"] = "done"
    return state


def test_output_preview_toggle_and_survives_undo(window, tmp_path):
    doc, scene = _three(tmp_path, window)
    scene.show_run(_state("line one\nline two\n\nline three\nline four", 1.25, 340))
    item = scene.node_items["a"]
    assert item.run_stats == "1.2 s · 340 tokens"
    assert item.output_text == "line one\nline two\nline three"
    tall = item.boundingRect().height()
    window.act_outputs.setChecked(False)
    assert item.output_text == "" and item.run_stats  # the badge stays
    assert item.boundingRect().height() < tall
    window.act_outputs.setChecked(True)
    assert item.output_text.startswith("line one")
    # an unrelated edit and its undo keep it; so does deleting the node and undoing that
    doc.set_node_field("b", "agentName", "Other")
    doc.undo_stack.undo()
    doc.delete(["a"])
    doc.undo_stack.undo()
    assert scene.node_items["a"].output_text.startswith("line one")


def test_outputs_toggle_is_remembered(window, app):
    from editor.window.settings import settings

    window.act_outputs.setChecked(False)
    assert settings().value("canvas/outputs", True, type=bool) is False
    QApplication.processEvents()


def test_palette_has_a_note(window, qtbot):
    from editor.panels.palette import NOTE_KEY

    item = window.palette.item_for(NOTE_KEY)
    window.palette.list.itemDoubleClicked.emit(item)
    assert len(window.document.annotations("note")) == 1


def test_typing_in_a_note_keeps_spaces_and_a_click_elsewhere_ends_it(window, qtbot, tmp_path):
    doc, scene = _three(tmp_path, window)
    window.edit.add_note_at(QPointF(0, 300))
    (note,) = doc.annotations("note")
    qtbot.keyClicks(window.view.viewport(), "a b")
    qtbot.keyClick(window.view.viewport(), Qt.Key.Key_Backspace)  # edits the text, never deletes the note
    qtbot.mouseClick(window.view.viewport(), Qt.MouseButton.LeftButton, pos=window.view.mapFromScene(QPointF(450, 250)))
    assert scene.note_editor is None
    assert doc.annotation("note", note.id).text == "a "


def _right_click(view, scene_pos: QPointF) -> None:
    """A right click as the window system sends it: press, release, then the context menu event."""
    from PySide6.QtGui import QContextMenuEvent

    vp = view.viewport()
    pos = view.mapFromScene(scene_pos)
    QTest.mousePress(vp, Qt.MouseButton.RightButton, Qt.KeyboardModifier.NoModifier, pos)
    QTest.mouseRelease(vp, Qt.MouseButton.RightButton, Qt.KeyboardModifier.NoModifier, pos)
    QApplication.sendEvent(vp, QContextMenuEvent(QContextMenuEvent.Reason.Mouse, pos, vp.mapToGlobal(pos)))


def test_a_right_click_on_a_group_frame_or_a_note_opens_its_menu(window, qtbot, tmp_path):
    """The group's menu (collapse, run from its first node...) and the note's (colour...) are
    reached with the mouse: the view hands the right click on a frame or a note to the scene."""
    doc, scene = _three(tmp_path, window)
    gid = doc.group_nodes(["a", "b"])
    frame = scene.group_items[gid].sceneBoundingRect()
    with qtbot.waitSignal(scene.annotation_menu_requested, timeout=2000) as got:
        _right_click(window.view, QPointF(frame.center().x(), frame.top() + 8))  # its title bar
    assert got.args[1:] == ["group", gid]
    menu = QApplication.activePopupWidget()
    assert menu is not None and "Run from Here" in [a.text() for a in menu.actions()]
    menu.close()
    nid = doc.add_note(0, 400, "hello", "yellow")
    with qtbot.waitSignal(scene.annotation_menu_requested, timeout=2000) as got:
        _right_click(window.view, QPointF(60, 450))
    assert got.args[1:] == ["note", nid]
    menu = QApplication.activePopupWidget()
    assert menu is not None and "Delete Note" in [a.text() for a in menu.actions()]
    menu.close()


def test_fit_all_shows_the_sticky_notes_too(window, tmp_path):
    doc, scene = _three(tmp_path, window)
    doc.add_note(1400, 900, "far away", "pink")
    window.view.fit_all()
    seen = window.view.mapToScene(window.view.viewport().rect()).boundingRect()
    assert seen.contains(QRectF(1400, 900, 220, 140))
    assert seen.contains(scene.items_bounds())


def test_a_structured_answer_is_previewed_as_its_fields(window, tmp_path):
    """Under its card, a JSON object output shows a field a line (not one line of braces)."""
    doc, scene = _three(tmp_path, window)
    answer = json.dumps({"topic": "refund", "items": ["lamp", "chair"], "count": 2, "extra": True})
    scene.show_run(_state(answer, 0.5, 20))
    assert scene.node_items["a"].output_text == 'topic: refund\nitems: ["lamp", "chair"]\ncount: 2'
    scene.show_run(_state("{not json", 0.5, 20))  # text that only looks like it: as it is
    assert scene.node_items["a"].output_text == "{not json"
