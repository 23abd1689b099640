"""Ports are not items: the NodeItem paints them and hit-tests them with these helpers, so a
node with many handles is still one item (STYLE.md's performance rule)."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QBrush, QColor, QPainter

from ..style import PORT_FILL, PORT_HIT_R, PORT_R, pen


@dataclass(frozen=True, slots=True)
class PortHit:
    """A handle under the pointer: ``handle`` is ``"input"`` for the target side."""

    node_id: str
    handle: str
    is_output: bool


def hit(pos: QPointF, port: QPointF, radius: float = PORT_HIT_R) -> bool:
    d = pos - port
    return d.x() * d.x() + d.y() * d.y() <= radius * radius


def paint_port(painter: QPainter, at: QPointF, color: QColor, connected: bool, highlighted: bool = False) -> None:
    r = PORT_R + (1.5 if highlighted else 0.0)
    painter.setPen(pen(color.name(), 2.0))
    painter.setBrush(QBrush(color if connected or highlighted else PORT_FILL))
    painter.drawEllipse(QRectF(at.x() - r, at.y() - r, 2 * r, 2 * r))
