"""View: validation in place, run readiness, fit/zoom, find, auto-layout, minimap."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication

from .conftest import agent, copy_sample, flow, link, open_flow, start, write_flow


def test_validation_badges_problems_and_run_action(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    assert window.act_run.isEnabled()
    doc = window.document
    doc.delete([], [("route", "false", "general", "input"), ("route", "condition-0", "signoff", "input")])
    qtbot.waitUntil(lambda: not window.act_run.isEnabled(), timeout=2000)
    assert "Cannot run" in window.act_run.toolTip() and "Condition" in window.act_run.toolTip()
    badge = window.scene.node_items["route"]
    assert badge.issue_severity == "error" and "neither" in badge.issue_text
    assert window.validation_label.property("state") == "error"
    # The problems list selects the node when an issue is clicked.
    lst = window.problems.list
    row = next(i for i in range(lst.count()) if "neither" in lst.item(i).text())
    rect = lst.visualItemRect(lst.item(row))
    qtbot.mouseClick(lst.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert window.scene.selected_node_ids() == ["route"]
    doc.undo_stack.undo()
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)


def test_fit_zoom_100_and_wheel_zoom_to_cursor(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    view = window.view
    view.setFocus()
    qtbot.keyClick(view, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    assert abs(view.zoom() - 1.0) < 1e-6
    qtbot.keyClick(view, Qt.Key.Key_F)
    assert view.zoom() < 1.0
    visible = view.visible_scene_rect()
    assert visible.contains(window.scene.items_bounds())
    qtbot.keyClick(view, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    at = QPoint(200, 150)
    under = view.mapToScene(at)
    ev = QWheelEvent(
        QPointF(at),
        QPointF(view.viewport().mapToGlobal(at)),
        QPoint(),
        QPoint(0, 240),
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
        Qt.ScrollPhase.NoScrollPhase,
        False,
    )
    QApplication.sendEvent(view.viewport(), ev)
    assert view.zoom() > 1.2
    after = view.mapToScene(at)
    assert abs(after.x() - under.x()) < 3 and abs(after.y() - under.y()) < 3


def test_pan_with_middle_button(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "hello"))
    view = window.view
    before = view.mapToScene(view.viewport().rect().center())
    vp = view.viewport()
    qtbot.mousePress(vp, Qt.MouseButton.MiddleButton, pos=QPoint(300, 300))
    qtbot.mouseMove(vp, QPoint(200, 250))
    qtbot.mouseRelease(vp, Qt.MouseButton.MiddleButton, pos=QPoint(200, 250))
    after = view.mapToScene(view.viewport().rect().center())
    assert abs((after.x() - before.x()) - 100) < 3 and abs((after.y() - before.y()) - 50) < 3


def test_find_node(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    window.act_find.trigger()
    assert window.find_bar.isVisible()
    qtbot.keyClicks(window.find_bar.edit, "revise")
    assert window.scene.node_items["revise"].found
    qtbot.keyClick(window.find_bar.edit, Qt.Key.Key_Return)
    assert window.scene.selected_node_ids() == ["revise"]
    # Editing keys typed in the find field stay there (they do not delete the selection).
    window.find_bar.edit.setFocus()
    qtbot.keyClick(window.find_bar.edit, Qt.Key.Key_Backspace)
    qtbot.keyClick(window.find_bar.edit, Qt.Key.Key_A, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(window.find_bar.edit, Qt.Key.Key_Delete)
    assert window.document.node("revise") is not None and window.find_bar.edit.text() == ""
    assert window.view.visible_scene_rect().contains(window.scene.node_items["revise"].sceneBoundingRect().center())


def test_auto_layout_left_to_right(window, tmp_path):
    nodes = [
        start("s", 500, 500),
        agent("a", 0, 0),
        agent("b", 0, 900),
        agent("c", 100, 100),
        agent("sub", 0, 0, subagents=False),
    ]
    nodes[1]["data"]["tools"]["subagents"] = True
    path = write_flow(
        tmp_path, flow(nodes, [link("s", "a"), link("a", "b"), link("b", "c"), link("a", "sub", "subagent")])
    )
    open_flow(window, path)
    window.act_layout.trigger()
    doc = window.document
    xs = [doc.node(n).x for n in ("s", "a", "b", "c")]
    assert xs == sorted(xs) and len(set(xs)) == 4
    assert doc.node("sub").y > doc.node("a").y  # the subagent hangs under its parent
    assert doc.undo_stack.count() == 1


def test_minimap_and_quick_add(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    mm = window.view.minimap
    assert mm.isVisible()
    mm.refresh()
    assert mm.card_count == 7
    qtbot.mouseClick(mm, Qt.MouseButton.LeftButton, pos=QPoint(5, 5))
    window.edit.add_node_at("if", QPointF(0, 700))
    assert window.document.workflow.nodes[-1].type == "if"


def test_large_graph_frames_from_model(window, qtbot, tmp_path):
    from tests.bench.bench_canvas import generate

    wf = generate(400, 600)
    window.document.reset(wf, None)
    window.files.show_canvas()
    window.view.fit_all()
    assert len(window.scene.node_items) == 400 and len(window.scene.edge_items) == 600
    assert window.view.visible_scene_rect().contains(window.scene.items_bounds())


def test_double_click_canvas_quick_add_search(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "hello"))
    view = window.view
    at = QPointF(200, 500)
    qtbot.mouseDClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.mapFromScene(at))
    menu = window.edit.quick_add_menu
    search = menu.actions()[0].defaultWidget()
    qtbot.keyClicks(search, "appro")
    visible = [a.text() for a in menu.actions()[1:] if a.isVisible()]
    assert visible == ["Approval"]
    qtbot.keyClick(search, Qt.Key.Key_Return)
    node = window.document.workflow.nodes[-1]
    assert node.type == "approval" and abs(node.x - at.x()) < 2 and abs(node.y - at.y()) < 2


def test_find_field_shows_its_text_and_the_suggestions_sit_below_it(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    window.act_find.trigger()
    bar, edit = window.find_bar, window.find_bar.edit
    # The field is whole inside the bar (a bar sized before styling cut its text in half).
    assert bar.rect().contains(edit.geometry())
    assert edit.height() >= edit.sizeHint().height()
    qtbot.keyClicks(edit, "re")
    popup = edit.completer().popup()
    qtbot.waitUntil(popup.isVisible)
    # The suggestion list opens below the field, not over it.
    assert popup.mapToGlobal(popup.rect().topLeft()).y() >= edit.mapToGlobal(edit.rect().bottomLeft()).y() - 2
