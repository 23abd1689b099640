"""Approval cards: one card per approval waiting for a decision, in the order they are asked.

Invariants
* The panel shows exactly the requests it was last given (``set_requests``); the first is
  the *active* card (Approve / Reject enabled, note field editable), the others wait,
  showing their prompt and the output they will review.
* An approval's options are buttons beside Approve / Reject (the decision is the label); one
  that times out says when and what it then takes.
* A decision is a request, not an action: the panel emits ``decision_requested(node_id,
  decision, note)`` and disables its buttons until it is given new requests, so a
  double click cannot answer twice.
* Cards are rebuilt only when the requests change (node ids and inputs), so a note
  being typed survives unrelated refreshes.
* Edit before approving: "Edit" turns the output under review into an editable text; "Show
  changes" renders a word-level diff against the original. ``edited_output`` is the edited
  text (None when untouched); the console sends it with the decision, so it is what flows on.
* Keyboard: Ctrl+Return approves, Ctrl+Shift+Return rejects the active card (the
  shortcuts live on the panel's parent console, so they work wherever focus is in it).
* A tool call waiting for approval (``request.tool_call``) shows the tool (and its MCP server)
  and its arguments as editable JSON, checked as typed against the tool's input schema
  (``engine.check_tool_arguments``): Approve is enabled only while they are a valid object.
  ``edited_arguments`` is the edit (None when untouched); the console sends it with the decision.
"""

from __future__ import annotations

import json
from datetime import datetime

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from engine import check_tool_arguments, word_diff

from .bridge import ApprovalRequest

__all__ = ["ApprovalCard", "ApprovalsPanel"]


