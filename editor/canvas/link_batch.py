"""Links zoomed far out: every link painted by the scene in a few calls, not one item each.

Below ``LINK_BATCH_LOD`` a link is a thin cosmetic line with no arrow (what its item drew there
anyway), so the scene hides the link items and paints their paths merged into one path per
colour from ``drawBackground``: a fitted 2,000-card graph paints its 3,000 links in four
``drawPath`` calls instead of 3,000 Python ``paint`` calls. The merged paths are made again
only when a link changed (:data:`EdgeItem.generation <.items.edge.EdgeItem>` or the scene's
link count moved).
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPen

from .items.edge import EdgeItem

__all__ = ["LINK_BATCH_LOD", "LinkBatch"]

LINK_BATCH_LOD = 0.35  # the scale below which EdgeItem.paint draws a hairline without arrow


class LinkBatch:
    """The merged link paths of a scene, by colour, made again when a link changed."""

    __slots__ = ("_key", "_paths")

    def __init__(self) -> None:
        self._key: tuple[int, int] | None = None
        self._paths: list[tuple[QColor, QPainterPath]] = []

    def paths(self, edges: Iterable[EdgeItem], count: int) -> list[tuple[QColor, QPainterPath]]:
        key = (EdgeItem.generation, count)
        if key != self._key:
            merged: dict[str, tuple[QColor, QPainterPath]] = {}
            for edge in edges:
                color = edge.color()
                entry = merged.get(color.name())
                if entry is None:
                    entry = merged[color.name()] = (color, QPainterPath())
                entry[1].addPath(edge.path())
            self._paths = list(merged.values())
            self._key = key
        return self._paths

    def draw(self, painter: QPainter, edges: Iterable[EdgeItem], count: int) -> None:
        aa = painter.testRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)  # hairlines: the fast path
        painter.setBrush(Qt.BrushStyle.NoBrush)
        for color, path in self.paths(edges, count):
            painter.setPen(QPen(color, 0))
            painter.drawPath(path)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, aa)
