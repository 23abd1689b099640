"""Canvas interactions driven through the real view: palette drops, link dragging with the
engine's verdicts, picking up links, moving nodes."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from editor.document import PALETTE_KINDS
from editor.panels.palette import palette_mime

from .conftest import agent, copy_sample, flow, link, mouse_drag, open_flow, start, write_flow


def drop_from_palette(window, kind: str, at: QPoint) -> None:
    """What a drag from the palette delivers: the palette's own mime data, entered, moved, dropped."""
    item = window.palette.item_for(kind)
    mime = window.palette.list.mimeData([item])
    vp = window.view.viewport()
    actions = Qt.DropAction.CopyAction
    enter = QDragEnterEvent(at, actions, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(vp, enter)
    assert enter.isAccepted()
    move = QDragMoveEvent(at, actions, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(vp, move)
    drop = QDropEvent(QPointF(at), actions, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(vp, drop)


def test_drag_each_node_type_from_palette(window, tmp_path):
    window.files.new_document()
    doc = window.document
    original = doc.workflow.model_dump()
    expected = {
        "start": ("start", None),
        "agent": ("agent", False),
        "subagent": ("agent", True),
        "if": ("if", None),
        "approval": ("approval", None),
        "join": ("join", None),
        "loop": ("loop", None),
    }
    kinds = [k for k in PALETTE_KINDS if k in expected]  # the built-in kinds (newer kinds: their own tests)
    for i, kind in enumerate(kinds):
        count = len(doc.workflow.nodes)
        at = QPoint(120 + 150 * i, 300)
        drop_from_palette(window, kind, at)
        assert len(doc.workflow.nodes) == count + 1, kind
        node = doc.workflow.nodes[-1]
        assert node.type == expected.get(kind, (kind, None))[0]
        assert node.id in window.scene.node_items
        item = window.scene.node_items[node.id]
        assert item.layout.kind == kind
        # The node lands where it was dropped.
        drop_scene = window.view.mapToScene(at)
        assert abs(node.x - (drop_scene.x() - 40)) <= 1
        assert window.scene.selected_node_ids() == [node.id]
    assert doc.undo_stack.count() == len(kinds)
    edited = doc.workflow.model_dump()
    while doc.undo_stack.canUndo():
        doc.undo_stack.undo()
    assert doc.workflow.model_dump() == original and len(window.scene.node_items) == 1
    while doc.undo_stack.canRedo():
        doc.undo_stack.redo()
    assert doc.workflow.model_dump() == edited and len(window.scene.node_items) == 1 + len(kinds)
    # A subagent shows only its subagent-target input, at the top.
    sub = window.scene.node_items[doc.workflow.nodes[3].id]
    assert sub.layout.input_pos == QPointF(sub.layout.width / 2, 0)
    assert [h for h, _, _ in sub.layout.outputs] == []


def test_palette_mime_is_the_node_kind():
    for kind in PALETTE_KINDS:
        assert bytes(palette_mime(kind).data("application/x-flowdesk-node").data()).decode() == kind


def _two_nodes(window, tmp_path):
    path = write_flow(tmp_path, flow([start("s", 0, 0), agent("a", 400, 0, "Writer")]))
    open_flow(window, path)
    return window.scene.node_items["s"], window.scene.node_items["a"]


def test_connect_handles_by_mouse(window, qtbot, tmp_path):
    s, a = _two_nodes(window, tmp_path)
    doc = window.document
    mouse_drag(qtbot, window.view, s.port_scene_pos("output"), a.port_scene_pos("input"))
    assert [c.key() for c in doc.workflow.connections] == [("s", "output", "a", "input")]
    assert ("s", "output", "a", "input") in window.scene.edge_items
    assert doc.undo_stack.count() == 1
    edited = doc.workflow.model_dump()
    doc.undo_stack.undo()
    assert doc.workflow.connections == [] and not window.scene.edge_items
    doc.undo_stack.redo()
    assert doc.workflow.model_dump() == edited and ("s", "output", "a", "input") in window.scene.edge_items
    # Releasing on the node body (not exactly on the port) also targets its input.
    doc.undo_stack.undo()
    body = a.pos() + QPointF(a.layout.width / 2, a.layout.height / 2)
    mouse_drag(qtbot, window.view, s.port_scene_pos("output"), body)
    assert len(doc.workflow.connections) == 1


def test_release_on_nothing_cancels(window, qtbot, tmp_path):
    s, a = _two_nodes(window, tmp_path)
    before = window.document.workflow.model_dump()
    mouse_drag(qtbot, window.view, s.port_scene_pos("output"), s.port_scene_pos("output") + QPointF(150, 200))
    assert window.document.workflow.model_dump() == before
    assert window.document.undo_stack.count() == 0
    assert window.document.undo_stack.count() == 0
    assert window.scene.link_drag is None
    assert not any(it.dimmed for it in window.scene.node_items.values())


def _research(window, tmp_path):
    path = copy_sample(tmp_path, "research")
    open_flow(window, path)
    doc = window.document
    # A second agent with subagents on, to try to adopt an existing subagent.
    nid = doc.add_node("agent", 700, 420)
    doc.set_node_field(nid, "tools.subagents", True, merge=False)
    doc.end_merge()
    return nid


def test_second_subagent_parent_refused_with_reason(window, qtbot, tmp_path):
    other = _research(window, tmp_path)
    doc = window.document
    scene = window.scene
    before = doc.workflow.model_dump()
    src = scene.node_items[other].port_scene_pos("subagent")
    dst = scene.node_items["facts"].port_scene_pos("input")
    # Hover first: the refused target is dimmed and the reason is in the status bar.
    vp = window.view.viewport()
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, pos=window.view.mapFromScene(src))
    assert scene.link_drag is not None
    assert scene.node_items["facts"].dimmed
    assert not scene.node_items["writer"].dimmed or not scene.link_drag.verdicts["writer"].ok
    qtbot.mouseMove(vp, window.view.mapFromScene(dst))
    QApplication.processEvents()
    assert scene.node_items["facts"].target_state == "refused"
    assert "already a subagent of" in window.statusBar().currentMessage()
    from PySide6.QtWidgets import QToolTip

    assert "already a subagent of" in QToolTip.text()  # also shown at the pointer
    with qtbot.waitSignal(scene.link_refused, timeout=2000) as sig:
        qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, pos=window.view.mapFromScene(dst))
    assert "one parent" in sig.args[0]
    assert "Link not created" in window.statusBar().currentMessage()
    assert doc.workflow.model_dump() == before


def test_execution_link_into_subagent_refused(window, qtbot, tmp_path):
    _research(window, tmp_path)
    doc = window.document
    before = doc.workflow.model_dump()
    scene = window.scene
    with qtbot.waitSignal(scene.link_refused, timeout=2000) as sig:
        mouse_drag(
            qtbot,
            window.view,
            scene.node_items["start"].port_scene_pos("output"),
            scene.node_items["skeptic"].pos() + QPointF(60, 50),
        )
    assert "subagent" in sig.args[0]
    assert doc.workflow.model_dump() == before


def test_subagent_link_by_mouse_is_dashed_kind(window, qtbot, tmp_path):
    path = write_flow(
        tmp_path,
        flow(
            [start("s", 0, 0), agent("p", 300, 0, "Parent", subagents=True), agent("c", 300, 300, "Child")],
            [link("s", "p")],
        ),
    )
    open_flow(window, path)
    scene = window.scene
    mouse_drag(
        qtbot,
        window.view,
        scene.node_items["p"].port_scene_pos("subagent"),
        scene.node_items["c"].port_scene_pos("input"),
    )
    key = ("p", "subagent", "c", "input")
    assert key in scene.edge_items and scene.edge_items[key].subagent
    # The child is now drawn as a subagent: its input moved to the top centre.
    c = scene.node_items["c"]
    assert c.layout.kind == "subagent" and c.layout.input_pos.y() == 0


def test_pick_up_link_end_to_reconnect_and_to_delete(window, qtbot, tmp_path):
    path = write_flow(tmp_path, flow([start("s", 0, 0), agent("a", 400, 0), agent("b", 400, 250)], [link("s", "a")]))
    open_flow(window, path)
    doc, scene = window.document, window.scene
    before = doc.workflow.model_dump()
    mouse_drag(
        qtbot, window.view, scene.node_items["a"].port_scene_pos("input"), scene.node_items["b"].port_scene_pos("input")
    )
    assert [c.key() for c in doc.workflow.connections] == [("s", "output", "b", "input")]
    assert doc.undo_stack.count() == 1
    doc.undo_stack.undo()
    assert doc.workflow.model_dump() == before
    assert scene.edge_items[("s", "output", "a", "input")].isVisible()
    # Dropping the picked-up end on empty canvas deletes the link.
    mouse_drag(qtbot, window.view, scene.node_items["a"].port_scene_pos("input"), QPointF(200, 500))
    assert doc.workflow.connections == []
    doc.undo_stack.undo()
    assert doc.workflow.model_dump() == before


def test_select_link_and_delete(window, qtbot, tmp_path):
    path = write_flow(tmp_path, flow([start("s", 0, 0), agent("a", 400, 0)], [link("s", "a")]))
    open_flow(window, path)
    edge = window.scene.edge_items[("s", "output", "a", "input")]
    mid = edge.path().pointAtPercent(0.5)
    qtbot.mouseClick(window.view.viewport(), Qt.MouseButton.LeftButton, pos=window.view.mapFromScene(mid))
    assert edge.isSelected()
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_Delete)
    assert window.document.workflow.connections == []
    assert "s" in window.document.node_ids()


