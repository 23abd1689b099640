"""Canvas benchmark: a generated 2,000-node / 3,000-link graph, rendered offscreen.

    python -m tests.bench.bench_canvas [--nodes N] [--links M] [--frames K] [--json]

Prints the time to load the document and build the scene, the time to the first full
paint of a fitted view, the average frame time while panning and while dragging one
node (each frame = move + synchronous repaint of the viewport), and auto-layout of the
whole graph (every link routed again) with the repaint after it.

The floor: the same cards and links as plain ``QGraphicsRectItem`` / ``QGraphicsSimpleTextItem`` /
``QGraphicsPathItem`` items in a bare ``QGraphicsScene`` and ``QGraphicsView`` (same size and
render hints), built, painted, panned and dragged the same way in the same process. The
ratios (ours / floor) are what the targets are stated in. A script, not a timed test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def generate(n_nodes: int = 2000, n_links: int = 3000, seed: int = 7):
    """A layered graph of every node type with execution and subagent links."""
    from engine import Workflow

    rng = random.Random(seed)
    cols = max(1, int(n_nodes**0.5 * 1.4))
    nodes = []
    kinds = ["agent", "agent", "agent", "if", "approval"]
    for i in range(n_nodes):
        kind = "start" if i == 0 else kinds[i % len(kinds)]
        x, y = (i % cols) * 320, (i // cols) * 200
        if kind == "start":
            data = {"initialInput": "Generated"}
        elif kind == "agent":
            data = {
                "agentName": f"Agent {i}",
                "systemPrompt": "You help.",
                "userPrompt": "{{PREVIOUS_OUTPUT}}",
                "model": "gpt-4o-mini",
                "reasoningEffort": "low",
                "tools": {"web_search": False, "subagents": i % 10 == 1},
            }
        elif kind == "if":
            data = {"conditions": [{"operator": "contains", "value": "yes"}, {"operator": "equal", "value": "no"}]}
        else:
            data = {"prompt": "Approve?"}
        nodes.append({"id": f"n{i}", "type": kind, "x": x, "y": y, "data": data})
    handles = {
        "start": ["output"],
        "agent": ["output"],
        "if": ["condition-0", "condition-1", "false"],
        "approval": ["approve", "reject"],
    }
    links = []
    seen = set()
    while len(links) < n_links:
        # Targets one or two columns to the right, within two rows: how people lay out flows
        # (a link across the whole canvas is rare in real workflows).
        s = rng.randrange(n_nodes - 1)
        col, row = s % cols, s // cols
        tc, tr = col + rng.randint(1, 2), row + rng.randint(-2, 2)
        if tc >= cols or tr < 0:
            continue
        t = tr * cols + tc
        if t >= n_nodes or t == s or nodes[t]["type"] == "start":
            continue
        sh = rng.choice(handles[nodes[s]["type"]])
        key = (s, sh, t)
        if key in seen:
            continue
        seen.add(key)
        links.append({"source": f"n{s}", "target": f"n{t}", "sourceHandle": sh, "targetHandle": "input"})
    return Workflow.model_validate({"name": "bench", "version": 1, "nodes": nodes, "connections": links})


def floor(wf, frames: int) -> dict[str, float]:
    """The plain-QGraphicsScene floor for ``wf``: load, first paint, pan and drag frames."""
    from PySide6.QtCore import QPointF, QRectF
    from PySide6.QtGui import QBrush, QColor, QPainter, QPainterPath, QPen
    from PySide6.QtWidgets import (
        QApplication,
        QGraphicsPathItem,
        QGraphicsRectItem,
        QGraphicsScene,
        QGraphicsSimpleTextItem,
        QGraphicsView,
    )

    app = QApplication.instance() or QApplication([])
    t0 = time.perf_counter()
    scene = QGraphicsScene()
    scene.setBackgroundBrush(QColor("#16191f"))
    rects = {}
    items = {}
    pen, brush = QPen(QColor("#3a3f4b"), 1), QBrush(QColor("#222630"))
    for node in wf.nodes:
        r = QRectF(node.x, node.y, 232, 96)
        item = QGraphicsRectItem(r)
        item.setPen(pen)
        item.setBrush(brush)
        label = QGraphicsSimpleTextItem(getattr(node.data, "agentName", "") or node.type, item)
        label.setPos(r.left() + 10, r.top() + 8)
        scene.addItem(item)
        rects[node.id] = r
        items[node.id] = item
    link_pen = QPen(QColor("#5c6373"), 2)
    for c in wf.connections:
        a, b = rects[c.source], rects[c.target]
        start, end = QPointF(a.right(), a.center().y()), QPointF(b.left(), b.center().y())
        path = QPainterPath(start)
        dx = max(40.0, (end.x() - start.x()) / 2)
        path.cubicTo(start + QPointF(dx, 0), end - QPointF(dx, 0), end)
        link = QGraphicsPathItem(path)
        link.setPen(link_pen)
        scene.addItem(link)
    view = QGraphicsView(scene)
    view.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
    view.resize(1600, 1000)
    view.show()
    app.processEvents()
    view.fitInView(scene.itemsBoundingRect())
    view.viewport().repaint()
    t2 = time.perf_counter()
    pan_all_times = []
    for i in range(max(5, frames // 4)):
        f0 = time.perf_counter()
        view.horizontalScrollBar().setValue(view.horizontalScrollBar().value() + (8 if i % 2 else -8))
        view.viewport().repaint()
        pan_all_times.append(time.perf_counter() - f0)
    view.resetTransform()
    view.centerOn(scene.itemsBoundingRect().center())
    view.viewport().repaint()
    pan_times = []
    for _i in range(frames):
        f0 = time.perf_counter()
        view.horizontalScrollBar().setValue(view.horizontalScrollBar().value() + 12)
        view.viewport().repaint()
        pan_times.append(time.perf_counter() - f0)
    item = max(items.values(), key=lambda it: len(scene.collidingItems(it)))
    view.centerOn(item)
    view.viewport().repaint()
    drag_times = []
    origin = item.pos()
    for i in range(frames):
        f0 = time.perf_counter()
        item.setPos(origin + QPointF(i * 3.0, i * 2.0))
        view.viewport().repaint()
        drag_times.append(time.perf_counter() - f0)
    view.close()
    view.deleteLater()
    scene.deleteLater()
    app.processEvents()
    return {
        "load_to_first_paint_ms": (t2 - t0) * 1000,
        "pan_frame_ms": statistics.mean(pan_times) * 1000,
        "pan_all_visible_frame_ms": statistics.mean(pan_all_times) * 1000,
        "drag_frame_ms": statistics.mean(drag_times) * 1000,
    }


def run(n_nodes: int, n_links: int, frames: int) -> dict[str, float]:
    from PySide6.QtCore import QPointF
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    from editor.app import configure_app

    configure_app(app)
    from editor.canvas.scene import CanvasScene
    from editor.canvas.view import CanvasView
    from editor.editing import WorkflowDocument
    from editor.layout import auto_layout

    wf = generate(n_nodes, n_links)
    t0 = time.perf_counter()
    doc = WorkflowDocument(wf)
    scene = CanvasScene(doc)
    view = CanvasView(scene)
    view.resize(1600, 1000)
    view.show()
    app.processEvents()
    t1 = time.perf_counter()
    view.fit_all()
    view.viewport().repaint()
    t2 = time.perf_counter()

    # Pan at 100 % zoom across the middle of the graph.
    view.set_zoom(1.0, scene.items_bounds().center())
    view.viewport().repaint()
    pan_times = []
    for _i in range(frames):
        f0 = time.perf_counter()
        view.horizontalScrollBar().setValue(view.horizontalScrollBar().value() + 12)
        view.viewport().repaint()
        pan_times.append(time.perf_counter() - f0)

    # Pan while zoomed out to see the whole graph (the worst case: everything visible).
    view.fit_all()
    view.viewport().repaint()
    pan_all_times = []
    for i in range(max(5, frames // 4)):
        f0 = time.perf_counter()
        view.horizontalScrollBar().setValue(view.horizontalScrollBar().value() + (8 if i % 2 else -8))
        view.viewport().repaint()
        pan_all_times.append(time.perf_counter() - f0)

    # Drag one well-connected node at 100 %.
    degree = {nid: len(keys) for nid, keys in scene.node_edges.items()}
    nid = max(degree, key=degree.get)
    item = scene.node_items[nid]
    view.set_zoom(1.0, item.sceneBoundingRect().center())
    view.viewport().repaint()
    drag_times = []
    origin = item.pos()
    for i in range(frames):
        f0 = time.perf_counter()
        item.setPos(origin + QPointF(i * 3.0, i * 2.0))
        view.viewport().repaint()
        drag_times.append(time.perf_counter() - f0)

    # Auto-layout of the whole graph (model positions, then every link routed once).
    t3 = time.perf_counter()
    auto_layout(doc)
    view.fit_all()
    view.viewport().repaint()
    layout_ms = (time.perf_counter() - t3) * 1000
    frame_max = max(pan_times + drag_times + pan_all_times) * 1000
    view.close()
    view.deleteLater()
    app.processEvents()
    base = floor(wf, frames)
    return {
        "nodes": n_nodes,
        "links": n_links,
        "load_ms": (t1 - t0) * 1000,
        "first_paint_ms": (t2 - t1) * 1000,
        "load_to_first_paint_ms": (t2 - t0) * 1000,
        "pan_frame_ms": statistics.mean(pan_times) * 1000,
        "pan_all_visible_frame_ms": statistics.mean(pan_all_times) * 1000,
        "drag_frame_ms": statistics.mean(drag_times) * 1000,
        "dragged_node_links": degree[nid],
        "auto_layout_ms": layout_ms,
        "frame_max_ms": frame_max,
        "floor_load_to_first_paint_ms": base["load_to_first_paint_ms"],
        "floor_pan_frame_ms": base["pan_frame_ms"],
        "floor_drag_frame_ms": base["drag_frame_ms"],
        "floor_pan_all_visible_frame_ms": base["pan_all_visible_frame_ms"],
        "pan_ratio": statistics.mean(pan_times) * 1000 / base["pan_frame_ms"],
        "drag_ratio": statistics.mean(drag_times) * 1000 / base["drag_frame_ms"],
        "load_ratio": (t2 - t0) * 1000 / base["load_to_first_paint_ms"],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=2000)
    p.add_argument("--links", type=int, default=3000)
    p.add_argument("--frames", type=int, default=60)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    result = run(args.nodes, args.links, args.frames)
    if args.json:
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()}))
    else:
        print(f"graph:               {result['nodes']} nodes, {result['links']} links")
        print(f"load (doc + scene):  {result['load_ms']:.0f} ms")
        print(f"first paint (fit):   {result['first_paint_ms']:.0f} ms")
        print(f"load to first paint: {result['load_to_first_paint_ms']:.0f} ms")
        print(f"pan frame @100%:     {result['pan_frame_ms']:.1f} ms")
        print(f"pan frame, all seen: {result['pan_all_visible_frame_ms']:.1f} ms")
        print(f"node drag frame:     {result['drag_frame_ms']:.1f} ms ({result['dragged_node_links']} links follow)")
        print(f"auto-layout + paint: {result['auto_layout_ms']:.0f} ms")
        print(f"slowest frame:       {result['frame_max_ms']:.1f} ms")
        print(
            f"plain-scene floor:   load to first paint {result['floor_load_to_first_paint_ms']:.0f} ms, "
            f"pan {result['floor_pan_frame_ms']:.1f} ms, all seen {result['floor_pan_all_visible_frame_ms']:.1f} ms, "
            f"drag {result['floor_drag_frame_ms']:.1f} ms"
        )
        print(
            f"ratios to the floor: pan {result['pan_ratio']:.2f}x, drag {result['drag_ratio']:.2f}x, "
            f"load to first paint {result['load_ratio']:.2f}x (targets: 2x, 2x, 3x)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
