"""ShownViews: what the run console's log and its Entry / Calls / Node / Timeline tabs show.

Split from :mod:`editor.run.console`, which owns one and hands it the events of the run
shown (:class:`~editor.run.shown_run.ShownRun`: live, taken up or replayed). It keeps the
views in step with the log:

* the events go to the log (:class:`~editor.run.log_model.LogModel`), the Calls tab and the
  timeline, under the workflow's node names (made once per workflow, or ahead on a worker
  thread: :meth:`use_names`);
* the entry chosen in the log is shown in the Entry tab (with no entry chosen, the latest
  answer of a live run), its node's run details in the Node tab, and a subagent call's entry
  selects that call in the Calls tab;
* a click on a log entry or on a timeline bar asks for its node to be selected on the canvas
  (``activate``).

A node's details are the shown run's, with a browser step's last screenshot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QModelIndex, QObject
from PySide6.QtGui import QGuiApplication

from engine import SYSTEM_NODE, RunEvent, RunState, Workflow

from .log_model import EntryRole, LogEntry, LogModel, NodeNames
from .log_pane import LogPane
from .shown_run import ShownRun
from .side_pane import RunSidePane

__all__ = ["ShownViews"]


class ShownViews(QObject):
    """The log and the side's tabs, showing the run shown."""

    def __init__(
        self,
        side: RunSidePane,
        log_pane: LogPane,
        shown: ShownRun,
        activate: Callable[[str], None],
        parent: QObject | None = None,
    ) -> None:
        super().__init__(parent)
        self._side = side
        self._log = log_pane
        self._model: LogModel = log_pane.model
        self._shown = shown
        self._activate = activate  # select that node on the canvas
        self.prepared_names: NodeNames | None = None  # see use_names
        self._names_shown: dict[str, str] | None = None  # the node names the log and filter show
        view = log_pane.view
        view.clicked.connect(self.entry_clicked)
        view.activated.connect(self.entry_clicked)
        view.selectionModel().currentChanged.connect(self._current_changed)
        self._model.dataChanged.connect(self._model_data_changed)
        side.entry_pane.copy_button.clicked.connect(self.copy_current_entry)
        side.timeline.node_clicked.connect(self._timeline_clicked)

    # ------------------------------------------------------------------ what is shown
    def use_names(self, table: NodeNames) -> None:
        """The names of the workflow about to be shown, made ahead (an open of a big file makes
        them on a worker thread); used for that workflow until the next :meth:`set_names`
        whose caller drops them (``prepared_names = None``)."""
        self.prepared_names = table

    def set_names(self, workflow: Workflow | None) -> None:
        """The log, its node filter and the Calls tab name the nodes of ``workflow``."""
        table = self.prepared_names
        if table is None or table.workflow is not workflow:
            table = NodeNames.of(workflow)
        names = table.names
        if names and names == self._names_shown:
            return  # the same nodes and names (set on every validation; a big file has 100k of them)
        self._names_shown = names
        self._model.set_workflow(workflow, names)
        self._side.trace.set_node_names(names)
        self._log.set_names(table)

    def reset(self, workflow: Workflow | None, timeline: bool = True) -> None:
        """Empty views for ``workflow``'s run (``timeline``: its bars too; else no timeline, as
        for a document that has not run: a run resets it with its workflow)."""
        side = self._side
        side.timeline.reset(workflow if timeline else None, live=True)
        self._names_shown = None
        self._model.clear()
        side.trace.clear()
        self.set_names(workflow)
        side.entry_pane.clear()
        side.node_panel.set_details(None)
        self._log.follow_tail = True
        self._log.empty_label.setVisible(False)
        # Each run starts with every type shown: a filter left from an earlier run hid its
        # Step entries without a word.
        self._log.set_type_groups(None)

    def add_events(self, events: list[RunEvent], state: RunState, *, timeline: bool = True) -> None:
        """Events of the run shown, in order: to the log, the Calls tab and (``timeline``) the timeline."""
        self._model.add_events(events)
        if timeline:
            self._side.timeline.add_events(events)
        self._side.trace.add_events(events, state)

    # ------------------------------------------------------------------ the log's chosen entry
    def entry_clicked(self, index: QModelIndex) -> None:
        entry: LogEntry | None = index.data(EntryRole)
        if entry is not None and entry.group != SYSTEM_NODE:
            self._activate(entry.group)  # a subflow's entry: its flow node

    def _current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        entry: LogEntry | None = current.data(EntryRole) if current.isValid() else None
        self._show_entry(entry)
        if entry is not None and entry.group != SYSTEM_NODE:
            self._show_node_details(entry.group)
        if entry is not None and entry.type.startswith("subagent_call"):
            call_id = (entry.extra or {}).get("callId")
            if isinstance(call_id, str):
                self._side.trace.select_call(call_id)

    def _model_data_changed(self, top: QModelIndex, bottom: QModelIndex, *_args: Any) -> None:
        entry = self._log.current_entry() or self._model.latest_response
        if entry is not None and top.row() <= entry.row <= bottom.row():
            self._show_entry(entry)

    def follow_latest(self) -> None:
        """Nothing chosen in the log: show the latest answer."""
        if not self._log.view.currentIndex().isValid() and self._model.latest_response is not None:
            self._show_entry(self._model.latest_response)

    def _show_entry(self, entry: LogEntry | None) -> None:
        self._side.entry_pane.show_entry(entry)

    def copy_current_entry(self) -> None:
        if self._log.current_entry() is not None:
            QGuiApplication.clipboard().setText(self._side.entry_pane.copy_text())

    # ------------------------------------------------------------------ nodes
    def _timeline_clicked(self, node_id: str) -> None:
        """A bar of the timeline: that node's log entries and details, and the node on the canvas."""
        self.show_node(node_id)
        self._side.tabs.setCurrentWidget(self._side.timeline)
        self._activate(node_id)

    def show_node(self, node_id: str) -> None:
        """Scroll to (and select) the entries of ``node_id`` — its latest step — and show its run details."""
        self._show_node_details(node_id)
        self._log.select_node(node_id)

    def _show_node_details(self, node_id: str) -> None:
        name = self._model.node_name(node_id)
        self._side.node_panel.set_details(self.node_details(node_id), name)

    def refresh_node_panel(self) -> None:
        """The Node tab's node again (its state changed)."""
        d = self._side.node_panel.details
        if d and d.get("nodeId"):
            self._show_node_details(d["nodeId"])

    def node_details(self, node_id: str) -> dict[str, Any]:
        """The node's last input, output, duration (s), tokens, error and state in the shown run;
        for a browser step, its last screenshot (``screenshot``: PNG bytes)."""
        details = self._shown.node_details(node_id)
        shot = self._last_screenshot(node_id)
        if shot is not None and details:
            details = {**details, "screenshot": shot}
        return details

    def _last_screenshot(self, node_id: str) -> bytes | None:
        for entry in reversed(self._model.entries):
            if entry.type == "browser_screenshot" and entry.node_id == node_id:
                attachment = (entry.extra or {}).get("attachment") or {}
                return self._side.entry_pane.picture(attachment) if isinstance(attachment, dict) else None
        return None
