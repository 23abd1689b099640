"""Canvas annotations on a projected scene: sticky notes and groups.

:class:`AnnotationLayer` keeps the note and group items by id, each node's groups and the nodes
that collapsed groups hide (behind their group's card), made from the document's annotations
and kept in step with its ``annotation_*`` signals. It places a group's frame around its
members' cards (from the scene's obstacle grid, so a big document's unmade cards count too),
hides and shows the members of a group that folds or unfolds, and has their links routed
again (``update_edges``: the scene's). A link with an end inside a collapsed group ends on the
group's card (``route_hidden``; the scene routes the others around the cards).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QTransform

from .items.group import GroupItem
from .items.note import NoteItem

__all__ = ["AnnotationLayer"]


class AnnotationLayer:
    """The notes and groups of one projected scene (see the module docstring)."""

    def __init__(self, scene: Any, update_edges: Callable[[str], None]) -> None:
        self.scene = scene
        self._update_edges = update_edges
        self.note_items: dict[str, NoteItem] = {}
        self.group_items: dict[str, GroupItem] = {}
        self.node_groups: dict[str, set[str]] = defaultdict(set)  # node id -> its groups
        self.hidden: dict[str, str] = {}  # a member of a collapsed group -> that group

    def clear(self) -> None:
        """Forget the items (the scene was cleared) and index the document's groups again."""
        self.note_items.clear()
        self.group_items.clear()
        self.index()

    def index(self) -> None:
        """Each node's groups, and which nodes collapsed groups hide (from the document)."""
        self.node_groups = defaultdict(set)
        self.hidden = {}
        for g in self.scene.document.annotations("group"):
            for nid in g.nodes:
                self.node_groups[nid].add(g.id)
                if g.collapsed:
                    self.hidden.setdefault(nid, g.id)

    def add_items(self) -> None:
        for note in self.scene.document.annotations("note"):
            self.add_note(note)
        for group in self.scene.document.annotations("group"):
            self.add_group(group)

    def add_note(self, note) -> None:
        item = NoteItem(note)
        self.note_items[note.id] = item
        self.scene.addItem(item)

    def add_group(self, group) -> None:
        item = GroupItem(group)
        self.group_items[group.id] = item
        self.scene.addItem(item)
        self.place_group(group.id)
        item.set_group(group)

    def place_group(self, group_id: str) -> None:
        group, item = self.scene.document.annotation("group", group_id), self.group_items.get(group_id)
        if group is None or item is None:
            return
        rects = [r for r in (self.scene.obstacles.rects.get(nid) for nid in group.nodes) if r is not None]
        bounds = None
        if rects:
            bounds = (
                min(r[0] for r in rects),
                min(r[1] for r in rects),
                max(r[2] for r in rects),
                max(r[3] for r in rects),
            )
        item.set_frame(bounds, len(rects))

    def place_groups_of(self, node_ids) -> None:
        """Fit the frames of the groups of ``node_ids`` (after they moved, grew or went)."""
        if not self.node_groups:
            return
        gids = {gid for nid in node_ids for gid in self.node_groups.get(nid, ())}
        for gid in gids:
            self.place_group(gid)
            if self.group_items.get(gid) is not None and self.group_items[gid].collapsed:
                self.update_edges_of_group(gid)

    def update_edges_of_group(self, group_id: str) -> None:
        group = self.scene.document.annotation("group", group_id)
        if group is not None:
            for nid in group.nodes:
                self._update_edges(nid)

    def regroup(self, touched: set[str]) -> None:
        """Groups changed: show or hide the nodes ``touched`` and route their links again."""
        self.index()
        for nid in touched:
            item = self.scene.node_items.peek(nid)
            if item is not None:
                hide = nid in self.hidden
                if hide and item.isSelected():
                    item.setSelected(False)
                item.setVisible(not hide)
        for gid in list(self.group_items):
            self.place_group(gid)
        for nid in touched:
            self._update_edges(nid)

    def added(self, kind: str, ann_id: str) -> None:
        ann = self.scene.document.annotation(kind, ann_id)
        if ann is None:
            return
        if kind == "note":
            self.add_note(ann)
            return
        self.index()
        self.add_group(ann)
        self.regroup(set(ann.nodes))

    def removed(self, kind: str, ann_id: str) -> None:
        items = self.note_items if kind == "note" else self.group_items
        item = items.pop(ann_id, None)
        if item is not None:
            self.scene.removeItem(item)
        if kind == "group":
            touched = {nid for nid, gids in self.node_groups.items() if ann_id in gids}
            self.regroup(touched)

    def changed(self, kind: str, ann_id: str) -> None:
        ann = self.scene.document.annotation(kind, ann_id)
        if ann is None:
            return
        if kind == "note":
            item = self.note_items.get(ann_id)
            if item is not None:
                item.set_note(ann)
            return
        before = {nid for nid, gids in self.node_groups.items() if ann_id in gids}
        item = self.group_items.get(ann_id)
        if item is not None:
            item.set_group(ann)
        self.regroup(before | set(ann.nodes))

    def group_item_at(self, pos: QPointF) -> GroupItem | None:
        for item in self.scene.items(
            QRectF(pos.x() - 2, pos.y() - 2, 4, 4),
            Qt.ItemSelectionMode.IntersectsItemShape,
            Qt.SortOrder.DescendingOrder,
            QTransform(),
        ):
            if isinstance(item, GroupItem):
                return item
        return None

    def route_hidden(self, key: tuple[str, str, str, str], edge: Any) -> bool:
        """Draw the link ``key`` if an end is inside a collapsed group: it ends on the group's
        card, or, inside one group, is not drawn. False when neither end is hidden."""
        hidden_src, hidden_tgt = self.hidden.get(key[0]), self.hidden.get(key[2])
        if hidden_src is None and hidden_tgt is None:
            return False
        edge.setVisible(hidden_src != hidden_tgt)
        if hidden_src == hidden_tgt:
            return True
        node_items = self.scene.node_items
        a = (
            self.group_items[hidden_src].port_scene_pos(True)
            if hidden_src in self.group_items
            else node_items.peek(key[0]).port_scene_pos(key[1])
        )
        b = (
            self.group_items[hidden_tgt].port_scene_pos(False)
            if hidden_tgt in self.group_items
            else node_items.peek(key[2]).port_scene_pos(key[3])
        )
        edge.set_ends(a, b, None)
        return True
