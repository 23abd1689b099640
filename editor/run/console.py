"""RunConsole: run controls, the live log, approvals, the subagent trace and exports.

A standalone widget that the main window puts in its "Run console" dock. It owns one
:class:`~editor.run.bridge.RunBridge` and talks to the engine only through it.

Its parts live in their own modules: the header row with the input, the clock and the cost
(``header``), the log's filters and list (``log_pane``), painting (``log_view``) and model
(``log_model``), the side with approvals and the Entry / Calls / Node / Timeline tabs
(``side_pane``), and the Export menu (``export_menu``, writing through ``exports``). Small
controllers keep their parts in step with the run shown: the approval cards
(``approval_area``), the log and the tabs following it (``shown_views``), the models a run used
and the badges (``models_used``), and the header with Repair… / Save as flow…
(``header_control``). This module wires them to the bridge and to the run shown.

Public API (for the main window; everything else is private): ``set_workflow``,
``set_resolver_factory``, ``set_store``, ``set_run_factory``; ``run_action`` (F5) and
``cancel_action`` (Shift+F5), or ``start_run()`` / ``cancel_run()``; ``show_node``,
``replay`` (a stored run, read-only), ``open_paused_run`` / ``take_up_remote`` (answer a
paused run), ``node_details``, ``node_errors``, ``run_badges``, ``run_state``; the exports
``export_jsonl``, ``export_record``, ``copy_final_output``. The signals are listed on the
class: ``node_activated`` (select that node on the canvas), ``node_states_changed`` and
``links_followed`` for the canvas to paint, ``status_changed``, ``run_started``,
``run_finished``, ``waiting_for_input_changed``, ``provider_choice_requested``.

Invariants
* What the console shows comes from events only (live ones through the bridge, stored
  ones through ``replay``), and what a run did is derived from them by the engine's one
  reducer (:class:`engine.RunState`: the bridge's for a live run, the console's own for a
  replayed one), so a replayed run looks like the live one did.
* The log costs what is visible, not what is stored, and follows a live run's tail unless
  the user scrolled up (see :mod:`.log_pane`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QModelIndex, Qt, Signal
from PySide6.QtWidgets import QSplitter, QVBoxLayout, QWidget

from engine import (
    FlowdeskError,
    ProviderConfigError,
    Run,
    RunEvent,
    RunState,
    RunStateError,
    RunStatus,
    RunStore,
    Workflow,
)

from .approval_area import ApprovalArea
from .arguments import RunArguments, declared_variables, remember_arguments, remembered_arguments
from .bridge import RunBridge, default_resolver_factory
from .elsewhere import ElsewhereNotice
from .export_menu import ExportMenu
from .header import LONG_INPUT, RunHeader, cost_breakdown, run_actions
from .header_control import RunHeaderControl
from .log_model import LogEntry, LogFilterProxy, LogModel, NodeNames
from .log_pane import LogPane
from .log_view import TYPE_COLOURS, LogDelegate
from .models_used import LOCAL_NOTICE_KEY, ModelsUsed
from .shown_run import ShownRun
from .shown_views import ShownViews
from .side_pane import RunSidePane

__all__ = ["RunConsole", "LogDelegate", "TYPE_COLOURS", "LONG_INPUT", "cost_breakdown", "LOCAL_NOTICE_KEY"]

log = logging.getLogger(__name__)


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
    # Learning and routing: Repair… on the node a run failed at; Save as flow… on a completed
    # run whose agent called tools (the window's controllers do them).
    repair_requested = Signal(str)  # node id
    save_as_flow_requested = Signal(str)  # run id
    # The paused run shown was answered in another process and let go of (what happened, said
    # in ``elsewhere_notice``, whose *Open in Run history* the window may offer).
    answered_elsewhere = Signal(str)

    def __init__(self, parent: QWidget | None = None, *, bridge: RunBridge | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("runConsole")
        self.bridge = bridge or RunBridge(self)
        if self.bridge.parent() is None:
            self.bridge.setParent(self)
        self.workflow: Workflow | None = None
        self.workflow_path: str | None = None
        self.store: RunStore | None = None
        self._resolver_factory: Callable[[], Any] = default_resolver_factory
        self.shown = ShownRun(self.bridge)  # which run is shown (live or replayed), and what it did
        self._default_input = ""
        # Whether a run whose provider could not serve offers "Choose provider…" (the main
        # window's console, which handles provider_choice_requested, turns it on).
        self.offers_provider_choice = False

        self.model = LogModel(self)
        self.proxy = LogFilterProxy(self)
        self.proxy.setSourceModel(self.model)
        self.run_action, self.cancel_action = run_actions(self, self.start_run, self.cancel_run)
        self._build_ui()
        self._connect()
        self._update_actions()
        self.header.set_status("pending")

    # ================================================================== construction
    def _build_ui(self) -> None:
        root = QVBoxLayout(self)
        root.setContentsMargins(6, 6, 6, 6)
        root.setSpacing(6)

        # --- one row: input | Run / Cancel | status | export (a short dock keeps room for the log)
        self.exports = ExportMenu(self, self, self._on_error)
        self.copy_output_action = self.exports.copy_output_action
        self.save_log_action, self.save_record_action = self.exports.save_log_action, self.exports.save_record_action
        self.header = h = RunHeader(self.run_action, self.cancel_action, self.exports.actions, self)
        self.input_edit, self.run_button, self.cancel_button = h.input_edit, h.run_button, h.cancel_button
        self.status_label, self.elapsed_label, self.run_id_label = h.status_label, h.elapsed_label, h.run_id_label
        self.export_button = h.export_button
        root.addWidget(h)
        root.addWidget(h.local_notice)  # the whole width under the header (the status column is narrow)
        self.elsewhere_notice = ElsewhereNotice(self)  # the run shown was answered in another process
        root.addWidget(self.elsewhere_notice)
        self.arguments = RunArguments(self)  # the run's variables (hidden when the Start node declares none)
        root.addWidget(self.arguments)
        self._form_refusal = ""  # "Cannot start the run: …" said about a field, kept up to date as it is edited
        self._before_refusal = ("", "")  # the status it replaced
        self.arguments.problems_changed.connect(self._follow_form_refusal)

        # --- the log (filters and list) beside approvals above the entry tabs; the console
        # keeps names for their parts
        self.log_pane = pane = LogPane(self.model, self.proxy)
        self.view, self.delegate, self.empty_label = pane.view, pane.delegate, pane.empty_label
        self.node_filter, self.type_button, self.search_edit = pane.node_filter, pane.type_button, pane.search_edit
        self.collapse_button = pane.collapse_button
        self.vsplit = side = RunSidePane()
        self.approvals, self.tabs, self.entry_pane = side.approvals, side.tabs, side.entry_pane
        self.trace, self.node_panel, self.timeline = side.trace, side.node_panel, side.timeline
        self.entry_header, self.entry_view = self.entry_pane.header, self.entry_pane.view
        self.copy_entry_button = self.entry_pane.copy_button
        self.entry_pane.attachment_source = self._attachment
        self.addAction(self.approvals.approve_action)
        self.addAction(self.approvals.reject_action)
        # the controllers that keep the header's, the cards' and the tabs' parts in step
        self.models_used = ModelsUsed(h, self.shown, self)
        self.model_used = self.models_used.model_used  # (node id, provider, model) of an agent call
        self.approval_area = ApprovalArea(side, self.bridge, self.shown, self._on_error, self)
        self.views = ShownViews(side, pane, self.shown, self.node_activated.emit, self)
        self.header_control = RunHeaderControl(h, self.bridge, self.shown, self.model, self)
        self.splitter = split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(pane)
        split.addWidget(side)
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
        b.approvals_changed.connect(self.approval_area.refresh)
        b.node_states_changed.connect(self.node_states_changed)
        b.node_states_changed.connect(lambda _s: self.views.refresh_node_panel())
        b.links_followed.connect(self.links_followed)
        b.error_occurred.connect(self._on_error)
        b.answered_elsewhere.connect(self._on_answered_elsewhere)
        self.header.provider_choice_requested.connect(self.provider_choice_requested)
        self.header_control.repair_requested.connect(self.repair_requested)
        self.header_control.save_as_flow_requested.connect(self.save_as_flow_requested)
        self.models_used.badges_changed.connect(self.run_badges_changed)
        self.approval_area.room_wanted.connect(self.approval_room_wanted)
        self.approvals.decision_requested.connect(self.approval_area.decide)
        self.approvals.waiting_changed.connect(self.waiting_for_input_changed)

    # ================================================================== public API
    def set_workflow(self, workflow: Workflow | None, path: str | None = None) -> None:
        """The workflow that Run starts (a copy is taken at start; later edits do not reach a live run)."""
        self.workflow = workflow
        self.workflow_path = str(path) if path else None
        start = workflow.start_node() if workflow is not None else None
        default = (getattr(start.data, "initialInput", "") if start is not None else "") or ""
        self.header.show_start_text(default, default != self._default_input)
        self._default_input = default
        if not self.bridge.is_active and not self.shown.is_replay and not self.model.entries:
            self.views.set_names(workflow)
        self.arguments.set_variables(declared_variables(workflow), remembered_arguments(self.workflow_path))
        self._update_actions()
        self.views.prepared_names = None  # later calls follow edits: names are made again

    def set_resolver_factory(self, factory: Callable[[], Any]) -> None:
        """``factory()`` is called at each Run and returns a provider or a resolver (AgentInvocation -> provider)."""
        self._resolver_factory = factory

    def _attachment(self, attachment_id: str) -> bytes | None:
        """A stored attachment (a screenshot) of the run shown."""
        found = self.store.attachment(self.run_id, attachment_id) if self.store and self.run_id else None
        return found[1] if found else None

    def current_resolver(self) -> Any:
        """What the console's runs use to reach a model (the factory set last), for the requests
        that go with a run: Repair…, Save as flow…."""
        return self._resolver_factory()

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
        return self.shown.run_id

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
            resolver = self.models_used.tracking(self._resolver_factory())
        except Exception as err:  # ProviderConfigError and friends: say why, start nothing
            self._on_error(f"Cannot start the run: {err}")
            if isinstance(err, ProviderConfigError) and self.offers_provider_choice:
                self.header.offer_provider_choice({"message": str(err)})
            return None
        if self.arguments.problems:  # a value the engine would refuse: said now, nothing started
            name, problem = next(iter(self.arguments.problems.items()))
            if not self._form_refusal or self.header.status_text != self._form_refusal:
                self._before_refusal = self.header.status_shown  # put back once the form is fine
            self._form_refusal = f"Cannot start the run: {problem}"
            self._on_error(self._form_refusal)
            self.arguments.fields[name].setFocus()
            return None
        text = self.input_edit.toPlainText()
        initial = text if text.strip() else None
        variables = self.arguments.values()
        remember_arguments(self.workflow_path, self.arguments.values(include_empty=True))
        self._reset_views(self.workflow)
        self.shown.show_live()
        factory = getattr(self, "_run_factory", None)
        self.bridge.run_factory = factory or Run
        try:
            return self.bridge.start(
                self.workflow,
                initial,
                resolver,
                None if factory else self.store,
                self.workflow_path,
                variables=variables if self.arguments.fields else None,
                start_at=start_at,
                reuse_from=reuse_from,
            )
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
            self.shown.detached = bridge.run_id
            bridge.cancel()
        self.shown.show_live()
        self.shown.run_id = None
        self.header.reset_clock()
        self._reset_views(self.workflow if workflow is ... else workflow, timeline=workflow is ...)
        self.empty_label.setVisible(True)
        self.header_control.cleared()
        self.elsewhere_notice.hide()
        self.approvals.set_requests([])
        self.node_states_changed.emit({})
        self.links_followed.emit(frozenset())
        self._update_actions()

    def show_node(self, node_id: str) -> None:
        """Scroll to (and select) the entries of ``node_id`` — its latest step — and show its run details."""
        self.views.show_node(node_id)

    def node_details(self, node_id: str) -> dict[str, Any]:
        """The node's last input, output, duration (s), tokens, error and state in the shown run;
        for a browser step, its last screenshot (``screenshot``: PNG bytes)."""
        return self.views.node_details(node_id)

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
            self.shown.show_live()
            self.bridge.open_paused(self.store, run_id, resolver)
        except Exception as err:  # StoreError, RunStateError, ProviderConfigError: say why
            self._on_error(f"Cannot take up run {run_id[:8]}: {err}")
            return False
        # The input of that run (not the open document's Start text), shown collapsed.
        info = self.store.get_run(run_id)
        self._show_taken_up(events, self.bridge.initial_input or (info.initial_input if info is not None else None))
        return True

    def take_up_remote(self, run: Any) -> bool:
        """Show a paused run on a Temporal server (a ``RemoteRun`` from ``RemoteRun.fetch``) with
        its log and approval cards; an answer goes to the server. False, with the reason shown,
        if it cannot be taken up."""
        try:
            if run.status != RunStatus.PAUSED:
                raise RunStateError(f"it is {run.status} on the server, not waiting for approval")
            self._reset_views(run.workflow)
            self.shown.show_live()
            self.bridge.adopt_remote(run)
        except RunStateError as err:
            self._on_error(
                f"Cannot take up run {run.run_id[:8]} on the Temporal server at {getattr(run, 'address', '?')}: {err}"
            )
            return False
        self._show_taken_up(list(run.events or []), run.initial_input)
        return True

    def _show_taken_up(self, events: list[RunEvent], initial: str | None) -> None:
        """A paused run taken up: its log so far, and its input shown collapsed."""
        self.views.add_events(events, self.bridge.run_state, timeline=False)
        self.header_control.taken_up(initial)

    def run_badges(self) -> dict[str, tuple[str, str]]:
        """Badges of the shown run: node id -> (text, "retry"|"loop"|"join"|"model") (see models_used)."""
        return self.models_used.badges()

    def node_errors(self) -> dict[str, str]:
        """The error of every failed node in the shown run, and of every node its policy skipped
        after an error (for the canvas's tooltips; a skipped node without one was not reached)."""
        return self.shown.node_errors()

    def replay(
        self,
        workflow: Workflow | None,
        events: Iterable[RunEvent],
        *,
        run_id: str | None = None,
        status: str | None = None,
    ) -> bool:
        """Show a stored run's log (history panel). Refused (False) while a live run is in progress."""
        if self.bridge.is_active:
            self._on_error("A run is in progress; cancel it before opening another run's log.")
            return False
        events = list(events)
        self._reset_views(workflow)
        state = self.shown.replay(workflow, events, run_id, status)
        self.timeline.canvas.live = False
        self.views.add_events(events, state)
        self.header_control.replayed(state, events, run_id, self.workflow, learn=self.store is not None)
        self.elsewhere_notice.hide()
        self.models_used.update()
        self.approvals.set_requests([])
        self.node_states_changed.emit(dict(state.states))
        self.links_followed.emit(frozenset(state.links))
        self._update_actions()
        return True

    def set_type_groups(self, groups: Iterable[str] | None) -> None:
        """Show only the entry type groups named (keys of TYPE_GROUPS); None shows every type."""
        self.log_pane.set_type_groups(groups)

    def set_node_filter(self, node_id: str | None) -> None:
        self.log_pane.set_node_filter(node_id)

    def toggle_collapsed(self, node_id: str) -> None:
        self.log_pane.toggle_collapsed(node_id)

    # ---------------------------------------------------------------- exports
    def all_events(self) -> list[RunEvent]:
        return list(self.model.raw_events)

    def export_jsonl(self, path: str | Path) -> None:
        """Every event of the shown run (streamed deltas included), one JSON object per line."""
        self.exports.export_jsonl(path)

    def run_record(self) -> dict[str, Any]:
        """The shown run as an AgentFlow-style record (the shape of ``engine.agentflow_record``)."""
        return self.shown.record(
            self.model.raw_events, workflow_path=self.workflow_path, store=self.store, fallback=self.workflow
        )

    def export_record(self, path: str | Path | None = None) -> Path:
        """Write the AgentFlow-style record; ``path`` may be a folder (the file is then ``run_<id>.json``)."""
        return self.exports.export_record(path)

    def final_output(self) -> str | None:
        return self._state().final_output

    def copy_final_output(self) -> None:
        self.exports.copy_final_output()

    def current_entry(self) -> LogEntry | None:
        return self.log_pane.current_entry()

    def copy_current_entry(self) -> None:
        self.views.copy_current_entry()

    def visible_entries(self) -> list[LogEntry]:
        """The entries the view shows, in order (after filters)."""
        return self.log_pane.visible_entries()

    # ================================================================== internals
    @property
    def run_state(self) -> RunState:
        """What the shown run did (the engine's reducer): the replayed run's, else the live one's."""
        return self._state()

    def _state(self) -> RunState:
        """What the shown run did: the replayed run's state, else the bridge's live one."""
        return self.shown.state

    def use_names(self, table: NodeNames) -> None:
        """The names of the workflow about to be shown, made ahead (an open of a big file makes
        them on a worker thread); used for that workflow until it is set (:meth:`set_workflow`)."""
        self.views.use_names(table)

    def _reset_views(self, workflow: Workflow | None, timeline: bool = True) -> None:
        self.header.set_cost(0, None)
        self.header.offer_provider_choice(None)
        self.models_used.reset()
        self.views.reset(workflow, timeline)

    def _update_actions(self) -> None:
        active = self.bridge.is_active
        self.run_action.setEnabled(not active and self.workflow is not None)
        self.cancel_action.setEnabled(active)
        self.arguments.setEnabled(not active)  # a live run keeps the arguments it started with
        self.exports.update(bool(self.model.raw_events), self._state().final_output is not None)

    def _on_error(self, message: str) -> None:
        self.header.show_error(message)

    def _follow_form_refusal(self) -> None:
        """After Run was refused for a field's value, the message follows the form as the user
        types: the first problem left, or, once every field is acceptable, the status it replaced
        (never a stale refusal beside a form that is now fine)."""
        if not self._form_refusal or self.header.status_text != self._form_refusal or self.bridge.is_active:
            self._form_refusal = ""
            return
        if self.arguments.problems:
            self._form_refusal = f"Cannot start the run: {next(iter(self.arguments.problems.values()))}"
            self._on_error(self._form_refusal)
        else:
            self._form_refusal = ""
            text, colour = self._before_refusal
            if text:
                self.header.show_status(text, colour)
            else:
                self.header.set_status("pending")

    # -------------------------------------------------------------- bridge signals
    def _on_run_started(self, run_id: str) -> None:
        self.shown.detached = None
        self.shown.run_id = run_id
        self.header_control.started(run_id)
        self.elsewhere_notice.hide()
        self._update_actions()
        self.run_started.emit(run_id)

    def _on_run_finished(self, status: str) -> None:
        if not self.shown.shows_bridge():
            self._update_actions()
            self.run_finished.emit(status)
            return
        offer = status == "failed" and self.offers_provider_choice
        self.header_control.finished(status, self._state().provider_problem if offer else None)
        self._update_actions()
        self.approval_area.refresh()
        self.views.refresh_node_panel()
        self.header_control.offer_followups(status, repair=self.workflow is not None, learn=self.store is not None)
        self.run_finished.emit(status)

    def _on_answered_elsewhere(self, text: str) -> None:
        if self.shown.shows_bridge() and not self.shown.is_replay:
            if not self.bridge.is_active:  # let go of (a run on a Temporal server is followed on)
                self.header_control.answered_elsewhere()
            self.elsewhere_notice.show_for(self.shown.run_id, text)
        self._update_actions()
        self.answered_elsewhere.emit(text)

    # -------------------------------------------------------------- what may follow a run
    def failed_node_id(self) -> str | None:
        """The node the shown run failed at (None when none failed)."""
        return self.header_control.failed_node_id()

    def called_tools(self) -> bool:
        """Whether an agent of the shown run called a tool (a subagent, a flow, an MCP tool)."""
        return self.header_control.called_tools()

    def _on_status(self, status: str) -> None:
        if not self.shown.shows_bridge():
            return
        self.header_control.status(status)
        self.status_changed.emit(status)

    def _update_cost(self) -> None:
        self.header.show_cost(self._state(), self.workflow)

    def _on_events(self, batch: list[RunEvent]) -> None:
        if not self.shown.shows_bridge():
            return
        self.views.add_events(batch, self.bridge.run_state)
        if any(e.type in ("llm_response", "cache_hit") for e in batch):
            self._update_cost()
        self.models_used.update()
        self._update_actions()
        self.views.follow_latest()  # nothing selected: follow the latest answer

    def fit_approvals(self) -> None:
        """Share the split between the approval cards and the tabs again (after the console
        was given more room); asks for no more."""
        self.approval_area.fit()

    # -------------------------------------------------------------- view
    def _on_entry_clicked(self, index: QModelIndex) -> None:
        self.views.entry_clicked(index)

    @property
    def entry_kind(self) -> str | None:
        """How the shown entry was rendered: markdown, json or text."""
        return self.entry_pane.kind

    def node_filter_id(self) -> str | None:
        """The node the log is filtered to (None: all nodes)."""
        return self.log_pane.node_filter_id()

    def _ask_export_jsonl(self) -> None:
        self.exports.ask_export_jsonl()

    def _ask_export_record(self) -> None:
        self.exports.ask_export_record()
