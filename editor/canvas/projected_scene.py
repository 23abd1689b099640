"""ProjectedScene: a projection of a :class:`WorkflowDocument` onto a ``QGraphicsScene``.

It catches up on the document's content, follows its signals, and keeps ``dict[id, item]``
both ways (``node_items``, ``edge_items``, ``node_edges``). It never edits the model: what the
user does with the cards is :class:`~editor.canvas.scene.CanvasScene`'s (the editing scene
built on this one), and a read-only run view uses it as it is.

Big documents (more than ``LAZY_NODES`` nodes) are projected lazily: the scene keeps every
card's rectangle in its :class:`ObstacleGrid` (from the model, no item), and makes items only
for the cards the view shows (``realize_rect``, called by the view as it scrolls and zooms)
and for the links of those cards. Zoomed out over more than ``REALIZE_CAP`` cards, the rest
is painted from the grid as a level-of-detail overview (rectangles and straight links) in
``drawBackground``, with no items. ``node_items`` / ``edge_items`` make an item on demand
for any node or link of the model (``node_items[id]``, ``.get(id)``, ``id in node_items``,
see :mod:`.lazy_items`); iterating them walks only the items made so far, and state pushed
in by the window (issues, run states, find hits) is kept by the scene and given to an item
when it is made. A run shows through :meth:`ProjectedScene.show_run` (see :mod:`.shown_state`, which holds
what the window pushes in for display: issues, find hits, a run);
sticky notes and groups are kept by the scene's :class:`~.annotation_layer.AnnotationLayer`.
"""

from __future__ import annotations

import logging
from collections import defaultdict

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QPainter, QTransform
from PySide6.QtWidgets import QGraphicsScene

from engine import Node

from ..document import ConnKey
from ..editing import WorkflowDocument
from .annotation_layer import AnnotationLayer
from .background import draw_grid, draw_loose_links
from .items.edge import EdgeItem
from .items.node import NodeItem
from .lazy_items import LazyItems
from .lazy_projection import LazyProjection
from .link_batch import LINK_BATCH_LOD, LinkBatch
from .overview_cache import OverviewCache
from .pending_routes import DEFER_LINKS, PendingRoutes, UnmadeCurves
from .projection import Overview, Projection, count_link, shown_as_subagent
from .routing import ObstacleGrid, route
from .run_overlay import RunOverlay
from .shown_state import ShownState
from .style import CANVAS_BG, node_layout, node_title

__all__ = ["ProjectedScene"]

log = logging.getLogger(__name__)


