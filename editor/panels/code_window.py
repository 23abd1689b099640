"""A larger window for a code step's code (or an imported script, read-only).

The inspector's code editor is as wide as the inspector; code with long lines is read there
through a horizontal scroll bar. "Edit in a larger window…" opens the same text in a dialog
sized to the screen: Apply hands the text back as one edit (one undo step), Cancel leaves the
node as it was. The failing line of the last run stays marked.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QVBoxLayout, QWidget

from .code_edit import LANGUAGE_LABELS, CodeEdit

__all__ = ["CodeWindow"]


class CodeWindow(QDialog):
    """``text`` in a large :class:`CodeEdit`; :meth:`text` is what the user left there."""

    def __init__(
        self,
        title: str,
        text: str,
        language: str,
        *,
        read_only: bool = False,
        marked_line: int | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("codeWindow")
        self.setWindowTitle(title)
        lay = QVBoxLayout(self)
        label = LANGUAGE_LABELS.get(language, language or "unknown language")
        hint = QLabel(f"{label}. " + ("Read-only." if read_only else "Apply keeps the change (one undo step)."))
        hint.setStyleSheet("color: #8b949e;")
        lay.addWidget(hint)
        self.editor = CodeEdit(language)
        self.editor.setPlainText(text)
        self.editor.setReadOnly(read_only)
        self.editor.mark_line(marked_line)
        lay.addWidget(self.editor, 1)
        if read_only:
            self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        else:
            self.buttons = QDialogButtonBox(
                QDialogButtonBox.StandardButton.Apply | QDialogButtonBox.StandardButton.Cancel
            )
            self.buttons.button(QDialogButtonBox.StandardButton.Apply).clicked.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)
        screen = (parent.screen() if parent is not None else None) or QGuiApplication.primaryScreen()
        area = screen.availableGeometry() if screen is not None else None
        if area is not None:
            self.resize(min(1000, int(area.width() * 0.8)), min(720, int(area.height() * 0.8)))
        self.editor.setFocus(Qt.FocusReason.OtherFocusReason)

    def text(self) -> str:
        return self.editor.toPlainText()
