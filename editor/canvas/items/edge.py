"""EdgeItem: one link, a cubic bezier between two port positions, or, when that curve
would cross another card, the orthogonal route found by :mod:`..routing` drawn with
rounded corners.

The path, bounding rect and hit shape are rebuilt only when an endpoint moves
(:meth:`set_ends`), never in ``paint()``; the item has no children and no cache.
Execution links run left to right with an arrow; subagent links run top-down, dashed
and in their own colour.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPainterPath, QPainterPathStroker, QPen, QPolygonF
from PySide6.QtWidgets import QGraphicsItem, QStyleOptionGraphicsItem, QWidget

from ..routing import CORNER_R
from ..style import EDGE, EDGE_SUB, ERROR_HANDLE, ERROR_LINK, RUN_LINK, SELECT, pen


def bezier(a: QPointF, b: QPointF, vertical: bool) -> QPainterPath:
    path = QPainterPath(a)
    if vertical:
        dy = max(40.0, abs(b.y() - a.y()) * 0.5)
        path.cubicTo(QPointF(a.x(), a.y() + dy), QPointF(b.x(), b.y() - dy), b)
    else:
        dx = max(50.0, abs(b.x() - a.x()) * 0.5)
        path.cubicTo(QPointF(a.x() + dx, a.y()), QPointF(b.x() - dx, b.y()), b)
    return path


def rounded_polyline(points: list[tuple[float, float]], radius: float = CORNER_R) -> QPainterPath:
    """A path through ``points`` whose bends are rounded (radius capped by the segment lengths)."""
    path = QPainterPath(QPointF(*points[0]))
    for i in range(1, len(points) - 1):
        (px, py), (cx, cy), (nx, ny) = points[i - 1], points[i], points[i + 1]
        l1 = math.hypot(cx - px, cy - py)
        l2 = math.hypot(nx - cx, ny - cy)
        r = min(radius, l1 / 2, l2 / 2)
        if r < 0.5:
            path.lineTo(cx, cy)
            continue
        path.lineTo(cx - (cx - px) / l1 * r, cy - (cy - py) / l1 * r)
        path.quadTo(QPointF(cx, cy), QPointF(cx + (nx - cx) / l2 * r, cy + (ny - cy) / l2 * r))
    path.lineTo(QPointF(*points[-1]))
    return path


_SELECTABLE = QGraphicsItem.GraphicsItemFlag.ItemIsSelectable


class EdgeItem(QGraphicsItem):
    #: Goes up whenever any link's path or colour changes (the scene's merged far-out paths,
    #: :mod:`..link_batch`, are made again then).
    generation = 0

    def __init__(self, key: tuple[str, str, str, str], subagent: bool) -> None:
        super().__init__()
        self.key = key
        self.subagent = subagent
        self.error_link = key[1] == ERROR_HANDLE  # drawn red and dashed: followed only when the source fails
        self._path = QPainterPath()
        self._shape: QPainterPath | None = None
        self._rect = QRectF()
        self._arrow = QPolygonF()
        self._has_arrow = False
        self._style: tuple[bool, bool, QPen, QPen, QBrush] | None = None  # see _look
        self.followed = False  # the last run went along this link (display only)
        self.routed = False  # drawn around cards (see set_ends)
        self.setFlags(_SELECTABLE)
        self.setZValue(-1.0)  # (hover events: off, the default)

    def set_ends(self, a: QPointF, b: QPointF, bends: list[tuple[float, float]] | None = None) -> None:
        """Ends moved: the default curve, or the routed polyline ``bends`` (from ``a`` to ``b``)."""
        self.prepareGeometryChange()
        self.routed = bends is not None
        self._path = bezier(a, b, self.subagent) if bends is None else rounded_polyline(bends)
        self._shape = None
        if self.subagent:
            self._arrow = QPolygonF()
        else:
            # The tip stops at the port's rim so the port circle does not hide it.
            self._arrow = QPolygonF(
                [QPointF(b.x() - 16, b.y() - 5), QPointF(b.x() - 7, b.y()), QPointF(b.x() - 16, b.y() + 5)]
            )
        self._has_arrow = not self._arrow.isEmpty()
        self._rect = self._path.controlPointRect().adjusted(-8, -8, 8, 8)
        EdgeItem.generation += 1

    def set_followed(self, followed: bool) -> None:
        if followed != self.followed:
            self.followed = followed
            EdgeItem.generation += 1
            self.setZValue(-0.5 if followed else -1.0)
            self.update()

    def boundingRect(self) -> QRectF:
        return self._rect

    def shape(self) -> QPainterPath:
        if self._shape is None:  # built on first hit test only: most links are never clicked
            stroker = QPainterPathStroker()
            stroker.setWidth(12.0)
            self._shape = stroker.createStroke(self._path)
        return self._shape

    def path(self) -> QPainterPath:
        return self._path

    def color(self) -> QColor:
        if self.isSelected():
            return SELECT
        if self.followed and not self.error_link:
            return RUN_LINK
        return ERROR_LINK if self.error_link else EDGE_SUB if self.subagent else EDGE

    def _look(self, selected: bool) -> tuple[bool, bool, QPen, QPen, QBrush]:
        """(selected, followed, near pen, far pen, arrow brush): made again only when the
        selection or the run's mark changed, not at every paint (a pan repaints every link)."""
        look = self._style
        if look is None or look[0] != selected or look[1] != self.followed:
            color = self.color()
            width = 3.2 if selected or self.followed else 2.0
            near = pen(color.name(), width, self.subagent or (self.error_link and not self.followed))
            look = self._style = (selected, self.followed, near, pen(color.name(), 0.0), QBrush(color))
        return look

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        selected = self.isSelected()
        look = self._look(selected)
        if painter.worldTransform().m11() < 0.35 and not selected:
            # Zoomed far out: a thin cosmetic line without antialiasing is the raster engine's fast path.
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.setPen(look[3])
            painter.drawPath(self._path)
            return
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)  # the view does not save painter state
        painter.setPen(look[2])
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.drawPath(self._path)
        if self._has_arrow:
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(look[4])
            painter.drawPolygon(self._arrow)


class DragEdgeItem(QGraphicsItem):
    """The live bezier shown while a link is being dragged."""

    def __init__(self, subagent: bool) -> None:
        super().__init__()
        self.subagent = subagent
        self.ok = True
        self._path = QPainterPath()
        self._rect = QRectF()
        self.setZValue(10.0)

    def set_ends(self, a: QPointF, b: QPointF, ok: bool) -> None:
        self.prepareGeometryChange()
        self.ok = ok
        self._path = bezier(a, b, self.subagent)
        self._rect = self._path.controlPointRect().adjusted(-6, -6, 6, 6)

    def boundingRect(self) -> QRectF:
        return self._rect

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        color = (EDGE_SUB if self.subagent else SELECT) if self.ok else EDGE
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setBrush(Qt.BrushStyle.NoBrush)  # painter state is not saved between items
        painter.setPen(pen(color.name(), 2.4, True))
        painter.drawPath(self._path)
