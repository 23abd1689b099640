"""A run's state taken as a JSON value and read back: the ``Run`` methods ``snapshot``,
``checkpoint``, ``nested_state`` and ``restore``.

docs/design.md, "Run model (runtime semantics)". The format and its parts are
engine/run/snapshot.py (``flowdesk.run/1``); this is the part of :class:`~engine.Run` that
gathers those parts from the objects the scheduler owns (its pauses, the kinds' states, its
step log, its live branches) and hands them back to a restored run. :class:`Snapshots` is a
base class of ``Run`` with no state of its own: it reads and, when a run is restored, sets the
attributes named in its annotations.

Invariants: a snapshot is taken only while no branch is in flight (a *checkpoint* is the
exception: each branch in flight is written as deferred work at its node, its visit
uncounted); the run's own deferred work and visits are never changed by taking one; a restored
run is in the state its snapshot describes, the kinds' states read back by the kinds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, Self

from engine.graph.model import Workflow
from engine.llm.base import AgentInvocation, LLMProvider
from engine.run import snapshot as snapshot_format
from engine.run.branches import Branches, Where
from engine.run.context import BranchFrame, RunContext
from engine.run.events import RunStatus
from engine.run.kinds import KindStates
from engine.run.pauses import Pausing
from engine.run.records import StepLog
from engine.run.setup import DEFAULT_MAX_VISITS, RunStateError

__all__ = ["Snapshots"]

_FINAL = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)


class Snapshots:
    """Snapshot, checkpoint and restore of one run (see the module docstring)."""

    __slots__ = ()

    # What this reads of the run (its slots and fields are made by Run and RunFields).
    _at: dict[asyncio.Task, Where]
    _branches: Branches
    _pauses: Pausing
    _kinds: KindStates
    _log: StepLog
    _ctx: RunContext
    _ended: bool
    workflow: Workflow
    status: RunStatus
    visits: dict[str, int]
    outputs: dict[str, Any]

    def snapshot(self, *, include_workflow: bool = True) -> dict[str, Any]:
        """The run's whole state as a JSON value. Only while no branch is in flight."""
        if self._at:
            raise RunStateError("a snapshot is taken when the run is paused or ended, not while steps are running")
        return self._state(include_workflow, self._pauses.deferred, self.visits)

    def checkpoint(self) -> dict[str, Any] | None:
        """A paused run's snapshot taken while sibling branches may still be running (None when
        the run is not paused).

        Each branch in flight is kept as deferred work at the node it is on, its visit
        uncounted: resumed from this snapshot (in another process, after this one was killed),
        that step runs again and the rest of the branch follows. Call it on the event loop
        between steps (from a listener of the ``paused`` event, or a callback scheduled from
        one); the task that is emitting, if it is a branch, is on its way out of an approval.
        """
        if self.status != RunStatus.PAUSED:
            return None
        return self._state(
            False,
            *snapshot_format.in_flight_as_deferred(self._pauses.deferred, self.visits, self._branches.in_flight()),
        )

    def nested_state(self) -> dict[str, Any]:
        """This run's snapshot as a nested run's (a flow step's state): workflow included, and a
        checkpoint when siblings are in flight."""
        if not self._at:
            return self.snapshot(include_workflow=True)
        state = self.checkpoint() or self._state(False, self._pauses.deferred, self.visits)
        state["workflow"] = snapshot_format.workflow_json(self.workflow)
        return state

    def _state(
        self,
        include_workflow: bool,
        deferred: list[tuple[str, Any, str | None, BranchFrame | None]],
        visits: dict[str, int],
    ) -> dict[str, Any]:
        return snapshot_format.write(
            self,
            pauses=self._pauses.to_json(deferred, self._kinds.gathers),
            kind_states=self._kinds.to_json(),
            visits=visits,
            outcomes=self._log.outcome_view(self.outputs).texts(),
            include_workflow=include_workflow,
        )

    @classmethod
    def restore(
        cls,
        snapshot: dict[str, Any],
        provider: LLMProvider | Callable[[AgentInvocation], LLMProvider],
        *,
        workflow: Workflow | None = None,
        **kwargs: Any,
    ) -> Self:
        """A run in the state ``snapshot`` describes (a paused run can then be resumed)."""
        workflow, kwargs = snapshot_format.restore_args(snapshot, workflow, kwargs, DEFAULT_MAX_VISITS)
        make: Callable[..., Self] = cls  # (Run's constructor)
        restored = make(
            workflow,
            provider,
            run_id=snapshot["runId"],
            initial_input=snapshot.get("initialInput"),
            _restoring=True,
            **kwargs,
        )
        restored._read_back(snapshot)
        return restored

    def _read_back(self, snapshot: dict[str, Any]) -> None:
        """Take this (new) run's state from ``snapshot``."""
        snapshot_format.read_run(self, snapshot)  # (the public fields: status, outputs, visits, ...)
        self._ended = self.status in _FINAL  # type: ignore[misc]  # (a slot of Run's, as the annotations above)
        self._pauses.read(snapshot)
        self._log.outcomes = snapshot_format.read_outcomes(snapshot)
        self._kinds.read(snapshot, self._ctx)  # (each kind reads its states back: nested runs too)
