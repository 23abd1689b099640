"""The workflow's trigger phrases, edited on the workflow page of the inspector, with a live tester.

One pattern per line (TypeAgent's grammar: words, ``(a|b)``, ``(…)?``, ``$(name:wildcard)``,
``$(name:word)``, ``$(name:number)``). A malformed line is named under the editor with its
position (the validator reports it too). The tester ("type a sentence to test") shows whether the
sentence matches — which pattern wins, as ``flowdesk do`` and the command bar would pick it — and
what each capture binds.
"""

from __future__ import annotations

from html import escape
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QLabel, QLineEdit, QPlainTextEdit, QVBoxLayout, QWidget

from engine import TriggerPatternError, all_trigger_matches, compile_trigger


class TriggersEditor(QWidget):
    """``patterns_edited(list[str])`` when the user edits the list; :meth:`set_patterns` to load."""

    patterns_edited = Signal(list)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        self.edit = QPlainTextEdit()
        self.edit.setObjectName("triggerPatterns")
        self.edit.setPlaceholderText(
            "One pattern per line, e.g.\ncreate (a)? $(genre:wildcard) playlist (with)? $(quantity:number) (songs)?"
        )
        self.edit.setFixedHeight(84)
        self.edit.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)  # one pattern per line, as stored
        self.errors = QLabel()
        self.errors.setObjectName("triggerErrors")
        self.errors.setWordWrap(True)
        self.errors.setStyleSheet("color: #f85149;")
        self.errors.hide()
        self.tester = QLineEdit()
        self.tester.setObjectName("triggerTester")
        self.tester.setPlaceholderText("Type a sentence to test")
        self.tester.setClearButtonEnabled(True)
        self.result = QLabel()
        self.result.setObjectName("triggerResult")
        self.result.setWordWrap(True)
        self.result.setTextFormat(self.result.textFormat().RichText)
        for w in (self.edit, self.errors, self.tester, self.result):
            lay.addWidget(w)
        self._loading = False
        self._compiled: list[tuple[str, Any]] = []
        self.edit.textChanged.connect(self._edited)
        self.tester.textChanged.connect(lambda _t: self._test())
        self._recompile()

    # ------------------------------------------------------------------ data
    def patterns(self) -> list[str]:
        return [line.strip() for line in self.edit.toPlainText().splitlines() if line.strip()]

    def set_patterns(self, patterns: list[Any]) -> None:
        text = "\n".join(p for p in patterns if isinstance(p, str))
        if text == "\n".join(self.patterns()):
            return
        self._loading = True
        try:
            self.edit.setPlainText(text)
        finally:
            self._loading = False
        self._recompile()

    def _edited(self) -> None:
        self._recompile()
        if not self._loading:
            self.patterns_edited.emit(self.patterns())

    def _recompile(self) -> None:
        self._compiled = []
        problems = []
        for i, text in enumerate(self.patterns()):
            try:
                self._compiled.append((text, compile_trigger(text)))
            except TriggerPatternError as err:
                problems.append(
                    f"Pattern {i + 1} is malformed at character {err.position + 1}: {err.reason.rstrip('.')}."
                )
        self.errors.setText("\n".join(problems))
        self.errors.setVisible(bool(problems))
        self._test()

    # ------------------------------------------------------------------ tester
    def _test(self) -> None:
        sentence = self.tester.text()
        if not sentence.strip():
            self.result.setText("")
            self.result.hide()
            return
        self.result.show()
        ranked = all_trigger_matches(sentence, self._compiled)
        if not ranked:
            why = "no patterns yet" if not self._compiled else "no pattern matches"
            self.result.setText(f"<span style='color:#f85149'>✗ {why}</span>")
            return
        text, match = ranked[0]
        parts = [f"<span style='color:#3fb950'>✓ matches</span> <code>{escape(text)}</code>"]
        if match.captures:
            parts.append(
                "<br>" + "<br>".join(f"<b>{escape(k)}</b> = {escape(_shown(v))}" for k, v in match.captures.items())
            )
        else:
            parts.append("<br>(no captures)")
        self.result.setText("".join(parts))

    def result_text(self) -> str:
        """The tester's verdict as plain text (for tests and accessibility)."""

        doc = QTextDocument()
        doc.setHtml(self.result.text())
        return doc.toPlainText()


def _shown(value: Any) -> str:
    return f"“{value}”" if isinstance(value, str) else str(value)
