"""Canvas benchmark: a generated 2,000-node / 3,000-link graph, rendered offscreen.

    python -m tests.bench.bench_canvas [--nodes N] [--links M] [--frames K] [--json]

Prints the time to load the document and build the scene, the time to the first full
paint of a fitted view, then to idle (what the first paint left for later done: a big
document's links routed on the event loop), the median frame time while panning and while dragging one
node (each frame = move + synchronous repaint of the viewport), and auto-layout of the
whole graph (every link routed again) with the repaint after it; then the same for our
canvas alone at ``--big`` nodes (10,000: its slowest frame is the figure there).

The floor: the same cards and links as plain ``QGraphicsRectItem`` / ``QGraphicsSimpleTextItem`` /
``QGraphicsPathItem`` items in a bare ``QGraphicsScene`` and ``QGraphicsView`` (same size and
render hints), built, painted, panned and dragged the same way in the same process, its
frames taken in alternation with ours (one of each in turn): measured one after the other
on a loaded shared machine, the two sides' frames differed by more than their code did.
Frames are given in wall-clock time and in the process's CPU time. The ratios (ours / floor)
are what the targets are stated in. A script, not a timed test.
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


LOAD_PAIRS = 3  # loads of the 2,000-node graph, floor and ours in turn


def _frame(view, move) -> tuple[float, float]:
    """One frame: ``move()``, then a synchronous repaint of the viewport; (wall s, CPU s)."""
    w0, c0 = time.perf_counter(), time.process_time()
    move()
    view.viewport().repaint()
    return time.perf_counter() - w0, time.process_time() - c0


def _scroll(view, dx: int):
    return lambda: view.horizontalScrollBar().setValue(view.horizontalScrollBar().value() + dx)


class _Floor:
    """The plain-QGraphicsScene floor for ``wf``: rectangles, labels and curves, nothing else."""

    def __init__(self, wf) -> None:
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

        app = QApplication.instance()
        t0, c0 = time.perf_counter(), time.process_time()
        scene = self.scene = QGraphicsScene()
        scene.setBackgroundBrush(QColor("#16191f"))
        rects = {}
        self.items = []
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
            self.items.append(item)
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
        view = self.view = QGraphicsView(scene)
        view.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        view.resize(1600, 1000)
        view.show()
        app.processEvents()
        view.fitInView(scene.itemsBoundingRect())
        view.viewport().repaint()
        self.load_s, self.load_cpu_s = time.perf_counter() - t0, time.process_time() - c0

    def fit(self) -> None:
        self.view.fitInView(self.scene.itemsBoundingRect())

    def one_to_one(self) -> None:
        self.view.resetTransform()
        self.view.centerOn(self.scene.itemsBoundingRect().center())

    def drag_target(self):
        item = max(self.items, key=lambda it: len(self.scene.collidingItems(it)))
        self.view.centerOn(item)
        return item


class _Ours:
    """Flowdesk's canvas for ``wf``: the document, its scene and view, loaded to a fitted first paint."""

    def __init__(self, wf) -> None:
        from PySide6.QtWidgets import QApplication

        from editor.canvas.scene import CanvasScene
        from editor.canvas.view import CanvasView
        from editor.editing import WorkflowDocument

        app = QApplication.instance()
        t0, c0 = time.perf_counter(), time.process_time()
        self.doc = WorkflowDocument(wf)
        scene = self.scene = CanvasScene(self.doc)
        view = self.view = CanvasView(scene)
        view.resize(1600, 1000)
        view.show()
        app.processEvents()
        t1 = time.perf_counter()
        view.fit_all()
        view.viewport().repaint()
        t2 = time.perf_counter()
        self.build_s, self.paint_s, self.load_s = t1 - t0, t2 - t1, t2 - t0
        self.load_cpu_s = time.process_time() - c0
        # Then what the first paint left for later (a big document's links routed in slices
        # on the event loop): the frames below are taken on the finished canvas.
        while len(getattr(scene, "pending_routes", ())):  # (none on commits before it)
            app.processEvents()
        self.idle_s = time.perf_counter() - t0
        self.idle_cpu_s = time.process_time() - c0

    def fit(self) -> None:
        self.view.fit_all()

    def one_to_one(self) -> None:
        self.view.set_zoom(1.0, self.scene.items_bounds().center())

    def drag_target(self):
        degree = {nid: len(keys) for nid, keys in self.scene.node_edges.items()}
        self.links = max(degree.values())
        item = self.scene.node_items[max(degree, key=degree.get)]
        self.view.set_zoom(1.0, item.sceneBoundingRect().center())
        return item


