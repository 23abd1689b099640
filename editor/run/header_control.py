"""RunHeaderControl: what the run console's header shows of the run shown, and its follow-ups.

Split from :mod:`editor.run.console`, which owns one and tells it what happened to the run
shown (started, a new status, finished, cleared, replayed, taken up); this object keeps the
header (:class:`~editor.run.header.RunHeader`, a plain widget) in step: the run's id (and
its Temporal server), the clock, the status, "Choose provider…", the input collapsed while
a run is live, and what may follow a run:

* *Repair…* when the document's own run failed at a node (``repair_requested(node id)``);
* *Save as flow…* when a run completed, one of its agents called a tool (a subagent, a flow,
  an MCP tool) and runs are recorded (``save_as_flow_requested(run id)``).

The window's controllers do those; the header's buttons only ask.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal

from engine import RunEvent, RunState, Workflow

from .bridge import RunBridge
from .header import RunHeader
from .log_model import LogModel
from .shown_run import ShownRun

__all__ = ["RunHeaderControl"]

_CALL_STARTS = ("subagent_call_start", "flow_call_start", "tool_call_start")
_FINAL = ("completed", "failed", "cancelled")


class RunHeaderControl(QObject):
    """Keeps the console's header in step with the run shown."""

    repair_requested = Signal(str)  # node id
    save_as_flow_requested = Signal(str)  # run id

    def __init__(
        self, header: RunHeader, bridge: RunBridge, shown: ShownRun, log: LogModel, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self._header = header
        self._bridge = bridge
        self._shown = shown
        self._log = log  # the shown run's events: its raw_events
        header.repair_requested.connect(self._request_repair)
        header.save_as_flow_requested.connect(self._request_save_as_flow)

    # ------------------------------------------------------------------ the run shown
    def started(self, run_id: str) -> None:
        h = self._header
        h.set_run_id(run_id, getattr(self._bridge.run, "address", None))  # a remote run: its server
        h.start_clock()
        h.set_status("running")
        h.offer_provider_choice(None)
        self.hide_followups()
        h.set_running(True, self._bridge.initial_input)

    def status(self, status: str) -> None:
        """The live run's new status (why it failed or was cancelled, once it ended)."""
        self._header.set_status(status, self._bridge.error if status in _FINAL else None)

    def finished(self, status: str, provider_problem: dict[str, Any] | None) -> None:
        """The live run ended; ``provider_problem``: offer "Choose provider…" for it."""
        h = self._header
        h.stop_clock()
        h.set_status(status, self._bridge.error)
        h.offer_provider_choice(provider_problem)
        h.set_running(False)

    def answered_elsewhere(self) -> None:
        """The paused run was answered in another process and let go of (the console's notice
        says how): no longer live here."""
        h = self._header
        h.stop_clock()
        h.show_status("⇄ Answered elsewhere", "#60a5fa")
        h.set_running(False)

    def cleared(self) -> None:
        """No run shown."""
        h = self._header
        h.set_run_id(None)
        h.set_elapsed(None)
        h.set_running(False)
        self.hide_followups()
        h.set_status("pending")

    def replayed(
        self, state: RunState, events: list[RunEvent], run_id: str | None, workflow: Workflow | None, *, learn: bool
    ) -> None:
        """A stored run shown (its length from its first and last events when not recorded);
        ``workflow``: the document's, for the prices when the run has none; ``learn``: runs are
        recorded, so it may be saved as a flow."""
        h = self._header
        h.set_run_id(run_id)
        h.show_cost(state, workflow)
        h.reset_clock()
        t0 = state.started_at or (events[0].timestamp if events else None)
        t1 = state.ended_at or (events[-1].timestamp if events else None)
        h.set_elapsed(t1 - t0 if t0 and t1 else None)
        h.set_status(str(state.status), state.error)
        h.set_running(False)
        # a stored run may be saved as a flow; Repair… is for the document's own last run
        self.offer_followups(str(state.status), repair=False, learn=learn)

    def taken_up(self, initial: str | None) -> None:
        """A paused run taken up: its input shown collapsed."""
        self._header.set_status("paused")
        self._header.input_edit.setPlainText(initial or "")
        self._header.set_running(True, initial or "")

    # ------------------------------------------------------------------ what may follow a run
    def failed_node_id(self) -> str | None:
        """The node the shown run failed at (None when none failed)."""
        return next((nid for nid, s in self._shown.state.states.items() if s == "failed"), None)

    def called_tools(self) -> bool:
        """Whether an agent of the shown run called a tool (a subagent, a flow, an MCP tool)."""
        return any(e.type in _CALL_STARTS and not e.path for e in self._log.raw_events)

    def hide_followups(self) -> None:
        self._header.repair_button.setVisible(False)
        self._header.learn_button.setVisible(False)

    def offer_followups(self, status: str, *, repair: bool, learn: bool) -> None:
        """Repair… when the run failed at a node (and ``repair``: the document's own run);
        Save as flow… when it completed with tool calls (and ``learn``: runs are recorded)."""
        failed = repair and status == "failed" and self.failed_node_id() is not None
        self._header.repair_button.setVisible(failed)
        self._header.learn_button.setVisible(learn and status == "completed" and self.called_tools())

    def _request_repair(self) -> None:
        node_id = self.failed_node_id()
        if node_id is not None:
            self.repair_requested.emit(node_id)

    def _request_save_as_flow(self) -> None:
        if self._shown.run_id:
            self.save_as_flow_requested.emit(self._shown.run_id)
