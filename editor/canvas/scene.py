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
from .items.group import GroupItem
from .items.node import NodeItem
from .items.note import NoteEditor, NoteItem
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
    annotation_menu_requested = Signal(QPointF, str, str)  # scene pos, "note" | "group", its id
    group_rename_requested = Signal(str)  # double-clicked a group's title: its id

    # Gestures in progress (class defaults: the base's first rebuild may ask before __init__ ends).
    link_drag: LinkDrag | None = None
    pending_link: DragEdgeItem | None = None  # see show_pending_link
    move_tracker: MoveTracker | None = None
    port_hit_radius = PORT_HIT_R  # grows when zoomed out (see set_zoom)
    note_editor: NoteEditor | None = None  # a note being typed in

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

    def selected_note_ids(self) -> list[str]:
        return [it.note_id for it in self.selectedItems() if isinstance(it, NoteItem)]

    def selected_group_ids(self) -> list[str]:
        return [it.group_id for it in self.selectedItems() if isinstance(it, GroupItem)]

    # ------------------------------------------------------------------ notes and groups
    def note_frame_changed(self, item: NoteItem) -> None:
        """A note was moved or resized by the mouse: one undo step."""
        note = self.document.annotation("note", item.note_id)
        if note is None:
            return
        frame = item.frame()
        if frame != (note.x, note.y, note.width, note.height):
            self.document.set_note_frame(item.note_id, *frame)

    def edit_note(self, note_id: str) -> None:
        """Type in a note (its Markdown source) until it loses the focus: one undo step."""
        item = self.note_items.get(note_id)
        if item is None:
            return
        self.finish_note_edit()
        item.editing = True
        item.update()

        def done(text: str, nid: str = note_id) -> None:
            editor, self.note_editor = self.note_editor, None
            note = self.note_items.get(nid)
            if note is not None:
                note.editing = False
                note.update()
            if editor is not None and shiboken6.isValid(editor) and editor.scene() is self:
                self.removeItem(editor)
            self.document.set_note_text(nid, text)
            self.document.end_merge()

        self.note_editor = NoteEditor(item, done)
        self.addItem(self.note_editor)
        self.note_editor.setFocus()

    def finish_note_edit(self) -> None:
        if self.note_editor is not None:
            self.note_editor.finish()

    def group_dragged(self, item: GroupItem) -> None:
        """A group's frame is being dragged: its member cards follow (the model moves on release)."""
        group = self.document.annotation("group", item.group_id)
        start = item.drag_from
        if group is None or start is None:
            return
        if item.members_from is None:
            item.members_from = {nid: (n.x, n.y) for nid in group.nodes if (n := self.document.node(nid)) is not None}
        d = item.pos() - start
        for nid, (x, y) in item.members_from.items():
            node_item = self.node_items.peek(nid)
            if node_item is not None:
                node_item.setPos(x + d.x(), y + d.y())
        if item.collapsed:
            self.annotations.update_edges_of_group(item.group_id)

    def group_drag_ended(self, item: GroupItem, delta: QPointF) -> None:
        """The drag of a group ended: its nodes move by ``delta`` in one undo step."""
        before, item.members_from = item.members_from, None
        if delta.x() or delta.y():
            self.document.move_group(item.group_id, delta.x(), delta.y())
        elif before:  # back where it was: nothing to record
            self.annotations.place_group(item.group_id)

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
        self.set_link_detail(zoom)

    def port_at(self, pos: QPointF) -> PortHit | None:
        r = self.port_hit_radius
        best: tuple[float, PortHit] | None = None
        for item in self.items(
            QRectF(pos.x() - r, pos.y() - r, 2 * r, 2 * r),
            Qt.ItemSelectionMode.IntersectsItemBoundingRect,
            Qt.SortOrder.DescendingOrder,
            QTransform(),
        ):
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
        for item in self.group_items.values():
            start = item.cancel_drag()
            before, item.members_from = item.members_from, None
            if start is not None:
                item.setPos(start)
            if before is not None:
                for nid, (x, y) in before.items():
                    node_item = self.node_items.peek(nid)
                    if node_item is not None:
                        node_item.setPos(x, y)

    # ------------------------------------------------------------------ Qt overrides
    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        editor = self.note_editor
        if editor is not None and not editor.sceneBoundingRect().contains(event.scenePos()):
            editor.finish()  # a click anywhere else ends the typing in a note
        left = event.button() == Qt.MouseButton.LeftButton
        if left and self.link_drag is None and gestures.press(self, event):
            event.accept()
            return
        super().mousePressEvent(event)
        if left and self.mouseGrabberItem() is not None:
            items = [it for it in self.selectedItems() if isinstance(it, NodeItem)]
            if items and isinstance(self.mouseGrabberItem(), (NodeItem, NoteItem)):
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
        notes = [it for it in self.selectedItems() if isinstance(it, NoteItem)]
        moved = [
            it
            for it in notes
            if (n := self.document.annotation("note", it.note_id)) is not None
            and it.frame() != (n.x, n.y, n.width, n.height)
        ]
        if tracker is not None and moved:
            self.document.undo_stack.beginMacro("Move")
        if tracker is not None:
            self.document.move_nodes(tracker.before, tracker.after())
        for it in moved:
            self.note_frame_changed(it)
        if tracker is not None and moved:
            self.document.undo_stack.endMacro()

    def mouseDoubleClickEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        item = self.node_item_at(event.scenePos())
        top = self.itemAt(event.scenePos(), QTransform())
        if isinstance(top, NoteEditor):
            super().mouseDoubleClickEvent(event)
            return
        if isinstance(top, NoteItem):
            self.edit_note(top.note_id)
            event.accept()
            return
        if isinstance(top, GroupItem):
            if top.collapsed:
                self.document.set_group_collapsed(top.group_id, False)
            else:
                self.group_rename_requested.emit(top.group_id)
            event.accept()
            return
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
        top = self.itemAt(event.scenePos(), QTransform())
        if isinstance(top, (NoteItem, GroupItem)):
            if not top.isSelected():
                self.clearSelection()
                top.setSelected(True)
            kind, ann_id = ("note", top.note_id) if isinstance(top, NoteItem) else ("group", top.group_id)
            self.annotation_menu_requested.emit(event.scenePos(), kind, ann_id)
            event.accept()
            return
        item = self.node_item_at(event.scenePos())
        if item is not None and not item.isSelected():
            self.select_nodes([item.node_id])
        self.context_menu_requested.emit(event.scenePos(), item.node_id if item else None)
        event.accept()
