"""RunConsole: run controls, the live log, approvals, the subagent trace and exports.

A standalone widget that the main window puts in its "Run console" dock. It owns one
:class:`~editor.run.bridge.RunBridge` and talks to the engine only through it.

Its parts live in their own modules: the header row (``header``), the log's painting
(``log_view``) and model (``log_model``), the entry tab (``entry_pane``), approvals,
the subagent trace, per-node details and what is written out (``exports``). This module
wires them together.

Public API (for the main window; everything else is private)
* ``set_workflow(workflow, path=None)``, ``set_resolver_factory(factory)`` (``factory()``
  returns a provider or a resolver), ``set_store(store)``.
* ``run_action`` (F5) and ``cancel_action`` (Shift+F5): QActions for toolbars and menus;
  ``start_run()`` / ``cancel_run()`` do the same.
* Signals: ``node_activated(str)`` (an entry was clicked: select that node on the canvas),
  ``node_states_changed(dict)`` and ``links_followed(object)`` (a frozenset of
  ``(source, sourceHandle, target)``) for the canvas to paint, ``status_changed(str)``,
  ``run_started(str)``, ``run_finished(str)``, ``waiting_for_input_changed(bool)`` (for
  the window title), ``provider_choice_requested()`` (the header's "Choose provider…", shown
  when ``offers_provider_choice`` is on and the run's model provider could not serve).
* Slots: ``show_node(node_id)`` (a node selected on the canvas: scroll to its entries),
  ``replay(workflow, events, run_id=None, status=None)`` (show a stored run, read-only),
  ``open_paused_run(run_id)`` (take up a paused run from the store and answer it),
  ``node_details(node_id)`` (for the inspector's run tab; see ``NodeRunDetails``),
  ``node_errors()`` (failed nodes' errors, for canvas tooltips).
* Exports: ``export_jsonl(path)``, ``export_record(path)``, ``copy_final_output()``.

Invariants
* The log is a model + ``QListView`` with a painting delegate and uniform row heights:
  no growing text widget, so 20,000 entries cost what is visible, not what is stored.
* What the console shows comes from events only (live ones through the bridge, stored
  ones through ``replay``), and what a run did is derived from them by the engine's one
  reducer (:class:`engine.RunState`: the bridge's for a live run, the console's own for a
  replayed one), so a replayed run looks like the live one did.
* While a run is live the log follows its tail unless the user scrolled up.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any, Callable, Iterable

from PySide6.QtCore import QModelIndex, QPoint, QStringListModel, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QFileDialog, QHBoxLayout, QLabel, QLineEdit, QListView,
                               QMenu, QSplitter, QTabWidget, QToolButton, QVBoxLayout, QWidget)

from engine import (SYSTEM_NODE, EventType, FlowdeskError, ProviderConfigError, Run, RunEvent, RunState, RunStateError,
                    RunStatus, RunStore, StoreError, Workflow, format_cost, model_prices, run_costs)

from .approvals import ApprovalsPanel
from .badges import run_badges
from .arguments import RunArguments, declared_variables, remember_arguments, remembered_arguments
from .bridge import RunBridge, default_resolver_factory
from .timeline import TimelineView
from .details import NodeRunDetails
from .entry_pane import EntryPane
from .exports import run_record, write_jsonl, write_record
from .header import INPUT_PLACEHOLDER, NO_START_TEXT_PLACEHOLDER, RunHeader
from .log_model import TYPE_GROUPS, EntryRole, LogEntry, LogFilterProxy, LogModel, NodeNames
from .log_view import TYPE_COLOURS, LogDelegate
from .trace import SubagentTrace

__all__ = ["RunConsole", "LogDelegate", "TYPE_COLOURS"]

log = logging.getLogger(__name__)

# Characters of the Start node's text shown in the run input box; a longer text is used as
# is but not laid out in the box (a long line costs QPlainTextEdit seconds).
LONG_INPUT = 4000


#: The approval cards' largest share of the console's side split (the tabs keep the rest).
APPROVAL_SHARE = 0.62


class RunConsole(QWidget):
    """The run console: controls, live log, details, approvals, subagent trace, exports."""

    node_activated = Signal(str)
    node_states_changed = Signal(dict)
    links_followed = Signal(object)
    status_changed = Signal(str)
    run_started = Signal(str)
    run_finished = Signal(str)
    waiting_for_input_changed = Signal(bool)
    run_badges_changed = Signal(dict)  # {node_id: (text, "retry"|"loop")}: retries and loop iterations
    # The run's model provider could not serve (the header's "Choose provider…"): the window
    # offers the providers this computer has, then runs again.
    provider_choice_requested = Signal()
    # The approval card is cut: the console would need this many pixels more to show it whole
    # (a short window); the window may give them (up to a share of its height).
    approval_room_wanted = Signal(int)

    def __init__(self, parent: QWidget | None = None, *, bridge: RunBridge | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("runConsole")
        self.bridge = bridge or RunBridge(self)
        if self.bridge.parent() is None:
            self.bridge.setParent(self)
        self.workflow: Workflow | None = None
        self._prepared_names: NodeNames | None = None  # see use_names
        self.workflow_path: str | None = None
        self._names_shown: dict[str, str] | None = None  # the node names the log and filter show
        self.store: RunStore | None = None
        self._resolver_factory: Callable[[], Any] = default_resolver_factory
        self._replay_state: RunState | None = None
        self._replay_info: dict[str, Any] = {}
        self._run_id: str | None = None
        self._started_mono: float | None = None
        self._ended_mono: float | None = None
        self._follow_tail = True
        self._default_input = ""
        self._badges: dict[str, tuple[str, str]] = {}
        self._detached: str | None = None  # a run let go of (clear()): what it still sends is not shown
        # Whether a run whose provider could not serve offers "Choose provider…" (the main
        # window's console, which handles provider_choice_requested, turns it on).
        self.offers_provider_choice = False

        self.model = LogModel(self)
        self.proxy = LogFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self._build_actions()
        self._build_ui()
        self._connect()
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(150)
        self._search_timer.timeout.connect(lambda: self.proxy.set_text_filter(self.search_edit.text()))
        self._elapsed_timer = QTimer(self)
        self._elapsed_timer.setInterval(100)
        self._elapsed_timer.timeout.connect(self._update_elapsed)
        self._update_actions()
        self._set_status_label("pending")

    # ================================================================== construction
    def _build_actions(self) -> None:
        self.run_action = QAction("▶ Run", self)
        self.run_action.setObjectName("runAction")
        self.run_action.setShortcut(QKeySequence("F5"))
        self.run_action.setToolTip("Run the workflow (F5)")
        self.run_action.triggered.connect(self.start_run)
        self.cancel_action = QAction("■ Cancel", self)
        self.cancel_action.setObjectName("cancelAction")
        self.cancel_action.setShortcut(QKeySequence("Shift+F5"))
        self.cancel_action.setToolTip("Stop the run now (Shift+F5)")
        self.cancel_action.triggered.connect(self.cancel_run)
        self.addAction(self.run_action)
        self.addAction(self.cancel_action)

    def _build_ui(self) -> None:
        root = QVBoxLayout(self)
        root.setContentsMargins(6, 6, 6, 6)
        root.setSpacing(6)

        # --- one row: input | Run / Cancel | status | export (a short dock keeps room for the log)
        self.copy_output_action = QAction("Copy final output", self)
        self.copy_output_action.triggered.connect(self.copy_final_output)
        self.save_log_action = QAction("Save log as JSON Lines…", self)
        self.save_log_action.triggered.connect(self._ask_export_jsonl)
        self.save_record_action = QAction("Save run record (run_<id>.json)…", self)
        self.save_record_action.triggered.connect(self._ask_export_record)
        self.header = RunHeader(self.run_action, self.cancel_action,
                                [self.copy_output_action, self.save_log_action, self.save_record_action], self)
        h = self.header
        self.input_edit, self.run_button, self.cancel_button = h.input_edit, h.run_button, h.cancel_button
        self.status_label, self.elapsed_label, self.run_id_label = h.status_label, h.elapsed_label, h.run_id_label
        self.export_button = h.export_button
        root.addWidget(h)
        self.arguments = RunArguments(self)  # the run's variables (hidden when the Start node declares none)
        root.addWidget(self.arguments)

        # --- approvals
        self.approvals = ApprovalsPanel(self)
        self.addAction(self.approvals.approve_action)
        self.addAction(self.approvals.reject_action)
        # Approvals beside the log, above the entry tabs (one vertical splitter on the right):
        # stacked above the log they left it one and a half entries in a short dock.
        self.vsplit = QSplitter(Qt.Orientation.Vertical)
        self.vsplit.setObjectName("consoleSide")
        self.vsplit.setChildrenCollapsible(False)
        self.vsplit.addWidget(self.approvals)

        # --- log and details
        split = QSplitter(Qt.Orientation.Horizontal)
        self.splitter = split
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.setSpacing(4)
        filters = QHBoxLayout()
        self.node_filter = QComboBox()
        self.node_filter.setObjectName("nodeFilter")
        self.node_filter.setMinimumWidth(140)
        # One list model for all the entries (a big workflow has 100k nodes: one call, not
        # 100k addItem calls), and a width that does not measure every entry.
        self.node_filter.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.node_filter.setMinimumContentsLength(14)
        self._filter_model = QStringListModel(["All nodes"], self.node_filter)
        self._filter_ids: list[str | None] = [None]  # the node id of each entry (None: all nodes)
        self._filter_rows: dict[str, int] = {}
        self.node_filter.setModel(self._filter_model)
        self.type_button = QToolButton()
        self.type_button.setObjectName("typeFilter")
        self.type_button.setText("Types: all")
        self.type_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.type_button.setMinimumWidth(self.type_button.fontMetrics().horizontalAdvance("Types: 8 of 8") + 28)
        self.type_menu = QMenu(self.type_button)
        self.type_actions: dict[str, QAction] = {}
        for group in TYPE_GROUPS:
            a = self.type_menu.addAction(group)
            a.setCheckable(True)
            a.setChecked(True)
            a.toggled.connect(self._apply_type_filter)
            self.type_actions[group] = a
        self.type_menu.addSeparator()
        self.type_menu.addAction("Show all types", lambda: self.set_type_groups(None))
        self.type_button.setMenu(self.type_menu)
        self.search_edit = QLineEdit()
        self.search_edit.setObjectName("logSearch")
        self.search_edit.setPlaceholderText("Search the log…")
        self.search_edit.setClearButtonEnabled(True)
        self.collapse_button = QToolButton()
        self.collapse_button.setText("Collapse all")
        self.collapse_button.setToolTip("Show only each step's first entry (click ▸ on a step to expand it)")
        self.collapse_button.setCheckable(True)
        filters.addWidget(self.node_filter)
        filters.addWidget(self.type_button)
        filters.addWidget(self.search_edit, 1)
        filters.addWidget(self.collapse_button)
        ll.addLayout(filters)
        self.view = QListView()
        self.view.setObjectName("runLog")
        self.view.setModel(self.proxy)
        self.view.setUniformItemSizes(True)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.setMouseTracking(True)
        self.delegate = LogDelegate(self.proxy.is_collapsed, self.view)
        self.delegate.toggle_requested = self.toggle_collapsed  # type: ignore[method-assign]
        self.view.setItemDelegate(self.delegate)
        ll.addWidget(self.view, 1)
        self.empty_label = QLabel("Press Run (F5) to run the workflow; its steps, prompts and answers appear here.")
        self.empty_label.setStyleSheet("color: #6b7280; padding: 6px")
        self.empty_label.setWordWrap(True)
        ll.addWidget(self.empty_label)
        split.addWidget(left)

        self.tabs = QTabWidget()
        self.tabs.setObjectName("runTabs")
        self.entry_pane = EntryPane()
        self.entry_pane.copy_button.clicked.connect(self.copy_current_entry)
        self.entry_header, self.entry_view = self.entry_pane.header, self.entry_pane.view
        self.copy_entry_button = self.entry_pane.copy_button
        self.tabs.addTab(self.entry_pane, "Entry")
        self.trace = SubagentTrace()
        self.tabs.addTab(self.trace, "Calls")
        self.node_panel = NodeRunDetails()
        self.tabs.addTab(self.node_panel, "Node")
        self.timeline = TimelineView()
        self.tabs.addTab(self.timeline, "Timeline")
        self.timeline.node_clicked.connect(self._timeline_clicked)
        self.tabs.setMinimumHeight(120)  # the entry header and a few lines of it, beside a card
        self.vsplit.addWidget(self.tabs)
        self.vsplit.setStretchFactor(0, 0)
        self.vsplit.setStretchFactor(1, 1)
        split.addWidget(self.vsplit)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([600, 400])
        split.setChildrenCollapsible(False)
        root.addWidget(split, 1)

    def _connect(self) -> None:
        b = self.bridge
        b.events_batched.connect(self._on_events)
        b.status_changed.connect(self._on_status)
        b.run_started.connect(self._on_run_started)
        b.run_finished.connect(self._on_run_finished)
        b.approvals_changed.connect(self._refresh_approvals)
        b.node_states_changed.connect(self.node_states_changed)
        b.node_states_changed.connect(lambda _s: self._refresh_node_panel())
        b.links_followed.connect(self.links_followed)
        b.error_occurred.connect(self._on_error)
        self.header.provider_choice_requested.connect(self.provider_choice_requested)
        self.approvals.decision_requested.connect(self._on_decision)
        self.approvals.waiting_changed.connect(self.waiting_for_input_changed)
        self.node_filter.currentIndexChanged.connect(self._apply_node_filter)
        self.search_edit.textChanged.connect(self._on_search_text)
        self.collapse_button.toggled.connect(self._collapse_all)
        self.view.clicked.connect(self._on_entry_clicked)
        self.view.activated.connect(self._on_entry_clicked)
        self.view.selectionModel().currentChanged.connect(self._on_current_changed)
        self.view.customContextMenuRequested.connect(self._context_menu)
        self.model.dataChanged.connect(self._on_model_data_changed)
        bar = self.view.verticalScrollBar()
        bar.valueChanged.connect(self._on_scrolled)
        bar.rangeChanged.connect(self._on_range_changed)

    # ================================================================== public API
    def set_workflow(self, workflow: Workflow | None, path: str | None = None) -> None:
        """The workflow that Run starts (a copy is taken at start; later edits do not reach a live run)."""
        self.workflow = workflow
        self.workflow_path = str(path) if path else None
        start = workflow.start_node() if workflow is not None else None
        default = (getattr(start.data, "initialInput", "") if start is not None else "") or ""
        # Called on every validation: the box is only touched when the Start node's text changed,
        # and only while it shows that text (or nothing), not what the user typed.
        if default != self._default_input:
            box = self.input_edit.document()
            if box.isEmpty() or not box.isModified():
                self._show_default_input(default)
            self._default_input = default
        if len(default) <= LONG_INPUT:
            hint = _input_hint(default)
            if self.input_edit.placeholderText() != hint:
                self.input_edit.setPlaceholderText(hint)
        if not self.bridge.is_active and self._replay_state is None and not self.model.entries:
            self._set_names(workflow)
        self.arguments.set_variables(declared_variables(workflow), remembered_arguments(self.workflow_path))
        self._update_actions()
        self._prepared_names = None  # later calls follow edits: names are made again

    def _show_default_input(self, default: str) -> None:
        """Put the Start node's text in the input box; a long one is not laid out (QPlainTextEdit
        takes seconds on a long line): the box stays empty, which runs with that text, and says so."""
        edit = self.input_edit
        if len(default) > LONG_INPUT:
            edit.clear()
            edit.setPlaceholderText(f"The Start node's input ({len(default):,} characters) is used; "
                                    "type here to replace it for this run")
        else:
            edit.setPlainText(default)
            edit.setPlaceholderText(_input_hint(default))
        edit.document().setModified(False)

    def set_resolver_factory(self, factory: Callable[[], Any]) -> None:
        """``factory()`` is called at each Run and returns a provider or a resolver (AgentInvocation -> provider)."""
        self._resolver_factory = factory

    def set_store(self, store: RunStore | None) -> None:
        """Runs started from now on are recorded in ``store`` (None: not recorded)."""
        self.store = store

    def set_run_factory(self, factory: Callable[..., Any] | None) -> None:
        """Runs started from now on are made by ``factory`` (Run's arguments), for example a
        remote run on a Temporal server; None: on this computer. A remote run is kept by its
        server, not recorded in the local store."""
        self._run_factory = factory

    @property
    def run_id(self) -> str | None:
        return self._run_id

    @property
    def status(self) -> str:
        return str(self._state().status)

    def start_run(self, *, start_at: str | None = None, reuse_from: Any = None) -> str | None:
        """Start a run of the current workflow with the input box's text; returns its id (None if it cannot).

        ``start_at``/``reuse_from``: run from that node, reusing the outputs recorded in that earlier
        run for the nodes upstream of it ("Run from here")."""
        if self.bridge.is_active:
            return None
        if self.workflow is None:
            self._on_error("Open a workflow to run it.")
            return None
        try:
            resolver = self._resolver_factory()
        except Exception as err:  # ProviderConfigError and friends: say why, start nothing
            self._on_error(f"Cannot start the run: {err}")
            if isinstance(err, ProviderConfigError) and self.offers_provider_choice:
                self.header.offer_provider_choice({"message": str(err)})
            return None
        text = self.input_edit.toPlainText()
        initial = text if text.strip() else None
        variables = self.arguments.values()
        remember_arguments(self.workflow_path, self.arguments.values(include_empty=True))
        self._reset_views(self.workflow)
        self._replay_state = None
        factory = getattr(self, "_run_factory", None)
        self.bridge.run_factory = factory or Run
        try:
            return self.bridge.start(self.workflow, initial, resolver, None if factory else self.store,
                                     self.workflow_path,
                                     variables=variables if self.arguments.fields else None,
                                     start_at=start_at, reuse_from=reuse_from)
        except RunStateError as err:
            self._on_error(str(err))
            return None
        except FlowdeskError as err:  # refused before it starts: a required variable missing, a bad value
            self._on_error(f"Cannot start the run: {err}")
            return None

    def cancel_run(self) -> None:
        self.bridge.cancel()

    def clear(self, workflow: Workflow | None | object = ...) -> None:
        """Show no run, as for a document that has none (File ▸ New or Open): an empty log, no
        banner, no card. A paused run is let go of (it stays paused in the run history, to be
        resumed from there); a running one is cancelled, and what it still sends is not shown.
        ``workflow``: the document about to be shown, whose nodes the emptied views list (by
        default the one shown now; given, nothing of the old one is kept)."""
        bridge = self.bridge
        if bridge.is_active and not bridge.release():
            self._detached = bridge.run_id
            bridge.cancel()
        self._replay_state = None
        self._replay_info = {}
        self._run_id = None
        self._elapsed_timer.stop()
        self._started_mono = self._ended_mono = None
        self._reset_views(self.workflow if workflow is ... else workflow, timeline=workflow is ...)
        self.empty_label.setVisible(True)
        self.header.set_run_id(None)
        self.header.set_elapsed(None)
        self.header.set_running(False)
        self._set_status_label("pending")
        self.approvals.set_requests([])
        self.node_states_changed.emit({})
        self.links_followed.emit(frozenset())
        self._update_actions()

    def _shows_bridge(self) -> bool:
        """The bridge's run is the one shown (not one let go of by ``clear``)."""
        return self._detached is None or self.bridge.run_id != self._detached

    def show_node(self, node_id: str) -> None:
        """Scroll to (and select) the entries of ``node_id`` — its latest step — and show its run details."""
        rows = self.model.rows_of(node_id)
        self._show_node_details(node_id)
        current = self.current_entry()
        if not rows or (current is not None and current.node_id == node_id):
            return  # already there (the canvas echoing an entry click): keep the entry the user chose
        node_filter = self.proxy.node_filter
        if node_filter is not None and node_id not in node_filter:
            self.node_filter.setCurrentIndex(self._filter_rows.get(node_id, 0))
        entries = self.model.entries
        steps = [r for r in rows if entries[r].type == EventType.STEP_START]
        candidates = ([steps[-1]] if steps else []) + rows
        for row in candidates:
            pidx = self.proxy.mapFromSource(self.model.index(row))
            if pidx.isValid():
                self.view.setCurrentIndex(pidx)
                self.view.scrollTo(pidx, QAbstractItemView.ScrollHint.PositionAtCenter)
                return

    def node_details(self, node_id: str) -> dict[str, Any]:
        """The node's last input, output, duration (s), tokens, error and state in the shown run."""
        # (a step that logs no input of its own has what reached it: RunState.passed_input)
        if self._replay_state is not None:
            return self._replay_state.node_details(node_id)
        return self.bridge.node_details(node_id)

    def open_paused_run(self, run_id: str) -> bool:
        """Show a paused run from the store (``set_store``) with its approval cards, ready to be
        answered (for example after the app restarted). False, with the reason shown, if it cannot."""
        if self.store is None:
            self._on_error("No run history is open.")
            return False
        if self.bridge.is_active:
            self._on_error("A run is in progress; cancel it before taking up another one.")
            return False
        try:
            resolver = self._resolver_factory()
            workflow = self.store.workflow_of(run_id)
            events = self.store.events(run_id)
            self._reset_views(workflow)
            self._replay_state = None
            self._replay_info = {}
            self.bridge.open_paused(self.store, run_id, resolver)
        except Exception as err:  # StoreError, RunStateError, ProviderConfigError: say why
            self._on_error(f"Cannot take up run {run_id[:8]}: {err}")
            return False
        self.model.add_events(events)
        self.trace.add_events(events, self.bridge.run_state)
        self._set_status_label("paused")
        # The input of that run (not the open document's Start text), shown collapsed.
        info = self.store.get_run(run_id)
        initial = self.bridge.initial_input or (info.initial_input if info is not None else None) or ""
        self.input_edit.setPlainText(initial)
        self.header.set_running(True, initial)
        return True

    def take_up_remote(self, run: Any) -> bool:
        """Show a paused run on a Temporal server (a ``RemoteRun`` from ``RemoteRun.fetch``) with
        its log and approval cards; an answer goes to the server. False, with the reason shown,
        if it cannot be taken up."""
        try:
            if run.status != RunStatus.PAUSED:
                raise RunStateError(f"it is {run.status} on the server, not waiting for approval")
            self._reset_views(run.workflow)
            self._replay_state = None
            self._replay_info = {}
            self.bridge.adopt_remote(run)
        except RunStateError as err:
            self._on_error(f"Cannot take up run {run.run_id[:8]} on the Temporal server at "
                           f"{getattr(run, 'address', '?')}: {err}")
            return False
        events = list(run.events or [])
        self.model.add_events(events)
        self.trace.add_events(events, self.bridge.run_state)
        self._set_status_label("paused")
        initial = run.initial_input or ""
        self.input_edit.setPlainText(initial)
        self.header.set_running(True, initial)
        return True

    def run_badges(self) -> dict[str, tuple[str, str]]:
        """Badges of the shown run: node id -> ("attempt 2 of 4", "retry"), ("iteration 3", "loop"), ("1 of 3 in", "join")."""
        return dict(self._badges)

    def _update_badges(self) -> None:
        badges = run_badges(self._state())
        if badges != self._badges:
            self._badges = badges
            self.run_badges_changed.emit(dict(badges))

    def node_errors(self) -> dict[str, str]:
        """The error of every failed node in the shown run, and of every node its policy skipped
        after an error (for the canvas's tooltips; a skipped node without one was not reached)."""
        state = self._state()
        return {nid: d.error for nid, d in state.details.items()
                if d.error and state.states.get(nid) in ("failed", "cancelled", "skipped")}

    def replay(self, workflow: Workflow | None, events: Iterable[RunEvent], *, run_id: str | None = None,
               status: str | None = None) -> bool:
        """Show a stored run's log (history panel). Refused (False) while a live run is in progress."""
        if self.bridge.is_active:
            self._on_error("A run is in progress; cancel it before opening another run's log.")
            return False
        events = list(events)
        self._reset_views(workflow)
        state = RunState.of(workflow, events)
        if status:
            try:
                state.status = RunStatus(status)
            except ValueError:
                pass
        self._replay_state = state
        self._replay_info = {"workflow": workflow}
        self._run_id = run_id
        self.header.set_run_id(run_id)
        self.model.add_events(events)
        self.trace.add_events(events, state)
        self.timeline.canvas.live = False
        self.timeline.add_events(events)
        self._update_cost()
        self._update_badges()
        self._started_mono = self._ended_mono = None
        t0 = state.started_at or (events[0].timestamp if events else None)
        t1 = state.ended_at or (events[-1].timestamp if events else None)
        self.header.set_elapsed(t1 - t0 if t0 and t1 else None)
        self._set_status_label(str(state.status), state.error)
        self.header.set_running(False)
        self.approvals.set_requests([])
        self.node_states_changed.emit(dict(state.states))
        self.links_followed.emit(frozenset(state.links))
        self._update_actions()
        return True

    def set_type_groups(self, groups: Iterable[str] | None) -> None:
        """Show only the entry type groups named (keys of TYPE_GROUPS); None shows every type."""
        wanted = set(TYPE_GROUPS) if groups is None else set(groups)
        for name, action in self.type_actions.items():
            action.blockSignals(True)
            action.setChecked(name in wanted)
            action.blockSignals(False)
        self._apply_type_filter()

    def set_node_filter(self, node_id: str | None) -> None:
        self.node_filter.setCurrentIndex(self._filter_rows.get(node_id, 0) if node_id is not None else 0)

    def toggle_collapsed(self, node_id: str) -> None:
        self.proxy.set_collapsed(node_id, not self.proxy.is_collapsed(node_id))
        self.view.viewport().update()

    # ---------------------------------------------------------------- exports
    def all_events(self) -> list[RunEvent]:
        return list(self.model.raw_events)

    def export_jsonl(self, path: str | Path) -> None:
        """Every event of the shown run (streamed deltas included), one JSON object per line."""
        write_jsonl(self.model.raw_events, path)

    def run_record(self) -> dict[str, Any]:
        """The shown run as an AgentFlow-style record (the shape of ``engine.agentflow_record``)."""
        live = self._replay_state is None
        workflow = (self.bridge.workflow if live else self._replay_info.get("workflow")) or self.workflow
        return run_record(self._state(), self.model.raw_events, run_id=self._run_id, workflow=workflow,
                          workflow_path=self.workflow_path,
                          initial_input=self._record_input(self.bridge.initial_input if live else None, workflow),
                          error=self.bridge.error if live else None)

    def _record_input(self, given: str | None, workflow: Workflow | None) -> str | None:
        """The run's input as recorded: the input given, else the stored run's, else the Start node's."""
        if given is not None:
            return given
        if self.store is not None and self._run_id:
            try:
                stored = self.store.get_run(self._run_id)
            except StoreError:
                stored = None
            if stored is not None and stored.initial_input is not None:
                return stored.initial_input
        start = next((n for n in workflow.nodes if n.type == "start"), None) if workflow is not None else None
        return getattr(start.data, "initialInput", None) if start is not None else None

    def export_record(self, path: str | Path | None = None) -> Path:
        """Write the AgentFlow-style record; ``path`` may be a folder (the file is then ``run_<id>.json``)."""
        return write_record(self.run_record(), path)

    def final_output(self) -> str | None:
        return self._state().final_output

    def copy_final_output(self) -> None:
        text = self.final_output()
        if text is not None:
            QGuiApplication.clipboard().setText(text)

    def current_entry(self) -> LogEntry | None:
        idx = self.view.currentIndex()
        return idx.data(EntryRole) if idx.isValid() else None

    def copy_current_entry(self) -> None:
        if self.current_entry() is not None:
            QGuiApplication.clipboard().setText(self.entry_pane.copy_text())

    def visible_entries(self) -> list[LogEntry]:
        """The entries the view shows, in order (after filters)."""
        return [self.proxy.index(r, 0).data(EntryRole) for r in range(self.proxy.rowCount())]

    # ================================================================== internals
    @property
    def run_state(self) -> RunState:
        """What the shown run did (the engine's reducer): the replayed run's, else the live one's."""
        return self._state()

    def _state(self) -> RunState:
        """What the shown run did: the replayed run's state, else the bridge's live one."""
        return self._replay_state if self._replay_state is not None else self.bridge.run_state

    def use_names(self, table: NodeNames) -> None:
        """The names of the workflow about to be shown, made ahead (an open of a big file makes
        them on a worker thread); used for that workflow until it is set (:meth:`set_workflow`)."""
        self._prepared_names = table

    def _set_names(self, workflow: Workflow | None) -> None:
        table = self._prepared_names
        if table is None or table.workflow is not workflow:
            table = NodeNames.of(workflow)
        names = table.names
        if names and names == self._names_shown:
            return  # the same nodes and names (set on every validation; a big file has 100k of them)
        self._names_shown = names
        self.model.set_workflow(workflow, names)
        self.trace.set_node_names(names)
        current = self.node_filter_id()
        ids = table.ids
        self.node_filter.blockSignals(True)
        self._filter_ids = ids
        self._filter_rows = table.rows
        self._filter_model.setStringList(table.labels)
        self.node_filter.setCurrentIndex(self._filter_rows.get(current, 0) if current is not None else 0)
        self.node_filter.blockSignals(False)
        self._apply_node_filter()

    def _timeline_clicked(self, node_id: str) -> None:
        """A bar of the timeline: that node's log entries and details, and the node on the canvas."""
        self.show_node(node_id)
        self.tabs.setCurrentWidget(self.timeline)
        self.node_activated.emit(node_id)

    def _reset_views(self, workflow: Workflow | None, timeline: bool = True) -> None:
        # No timeline for a document that has not run (a run resets it with its workflow).
        self.timeline.reset(workflow if timeline else None, live=True)
        self.header.set_cost(0, None)
        self.header.offer_provider_choice(None)
        self._names_shown = None
        self._badges = {}
        self.run_badges_changed.emit({})
        self.model.clear()
        self.trace.clear()
        self._set_names(workflow)
        self.entry_pane.clear()
        self.node_panel.set_details(None)
        self._follow_tail = True
        self.empty_label.setVisible(False)
        # Each run starts with every type shown: a filter left from an earlier run hid its
        # Step entries without a word.
        self.set_type_groups(None)

    def _update_actions(self) -> None:
        active = self.bridge.is_active
        self.run_action.setEnabled(not active and self.workflow is not None)
        self.cancel_action.setEnabled(active)
        self.arguments.setEnabled(not active)  # a live run keeps the arguments it started with
        has = bool(self.model.raw_events)
        for a in (self.save_log_action, self.save_record_action):
            a.setEnabled(has)
        self.copy_output_action.setEnabled(self._state().final_output is not None)

    def _set_status_label(self, status: str, detail: str | None = None) -> None:
        self.header.set_status(status, detail)

    def _on_error(self, message: str) -> None:
        self.header.show_error(message)

    # -------------------------------------------------------------- bridge signals
    def _on_run_started(self, run_id: str) -> None:
        self._detached = None
        self._run_id = run_id
        self.header.set_run_id(run_id, getattr(self.bridge.run, "address", None))  # a remote run: its server
        self._started_mono = time.monotonic()
        self._ended_mono = None
        self._elapsed_timer.start()
        self._update_elapsed()
        self._set_status_label("running")
        self.header.offer_provider_choice(None)
        self.header.set_running(True, self.bridge.initial_input)
        self._update_actions()
        self.run_started.emit(run_id)

    def _on_run_finished(self, status: str) -> None:
        if not self._shows_bridge():
            self._update_actions()
            self.run_finished.emit(status)
            return
        self._ended_mono = time.monotonic()
        self._elapsed_timer.stop()
        self._update_elapsed()
        self._set_status_label(status, self.bridge.error)
        self.header.offer_provider_choice(
            self._state().provider_problem if status == "failed" and self.offers_provider_choice else None)
        self.header.set_running(False)
        self._update_actions()
        self._refresh_approvals()
        self._refresh_node_panel()
        self.run_finished.emit(status)

    def _on_status(self, status: str) -> None:
        if not self._shows_bridge():
            return
        if status in ("completed", "failed", "cancelled"):
            self._set_status_label(status, self.bridge.error)
        else:
            self._set_status_label(status)
        self.status_changed.emit(status)

    def _update_elapsed(self) -> None:
        if self._started_mono is None:
            return
        end = self._ended_mono if self._ended_mono is not None else time.monotonic()
        self.header.set_elapsed(end - self._started_mono)

    def _update_cost(self) -> None:
        state = self._state()
        try:
            if not hasattr(self, "_prices"):
                self._prices = model_prices()
            costs = run_costs(state, state.workflow or self.workflow, self._prices)
        except Exception:  # an unreadable catalogue: no cost shown, the run goes on
            return
        cached = sum(1 for v in state.states.values() if v == "cached")
        total = costs["total"]
        self.header.set_cost(total["tokens"], total["cost"], cached, cost_breakdown(costs))

    def _on_events(self, batch: list[RunEvent]) -> None:
        if not self._shows_bridge():
            return
        self.model.add_events(batch)
        self.timeline.add_events(batch)
        if any(e[1] in ("llm_response", "cache_hit") for e in batch):
            self._update_cost()
        self.trace.add_events(batch, self.bridge.run_state)
        self._update_badges()
        self._update_actions()
        if not self.view.currentIndex().isValid() and self.model.latest_response is not None:
            self._show_entry(self.model.latest_response)  # nothing selected: follow the latest answer

    def _refresh_approvals(self) -> None:
        before = len(self.approvals.cards)
        live = self._replay_state is None and self._shows_bridge()
        self.approvals.set_requests(self.bridge.approvals() if live else [])
        if self.approvals.cards and len(self.approvals.cards) != before:
            QTimer.singleShot(0, self, lambda: self._size_approvals(bool(self.approvals.cards)))

    def _size_approvals(self, waiting: bool, ask_room: bool = True) -> None:
        if not waiting:
            return
        total = sum(self.vsplit.sizes()) or self.vsplit.height()
        hint = self.approvals.sizeHint().height()
        want = min(hint, int(total * APPROVAL_SHARE))
        self.vsplit.setSizes([want, max(90, total - want)])
        lack = int(hint / APPROVAL_SHARE) - total
        if ask_room and lack > 0:  # a short window: the card is cut (see approval_room_wanted)
            self.approval_room_wanted.emit(lack)

    def fit_approvals(self) -> None:
        """Share the split between the approval cards and the tabs again (after the console
        was given more room); asks for no more."""
        self._size_approvals(bool(self.approvals.cards), ask_room=False)

    def _on_decision(self, node_id: str, decision: str, note: str) -> None:
        if self.bridge.pending_approval != node_id:
            self._refresh_approvals()
            return
        try:
            self.bridge.resume(decision, note, output=self.approvals.edited_output(node_id))
        except RunStateError as err:
            self._on_error(str(err))
            self._refresh_approvals()

    # -------------------------------------------------------------- view
    def _on_scrolled(self, value: int) -> None:
        # following the tail stops when the user scrolls up, and resumes at the bottom
        self._follow_tail = value >= self.view.verticalScrollBar().maximum() - 4

    def _on_range_changed(self, _lo: int, hi: int) -> None:
        if self._follow_tail:
            self.view.verticalScrollBar().setValue(hi)

    def _on_entry_clicked(self, index: QModelIndex) -> None:
        entry: LogEntry | None = index.data(EntryRole)
        if entry is not None and entry.group != SYSTEM_NODE:
            self.node_activated.emit(entry.group)  # a subflow's entry: its flow node

    def _on_current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        entry: LogEntry | None = current.data(EntryRole) if current.isValid() else None
        self._show_entry(entry)
        if entry is not None and entry.group != SYSTEM_NODE:
            self._show_node_details(entry.group)
        if entry is not None and entry.type.startswith("subagent_call"):
            call_id = (entry.extra or {}).get("callId")
            if isinstance(call_id, str):
                self.trace.select_call(call_id)

    def _on_model_data_changed(self, top: QModelIndex, bottom: QModelIndex, *_args: Any) -> None:
        entry = self.current_entry() or self.model.latest_response
        if entry is not None and top.row() <= entry.row <= bottom.row():
            self._show_entry(entry)

    def _show_entry(self, entry: LogEntry | None) -> None:
        self.entry_pane.show_entry(entry)

    @property
    def entry_kind(self) -> str | None:
        """How the shown entry was rendered: markdown, json or text."""
        return self.entry_pane.kind

    def _show_node_details(self, node_id: str) -> None:
        name = self.model.node_name(node_id)
        self.node_panel.set_details(self.node_details(node_id), name)

    def _refresh_node_panel(self) -> None:
        d = self.node_panel.details
        if d and d.get("nodeId"):
            self._show_node_details(d["nodeId"])

    def _on_search_text(self, text: str) -> None:
        # a short log filters on every keystroke; a long one once typing pauses
        if len(self.model.entries) < 5000:
            self.proxy.set_text_filter(text)
        else:
            self._search_timer.start()

    def _apply_node_filter(self, *_args: Any) -> None:
        node = self.node_filter_id()
        self.proxy.set_node_filter(None if node is None else [node])

    def node_filter_id(self) -> str | None:
        """The node the log is filtered to (None: all nodes)."""
        i = self.node_filter.currentIndex()
        return self._filter_ids[i] if 0 <= i < len(self._filter_ids) else None

    def _apply_type_filter(self, *_args: Any) -> None:
        checked = [g for g, a in self.type_actions.items() if a.isChecked()]
        if len(checked) == len(self.type_actions):
            self.proxy.set_type_filter(None)
            self.type_button.setText("Types: all")
        else:
            types = [t for g in checked for t in TYPE_GROUPS[g]]
            self.proxy.set_type_filter(types)
            self.type_button.setText(f"Types: {len(checked)} of {len(self.type_actions)}")

    def _collapse_all(self, on: bool) -> None:
        if on:
            self.proxy.collapse_all(self.model.node_ids())
            self.collapse_button.setText("Expand all")
        else:
            self.proxy.expand_all()
            self.collapse_button.setText("Collapse all")

    def _context_menu(self, pos: QPoint) -> None:
        idx = self.view.indexAt(pos)
        entry: LogEntry | None = idx.data(EntryRole) if idx.isValid() else None
        menu = QMenu(self)
        if entry is not None:
            menu.addAction("Copy content", lambda: QGuiApplication.clipboard().setText(entry.content))
            menu.addAction("Copy as JSON", lambda: QGuiApplication.clipboard().setText(entry.to_event().to_json()))
            if entry.group != SYSTEM_NODE:
                menu.addSeparator()
                group, name = entry.group, self.model.node_name(entry.group)
                collapsed = self.proxy.is_collapsed(group)
                menu.addAction(("Expand" if collapsed else "Collapse") + f" entries of “{name}”",
                               lambda: self.toggle_collapsed(group))
                menu.addAction(f"Show only “{name}”", lambda: self.set_node_filter(group))
        menu.addAction("Show all nodes", lambda: self.set_node_filter(None))
        menu.exec(self.view.viewport().mapToGlobal(pos))

    def _export_folder(self) -> Path:
        """Exports are offered next to the workflow file (else in the home folder), not in
        whatever folder the process was started from."""
        if self.workflow_path and Path(self.workflow_path).parent.is_dir():
            return Path(self.workflow_path).parent
        return Path.home()

    def _ask_export_jsonl(self) -> None:
        name = str(self._export_folder() / f"run_{self._run_id or 'log'}.jsonl")
        path, _ = QFileDialog.getSaveFileName(self, "Save the run log", name, "JSON Lines (*.jsonl)")
        if path:
            self._guarded(lambda: self.export_jsonl(path))

    def _ask_export_record(self) -> None:
        name = str(self._export_folder() / f"run_{self._run_id or 'unsaved'}.json")
        path, _ = QFileDialog.getSaveFileName(self, "Save the run record", name, "Run record (*.json)")
        if path:
            self._guarded(lambda: self.export_record(path))

    def _guarded(self, fn: Callable[[], Any]) -> None:
        try:
            fn()
        except OSError as err:
            self._on_error(f"Cannot save: {err.strerror or err}")


def _input_hint(start_text: str) -> str:
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
        lines.append("No price known for " + ", ".join(total["unpriced"]) + " (their tokens are counted, not "
                     "their cost; a price per model can be set in the settings file's providers)")
    return "\n".join(lines)
