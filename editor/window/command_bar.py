"""Ctrl+K: the command bar. Type what you want; run a library flow.

As the user types, the list shows (in this order) the trigger matches with their bound
arguments (best first, as ``flowdesk do`` ranks them: fewest wildcard words, then library
order), then the library's flows whose name or description holds the typed words, then
"Ask the model…" (one routed request; its pick is shown as an item to confirm with Enter).
Enter runs the chosen flow in its own run window (a run console of its own); Alt+Enter opens
the flow's file in the editor. With nothing typed, the recent commands are listed (they are
remembered in the GUI settings); choosing one puts it back in the box.

Routing memory: running the model's pick (Enter is the confirmation) keeps the sentence as a
learned trigger of that flow, so the next sentence of that shape matches with no model request
(``learn_routes``; the engine checks the pattern binds the same arguments). When the model finds
no flow, up to three "did you mean" flows are listed.
"""

from __future__ import annotations

import asyncio
from html import escape
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QVBoxLayout,
    QWidget,
)

from engine import (
    FlowChoice,
    FlowdeskError,
    NoFlowMatches,
    apply_arguments,
    ask_model_for_flow,
    default_library,
    flow_suggestions,
    generalise_trigger,
    load_workflow,
    match_sentence,
    permission_summary,
    remember_trigger,
    routable_flows,
)

from ..run.console import RunConsole
from ..screen_fit import fit_resize
from .settings import settings

MAX_RECENT = 12
ROLE = Qt.ItemDataRole.UserRole
_MARGIN = 10  # around the box, the list and the hint
_ITEM_PADDING = 8 + 4  # a row's padding left and right (the style sheet), and a little air
_SCROLL_BAR = 14  # kept free for the list's scroll bar when it has more rows than it shows
_INDENT = "    "  # before a row's second line


def _arguments_text(arguments: dict[str, Any]) -> str:
    if not arguments:
        return "no arguments"
    return " · ".join(f"{k} = {('“' + v + '”') if isinstance(v, str) else v}" for k, v in arguments.items())


