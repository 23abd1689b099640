"""The history table's status column: a coloured pill with the status label."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QIcon, QPainter
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from .model import STATUS_COLORS, STATUS_ROLE

__all__ = ["StatusBadgeDelegate"]


class StatusBadgeDelegate(QStyledItemDelegate):
    """Paints the status column as a coloured pill with the status label."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        text = opt.text
        opt.text = ""
        opt.icon = QIcon()  # no decoration: the pill is the icon
        opt.features &= ~QStyleOptionViewItem.ViewItemFeature.HasDecoration
        style = opt.widget.style() if opt.widget else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        status = index.data(STATUS_ROLE) or ""
        colour = STATUS_COLORS.get(status, QColor("#6e7681"))
        font = index.data(Qt.ItemDataRole.FontRole) or opt.font
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setFont(font)
        fm = painter.fontMetrics()
        h = fm.height() + 4
        w = min(fm.horizontalAdvance(text) + 16, opt.rect.width() - 8)
        pill = QRect(opt.rect.left() + 6, opt.rect.center().y() - h // 2 + 1, max(w, 0), h)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(colour)
        painter.drawRoundedRect(pill, h / 2, h / 2)
        painter.setPen(QColor("white"))
        room = max(pill.width() - 16, 0)
        if fm.horizontalAdvance(text) > room:  # elidedText() elides even text that fits exactly
            text = fm.elidedText(text, Qt.TextElideMode.ElideRight, room)
        painter.drawText(pill.adjusted(8, 0, -8, 0), int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                         text)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        base = super().sizeHint(option, index)
        fm = option.fontMetrics
        text = index.data(Qt.ItemDataRole.DisplayRole) or ""
        return QSize(fm.horizontalAdvance(text) + 30, max(base.height(), fm.height() + 10))