class ProjectedScene(ShownState, LazyProjection, QGraphicsScene):
    """The document's cards and links as items, kept in step with its signals."""

    LAZY_NODES = 2500  # above this many nodes, items are made only for what is in view
    REALIZE_CAP = 600  # at most this many cards in view get items; more (zoomed out): the overview

    def __init__(self, document: WorkflowDocument, parent=None) -> None:
        super().__init__(parent)
        self.document = document
        self.node_items: LazyItems = LazyItems(self._make_node_item)
        self.edge_items: LazyItems = LazyItems(self._make_edge_item)
        self.lazy = False  # a big document: items only for what is in view (see the module doc)
        self.overview = False  # zoomed out over a big document: cards painted from the grid
        self.realize_left = 0  # cards in the view's margin still without an item (see realize_rect)
        self._links: dict[str, set[ConnKey]] = defaultdict(set)  # every link of each node (lazy mode)
        self._issues: dict[str, tuple[str | None, str]] = {}
        self._found: set[str] = set()
        # Select all on a big document: every node counts as selected (items made later too)
        # until the selection changes otherwise.
        self._all_selected = False
        self._sizes: dict[tuple[str, bool, bool], tuple[float, float]] = {}
        self.node_edges: dict[str, set[ConnKey]] = defaultdict(set)
        self._handle_use: dict[tuple[str, str], int] = defaultdict(int)
        self._sub_parents: dict[str, int] = defaultdict(int)
        self._exec_links: dict[str, int] = defaultdict(int)
        self._building = False
        self._next_projection: Projection | None = None  # made ahead by an open (see use_projection)
        self._links_version = 0  # goes up when a link is added or removed (the overview is then stale)
        self._overview_geom: tuple[Overview | None, int, int] = (None, -1, -1)
        self._bounds_cache: tuple[int, QRectF] | None = None
        self._batch_move = False  # a document move in progress: links are routed once at the end
        self.links_batched = False  # zoomed far out: link items hidden, painted merged (link_batch)
        self._link_batch = LinkBatch()
        self._overview_image = OverviewCache()  # the overview drawn once per zoom and model change
        # A document with many links shows them as curves first, routed after the first paint.
        self.pending_routes = PendingRoutes(
            self, self._route_pending, self._apply_route, lambda: self.obstacles.version, self.update
        )
        self._curve_only = False  # links made now keep their curve (their route is found later)
        self._unmade = UnmadeCurves()  # ... and those not made yet, drawn by the scene
        # Cards by model position, for routing links around them (kept in step with the items).
        self.obstacles = ObstacleGrid()
        self.snap_to_grid = False
        self.run = RunOverlay()  # the run shown (display only, see show_run)
        # Canvas annotations: sticky notes and groups, by id; each node's groups, and the
        # members of collapsed groups (hidden behind their group's card) -> that group.
        self.annotations = AnnotationLayer(self, self._update_edges)
        self.note_items = self.annotations.note_items  # (the same dicts, kept by the layer)
        self.group_items = self.annotations.group_items
        self._pulse_timer = self.pulse_timer()  # a running card's halo pulses
        self.setItemIndexMethod(QGraphicsScene.ItemIndexMethod.BspTreeIndex)
        self.setBackgroundBrush(CANVAS_BG)
        document.workflow_reset.connect(self.rebuild)
        document.node_added.connect(self._on_node_added)
        document.node_removed.connect(self._on_node_removed)
        document.connection_added.connect(self._on_connection_added)
        document.connection_removed.connect(self._on_connection_removed)
        document.connection_replaced.connect(self._on_connection_replaced)
        document.nodes_moved.connect(self._on_nodes_moved)
        document.node_data_changed.connect(self._on_node_data_changed)
        document.annotation_added.connect(self.annotations.added)
        document.annotation_removed.connect(self.annotations.removed)
        document.annotation_changed.connect(self.annotations.changed)
        self.rebuild()

    # ------------------------------------------------------------------ projection
    def use_projection(self, projection: Projection) -> None:
        """The next rebuild adopts ``projection`` (made ahead, on a worker thread, for the
        workflow about to be reset) instead of computing it; ignored for any other workflow."""
        self._next_projection = projection

    def rebuild(self) -> None:
        plan, self._next_projection = self._next_projection, None
        self._building = True
        # A new workflow: a run shown on the old one does not belong to it.
        self.run.clear()
        self._pulse_timer.stop()
        try:
            self.cancel_gestures()
            self.clear()
            dict.clear(self.node_items)
            dict.clear(self.edge_items)
            self.node_edges.clear()
            self._issues, self._found = {}, set()
            self.annotations.clear()
            self._all_selected = False
            self._overview_geom = (None, -1, -1)
            self._overview_image.clear()
            self.pending_routes.clear()
            self._bounds_cache = None
            wf = self.document.workflow
            if plan is None or plan.workflow is not wf:
                plan = Projection.build(wf, self.LAZY_NODES)
            self.lazy = plan.lazy
            self.overview = self.lazy
            self._handle_use, self._sub_parents, self._exec_links = plan.handle_use, plan.sub_parents, plan.exec_links
            self._links = plan.links
            self._sizes = dict(plan.sizes)
            self.obstacles = plan.grid if plan.grid is not None else ObstacleGrid()
            if self.lazy:
                self._overview_geom = (plan.overview, self.obstacles.version, self._links_version)
                if plan.bounds is not None:
                    x0, y0, x1, y1 = plan.bounds
                    self._bounds_cache = (self.obstacles.version, QRectF(x0, y0, x1 - x0, y1 - y0))
                self.annotations.add_items()
            else:
                for node in wf.nodes:
                    self._add_node_item(node)
                self.annotations.add_items()
                if len(wf.connections) > DEFER_LINKS:
                    # Many links: none is made before the first paint (the scene draws their
                    # curves from the cards); they are made and routed after it, in slices.
                    for c in wf.connections:
                        self.pending_routes.add(c.key())
                else:
                    for c in wf.connections:
                        self._add_edge_item(c.key())
                for nid, item in self.node_items.items():
                    item.set_connected(self._connected_handles(nid))
        finally:
            self._building = False
        self.setSceneRect(self.items_bounds().adjusted(-6000, -6000, 6000, 6000))

    def node_title(self, node_id: str) -> str:
        """A node's title as the canvas shows it, with no item needed."""
        item = self.node_items.peek(node_id)
        if item is not None:
            return item.layout.title
        node = self.document.node(node_id)
        return node_title(node) if node is not None else ""

    def items_bounds(self) -> QRectF:
        """Bounds of every node from model positions and sizes (no item is measured)."""
        if self.lazy:
            grid = self.obstacles
            cached = self._bounds_cache
            if cached is not None and cached[0] == grid.version:
                return QRectF(cached[1])
            rects = grid.rects.values()
            if rects:
                x0, y0 = min(r[0] for r in rects), min(r[1] for r in rects)
                x1, y1 = max(r[2] for r in rects), max(r[3] for r in rects)
                bounds = QRectF(x0, y0, x1 - x0, y1 - y0)
                self._bounds_cache = (grid.version, bounds)
                return QRectF(bounds)
        rects = self.model_rects()
        if not rects:
            return QRectF(0, 0, 800, 600)
        x0, y0 = min(r[0] for r in rects), min(r[1] for r in rects)
        return QRectF(x0, y0, max(r[2] for r in rects) - x0, max(r[3] for r in rects) - y0)

    def model_rects(self) -> list[tuple[float, float, float, float, str]]:
        """Every card's (x0, y0, x1, y1, look) at its model position: sized from its item's
        layout (laid out once, when the item was made), or laid out here when it has none."""
        out = []
        peek = self.node_items.peek
        for node in self.document.workflow.nodes:
            item = peek(node.id)
            lay = item.layout if item is not None else node_layout(node, self._is_sub(node))
            out.append((node.x, node.y, node.x + lay.width, node.y + lay.height, lay.kind))
        return out

    def _is_sub(self, node: Node) -> bool:
        return shown_as_subagent(node, self._sub_parents, self._exec_links)

    def _count(self, source: str, handle: str, target: str, target_handle: str, delta: int) -> None:
        count_link(self._handle_use, self._sub_parents, self._exec_links, source, handle, target, target_handle, delta)
        self._links_version += 1

    def _connected_handles(self, node_id: str) -> set[str]:
        item = self.node_items.peek(node_id)
        if item is None:
            return set()
        handles = [h for h, _, _ in item.layout.outputs] + ["input"]
        return {h for h in handles if self._handle_use.get((node_id, h), 0) > 0}

    def _add_node_item(self, node: Node) -> NodeItem:
        item = NodeItem(node, self._is_sub(node))
        item.snap = self.snap_to_grid
        if self.run.states:  # a node back from undo during or after a run shows its run state again
            self.run.apply(node.id, item)
        dict.__setitem__(self.node_items, node.id, item)
        if node.id in self.annotations.hidden:
            item.setVisible(False)
        self.addItem(item)
        self._place_obstacle(item)
        if self.lazy:
            self._apply_kept_state(item)
        return item

    def _place_obstacle(self, item: NodeItem) -> None:
        x, y = item.pos().x(), item.pos().y()
        self.obstacles.set(item.node_id, (x, y, x + item.layout.width, y + item.layout.height))

    def _route_edge(self, key: ConnKey, edge: EdgeItem) -> None:
        if not self._curve_only:
            self.pending_routes.discard(key)  # routed now: it no longer waits
        if self.annotations.route_hidden(key, edge):  # an end inside a collapsed group
            return
        if not edge.isVisible() and not (self._curve_only and self.links_batched):
            edge.setVisible(True)
        a, b = self._ends(key)
        if self._curve_only:  # made while its route waits (see pending_routes): its curve for now
            edge.set_ends(a, b, None)
            return
        edge.set_ends(a, b, self._bends(key, edge, a, b))

    def _ends(self, key: ConnKey) -> tuple[QPointF, QPointF]:
        return (
            self.node_items.peek(key[0]).port_scene_pos(key[1]),
            self.node_items.peek(key[2]).port_scene_pos(key[3]),
        )

    def _bends(self, key: ConnKey, edge: EdgeItem, a: QPointF, b: QPointF) -> list[tuple[float, float]] | None:
        try:
            return route((a.x(), a.y()), (b.x(), b.y()), edge.subagent, self.obstacles, (key[0], key[2]))
        except Exception:  # never let geometry take the canvas down (this runs inside Qt callbacks)
            log.exception("routing the link %s failed; drawing it as a curve", key)
            return None

    def _route_pending(self, key: ConnKey) -> tuple | None:
        """A waiting link's route, found without touching its item (made first, with its curve,
        when it has none yet; see :mod:`.pending_routes`)."""
        edge = self.edge_items.peek(key)
        if edge is None:
            self._add_edge_item(key, route=False)
            edge = self.edge_items.peek(key)
        hidden = self.annotations.hidden  # (an end in a collapsed group: drawn to the group's card)
        if edge is None or key[0] in hidden or key[2] in hidden:
            return None
        a, b = self._ends(key)
        return a, b, self._bends(key, edge, a, b)

    def _apply_route(self, key: ConnKey, found: tuple) -> None:
        edge = self.edge_items.peek(key)
        if edge is not None:
            edge.set_ends(*found)

    def _links_across(self, ids: list[str]) -> set[ConnKey]:
        """Links that run under the cards ``ids`` without ending there (from the scene's index)."""
        found: set[ConnKey] = set()
        for nid in ids:
            r = self.obstacles.rects.get(nid)
            if r is None:
                continue
            for item in self.items(
                QRectF(r[0], r[1], r[2] - r[0], r[3] - r[1]),
                Qt.ItemSelectionMode.IntersectsItemShape,
                Qt.SortOrder.AscendingOrder,
                QTransform(),
            ):
                if (
                    isinstance(item, EdgeItem)
                    and self.edge_items.has(item.key)
                    and nid not in (item.key[0], item.key[2])
                ):
                    found.add(item.key)
        return found

    def _reroute(self, keys: set[ConnKey]) -> None:
        for key in keys:
            edge = self.edge_items.peek(key)
            if edge is not None:
                self._route_edge(key, edge)

    def _add_edge_item(self, key: ConnKey, route: bool = True) -> None:
        src, tgt = self._ensure_node_item(key[0]), self._ensure_node_item(key[2])
        if src is None or tgt is None:
            return  # a link to a missing node (invalid file): validation reports it
        edge = EdgeItem(key, key[1] == "subagent")
        if self.links_batched:
            edge.setVisible(False)
        if self.run.links:
            edge.set_followed(self.run.followed(key))
        dict.__setitem__(self.edge_items, key, edge)
        self.node_edges[key[0]].add(key)
        self.node_edges[key[2]].add(key)
        self._curve_only = not route
        try:
            self._route_edge(key, edge)
        finally:
            self._curve_only = False
        edge.setToolTip(
            f"{src.layout.title} → {tgt.layout.title}" + (" (subagent)" if key[1] == "subagent" else f" ({key[1]})")
        )
        self.addItem(edge)

    def _update_edges(self, node_id: str) -> None:
        for key in self.node_edges.get(node_id, ()):
            edge = self.edge_items.peek(key)
            if edge is not None:
                self._route_edge(key, edge)

    def _refresh_node(self, node_id: str) -> None:
        node = self.document.node(node_id)
        item = self.node_items.peek(node_id)
        if node is None or item is None:
            if node is not None and self.lazy:
                self._sizes.clear()  # a kind's size may have changed
                self.obstacles.set(node_id, self._model_rect(node))
                self.update()
            return
        item.set_node(node, self._is_sub(node))
        item.set_connected(self._connected_handles(node_id))
        self._place_obstacle(item)
        self._update_edges(node_id)

    def node_item_moved(self, item: NodeItem) -> None:
        if self.node_items.peek(item.node_id) is item:
            self._place_obstacle(item)
        if not self._building and not self._batch_move:
            self._update_edges(item.node_id)
            if item.node_id in self.annotations.node_groups:
                self.annotations.place_groups_of([item.node_id])

    def _on_node_added(self, node_id: str) -> None:
        node = self.document.node(node_id)
        if node is not None:
            item = self._add_node_item(node)
            item.set_connected(self._connected_handles(node_id))
            self._grow_scene_rect(item.sceneBoundingRect())
            self._reroute(self._links_across([node_id]))
            self.annotations.place_groups_of([node_id])

    def _on_node_removed(self, node_id: str) -> None:
        item = self.node_items.pop(node_id, None)
        self.obstacles.remove(node_id)
        self._links.pop(node_id, None)
        if self.lazy:
            self.update()
        for key in list(self.node_edges.pop(node_id, ())):
            self._remove_edge_item(key)
        if item is not None:
            self._item_removed(item)
            self.removeItem(item)
        self.annotations.place_groups_of([node_id])

    def _remove_edge_item(self, key: ConnKey) -> None:
        edge = self.edge_items.pop(key, None)
        self.pending_routes.discard(key)
        if edge is not None:
            self.removeItem(edge)
        for nid in (key[0], key[2]):
            s = self.node_edges.get(nid)
            if s is not None:
                s.discard(key)

    def _on_connection_added(self, key: ConnKey) -> None:
        self._count(key[0], key[1], key[2], key[3], 1)
        if self.lazy:
            self._links[key[0]].add(key)
            self._links[key[2]].add(key)
            self.update()
        if key[1] == "subagent" or self.node_items.has(key[2]):
            self._refresh_node(key[2])  # may turn into a subagent (input moves to the top)
        if not self.lazy or self.node_items.has(key[0]) or self.node_items.has(key[2]):
            self._add_edge_item(key)
        for nid in (key[0], key[2]):
            if self.node_items.has(nid):
                self.node_items.peek(nid).set_connected(self._connected_handles(nid))

    def _on_connection_removed(self, key: ConnKey) -> None:
        self._count(key[0], key[1], key[2], key[3], -1)
        for nid in (key[0], key[2]):
            s = self._links.get(nid)
            if s is not None:
                s.discard(key)
        if self.lazy:
            self.update()
        self._remove_edge_item(key)
        if self.node_items.has(key[2]):
            self._refresh_node(key[2])
        if self.node_items.has(key[0]):
            self.node_items.peek(key[0]).set_connected(self._connected_handles(key[0]))

    def _on_connection_replaced(self, old: ConnKey, new: ConnKey) -> None:
        self._on_connection_removed(old)
        self._on_connection_added(new)

    def _on_nodes_moved(self, ids: list[str]) -> None:
        # Every card first, then each link once: routed against where the cards end up, not
        # against a half-moved graph (auto-layout moves them all at once).
        self._batch_move = True
        try:
            for nid in ids:
                node, item = self.document.node(nid), self.node_items.peek(nid)
                if node is not None and item is not None and (item.pos().x(), item.pos().y()) != (node.x, node.y):
                    item.setPos(node.x, node.y)
                elif node is not None and item is None and self.lazy:
                    r = self.obstacles.rects.get(nid)
                    if r is not None:
                        self.obstacles.set(nid, (node.x, node.y, node.x + r[2] - r[0], node.y + r[3] - r[1]))
        finally:
            self._batch_move = False
        if self.lazy:
            self.update()
            self._grow_scene_rect(self.items_bounds())
        self.annotations.place_groups_of(ids)
        keys = {k for nid in ids for k in self.node_edges.get(nid, ())}
        # Links that now pass under a moved card, found before any link changes (each change
        # would make the scene index the items again).
        if len(keys) < len(self.edge_items):
            keys |= self._links_across([nid for nid in ids if self.node_items.has(nid)])
        self._reroute(keys)

    def _on_node_data_changed(self, node_id: str) -> None:
        self._refresh_node(node_id)
        self.annotations.place_groups_of([node_id])
        self._reroute(self._links_across([node_id]))  # a card that grew (expanded) may now cover links
        for key in self.node_edges.get(node_id, ()):
            edge = self.edge_items.peek(key)
            if edge is not None:
                edge.setToolTip(f"{self.node_title(key[0])} → {self.node_title(key[2])}")

    def _grow_scene_rect(self, rect: QRectF) -> None:
        if not self.sceneRect().contains(rect):
            self.setSceneRect(self.sceneRect().united(rect.adjusted(-6000, -6000, 6000, 6000)))

    def set_snap(self, on: bool) -> None:
        self.snap_to_grid = on
        for item in self.node_items.values():
            item.snap = on

    def node_item_at(self, pos: QPointF) -> NodeItem | None:
        for item in self.items(
            QRectF(pos.x() - 4, pos.y() - 4, 8, 8),
            Qt.ItemSelectionMode.IntersectsItemShape,
            Qt.SortOrder.DescendingOrder,
            QTransform(),
        ):
            if isinstance(item, NodeItem):
                return item
        return None

    # ------------------------------------------------------------------ hooks and painting
    def cancel_gestures(self) -> None:
        """End any gesture in progress (before a rebuild); an editing scene has some."""

    def _item_removed(self, item: NodeItem) -> None:
        """A card's item is gone (its node was removed); a gesture holding it lets go of it."""

    def drawBackground(self, painter: QPainter, rect: QRectF) -> None:
        waiting = bool(len(self.pending_routes))
        if waiting:
            self.pending_routes.painted()
        if self.lazy and self.overview:
            painter.fillRect(rect, CANVAS_BG)
            self._overview_image.draw(
                painter, rect, self.overview_geometry(), self.items_bounds(), len(self.obstacles.rects)
            )
            return
        draw_grid(painter, rect)  # (opaque: the background's colour too)
        if self.lazy:
            draw_loose_links(
                painter,
                rect,
                self.obstacles,
                self.REALIZE_CAP * 4,
                lambda nid: self._links.get(nid, ()),
                self.edge_items.has,
            )
        if waiting:
            self._unmade.draw(
                painter,
                (self.pending_routes.generation, self.obstacles.version, self._links_version),
                self._unmade_ends,
                self.pending_routes.waiting,
                self.links_batched,
            )
        if self.links_batched:
            self._link_batch.draw(painter, self.edge_items.values(), len(self.edge_items))

    def _unmade_ends(self, key: ConnKey) -> tuple[QPointF, QPointF] | None:
        """Where a link with no item yet is drawn from and to (None: it has an item, or a card is missing)."""
        if self.edge_items.has(key) or key[0] in self.annotations.hidden or key[2] in self.annotations.hidden:
            return None
        if self.node_items.peek(key[0]) is None or self.node_items.peek(key[2]) is None:
            return None
        return self._ends(key)

    def set_link_detail(self, zoom: float) -> None:
        """Below :data:`LINK_BATCH_LOD` the links are painted merged by the scene (their items
        hidden: a fitted big graph would otherwise make a Python call per link per frame)."""
        batched = zoom < LINK_BATCH_LOD
        if batched == self.links_batched:
            return
        self.links_batched = batched
        for edge in self.edge_items.values():
            edge.setVisible(not batched)
        self.update()

    def overview_geometry(self) -> Overview:
        """The overview's cards and links (lazy mode), made again only after the model changed."""
        geom, version, links = self._overview_geom
        if geom is None or version != self.obstacles.version or links != self._links_version:
            geom = Overview.build(self.document.workflow, self.obstacles)
            self._overview_geom = (geom, self.obstacles.version, self._links_version)
        return geom
