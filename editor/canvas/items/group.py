"""GroupItem: a titled frame around a group's nodes, or (collapsed) one card in their place.

Holds the group's id and display state only. The frame has no position of its own in the
file: the scene gives it the rectangle of its members' cards (:meth:`GroupItem.set_frame`)
whenever they move. Expanded, only the title bar takes the mouse (a click inside the frame
reaches the cards and the canvas); collapsed, the whole card does, and the links of the
hidden members end on its sides (``port_scene_pos``). A drag moves the frame; the scene moves
the member cards along and makes the gesture one undo step (``group_drag_*``).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QPainter, QPainterPath
from PySide6.QtWidgets import QGraphicsItem, QGraphicsSceneMouseEvent, QStyleOptionGraphicsItem, QWidget

from ..style import NODE_BG, NODE_MUTED, NODE_TEXT, SELECT, font, metrics, pen

__all__ = ["GroupItem", "GROUP_MARGIN", "GROUP_HEADER", "COLLAPSED_W", "COLLAPSED_H"]

GROUP_MARGIN = 20.0  # room between the members' cards and the frame
GROUP_HEADER = 28.0  # the title bar above them
COLLAPSED_W, COLLAPSED_H = 220.0, 60.0
_FILL = QColor(120, 150, 200, 28)
_BORDER = QColor("#6d84ad")
_BAR = QColor("#3b4a66")


class GroupItem(QGraphicsItem):
    """One group: a frame (expanded) or a card (collapsed)."""

    def __init__(self, group: Any) -> None:
        super().__init__()
        self.group_id = group.id
        self.title = group.title
        self.collapsed = bool(group.collapsed)
        self.count = 0
        self.size = QRectF(0, 0, COLLAPSED_W, COLLAPSED_H).size()
        self.drag_from: QPointF | None = None  # the frame's position when a drag began
        self.members_from: dict[str, tuple[float, float]] | None = None  # the members' then (the scene's)
        self.setFlags(
            QGraphicsItem.GraphicsItemFlag.ItemIsSelectable
            | QGraphicsItem.GraphicsItemFlag.ItemIsMovable
            | QGraphicsItem.GraphicsItemFlag.ItemSendsGeometryChanges
        )
        self.setZValue(5 if self.collapsed else -2)

    def set_group(self, group: Any) -> None:
        self.title = group.title
        if bool(group.collapsed) != self.collapsed:
            self.collapsed = bool(group.collapsed)
            self.setZValue(5 if self.collapsed else -2)
        self.setToolTip(
            f"{self.title}: {self.count} node{'s' * (self.count != 1)}"
            + (" (double-click to expand)" if self.collapsed else " (drag the title bar to move them)")
        )
        self.update()

    def set_frame(self, members: tuple[float, float, float, float] | None, count: int) -> None:
        """Place the frame around the members' cards ``(x0, y0, x1, y1)`` (None: no member left)."""
        self.count = count
        self.setVisible(members is not None)
        if members is None:
            return
        x0, y0, x1, y1 = members
        if self.collapsed:
            pos, w, h = QPointF(x0, y0), COLLAPSED_W, COLLAPSED_H
        else:
            pos = QPointF(x0 - GROUP_MARGIN, y0 - GROUP_MARGIN - GROUP_HEADER)
            w, h = x1 - x0 + 2 * GROUP_MARGIN, y1 - y0 + 2 * GROUP_MARGIN + GROUP_HEADER
        if (w, h) != (self.size.width(), self.size.height()):
            self.prepareGeometryChange()
            self.size = QRectF(0, 0, w, h).size()
        if self.drag_from is None and self.pos() != pos:
            self.setPos(pos)
        self.update()

    def port_scene_pos(self, output: bool) -> QPointF:
        """Where a hidden member's link ends on the collapsed card: its right side for links
        leaving the group, its left side for links coming in."""
        return self.pos() + QPointF(self.size.width() if output else 0.0, self.size.height() / 2)

    def title_rect(self) -> QRectF:
        return QRectF(0, 0, self.size.width(), GROUP_HEADER if not self.collapsed else self.size.height())

    # ------------------------------------------------------------------ Qt overrides
    def boundingRect(self) -> QRectF:
        return QRectF(-2, -2, self.size.width() + 4, self.size.height() + 4)

    def shape(self) -> QPainterPath:
        p = QPainterPath()
        p.addRect(self.title_rect())
        return p

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        painter.setOpacity(1.0)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, lod > 0.3)
        rect = QRectF(0, 0, self.size.width(), self.size.height())
        border = pen(SELECT.name(), 2.0) if self.isSelected() else pen(_BORDER.name(), 1.2, not self.collapsed)
        if self.collapsed:
            painter.setPen(border)
            painter.setBrush(QBrush(NODE_BG))
            painter.drawRoundedRect(rect, 8, 8)
            painter.setPen(Qt.PenStyle.NoPen)
            painter.setBrush(QBrush(_BAR))
            painter.drawRoundedRect(QRectF(0, 0, 8, rect.height()), 4, 4)
            for p in (QPointF(0, rect.height() / 2), QPointF(rect.width(), rect.height() / 2)):
                painter.setBrush(QBrush(QColor("#c9d1d9")))
                painter.drawEllipse(p, 4.5, 4.5)
            if lod >= 0.3:
                painter.setFont(font("title"))
                painter.setPen(pen(NODE_TEXT.name()))
                w = rect.width() - 32
                painter.drawText(
                    QRectF(18, 6, w, 24),
                    Qt.AlignmentFlag.AlignVCenter,
                    metrics("title").elidedText(self.title, Qt.TextElideMode.ElideRight, w),
                )
                painter.setFont(font("small"))
                painter.setPen(pen(NODE_MUTED.name()))
                painter.drawText(
                    QRectF(18, 30, w, 20),
                    Qt.AlignmentFlag.AlignVCenter,
                    f"group of {self.count} node{'s' * (self.count != 1)} (collapsed)",
                )
            return
        painter.setPen(border)
        painter.setBrush(QBrush(_FILL))
        painter.drawRoundedRect(rect, 10, 10)
        bar = QPainterPath()
        bar.addRoundedRect(QRectF(0, 0, rect.width(), GROUP_HEADER), 10, 10)
        bar.addRect(QRectF(0, GROUP_HEADER - 10, rect.width(), 10))
        bar.setFillRule(Qt.FillRule.WindingFill)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QBrush(_BAR))
        painter.drawPath(bar.simplified())
        if lod >= 0.25:
            painter.setFont(font("title"))
            painter.setPen(pen(NODE_TEXT.name()))
            w = rect.width() - 24
            painter.drawText(
                QRectF(12, 0, w, GROUP_HEADER),
                Qt.AlignmentFlag.AlignVCenter,
                metrics("title").elidedText(self.title, Qt.TextElideMode.ElideRight, w),
            )

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        scene = self.scene()
        if event.button() == Qt.MouseButton.LeftButton and scene is not None:
            # A group is dragged alone: nodes selected elsewhere stay where they are.
            if not self.isSelected():
                scene.clearSelection()
            self.drag_from = QPointF(self.pos())
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        super().mouseReleaseEvent(event)
        start, self.drag_from = self.drag_from, None
        scene = self.scene()
        if start is not None and scene is not None and hasattr(scene, "group_drag_ended"):
            scene.group_drag_ended(self, self.pos() - start)

    def itemChange(self, change: QGraphicsItem.GraphicsItemChange, value):
        if change == QGraphicsItem.GraphicsItemChange.ItemPositionChange:
            return QPointF(round(value.x()), round(value.y()))
        if change == QGraphicsItem.GraphicsItemChange.ItemPositionHasChanged and self.drag_from is not None:
            scene = self.scene()
            if scene is not None and hasattr(scene, "group_dragged"):
                scene.group_dragged(self)
        return super().itemChange(change, value)

    def cancel_drag(self) -> QPointF | None:
        start, self.drag_from = self.drag_from, None
        return start
