"""The run console's header row: the run's input, Run / Cancel, the status and the Export menu.

A plain widget: it holds the controls and shows what it is told (status, elapsed time,
run id, errors); the console wires it to the bridge.
"""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QBoxLayout,
    QHBoxLayout,
    QLabel,
    QMenu,
    QMessageBox,
    QPlainTextEdit,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine import RunState, Workflow, format_cost, model_prices, run_costs

__all__ = ["RunHeader", "run_actions", "STATUS_TEXT", "elapsed_text", "cost_breakdown", "LONG_INPUT"]

STATUS_TEXT = {
    "pending": ("Ready", "#6b7280"),
    "running": ("● Running", "#2563eb"),
    "paused": ("● Paused — waiting for approval", "#d97706"),
    "completed": ("● Completed", "#15803d"),
    "failed": ("● Failed", "#dc2626"),
    "cancelled": ("● Cancelled", "#6b7280"),
}


LOCAL_MODEL_NOTICE = (
    "This run uses the embedded local model, a tiny one (135M parameters) for trying flows "
    "offline: its answers are rough. For real answers pick another provider and model in "
    "Run ▸ LLM Provider or Run ▸ Provider Settings (or set FLOWDESK_LOCAL_MODEL to a larger "
    "GGUF file)."
)


def elapsed_text(seconds: float) -> str:
    seconds = max(0.0, seconds)
    m, s = divmod(seconds, 60)
    return f"{int(m):02d}:{s:04.1f}"


INPUT_PLACEHOLDER = "Initial input for the run (empty: the Start node's own text)"
# When the Start node has no text either: an empty box would start the flow with nothing.
NO_START_TEXT_PLACEHOLDER = (
    "Input for the run: the Start node has no text of its own, so the first step gets what you type here"
)

# Characters of the Start node's text shown in the run input box; a longer text is used as
# is but not laid out in the box (a long line costs QPlainTextEdit seconds).
LONG_INPUT = 4000


def input_hint(start_text: str) -> str:
    """The input box's placeholder: what an empty box runs with (the Start node's text, or nothing)."""
    return INPUT_PLACEHOLDER if start_text else NO_START_TEXT_PLACEHOLDER


def cost_breakdown(costs: dict[str, Any]) -> str:
    """The cost's tooltip: tokens in and out, the cost by model, and the models with no price."""
    total = costs["total"]
    lines = [f"{total['prompt']:,} tokens in · {total['completion']:,} out, every model call of the run"]
    by_model: dict[str, float] = {}
    for node in costs["nodes"].values():
        if node["cost"] is not None:
            by_model[node["model"]] = by_model.get(node["model"], 0.0) + node["cost"]
    lines += [f"{model or 'the default model'}: {format_cost(cost)}" for model, cost in sorted(by_model.items())]
    if total["unpriced"]:
        lines.append(
            "No price known for " + ", ".join(total["unpriced"]) + " (their tokens are counted, not "
            "their cost; a price per model can be set in the settings file's providers)"
        )
    return "\n".join(lines)


def run_actions(owner: QWidget, start: Any, cancel: Any) -> tuple[QAction, QAction]:
    """Run (F5) and Cancel (Shift+F5), added to ``owner`` so their shortcuts work in it."""
    run = QAction("▶ Run", owner)
    run.setObjectName("runAction")
    run.setShortcut(QKeySequence("F5"))
    run.setToolTip("Run the workflow (F5)")
    run.triggered.connect(start)
    stop = QAction("■ Cancel", owner)
    stop.setObjectName("cancelAction")
    stop.setShortcut(QKeySequence("Shift+F5"))
    stop.setToolTip("Stop the run now (Shift+F5)")
    stop.triggered.connect(cancel)
    owner.addAction(run)
    owner.addAction(stop)
    return run, stop


