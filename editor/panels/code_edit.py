"""A code editor for the inspector: a ``QPlainTextEdit`` with line numbers in a gutter, syntax
highlighting from pygments (Python, JavaScript, TypeScript, PowerShell) and a marked line.

The highlighter lexes the whole text with pygments when the text changed (snippets are short:
a few hundred lines lex in a millisecond or two) and gives each block the formats of its line;
a block's state is a hash of those formats, so when an edit changes how later lines lex (an
opened string, a comment) Qt goes on rehighlighting the blocks after it until they agree again.
Colours come from :class:`editor.code_style.FlowdeskDarkStyle` (the app's dark theme).

The marked line (``mark_line``) is the line a run failed at: a red wash across the text and a
red number in the gutter. The editor keeps no undo of its own: the inspector hands Ctrl+Z to
the document (see ``editor.panels.inspector._FocusOut``).
"""

from __future__ import annotations

import re

from pygments.lexer import Lexer
from pygments.lexers import get_lexer_by_name
from pygments.token import _TokenType
from pygments.util import ClassNotFound
from PySide6.QtCore import QRect, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QKeyEvent,
    QPainter,
    QPaintEvent,
    QResizeEvent,
    QSyntaxHighlighter,
    QTextCharFormat,
    QTextDocument,
    QTextFormat,
)
from PySide6.QtWidgets import QPlainTextEdit, QTextEdit, QWidget

from ..code_style import FlowdeskDarkStyle

__all__ = ["CodeEdit", "PygmentsHighlighter", "LANGUAGE_LABELS", "failed_line"]

#: The languages the code kind runs (its ``language`` values) and the script kind keeps.
LANGUAGE_LABELS = {
    "python": "Python",
    "javascript": "JavaScript",
    "typescript": "TypeScript",
    "powershell": "PowerShell",
}
_GUTTER_BG = QColor("#181b21")
_GUTTER_FG = QColor("#6b7383")
_GUTTER_CURRENT = QColor("#aeb6c4")
_FAILED = QColor("#f85149")
_FAILED_WASH = QColor(248, 81, 73, 46)
_LINE_RE = re.compile(r"(?:^|[\s:(])line (\d+)\b", re.IGNORECASE)


def failed_line(error: str | None) -> int | None:
    """The line a step's error names: ``line 3: NameError: …`` (also after a prefix such as
    ``Code (python): line 3: …``); None when it names none."""
    if not error:
        return None
    m = _LINE_RE.search(error[:400])
    return int(m.group(1)) if m else None


def failure_text(error: str | None) -> str:
    """``Line 3 failed: NameError: …`` from a step's ``line 3: NameError: …`` (the line said once)."""
    line = failed_line(error)
    if line is None:
        return f"Failed: {error}" if error else "Failed"
    rest = re.sub(rf"^line {line}:\s*", "", error or "", count=1, flags=re.IGNORECASE)
    return f"Line {line} failed: {rest}"


def _lexer(language: str) -> Lexer | None:
    try:
        return get_lexer_by_name(language or "text", stripnl=False, stripall=False, ensurenl=False)
    except ClassNotFound:
        return None


class PygmentsHighlighter(QSyntaxHighlighter):
    """Highlights a document with pygments tokens of one language (``set_language``)."""

    def __init__(self, document: QTextDocument, language: str = "python") -> None:
        super().__init__(document)
        self._formats: dict[_TokenType, QTextCharFormat] = {}
        self._lines: list[list[tuple[int, int, QTextCharFormat]]] = []
        self._lexed_revision = -1
        self._lexed_text: str | None = None
        self.language = ""
        self._lexer: Lexer | None = None
        self.set_language(language)

    def set_language(self, language: str) -> None:
        if language == self.language:
            return
        self.language = language
        self._lexer = _lexer(language)
        self._lexed_text = None
        self.rehighlight()

    def _format(self, ttype: _TokenType) -> QTextCharFormat:
        fmt = self._formats.get(ttype)
        if fmt is None:
            style = FlowdeskDarkStyle.style_for_token(ttype)
            fmt = QTextCharFormat()
            if style.get("color"):
                fmt.setForeground(QColor("#" + style["color"]))
            if style.get("bold"):
                fmt.setFontWeight(QFont.Weight.Bold)
            if style.get("italic"):
                fmt.setFontItalic(True)
            self._formats[ttype] = fmt
        return fmt

    def _lex(self) -> None:
        text = self.document().toPlainText()
        if text == self._lexed_text:
            return
        self._lexed_text = text
        lines: list[list[tuple[int, int, QTextCharFormat]]] = [[] for _ in range(text.count("\n") + 1)]
        if self._lexer is not None:
            line, col = 0, 0
            for _index, ttype, value in self._lexer.get_tokens_unprocessed(text):
                fmt = self._format(ttype)
                pieces = value.split("\n")
                for i, piece in enumerate(pieces):
                    if i:
                        line, col = line + 1, 0
                    if piece and line < len(lines):
                        lines[line].append((col, len(piece), fmt))
                    col += len(piece)
        self._lines = lines

    def highlightBlock(self, text: str) -> None:  # noqa: N802 - Qt API
        self._lex()
        number = self.currentBlock().blockNumber()
        spans = self._lines[number] if number < len(self._lines) else []
        for start, length, fmt in spans:
            self.setFormat(start, length, fmt)
        # The state says how this line lexed: when it changes, Qt highlights the next line too.
        self.setCurrentBlockState(hash(tuple((s, n, id(f)) for s, n, f in spans)) & 0x3FFFFFFF)

    def formats_of_line(self, number: int) -> list[tuple[int, int, str]]:
        """(start, length, colour) of each highlighted span of line ``number`` (0-based): for tests."""
        block = self.document().findBlockByNumber(number)
        layout = block.layout()
        if layout is None:
            return []
        return [(r.start, r.length, r.format.foreground().color().name()) for r in layout.formats()]


