"""Auto-layout on model positions: left-to-right layers along execution links.

Pure computation over the workflow (no items are measured): layer = longest path from a
root ignoring back edges; nodes in a layer are stacked top to bottom in a stable order
(barycentre of their predecessors); subagents hang below their parent. Node heights come
from :func:`editor.canvas.style.node_size`, which derives them from the model alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from engine import GraphIndex, Node, Workflow, spec_for

from .canvas.style import node_size
from .document import is_subagent_node

if TYPE_CHECKING:
    from .editing import WorkflowDocument

LAYER_GAP = 110.0
ROW_GAP = 48.0


def layered_positions(workflow: Workflow, only: set[str] | None = None) -> dict[str, tuple[float, float]]:
    index = GraphIndex(workflow)
    nodes = [n for n in workflow.nodes if only is None or n.id in only]
    if not nodes:
        return {}
    ids = {n.id for n in nodes}
    subs = {n.id for n in nodes if is_subagent_node(n, index)}
    main = [n for n in nodes if n.id not in subs]
    main_ids = {n.id for n in main}
    out_edges = {nid: [t for t in index.exec_out.get(nid, ()) if t in main_ids and t != nid] for nid in main_ids}
    # Depth-first order to drop back edges, so execution cycles do not stretch layers forever.
    order: list[str] = []
    state: dict[str, int] = {}
    dag: dict[str, list[str]] = defaultdict(list)
    roots = [n.id for n in main if _is_entry(n)] + [n.id for n in main]
    for root in roots:
        if root in state:
            continue
        stack = [(root, iter(out_edges.get(root, ())))]
        state[root] = 1
        while stack:
            nid, it = stack[-1]
            for nxt in it:
                if state.get(nxt) == 1:
                    continue  # back edge
                dag[nid].append(nxt)
                if nxt not in state:
                    state[nxt] = 1
                    stack.append((nxt, iter(out_edges.get(nxt, ()))))
                    break
            else:
                stack.pop()
                state[nid] = 2
                order.append(nid)
    order.reverse()  # topological order of the DAG
    layer: dict[str, int] = {nid: 0 for nid in order}
    for nid in order:
        for nxt in dag.get(nid, ()):
            layer[nxt] = max(layer[nxt], layer[nid] + 1)
    by_node = {n.id: n for n in nodes}
    layers: dict[int, list[str]] = defaultdict(list)
    for nid in order:
        layers[layer[nid]].append(nid)
    preds: dict[str, list[str]] = defaultdict(list)
    for s, targets in dag.items():
        for t in targets:
            preds[t].append(s)
    rank: dict[str, float] = {}
    origin_x = min(n.x for n in nodes)
    origin_y = min(n.y for n in nodes)
    positions: dict[str, tuple[float, float]] = {}
    x = origin_x
    children = {nid: [t for t in index.sub_children.get(nid, ()) if t in subs] for nid in ids}
    for li in sorted(layers):
        members = layers[li]
        members.sort(
            key=lambda m: (sum(rank.get(p, 0) for p in preds[m]) / len(preds[m])) if preds[m] else rank.get(m, 0)
        )
        width = max(node_size(by_node[m])[0] for m in members)
        y = origin_y
        for i, m in enumerate(members):
            rank[m] = i
            positions[m] = (round(x), round(y))
            w, h = node_size(by_node[m])
            y += h + ROW_GAP
            # Subagents (and their own subagents) sit under their parent, in this column.
            queue = list(children.get(m, ()))
            while queue:
                child = queue.pop(0)
                if child in positions:
                    continue
                positions[child] = (round(x + 30), round(y))
                y += node_size(by_node[child])[1] + ROW_GAP
                queue.extend(children.get(child, ()))
        x += width + LAYER_GAP
    # Subagents whose parent is outside the set keep a column of their own.
    y = origin_y
    for sid in subs:
        if sid not in positions:
            positions[sid] = (round(x), round(y))
            y += node_size(by_node[sid])[1] + ROW_GAP
    return {k: (float(v[0]), float(v[1])) for k, v in positions.items()}


def auto_layout(document: WorkflowDocument, node_ids: Iterable[str] | None = None) -> None:
    """Lay out ``node_ids`` (all nodes when None) left to right, as one undo step."""
    positions = layered_positions(document.workflow, set(node_ids) if node_ids else None)
    before = {nid: (document.node(nid).x, document.node(nid).y) for nid in positions}  # type: ignore[union-attr]
    document.move_nodes(before, positions, "Auto-layout")


def _is_entry(node: Node) -> bool:
    spec = spec_for(node.type)
    return spec is not None and spec.entry