class _FitBrowser(QTextBrowser):
    """A text browser as tall as its content, between a minimum and a maximum height."""

    def __init__(self, lo: int, hi: int) -> None:
        super().__init__()
        self._lo, self._hi = lo, hi
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAsNeeded)

    def set_content(self, markdown: str) -> None:
        self.setMarkdown(markdown)
        # a first guess before the real width is known (resizeEvent refines it)
        lines = sum(max(1, len(line) // 110 + 1) for line in markdown.splitlines() or [""])
        spacing = self.fontMetrics().lineSpacing()
        self.setFixedHeight(max(self._lo, min(self._hi, lines * (spacing + 4) + 12)))

    def _fit(self) -> None:
        doc = self.document()
        doc.setTextWidth(self.viewport().width())
        h = int(doc.size().height()) + 2 * self.frameWidth() + 4
        h = max(self._lo, min(self._hi, h))
        if h != self.height():
            self.setFixedHeight(h)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._fit()


class ApprovalCard(QFrame):
    """One approval: prompt, the output under review (Markdown), a note, Approve / Reject."""

    decision_requested = Signal(str, str, str)  # node_id, "approve"|"reject"|an option's label, note

    def __init__(self, request: ApprovalRequest, position: int, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.request = request
        self.setObjectName("approvalCard")
        self.setProperty("active", request.active)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        accent = "#d97706" if request.active else "#9ca3af"
        self.setStyleSheet(
            f"#approvalCard {{ border: 1px solid {accent}; border-left: 4px solid {accent}; border-radius: 6px;"
            f" }} #approvalCard QLabel {{ background: transparent; border: none; }}"
        )
        lay = QVBoxLayout(self)
        lay.setContentsMargins(10, 8, 10, 8)
        lay.setSpacing(6)

        # The card sits beside the log, so it is narrow: a title line, the controls (note,
        # Approve, Reject) on the next line where they stay visible, then what is reviewed.
        state = "Waiting for your decision" if request.active else f"Next in line (#{position + 1})"
        self.title_label = QLabel(f"<b>{_esc(request.title)}</b> &nbsp;<span style='color:{accent}'>{state}</span>")
        self.title_label.setToolTip(f"Node {request.node_id}")
        lay.addWidget(self.title_label)
        head = QHBoxLayout()
        head.setSpacing(6)
        self.note_edit = QLineEdit()
        self.note_edit.setPlaceholderText("Note for the next step (optional)")
        self.note_edit.setEnabled(request.active)
        head.addWidget(self.note_edit, 1)
        self.approve_button = QPushButton("Approve")
        self.approve_button.setObjectName("approveButton")
        self.approve_button.setToolTip("Approve and continue (Ctrl+Return)")
        self.reject_button = QPushButton("Reject")
        self.reject_button.setObjectName("rejectButton")
        self.reject_button.setToolTip("Reject and continue on the reject branch (Ctrl+Shift+Return)")
        if request.active:
            self.approve_button.setStyleSheet(
                "QPushButton { background: #15803d; color: white; padding: 3px 14px;"
                " border-radius: 4px; } QPushButton:disabled { background: #5f7a68; }"
            )
            self.reject_button.setStyleSheet(
                "QPushButton { background: #b91c1c; color: white; padding: 3px 14px;"
                " border-radius: 4px; } QPushButton:disabled { background: #7f5a5a; }"
            )
        for b in (self.approve_button, self.reject_button):
            b.setEnabled(request.active)
            head.addWidget(b)
        # An approval's options: one more button each, beside Approve and Reject (its own branch).
        self.option_buttons: list[QPushButton] = []
        for label in request.options:
            b = QPushButton(label)
            b.setObjectName("optionButton")
            b.setProperty("decision", label)
            b.setToolTip(f"Continue on the '{label}' branch")
            b.setEnabled(request.active)
            b.clicked.connect(lambda _=False, label=label: self.decide(label))
            head.addWidget(b)
            self.option_buttons.append(b)
        if not request.active:  # a waiting card shows what it will ask, not controls it cannot use yet
            head.addStretch(1)
            for w in (self.note_edit, self.approve_button, self.reject_button, *self.option_buttons):
                w.setVisible(False)
        lay.addLayout(head)
        self.deadline_label = QLabel(self._deadline_text())
        self.deadline_label.setObjectName("approvalDeadline")
        self.deadline_label.setStyleSheet("color: #d97706")
        self.deadline_label.setVisible(request.deadline is not None)
        lay.addWidget(self.deadline_label)

        self.prompt_label = QLabel(request.prompt)
        self.prompt_label.setWordWrap(True)
        self.prompt_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.prompt_label)

        self.review = _FitBrowser(28, 130 if request.active else 60)
        self.review.setObjectName("approvalReview")
        self.review.setOpenExternalLinks(True)
        self.review.set_content(request.input_text or "*(empty output)*")
        self.review.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        lay.addWidget(self.review)
        # Edit before approving: the text under review, editable, and its changes as a word diff.
        self.editor = QPlainTextEdit(request.input_text, self)
        self.editor.setObjectName("approvalEditor")
        self.editor.setFixedHeight(130)
        lay.addWidget(self.editor)
        self.editor.setVisible(False)
        self.changes = QTextBrowser(self)
        self.changes.setObjectName("approvalChanges")
        self.changes.setFixedHeight(90)
        lay.addWidget(self.changes)
        self.changes.setVisible(False)
        tools = QHBoxLayout()
        tools.setSpacing(8)
        self.edit_button = QPushButton("Edit")
        self.edit_button.setObjectName("approvalEditButton")
        self.edit_button.setCheckable(True)
        self.edit_button.setToolTip("Edit the output before deciding: the edited text is what flows on")
        self.changes_box = QCheckBox("Show changes")
        self.changes_box.setObjectName("approvalShowChanges")
        self.changes_box.setEnabled(False)
        self.revert_button = QPushButton("Revert")
        self.revert_button.setEnabled(False)
        self.edited_label = QLabel("")
        self.edited_label.setStyleSheet("color: #d97706")
        # Wrapped, so that it never widens the card past the console (Reject went off the side).
        self.edited_label.setWordWrap(True)
        for w in (self.edit_button, self.changes_box, self.revert_button, self.edited_label):
            tools.addWidget(w)
        tools.addStretch(1)
        self._tools = QWidget(self)
        self._tools.setLayout(tools)
        tools.setContentsMargins(0, 0, 0, 0)
        self._tools.setVisible(request.active)
        lay.addWidget(self._tools)
        self.edit_button.toggled.connect(self._set_editing)
        self.editor.textChanged.connect(self._edited)
        self.changes_box.toggled.connect(self._edited)
        self.revert_button.clicked.connect(lambda: self.editor.setPlainText(self.request.input_text))
        self.approve_button.clicked.connect(lambda: self.decide("approve"))
        self.reject_button.clicked.connect(lambda: self.decide("reject"))
        self.arguments_edit: QPlainTextEdit | None = None
        if request.tool_call:
            self._tool_call_part(lay, request.tool_call)

    # ---------------------------------------------------------------- a tool call's arguments
    def _tool_call_part(self, lay: QVBoxLayout, call: dict) -> None:
        """The tool and its arguments (editable JSON) instead of an output to review."""
        tool = str(call.get("tool") or "")
        shown = f"{call['server']}/{tool}" if call.get("server") else tool
        self.tool_label = QLabel(f"Tool: <b>{_esc(shown)}</b>")
        self.tool_label.setObjectName("approvalTool")
        lay.insertWidget(lay.indexOf(self.review), self.tool_label)
        for w in (self.review, self._tools):
            w.setVisible(False)
        self._original_arguments = call.get("arguments") if isinstance(call.get("arguments"), dict) else {}
        self.arguments_edit = QPlainTextEdit(json.dumps(self._original_arguments, indent=2, ensure_ascii=False), self)
        self.arguments_edit.setObjectName("approvalArguments")
        self.arguments_edit.setFixedHeight(110)
        self.arguments_edit.setReadOnly(not self.request.active)
        lay.addWidget(self.arguments_edit)
        self.arguments_error = QLabel("")
        self.arguments_error.setObjectName("approvalArgumentsError")
        self.arguments_error.setStyleSheet("color: #dc2626")
        self.arguments_error.setWordWrap(True)
        lay.addWidget(self.arguments_error)
        self.arguments_edit.textChanged.connect(self._arguments_changed)

    def arguments_problem(self) -> str | None:
        """Why the arguments as typed cannot be sent (None: they can)."""
        if self.arguments_edit is None:
            return None
        try:
            value = json.loads(self.arguments_edit.toPlainText() or "{}")
        except ValueError as err:
            return f"Not valid JSON: {err}"
        schema = (self.request.tool_call or {}).get("schema")
        return check_tool_arguments(schema if isinstance(schema, dict) else None, value)

    def _arguments_changed(self) -> None:
        problem = self.arguments_problem()
        self.arguments_error.setText(problem or "")
        if self.request.active:
            self.approve_button.setEnabled(problem is None)

    @property
    def edited_arguments(self) -> dict | None:
        """The arguments as edited (None when untouched or not a tool call)."""
        if self.arguments_edit is None or self.arguments_problem() is not None:
            return None
        value = json.loads(self.arguments_edit.toPlainText() or "{}")
        return value if value != self._original_arguments else None

    def _deadline_text(self) -> str:
        """ "Times out at 14:05:10: reject" for an approval that times out ("" otherwise)."""
        r = self.request
        if r.deadline is None:
            return ""
        at = datetime.fromtimestamp(r.deadline)
        shown = at.strftime("%H:%M:%S" if at.date() == datetime.now().date() else "%Y-%m-%d %H:%M")
        return f"Times out at {shown}: then it takes '{r.on_timeout}'"

    @property
    def edited_output(self) -> str | None:
        """The reviewer's edit of the output (None when not edited)."""
        text = self.editor.toPlainText()
        return text if text != self.request.input_text else None

    def set_edited_text(self, text: str) -> None:
        self.edit_button.setChecked(True)
        self.editor.setPlainText(text)

    def _set_editing(self, on: bool) -> None:
        self.editor.setVisible(on)
        self.review.setVisible(not on)
        self.changes_box.setEnabled(on)
        if on:
            self.editor.setFocus(Qt.FocusReason.OtherFocusReason)
        self._edited()

    def _edited(self) -> None:
        changed = self.edited_output is not None
        self.revert_button.setEnabled(changed)
        self.edited_label.setText("edited: the edited text flows on" if changed else "")
        show = self.changes_box.isChecked() and self.edit_button.isChecked()
        self.changes.setVisible(show)
        if show:
            self.changes.setHtml(diff_html(self.request.input_text, self.editor.toPlainText()))

    def decide(self, decision: str) -> None:
        if not self.request.active or not self.reject_button.isEnabled():
            return
        if decision == "approve" and (not self.approve_button.isEnabled() or self.arguments_problem()):
            return
        self.approve_button.setEnabled(False)
        self.reject_button.setEnabled(False)
        for b in self.option_buttons:
            b.setEnabled(False)
        self.decision_requested.emit(self.request.node_id, decision, self.note_edit.text())


class ApprovalsPanel(QWidget):
    """The cards of every approval waiting, in order; hidden when none waits."""

    decision_requested = Signal(str, str, str)  # node_id, decision, note
    waiting_changed = Signal(bool)  # True while at least one approval waits

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("approvalsPanel")
        self._key: tuple = ()
        self.cards: list[ApprovalCard] = []
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self._scroll = QScrollArea()
        self._scroll.setWidgetResizable(True)
        self._scroll.setFrameShape(QFrame.Shape.NoFrame)
        self._inner = QWidget()
        self._layout = QVBoxLayout(self._inner)
        self._layout.setContentsMargins(4, 4, 4, 4)
        self._layout.setSpacing(6)
        self._layout.addStretch(1)
        self._scroll.setWidget(self._inner)
        outer.addWidget(self._scroll)

        self.approve_action = QAction("Approve", self)
        self.approve_action.setShortcut(QKeySequence("Ctrl+Return"))
        self.approve_action.triggered.connect(lambda: self.decide_active("approve"))
        self.reject_action = QAction("Reject", self)
        self.reject_action.setShortcut(QKeySequence("Ctrl+Shift+Return"))
        self.reject_action.triggered.connect(lambda: self.decide_active("reject"))
        for a in (self.approve_action, self.reject_action):
            a.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            a.setEnabled(False)
        self.setVisible(False)

    @property
    def active_card(self) -> ApprovalCard | None:
        return self.cards[0] if self.cards and self.cards[0].request.active else None

    def set_requests(self, requests: list[ApprovalRequest]) -> None:
        key = tuple(
            (r.node_id, r.input_text, r.active, json.dumps(r.tool_call, default=str), r.options, r.deadline)
            for r in requests
        )
        if key == self._key:
            if self.active_card is not None:  # same requests: re-enable after a refused decision
                self.active_card.approve_button.setEnabled(True)
                self.active_card.reject_button.setEnabled(True)
                for b in self.active_card.option_buttons:
                    b.setEnabled(True)
            return
        was_waiting = bool(self._key)
        self._key = key
        for card in self.cards:
            card.setParent(None)
            card.deleteLater()
        self.cards = []
        for i, req in enumerate(requests):
            card = ApprovalCard(req, i, self._inner)
            card.decision_requested.connect(self.decision_requested)
            self._layout.insertWidget(i, card)
            self.cards.append(card)
        waiting = bool(requests)
        self.setVisible(waiting)
        for a in (self.approve_action, self.reject_action):
            a.setEnabled(waiting)
        if self.cards:
            self.cards[0].note_edit.setFocus(Qt.FocusReason.OtherFocusReason)
        self._fit_height()
        QTimer.singleShot(0, self, self._fit_height)  # again once the cards have their real width
        if waiting != was_waiting:
            self.waiting_changed.emit(waiting)

    def _fit_height(self) -> None:
        self._hint = min(360, self._layout.sizeHint().height() + 6) if self.cards else 0
        self.setMinimumHeight(min(110, self._hint))
        self.updateGeometry()

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(400, getattr(self, "_hint", 0) or 0)

    def edited_output(self, node_id: str) -> str | None:
        """The edited output of the card for ``node_id`` (None when not edited)."""
        for card in self.cards:
            if card.request.node_id == node_id:
                return card.edited_output
        return None

    def edited_arguments(self, node_id: str) -> dict | None:
        """The edited arguments of the tool call card for ``node_id`` (None when not edited)."""
        for card in self.cards:
            if card.request.node_id == node_id:
                return card.edited_arguments
        return None

    def decide_active(self, decision: str) -> None:
        card = self.active_card
        if card is not None:
            card.decide(decision)


def diff_html(old: str, new: str) -> str:
    """A word-level diff as HTML: deletions struck through in red, insertions in green."""
    parts = []
    for op, text in word_diff(old, new):
        t = _esc(text).replace("\n", "<br>")
        if op == "delete":
            parts.append(f"<span style='background:#5c1d1d;color:#fca5a5;text-decoration:line-through'>{t}</span>")
        elif op == "insert":
            parts.append(f"<span style='background:#14532d;color:#86efac'>{t}</span>")
        else:
            parts.append(t)
    return "<div style='white-space:pre-wrap'>" + "".join(parts) + "</div>"


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