class _Gutter(QWidget):
    def __init__(self, editor: CodeEdit) -> None:
        super().__init__(editor)
        self.editor = editor

    def sizeHint(self) -> QSize:
        return QSize(self.editor.gutter_width(), 0)

    def paintEvent(self, event: QPaintEvent) -> None:
        self.editor.paint_gutter(event)


class CodeEdit(QPlainTextEdit):
    """Monospaced, highlighted, line-numbered code; Tab inserts four spaces."""

    def __init__(self, language: str = "python", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("codeEdit")
        font = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)
        font.setStyleHint(QFont.StyleHint.Monospace)
        self.setFont(font)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.setTabStopDistance(self.fontMetrics().horizontalAdvance(" ") * 4)
        self.setMinimumHeight(self.fontMetrics().lineSpacing() * 12)
        self.highlighter = PygmentsHighlighter(self.document(), language)
        self.marked_line: int | None = None
        self.gutter = _Gutter(self)
        self.blockCountChanged.connect(lambda _n: self._fit_gutter())
        self.updateRequest.connect(self._scroll_gutter)
        self.cursorPositionChanged.connect(self._show_marks)
        self._fit_gutter()

    # ------------------------------------------------------------------ language, text, marks
    def set_language(self, language: str) -> None:
        self.highlighter.set_language(language)

    def set_text_keep_cursor(self, text: str) -> None:
        """Show ``text`` (a reload after an undo, say) keeping the cursor where it was."""
        if text == self.toPlainText():
            return
        pos = self.textCursor().position()
        self.setPlainText(text)
        cursor = self.textCursor()
        cursor.setPosition(min(pos, len(text)))
        self.setTextCursor(cursor)

    def mark_line(self, line: int | None) -> None:
        """Mark ``line`` (1-based; None: no mark) as the one a run failed at."""
        if line is not None and not 1 <= line <= self.blockCount():
            line = None
        if line != self.marked_line:
            self.marked_line = line
            self._show_marks()
            self.gutter.update()

    def _show_marks(self) -> None:
        selections = []
        if self.marked_line is not None:
            sel = QTextEdit.ExtraSelection()
            sel.format.setBackground(_FAILED_WASH)
            sel.format.setProperty(QTextFormat.Property.FullWidthSelection, True)
            sel.cursor = self.textCursor()
            block = self.document().findBlockByNumber(self.marked_line - 1)
            sel.cursor.setPosition(block.position())
            sel.cursor.clearSelection()
            selections.append(sel)
        self.setExtraSelections(selections)

    # ------------------------------------------------------------------ keys
    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Tab and not event.modifiers() and not self.isReadOnly():
            self.insertPlainText("    ")
            return
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not self.isReadOnly():
            # keep the line's indentation (and indent after a ':' or an opening brace)
            line = self.textCursor().block().text()[: self.textCursor().positionInBlock()]
            indent = line[: len(line) - len(line.lstrip(" \t"))]
            if line.rstrip().endswith((":", "{", "(", "[")):
                indent += "    "
            super().keyPressEvent(event)
            self.insertPlainText(indent)
            return
        super().keyPressEvent(event)

    # ------------------------------------------------------------------ the gutter
    def gutter_width(self) -> int:
        digits = len(str(max(1, self.blockCount())))
        return 14 + self.fontMetrics().horizontalAdvance("9") * max(2, digits)

    def _fit_gutter(self) -> None:
        self.setViewportMargins(self.gutter_width(), 0, 0, 0)

    def _scroll_gutter(self, rect: QRect, dy: int) -> None:
        if dy:
            self.gutter.scroll(0, dy)
        else:
            self.gutter.update(0, rect.y(), self.gutter.width(), rect.height())
        if rect.contains(self.viewport().rect()):
            self._fit_gutter()

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        cr = self.contentsRect()
        self.gutter.setGeometry(QRect(cr.left(), cr.top(), self.gutter_width(), cr.height()))

    def paint_gutter(self, event: QPaintEvent) -> None:
        painter = QPainter(self.gutter)
        painter.fillRect(event.rect(), _GUTTER_BG)
        painter.setFont(self.font())
        block = self.firstVisibleBlock()
        number = block.blockNumber()
        top = round(self.blockBoundingGeometry(block).translated(self.contentOffset()).top())
        bottom = top + round(self.blockBoundingRect(block).height())
        current = self.textCursor().blockNumber()
        height = self.fontMetrics().height()
        width = self.gutter.width() - 6
        while block.isValid() and top <= event.rect().bottom():
            if block.isVisible() and bottom >= event.rect().top():
                if number + 1 == self.marked_line:
                    painter.fillRect(QRect(0, top, self.gutter.width(), bottom - top), _FAILED_WASH)
                    painter.setPen(_FAILED)
                else:
                    painter.setPen(_GUTTER_CURRENT if number == current else _GUTTER_FG)
                painter.drawText(0, top, width, height, Qt.AlignmentFlag.AlignRight, str(number + 1))
            block = block.next()
            top = bottom
            bottom = top + round(self.blockBoundingRect(block).height())
            number += 1
        painter.end()
