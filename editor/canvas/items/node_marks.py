"""What a node card paints beside its body and text: its kind's glyph and a run's marks.

* :func:`kind_glyph`: a kind's icon name as a small path (no font dependency);
* :func:`paint_run_mark`: the disc on the card's top-left corner (done, cached, failed, waiting);
* :func:`paint_run_badge`: the pill above the title ("attempt 2 of 4", "iteration 3");
* :func:`paint_preview`: under the card, the duration and tokens, then the output's first lines
  (``PREVIEW_GAP``, ``STATS_H`` and ``PREVIEW_LINE_H`` size it: the card's bounds include it).

Plain functions of what they paint: :class:`~.node.NodeItem` holds the state and calls them.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPainterPath, QPolygonF

from ..style import (
    BADGE_JOIN,
    BADGE_LOOP,
    BADGE_RETRY,
    NODE_BG,
    NODE_BORDER,
    NODE_MUTED,
    NODE_TEXT,
    NodeLayout,
    font,
    metrics,
    pen,
)

__all__ = [
    "kind_glyph",
    "paint_run_mark",
    "paint_run_badge",
    "paint_preview",
    "PREVIEW_GAP",
    "STATS_H",
    "PREVIEW_LINE_H",
    "STROKED_GLYPHS",
]

# The run's preview under a card: its stats pill, then the output's lines in a box.
PREVIEW_GAP = 6.0
STATS_H = 18.0
PREVIEW_LINE_H = 15.0
_STATS_BG = QColor("#39404d")
_PREVIEW_BG = QColor("#1d2027")

# Glyphs drawn with a stroke rather than a fill.
STROKED_GLYPHS = {"approval"}


def kind_glyph(icon: str, cx: float, cy: float) -> QPainterPath:
    """A small glyph for a kind's icon name, drawn as a path (no font dependency)."""
    kind = icon
    p = QPainterPath()
    if kind == "start":
        p.addPolygon(QPolygonF([QPointF(cx - 4, cy - 6), QPointF(cx + 6, cy), QPointF(cx - 4, cy + 6)]))
        p.closeSubpath()
    elif kind == "if":
        p.addPolygon(QPolygonF([QPointF(cx, cy - 7), QPointF(cx + 7, cy), QPointF(cx, cy + 7), QPointF(cx - 7, cy)]))
        p.closeSubpath()
    elif kind == "approval":
        p.moveTo(cx - 6, cy)
        p.lineTo(cx - 2, cy + 5)
        p.lineTo(cx + 6, cy - 5)
    elif kind == "subagent":
        p.addEllipse(QPointF(cx, cy - 3), 3.2, 3.2)
        p.addEllipse(QPointF(cx - 5, cy + 4), 2.6, 2.6)
        p.addEllipse(QPointF(cx + 5, cy + 4), 2.6, 2.6)
    elif kind != "agent":  # an icon name without a glyph (a plug-in kind): a rounded square
        p.addRoundedRect(QRectF(cx - 6, cy - 6, 12, 12), 3, 3)
    else:  # agent: a four-pointed spark
        p.moveTo(cx, cy - 7)
        p.quadTo(cx + 1.5, cy - 1.5, cx + 7, cy)
        p.quadTo(cx + 1.5, cy + 1.5, cx, cy + 7)
        p.quadTo(cx - 1.5, cy + 1.5, cx - 7, cy)
        p.quadTo(cx - 1.5, cy - 1.5, cx, cy - 7)
    return p


def paint_preview(painter: QPainter, lay: NodeLayout, stats: str, lines: list[str]) -> None:
    """Under the card: a pill with the duration and tokens, then the output's first lines."""
    y = lay.height + PREVIEW_GAP
    painter.setFont(font("small"))
    if stats:
        w = min(metrics("small").horizontalAdvance(stats) + 14, lay.width)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QBrush(_STATS_BG))
        painter.drawRoundedRect(QRectF(0, y, w, STATS_H - 2), 7, 7)
        painter.setPen(pen(NODE_TEXT.name()))
        painter.drawText(QRectF(0, y, w, STATS_H - 2), Qt.AlignmentFlag.AlignCenter, stats)
        y += STATS_H
    if lines:
        box = QRectF(0, y, lay.width, PREVIEW_LINE_H * len(lines) + 6)
        painter.setPen(pen(NODE_BORDER.name(), 1.0))
        painter.setBrush(QBrush(_PREVIEW_BG))
        painter.drawRoundedRect(box, 4, 4)
        painter.setPen(pen(NODE_MUTED.name()))
        for i, line in enumerate(lines):
            painter.drawText(
                QRectF(6, y + 3 + i * PREVIEW_LINE_H, lay.width - 12, PREVIEW_LINE_H),
                Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
                line,
            )


def paint_run_badge(painter: QPainter, card_width: float, text: str, kind: str, scale: float = 1.0) -> None:
    """A pill above the title, left of the validation badge: "attempt 2 of 4", "iteration 3";
    ``scale`` keeps it readable when zoomed out (it grows up from the title's top edge)."""
    fm = metrics("badge")
    w = min(fm.horizontalAdvance(text) + 14, (card_width - 40) / scale)
    painter.save()
    painter.translate(14, -3)
    painter.scale(scale, scale)
    r = QRectF(0, -15, w, 15)
    painter.setPen(pen(NODE_BG.name(), 1.5))
    painter.setBrush(QBrush({"loop": BADGE_LOOP, "join": BADGE_JOIN}.get(kind, BADGE_RETRY)))
    painter.drawRoundedRect(r, 7.5, 7.5)
    painter.setFont(font("badge"))
    painter.setPen(pen("#ffffff"))
    painter.drawText(r, Qt.AlignmentFlag.AlignCenter, fm.elidedText(text, Qt.TextElideMode.ElideRight, w - 10))
    painter.restore()


def paint_run_mark(painter: QPainter, state: str | None, color: QColor, scale: float = 1.0) -> None:
    """A disc on the top-left corner (the validation badge has the top-right one):
    check (done), cross (failed), pause (waiting); ``scale`` grows it when zoomed out."""
    c = QPointF(1.0, 1.0)
    painter.save()
    painter.translate(c)
    painter.scale(scale, scale)
    painter.translate(-c)
    painter.setPen(pen(NODE_BG.name(), 1.5))
    painter.setBrush(QBrush(color))
    painter.drawEllipse(c, 7.5, 7.5)
    mark = QPainterPath()
    if state == "done":
        mark.moveTo(c.x() - 3.5, c.y())
        mark.lineTo(c.x() - 1, c.y() + 2.8)
        mark.lineTo(c.x() + 3.8, c.y() - 2.8)
    elif state == "cached":  # a stack: a recorded output taken from the store
        for dy in (-2.5, 0.0, 2.5):
            mark.moveTo(c.x() - 3.5, c.y() + dy)
            mark.lineTo(c.x() + 3.5, c.y() + dy)
    elif state == "failed":
        mark.moveTo(c.x() - 3, c.y() - 3)
        mark.lineTo(c.x() + 3, c.y() + 3)
        mark.moveTo(c.x() + 3, c.y() - 3)
        mark.lineTo(c.x() - 3, c.y() + 3)
    else:
        mark.moveTo(c.x() - 2, c.y() - 3.5)
        mark.lineTo(c.x() - 2, c.y() + 3.5)
        mark.moveTo(c.x() + 2, c.y() - 3.5)
        mark.lineTo(c.x() + 2, c.y() + 3.5)
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.setPen(pen("#ffffff", 1.8))
    painter.drawPath(mark)
    painter.restore()
