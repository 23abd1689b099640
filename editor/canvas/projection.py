"""What the canvas derives from a workflow before it shows it, computed without widgets.

A :class:`Projection` holds the link counts per handle (which handles show as connected,
which nodes are subagents), each node's links and, for a big document (lazy mode, see
:mod:`.scene`), every card's rectangle in an :class:`ObstacleGrid` and the overview's
geometry (cards as rectangles by kind, links as straight lines). The scene adopts one when a
workflow is reset; opening a big file builds it on a worker thread in steps
(:meth:`Projection.plan`, then :meth:`measure` on the GUI thread, which uses font metrics,
then :meth:`place`), so the window stays responsive. Nothing here touches a scene or an item;
``QRectF``/``QLineF`` are plain values, safe to make on any thread.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable

from PySide6.QtCore import QLineF, QRectF

from engine import Node, Workflow, spec_for

from .routing import ObstacleGrid
from .style import node_rect

ConnKey = tuple[str, str, str, str]
SizeKey = tuple[str, bool, bool]  # kind, shown as a subagent, collapsed


class Cancelled(Exception):
    """Raised inside a step when the open that asked for it was cancelled."""


def count_link(
    handle_use: dict,
    sub_parents: dict,
    exec_links: dict,
    source: str,
    handle: str,
    target: str,
    target_handle: str,
    delta: int,
) -> None:
    handle = "condition-0" if handle == "true" else handle
    handle_use[(source, handle)] += delta
    handle_use[(target, target_handle)] += delta
    if handle == "subagent":
        sub_parents[target] += delta
    else:
        exec_links[source] += delta
        exec_links[target] += delta


def shown_as_subagent(node: Node, sub_parents: dict, exec_links: dict) -> bool:
    """Whether the canvas draws ``node`` as a subagent (linked under a parent, or made as one)."""
    spec = spec_for(node.type)
    if spec is None or not spec.tool_capable:
        return False
    if sub_parents.get(node.id):
        return True
    # Not getattr(): a missing attribute costs pydantic a slow failed look-up (per node of a big file).
    data = node.data
    flag = data.__dict__.get("subagent") or (data.__pydantic_extra__ or {}).get("subagent", False)
    return bool(flag) and not exec_links.get(node.id)


class Overview:
    """A big document drawn zoomed out: each kind's card rectangles and the links as straight
    lines (from the right edge's middle of the source to the left edge's middle of the target),
    in model coordinates, made once and drawn as a few batched calls. The lines are made when
    first asked for: zoomed out over a very big document they are not drawn at all."""

    def __init__(self, rects: dict[str, list[QRectF]], workflow: Workflow, grid: ObstacleGrid) -> None:
        self.rects = rects
        self._workflow = workflow
        self._grid = grid
        self._lines: list[QLineF] | None = None

    @property
    def lines(self) -> list[QLineF]:
        if self._lines is None:
            got = self._grid.rects.get
            lines = []
            for c in self._workflow.connections:
                a, b = got(c.source), got(c.target)
                if a is not None and b is not None:
                    lines.append(QLineF(a[2], (a[1] + a[3]) / 2, b[0], (b[1] + b[3]) / 2))
            self._lines = lines
            self._workflow = self._grid = None  # type: ignore[assignment]  # nothing kept once made
        return self._lines

    @classmethod
    def build(cls, workflow: Workflow, grid: ObstacleGrid, check: Callable[[], None] | None = None) -> Overview:
        rects: dict[str, list[QRectF]] = defaultdict(list)
        got = grid.rects.get
        for i, node in enumerate(workflow.nodes):
            r = got(node.id)
            if r is not None:
                rects[node.type].append(QRectF(r[0], r[1], r[2] - r[0], r[3] - r[1]))
            if check is not None and not i % 5000:
                check()
        return cls(dict(rects), workflow, grid)


class Projection:
    """See the module doc. Build with :meth:`build` (all at once, on the GUI thread) or in the
    three steps :meth:`plan` (any thread), :meth:`measure` (GUI thread), :meth:`place` (any
    thread). ``check`` is called now and then in the long loops; it raises :class:`Cancelled`
    to stop."""

    def __init__(self, workflow: Workflow, lazy: bool) -> None:
        self.workflow = workflow
        self.lazy = lazy
        self.handle_use: dict[tuple[str, str], int] = defaultdict(int)
        self.sub_parents: dict[str, int] = defaultdict(int)
        self.exec_links: dict[str, int] = defaultdict(int)
        self.links: dict[str, set[ConnKey]] = defaultdict(set)  # every link of each node (lazy mode)
        self.sizes: dict[SizeKey, tuple[float, float]] = {}
        self.grid: ObstacleGrid | None = None  # lazy mode: every card's rectangle
        self.overview: Overview | None = None
        self.bounds: tuple[float, float, float, float] | None = None  # lazy mode: of every card
        self._keys: list[SizeKey] = []  # per node, in file order (lazy mode)
        self._samples: dict[SizeKey, tuple[Node, bool]] = {}

    @classmethod
    def build(cls, workflow: Workflow, lazy_nodes: int) -> Projection:
        p = cls.plan(workflow, lazy_nodes)
        p.measure()
        p.place()
        return p

    @classmethod
    def plan(cls, workflow: Workflow, lazy_nodes: int, check: Callable[[], None] | None = None) -> Projection:
        """Counts and links; in lazy mode which size each card takes (a sample card per kind,
        look and fold: measured by :meth:`measure`). One pass over the links, one over the
        nodes, with :func:`count_link` and :func:`shown_as_subagent` written out (100k of each)."""
        p = cls(workflow, len(workflow.nodes) > lazy_nodes)
        hu, sp, el, links = p.handle_use, p.sub_parents, p.exec_links, p.links
        lazy = p.lazy
        for i, c in enumerate(workflow.connections):
            source, target = c.source, c.target
            handle = c.sourceHandle or "output"
            target_handle = c.targetHandle or "input"
            counted = "condition-0" if handle == "true" else handle
            hu[(source, counted)] += 1
            hu[(target, target_handle)] += 1
            if counted == "subagent":
                sp[target] += 1
            else:
                el[source] += 1
                el[target] += 1
            if lazy:
                key = (source, handle, target, target_handle)
                links[source].add(key)
                links[target].add(key)
            if check is not None and not i % 10000:
                check()
        if not lazy:
            return p
        samples = p._samples
        keys = p._keys
        capable: dict[str, bool] = {}
        for i, node in enumerate(workflow.nodes):
            kind = node.type
            tool = capable.get(kind)
            if tool is None:
                spec = spec_for(kind)
                tool = capable[kind] = spec is not None and spec.tool_capable
            sub = tool and shown_as_subagent(node, sp, el)
            key = (kind, sub, bool(node.data.__dict__.get("collapsed")))  # a field of every kind's data
            keys.append(key)
            if key not in samples:
                samples[key] = (node, sub)
            if check is not None and not i % 10000:
                check()
        return p

    def measure(self) -> None:
        """The size of each sample card (font metrics: the GUI thread)."""
        for key, (node, sub) in self._samples.items():
            r = node_rect(node, sub)
            self.sizes[key] = (r.width(), r.height())
        self._samples = {}

    def place(self, check: Callable[[], None] | None = None) -> None:
        """Lazy mode: every card's rectangle in the grid, and the overview's geometry."""
        if not self.lazy:
            return
        grid = ObstacleGrid()
        sizes = self.sizes
        entries = []
        append = entries.append
        nodes = self.workflow.nodes
        for start in range(0, len(nodes), 10000):
            for node, key in zip(nodes[start : start + 10000], self._keys[start : start + 10000]):
                w, h = sizes[key]
                x, y = node.x, node.y
                append((node.id, (x, y, x + w, y + h)))
            if check is not None:
                check()
        grid.add_many(entries)
        if check is not None:
            check()
        if entries:
            rects = [r for _, r in entries]
            self.bounds = (
                min([r[0] for r in rects]),
                min([r[1] for r in rects]),
                max([r[2] for r in rects]),
                max([r[3] for r in rects]),
            )
        self._keys = []
        self.grid = grid
        self.overview = Overview.build(self.workflow, grid, check)
