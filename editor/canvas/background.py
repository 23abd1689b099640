"""What the canvas scene paints behind its items: the dot grid, and for a big document the
overview (cards as rectangles, links as straight lines) and the links to cards with no item.

Drawn from the exposed rectangle only, with a few batched calls per paint: the grid's dots
in two ``drawPoints`` calls, the overview from geometry made once per change of the model
(:class:`~editor.canvas.projection.Overview`). Level of detail follows the painter's scale:
a coarser grid below 0.6, none below 0.15.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPen

from .projection import Overview
from .routing import ObstacleGrid
from .style import GRID, GRID_DOT, GRID_DOT_MAJOR, KIND_COLOR

__all__ = ["draw_grid", "draw_overview", "draw_loose_links", "EDGE_OVERVIEW", "OVERVIEW_LINKS"]

EDGE_OVERVIEW = QColor("#5c6373")  # links in the overview of a big document
OVERVIEW_LINKS = 40_000  # more cards than this in view: the overview leaves the links out (a grey fog)


def draw_grid(painter: QPainter, rect: QRectF) -> None:
    """Dots every ``GRID`` (every fifth one brighter); every fifth dot only when zoomed out."""
    lod = painter.worldTransform().m11()
    step = GRID if lod >= 0.6 else GRID * 5
    if lod < 0.15:
        return
    left = int(rect.left() // step) * step
    top = int(rect.top() // step) * step
    points_minor = []
    points_major = []
    y = top
    while y < rect.bottom():
        x = left
        major_row = round(y / GRID) % 5 == 0
        while x < rect.right():
            (points_major if major_row and round(x / GRID) % 5 == 0 else points_minor).append(QPointF(x, y))
            x += step
        y += step
    size = max(1.5, 1.5 / max(lod, 0.01))
    p = QPen(GRID_DOT, size)
    painter.setPen(p)
    painter.drawPoints(points_minor)
    p.setColor(GRID_DOT_MAJOR)
    painter.setPen(p)
    painter.drawPoints(points_major)


def draw_overview(painter: QPainter, rect: QRectF, geom: Overview, bounds: QRectF, cards: int) -> None:
    """A big document zoomed out: cards as rectangles in their kind's colour and links as
    straight lines (left out when about more than ``OVERVIEW_LINKS`` of the ``cards`` within
    ``bounds`` are in view); cards with an item paint themselves on top."""
    shown = bounds.intersected(rect)
    area = max(bounds.width() * bounds.height(), 1.0)
    in_view = cards * (shown.width() * shown.height()) / area  # about
    if in_view <= OVERVIEW_LINKS and geom.lines:  # (made on first use)
        aa = painter.testRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)  # hairlines: 4x cheaper
        painter.setPen(QPen(EDGE_OVERVIEW, 0))
        painter.drawLines(geom.lines)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, aa)
    painter.setPen(Qt.PenStyle.NoPen)
    for kind, rects in geom.rects.items():
        painter.setBrush(KIND_COLOR[kind])
        painter.drawRects(rects)
    painter.setBrush(Qt.BrushStyle.NoBrush)


def draw_loose_links(
    painter: QPainter,
    rect: QRectF,
    grid: ObstacleGrid,
    limit: int,
    links_of: Callable[[str], Iterable[tuple]],
    has_item: Callable[[tuple], bool],
) -> None:
    """Links from a card in ``rect`` to a card without an item (off screen), as straight
    lines from the model: they get an item when the other card is made."""
    hits = grid.query((rect.left(), rect.top(), rect.right(), rect.bottom()), limit=limit)
    if not hits:
        return
    rects = grid.rects
    lines = []
    for nid in hits:
        for key in links_of(nid):
            if not has_item(key):
                a, b = rects.get(key[0]), rects.get(key[2])
                if a is not None and b is not None:
                    lines.append(QLineF(a[2], (a[1] + a[3]) / 2, b[0], (b[1] + b[3]) / 2))
    if lines:
        painter.setPen(QPen(EDGE_OVERVIEW, 0))
        painter.drawLines(lines)
