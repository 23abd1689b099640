"""What the canvas scene paints behind its items: the dot grid, and for a big document the
overview (cards as rectangles, links as straight lines) and the links to cards with no item.

Drawn from the exposed rectangle only, with a few batched calls per paint: the grid as one
fill with a cached tile (:class:`_GridTile`, made again only when the zoom changes), the overview from geometry made once per change of the model
(:class:`~editor.canvas.projection.Overview`). Level of detail follows the painter's scale:
a coarser grid below 0.6, none below 0.15.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from PySide6.QtCore import QLineF, QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QImage, QPainter, QPen, QTransform

from .projection import Overview
from .routing import ObstacleGrid
from .style import CANVAS_BG, GRID, GRID_DOT, GRID_DOT_MAJOR, KIND_COLOR

__all__ = ["draw_grid", "draw_overview", "draw_loose_links", "EDGE_OVERVIEW", "OVERVIEW_LINKS"]

EDGE_OVERVIEW = QColor("#5c6373")  # links in the overview of a big document
OVERVIEW_LINKS = 40_000  # more cards than this in view: the overview leaves the links out (a grey fog)


class _GridTile:
    """The dot grid as a tiled brush: one small pixmap of 5 x 5 grid cells, drawn once per zoom
    level, filled over the exposed rectangle in one call (no per-frame loop over dots)."""

    __slots__ = ("key", "brush")

    def __init__(self) -> None:
        self.key: tuple[float, float, float] | None = None
        self.brush = QBrush()

    def brush_for(self, step: float, lod: float, dpr: float) -> QBrush:
        key = (step, round(lod, 4), dpr)
        if key != self.key:
            self.key = key
            self.brush = self._make(step, lod, dpr)
        return self.brush

    @staticmethod
    def _make(step: float, lod: float, dpr: float) -> QBrush:
        span = step * 5  # scene units the tile covers, each way
        px = max(5, round(span * lod * dpr))  # device pixels (whole: the tiles must not drift)
        # Opaque, the canvas's colour under the dots: the fill is then a copy of the tile, not a
        # blend over a first fill of the background (two passes over every pixel of a frame).
        image = QImage(px, px, QImage.Format.Format_RGB32)
        image.fill(CANVAS_BG)
        painter = QPainter(image)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        scale = px / span  # device pixels per scene unit in the tile
        size = max(1.5, 1.5 / max(lod, 0.01)) * scale  # as the dots were drawn in scene units
        coarse = step > GRID
        for row in range(5):
            for col in range(5):
                major = coarse or (row == 0 and col == 0)
                painter.setPen(QPen(GRID_DOT_MAJOR if major else GRID_DOT, size))
                painter.drawPoint(QPointF(col * step * scale, row * step * scale))
        # The dots at the tile's far edges belong to the next tile: draw their halves here too.
        for row in range(6):
            for col in range(6):
                if row < 5 and col < 5:
                    continue
                major = coarse or (row % 5 == 0 and col % 5 == 0)
                painter.setPen(QPen(GRID_DOT_MAJOR if major else GRID_DOT, size))
                painter.drawPoint(QPointF(col * step * scale, row * step * scale))
        painter.end()
        brush = QBrush(image)
        brush.setTransform(QTransform.fromScale(1 / scale, 1 / scale))
        return brush


_TILE = _GridTile()


def draw_grid(painter: QPainter, rect: QRectF) -> None:
    """The canvas's background: dots every ``GRID`` (every fifth one brighter) on
    ``CANVAS_BG``; every fifth dot only when zoomed out; none below 0.15. One opaque textured
    fill, aligned with the scene's origin (a plain fill when there are no dots)."""
    lod = painter.worldTransform().m11()
    if lod < 0.15:
        painter.fillRect(rect, CANVAS_BG)
        return
    step = GRID if lod >= 0.6 else GRID * 5
    device = painter.device()
    dpr = device.devicePixelRatioF() if device is not None else 1.0
    painter.fillRect(rect, _TILE.brush_for(step, lod, dpr))


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
