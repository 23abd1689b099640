"""PromptEdit: the text box of a prompt or any templated field, as every inspector page uses it.

It highlights template references found by :func:`engine.find_references` (built-ins in
orange, known names in blue, a name the node cannot see underlined in red with its warning
as the tooltip), completes names on Ctrl+Space (:func:`engine.template_completion`), and
shows a text too long to lay out as a read-only preview, never writing the preview back.
Its own undo is off: undo is the document's.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QHelpEvent,
    QIcon,
    QKeyEvent,
    QStandardItem,
    QStandardItemModel,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
)
from PySide6.QtWidgets import (
    QCompleter,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from engine import TEMPLATE_BUILTINS, TemplateCompletion, TemplateReference, find_references, template_completion

from ..long_text import preview, too_long_to_show
from ..resources import icon_path

__all__ = [
    "PromptEdit",
    "TemplateHighlighter",
    "PREVIOUS_OUTPUT",
    "TEMPLATE_RE",
    "COMPLETION_NAME_ROLE",
    "unknown_reference_message",
    "prompt_with_insert",
    "title_label",
]

PREVIOUS_OUTPUT = "{{PREVIOUS_OUTPUT}}"
TEMPLATE_RE = r"\{\{\s*[A-Za-z_][A-Za-z0-9_.]*\s*\}\}"  # kept for callers; references come from engine.find_references


def unknown_reference_message(ref: TemplateReference) -> str:
    """The warning shown for a reference that names nothing (the validator's wording when it has one)."""
    return (
        f"Unknown reference {ref.raw}: '{ref.name}' is not a declared variable, an output variable "
        "or a built-in; it is sent as written."
    )


COMPLETION_NAME_ROLE = Qt.ItemDataRole.UserRole + 1  # a completion's name (what is matched and inserted)


class TemplateHighlighter(QSyntaxHighlighter):
    """Colours template references found by ``engine.find_references``: built-ins (``{{PREVIOUS_OUTPUT}}``,
    ``{{iteration}}``...) in orange, known variables in blue; a reference to a name the node cannot
    see (``known`` given, the name not in it) is underlined in red (its warning is the tooltip)."""

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self.known_names: frozenset[str] | None = None  # None: no context, nothing is called unknown
        self.known = QTextCharFormat()  # built-ins
        self.known.setForeground(QColor("#ffb454"))
        self.known.setBackground(QColor(255, 180, 84, 40))
        self.known.setFontWeight(QFont.Weight.Bold)
        self.other = QTextCharFormat()  # variables and output variables
        self.other.setForeground(QColor("#79c0ff"))
        self.other.setBackground(QColor(121, 192, 255, 35))
        self.unknown = QTextCharFormat()
        self.unknown.setForeground(QColor("#ffa198"))
        self.unknown.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
        self.unknown.setUnderlineColor(QColor("#f85149"))

    def set_known(self, names: frozenset[str] | set[str] | None) -> None:
        names = None if names is None else frozenset(names)
        if names != self.known_names:
            self.known_names = names
            self.rehighlight()

    def is_unknown(self, ref: TemplateReference) -> bool:
        return self.known_names is not None and ref.name not in self.known_names and ref.name not in TEMPLATE_BUILTINS

    def highlightBlock(self, text: str) -> None:
        for ref in find_references(text):
            if ref.name in TEMPLATE_BUILTINS:
                fmt = self.known
            elif self.is_unknown(ref):
                fmt = self.unknown
            else:
                fmt = self.other
            self.setFormat(ref.start, ref.end - ref.start, fmt)


class PromptEdit(QPlainTextEdit):
    """Plain-text prompt editor with template highlighting, warnings on unknown references
    (tooltip) and completion of names (Ctrl+Space, ``engine.template_completion``)."""

    def __init__(self, placeholder: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setPlaceholderText(placeholder)
        self.setTabChangesFocus(True)
        self.setMinimumHeight(90)
        self.setUndoRedoEnabled(False)  # undo is the document's (see _FocusOut)
        self.highlighter = TemplateHighlighter(self.document())
        # name -> where it comes from; set by the inspector for the selected node
        self.names_provider: Callable[[], list[tuple[str, str]]] | None = None
        self.completer: QCompleter | None = None
        self._completing: TemplateCompletion | None = None
        self.validator_warnings: list[str] = []  # its "unknown_reference" messages for the node shown

    # ------------------------------------------------------------------ warnings
    def reference_at(self, pos: int) -> TemplateReference | None:
        block = self.document().findBlock(pos)
        offset = pos - block.position()
        for ref in find_references(block.text()):
            if ref.start <= offset < ref.end:
                return ref
        return None

    def warning_at(self, pos: int) -> str:
        """The warning of the unknown reference at ``pos`` (the validator's, when it has said it)."""
        ref = self.reference_at(pos)
        if ref is None or not self.highlighter.is_unknown(ref):
            return ""
        said = [m for m in self.validator_warnings if f"'{ref.raw}'" in m]
        return said[0] if said else unknown_reference_message(ref)

    def event(self, e: QEvent) -> bool:
        if e.type() == QEvent.Type.ToolTip and isinstance(e, QHelpEvent):
            cursor = self.cursorForPosition(self.viewport().mapFrom(self, e.pos()))
            text = self.warning_at(cursor.position())
            if text:
                QToolTip.showText(e.globalPos(), text, self)
            else:
                QToolTip.hideText()
                e.ignore()
            return True
        return super().event(e)

    # ------------------------------------------------------------------ completion
    def keyPressEvent(self, e: QKeyEvent) -> None:
        popup = self.completer.popup() if self.completer is not None else None
        if (
            popup is not None
            and popup.isVisible()
            and e.key() in (Qt.Key.Key_Enter, Qt.Key.Key_Return, Qt.Key.Key_Escape, Qt.Key.Key_Tab, Qt.Key.Key_Backtab)
        ):
            e.ignore()  # the completer's popup takes these
            return
        if e.key() == Qt.Key.Key_Space and e.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.complete_names()
            return
        super().keyPressEvent(e)
        if popup is not None and popup.isVisible():
            found = template_completion(self.toPlainText(), self.textCursor().position())
            if found is None:
                popup.hide()
            else:
                self._completing = found
                self.completer.setCompletionPrefix(found.prefix)

    def completion_names(self) -> list[str]:
        return [name for name, _origin in self.completion_entries()]

    def completion_entries(self) -> list[tuple[str, str]]:
        """``(name, where it comes from)`` of each name a reference here can use."""
        entries = list(self.names_provider()) if self.names_provider is not None else []
        return entries or [(name, "built-in") for name in sorted(TEMPLATE_BUILTINS)]

    def complete_names(self) -> None:
        """Offer the names that fit what is typed inside ``{{``/``${`` before the cursor (a fresh
        ``{{}}`` is opened when the cursor is outside a reference)."""
        if self.isReadOnly():
            return
        cursor = self.textCursor()
        found = template_completion(self.toPlainText(), cursor.position())
        if found is None:
            cursor.insertText("{{}}")
            cursor.movePosition(QTextCursor.MoveOperation.Left, QTextCursor.MoveMode.MoveAnchor, 2)
            self.setTextCursor(cursor)
            found = template_completion(self.toPlainText(), cursor.position())
            if found is None:
                return
        self._completing = found
        if self.completer is None:
            self.completer = QCompleter(self)
            self.completer.setWidget(self)
            self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
            self.completer.setCompletionMode(QCompleter.CompletionMode.PopupCompletion)
            self.completer.activated[str].connect(self.insert_completion)
            self.completer.popup().setObjectName("completionPopup")
        # Each name with where it comes from ("topic   variable (string)", "draft   output of
        # Writer"); typing matches the name alone, and the name alone is inserted.
        model = QStandardItemModel(self.completer)
        for name, origin in self.completion_entries():
            item = QStandardItem(f"{name}    {origin}" if origin else name)
            item.setData(name, COMPLETION_NAME_ROLE)
            item.setToolTip(origin)
            model.appendRow(item)
        self.completer.setModel(model)
        self.completer.setCompletionRole(COMPLETION_NAME_ROLE)
        self.completer.setCompletionPrefix(found.prefix)
        rect = self.cursorRect()
        rect.setWidth(min(460, max(220, self.completer.popup().sizeHintForColumn(0) + 24)))
        self.completer.complete(rect)

    def insert_completion(self, name: str) -> None:
        found = self._completing or template_completion(self.toPlainText(), self.textCursor().position())
        if found is None:
            return
        cursor = self.textCursor()
        cursor.setPosition(found.start)
        cursor.setPosition(self.textCursor().position(), QTextCursor.MoveMode.KeepAnchor)
        cursor.insertText(name)
        closing = "}}" if found.form == "braces" else "}"
        rest = self.toPlainText()[cursor.position() :]
        if not rest.lstrip(" ").startswith(closing):
            cursor.insertText(closing)
        else:
            cursor.setPosition(cursor.position() + rest.index(closing) + len(closing))
        self.setTextCursor(cursor)
        self._completing = None

    def set_text_keep_cursor(self, text: str) -> None:
        if too_long_to_show(text):  # laying it out would freeze the window: a read-only preview
            self._shows_preview = text
            self.setReadOnly(True)
            self.setPlainText(preview(text))
            return
        if getattr(self, "_shows_preview", None) is not None:
            self._shows_preview = None
            self.setReadOnly(False)
        elif self.toPlainText() == text:
            return
        pos = self.textCursor().position()
        self.setPlainText(text)
        cursor = self.textCursor()
        cursor.setPosition(min(pos, len(text)))
        self.setTextCursor(cursor)

    def insert_variable(self, text: str = PREVIOUS_OUTPUT) -> None:
        self.insertPlainText(text)
        self.setFocus()


def prompt_with_insert(edit: PromptEdit) -> QWidget:
    """``edit`` above an "Insert {{PREVIOUS_OUTPUT}}" button (``edit.insert_button``)."""
    box = QWidget()
    lay = QVBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.setSpacing(4)
    lay.addWidget(edit)
    row = QHBoxLayout()
    button = QPushButton(QIcon(icon_path("insert")), "Insert {{PREVIOUS_OUTPUT}}")
    button.setObjectName("insertVariable")
    button.setToolTip("Insert the previous step's output at the cursor")
    button.clicked.connect(lambda: edit.insert_variable())
    row.addWidget(button)
    row.addStretch(1)
    lay.addLayout(row)
    edit.insert_button = button  # type: ignore[attr-defined]
    return box


def title_label(text: str) -> QLabel:
    """A page's title line (styled by its object name)."""
    label = QLabel(text)
    label.setObjectName("inspectorTitle")
    return label
