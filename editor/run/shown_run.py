"""ShownRun: which run the console shows, and what it did.

Plain Python (no Qt). The run shown is either the bridge's live run (or a paused one taken
up through it) or a stored run replayed read-only; what it did is the engine's one reducer,
:class:`engine.RunState`: the bridge's for a live run, one made from the stored events for a
replayed run, so a replayed run reads like the live one did. A live run let go of
(``detached``: the console was cleared while it ran) is not shown any more, though the bridge
may still deliver its last events.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from engine import RunEvent, RunState, RunStatus, RunStore, Workflow

from .badges import run_badges
from .exports import record_input, run_record

__all__ = ["ShownRun"]


class ShownRun:
    """The console's shown run: the live one (through ``bridge``) or a replayed one."""

    def __init__(self, bridge: Any) -> None:
        self.bridge = bridge
        self.replayed: RunState | None = None
        self.replayed_workflow: Workflow | None = None
        self.run_id: str | None = None
        self.detached: str | None = None  # a live run let go of: what it still sends is not shown
        self.badges: dict[str, tuple[str, str]] = {}

    @property
    def state(self) -> RunState:
        return self.replayed if self.replayed is not None else self.bridge.run_state

    @property
    def is_replay(self) -> bool:
        return self.replayed is not None

    def shows_bridge(self) -> bool:
        """The bridge's run is the one shown (not one let go of)."""
        return self.detached is None or self.bridge.run_id != self.detached

    def show_live(self) -> None:
        """The bridge's run is shown (one about to start, or taken up)."""
        self.replayed = None
        self.replayed_workflow = None

    def replay(
        self, workflow: Workflow | None, events: list[RunEvent], run_id: str | None, status: str | None
    ) -> RunState:
        """Show a stored run: its state made from its events (``status``, as stored, wins)."""
        state = RunState.of(workflow, events)
        if status:
            try:
                state.status = RunStatus(status)
            except ValueError:
                pass
        self.replayed, self.replayed_workflow, self.run_id = state, workflow, run_id
        return state

    def node_details(self, node_id: str) -> dict[str, Any]:
        """The node's last input, output, duration (s), tokens, error and state."""
        # (a step that logs no input of its own has what reached it: RunState.passed_input)
        if self.replayed is not None:
            return self.replayed.node_details(node_id)
        return self.bridge.node_details(node_id)

    def node_errors(self) -> dict[str, str]:
        """The error of every failed node, and of every node its policy skipped after an
        error (a skipped node without one was not reached)."""
        state = self.state
        return {
            nid: d.error
            for nid, d in state.details.items()
            if d.error and state.states.get(nid) in ("failed", "cancelled", "skipped")
        }

    def update_badges(self) -> bool:
        """Badges made again from the state; True when they changed."""
        badges = run_badges(self.state)
        if badges == self.badges:
            return False
        self.badges = badges
        return True

    def record(
        self,
        events: Iterable[RunEvent],
        *,
        workflow_path: str | None,
        store: RunStore | None,
        fallback: Workflow | None,
    ) -> dict[str, Any]:
        """The run as an AgentFlow-style record (the shape of ``engine.agentflow_record``)."""
        live = self.replayed is None
        workflow = (self.bridge.workflow if live else self.replayed_workflow) or fallback
        given = self.bridge.initial_input if live else None
        return run_record(
            self.state,
            list(events),
            run_id=self.run_id,
            workflow=workflow,
            workflow_path=workflow_path,
            initial_input=record_input(given, store, self.run_id, workflow),
            error=self.bridge.error if live else None,
        )
