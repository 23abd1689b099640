"""Node palette: drag a node type onto the canvas, or double-click it to add at the centre."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, QSize, Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QAbstractItemView, QListWidget, QListWidgetItem, QVBoxLayout, QWidget, QLabel

from ..canvas.view import NODE_MIME
from ..document import PALETTE_KINDS
from ..resources import icon_path

DESCRIPTIONS = {
    "start": ("Start", "Where a run begins; holds the initial input."),
    "agent": ("Agent", "Calls an LLM with your prompts."),
    "subagent": ("Subagent", "An agent another agent calls as a tool."),
    "if": ("Condition", "Routes by what the previous output says."),
    "approval": ("Approval", "Pauses until a person approves or rejects."),
}


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
        self.list.setSpacing(2)
        self.list.setWordWrap(True)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.list.setMinimumHeight(48)  # it scrolls: a tall list must not keep the run console short
        for kind in PALETTE_KINDS:
            name, desc = DESCRIPTIONS[kind]
            item = QListWidgetItem(QIcon(icon_path(f"node-{kind}")), f"{name}\n{desc}")
            item.setData(Qt.ItemDataRole.UserRole, kind)
            item.setToolTip(desc)
            self.list.addItem(item)
        self.list.itemDoubleClicked.connect(lambda it: self.node_requested.emit(it.data(Qt.ItemDataRole.UserRole)))
        layout.addWidget(hint)
        layout.addWidget(self.list, 1)

    def item_for(self, kind: str) -> QListWidgetItem:
        for i in range(self.list.count()):
            if self.list.item(i).data(Qt.ItemDataRole.UserRole) == kind:
                return self.list.item(i)
        raise KeyError(kind)
