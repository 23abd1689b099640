"""Pointer gestures on the canvas that become document requests.

* :class:`LinkDrag` - dragging a new link from a source handle, or an existing link picked up
  by its target end. A :class:`engine.GraphIndex` is built once at the start so every
  ``check_connection`` while hovering is O(1); targets that would be refused are dimmed and
  the hovered one (a Start node too) shows the engine's reason, as does a refused drop. Releasing on nothing cancels (or, for a picked
  up link, deletes it).
* :class:`MoveTracker` - positions recorded on press, one move command pushed on release,
  restored on Esc.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QPointF

from engine import ConnectionCheck, GraphIndex, check_connection

from .items.edge import DragEdgeItem

if TYPE_CHECKING:
    from ..document import ConnKey
    from .items.node import NodeItem
    from .scene import CanvasScene


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
