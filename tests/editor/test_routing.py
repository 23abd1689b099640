"""Links are routed around node cards: after auto-layout (back edges, crossing branches,
subagents), when a card is dropped on a link, and while a node is dragged. Checked with
geometry: every link's drawn path, flattened, against every card but its own two ends."""

from __future__ import annotations

import json

from PySide6.QtCore import QPointF, QRectF

from editor.canvas.routing import ObstacleGrid, route
from editor.canvas.scene import CanvasScene
from editor.canvas.style import node_rect
from editor.editing import WorkflowDocument
from editor.layout import auto_layout
from engine import Workflow

from .conftest import SAMPLES, agent, flow, link, start


def _seg_hits_rect(p: QPointF, q: QPointF, r: QRectF) -> bool:
    # Sample the segment finely: simple and independent of the router's own clipping code.
    steps = max(2, int((abs(q.x() - p.x()) + abs(q.y() - p.y())) / 2))
    for i in range(steps + 1):
        t = i / steps
        x, y = p.x() + (q.x() - p.x()) * t, p.y() + (q.y() - p.y()) * t
        if r.left() < x < r.right() and r.top() < y < r.bottom():
            return True
    return False


def crossings(scene: CanvasScene) -> list[tuple[tuple, str]]:
    """(link, card) pairs where a link's path runs through a card other than its ends."""
    wf = scene.document.workflow
    cards = {n.id: node_rect(n, scene._is_sub(n)) for n in wf.nodes}
    found = []
    for key, edge in scene.edge_items.items():
        for poly in edge.path().toSubpathPolygons():
            pts = [poly.at(i) for i in range(poly.size())]
            for nid, rect in cards.items():
                if nid in (key[0], key[2]):
                    continue
                if any(_seg_hits_rect(pts[i], pts[i + 1], rect) for i in range(len(pts) - 1)):
                    found.append((key, nid))
    return found


def laid_out(data: dict) -> CanvasScene:
    doc = WorkflowDocument(Workflow.model_validate(data))
    scene = CanvasScene(doc)
    auto_layout(doc)
    return scene


def review_with_loops() -> dict:
    data = json.loads((SAMPLES / "review.flow.json").read_text(encoding="utf-8"))
    data["connections"] += [
        link("revise", "signoff"),  # a back edge: revise goes back for sign-off
        link("general", "send"),  # branches crossing between rows
        link("triage", "send"),
    ]  # skips two layers, over the cards between
    return data


def test_after_auto_layout_no_link_runs_through_a_card(app):
    scene = laid_out(review_with_loops())
    assert crossings(scene) == []
    back = scene.edge_items[("revise", "output", "signoff", "input")]
    assert back.routed  # the back edge goes round, above or below the row
    wf = scene.document.workflow
    top = min(n.y for n in wf.nodes)
    bottom = max(node_rect(n).bottom() for n in wf.nodes)
    path_rect = back.path().boundingRect()
    assert (
        path_rect.top() < top
        or path_rect.bottom() > bottom
        or not any(path_rect.intersects(node_rect(n)) for n in wf.nodes if n.id not in ("revise", "signoff"))
    )


def test_chain_with_skip_and_back_edges(app):
    nodes = [start("s", 0, 0)] + [agent(f"a{i}", 300 * i, 0) for i in range(1, 6)]
    conns = [link("s", "a1")] + [link(f"a{i}", f"a{i + 1}") for i in range(1, 5)]
    conns += [link("a1", "a4"), link("a2", "a5"), link("a5", "a1"), link("a4", "a2")]
    scene = laid_out(flow(nodes, conns))
    assert crossings(scene) == []


def test_subagent_links_end_on_their_own_card(app):
    data = json.loads((SAMPLES / "research.flow.json").read_text(encoding="utf-8"))
    scene = laid_out(data)
    assert crossings(scene) == []
    for key, edge in scene.edge_items.items():
        if key[1] == "subagent":
            end = edge.path().pointAtPercent(1.0)
            target = scene.node_items[key[2]]
            assert (end - target.port_scene_pos("input")).manhattanLength() < 1.0


def test_a_card_dropped_on_a_link_pushes_it_around(app):
    data = flow([start("s", 0, 0), agent("a", 700, 0), agent("b", 300, 400)], [link("s", "a")])
    doc = WorkflowDocument(Workflow.model_validate(data))
    scene = CanvasScene(doc)
    assert crossings(scene) == []
    doc.move_nodes({"b": (300, 400)}, {"b": (330, -20)})
    assert crossings(scene) == []
    assert scene.edge_items[("s", "output", "a", "input")].routed
    doc.undo_stack.undo()
    assert crossings(scene) == []


def test_dragging_a_node_reroutes_its_links_each_step(app):
    data = flow([start("s", 0, 0), agent("a", 300, 0), agent("b", 600, 0)], [link("s", "b")])
    doc = WorkflowDocument(Workflow.model_validate(data))
    scene = CanvasScene(doc)
    assert crossings(scene) == []  # s -> b goes round a
    item = scene.node_items["b"]
    for dx in range(0, 400, 40):
        item.setPos(600 + dx, 0)
        assert crossings(scene) == []


def test_router_keeps_the_curve_when_nothing_is_in_the_way():
    grid = ObstacleGrid()
    grid.set("s", (0, 0, 200, 80))
    grid.set("t", (400, 100, 600, 180))
    assert route((200, 40), (400, 118), False, grid, ("s", "t")) is None
    grid.set("x", (250, 0, 350, 200))
    bends = route((200, 40), (400, 118), False, grid, ("s", "t"))
    assert bends is not None and bends[0] == (200, 40) and bends[-1] == (400, 118)
