"""The workflow's trigger phrases, edited on the workflow page of the inspector, with a live tester.

One pattern per line (TypeAgent's grammar: words, ``(a|b)``, ``(…)?``, ``$(name:wildcard)``,
``$(name:word)``, ``$(name:number)``). A malformed line is named under the editor with its
position (the validator reports it too). The tester ("type a sentence to test") shows whether the
sentence matches — which pattern wins, as ``flowdesk do`` and the command bar would pick it — and
what each capture binds.

Learned triggers (``{"pattern", "learned": true}``: sentences the model routed to this flow and
the user confirmed, kept by ``flowdesk do`` and the command bar) are listed under the editor,
each removable; entries kept as objects (TypeAgent's ``isAlias``/``examples``) keep their fields
while their pattern line stays as it is.
"""

from __future__ import annotations

from html import escape
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from engine import TriggerPatternError, all_trigger_matches, compile_trigger


def _pattern(entry: Any) -> str | None:
    if isinstance(entry, str):
        return entry
    if isinstance(entry, dict) and isinstance(entry.get("pattern"), str):
        return entry["pattern"]
    return None


def _learned(entry: Any) -> bool:
    return isinstance(entry, dict) and bool(entry.get("learned")) and _pattern(entry) is not None


class TriggersEditor(QWidget):
    """``patterns_edited(list)`` when the user edits the list (the workflow's whole ``triggers``:
    strings, and the objects it had); :meth:`set_patterns` to load."""

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
        self.learned_label = QLabel("Learned from confirmed requests (they run this flow with no model):")
        self.learned_label.setWordWrap(True)
        self.learned_list = QListWidget()
        self.learned_list.setObjectName("learnedTriggers")
        self.learned_list.setFixedHeight(64)
        self.remove_learned = QPushButton("Remove")
        self.remove_learned.setObjectName("removeLearnedTrigger")
        self.remove_learned.setToolTip("Forget the selected learned trigger")
        self.remove_learned.clicked.connect(self._remove_selected_learned)
        self.learned_box = QWidget()
        row = QHBoxLayout(self.learned_box)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.learned_list, 1)
        row.addWidget(self.remove_learned)
        for w in (self.edit, self.errors, self.learned_label, self.learned_box, self.tester, self.result):
            lay.addWidget(w)
        self._entries: list[Any] = []  # the workflow's triggers as loaded (objects kept)
        self._show_learned()
        self._loading = False
        self._compiled: list[tuple[str, Any]] = []
        self.edit.textChanged.connect(self._edited)
        self.tester.textChanged.connect(lambda _t: self._test())
        self._recompile()

    # ------------------------------------------------------------------ data
    def patterns(self) -> list[str]:
        return [line.strip() for line in self.edit.toPlainText().splitlines() if line.strip()]

    def learned(self) -> list[str]:
        return [str(_pattern(e)) for e in self._entries if _learned(e)]

    def entries(self) -> list[Any]:
        """The whole ``triggers`` list: the lines typed (an object entry kept for its line) and
        the learned triggers after them."""
        objects = {_pattern(e): e for e in self._entries if isinstance(e, dict) and not _learned(e)}
        typed = [objects.get(line, line) for line in self.patterns()]
        return typed + [e for e in self._entries if _learned(e)]

    def set_patterns(self, patterns: list[Any]) -> None:
        entries = [e for e in patterns if _pattern(e) is not None]
        text = "\n".join(str(_pattern(e)) for e in entries if not _learned(e))
        learned_before = self.learned()
        self._entries = entries
        if self.learned() != learned_before:
            self._show_learned()
        if text == "\n".join(self.patterns()):
            self._recompile()
            return
        self._loading = True
        try:
            self.edit.setPlainText(text)
        finally:
            self._loading = False
        self._recompile()

    def _show_learned(self) -> None:
        self.learned_list.clear()
        self.learned_list.addItems(self.learned())
        shown = bool(self.learned())
        self.learned_label.setVisible(shown)
        self.learned_box.setVisible(shown)

    def remove_learned_trigger(self, pattern: str) -> None:
        """Forget one learned trigger (an edit of the workflow, undoable like any other)."""
        self._entries = [e for e in self._entries if not (_learned(e) and _pattern(e) == pattern)]
        self._show_learned()
        self._recompile()
        self.patterns_edited.emit(self.entries())

    def _remove_selected_learned(self) -> None:
        item = self.learned_list.currentItem()
        if item is not None:
            self.remove_learned_trigger(item.text())

    def _edited(self) -> None:
        self._recompile()
        if not self._loading:
            entries = self.entries()
            self._entries = entries
            self.patterns_edited.emit(entries)

    def _recompile(self) -> None:
        self._compiled = []
        problems = []
        for i, text in enumerate(self.patterns() + self.learned()):
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