class RunHeader(QWidget):
    """One row: input | Run / Cancel | status | Export (a short dock keeps room for the log)."""

    #: "Choose provider…" was clicked (shown when the run's model provider could not serve).
    provider_choice_requested = Signal()
    repair_requested = Signal()  # "Repair…" beside a run that failed at a node
    save_as_flow_requested = Signal()  # "Save as flow…" beside a completed run whose agent called tools

    def __init__(
        self, run_action: QAction, cancel_action: QAction, export_actions: list[QAction], parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        top = QHBoxLayout(self)
        top.setContentsMargins(0, 0, 0, 0)
        top.setSpacing(6)
        self.input_edit = QPlainTextEdit()
        self.input_edit.setObjectName("initialInput")
        self.input_edit.setPlaceholderText(INPUT_PLACEHOLDER)
        self.input_edit.setTabChangesFocus(True)
        fm = self.input_edit.fontMetrics()
        # two whole lines: the document margins (2 x 4) plus the app style's padding and border
        # (2 x 6) left half of the second line hidden with "+ 14"
        self.input_edit.setFixedHeight(fm.lineSpacing() * 2 + 24)
        top.addWidget(self.input_edit, 1)
        # While a run is live its input cannot change: one elided line instead of the box,
        # so a paused run's card and log get the height.
        self.input_summary = _ElidedLabel()
        self.input_summary.setObjectName("inputSummary")
        self.input_summary.setStyleSheet("color: #8b93a1")
        self.input_summary.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.input_summary.hide()
        top.addWidget(self.input_summary, 1)
        buttons = QBoxLayout(QBoxLayout.Direction.TopToBottom)
        self.buttons = buttons
        buttons.setSpacing(4)
        self.run_button = QToolButton()
        self.run_button.setObjectName("runButton")
        self.run_button.setDefaultAction(run_action)
        self.run_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.run_button.setMinimumWidth(90)
        self.run_button.setStyleSheet(
            "QToolButton { background: #15803d; color: white; font-weight: bold;"
            " border-radius: 4px; padding: 3px 10px; }"
            " QToolButton:disabled { background: #5f7a68; color: #d1d5db; }"
        )
        self.cancel_button = QToolButton()
        self.cancel_button.setObjectName("cancelButton")
        self.cancel_button.setDefaultAction(cancel_action)
        self.cancel_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
        self.cancel_button.setMinimumWidth(90)
        buttons.addWidget(self.run_button)
        buttons.addWidget(self.cancel_button)
        top.addLayout(buttons)
        status_col = QVBoxLayout()
        status_col.setSpacing(2)
        self.status_label = QLabel()
        self.status_label.setObjectName("runStatus")
        # One line, elided (the whole text in the tooltip and behind "Details"): a long error
        # wrapped to four lines and pushed the Run button down.
        self.status_label.setFixedWidth(250)
        self._status_text = ""
        self._collapsed = False
        self._input_line = ""
        self._status_colour = "#6b7280"
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        meta = QHBoxLayout()
        self._prices: Any = None  # the model catalogue's prices (show_cost)
        self._started_mono: float | None = None
        self._ended_mono: float | None = None
        self._clock = QTimer(self)  # the live run's elapsed time, every 100 ms
        self._clock.setInterval(100)
        self._clock.timeout.connect(self._tick)
        self.elapsed_label = QLabel("")
        self.elapsed_label.setObjectName("runElapsed")
        self.elapsed_label.setStyleSheet("color: #8b93a1")
        self.run_id_label = QLabel("")
        self.run_id_label.setStyleSheet("color: #8b93a1")
        self.run_id_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        meta.addWidget(self.elapsed_label)
        meta.addSpacing(10)
        # The provider and model the run's agents actually used (the card shows what the node
        # asks for; a forced provider or the default may answer instead).
        self.models_label = QLabel("")
        self.models_label.setObjectName("runModels")
        self.models_label.setStyleSheet("color: #c4b5fd")
        self.models_label.setToolTip("The provider and model that answered this run's agents")
        self.models_label.setVisible(False)
        self._models: list[tuple[str, str]] = []
        meta.addWidget(self.models_label)
        meta.addSpacing(10)
        self.cost_label = QLabel("")
        self.cost_label.setObjectName("runCost")
        self.cost_label.setStyleSheet("color: #8b93a1")
        self.cost_label.setToolTip(
            "Tokens the run's model calls reported, and their cost at the prices in the "
            "provider catalogue (editable in the settings file)"
        )
        meta.addWidget(self.cost_label)
        meta.addSpacing(10)
        meta.addWidget(self.run_id_label)
        self.details_button = _status_button("statusDetails", "Details…", self._show_details)
        self.details_button.setToolTip("Show the whole message")
        meta.addWidget(self.details_button)
        # When the run's model provider could not serve (its server did not answer, or it is not
        # set up), the way out is one click away rather than in a menu the user may not know.
        self.provider_button = _status_button("chooseProvider", "Choose provider…", self.provider_choice_requested)
        self.provider_button.setStyleSheet("QToolButton { color: #60a5fa; font-weight: bold; }")
        # what the run's provider could not do (RunState.provider_problem's keys), while the button shows
        self.provider_problem: dict[str, Any] | None = None
        meta.addWidget(self.provider_button)
        # Learning and routing: what can follow a run, one click away (the console decides when).
        self.repair_button = _status_button("repairFailedNode", "Repair…", self.repair_requested)
        self.repair_button.setToolTip(
            "Ask the model for a fix of the failed node, shown as a diff before it is applied"
        )
        meta.addWidget(self.repair_button)
        self.learn_button = _status_button("saveAsFlow", "Save as flow…", self.save_as_flow_requested)
        self.learn_button.setToolTip(
            "Turn this run's tool calls into a reusable flow that makes them again without the planning model turn"
        )
        meta.addWidget(self.learn_button)
        meta.addStretch(1)
        status_col.addWidget(self.status_label)
        status_col.addLayout(meta)
        # Said once, on the first run with the embedded model: it is tiny (dismissable). The
        # console lays it out under the header, across the whole width.
        self.local_notice = QWidget()
        self.local_notice.setObjectName("localModelNotice")
        notice_row = QHBoxLayout(self.local_notice)
        notice_row.setContentsMargins(0, 2, 0, 2)
        self.local_notice_label = QLabel(LOCAL_MODEL_NOTICE)
        self.local_notice_label.setWordWrap(True)
        self.local_notice_label.setStyleSheet("color: #fbbf24")
        self.local_notice_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        notice_row.addWidget(self.local_notice_label, 1)
        self.local_notice_dismiss = dismiss = _status_button(
            "dismissLocalNotice", "Dismiss", lambda: self.local_notice.setVisible(False)
        )
        dismiss.setVisible(True)
        notice_row.addWidget(dismiss, 0, Qt.AlignmentFlag.AlignTop)
        self.local_notice.setVisible(False)  # placed by the console, under the header
        status_col.addStretch(1)
        top.addLayout(status_col)
        self.export_button = QToolButton()
        self.export_button.setObjectName("exportButton")
        self.export_button.setText("Export")
        self.export_button.setToolTip("Copy the final output, or save the log or the run record")
        self.export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        export_menu = QMenu(self.export_button)
        for a in export_actions:
            export_menu.addAction(a)
        self.export_button.setMenu(export_menu)
        top.addWidget(self.export_button, 0, Qt.AlignmentFlag.AlignTop)

    def clear_models(self) -> None:
        """A new run: no model used yet."""
        self._models = []
        self.models_label.setText("")
        self.models_label.setVisible(False)

    def add_model(self, provider: str, model: str) -> None:
        """An agent of the run was answered by ``provider``'s ``model``: named in the header
        (the first three distinct ones; more are counted)."""
        pair = (provider, model)
        if pair in self._models:
            return
        self._models.append(pair)
        shown = [f"{p} · {m}" if m else p for p, m in self._models[:3]]
        more = len(self._models) - 3
        self.models_label.setText("Model: " + ", ".join(shown) + (f" (+{more} more)" if more > 0 else ""))
        self.models_label.setVisible(True)

    def show_local_notice(self) -> None:
        self.local_notice.setVisible(True)

    def set_status(self, status: str, detail: str | None = None) -> None:
        text, colour = STATUS_TEXT.get(status, (status, "#6b7280"))
        if detail and status in ("failed", "cancelled") and detail != "Cancelled by the user.":
            text = f"{text}: {detail}"
        self._set_status_text(text, colour)

    def show_error(self, message: str) -> None:
        self._set_status_text(message, "#dc2626")

    @property
    def status_text(self) -> str:
        """The whole status text (the label may show it elided)."""
        return self._status_text

    @property
    def status_shown(self) -> tuple[str, str]:
        """The status text and its colour, to be put back with :meth:`show_status`."""
        return self._status_text, self._status_colour

    def show_status(self, text: str, colour: str) -> None:
        self._set_status_text(text, colour)

    def _set_status_text(self, text: str, colour: str) -> None:
        self._status_text, self._status_colour = text, colour
        self.status_label.setStyleSheet(f"color: {colour}; font-weight: bold")
        one_line = " ".join(text.split())
        fm = self.status_label.fontMetrics()
        shown = fm.elidedText(one_line, Qt.TextElideMode.ElideRight, self.status_label.width() - 4)
        self.status_label.setText(shown)
        cut = shown != text
        self.status_label.setToolTip(text if cut else "")
        self.details_button.setVisible(cut)

    def offer_provider_choice(self, problem: dict[str, Any] | None) -> None:
        """Show "Choose provider…" for a run whose provider could not serve (``problem``:
        ``{message, provider, model}`` as ``RunState.provider_problem`` has them), or "Choose
        model…" when it lacks the ``model``; None hides it."""
        self.provider_problem = problem
        self.provider_button.setVisible(problem is not None)
        missing = bool(problem and problem.get("model"))
        self.provider_button.setText("Choose model…" if missing else "Choose provider…")
        if problem is None:
            tip = ""
        elif missing:
            tip = (
                f"{self.provider_reason}\n\nChoose one of the models the provider has, for every agent, and run again."
            )
        else:
            tip = (
                f"{self.provider_reason}\n\nChoose a model provider this computer has (a server that answers, "
                "an API key, the embedded model, or a dry run with echo) and run again."
            )
        self.provider_button.setToolTip(tip)

    @property
    def provider_reason(self) -> str | None:
        """What the provider could not do, in a sentence (None when nothing is offered)."""
        problem = self.provider_problem
        if problem is None:
            return None
        who = f"Provider '{problem['provider']}'" if problem.get("provider") else "The model provider"
        if problem.get("model"):  # (the server's own words are in the log)
            return f"{who} has no model '{problem['model']}'."
        return f"{who} could not serve this run: {problem.get('message') or 'no answer'}"

    def _show_details(self) -> None:
        QMessageBox.information(self, "Run status", self._status_text)

    def set_running(self, running: bool, input_text: str | None = None) -> None:
        """Collapse the input box to one line while a run is live (its input is fixed then)."""
        if running:
            text = self.input_edit.toPlainText() if input_text is None else input_text
            one_line = " ".join(text.split()) or "(the Start node's own input)"
            self._input_line = f"Input: {one_line}"
            self.input_summary.setToolTip(text)
            self._elide_input()
        elif not self._collapsed:
            return  # not collapsed by us (a read-only run view hides the box for good)
        self._collapsed = running
        self.input_edit.setVisible(not running)
        self.input_summary.setVisible(running)
        self.buttons.setDirection(QBoxLayout.Direction.LeftToRight if running else QBoxLayout.Direction.TopToBottom)

    def _elide_input(self) -> None:
        self.input_summary.set_full_text(self._input_line)

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        if self._status_text:
            self._set_status_text(self._status_text, self._status_colour)

    def set_run_id(self, run_id: str | None, server: str | None = None) -> None:
        """The run's short id, with a badge naming the Temporal server when it runs there."""
        text = f"run {run_id[:8]}" if run_id else ""
        if run_id and server:
            text += f"  ·  ☁ Temporal {server}"
        self.run_id_label.setText(text)
        self.run_id_label.setToolTip(
            f"Run {run_id} on the Temporal server at {server} (its workers run it; "
            "follow it with: flowdesk follow ID --temporal SERVER)"
            if run_id and server
            else (f"Run {run_id}" if run_id else "")
        )

    def set_cost(self, tokens: int, cost: float | None, cached: int = 0, detail: str = "") -> None:
        """``1,234 tokens · $0.0021`` (and how many nodes came from the cache); ``detail`` is its
        tooltip (the console's breakdown by model)."""
        parts = []
        if tokens:
            parts.append(f"{tokens:,} tokens" + (f" · {format_cost(cost)}" if cost is not None else ""))
        if cached:
            parts.append(f"{cached} from cache")
        self.cost_label.setText(" · ".join(parts))
        self.cost_label.setToolTip(detail if tokens else "")

    def show_start_text(self, text: str, changed: bool) -> None:
        """The Start node's text (the default input); ``changed``: it differs from the one shown
        before. The box is only touched when that text changed, and only while it shows that
        text (or nothing), not what the user typed; a long one is not laid out (QPlainTextEdit
        takes seconds on a long line): the box stays empty, which runs with that text, and says so."""
        edit = self.input_edit
        if changed:
            box = edit.document()
            if box.isEmpty() or not box.isModified():
                if len(text) > LONG_INPUT:
                    edit.clear()
                    edit.setPlaceholderText(
                        f"The Start node's input ({len(text):,} characters) is used; "
                        "type here to replace it for this run"
                    )
                else:
                    edit.setPlainText(text)
                    edit.setPlaceholderText(input_hint(text))
                edit.document().setModified(False)
        if len(text) <= LONG_INPUT:
            hint = input_hint(text)
            if edit.placeholderText() != hint:
                edit.setPlaceholderText(hint)

    def start_clock(self) -> None:
        """A live run started: its elapsed time counts from now."""
        self._started_mono, self._ended_mono = time.monotonic(), None
        self._clock.start()
        self._tick()

    def stop_clock(self) -> None:
        """The live run ended: its elapsed time stays as it was then."""
        self._clock.stop()
        if self._started_mono is not None:
            self._ended_mono = time.monotonic()
            self._tick()

    def reset_clock(self) -> None:
        """No live run is timed (none shown, or a stored one: :meth:`set_elapsed` shows its length)."""
        self._clock.stop()
        self._started_mono = self._ended_mono = None

    def _tick(self) -> None:
        if self._started_mono is not None:
            end = self._ended_mono if self._ended_mono is not None else time.monotonic()
            self.set_elapsed(end - self._started_mono)

    def show_cost(self, state: RunState, workflow: Workflow | None) -> None:
        """The tokens and cost of the run so far (its tooltip: the cost by model), from the
        prices of the model catalogue, read once."""
        try:
            if self._prices is None:
                self._prices = model_prices()
            costs = run_costs(state, state.workflow or workflow, self._prices)
        except Exception:  # an unreadable catalogue: no cost shown, the run goes on
            return
        cached = sum(1 for v in state.states.values() if v == "cached")
        total = costs["total"]
        self.set_cost(total["tokens"], total["cost"], cached, cost_breakdown(costs))

    def set_elapsed(self, seconds: float | None) -> None:
        self.elapsed_label.setText(elapsed_text(seconds) if seconds is not None else "")


def _status_button(name: str, text: str, slot) -> QToolButton:
    """A flat button beside the run's status, hidden until the status calls for it."""
    button = QToolButton()
    button.setObjectName(name)
    button.setText(text)
    button.setAutoRaise(True)
    button.clicked.connect(slot)
    button.hide()
    return button


class _ElidedLabel(QLabel):
    """One line of text, elided with "…" to the label's width."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.full_text = ""

    def set_full_text(self, text: str) -> None:
        self.full_text = text
        self._elide()

    def _elide(self) -> None:
        width = max(40, self.width() - 4)
        self.setText(self.fontMetrics().elidedText(self.full_text, Qt.TextElideMode.ElideRight, width))

    def resizeEvent(self, event) -> None:  # noqa: N802 - Qt override
        super().resizeEvent(event)
        self._elide()
