"""Node palette: drag a node type onto the canvas, or double-click it to add at the centre.

Its last entry, "Sticky note" (key :data:`NOTE_KEY`), adds a note rather than a node."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping

from PySide6.QtCore import QMimeData, QSize, Qt, Signal
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QAbstractItemView, QLabel, QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from engine import PaletteEntry, palette_entries, spec_for

from ..canvas.view import NODE_MIME
from ..resources import icon_path


class _Descriptions(Mapping[str, tuple[str, str]]):
    """(label, description) of each palette entry, by key, read from the engine's node registry."""

    def _all(self) -> dict[str, tuple[str, str]]:
        return {e.key: (e.label, e.description) for e in palette_entries()}

    def __getitem__(self, key: str) -> tuple[str, str]:
        return self._all()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


DESCRIPTIONS = _Descriptions()

#: The palette key of a sticky note (not a node kind: no kind name starts with "@").
NOTE_KEY = "@note"
NOTE_LABEL, NOTE_DESCRIPTION = "Sticky note", "A Markdown note on the canvas (the run ignores it)"


def note_icon() -> QIcon:
    pix = QPixmap(48, 48)
    pix.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pix)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor("#f5e08a"))
    painter.drawRoundedRect(6, 6, 36, 36, 4, 4)
    painter.setPen(QColor("#6b5d1e"))
    for y in (18, 25, 32):
        painter.drawLine(12, y, 36, y)
    painter.end()
    return QIcon(pix)


def palette_icon(entry: PaletteEntry) -> QIcon:
    """The palette icon of an entry: its ``node-<icon>`` picture, or a square in the kind's colour."""
    path = icon_path(f"node-{entry.icon}")
    if os.path.exists(path):
        return QIcon(path)
    spec = spec_for(entry.kind)
    pix = QPixmap(48, 48)
    pix.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pix)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor(spec.color if spec is not None else "#5b6478"))
    painter.drawRoundedRect(4, 4, 40, 40, 10, 10)
    painter.setPen(QColor("#ffffff"))
    font = painter.font()
    font.setBold(True)
    font.setPixelSize(24)
    painter.setFont(font)
    painter.drawText(pix.rect(), Qt.AlignmentFlag.AlignCenter, (entry.label or entry.kind)[:1].upper())
    painter.end()
    return QIcon(pix)


def entry_icon(key: str) -> QIcon:
    """The icon of the palette entry ``key`` (as the palette shows it), for menus."""
    entry = next((e for e in palette_entries() if e.key == key), None)
    return palette_icon(entry) if entry is not None else QIcon()


def palette_mime(kind: str) -> QMimeData:
    mime = QMimeData()
    mime.setData(NODE_MIME, kind.encode())
    mime.setText(kind)
    return mime


class _List(QListWidget):
    def supportedDropActions(self) -> Qt.DropAction:
        return Qt.DropAction.CopyAction

    def startDrag(self, supported: Qt.DropAction) -> None:
        super().startDrag(Qt.DropAction.CopyAction)

    def mimeTypes(self) -> list[str]:
        return [NODE_MIME]

    def mimeData(self, items) -> QMimeData:
        return palette_mime(items[0].data(Qt.ItemDataRole.UserRole)) if items else QMimeData()


class PalettePanel(QWidget):
    node_requested = Signal(str)  # kind, to be added at the view centre

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("palette")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        # A non-breaking hyphen: the hint wrapped as "double-" / "click".
        hint = QLabel("Drag onto the canvas, or double\u2011click")
        hint.setObjectName("hint")
        hint.setWordWrap(True)
        self.list = _List(self)
        self.list.setDragEnabled(True)
        self.list.setDragDropMode(QAbstractItemView.DragDropMode.DragOnly)
        # Copy, never Move: a move drop would make the list delete the dragged palette entry.
        self.list.setDefaultDropAction(Qt.DropAction.CopyAction)
        self.list.setIconSize(QSize(28, 28))
        self.list.setSpacing(1)
        self.list.setWordWrap(True)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # One line per entry, the kind's name (its description in the tooltip and the status
        # tip): with a dozen kinds, two-line entries made the list taller than the default
        # layout has room for, and its last entries were cut off.
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setMouseTracking(True)
        row = QSize(0, max(30, self.list.fontMetrics().lineSpacing() + 8))
        self.list.setMinimumHeight(48)  # it scrolls: a tall list must not keep the run console short
        for entry in palette_entries():
            item = QListWidgetItem(palette_icon(entry), entry.label)
            item.setData(Qt.ItemDataRole.UserRole, entry.key)
            item.setToolTip(f"<b>{entry.label}</b><br>{entry.description}")
            item.setStatusTip(f"{entry.label}: {entry.description}")
            item.setSizeHint(row)
            self.list.addItem(item)
        note = QListWidgetItem(note_icon(), NOTE_LABEL)
        note.setData(Qt.ItemDataRole.UserRole, NOTE_KEY)
        note.setToolTip(f"<b>{NOTE_LABEL}</b><br>{NOTE_DESCRIPTION}")
        note.setStatusTip(f"{NOTE_LABEL}: {NOTE_DESCRIPTION}")
        note.setSizeHint(row)
        self.list.addItem(note)
        self.list.itemDoubleClicked.connect(lambda it: self.node_requested.emit(it.data(Qt.ItemDataRole.UserRole)))
        layout.addWidget(hint)
        layout.addWidget(self.list, 1)

    def item_for(self, kind: str) -> QListWidgetItem:
        for i in range(self.list.count()):
            if self.list.item(i).data(Qt.ItemDataRole.UserRole) == kind:
                return self.list.item(i)
        raise KeyError(kind)
