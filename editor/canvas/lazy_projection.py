"""LazyProjection: how :class:`~editor.canvas.projected_scene.ProjectedScene` makes items on
demand for a big document (its "lazy" mode), and a document's links when they were left for
after the first paint (see :mod:`.pending_routes`).

A part of the scene kept apart to keep that module readable (as :mod:`.shown_state` is): it
works on the scene's ``node_items`` / ``edge_items`` (:mod:`.lazy_items` calls its makers on
a look-up), its obstacle grid and the state kept for items made later.
"""

from __future__ import annotations

import time

from PySide6.QtCore import QRectF

from engine import Node

from .items.edge import EdgeItem
from .items.node import NodeItem
from .style import node_rect

__all__ = ["LazyProjection"]


class LazyProjection:
    """Items made for what is in view (big documents), and links made when first looked up."""

    def _model_rect(self, node: Node) -> tuple[float, float, float, float]:
        """A card's rectangle without laying it out: its kind's size (the first card of each
        kind, look and fold is measured); the exact one replaces it when the item is made."""
        sub = self._is_sub(node)
        key = (node.type, sub, bool(node.data.collapsed))
        size = self._sizes.get(key)
        if size is None:
            r = node_rect(node, sub)
            size = self._sizes[key] = (r.width(), r.height())
        return node.x, node.y, node.x + size[0], node.y + size[1]

    def _make_node_item(self, node_id, links: bool = True) -> NodeItem | None:
        """``node_items[id]`` for a node with no item yet: make it (lazy mode), with its links
        to cards that have items (the others are drawn from the model, see drawBackground)."""
        if not isinstance(node_id, str) or not self.lazy or self._building:
            return None
        node = self.document.node(node_id)
        if node is None:
            return None
        item = self._add_node_item(node)
        item.set_connected(self._connected_handles(node_id))
        if links:
            self._make_links(node_id)
        return item

    def _make_links(self, node_id: str) -> None:
        has = self.node_items.has
        for key in list(self._links.get(node_id, ())):
            if not self.edge_items.has(key) and has(key[0]) and has(key[2]):
                self._add_edge_item(key)

    def _make_edge_item(self, key) -> EdgeItem | None:
        if not self.lazy and not self._building and isinstance(key, tuple) and key in self.pending_routes:
            # a link of a big document not made yet (see pending_routes): made now, with its curve
            self._add_edge_item(key, route=False)
            return self.edge_items.peek(key)
        if not self.lazy or self._building or not isinstance(key, tuple) or key not in self._links.get(key[0], ()):
            return None
        self._add_edge_item(key)
        return self.edge_items.peek(key)

    def _ensure_node_item(self, node_id: str) -> NodeItem | None:
        """The item of ``node_id``, made (without its other links) when missing in lazy mode."""
        item = self.node_items.peek(node_id)
        if item is None and self.lazy:
            node = self.document.node(node_id)
            if node is not None:
                item = self._add_node_item(node)
                item.set_connected(self._connected_handles(node_id))
        return item

    def realize_rect(self, rect: QRectF, visible: QRectF | None = None, budget_s: float | None = None) -> bool:
        """Make the items of the cards in ``rect`` (and their links), unless more than
        ``REALIZE_CAP`` cards are there: then the overview paints them. True when items were made.

        With ``budget_s`` (a frame while scrolling), the cards in ``visible`` are made at once
        and the others in ``rect`` (the margin around the view) only for that long; what is
        left is counted in ``realize_left`` for the view to make on its next turns."""
        self.realize_left = 0
        if not self.lazy:
            return False
        r = (rect.left(), rect.top(), rect.right(), rect.bottom())
        hits = self.obstacles.query(r, limit=self.REALIZE_CAP)
        if hits is None:
            if not self.overview:
                self.overview = True
                self.update()
            return False
        was = self.overview
        self.overview = False
        made = [nid for nid in hits if not self.node_items.has(nid)]
        if budget_s is not None and visible is not None and made:
            vx0, vy0, vx1, vy1 = visible.left(), visible.top(), visible.right(), visible.bottom()
            now = [n for n in made if (c := hits[n])[0] < vx1 and c[2] > vx0 and c[1] < vy1 and c[3] > vy0]
            self._make_cards(now)
            end = time.perf_counter() + budget_s
            later = [n for n in made if not self.node_items.has(n)]
            for i, nid in enumerate(later):
                if time.perf_counter() > end:
                    self.realize_left = len(later) - i
                    break
                self._make_cards([nid])
        else:
            self._make_cards(made)
        if was or made:
            self.update()
        return bool(made)

    def _make_cards(self, ids: list[str]) -> None:
        for nid in ids:  # cards first, then the links between cards with items
            self._make_node_item(nid, links=False)
        for nid in ids:
            self._make_links(nid)

    def _apply_kept_state(self, item: NodeItem) -> None:
        nid = item.node_id
        if nid in self._issues:
            item.set_issues(*self._issues[nid])
        if nid in self._found:
            item.set_found(True)
        if self._all_selected:
            item.setSelected(True)
        self._prepare_item(item)

    def _prepare_item(self, item: NodeItem) -> None:
        """Hook for a scene that changes what items can do (a read-only run view)."""