class CommandBar(QDialog):
    """The Ctrl+K popup. ``run_requested(FlowChoice)`` (Enter), ``open_requested(str)`` (Alt+Enter: the path)."""

    run_requested = Signal(object)
    open_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None, *, library: Any = None, resolver_factory: Any = None) -> None:
        super().__init__(parent)
        self.setObjectName("commandBar")
        self.setWindowTitle("Command bar")
        self.setWindowFlag(Qt.WindowType.FramelessWindowHint, True)
        self.setModal(False)
        self._library = library
        self._resolver_factory = resolver_factory
        self._flows: list[Any] = []
        self._model_choice: FlowChoice | None = None
        self.model_reach = ""  # what the model's pick may reach (its permissions), said before it runs
        self._model_sentence = ""  # what the model's choice answers
        self._suggested: list[Any] = []  # "did you mean" flows, when the model found none
        self.learn_routes = True  # keep a confirmed model pick as a learned trigger
        self.last_learned = ""  # the pattern learned last (shown in the hint)
        self._model_task: asyncio.Task | None = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(_MARGIN, _MARGIN, _MARGIN, _MARGIN)
        lay.setSpacing(6)
        self.edit = QLineEdit()
        self.edit.setObjectName("commandEdit")
        self.edit.setPlaceholderText("Say what to run — e.g. “create a blues playlist with 10 songs”")
        self.list = QListWidget()
        self.list.setObjectName("commandList")
        self.list.setUniformItemSizes(False)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.hint = _WrappingHint("Enter runs · Alt+Enter opens the flow · Esc closes")
        self.hint.setObjectName("hint")
        self.hint.setWordWrap(True)  # why no flow matches can take lines; it was cut at the bar's edge
        self.hint.changed.connect(self.adjustSize)
        lay.addWidget(self.edit)
        lay.addWidget(self.list, 1)
        lay.addWidget(self.hint)
        self.setFixedWidth(640)
        self.setStyleSheet(
            "#commandBar { border: 1px solid #3d444d; border-radius: 8px; }#commandList::item { padding: 6px 4px; }"
        )
        self.edit.textChanged.connect(self._refresh)
        self.edit.installEventFilter(self)
        self.list.installEventFilter(self)
        self.list.itemActivated.connect(lambda item: self.activate(item, open_it=False))

    # ------------------------------------------------------------------ showing
    def library(self) -> Any:
        return self._library if self._library is not None else default_library()

    def popup(self) -> None:
        """Show over the parent window's top centre with the flows re-read, the box selected."""
        try:
            self._flows = routable_flows(self.library())
        except Exception as err:  # an unreadable library folder must not take the bar down
            self._flows = []
            self.hint.setText(f"The library cannot be read: {err}")
        parent = self.parentWidget()
        if parent is not None:
            geo = parent.geometry()
            self.move(geo.x() + (geo.width() - self.width()) // 2, geo.y() + 90)
        self._model_choice = None
        self._suggested = []
        self._refresh()
        self.show()
        self.raise_()
        self.activateWindow()
        self.edit.setFocus()
        self.edit.selectAll()

    # ------------------------------------------------------------------ the list
    def _add(self, kind: str, title: str, detail: str, payload: Any) -> QListWidgetItem:
        # Each line cut to the bar's width with an ellipsis (the whole text is the tooltip): a
        # long flow description would otherwise bring a sideways scroll bar into a short list.
        fm = self.list.fontMetrics()
        room = self.width() - 2 * _MARGIN - 2 * self.list.frameWidth() - _ITEM_PADDING - _SCROLL_BAR
        title_line = fm.elidedText(title, Qt.TextElideMode.ElideRight, room)
        detail_line = fm.elidedText(detail, Qt.TextElideMode.ElideRight, room - fm.horizontalAdvance(_INDENT))
        item = QListWidgetItem(f"{title_line}\n{_INDENT}{detail_line}" if detail else title_line)
        item.setData(ROLE, (kind, payload))
        item.setToolTip("\n".join(t for t in (title if title_line != title else "", detail) if t))
        self.list.addItem(item)
        return item

    def items(self) -> list[tuple[str, str]]:
        """(kind, text) of each listed item: ``trigger``, ``flow``, ``model``, ``ask``, ``recent``."""
        return [(self.list.item(i).data(ROLE)[0], self.list.item(i).text()) for i in range(self.list.count())]

    def _refresh(self) -> None:
        self._fill()
        self._fit()

    def _fill(self) -> None:
        self.list.clear()
        text = self.edit.text().strip()
        if not text:
            for recent in recent_commands():
                self._add("recent", f"↺ {recent}", "", recent)
            if not self.list.count():
                self._add("hint", "Type a sentence, or a flow's name", "", None).setFlags(Qt.ItemFlag.NoItemFlags)
            self.list.setCurrentRow(0)
            return
        if self._model_choice is not None:
            c = self._model_choice
            detail = _arguments_text(c.arguments) + f" · may reach: {self.model_reach}"
            self._add("model", f"▶ {c.flow.name} — suggested by the model", detail, c)
        for flow in self._suggested:
            self._add("flow", f"Did you mean {flow.name}?", flow.description or flow.id, flow)
        for choice in match_sentence(text, self._flows):
            self._add(
                "trigger",
                f"▶ {choice.flow.name} — {_arguments_text(choice.arguments)}",
                f"trigger: {choice.pattern}",
                choice,
            )
        words = text.lower().split()
        for flow in self._flows:
            hay = f"{flow.name} {flow.id} {flow.description}".lower()
            if all(w in hay for w in words):
                self._add("flow", flow.name, flow.description or flow.id, flow)
        if self._flows:
            self._add("ask", "Ask the model…", "one request picks a flow and its arguments; you confirm", text)
        self.list.setCurrentRow(0)

    def _fit(self) -> None:
        """The list as tall as its items (up to a limit): the bar does not show an empty well."""
        rows = sum(self.list.sizeHintForRow(i) for i in range(self.list.count()))
        self.list.setFixedHeight(max(44, min(320, rows + 2 * self.list.frameWidth() + 4)))
        self.adjustSize()

    # ------------------------------------------------------------------ choosing
    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.KeyPress:
            key = event.key()  # type: ignore[attr-defined]
            if obj is self.edit and key in (Qt.Key.Key_Down, Qt.Key.Key_Up):
                row = self.list.currentRow() + (1 if key == Qt.Key.Key_Down else -1)
                self.list.setCurrentRow(max(0, min(self.list.count() - 1, row)))
                return True
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
                alt = bool(event.modifiers() & Qt.KeyboardModifier.AltModifier)  # type: ignore[attr-defined]
                self.activate(self.list.currentItem(), open_it=alt)
                return True
            if key == Qt.Key.Key_Escape:
                self.hide()
                return True
        return super().eventFilter(obj, event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.hide()
            return
        super().keyPressEvent(event)

    def activate(self, item: QListWidgetItem | None, *, open_it: bool) -> None:
        if item is None:
            return
        kind, payload = item.data(ROLE)
        if kind == "recent":
            self.edit.setText(payload)
            return
        if kind == "ask":
            self.ask_model(payload)
            return
        if kind in ("trigger", "model"):
            choice: FlowChoice = payload
        elif kind == "flow":
            choice = FlowChoice(payload, {}, "trigger")
        else:
            return
        remember_command(self.edit.text().strip())
        if kind == "model" and not open_it and self.learn_routes:
            self._learn(self._model_sentence or self.edit.text().strip(), choice)
        self.hide()
        if open_it:
            self.open_requested.emit(str(choice.flow.path))
        else:
            self.run_requested.emit(choice)

    def _learn(self, sentence: str, choice: FlowChoice) -> None:
        """Routing memory: the confirmed model pick kept as a learned trigger of its flow."""
        pattern = generalise_trigger(sentence, choice.arguments, choice.flow)
        if pattern is None:
            return
        try:
            if remember_trigger(self.library(), choice.flow, pattern):
                self.last_learned = pattern
                choice.learned = pattern
        except FlowdeskError:
            pass  # a read-only library: the pick still runs, it is just not remembered

    def ask_model(self, sentence: str) -> None:
        """One routed request; its answer becomes the first item (Enter confirms and runs it)."""
        if self._model_task is not None and not self._model_task.done():
            return
        self.hint.setText("Asking the model…")
        try:
            resolver = self._resolver_factory() if self._resolver_factory else None
        except Exception as err:
            self.hint.setText(f"The model cannot be asked: {err}")
            return

        async def ask() -> None:
            try:
                choice = await ask_model_for_flow(sentence, self._flows, resolver)
            except NoFlowMatches as err:
                text = str(err)
                self._suggested = flow_suggestions(sentence, self._flows)
                if self._suggested:
                    text += " (did you mean one of the flows listed?)"
                    self._refresh()
                self.hint.setText(text[:1].upper() + text[1:])  # (not capitalize(): it lowercases the rest)
                return
            except Exception as err:  # provider errors: said, nothing runs
                self.hint.setText(f"No flow matches: the model could not be asked: {err}")
                return
            self._model_choice = choice
            self._model_sentence = sentence
            self.model_reach = flow_reach(choice.flow.path)
            self.hint.setText(
                f"The model suggests {choice.flow.name}. This flow may reach: {self.model_reach}. "
                "Enter runs it · Alt+Enter opens it"
            )
            self._refresh()

        self._model_task = asyncio.ensure_future(ask())


class _WrappingHint(QLabel):
    """The bar's hint line; says when its text changes, so the bar can grow to show it whole."""

    changed = Signal()

    def setText(self, text: str) -> None:  # noqa: N802 - Qt API
        super().setText(text)
        self.changed.emit()


def flow_reach(path: Any) -> str:
    """What the flow at ``path`` may reach, in words (``engine.permission_summary``)."""
    try:
        return permission_summary(load_workflow(path))
    except (FlowdeskError, OSError) as err:
        return f"unknown (the flow cannot be read: {err})"


def recent_commands() -> list[str]:
    value = settings().value("commandBar/recent", [])
    if isinstance(value, str):
        value = [value] if value else []
    return [str(v) for v in (value or [])]


def remember_command(text: str) -> None:
    if not text:
        return
    recent = [t for t in recent_commands() if t != text]
    recent.insert(0, text)
    s = settings()
    s.setValue("commandBar/recent", recent[:MAX_RECENT])
    s.sync()


class CommandRunWindow(QMainWindow):
    """A flow run from the command bar, in a run console of its own."""

    def __init__(
        self, choice: FlowChoice, workflow: Any, *, store: Any, resolver_factory: Any, parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setObjectName("commandRunWindow")
        self.choice = choice
        self.setWindowTitle(f"{choice.flow.name} · {_arguments_text(choice.arguments)} — Flowdesk")
        box = QWidget()
        lay = QVBoxLayout(box)
        lay.setContentsMargins(6, 6, 6, 6)
        banner = QLabel(
            f"<b>{escape(choice.flow.name)}</b> — {escape(_arguments_text(choice.arguments))}"
            + (f" · trigger <code>{escape(choice.pattern)}</code>" if choice.pattern else "")
            + f"<br>May reach: {escape(permission_summary(workflow))}"
        )
        banner.setObjectName("runBanner")
        # wrapped: a long trigger pattern on one line made the window wider than the screen
        banner.setWordWrap(True)
        self.console = RunConsole()
        self.console.set_store(store)
        self.console.set_resolver_factory(resolver_factory)
        self.console.set_workflow(apply_arguments(workflow, choice.arguments), str(choice.flow.path))
        lay.addWidget(banner)
        lay.addWidget(self.console, 1)
        self.setCentralWidget(box)
        fit_resize(self, 900, 560)

    def start(self) -> str | None:
        return self.console.start_run()

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        # Its run ends with the window (what it did so far stays in Run history); a paused one
        # stays paused there, as in the main window.
        if self.console.bridge.status != "paused":
            self.console.cancel_run()
        super().closeEvent(event)
