"""Pointer gestures on the canvas that become document requests.

* :class:`LinkDrag` - dragging a new link from a source handle, or an existing link picked up
  by its target end. A :class:`engine.GraphIndex` is built once at the start so every
  ``check_connection`` while hovering is O(1); targets that would be refused are dimmed and
  the hovered one (a Start node too) shows the engine's reason, as does a refused drop. Releasing on nothing cancels (or, for a picked
  up link, deletes it).
* :class:`MoveTracker` - positions recorded on press, one move command pushed on release,
  restored on Esc.
* :func:`press`, :func:`drag_to` and :func:`release` - what the scene's mouse handlers do
  first: a click on a card's fold chevron, a press on a handle (a new link from an output,
  the latest link picked up from an input), and following or ending a link drag (a refusal
  shows its reason as a tooltip and in the status bar; a click that did not travel makes no
  link).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QApplication, QGraphicsSceneMouseEvent, QToolTip

from engine import ConnectionCheck, GraphIndex, check_connection

from .items.edge import DragEdgeItem

if TYPE_CHECKING:
    from ..document import ConnKey
    from .items.node import NodeItem


class CanvasScene(Protocol):
    """What the gestures use of the canvas scene (``scene.CanvasScene`` is the one): a protocol,
    so that this module, which the scene imports, does not import the scene back."""

    document: Any
    node_items: dict[str, NodeItem]
    edge_items: dict[Any, Any]
    node_edges: dict[str, Any]
    link_drag: LinkDrag | None
    status_message: Any  # (Qt signals)
    link_refused: Any
    link_dropped_on_canvas: Any

    def addItem(self, item: Any) -> None: ...
    def removeItem(self, item: Any) -> None: ...
    def node_item_at(self, pos: QPointF) -> NodeItem | None: ...
    def port_at(self, pos: QPointF) -> Any: ...


class LinkDrag:
    def __init__(self, scene: CanvasScene, source: str, handle: str, picked: ConnKey | None = None) -> None:
        self.scene = scene
        self.source = source
        self.handle = handle
        self.picked = picked
        doc = scene.document
        wf = doc.workflow
        if picked is not None:
            # Judge the new ends as if the picked-up link were already gone.
            i = doc.connection_index(picked)
            wf = wf.model_copy(update={"connections": [c for j, c in enumerate(wf.connections) if j != i]})
        self.index = GraphIndex(wf)
        self.verdicts: dict[str, ConnectionCheck] = {}
        for nid, item in scene.node_items.items():
            verdict = check_connection(self.index, source, handle, nid, "input")
            self.verdicts[nid] = verdict
            if item.layout.input_pos is None or not verdict.ok:
                item.set_dimmed(True)
        self.item = DragEdgeItem(handle == "subagent")
        scene.addItem(self.item)
        if picked is not None and picked in scene.edge_items:
            scene.edge_items[picked].setVisible(False)
        self.start = scene.node_items[source].port_scene_pos(handle)
        self.target: str | None = None
        self.last_reason = ""
        self.dragged = False  # the pointer travelled past the drag distance (set by the scene)
        self.item.set_ends(self.start, self.start, True)

    def verdict(self, target: str) -> ConnectionCheck:
        verdict = self.verdicts.get(target)  # not `or`: a refused ConnectionCheck is falsy
        return verdict if verdict is not None else ConnectionCheck(False, "Unknown node.")

    def move(self, pos: QPointF) -> str:
        """Follow the pointer; returns the refusal reason under it ("" when none)."""
        # Every node is a drop target, a Start node too: a refused one says why (the engine's
        # reason), where it used to be only dimmed.
        target_item = self.scene.node_item_at(pos)
        new_target = target_item.node_id if target_item is not None else None
        if new_target != self.target:
            if self.target in self.scene.node_items:
                self.scene.node_items[self.target].set_target_state(None)
            self.target = new_target
        reason = ""
        end = pos
        ok = True
        if target_item is not None:
            verdict = self.verdict(target_item.node_id)
            target_item.set_target_state("ok" if verdict.ok else "refused")
            if verdict.ok:
                end = target_item.port_scene_pos("input")
            else:
                reason = verdict.reason
                ok = False
        self.item.set_ends(self.start, end, ok)
        self.last_reason = reason
        return reason

    def finish(self, pos: QPointF) -> ConnectionCheck | None:
        """Apply the gesture; returns the verdict for the target (None when dropped on nothing)."""
        self.move(pos)
        doc = self.scene.document
        result: ConnectionCheck | None = None
        try:
            if self.target is not None:
                result = self.verdict(self.target)
                if result.ok:
                    if self.picked is not None:
                        result = doc.reconnect(self.picked, self.source, self.handle, self.target, "input")
                    else:
                        result = doc.connect(self.source, self.handle, self.target, "input")
            elif self.picked is not None:
                doc.delete((), [self.picked])
        finally:
            self.cleanup()
        return result

    def cleanup(self) -> None:
        scene = self.scene
        for item in scene.node_items.values():
            item.set_dimmed(False)
            item.set_target_state(None)
        if self.item.scene() is scene:
            scene.removeItem(self.item)
        if self.picked is not None and self.picked in scene.edge_items:
            scene.edge_items[self.picked].setVisible(True)


class MoveTracker:
    def __init__(self, items: list[NodeItem]) -> None:
        self.before = {it.node_id: (it.pos().x(), it.pos().y()) for it in items}
        self.items = items

    def after(self) -> dict[str, tuple[float, float]]:
        return {it.node_id: (it.pos().x(), it.pos().y()) for it in self.items if it.scene() is not None}

    def restore(self) -> None:
        for it in self.items:
            x, y = self.before[it.node_id]
            it.setPos(x, y)


def press(scene: CanvasScene, event: QGraphicsSceneMouseEvent) -> bool:
    """A left press on a card's chevron (fold it) or on a handle (start a link drag); False
    when the press is the scene's usual (select, move)."""
    pos = event.scenePos()
    item = scene.node_item_at(pos)
    if item is not None and item.chevron_rect().contains(item.mapFromScene(pos)):
        node = scene.document.node(item.node_id)
        if node is not None:
            scene.document.set_collapsed([item.node_id], not bool(node.data.collapsed))
        return True
    hit = scene.port_at(pos)
    if hit is None:
        return False
    if hit.is_output:
        scene.link_drag = LinkDrag(scene, hit.node_id, hit.handle)
        return True
    incoming = [k for k in scene.node_edges.get(hit.node_id, ()) if k[2] == hit.node_id]
    if not incoming:
        return False
    # Pick up the most recently added link ending here and carry it.
    order = {c.key(): i for i, c in enumerate(scene.document.workflow.connections)}
    picked = max(incoming, key=lambda k: order.get(k, -1))
    scene.link_drag = LinkDrag(scene, picked[0], picked[1], picked)
    return True


