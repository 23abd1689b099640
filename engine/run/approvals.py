"""What a paused run is asked and how it is answered, as callers read it: the ``Run`` methods about
its pending approval and the queue behind it.

docs/design.md, "Run model (runtime semantics)". The pending approval, the queue behind it and
deferred work are a :class:`~engine.run.pauses.Pausing` the scheduler owns (``Run._pauses``);
what a pause asks (its prompt, decisions, deadline) is its node's kind's. :class:`Approvals` is
the part of :class:`~engine.Run` that answers a caller's questions about them (the CLI's
``--decide``, the inbox, the console's approval bar, a durable engine) and takes a pause's
timeout decision. It is a base class of ``Run`` with no state of its own: it reads the
attributes named in its annotations (the run's ``Pausing`` above all), and answers through
``Run.resume``.

Invariants: nothing here changes the run but :meth:`Approvals.amend_pending` (the value under
review) and :meth:`Approvals.expire` (which answers through ``resume``); every answer is None
or empty when nothing waits.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from engine.run.events import RunStatus
from engine.run.pauses import Pausing

__all__ = ["Approvals"]


class Approvals:
    """The pending approval and the queue behind it, as a run's callers see them (see the module
    docstring)."""

    __slots__ = ()

    # What this reads of the run (its slots and fields are made by Run and RunFields).
    _pauses: Pausing
    status: RunStatus
    resume: Callable[..., Awaitable[RunStatus]]

    @property
    def pending_approval(self) -> str | None:
        """The node whose approval is asked now (None when nothing waits)."""
        pending = self._pauses.pending
        return pending[0] if pending else None

    @property
    def queued_approvals(self) -> list[str]:
        """The nodes whose approvals are queued behind the pending one, in the order they will be asked."""
        return [n for n, _ in self._pauses.queue]

    def pending_input(self) -> Any:
        """The output under review at the pending approval (None when not paused)."""
        pending = self._pauses.pending
        return pending[1] if pending else None

    def queued_approval_inputs(self) -> list[tuple[str, Any]]:
        """The approvals queued behind the pending one, in the order they will be asked, each with
        the output it will review (a copy: changing it changes nothing in the run)."""
        return list(self._pauses.queue)

    def waiting_prompt(self) -> str:
        """What the run waits for: its pending pause's prompt (a flow step's: its nested run's, however deep)."""
        return self._pauses.waiting_prompt()

    def waiting_extra(self) -> dict[str, Any] | None:
        """The pending pause's ``wait_input`` fields besides its prompt (a tool call's: ``{kind:
        "tool_call", tool, server?, arguments, ...}``; None for a plain approval, or none pending)."""
        return self._pauses.waiting_extra()

    @property
    def waiting_since(self) -> float | None:
        """When the run paused at its pending approval (the run's clock; None when not paused)."""
        return self._pauses.since if self._pauses.pending is not None else None

    def decisions(self) -> tuple[str, ...]:
        """The decisions the pending approval takes: approve, reject and its options (a flow
        step's: its nested run's)."""
        return self._pauses.decisions()

    def answer_problem(self, answer: dict[str, Any]) -> str | None:
        """Why ``answer`` cannot answer the pending pause (None: it can; its kind decides)."""
        return self._pauses.answer_problem(answer)

    def amend_pending(self, value: Any) -> None:
        """Replace the output under review at the pending approval (what goes on when it is
        answered), without recording an edit (a durable engine's reviewer edit)."""
        self._pauses.amend(value)

    # ------------------------------------------------------------------ its deadline
    def overdue(self, now: float | None = None) -> bool:
        """Whether the pending approval's deadline has passed (at ``now``, default the run's clock)."""
        return self._pauses.overdue(now)

    def pause_timeout(self) -> tuple[float, str] | None:
        """``(deadline, decision)`` of the pending approval (the run's clock; the decision it takes
        then), or None when nothing waits or it waits for ever."""
        return self._pauses.pause_timeout()

    async def expire(self) -> RunStatus:
        """Take the pending approval's ``onTimeout`` decision if its deadline has passed (logged
        as ``input_received`` with ``timedOut: true``), and continue as ``resume`` does; nothing
        happens when the run is not paused or the deadline is still to come. Whoever holds a
        paused run calls it at the deadline (``pause_timeout``); a run restored after its
        deadline takes the decision on its next ``resume`` anyway."""
        if self.status != RunStatus.PAUSED or not self.overdue():
            return self.status
        return await self.resume({"decision": self._pauses.on_timeout, "timedOut": True})