def test_drag_node_is_one_undo_step_and_edges_follow(window, qtbot, tmp_path):
    path = write_flow(tmp_path, flow([start("s", 0, 0), agent("a", 400, 0)], [link("s", "a")]))
    open_flow(window, path)
    doc, scene = window.document, window.scene
    a = scene.node_items["a"]
    before = doc.workflow.model_dump()
    grab = a.pos() + QPointF(100, 12)
    mouse_drag(qtbot, window.view, grab, grab + QPointF(80, 120), steps=10)
    node = doc.node("a")
    assert (node.x, node.y) == (480, 120)
    assert doc.undo_stack.count() == 1
    edge = scene.edge_items[("s", "output", "a", "input")]
    assert edge.path().currentPosition() == a.port_scene_pos("input")
    doc.undo_stack.undo()
    assert doc.workflow.model_dump() == before
    assert (a.pos().x(), a.pos().y()) == (400, 0)
    assert edge.path().currentPosition() == a.port_scene_pos("input")


def test_rubber_band_and_ctrl_click_select(window, qtbot, tmp_path):
    path = write_flow(tmp_path, flow([start("s", 0, 0), agent("a", 400, 0), agent("b", 400, 300)]))
    open_flow(window, path)
    scene, view = window.scene, window.view
    mouse_drag(qtbot, view, QPointF(-60, -60), QPointF(700, 150), modifier=Qt.KeyboardModifier.ShiftModifier)
    assert sorted(scene.selected_node_ids()) == ["a", "s"]
    b = scene.node_items["b"]
    qtbot.mouseClick(
        view.viewport(),
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.ControlModifier,
        view.mapFromScene(b.pos() + QPointF(100, 12)),
    )
    assert sorted(scene.selected_node_ids()) == ["a", "b", "s"]


