"""The minimap never covers what the user is working on: a selected or hovered node, a
dragged link; it hides while a node or link is dragged and when the whole graph is in view."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, QRect, Qt
from PySide6.QtWidgets import QApplication

from .conftest import _move, agent, flow, link, start, vp_point, write_flow


def _big_flow() -> dict:
    # A grid of nodes larger than the view at 100 %.
    nodes = [start("s", 0, 0)] + [agent(f"a{i}", 320 * (i % 6), 200 * (i // 6) + 200) for i in range(24)]
    conns = [link("s", "a0")] + [link(f"a{i}", f"a{i + 1}") for i in range(23) if i % 6 != 5]
    return flow(nodes, conns)


def _open_at_100(window, tmp_path):
    assert window.files.open_path(str(write_flow(tmp_path, _big_flow())), ask=False)
    view = window.view
    view.set_zoom(1.0, QPointF(800, 600))
    QApplication.processEvents()
    return view


def _node_under_minimap(window) -> str:
    view, mm = window.view, window.view.minimap
    area = QRect(mm.pos(), mm.size())
    for nid, item in window.scene.node_items.items():
        if view.mapFromScene(item.sceneBoundingRect()).boundingRect().intersects(area):
            return nid
    raise AssertionError("no node under the minimap")


def _covers(view, nid: str) -> bool:
    mm = view.minimap
    if not mm.isVisible():
        return False
    r = view.mapFromScene(view.canvas_scene.node_items[nid].sceneBoundingRect()).boundingRect()
    return QRect(mm.pos(), mm.size()).intersects(r)


def test_hidden_while_the_whole_graph_is_in_view(window, tmp_path):
    view = _open_at_100(window, tmp_path)
    assert view.minimap.isVisible()
    view.fit_all()
    QApplication.processEvents()
    assert not view.minimap.isVisible()


def test_moves_away_from_a_selected_node(window, tmp_path):
    view = _open_at_100(window, tmp_path)
    assert view.minimap.isVisible()
    first_corner = view.minimap.pos()
    nid = _node_under_minimap(window)
    window.scene.select_nodes([nid])
    assert not _covers(view, nid)
    assert view.minimap.isVisible() and view.minimap.pos() != first_corner
    # Every selected node stays clear, whichever corner it moves to.
    for other in list(window.scene.node_items):
        window.scene.select_nodes([other])
        assert not _covers(view, other), other


def test_moves_away_from_a_hovered_node(window, qtbot, tmp_path):
    view = _open_at_100(window, tmp_path)
    window.scene.clearSelection()
    nid = _node_under_minimap(window)
    item = window.scene.node_items[nid]
    # Hover the part of the node the minimap covers.
    mm_rect = QRect(view.minimap.pos(), view.minimap.size())
    node_rect = view.mapFromScene(item.sceneBoundingRect()).boundingRect()
    inter = mm_rect.intersected(node_rect)
    at = inter.center()
    assert window.scene.node_item_at(view.mapToScene(at)) is item
    _move_plain(view.viewport(), at)
    assert not _covers(view, nid)


def _move_plain(widget, pos: QPoint) -> None:
    from PySide6.QtGui import QMouseEvent

    ev = QMouseEvent(
        QMouseEvent.Type.MouseMove,
        QPointF(pos),
        QPointF(widget.mapToGlobal(pos)),
        Qt.MouseButton.NoButton,
        Qt.MouseButton.NoButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(widget, ev)


def test_hidden_while_a_link_is_dragged(window, qtbot, tmp_path):
    view = _open_at_100(window, tmp_path)
    window.scene.clearSelection()
    QApplication.processEvents()
    assert view.minimap.isVisible()
    # Drag a new link from a visible node's output towards the bottom-right corner.
    visible = view.visible_scene_rect()
    nid = next(
        n
        for n, it in window.scene.node_items.items()
        if visible.contains(it.sceneBoundingRect()) and not _covers(view, n)
    )
    src = window.scene.node_items[nid].port_scene_pos("output")
    vp = view.viewport()
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, vp_point(view, src))
    corner = QPoint(vp.width() - 40, vp.height() - 40)
    for i in range(1, 7):
        a = vp_point(view, src)
        _move(vp, QPoint(a.x() + (corner.x() - a.x()) * i // 6, a.y() + (corner.y() - a.y()) * i // 6))
        drag = window.scene.link_drag
        assert drag is not None
        if view.minimap.isVisible():
            link_rect = view.mapFromScene(drag.item.sceneBoundingRect()).boundingRect()
            assert not QRect(view.minimap.pos(), view.minimap.size()).intersects(link_rect)
    assert not view.minimap.isVisible()
    qtbot.keyClick(vp, Qt.Key.Key_Escape)
    qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, corner)
    QApplication.processEvents()
    assert window.scene.link_drag is None
    assert view.minimap.isVisible()


def test_view_menu_minimap_toggle_shows_its_state(window, tmp_path):
    view = _open_at_100(window, tmp_path)
    act = window.act_minimap
    assert act.isCheckable() and act.isChecked()
    act.trigger()
    assert not act.isChecked() and not view.minimap.isVisible()
    act.trigger()
    assert act.isChecked() and view.minimap.isVisible()
    assert window.act_snap.isCheckable()
    # A menu item with an icon draws the icon where the check mark goes: these two show the mark.
    assert not act.isIconVisibleInMenu() and not window.act_snap.isIconVisibleInMenu()


def test_prefers_a_corner_with_no_card_under_it(window, tmp_path):
    # A wide row along the top and one card low on the right: at 100 % the bottom-right
    # corner is over that card, the bottom-left one over empty canvas.
    nodes = [start("s", 0, 0)] + [agent(f"a{i}", 320 * i, 0) for i in range(1, 12)]
    assert window.files.open_path(str(write_flow(tmp_path, flow(nodes, []))), ask=False)
    view = window.view
    view.set_zoom(1.0, QPointF(1200, 300))
    QApplication.processEvents()
    vp = view.viewport().rect()
    low = view.mapToScene(QPoint(vp.width() - 150, vp.height() - 80))
    window.document.add_node("agent", round(low.x()) - 100, round(low.y()) - 40)
    view.set_zoom(1.0, QPointF(1200, 300))
    QApplication.processEvents()
    mm = view.minimap
    assert mm.isVisible()
    area = view.mapToScene(QRect(mm.pos(), mm.size())).boundingRect()
    assert not any(area.intersects(it.sceneBoundingRect()) for it in window.scene.node_items.values())
    assert mm.pos() != view.minimap_corners()[0]
