"""The history table's badges: the status column's coloured pill with the status label, and the
"Temporal" pill before the workflow name of a run on a Temporal server."""

from __future__ import annotations

from PySide6.QtCore import QModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPen
from PySide6.QtWidgets import QStyle, QStyledItemDelegate, QStyleOptionViewItem

from .model import REMOTE_BADGE, SERVER_ROLE, STATUS_COLORS, STATUS_ROLE

__all__ = ["StatusBadgeDelegate", "RemoteBadgeDelegate", "REMOTE_COLOR"]

REMOTE_COLOR = QColor("#0b7285")  # Temporal runs: a teal outline, apart from every status colour
REMOTE_COLOR_DARK = QColor("#3bc9db")  # the same on a dark palette


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
        painter.drawText(
            pill.adjusted(8, 0, -8, 0), int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft), text
        )
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        base = super().sizeHint(option, index)
        fm = option.fontMetrics
        text = index.data(Qt.ItemDataRole.DisplayRole) or ""
        return QSize(fm.horizontalAdvance(text) + 30, max(base.height(), fm.height() + 10))


class RemoteBadgeDelegate(QStyledItemDelegate):
    """The workflow column: a run on a Temporal server gets an outlined "Temporal" pill before its name."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        if not index.data(SERVER_ROLE):
            super().paint(painter, option, index)
            return
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        text = opt.text
        opt.text = ""
        style = opt.widget.style() if opt.widget else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        small = QFont(opt.font)
        small.setPointSizeF(max(opt.font.pointSizeF() * 0.85, 6.0))
        small.setBold(True)
        painter.setFont(small)
        fm = painter.fontMetrics()
        h = fm.height() + 2
        pill = QRect(
            opt.rect.left() + 4, opt.rect.center().y() - h // 2 + 1, fm.horizontalAdvance(REMOTE_BADGE) + 12, h
        )
        dark = opt.palette.base().color().lightness() < 128
        colour = REMOTE_COLOR_DARK if dark else REMOTE_COLOR
        painter.setPen(QPen(colour, 1.4))
        fill = QColor(colour)
        fill.setAlpha(36)
        painter.setBrush(fill)
        painter.drawRoundedRect(pill.adjusted(0, 0, -1, -1), h / 2, h / 2)
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        painter.setPen(opt.palette.highlightedText().color() if selected else colour)
        painter.drawText(pill, int(Qt.AlignmentFlag.AlignCenter), REMOTE_BADGE)
        painter.setFont(opt.font)
        fm = painter.fontMetrics()
        rest = opt.rect.adjusted(pill.right() - opt.rect.left() + 7, 0, -4, 0)
        painter.setPen(opt.palette.highlightedText().color() if selected else opt.palette.text().color())
        painter.drawText(
            rest,
            int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
            fm.elidedText(text, Qt.TextElideMode.ElideRight, max(rest.width(), 0)),
        )
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        base = super().sizeHint(option, index)
        if index.data(SERVER_ROLE):
            base.setWidth(base.width() + option.fontMetrics.horizontalAdvance(REMOTE_BADGE) + 24)
        return base