def drag_to(scene: CanvasScene, drag: LinkDrag, event: QGraphicsSceneMouseEvent) -> None:
    """Follow the pointer with the link being dragged; a refused target says why."""
    if not drag.dragged:
        travel = event.screenPos() - event.buttonDownScreenPos(Qt.MouseButton.LeftButton)
        drag.dragged = travel.manhattanLength() >= QApplication.startDragDistance()
    shown = drag.last_reason
    reason = drag.move(event.scenePos())
    if reason:
        if reason != shown:
            scene.status_message.emit(reason)
        if event.widget() is not None:
            QToolTip.showText(event.screenPos(), reason, event.widget())
    else:
        if shown:
            scene.status_message.emit("")  # off the refused target: its reason no longer applies
        QToolTip.hideText()


def release(scene: CanvasScene, drag: LinkDrag, event: QGraphicsSceneMouseEvent) -> None:
    """End a link drag: make (or move, or delete) the link, or say why it was refused."""
    if not drag.dragged:
        # A click on a port is not a link: released where it was pressed, over the
        # port's own node, it used to link that node to itself (or re-make the link).
        drag.cleanup()
        QToolTip.hideText()
        return
    result = drag.finish(event.scenePos())
    QToolTip.hideText()
    if result is not None and not result.ok:
        scene.status_message.emit(f"Link not created: {result.reason}")
        scene.link_refused.emit(result.reason)
    else:
        scene.status_message.emit("")  # a link made (or a drag let go): no stale refusal stays
    if drag.target is None and drag.picked is None:  # (a picked-up link let go there is deleted)
        scene.link_dropped_on_canvas.emit(drag.source, drag.handle, event.scenePos())
