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

:class:`Pausing` is the pause / settle / resume sequence built on those: a step asking to pause
(the run pauses, or the approval is queued behind the pending one), the run settling when no
branch is in flight (the next queued approval is asked, else the run completes), and an answer
handed to the paused node's kind with what goes on spawned, then deferred work drained. It
changes the run through what the scheduler hands it (emit, set the status, spawn a branch,
release gathering nodes, end the event streams) and the run's public fields.

Invariants: ``pending`` is None exactly when no approval is asked; ``queue_frames`` has one
frame per queued approval (None for none); nothing here runs a step: the scheduler
(engine/run/scheduler.py) does, and reads these fields directly on its rare paths (an edge
followed while paused is deferred).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from engine.nodes.approval import normalise_decision
from engine.run import snapshot as snapshot_format
from engine.run.context import BRANCH, BranchFrame
from engine.run.events import EventType, RunStatus, decision_fields, format_timestamp
from engine.run.events import _encode as _encode_extra

__all__ = ["Pauses", "Pausing", "Deferred", "edited", "received", "hand_over", "pause_fields", "ASK"]

#: What a paused run asks when its node's kind says nothing more.
ASK = "Approve or reject to continue."
_EMPTY_FRAME = BranchFrame()

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

    def read(self, snapshot: dict[str, Any]) -> None:
        """Take ``pending``, ``approvalQueue`` and ``deferred`` back from ``snapshot``."""
        self.pending, self.frame = snapshot_format.read_pending(snapshot)
        held = snapshot.get("pending") if self.pending is not None else None
        if isinstance(held, dict):
            since, deadline = held.get("since"), held.get("deadline")
            self.since = float(since) if isinstance(since, (int, float)) else None
            if isinstance(deadline, (int, float)) and isinstance(held.get("onTimeout"), str):
                self.set_deadline(float(deadline), held["onTimeout"])
        self.queue, self.queue_frames = snapshot_format.read_queue(snapshot)
        self.deferred = snapshot_format.read_deferred(snapshot)

    @classmethod
    def from_json(cls, snapshot: dict[str, Any]) -> Pauses:
        pauses = cls()
        pauses.read(snapshot)
        return pauses


