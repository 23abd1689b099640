"""A run's pauses: the pending approval, the approvals queued behind it, and deferred work.

docs/design.md, "Run model (runtime semantics)". The first pause a run reaches is *pending*:
the run is paused on it (its node, the value under review, the branch's frame, since when).
While the run is paused, a further pause is *queued* (asked, in order, after the pending one is
answered) and an edge that would be followed is *deferred* with its input, where it came from
and its branch's frame; ``Run.resume()`` drains deferred work before asking the next queued
approval. :class:`Pauses` holds those three and writes and reads them as parts of a run
snapshot (``pending``, ``approvalQueue``, ``deferred``: engine/run/snapshot.py). An answer to
the pending approval (``resume``) is made here: :func:`edited` takes the reviewer's edit of the
output under review, :func:`received` is what ``input_received`` records, and :func:`hand_over`
gives the answer to the node's kind in the frame the pause was asked in.

Invariants: ``pending`` is None exactly when no approval is asked; ``queue_frames`` has one
frame per queued approval (None for none); nothing here runs a step or emits an event: the
scheduler (engine/run/scheduler.py) does, and reads these fields directly on its rare paths
(a pause while paused, an edge while paused).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from engine.run import snapshot as snapshot_format
from engine.run.context import BRANCH, BranchFrame
from engine.run.events import _encode as _encode_extra
from engine.run.events import decision_fields, format_timestamp

__all__ = ["Pauses", "Deferred", "edited", "received", "hand_over", "pause_fields"]

#: Deferred work: (node id, input, where it came from, the branch's frame).
Deferred = tuple[str, Any, "str | None", "BranchFrame | None"]


class Pauses:
    """The pending approval, the queue of approvals behind it and the deferred work of one run."""

    __slots__ = ("pending", "frame", "since", "queue", "queue_frames", "deferred", "deadline", "on_timeout")

    def __init__(self) -> None:
        self.pending: tuple[str, Any] | None = None  # (node id, the value under review)
        self.frame: BranchFrame | None = None  # the pending pause's branch frame
        self.since: float | None = None  # when the run paused on it (the run's clock)
        self.queue: deque[tuple[str, Any]] = deque()
        self.queue_frames: deque[BranchFrame | None] = deque()
        self.deferred: list[Deferred] = []
        # The pending pause's deadline (the run's clock) and the decision it then takes; None:
        # it waits for ever. Written in the snapshot (``pending``), so it survives a restart.
        self.deadline: float | None = None
        self.on_timeout: str | None = None

    # ---------------------------------------------------------------- the pending approval
    def ask(self, node_id: str, value: Any, frame: BranchFrame | None, now: float) -> None:
        """Pause on ``node_id`` reviewing ``value``."""
        self.pending = (node_id, value)
        self.frame = frame
        self.since = now
        self.deadline = self.on_timeout = None

    def set_deadline(self, deadline: float, decision: str) -> None:
        """The pending pause times out at ``deadline`` and then takes ``decision``."""
        self.deadline, self.on_timeout = deadline, decision

    def take(self) -> tuple[str, Any, BranchFrame | None, float | None]:
        """The pending approval, answered: (node id, value under review, its frame, when the
        run paused on it), no longer pending."""
        assert self.pending is not None
        (node_id, value), frame, since = self.pending, self.frame, self.since
        self.pending = self.frame = self.since = None
        self.deadline = self.on_timeout = None
        return node_id, value, frame, since

    def amend(self, value: Any) -> None:
        """Replace the value under review at the pending approval."""
        if self.pending is not None:
            self.pending = (self.pending[0], value)

    # ---------------------------------------------------------------- queued approvals, deferred work
    def enqueue(self, node_id: str, value: Any, frame: BranchFrame | None) -> None:
        self.queue.append((node_id, value))
        self.queue_frames.append(frame)

    def next_queued(self) -> tuple[str, Any, BranchFrame | None] | None:
        """The next queued approval, taken off the queue (None when there is none)."""
        if not self.queue:
            return None
        node_id, value = self.queue.popleft()
        return node_id, value, self.queue_frames.popleft() if self.queue_frames else None

    def take_deferred(self) -> list[Deferred]:
        batch, self.deferred = self.deferred, []
        return batch

    def clear(self) -> None:
        """Forget everything (the run was cancelled)."""
        self.pending = None
        self.deadline = self.on_timeout = None
        self.queue.clear()
        self.queue_frames.clear()
        self.deferred.clear()

    def nodes(self) -> set[str]:
        """The nodes where work waits here: what may still arrive somewhere."""
        waiting = {d[0] for d in self.deferred}
        if self.pending is not None:
            waiting.add(self.pending[0])
        waiting.update(n for n, _v in self.queue)
        return waiting

    # ---------------------------------------------------------------- snapshot parts
    def to_json(self, deferred: Iterable[Deferred], gathers: Callable[[str], bool]) -> dict[str, Any]:
        """``pending``, ``approvalQueue`` and ``deferred`` of a snapshot (``deferred``: this run's
        deferred work, with a checkpoint's branches in flight added)."""
        pending = self.pending
        item: dict[str, Any] | None = None
        if pending:
            item = snapshot_format.with_frame({"nodeId": pending[0], "input": pending[1]}, self.frame)
            if self.since is not None:  # since when it waits (the inbox's age)
                item["since"] = self.since
            if self.deadline is not None:  # when it times out, and what it then decides
                item["deadline"] = self.deadline
                item["onTimeout"] = self.on_timeout
        return {
            "pending": item,
            "approvalQueue": snapshot_format.queue_items(self.queue, self.queue_frames),
            "deferred": snapshot_format.deferred_items(deferred, gathers),
        }

    @classmethod
    def from_json(cls, snapshot: dict[str, Any]) -> Pauses:
        pauses = cls()
        pauses.pending, pauses.frame = snapshot_format.read_pending(snapshot)
        held = snapshot.get("pending") if pauses.pending is not None else None
        if isinstance(held, dict):
            since, deadline = held.get("since"), held.get("deadline")
            pauses.since = float(since) if isinstance(since, (int, float)) else None
            if isinstance(deadline, (int, float)) and isinstance(held.get("onTimeout"), str):
                pauses.set_deadline(float(deadline), held["onTimeout"])
        pauses.queue, pauses.queue_frames = snapshot_format.read_queue(snapshot)
        pauses.deferred = snapshot_format.read_deferred(snapshot)
        return pauses


# -------------------------------------------------------------------- an answer to the pending approval
_EMPTY_FRAME = BranchFrame()


def edited(answer: dict[str, Any], arrived: Any, output: Any) -> tuple[dict[str, Any], Any]:
    """The answer and the value that flows on: the reviewer's edit ``output`` when given and
    different from ``arrived`` (the answer then records ``edited``, the edit and the original),
    else ``arrived`` and the answer as it was."""
    if output is None or output == arrived:
        return answer, arrived
    return {**answer, "edited": True, "output": output, "original": arrived}, output


def received(answer: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The ``input_received`` event's content (decision, note, edited as JSON) and typed fields."""
    content = {k: answer[k] for k in ("decision", "note", "edited", "timedOut") if k in answer}
    return _encode_extra(content), decision_fields(answer)


def hand_over(
    ctx: Any,
    spec: Any,
    node: Any,
    arrived: Any,
    flowing: Any,
    answer: dict[str, Any],
    frame: BranchFrame | None,
    since: float | None,
    now: float,
) -> tuple[Any, Any, BranchFrame | None] | None:
    """The kind's answer (``NodeSpec.answered``): ``(value, handle, frame)`` to go on, or None to
    take the step again (also for a node of no known kind). The kind answers in ``frame``, the
    frame the pause was asked in; ``since``: when the run paused (the wait is measured from it)."""
    if spec is None:
        return None
    waited = round((now - since) * 1000) if since else 0
    token = BRANCH.set(frame or _EMPTY_FRAME)
    try:
        return spec.answered(ctx, node, arrived, flowing, answer, now, waited)
    finally:
        BRANCH.reset(token)


def pause_fields(decisions: tuple[str, ...], timeout: tuple[float, str] | None) -> dict[str, Any] | None:
    """The typed fields of a ``wait_input`` event beyond its prompt: ``options`` (the labels
    besides approve/reject) and, for a pause that times out, ``deadline`` (ISO 8601) and
    ``onTimeout``; None when there are neither (a plain approval's event stays as it was)."""
    fields: dict[str, Any] = {}
    options = [d for d in decisions if d not in ("approve", "reject")]
    if options:
        fields["options"] = options
    if timeout is not None:
        fields["deadline"] = format_timestamp(timeout[0])
        fields["onTimeout"] = timeout[1]
    return fields or None
