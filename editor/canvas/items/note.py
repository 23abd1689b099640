"""NoteItem: a sticky note on the canvas - Markdown text on a coloured card, resizable.

Holds the note's id and display state only (no document, view or engine references). The
Markdown is laid out once per text and width (a ``QTextDocument``), never in ``paint()``.
Moves and resizes end in one call to the scene (``note_frame_changed``), which makes them
one undo step; typing happens in a temporary editor (:class:`NoteEditor`) that the scene
adds on a double-click and removes when it loses the focus.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPointF, QRectF, QSizeF, Qt
from PySide6.QtGui import QAbstractTextDocumentLayout, QBrush, QColor, QPainter, QPainterPath, QTextDocument
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsSceneMouseEvent,
    QGraphicsTextItem,
    QStyleOptionGraphicsItem,
    QWidget,
)

from ..style import SELECT, font, pen

__all__ = ["NoteItem", "NoteEditor", "NOTE_FILL", "GRIP"]

#: A note's colour name (the file's ``color``) -> its fill; another name is shown as yellow.
NOTE_FILL = {
    "yellow": QColor("#f5e08a"),
    "blue": QColor("#9cc7f2"),
    "green": QColor("#a8dba0"),
    "pink": QColor("#f2a9c6"),
    "grey": QColor("#c8ccd4"),
}
_INK = QColor("#22252b")
GRIP = 14.0  # the resize grip's side, at the bottom-right corner
_MIN_W, _MIN_H = 60.0, 40.0
_PAD = 10.0


class NoteItem(QGraphicsItem):
    """One sticky note."""

    def __init__(self, note: Any) -> None:
        super().__init__()
        self.note_id = note.id
        self.text = ""
        self.color = "yellow"
        self.size = QSizeF(note.width, note.height)
        self._doc = QTextDocument()
        self._doc.setDefaultFont(font("body"))
        self._doc.setDocumentMargin(0)
        self.editing = False
        self._resize_from: tuple[QPointF, QSizeF] | None = None
        self._press_pos: QPointF | None = None
        self.setFlags(QGraphicsItem.GraphicsItemFlag.ItemIsSelectable | QGraphicsItem.GraphicsItemFlag.ItemIsMovable)
        self.setAcceptHoverEvents(True)
        self.setZValue(-1)
        self.set_note(note)

    def set_note(self, note: Any) -> None:
        """Show the note's current fields (text, colour, frame)."""
        if QSizeF(note.width, note.height) != self.size:
            self.prepareGeometryChange()
            self.size = QSizeF(note.width, note.height)
        if note.text != self.text:
            self.text = note.text
            self._doc.setMarkdown(self.text)
        self.color = note.color
        self._doc.setTextWidth(max(1.0, self.size.width() - 2 * _PAD))
        if self.pos() != QPointF(note.x, note.y):
            self.setPos(note.x, note.y)
        self.setToolTip("" if self.text else "Double-click to write a note (Markdown)")
        self.update()

    def frame(self) -> tuple[float, float, float, float]:
        """(x, y, width, height) as shown now (during a move or resize, the new one)."""
        return self.pos().x(), self.pos().y(), self.size.width(), self.size.height()

    def grip_rect(self) -> QRectF:
        return QRectF(self.size.width() - GRIP, self.size.height() - GRIP, GRIP, GRIP)

    # ------------------------------------------------------------------ Qt overrides
    def boundingRect(self) -> QRectF:
        return QRectF(-2, -2, self.size.width() + 4, self.size.height() + 4)

    def shape(self) -> QPainterPath:
        p = QPainterPath()
        p.addRect(QRectF(0, 0, self.size.width(), self.size.height()))
        return p

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        painter.setOpacity(1.0)
        rect = QRectF(0, 0, self.size.width(), self.size.height())
        painter.setPen(pen(SELECT.name(), 2.0) if self.isSelected() else Qt.PenStyle.NoPen)
        painter.setBrush(QBrush(NOTE_FILL.get(self.color, NOTE_FILL["yellow"])))
        painter.drawRoundedRect(rect, 4, 4)
        if lod >= 0.35 and not self.editing:
            painter.save()
            painter.translate(_PAD, _PAD)
            clip = QRectF(0, 0, self.size.width() - 2 * _PAD, self.size.height() - 2 * _PAD)
            painter.setClipRect(clip)
            ctx = QAbstractTextDocumentLayout.PaintContext()
            ctx.clip = clip
            ctx.palette.setColor(ctx.palette.ColorRole.Text, _INK)
            self._doc.documentLayout().draw(painter, ctx)
            painter.restore()
        # the resize grip: three short diagonals in the corner
        painter.setPen(pen("#00000055", 1.2))
        g = self.grip_rect()
        for k in (4.0, 8.0, 12.0):
            painter.drawLine(QPointF(g.right() - k, g.bottom() - 2), QPointF(g.right() - 2, g.bottom() - k))

    def hoverMoveEvent(self, event) -> None:
        want = Qt.CursorShape.SizeFDiagCursor if self.grip_rect().contains(event.pos()) else Qt.CursorShape.ArrowCursor
        if self.cursor().shape() != want:
            self.setCursor(want)
        super().hoverMoveEvent(event)

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        self._press_pos = QPointF(self.pos())
        if event.button() == Qt.MouseButton.LeftButton and self.grip_rect().contains(event.pos()):
            self._resize_from = (event.scenePos(), QSizeF(self.size))
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        if self._resize_from is not None:
            start, size = self._resize_from
            d = event.scenePos() - start
            self.prepareGeometryChange()
            self.size = QSizeF(max(_MIN_W, round(size.width() + d.x())), max(_MIN_H, round(size.height() + d.y())))
            self._doc.setTextWidth(max(1.0, self.size.width() - 2 * _PAD))
            self.update()
            event.accept()
            return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        resized, self._resize_from = self._resize_from is not None, None
        if not resized:
            super().mouseReleaseEvent(event)
        scene = self.scene()
        if scene is not None and hasattr(scene, "note_frame_changed"):
            scene.note_frame_changed(self)
        event.accept()

    def itemChange(self, change: QGraphicsItem.GraphicsItemChange, value):
        if change == QGraphicsItem.GraphicsItemChange.ItemPositionChange:
            return QPointF(round(value.x()), round(value.y()))
        return super().itemChange(change, value)


class NoteEditor(QGraphicsTextItem):
    """The Markdown source of a note being edited, over the note; ``done(text)`` when it loses
    the focus (or on Esc)."""

    def __init__(self, note: NoteItem, done) -> None:
        super().__init__()
        self._done = done
        self._finished = False
        self.setPlainText(note.text)
        self.setFont(font("body"))
        self.setDefaultTextColor(_INK)
        self.setTextWidth(note.size.width() - 2 * _PAD)
        self.setPos(note.pos() + QPointF(_PAD - 4, _PAD - 4))
        self.setZValue(100)
        self.setTextInteractionFlags(Qt.TextInteractionFlag.TextEditorInteraction)

    def finish(self) -> None:
        if not self._finished:
            self._finished = True
            self._done(self.toPlainText())

    def focusOutEvent(self, event) -> None:
        super().focusOutEvent(event)
        self.finish()

    def keyPressEvent(self, event) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.finish()
            event.accept()
            return
        super().keyPressEvent(event)
