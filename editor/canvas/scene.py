"""CanvasScene: the editing canvas, a :class:`~editor.canvas.projected_scene.ProjectedScene`
the user works on.

The projection (items kept in step with the document, big documents made lazily, run
state shown) is the base class's; this one adds what the user does with it: selection
(select all on a big document counts every node, items made later too), handles and link
gestures, moves (one undo step per drag, restored on Esc), folding, double-clicks and the
context menu. Gestures become document requests (see :mod:`.interactions`); the scene never
edits the model itself and never decides whether a link is legal (``engine.check_connection``
does, and its reason is shown).
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QKeyEvent, QTransform
from PySide6.QtWidgets import QGraphicsSceneMouseEvent

from ..document import ConnKey
from ..editing import WorkflowDocument
from . import interactions as gestures
from .interactions import LinkDrag, MoveTracker
from .items.edge import DragEdgeItem, EdgeItem
from .items.node import NodeItem
from .items.port import PortHit
from .lazy_items import LazyItems
from .projected_scene import ProjectedScene
from .style import PORT_HIT_R, TITLE_H

__all__ = ["CanvasScene", "LazyItems", "PORT_HIT_PX", "PORT_HIT_MAX"]

PORT_HIT_PX = 11.0  # a handle's hit radius on screen, at least, whatever the zoom
PORT_HIT_MAX = 24.0  # ... but never more than this in model units (it would swallow the card)


class CanvasScene(ProjectedScene):
    """The canvas the user edits: the document's projection, plus selection and gestures."""

    status_message = Signal(str)  # transient text for the status bar (link refusals, hints)
    link_refused = Signal(str)  # a link gesture ended on a target the engine refused; the reason
    node_activated = Signal(str)  # double-clicked a node body
    background_double_clicked = Signal(QPointF)
    link_dropped_on_canvas = Signal(str, str, QPointF)  # a new link let go on no node: source, handle, scene pos
    context_menu_requested = Signal(QPointF, object)  # scene pos, node id or None

    # Gestures in progress (class defaults: the base's first rebuild may ask before __init__ ends).
    link_drag: LinkDrag | None = None
    pending_link: DragEdgeItem | None = None  # see show_pending_link
    move_tracker: MoveTracker | None = None
    port_hit_radius = PORT_HIT_R  # grows when zoomed out (see set_zoom)

    def __init__(self, document: WorkflowDocument, parent=None) -> None:
        super().__init__(document, parent)
        document.changed.connect(self._cancel_stale_link_drag)
        self.selectionChanged.connect(self._check_all_selected)

    def _item_removed(self, item: NodeItem) -> None:
        if self.move_tracker and item in self.move_tracker.items:
            self.move_tracker = None

    # ------------------------------------------------------------------ selection
    def selected_node_ids(self) -> list[str]:
        if self._all_selected:
            return [n.id for n in self.document.workflow.nodes]
        return [it.node_id for it in self.selectedItems() if isinstance(it, NodeItem)]

    def select_all(self) -> None:
        """Every node selected; on a big document without making an item for each."""
        if not self.lazy:
            self.select_nodes(list(self.node_items))
            return
        self.blockSignals(True)
        try:
            for item in self.node_items.values():
                item.setSelected(True)
        finally:
            self.blockSignals(False)
        self._all_selected = True
        self.selectionChanged.emit()

    def clearSelection(self) -> None:
        was = self._all_selected
        self._all_selected = False
        had = bool(self.selectedItems())
        super().clearSelection()
        if was and not had:
            self.selectionChanged.emit()

    def _check_all_selected(self) -> None:
        if self._all_selected and any(not item.isSelected() for item in self.node_items.values()):
            self._all_selected = False

    def selected_conn_keys(self) -> list[ConnKey]:
        return [it.key for it in self.selectedItems() if isinstance(it, EdgeItem)]

    def select_nodes(self, ids: list[str]) -> None:
        # One selectionChanged for the whole change, not one per item.
        self._all_selected = False
        self.blockSignals(True)
        try:
            self.clearSelection()
            for nid in ids:
                item = self.node_items.get(nid)  # made on demand (a find hit off screen)
                if item is not None:
                    item.setSelected(True)
        finally:
            self.blockSignals(False)
        self.selectionChanged.emit()

    def set_zoom(self, zoom: float) -> None:
        """The view's scale: handles keep a hit area of ``PORT_HIT_PX`` screen pixels when zoomed
        out (the drawn dot does not grow), up to ``PORT_HIT_MAX`` model units."""
        self.port_hit_radius = min(max(PORT_HIT_R, PORT_HIT_PX / max(zoom, 0.01)), PORT_HIT_MAX)

    def port_at(self, pos: QPointF) -> PortHit | None:
        r = self.port_hit_radius
        best: tuple[float, PortHit] | None = None
        for item in self.items(QRectF(pos.x() - r, pos.y() - r, 2 * r, 2 * r), Qt.ItemSelectionMode.IntersectsItemBoundingRect,
                               Qt.SortOrder.DescendingOrder, QTransform()):
            if isinstance(item, NodeItem):
                hit = item.port_at(item.mapFromScene(pos), r)
                if hit is not None:
                    # With grown hit areas two handles can both be in reach: take the nearest.
                    d = item.port_scene_pos(hit.handle) - pos
                    dist = d.x() * d.x() + d.y() * d.y()
                    if best is None or dist < best[0]:
                        best = (dist, hit)
        return best[1] if best is not None else None

    def _cancel_stale_link_drag(self) -> None:
        # The model changed under a link drag (an undo shortcut, say): its verdicts are stale.
        if self.link_drag is not None:
            self.link_drag.cleanup()
            self.link_drag = None

    def show_pending_link(self, source: str, handle: str, end: QPointF) -> None:
        """A link drawn from ``source``'s ``handle`` to ``end`` while the window asks what to add
        there (a new link let go on empty canvas); :meth:`clear_pending_link` takes it away."""
        self.clear_pending_link()
        item = self.node_items.get(source)
        if item is None:
            return
        self.pending_link = DragEdgeItem(handle == "subagent")
        self.addItem(self.pending_link)
        self.pending_link.set_ends(item.port_scene_pos(handle), end, True)

    def clear_pending_link(self) -> None:
        pending, self.pending_link = self.pending_link, None
        if pending is not None and shiboken6.isValid(pending) and pending.scene() is self:
            self.removeItem(pending)

    def cancel_gestures(self) -> None:
        if self.link_drag is not None:
            self.link_drag.cleanup()
            self.link_drag = None
        if self.move_tracker is not None:
            self.move_tracker.restore()
            self.move_tracker = None

    # ------------------------------------------------------------------ Qt overrides
    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        left = event.button() == Qt.MouseButton.LeftButton
        if left and self.link_drag is None and gestures.press(self, event):
            event.accept()
            return
        super().mousePressEvent(event)
        if left and self.mouseGrabberItem() is not None:
            items = [it for it in self.selectedItems() if isinstance(it, NodeItem)]
            if items and isinstance(self.mouseGrabberItem(), NodeItem):
                self.move_tracker = MoveTracker(items)

    def mouseMoveEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if self.link_drag is not None:
            gestures.drag_to(self, self.link_drag, event)
            event.accept()
            return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if self.link_drag is not None:
            drag, self.link_drag = self.link_drag, None
            gestures.release(self, drag, event)
            event.accept()
            return
        super().mouseReleaseEvent(event)
        tracker, self.move_tracker = self.move_tracker, None
        if tracker is not None:
            self.document.move_nodes(tracker.before, tracker.after())

    def mouseDoubleClickEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        item = self.node_item_at(event.scenePos())
        if item is None:
            self.background_double_clicked.emit(event.scenePos())
            event.accept()
            return
        local = item.mapFromScene(event.scenePos())
        if local.y() <= TITLE_H:
            node = self.document.node(item.node_id)
            if node is not None:
                self.document.set_collapsed([item.node_id], not bool(node.data.collapsed))
        else:
            self.node_activated.emit(item.node_id)
        event.accept()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape and (self.link_drag or self.move_tracker):
            grabber = self.mouseGrabberItem()
            if grabber is not None:
                grabber.ungrabMouse()
            self.cancel_gestures()
            event.accept()
            return
        super().keyPressEvent(event)

    def contextMenuEvent(self, event) -> None:
        item = self.node_item_at(event.scenePos())
        if item is not None and not item.isSelected():
            self.select_nodes([item.node_id])
        self.context_menu_requested.emit(event.scenePos(), item.node_id if item else None)
        event.accept()
