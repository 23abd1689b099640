"""Canvas affordances: every refused drop target says why (the engine's reason), a link that
succeeds clears the last refusal, handles are easy to hit when zoomed out, the agent card
hints at subagents, and pasted nodes land clear of the originals and their links."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, QRectF, Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from editor.canvas.style import PORT_R, node_rect
from engine import GraphIndex, check_connection

from .conftest import _move, copy_sample, mouse_drag, open_flow, vp_point


def _press_drag(qtbot, view, start: QPointF):
    vp = view.viewport()
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, vp_point(view, start))
    a = vp_point(view, start)
    _move(vp, QPoint(a.x() + 30, a.y() + 30))  # past the drag distance


def _over(view, scene_pos: QPointF) -> None:
    _move(view.viewport(), vp_point(view, scene_pos))


def test_every_refused_drop_target_shows_the_engines_reason(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    view, scene, doc = window.view, window.scene, window.document
    view.fit_all()
    QApplication.processEvents()
    messages: list[str] = []
    scene.status_message.connect(messages.append)
    index = GraphIndex(doc.workflow)
    count = len(doc.workflow.connections)
    for source, handle in (("triage", "output"), ("signoff", "approve"), ("start", "output")):
        refused = {n.id: check_connection(index, source, handle, n.id, "input") for n in doc.workflow.nodes}
        refused = {nid: v for nid, v in refused.items() if not v.ok}
        assert "start" in refused  # a Start node takes no input
        for nid, verdict in refused.items():
            _press_drag(qtbot, view, scene.node_items[source].port_scene_pos(handle))
            item = scene.node_items[nid]
            centre = item.sceneBoundingRect().center()
            body = QPointF(item.pos().x() + item.layout.width / 2, item.pos().y() + item.layout.height / 2)
            _over(view, body if scene.node_item_at(body) is item else centre)
            drag = scene.link_drag
            assert drag is not None and drag.target == nid, (source, nid)
            assert drag.last_reason == verdict.reason and verdict.reason, (source, nid)
            assert messages[-1] == verdict.reason
            assert item.target_state == "refused"
            qtbot.mouseRelease(
                view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, vp_point(view, body)
            )
            assert messages[-1] == f"Link not created: {verdict.reason}"
            assert window.statusBar().currentMessage() == f"Link not created: {verdict.reason}"
    assert len(doc.workflow.connections) == count  # nothing was linked


def test_a_link_that_succeeds_clears_the_last_refusal(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    view, scene, doc = window.view, window.scene, window.document
    doc.delete([], [("signoff", "approve", "send", "input")])
    src = scene.node_items["signoff"].port_scene_pos("approve")
    start_item = scene.node_items["start"]
    mouse_drag(qtbot, view, src, start_item.sceneBoundingRect().center())
    assert window.statusBar().currentMessage().startswith("Link not created:")
    mouse_drag(qtbot, view, src, scene.node_items["send"].port_scene_pos("input"))
    assert ("signoff", "approve", "send", "input") in {c.key() for c in doc.workflow.connections}
    assert window.statusBar().currentMessage() == ""


def test_handles_are_easy_to_hit_when_zoomed_out(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    view, scene = window.view, window.scene
    for zoom in (0.57, 0.62, 0.67):
        view.set_zoom(zoom, scene.node_items["triage"].sceneBoundingRect().center())
        QApplication.processEvents()
        port = scene.node_items["triage"].port_scene_pos("output")
        at = vp_point(view, port)
        # 10 screen pixels off the centre of a dot drawn 3.4-4 px in radius: still the handle.
        assert PORT_R == 6.0  # the drawn dot does not grow; only its hit area does
        for off in (QPoint(10, 0), QPoint(0, 10), QPoint(-7, 7)):
            hit = scene.port_at(view.mapToScene(at + off))
            assert hit is not None and hit.handle == "output" and hit.node_id == "triage", (zoom, off)
        vp = view.viewport()
        qtbot.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, at + QPoint(9, 3))
        assert scene.link_drag is not None and scene.link_drag.source == "triage"
        qtbot.keyClick(vp, Qt.Key.Key_Escape)
        qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, at + QPoint(9, 3))
    # At 100 % the hit area stays what it was.
    view.set_zoom(1.0)
    assert scene.port_hit_radius == 13.0


def test_agent_card_hints_at_subagents(window, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    tip = window.scene.node_items["triage"].toolTip()
    assert "tick Subagents in the inspector" in tip
    open_flow(window, copy_sample(tmp_path, "research"))
    lead = next(it for it in window.scene.node_items.values() if any(h == "subagent" for h, _, _ in it.layout.outputs))
    assert "tick Subagents" not in lead.toolTip()


def test_paste_lands_clear_of_the_originals_and_their_links(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    doc, scene = window.document, window.scene
    old = doc.node_ids()
    scene.select_nodes(["triage", "route"])
    window.edit.copy()
    window.edit.paste()
    new = doc.node_ids() - old
    assert len(new) == 2
    pasted = [node_rect(doc.node(i)) for i in new]
    for nid in old:
        card = node_rect(doc.node(nid))
        assert not any(p.intersects(card) for p in pasted), nid
    for key, edge in scene.edge_items.items():
        if key[0] in new or key[2] in new:
            continue
        path = edge.path()
        for p in pasted:
            assert not path.intersects(QRectF(p)) or not _crosses(path, p), key
    text = QGuiApplication.clipboard().text()
    assert text


def _crosses(path, rect: QRectF) -> bool:
    for poly in path.toSubpathPolygons():
        for i in range(poly.size()):
            if rect.contains(poly.at(i)):
                return True
    return False


def test_paste_lands_at_the_pointer_over_the_canvas(window, qtbot, tmp_path):
    from PySide6.QtGui import QCursor

    open_flow(window, copy_sample(tmp_path, "review"))
    doc, scene, view = window.document, window.scene, window.view
    old = doc.node_ids()
    scene.select_nodes(["triage"])
    window.edit.copy()
    vp = view.viewport()
    at = QPoint(vp.width() // 2, vp.height() - 60)
    QCursor.setPos(vp.mapToGlobal(at))
    qtbot.mouseMove(vp, at)
    qtbot.waitUntil(lambda: view.underMouse(), timeout=2000)
    try:
        window.edit.paste()
    finally:
        QCursor.setPos(-5000, -5000)  # later tests start with the pointer away from their windows
    (new,) = doc.node_ids() - old
    target = view.mapToScene(at)
    assert abs(doc.node(new).x - target.x()) <= 1 and abs(doc.node(new).y - target.y()) <= 1


def test_a_node_added_from_the_palette_lands_on_free_canvas_near_the_middle(window, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    doc, view = window.document, window.view
    view.centerOn(QRectF(node_rect(doc.node("route"))).center())  # the middle of the view is on a card
    QApplication.processEvents()
    middle = view.mapToScene(view.viewport().rect().center())
    old = doc.node_ids()
    for _ in range(3):  # double-click on the palette's Agent, three times
        window.edit.add_node_at_centre("agent")
    new = doc.node_ids() - old
    assert len(new) == 3
    rects = {nid: QRectF(node_rect(doc.node(nid))) for nid in doc.node_ids()}
    for nid in new:
        mine = rects[nid]
        assert not any(mine.intersects(r) for other, r in rects.items() if other != nid), nid
        assert (mine.center() - middle).manhattanLength() < 700, "near the middle of the view"
