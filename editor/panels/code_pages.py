"""Inspector pages of the kinds whose payload is code: ``code`` (a snippet run in a sandbox) and
``script`` (an imported TypeAgent script, shown read-only with its language).

The code page edits ``language``, ``code``, ``inputs`` (``{name: template}``: each name is a
variable of the code, its value resolved like any template when the step runs), ``timeoutMs``
and ``memoryMb`` through the inspector (one undo step per edit; typing merges). The line a run
failed at is marked in the editor: the inspector hands the page the node's error from the run
state (``host.run_error``), whose message starts ``line N: …``.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtWidgets import QComboBox, QLabel, QPushButton, QSpinBox, QWidget

from .code_edit import LANGUAGE_LABELS, CodeEdit, failed_line, failure_text
from .code_window import CodeWindow
from .core_pages import form_page, hint_label
from .inspector_host import PageHost
from .kv_table import KeyValueTable
from .prompt_edit import title_label

__all__ = ["CodePage", "ScriptPage", "CODE_LANGUAGES"]

CODE_LANGUAGES = ("python", "javascript", "typescript")
_HOW = {
    "python": "Python in a sandbox (pydantic-monty): each input is a variable; the value of the last "
    "expression is the output; print() lines show in the run console.",
    "javascript": "JavaScript in Deno: the body of async function (inputs, api); each input is a "
    "constant (and inputs.NAME); return the output; console.log lines show in the run console.",
    "typescript": "TypeScript in Deno: the body of async function (inputs, api); each input is a "
    "constant (and inputs.NAME); return the output; console.log lines show in the run console.",
}


def _error_line(host: PageHost) -> tuple[int | None, str]:
    error = ""
    run_error = getattr(host, "run_error", None)
    if run_error is not None and host.node_id is not None:
        error = run_error(host.node_id) or ""
    return failed_line(error), error


class CodePage(QWidget):
    """The ``code`` node: its language, code, inputs and limits."""

    #: Fields this page edits that the inspector's policy section would show again.
    owns_fields = ("timeoutMs",)

    def __init__(self, host: PageHost) -> None:
        super().__init__()
        self.host = host
        self.setObjectName("codePage")
        form = form_page(self)
        form.addRow(title_label("Code"))
        self.language = QComboBox()
        self.language.setObjectName("codeLanguage")
        for lang in CODE_LANGUAGES:
            self.language.addItem(LANGUAGE_LABELS[lang], lang)
        self.language.currentIndexChanged.connect(self._language_picked)
        form.addRow("Language", self.language)
        self.how = hint_label("")
        form.addRow(self.how)
        self.editor = CodeEdit()
        host.watch(self.editor)
        self.editor.textChanged.connect(self._code_typed)
        form.addRow("Code", self.editor)
        self.larger_button = _larger_button("Edit in a larger window…", "Edit the code in a window of its own")
        self.larger_button.clicked.connect(self.open_larger)
        form.addRow(self.larger_button)
        self.failure = QLabel()
        self.failure.setObjectName("codeFailure")
        self.failure.setWordWrap(True)
        self.failure.setStyleSheet("color: #f85149;")
        self.failure.hide()
        form.addRow(self.failure)
        self.inputs = KeyValueTable("Name", "Value (template)")
        self.inputs.setObjectName("codeInputs")
        self.inputs.table.setToolTip("Each name is a variable of the code; its value is a template ({{name}}, text)")
        self.inputs.rows_edited.connect(self._inputs_edited)
        form.addRow("Inputs", self.inputs)
        self.timeout = self._spin(1, 3_600_000, " ms", 1000)
        self.timeout.setObjectName("codeTimeout")
        self.timeout.valueChanged.connect(lambda v: host.edit_field("timeoutMs", v, True))
        self.memory = self._spin(16, 65_536, " MB", 64)
        self.memory.setObjectName("codeMemory")
        self.memory.valueChanged.connect(lambda v: host.edit_field("memoryMb", v, True))
        self.timeout.setToolTip("The step is stopped after this long and fails with 'timed out'")
        self.memory.setToolTip("The sandbox's memory limit; going over it fails the step ('memory')")
        form.addRow("Time limit", self.timeout)
        form.addRow("Memory limit", self.memory)
        self.run_button = QPushButton("Run this node…")
        self.run_button.setObjectName("runThisNode")
        self.run_button.setToolTip("Run only this node with sample inputs (nothing is saved)")
        self.run_button.clicked.connect(self._run_requested)
        form.addRow(self.run_button)

    def _spin(self, low: int, high: int, suffix: str, step: int) -> QSpinBox:
        spin = QSpinBox()
        spin.setRange(low, high)
        spin.setSuffix(suffix)
        spin.setSingleStep(step)
        spin.setGroupSeparatorShown(True)
        spin.setKeyboardTracking(False)  # one edit when the number is typed, not one per digit
        self.host.watch(spin)
        return spin

    # ------------------------------------------------------------------ load
    def load(self, data: dict[str, Any]) -> None:
        language = str(data.get("language") or "python")
        ix = self.language.findData(language)
        if ix < 0:  # a language the page does not offer: shown as written
            self.language.addItem(language, language)
            ix = self.language.count() - 1
        self.language.setCurrentIndex(ix)
        self.how.setText(_HOW.get(language, ""))
        self.editor.set_language(language)
        self.editor.set_text_keep_cursor(str(data.get("code") or ""))
        inputs = data.get("inputs") or {}
        rows = [{"key": k, "value": v if isinstance(v, str) else _json(v)} for k, v in inputs.items()]
        if [r for r in self.inputs.rows() if r["key"]] != rows:
            self.inputs.set_rows(rows)
        self.timeout.setValue(int(data.get("timeoutMs") or 30_000))
        self.memory.setValue(int(data.get("memoryMb") or 256))
        self.show_failure()

    def show_failure(self) -> None:
        """Mark the line the shown node's last run failed at (from the run state)."""
        line, error = _error_line(self.host)
        self.editor.mark_line(line)
        self.failure.setVisible(bool(error))
        where, _, rest = failure_text(error).partition(": ")
        self.failure.setText(f"{where} in the last run: {rest}" if error else "")

    # ------------------------------------------------------------------ edits
    def _language_picked(self, _index: int) -> None:
        language = self.language.currentData()
        self.editor.set_language(language)
        self.how.setText(_HOW.get(language, ""))
        self.host.edit_field("language", language, False)

    def _code_typed(self) -> None:
        self.host.edit_field("code", self.editor.toPlainText(), True)

    def _inputs_edited(self, rows: list[dict[str, str]]) -> None:
        node = self.host.doc.node(self.host.node_id or "")
        current = dict(getattr(node.data, "inputs", {}) or {}) if node is not None else {}
        inputs = {r["key"].strip(): r["value"] for r in rows if r["key"].strip()}
        if inputs == current:
            self.inputs.set_rows(rows)  # a row being added (no name yet): shown, nothing to save
            return
        self.host.edit_field("inputs", inputs, False)

    def open_larger(self) -> CodeWindow:
        """The code in a larger window; Apply makes it the node's code (one undo step)."""
        window = CodeWindow(
            _window_title(self.host, "Code"),
            self.editor.toPlainText(),
            str(self.language.currentData() or "python"),
            marked_line=self.editor.marked_line,
            parent=self.window(),
        )
        window.accepted.connect(lambda: self._apply_larger(window.text()))
        window.open()
        return window

    def _apply_larger(self, text: str) -> None:
        if text != self.editor.toPlainText():
            self.host.edit_field("code", text, False)
            self.editor.set_text_keep_cursor(text)

    def _run_requested(self) -> None:
        request = getattr(self.host, "request_run_node", None)
        if request is not None and self.host.node_id is not None:
            request(self.host.node_id)