def test_collapse_by_double_click_title(window, qtbot, tmp_path):
    path = write_flow(tmp_path, flow([start("s", 0, 0), agent("a", 400, 0)], [link("s", "a")]))
    open_flow(window, path)
    a = window.scene.node_items["a"]
    tall = a.layout.height
    qtbot.mouseDClick(
        window.view.viewport(), Qt.MouseButton.LeftButton, pos=window.view.mapFromScene(a.pos() + QPointF(120, 12))
    )
    assert window.document.node("a").data.collapsed is True
    assert a.layout.height < tall
    window.document.undo_stack.undo()
    assert window.document.node("a").data.collapsed is None


def test_handle_tooltips_and_condition_handles(window, tmp_path):
    path = copy_sample(tmp_path, "review")
    open_flow(window, path)
    route = window.scene.node_items["route"]
    from editor.canvas.style import handle_tooltip

    node = window.document.node("route")
    assert [h for h, _, _ in route.layout.outputs] == ["condition-0", "false"]
    assert handle_tooltip(node, "condition-0") == "Condition 1: contains 'refund'"
    assert handle_tooltip(window.document.node("start"), "output") == "Next step"
    assert handle_tooltip(window.document.node("signoff"), "approve") == "Approve"


def test_background_drag_pans_and_click_deselects(window, qtbot, tmp_path):
    s, a = _two_nodes(window, tmp_path)
    view = window.view
    window.scene.select_nodes(["a"])
    before = view.mapToScene(view.viewport().rect().center())
    mouse_drag(qtbot, view, QPointF(150, 400), QPointF(50, 350))
    after = view.mapToScene(view.viewport().rect().center())
    assert abs((after.x() - before.x()) - 100) < 3 and abs((after.y() - before.y()) - 50) < 3
    assert window.document.undo_stack.count() == 0
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=view.mapFromScene(QPointF(150, 400)))
    assert window.scene.selected_node_ids() == []