def _phases(sides, frames: int) -> dict[str, list[list[tuple[float, float]]]]:
    """Pan all in view, pan at 1:1 and drag one card at 1:1, each side's frames taken in
    alternation (one frame of each in turn), so a load that comes and goes on a shared machine
    weighs on both alike. Per phase, per side: [(wall s, CPU s), ...]."""
    from PySide6.QtCore import QPointF

    out: dict[str, list[list[tuple[float, float]]]] = {}
    for side in sides:
        side.fit()
        side.view.viewport().repaint()
    out["all"] = [[] for _ in sides]
    for i in range(max(5, frames // 4)):
        for k, side in enumerate(sides):
            out["all"][k].append(_frame(side.view, _scroll(side.view, 8 if i % 2 else -8)))
    for side in sides:
        side.one_to_one()
        side.view.viewport().repaint()
    out["pan"] = [[] for _ in sides]
    for _i in range(frames):
        for k, side in enumerate(sides):
            out["pan"][k].append(_frame(side.view, _scroll(side.view, 12)))
    drags = []
    for side in sides:
        item = side.drag_target()
        side.view.viewport().repaint()
        drags.append((item, item.pos()))
    out["drag"] = [[] for _ in sides]
    for i in range(frames):
        for k, side in enumerate(sides):
            item, origin = drags[k]
            out["drag"][k].append(
                _frame(side.view, lambda it=item, o=origin, i=i: it.setPos(o + QPointF(i * 3.0, i * 2.0)))
            )
    return out


def _ms(frames: list[tuple[float, float]], which: int = 0) -> float:
    return statistics.median(f[which] for f in frames) * 1000


def run(n_nodes: int, n_links: int, frames: int, with_floor: bool = True) -> dict[str, float]:
    """Ours and (``with_floor``) the floor for a generated graph. Frames are medians, of
    wall-clock time and of the process's CPU time; ratios are ours / floor."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    from editor.app import configure_app

    configure_app(app)
    from editor.layout import auto_layout

    wf = generate(n_nodes, n_links)
    # Loads in alternation, floor then ours, ``LOAD_PAIRS`` times (a load is one figure, not a
    # median of frames: one pair on a loaded shared machine gave 2.2-3.3x from run to run);
    # the ratio is the median of the pairs', the last pair goes on to the frames.
    pairs: list[tuple[float, float]] = []
    for i in range(LOAD_PAIRS if with_floor else 1):
        base = _Floor(wf) if with_floor else None
        ours = _Ours(wf)
        if base is not None:
            pairs.append((ours.load_s / base.load_s, ours.load_cpu_s / base.load_cpu_s))
        if i < (LOAD_PAIRS if with_floor else 1) - 1:
            for side in (base, ours):
                side.view.close()
                side.view.deleteLater()
            QApplication.processEvents()
    sides = [ours] if base is None else [ours, base]
    phases = _phases(sides, frames)
    # Auto-layout of the whole graph (model positions, then every link routed once).
    t3 = time.perf_counter()
    auto_layout(ours.doc)
    ours.view.fit_all()
    ours.view.viewport().repaint()
    layout_ms = (time.perf_counter() - t3) * 1000
    mine = [f for ph in phases.values() for f in ph[0]]
    result: dict[str, float] = {
        "nodes": n_nodes,
        "links": n_links,
        "load_ms": ours.build_s * 1000,
        "first_paint_ms": ours.paint_s * 1000,
        "load_to_first_paint_ms": ours.load_s * 1000,
        "load_to_first_paint_cpu_ms": ours.load_cpu_s * 1000,
        "load_to_idle_ms": ours.idle_s * 1000,
        "load_to_idle_cpu_ms": ours.idle_cpu_s * 1000,
        "pan_frame_ms": _ms(phases["pan"][0]),
        "pan_all_visible_frame_ms": _ms(phases["all"][0]),
        "drag_frame_ms": _ms(phases["drag"][0]),
        "pan_frame_cpu_ms": _ms(phases["pan"][0], 1),
        "drag_frame_cpu_ms": _ms(phases["drag"][0], 1),
        "dragged_node_links": ours.links,
        "auto_layout_ms": layout_ms,
        "frame_max_ms": max(f[0] for f in mine) * 1000,
        "frame_max_cpu_ms": max(f[1] for f in mine) * 1000,
    }
    for side in sides:
        side.view.close()
        side.view.deleteLater()
    app.processEvents()
    if base is not None:
        result |= {
            "floor_load_to_first_paint_ms": base.load_s * 1000,
            "floor_load_to_first_paint_cpu_ms": base.load_cpu_s * 1000,
            "floor_pan_frame_ms": _ms(phases["pan"][1]),
            "floor_drag_frame_ms": _ms(phases["drag"][1]),
            "floor_pan_all_visible_frame_ms": _ms(phases["all"][1]),
            "floor_pan_frame_cpu_ms": _ms(phases["pan"][1], 1),
            "floor_drag_frame_cpu_ms": _ms(phases["drag"][1], 1),
            "pan_ratio": result["pan_frame_ms"] / _ms(phases["pan"][1]),
            "drag_ratio": result["drag_frame_ms"] / _ms(phases["drag"][1]),
            "pan_cpu_ratio": result["pan_frame_cpu_ms"] / _ms(phases["pan"][1], 1),
            "drag_cpu_ratio": result["drag_frame_cpu_ms"] / _ms(phases["drag"][1], 1),
            "load_ratio": statistics.median(p[0] for p in pairs),
            "load_cpu_ratio": statistics.median(p[1] for p in pairs),
            "load_ratio_max": max(p[0] for p in pairs),
            "load_cpu_ratio_max": max(p[1] for p in pairs),
        }
    return result


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--nodes", type=int, default=2000)
    p.add_argument("--links", type=int, default=3000)
    p.add_argument("--frames", type=int, default=60)
    p.add_argument("--big", type=int, default=10000, help="then our canvas alone at this many nodes (0: not)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    warm(args.frames)
    result = run(args.nodes, args.links, args.frames)
    big = run(args.big, args.big * 3 // 2, args.frames, with_floor=False) if args.big else None
    if big is not None:
        result |= {f"big_{k}": v for k, v in big.items() if not k.startswith("floor")}
    if args.json:
        print(json.dumps({k: round(v, 2) if isinstance(v, float) else v for k, v in result.items()}))
        return 0
    print(f"graph:               {result['nodes']} nodes, {result['links']} links")
    print(f"load (doc + scene):  {result['load_ms']:.0f} ms")
    print(f"first paint (fit):   {result['first_paint_ms']:.0f} ms")
    print(
        f"load to first paint: {result['load_to_first_paint_ms']:.0f} ms (CPU {result['load_to_first_paint_cpu_ms']:.0f})"
    )
    print(
        f"load to idle:        {result['load_to_idle_ms']:.0f} ms (CPU {result['load_to_idle_cpu_ms']:.0f}; links routed)"
    )
    print(f"pan frame @100%:     {result['pan_frame_ms']:.1f} ms (CPU {result['pan_frame_cpu_ms']:.1f})")
    print(f"pan frame, all seen: {result['pan_all_visible_frame_ms']:.1f} ms")
    print(
        f"node drag frame:     {result['drag_frame_ms']:.1f} ms (CPU {result['drag_frame_cpu_ms']:.1f}; "
        f"{result['dragged_node_links']} links follow)"
    )
    print(f"auto-layout + paint: {result['auto_layout_ms']:.0f} ms")
    print(f"slowest frame:       {result['frame_max_ms']:.1f} ms (CPU {result['frame_max_cpu_ms']:.1f})")
    print(
        f"plain-scene floor:   load to first paint {result['floor_load_to_first_paint_ms']:.0f} ms "
        f"(CPU {result['floor_load_to_first_paint_cpu_ms']:.0f}), "
        f"pan {result['floor_pan_frame_ms']:.1f} ms (CPU {result['floor_pan_frame_cpu_ms']:.1f}), "
        f"all seen {result['floor_pan_all_visible_frame_ms']:.1f} ms, "
        f"drag {result['floor_drag_frame_ms']:.1f} ms (CPU {result['floor_drag_frame_cpu_ms']:.1f})"
    )
    print(
        f"ratios to the floor: pan {result['pan_ratio']:.2f}x (CPU {result['pan_cpu_ratio']:.2f}x), "
        f"drag {result['drag_ratio']:.2f}x (CPU {result['drag_cpu_ratio']:.2f}x), "
        f"load to first paint {result['load_ratio']:.2f}x (CPU {result['load_cpu_ratio']:.2f}x; "
        f"median of {LOAD_PAIRS}, worst {result['load_ratio_max']:.2f}x) (targets: 2x, 2x, 3x)"
    )
    if big is not None:
        print(
            f"{big['nodes']} nodes, {big['links']} links: load to first paint {big['load_to_first_paint_ms']:.0f} ms; "
            f"frames pan {big['pan_frame_ms']:.1f} / all seen {big['pan_all_visible_frame_ms']:.1f} / "
            f"drag {big['drag_frame_ms']:.1f} ms; slowest {big['frame_max_ms']:.1f} ms "
            f"(CPU {big['frame_max_cpu_ms']:.1f}; target: every frame <= 16 ms)"
        )
    return 0


def warm(frames: int) -> None:
    """A small graph through both sides first: neither pays the process's first paint (fonts,
    glyph caches) in its figures."""
    run(20, 30, 2)


if __name__ == "__main__":
    sys.exit(main())
