"""Ctrl+F: a bar floating over the canvas that finds nodes by name."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCompleter, QHBoxLayout, QLabel, QLineEdit, QWidget

from ..canvas.scene import CanvasScene
from ..canvas.view import CanvasView
from ..editing import WorkflowDocument


class FindBar(QWidget):
    """Ctrl+F: type part of a node's name; Enter selects and shows the next match."""

    def __init__(self, host: QWidget, document: WorkflowDocument, scene: CanvasScene, view: CanvasView) -> None:
        # A sibling floating over the view (``host`` holds the view), not its child: the canvas's
        # Delete/Ctrl+A/Ctrl+C shortcuts are scoped to the view and its children and must not
        # fire while typing here.
        super().__init__(host)
        self.document = document
        self.scene = scene
        self.view = view
        self.setObjectName("findBar")
        self.setAttribute(
            Qt.WidgetAttribute.WA_StyledBackground, True
        )  # the style sheet's panel, not the canvas through it
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 6, 8, 6)
        self.edit = QLineEdit(self)
        self.edit.setPlaceholderText("Find node by name…")
        self.edit.setClearButtonEnabled(True)
        self.count = QLabel(self)
        self.count.setObjectName("hint")
        lay.addWidget(self.edit, 1)
        lay.addWidget(self.count)
        self.setFixedWidth(340)
        self.completer = QCompleter([], self)
        self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.completer.popup().setObjectName("completionPopup")
        self.edit.setCompleter(self.completer)
        self.edit.textChanged.connect(self.highlight)
        self.edit.returnPressed.connect(self.next_match)
        self._cursor = -1
        self.hide()

    def open(self) -> None:
        doc = self.document
        scene = self.scene
        titles = sorted({scene.node_title(n.id) for n in doc.workflow.nodes})
        self.completer.model().setStringList(titles)  # type: ignore[attr-defined]
        self.move(12, 12)
        # Sized to its contents as styled now: a size taken before the style sheet applied cut
        # the field's text in half, and the suggestion list then sat over what was left of it.
        self.ensurePolished()
        self.edit.ensurePolished()
        self.resize(self.width(), self.layout().sizeHint().height())
        self.show()
        self.raise_()
        self.edit.setFocus()
        self.edit.selectAll()
        self.highlight(self.edit.text())

    def matches(self) -> list[str]:
        text = self.edit.text().strip().lower()
        if not text:
            return []
        scene = self.scene
        # From the model (a big document has items only for what is in view).
        return [
            n.id for n in self.document.workflow.nodes if text in scene.node_title(n.id).lower() or text == n.id.lower()
        ]

    def highlight(self, _text: str = "") -> None:
        found = set(self.matches())
        self.scene.set_found_nodes(found)
        self.count.setText(f"{len(found)} found" if self.edit.text() else "")
        self._cursor = -1

    def next_match(self) -> None:
        ids = self.matches()
        if not ids:
            return
        self._cursor = (self._cursor + 1) % len(ids)
        nid = ids[self._cursor]
        self.scene.select_nodes([nid])
        self.view.centre_on_node(nid)

    def close_bar(self) -> None:
        self.scene.set_found_nodes(set())
        self.hide()
        self.view.setFocus()

    def keyPressEvent(self, event) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.close_bar()
            return
        super().keyPressEvent(event)
