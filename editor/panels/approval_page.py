"""The ``approval`` node's inspector page: its message, its options and its timeout.

Options (DESIGN.md "Serving, inbox and schedules"): each label is one more output handle beside
Approve and Reject, named by the label itself. Renaming a label carries its links along, and
removing one removes its links, in one undo step (:meth:`WorkflowDocument.set_labelled_branches`).
A timeout (seconds; 0: wait for ever) with the decision taken then (``onTimeout``). Problems
(an empty, repeated or reserved label) are said under the list, as validation says them.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QToolButton,
    QWidget,
)

from ..resources import icon_path
from .core_pages import form_page, hint_label
from .inspector_host import PageHost
from .prompt_edit import PromptEdit, title_label

__all__ = ["ApprovalPage"]

_RESERVED = ("approve", "reject")


class ApprovalPage(QWidget):
    """An approval: the message shown to whoever decides, more outcomes, and a timeout."""

    def __init__(self, host: PageHost) -> None:
        super().__init__()
        self.host = host
        self._filling = False
        self._labels: list[str] = []
        form = form_page(self)
        self.prompt = PromptEdit("The message shown to the approver")
        host.bind_text(self.prompt, "prompt")
        form.addRow(title_label("Approval"))
        form.addRow("Message to the approver", self.prompt)
        form.addRow(
            hint_label("The run pauses here until someone approves or rejects; each decision follows its branch.")
        )
        # options
        self.options = QListWidget()
        self.options.setObjectName("approvalOptions")
        self.options.setMaximumHeight(110)
        self.options.setToolTip("More outcomes: each label is a button on the approval card and a branch of its own")
        self.options.itemChanged.connect(self._option_edited)
        host.watch(self.options)
        form.addRow("More outcomes (options)", self.options)
        buttons = QWidget()
        row = QHBoxLayout(buttons)
        row.setContentsMargins(0, 0, 0, 0)
        self.add_button = QPushButton(QIcon(icon_path("add")), "Add option")
        self.add_button.setObjectName("addApprovalOption")
        self.add_button.clicked.connect(self.add_option)
        self.remove_button = QToolButton()
        self.remove_button.setIcon(QIcon(icon_path("delete")))
        self.remove_button.setToolTip("Remove the selected option (its link goes too)")
        self.remove_button.clicked.connect(lambda _=False: self.remove_option(self.options.currentRow()))
        row.addWidget(self.add_button)
        row.addStretch(1)
        row.addWidget(self.remove_button)
        form.addRow(buttons)
        self.problem = QLabel()
        self.problem.setObjectName("optionsProblem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #c0392b;")
        self.problem.setVisible(False)
        form.addRow(self.problem)
        # timeout
        self.timeout = QSpinBox()
        self.timeout.setObjectName("approvalTimeout")
        self.timeout.setRange(0, 30 * 24 * 3600)
        self.timeout.setSuffix(" s")
        self.timeout.setSpecialValueText("never")
        self.timeout.setToolTip("How long the approval waits before it decides by itself (0: for ever)")
        self.timeout.valueChanged.connect(self._timeout_edited)
        host.watch(self.timeout)
        self.on_timeout = QComboBox()
        self.on_timeout.setObjectName("approvalOnTimeout")
        self.on_timeout.setToolTip("The decision the run takes when nobody answers in time")
        self.on_timeout.currentTextChanged.connect(self._on_timeout_edited)
        form.addRow("Time out after", self.timeout)
        form.addRow("Then decide", self.on_timeout)

    def heading(self, node: Any) -> str:
        return f"Approval · {node.id}"

    # ------------------------------------------------------------------ showing
    def load(self, data: dict[str, Any]) -> None:
        self.prompt.set_text_keep_cursor(data.get("prompt") or "")
        labels = [str(o) for o in data.get("options") or []]
        self._filling = True
        try:
            if labels != self._labels or self.options.count() != len(labels):
                current = self.options.currentRow()
                self.options.clear()
                for label in labels:
                    item = QListWidgetItem(label)
                    item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
                    item.setToolTip(f"Branch '{label}'")
                    self.options.addItem(item)
                if 0 <= current < len(labels):
                    self.options.setCurrentRow(current)
            self._labels = labels
            ms = data.get("timeoutMs")
            seconds = round(ms / 1000) if isinstance(ms, (int, float)) and ms > 0 else 0
            if self.timeout.value() != seconds:
                self.timeout.setValue(seconds)
            choices = ["reject", "approve", *[lab for lab in labels if lab.strip() and lab.lower() not in _RESERVED]]
            if [self.on_timeout.itemText(i) for i in range(self.on_timeout.count())] != choices:
                self.on_timeout.clear()
                self.on_timeout.addItems(choices)
            chosen = data.get("onTimeout") or "reject"
            self.on_timeout.setCurrentText(chosen if chosen in choices else "reject")
            self.on_timeout.setEnabled(seconds > 0)
        finally:
            self._filling = False
        self._show_problems(labels)
        self.remove_button.setEnabled(bool(labels))

    def _show_problems(self, labels: list[str]) -> None:
        seen: set[str] = set()
        text = ""
        for i, label in enumerate(labels):
            low = label.strip().lower()
            if not low:
                text = f"Option {i + 1} has no label: nobody can choose it."
            elif low in _RESERVED:
                text = f"'{label}' is already a decision of every approval; give the option another label."
            elif low in seen:
                text = f"Two options are labelled '{label}': a decision could not tell them apart."
            seen.add(low)
            if text:
                break
        self.problem.setText(text)
        self.problem.setVisible(bool(text))

    # ------------------------------------------------------------------ editing
    def _set_labels(self, labels: list[str], renames: dict[str, str], text: str) -> None:
        host = self.host
        if host.node_id is None:
            return
        host.doc.end_merge()
        host.doc.set_labelled_branches(host.node_id, "options", labels, renames, text)

    def add_option(self) -> None:
        if self.host.loading or self.host.node_id is None:
            return
        taken = {lab.lower() for lab in self._labels}
        n = len(self._labels) + 1
        while f"option {n}" in taken:
            n += 1
        self._set_labels([*self._labels, f"Option {n}"], {}, "Add option")
        self.options.setCurrentRow(len(self._labels) - 1)

    def remove_option(self, row: int) -> None:
        if not 0 <= row < len(self._labels):
            return
        labels = list(self._labels)
        del labels[row]
        self._set_labels(labels, {}, "Remove option")

    def _option_edited(self, item: QListWidgetItem) -> None:
        if self._filling or self.host.loading:
            return
        row = self.options.row(item)
        if not 0 <= row < len(self._labels):
            return
        old, new = self._labels[row], item.text().strip()
        if new == old:
            return
        labels = list(self._labels)
        labels[row] = new
        self._set_labels(labels, {old: new}, "Rename option")

    def _timeout_edited(self, seconds: int) -> None:
        if self._filling or self.host.loading:
            return
        self.host.edit_field("timeoutMs", seconds * 1000 if seconds > 0 else None, False)
        self.on_timeout.setEnabled(seconds > 0)

    def _on_timeout_edited(self, text: str) -> None:
        if self._filling or self.host.loading or not text:
            return
        self.host.edit_field("onTimeout", None if text == "reject" else text, False)