def test_escape_during_node_drag_restores(window, qtbot, tmp_path):
    s, a = _two_nodes(window, tmp_path)
    view = window.view
    vp = view.viewport()
    grab = a.pos() + QPointF(100, 12)
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, pos=view.mapFromScene(grab))
    from .conftest import _move

    _move(vp, view.mapFromScene(grab + QPointF(60, 60)))
    assert a.pos() != QPointF(400, 0)
    qtbot.keyClick(vp, Qt.Key.Key_Escape)
    assert a.pos() == QPointF(400, 0)
    qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, pos=view.mapFromScene(grab + QPointF(60, 60)))
    assert window.document.undo_stack.count() == 0
    assert (window.document.node("a").x, window.document.node("a").y) == (400, 0)


def test_hovering_a_handle_shows_its_label(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    route = window.scene.node_items["route"]
    vp = window.view.viewport()
    qtbot.mouseMove(vp, window.view.mapFromScene(route.pos() + QPointF(60, 60)))
    qtbot.mouseMove(vp, window.view.mapFromScene(route.port_scene_pos("condition-0")))
    assert route.toolTip() == "Condition 1: contains 'refund'"
    qtbot.mouseMove(vp, window.view.mapFromScene(route.port_scene_pos("false")))
    assert route.toolTip() == "Else"


def test_chevron_click_collapses_and_expands(window, qtbot, tmp_path):
    path = write_flow(tmp_path, flow([start("s", 0, 0), agent("a", 400, 0)], [link("s", "a")]))
    open_flow(window, path)
    a = window.scene.node_items["a"]

    def click() -> None:
        qtbot.mouseClick(
            window.view.viewport(),
            Qt.MouseButton.LeftButton,
            pos=window.view.mapFromScene(a.pos() + a.chevron_rect().center()),
        )

    click()
    assert window.document.node("a").data.collapsed is True
    assert a.layout.collapsed
    click()
    assert window.document.node("a").data.collapsed is None
    assert window.document.undo_stack.count() == 2


def test_a_click_on_a_port_changes_nothing(window, qtbot, tmp_path):
    """A click (no drag) on an output port used to link the node to itself; on an input port
    it re-made the link, one more undo step and a modified document for nothing."""
    open_flow(window, write_flow(tmp_path, flow([start("s", 0, 0), agent("a", 320, 0)], [link("s", "a")])))
    scene, vp = window.scene, window.view.viewport()
    before = window.document.workflow.model_dump()
    for nid, handle in (("a", "output"), ("a", "input"), ("s", "output")):
        qtbot.mouseClick(
            vp, Qt.MouseButton.LeftButton, pos=window.view.mapFromScene(scene.node_items[nid].port_scene_pos(handle))
        )
        QApplication.processEvents()
        assert scene.link_drag is None
    assert window.document.workflow.model_dump() == before
    assert not window.document.is_modified()
    assert all(not item.dimmed for item in scene.node_items.values())


def test_an_unknown_node_type_is_not_drawn_as_an_agent(window, tmp_path):
    data = flow(
        [start("s", 0, 0), agent("a", 300, 0), {"id": "m", "type": "mystery", "x": 300, "y": 200, "data": {"foo": 1}}]
    )
    open_flow(window, write_flow(tmp_path, data))
    unknown, known = window.scene.node_items["m"].layout, window.scene.node_items["a"].layout
    assert unknown.label == "Unknown type" and known.label == "Agent"
    assert any("mystery" in text for text, _ in unknown.lines)  # the card says what it is
    from editor.canvas.style import KIND_COLOR

    assert KIND_COLOR["mystery"] != KIND_COLOR["agent"]
