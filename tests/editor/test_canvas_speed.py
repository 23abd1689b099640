"""What makes big canvases fast must not change what they show (issue 32, item 2).

* A big document's overview is painted from an image made once per zoom and model change
  (:mod:`editor.canvas.overview_cache`): the frame looks as the direct paint does, and a
  model change shows at once.
* A document with many links shows them as curves first and routes them after the first
  paint (:mod:`editor.canvas.pending_routes`): once routed, every link is where a scene that
  routed it at once puts it, and a link routed meanwhile for another reason leaves the queue.
"""

from __future__ import annotations

from array import array

from PySide6.QtGui import QImage
from PySide6.QtWidgets import QApplication

from editor.canvas import overview_cache, pending_routes
from editor.canvas.background import draw_overview
from editor.canvas.scene import CanvasScene
from editor.canvas.view import CanvasView
from editor.editing import WorkflowDocument
from tests.bench.bench_canvas import generate


def _view(doc: WorkflowDocument) -> CanvasView:
    view = CanvasView(CanvasScene(doc))
    view.resize(900, 600)
    view.show()
    QApplication.processEvents()
    return view


def _grab(view: CanvasView) -> QImage:
    view.viewport().repaint()
    return view.viewport().grab().toImage()


def _differ(a: QImage, b: QImage) -> int:
    """How many pixels of two grabs differ."""
    assert a.size() == b.size()
    x, y = array("I", bytes(a.constBits())), array("I", bytes(b.constBits()))
    return sum(p != q for p, q in zip(x, y, strict=True))


def _direct(self, painter, rect, geom, bounds, cards):  # the overview painted with no image
    draw_overview(painter, rect, geom, bounds, cards)


def test_the_overview_image_shows_what_the_direct_paint_does(app, monkeypatch):
    monkeypatch.setattr(CanvasScene, "LAZY_NODES", 100)
    monkeypatch.setattr(CanvasScene, "REALIZE_CAP", 50)
    doc = WorkflowDocument(generate(400, 600))
    view = _view(doc)
    scene = view.canvas_scene
    view.set_minimap_enabled(False)
    view.fit_all()
    assert scene.lazy and scene.overview
    cached = _grab(view)
    view.horizontalScrollBar().setValue(view.horizontalScrollBar().value() + 37)  # a pan: copied, not drawn
    panned = _grab(view)
    with monkeypatch.context() as m:
        m.setattr(overview_cache.OverviewCache, "draw", _direct)
        view.horizontalScrollBar().setValue(view.horizontalScrollBar().value() - 37)
        assert _differ(_grab(view), cached) == 0
        view.horizontalScrollBar().setValue(view.horizontalScrollBar().value() + 37)
        # (A hairline cut by the view's edge is rasterised from where it is cut: a pixel or two.)
        assert _differ(_grab(view), panned) <= 4

    # A node moved in the model shows moved at once (the image is made again).
    node = doc.node("n200")
    doc.move_nodes({"n200": (node.x, node.y)}, {"n200": (node.x, node.y + 5000)})
    moved = _grab(view)
    assert _differ(moved, panned) > 20
    with monkeypatch.context() as m:
        m.setattr(overview_cache.OverviewCache, "draw", _direct)
        assert _differ(_grab(view), moved) <= 4
    view.close()


def _paths(scene: CanvasScene) -> dict:
    return {key: (edge.routed, edge.path()) for key, edge in scene.edge_items.items()}


def test_many_links_are_routed_after_the_first_paint_as_they_would_be_at_once(app, qtbot, monkeypatch):
    wf = generate(120, 180)
    at_once = _paths(CanvasScene(WorkflowDocument(wf.model_copy(deep=True))))
    assert any(routed for routed, _ in at_once.values())  # some links go round cards

    monkeypatch.setattr(pending_routes, "DEFER_LINKS", 50)
    monkeypatch.setattr("editor.canvas.projected_scene.DEFER_LINKS", 50)
    doc = WorkflowDocument(wf.model_copy(deep=True))
    scene = CanvasScene(doc)
    assert len(scene.pending_routes) == 180 and not scene.edge_items.values()
    view = CanvasView(scene)
    view.resize(900, 600)
    view.show()
    view.fit_all()  # far out: the links are drawn merged by the scene, their items hidden
    assert scene.links_batched
    painted: list[int] = []
    scene.changed.connect(lambda _rects: painted.append(len(scene.pending_routes)))
    qtbot.waitUntil(lambda: len(scene.pending_routes) == 0, timeout=10_000)
    assert _paths(scene) == at_once
    qtbot.waitUntil(lambda: 0 in painted, timeout=5_000)  # a repaint once they are given
    view.close()


def test_a_link_routed_meanwhile_leaves_the_queue_and_finish_routes_the_rest(app, monkeypatch):
    monkeypatch.setattr("editor.canvas.projected_scene.DEFER_LINKS", 50)
    wf = generate(120, 180)
    doc = WorkflowDocument(wf)
    scene = CanvasScene(doc)
    assert not scene.edge_items.values()  # no link made before the first paint
    degree: dict[str, set] = {}
    for c in wf.connections:
        degree.setdefault(c.source, set()).add(c.key())
        degree.setdefault(c.target, set()).add(c.key())
    nid = max(degree, key=lambda n: len(degree[n]))
    keys = degree[nid]
    assert all(k in scene.pending_routes for k in keys)
    for k in keys:  # looked up, a link is made at once (with its curve; its route still waits)
        assert scene.edge_items[k].path().elementCount() > 0 and k in scene.pending_routes
    node = doc.node(nid)
    doc.move_nodes({nid: (node.x, node.y)}, {nid: (node.x + 40, node.y)})  # its links routed now
    assert not any(k in scene.pending_routes for k in keys)
    scene.pending_routes.finish()
    assert len(scene.pending_routes) == 0