class Pausing(Pauses):
    """The pause / settle / resume sequence of one run (see the module docstring).

    ``run``: the run whose public fields change (status, waiting_for_input, current_node_id,
    visits, last_text_output); ``kinds``: its :class:`~engine.run.kinds.KindStates`; ``ctx``: its
    context (the graph, the clock); the rest are the scheduler's own operations, handed in
    (``spawn(node_id, value, src, frame)``).
    """

    __slots__ = (
        "_run",
        "_kinds",
        "_ctx",
        "_emit",
        "_set_status",
        "_spawn",
        "_release",
        "_end",
    )

    def __init__(
        self,
        run: Any,
        kinds: Any,
        ctx: Any,
        *,
        emit: Callable[..., Any],
        set_status: Callable[..., None],
        spawn: Callable[..., None],
        release_held: Callable[[], None],
        end_streams: Callable[[], None],
    ) -> None:
        Pauses.__init__(self)
        self._run, self._kinds, self._ctx = run, kinds, ctx
        self._emit, self._set_status, self._spawn = emit, set_status, spawn
        self._release, self._end = release_held, end_streams

    def pause_at(
        self, node_id: str, value: Any, prompt: str | None = None, frame: Any = False, extra: Any = None
    ) -> None:
        """Pause the run on ``node_id`` reviewing ``value`` (``frame`` False: the current branch's;
        ``prompt`` None: a queued approval, asked now with its kind's prompt and fields). The
        kind may set a deadline (``pause_deadline``); ``wait_input`` carries the options, the
        deadline and ``extra`` (a tool call's: {kind: "tool_call", tool, server?, arguments, ...})."""
        now = self._ctx.now()
        self.ask(node_id, value, BRANCH.get() if frame is False else frame, now)
        run = self._run
        run.waiting_for_input = True
        run.current_node_id = node_id
        node = self._ctx.node(node_id)
        spec = self._kinds.spec_of(node)
        if prompt is None:  # a queued approval, asked now
            prompt = spec.waiting_prompt(self._ctx, node) if spec is not None else ""
            extra = spec.pause_extra(self._ctx, node) if spec is not None else None
        timeout = spec.pause_deadline(self._ctx, node, now) if spec is not None else None
        if timeout is not None:
            self.set_deadline(*timeout)
        fields = pause_fields(self.decisions(), timeout)
        if extra:
            fields = {**(fields or {}), **extra}
        self._emit(node_id, EventType.WAIT_INPUT, prompt or ASK, fields)
        self._set_status(RunStatus.PAUSED)

    def step_paused(self, node_id: str, value: Any, prompt: str, extra: Any = None) -> None:
        """A step asked to pause (``PauseRequest``): the run pauses on it, or, already paused,
        queues it behind the pending approval."""
        if self._run.status == RunStatus.PAUSED:
            self.enqueue(node_id, value, BRANCH.get())
            self._emit(node_id, EventType.APPROVAL_QUEUED, "Another approval is pending; this one will be asked next.")
        else:
            self.pause_at(node_id, value, prompt, False, extra)

    def settle(self) -> None:
        """No branch is in flight: a running run pauses at the next queued approval or completes."""
        run = self._run
        if run.status == RunStatus.RUNNING:
            queued = self.next_queued()
            if queued is not None:
                node_id, value, frame = queued
                self.pause_at(node_id, value, None, frame)
            else:
                run.current_node_id = None
                self._set_status(RunStatus.COMPLETED)
        self._end()

    def prepare(
        self, decision: Any, note: str | None, output: Any, arguments: Any
    ) -> tuple[dict[str, Any], Any, str | None]:
        """The answer ``Run.resume(decision, note, output=, arguments=)`` gives the pending pause,
        the reviewer's edit, and why the kind refuses the answer (None: it does not). A pause
        past its deadline takes its ``onTimeout`` decision instead; a nested run's answer may
        carry a tool call's ``arguments``."""
        if self.overdue():  # its deadline passed (in a process that ended, say): it takes onTimeout
            decision, note, output, arguments = {"decision": self.on_timeout, "timedOut": True}, None, None, None
        answer: dict[str, Any] = normalise_decision(decision, note, options=self.decisions())
        if arguments is None and isinstance(decision, dict) and "arguments" in decision:
            arguments = decision["arguments"]  # (a nested run's answer, handed on whole)
        if arguments is not None:
            answer["arguments"] = arguments
        return answer, output, self.answer_problem(answer)

    def answer(self, answer: dict[str, Any], output: Any) -> None:
        """Answer the pending approval (``output``: the reviewer's edit, if any): the kind takes it
        (``NodeSpec.answered``) and what goes on is spawned, or the step is taken again."""
        run = self._run
        node_id, arrived, frame, since = self.take()
        run.waiting_for_input = False
        run.current_node_id = None
        answer, flowing = edited(answer, arrived, output)
        if flowing is not arrived and flowing.__class__ is str:
            run.last_text_output = flowing
        self._emit(node_id, EventType.INPUT_RECEIVED, *received(answer))
        node = self._ctx.node(node_id)
        goes_on = hand_over(
            self._ctx, self._kinds.spec_of(node), node, arrived, flowing, answer, frame, since, self._ctx.now()
        )
        self._set_status(RunStatus.RUNNING)
        if goes_on is None:  # the step is taken again; its visit is not counted twice
            run.visits[node_id] = max(0, run.visits.get(node_id, 1) - 1)
            self._spawn(node_id, arrived, None, frame or _EMPTY_FRAME)
            return
        value, handle, frame = goes_on
        for h, target in self._ctx.links_out(node_id):
            if h == handle:
                self._spawn(target, value, node_id, frame)
        self._release()

    async def drain(self, wait_idle: Callable[[], Awaitable[Any]]) -> None:
        """Run the work deferred while the run was paused, until none is left or the run pauses
        (or ends) again."""
        await wait_idle()
        while self._run.status == RunStatus.RUNNING and self.deferred:
            for target, value, src, frame in self.take_deferred():
                self._spawn(target, value, src, frame)
            await wait_idle()

    # ---------------------------------------------------------------- what the pending pause asks
    def _pending_spec(self) -> tuple[Any, Any]:
        node = self._ctx.node(self.pending[0]) if self.pending is not None else None
        return node, self._kinds.spec_of(node)

    def waiting_prompt(self) -> str:
        """What the run waits for: its pending pause's prompt (a flow step's: its nested run's)."""
        node, spec = self._pending_spec()
        return (spec.waiting_prompt(self._ctx, node) if spec is not None else "") or ASK

    def waiting_extra(self) -> dict[str, Any] | None:
        """The pending pause's ``wait_input`` fields besides its prompt (None for none)."""
        node, spec = self._pending_spec()
        return spec.pause_extra(self._ctx, node) if spec is not None else None

    def decisions(self) -> tuple[str, ...]:
        """The decisions the pending pause takes: approve, reject and its kind's options."""
        node, spec = self._pending_spec()
        return spec.decisions(self._ctx, node) if spec is not None else ("approve", "reject")

    def answer_problem(self, answer: dict[str, Any]) -> str | None:
        """Why ``answer`` cannot answer the pending pause (None: it can; its kind decides)."""
        node, spec = self._pending_spec()
        return spec.answer_problem(self._ctx, node, answer) if spec is not None else None

    def overdue(self, now: float | None = None) -> bool:
        """Whether the pending pause's deadline has passed (at ``now``, default the run's clock)."""
        deadline = self.deadline
        return deadline is not None and self.pending is not None and (now or self._ctx.now()) >= deadline

    def pause_timeout(self) -> tuple[float, str] | None:
        """``(deadline, decision)`` of the pending pause, or None when it waits for ever."""
        if self.pending is None or self.deadline is None or self.on_timeout is None:
            return None
        return self.deadline, self.on_timeout


# -------------------------------------------------------------------- an answer to the pending approval


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