def _larger_button(text: str, tip: str) -> QPushButton:
    button = QPushButton(text)
    button.setObjectName("codeLarger")
    button.setToolTip(tip)
    return button


def _window_title(host: PageHost, what: str) -> str:
    node = host.doc.node(host.node_id or "") if host.node_id else None
    label = str(getattr(node.data, "label", "") or "") if node is not None else ""
    return f"{what} — {label}" if label else what


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


class ScriptPage(QWidget):
    """The ``script`` node: an imported script, shown highlighted with its language (read-only)."""

    def __init__(self, host: PageHost) -> None:
        super().__init__()
        self.host = host
        self.setObjectName("scriptPage")
        form = form_page(self)
        form.addRow(title_label("Script"))
        self.language = QLabel()
        self.language.setObjectName("scriptLanguage")
        form.addRow("Language", self.language)
        self.kind = hint_label("")
        form.addRow(self.kind)
        self.editor = CodeEdit()
        self.editor.setReadOnly(True)
        form.addRow("Script", self.editor)
        self.larger_button = _larger_button("View in a larger window…", "Read the script in a window of its own")
        self.larger_button.clicked.connect(self.open_larger)
        form.addRow(self.larger_button)
        self.failure = QLabel()
        self.failure.setWordWrap(True)
        self.failure.setStyleSheet("color: #f85149;")
        self.failure.hide()
        form.addRow(self.failure)

    def load(self, data: dict[str, Any]) -> None:
        language = str(data.get("language") or "")
        self.language.setText(LANGUAGE_LABELS.get(language, language or "unknown"))
        recipe = data.get("recipeKind")
        self.kind.setText(f"Imported from a TypeAgent {recipe} recipe, kept verbatim." if recipe else "")
        self.kind.setVisible(bool(recipe))
        self.editor.set_language(language)
        self.editor.set_text_keep_cursor(str(data.get("script") or ""))
        line, error = _error_line(self.host)
        self.editor.mark_line(line)
        self.failure.setVisible(bool(error))
        self.failure.setText(f"The last run failed: {error}" if error else "")

    def open_larger(self) -> CodeWindow:
        """The script in a larger window, read-only."""
        window = CodeWindow(
            _window_title(self.host, "Script"),
            self.editor.toPlainText(),
            self.editor.highlighter.language,
            read_only=True,
            marked_line=self.editor.marked_line,
            parent=self.window(),
        )
        window.open()
        return window
