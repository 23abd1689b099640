"""The executor: runs a workflow with the semantics of DESIGN.md (normative).

Concepts and invariants
* A *branch* is one asyncio task that walks a path of the graph in a loop (never by
  recursion): it runs a node, looks its outgoing execution edges up in a dict built
  once, continues with the first successor itself and spawns a task for each other
  one, so several successors run concurrently, each with the same output.
* Subagent edges are never followed; subagent children are offered to their parent's
  LLM as tools (see ``engine.llm.base``).
* The first approval reached pauses the run (``paused``, ``waiting_for_input``,
  ``current_node_id``). While paused, further approvals are queued and edges that
  would be followed are deferred with their input. ``resume()`` follows the decision's
  edges with the output that arrived at the approval, then drains deferred work, then
  pauses at the next queued approval or completes.
* ``start()``/``resume()`` return once the run is quiescent (no branch in flight):
  paused, completed, failed or cancelled. ``cancel()`` cancels every branch task, which
  closes open HTTP requests of providers at once.
* Every node has a per-run visit limit (default 25); exceeding it fails the run with an
  ``error`` event, so an execution loop cannot run forever.
* A paused run's whole state is a JSON value (``snapshot()``); ``Run.restore()`` makes
  a run that another process can resume.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
import json
import time
import uuid
from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any, AsyncIterator, Callable, NamedTuple

from engine.errors import FlowdeskError
from engine.run.events import SYSTEM_NODE, EventType, RunEvent, RunStatus, decision_fields
from engine.run.events import _encode as _encode_extra
from engine.llm.base import AgentInvocation, LLMError, LLMProvider, SubagentSpec
from engine.graph.model import Node, Workflow, dumps_workflow, parse_workflow
from engine.nodes import SPECS, NodeError, NodeOutcome, PauseRequest, RunContext, spec_for
from engine.nodes.agent import MAX_SUBAGENT_DEPTH, ProviderCall, _usage_json, resolved_prompt, templated  # noqa: F401  (_usage_json: kept importable)
from engine.run.rerun import PINNED_FIELD, StepHook, reuse_map
from engine.nodes.base import (BRANCH, DEFAULT_MAX_RETRIES, DEFAULT_RETRY_DELAY_MS, ERROR_HANDLE, BranchFrame, as_text,
                         fill_prompt)
from engine.nodes.loop import DEFAULT_MAX_ITERATIONS, until_matches
from engine.graph.templates import TemplateScope, mask_secrets
from engine.graph.variables import VariableError, run_variables  # noqa: F401  (VariableError: raised by Run())
from engine.graph.validate import errors_only, validate

__all__ = ["Run", "RunStateError", "NodeRecord", "normalise_decision", "DEFAULT_MAX_VISITS", "SNAPSHOT_FORMAT",
           "Clock", "IdSource", "uuid_ids"]

DEFAULT_MAX_VISITS = 25
SNAPSHOT_FORMAT = "flowdesk.run/1"
_tuple_new = tuple.__new__
# Event types as plain strings for the hot path (RunEvent stores plain str).
_STEP_START = EventType.STEP_START.value
_DONE = NodeOutcome.DONE
_DONE_TEXT = str(_DONE)
_PAUSED = RunStatus.PAUSED
_FINAL = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)  # RunStatus.is_final, without a call
_STATUSES = {str(s): s for s in RunStatus}  # a snapshot's status read back (RunStatus(text) costs 1 µs)
_NODE_OUTPUT = EventType.NODE_OUTPUT.value
_STEP_END = EventType.STEP_END.value
_STEP_RETRY = EventType.STEP_RETRY.value
_STEP_SKIPPED = EventType.STEP_SKIPPED.value
_LOOP_CHECK = EventType.LOOP_CHECK.value
_JOIN_WAIT = EventType.JOIN_WAIT.value
# step_end's extra fields, preformatted per status (the hot path formats one number into it)
_END_DONE = '{"status": "done", "durationMs": '
# ... and whole for the usual durations of an instant step (shared strings, none made per step)
_N_DONE_EXTRAS = 64
_DONE_EXTRAS = tuple(f"{_END_DONE}{ms}}}" for ms in range(_N_DONE_EXTRAS))
_FIRE = "\x00fire"  # the "source" of a join step whose arrivals are already gathered


class _Waiting:
    __slots__ = ()


_WAITING = _Waiting()  # a join arrival that keeps waiting
_YIELD_EVERY = 64  # steps a branch runs before yielding to the event loop when nothing else awaits

EventCallback = Callable[[RunEvent], None]
Clock = Callable[[], float]
IdSource = Callable[[], str]


def uuid_ids() -> str:
    """The default id source: a random UUID as 32 hex digits."""
    return uuid.uuid4().hex


class RunStateError(FlowdeskError, RuntimeError):
    """An operation that the run's current state does not allow (resume a run that is not paused, ...)."""


class NodeRecord(NamedTuple):
    """What happened at an agent node the last time it ran (for the inspector's run tab).

    An immutable tuple of plain values (replaced, not mutated, when the step ends), so
    a long run's records are not tracked by the cyclic garbage collector. ``outcome`` is
    the node's :class:`~engine.NodeOutcome` (``Run.outcomes``), None while it runs.
    """

    input: str
    output: str | None = None
    started: float = 0.0
    ended: float | None = None
    usage: dict[str, int] | None = None
    error: str | None = None
    outcome: NodeOutcome | None = None

    @property
    def duration(self) -> float | None:
        return None if self.ended is None else self.ended - self.started


_frozen_runs = 0


def _freeze_older() -> None:
    """While any run is live, objects that existed before it are left out of the cyclic GC.

    A run with thousands of concurrent branches creates enough long-lived objects (tasks,
    frames) to trigger full collections, and each one rescans the whole loaded graph (tens
    of thousands of pydantic objects): measured at 10,000 branches, 100 ms of 270 ms.
    ``gc.freeze()`` parks the older objects (O(1)); ``_thaw()`` returns them when the last
    live run settles, so nothing is kept from collection for longer than a run. Two plain
    calls around ``start``/``resume`` (an async context manager cost 2.4 µs each time).
    """
    global _frozen_runs
    if _frozen_runs == 0:
        gc.freeze()
    _frozen_runs += 1


def _thaw() -> None:
    global _frozen_runs
    _frozen_runs -= 1
    if _frozen_runs == 0:
        gc.unfreeze()


class _OutcomeView(Mapping):
    """A read-only view of the nodes' outcomes: the recorded ones, else done for a node with an output."""

    __slots__ = ("_recorded", "_outputs")

    def __init__(self, recorded: dict[str, NodeOutcome], outputs: dict[str, Any]) -> None:
        self._recorded = recorded
        self._outputs = outputs

    def __getitem__(self, node_id: str) -> NodeOutcome:
        outcome = self._recorded.get(node_id)
        if outcome is not None:
            return outcome
        if node_id in self._outputs:
            return NodeOutcome.DONE
        raise KeyError(node_id)

    def __iter__(self) -> Iterator[str]:
        yield from self._outputs
        for node_id in self._recorded:
            if node_id not in self._outputs:
                yield node_id

    def __len__(self) -> int:
        return len(self._outputs) + sum(1 for n in self._recorded if n not in self._outputs)

    def texts(self) -> dict[str, str]:
        """The outcomes as text, in this view's order (as a snapshot keeps them), made without
        a lookup per node."""
        texts = dict.fromkeys(self._outputs, _DONE_TEXT)
        for node_id, outcome in self._recorded.items():
            texts[node_id] = str(outcome)
        return texts


class _RecordView(Mapping):
    """A read-only view of a run's records as :class:`NodeRecord` tuples.

    A raw record holds the usage as the ``llm_response`` event's extra JSON text
    (``{"usage": {...}, "model": ...}``), decoded here.
    """

    __slots__ = ("_raw", "_outcomes")

    def __init__(self, raw: dict[str, tuple], outcomes: Mapping[str, NodeOutcome]) -> None:
        self._raw = raw
        self._outcomes = outcomes

    def __getitem__(self, node_id: str) -> NodeRecord:
        inp, out, started, ended, usage_json, error = self._raw[node_id]
        usage = json.loads(usage_json).get("usage") if usage_json else None
        return NodeRecord(inp, out, started, ended, usage, error, self._outcomes.get(node_id))

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


_APPROVE = {"approve", "approved", "yes", "y", "true", "ok", "accept", "accepted"}
_REJECT = {"reject", "rejected", "no", "n", "false", "deny", "denied", "decline"}


def _with_frame(item: dict[str, Any], frame: BranchFrame | None) -> dict[str, Any]:
    if frame is not None and frame != _EMPTY_FRAME:
        item["frame"] = frame.to_json()
    return item


def _padded(frames: "deque[BranchFrame | None]", n: int) -> list[BranchFrame | None]:
    items = list(frames)
    return items + [None] * (n - len(items))


_EMPTY_FRAME = BranchFrame()


def normalise_decision(decision: Any, note: str | None = None) -> dict[str, str]:
    """``{"decision": "approve"|"reject", "note": str}`` from a string, bool or dict."""
    if isinstance(decision, dict):
        note = decision.get("note", note)
        decision = decision.get("decision")
    if isinstance(decision, bool):
        word = "approve" if decision else "reject"
    elif isinstance(decision, str) and decision.strip().lower() in _APPROVE:
        word = "approve"
    elif isinstance(decision, str) and decision.strip().lower() in _REJECT:
        word = "reject"
    else:
        raise ValueError(f"a decision must be 'approve' or 'reject', not {decision!r}")
    return {"decision": word, "note": "" if note is None else str(note)}


def _describe(node: Node) -> str:
    spec = SPECS.get(node.type) or spec_for(node.type)
    return spec.describe(node) if spec is not None else f"'{node.id}'"


def _child_prompt(child: "Run") -> str:
    pending = child._pending
    while pending is not None and pending[0] in child._subruns:  # a grandchild waits
        child = child._subruns[pending[0]]
        pending = child._pending
    if pending is None:
        return "Approve or reject to continue."
    node = child._nodes.get(pending[0])
    spec = (SPECS.get(node.type) or spec_for(node.type)) if node is not None else None
    return (spec.pause_prompt(node.data) if spec is not None else "") or "Approve or reject to continue."


class Run:
    """One execution of a workflow.

    A run from a node (DESIGN.md "Re-running"): ``start_at`` names the node that, with everything
    downstream of it, runs fresh; ``reuse_from`` (a run id in ``store``, default the user's run
    store, or a mapping of node ids to recorded executions) gives the outputs the other nodes
    reuse when their execution key still matches (see ``engine.run.rerun``).
    """

    # Slots, not an instance dict: a run has some 70 attributes, more than CPython 3.11 keeps in
    # a dict whose keys are shared between instances (30), so every Run() copied and regrew its
    # dict; with slots a run starts (and a paused run is restored) 1-2 µs sooner, and its
    # attributes, read on every step, are read from fixed offsets.
    __slots__ = ("__weakref__", "workflow", "variables", "run_id", "initial_input", "max_visits", "delta_interval",
                 "check", "meta", "library", "path", "_run_path", "_path_item", "result", "_subruns", "_subanswers",
                 "_resolve", "_specs", "_nodes", "_any_pinned", "_out", "_sub_children", "_spec_cache", "_joins",
                 "_join_frames", "_loops", "_join_links_cache", "_feeders_cache", "_body_cache", "_paused_since",
                 "status", "_ended", "waiting_for_input", "current_node_id", "error", "outputs", "visits",
                 "_outcomes", "_records", "last_text_output", "started_at", "ended_at", "_pending", "_queue",
                 "_queue_frames", "_pending_frame", "_deferred", "_at", "_idle", "_lock", "_loop", "_events",
                 "_listeners", "_status_listeners", "_streams", "_sinks", "_call_counter", "_ctx", "_hook",
                 "reused_from", "start_at", "_step_hook", "_clock", "_id_source", "inputs")

    def __init__(
        self,
        workflow: Workflow,
        provider: LLMProvider | Callable[[AgentInvocation], LLMProvider],
        *,
        run_id: str | None = None,
        initial_input: str | None = None,
        max_visits: int = DEFAULT_MAX_VISITS,
        on_event: EventCallback | None = None,
        keep_events: bool = True,
        delta_interval: float = 0.05,
        check: bool = True,
        meta: dict[str, Any] | None = None,
        clock: Clock = time.time,
        id_source: IdSource = uuid_ids,
        reuse_from: Any = None,
        start_at: str | None = None,
        store: Any = None,
        variables: Mapping[str, Any] | None = None,
        _restoring: bool = False,
        library: Any = None,
        path: str | None = None,
        run_path: str = "",
    ) -> None:
        # The scheduler reads time and makes ids only through these two (a durable engine
        # replaying the run injects its own); all other I/O happens in the nodes' execute.
        self._clock = clock
        self._id_source = id_source
        # The kinds' specs by node type, as the steps look them up (a durable engine driving the
        # scheduler gives its run a mapping whose working kinds run their steps elsewhere).
        self._specs: Mapping[str, Any] = SPECS
        self.workflow = workflow
        # The run's variable map (DESIGN.md, "Data flow"): Start's variables overridden by the
        # arguments, coerced; a bad or missing value refuses the run here (VariableError).
        self.variables: dict[str, Any] = (dict(variables or {}) if _restoring
                                          else run_variables(workflow, variables))
        self.run_id = run_id or id_source()
        self.initial_input = initial_input
        self.max_visits = max_visits
        self.delta_interval = delta_interval
        self.check = check
        # Caller's settings that a later process needs to resume the run the same way
        # (for example the CLI's --provider/--model); JSON values, no secrets.
        self.meta: dict[str, Any] = dict(meta or {})
        # Flows this run may run (flow/action nodes, flows as tools): the library they are looked
        # up in (None: the user's default library) and this workflow's file (relative references).
        self.library = library
        self.path = str(path) if path is not None else None
        self.run_path = run_path
        # The output of the last node to complete that has no outgoing execution link (a flow's result).
        self.result: Any = None
        # Nested runs paused at an approval, by the flow node that runs them; decisions routed to them.
        self._subruns: dict[str, "Run"] = {}
        self._subanswers: dict[str, dict[str, Any]] = {}
        if hasattr(provider, "complete"):
            single = provider
            self._resolve: Callable[[AgentInvocation], LLMProvider] = lambda _inv: single  # type: ignore[assignment]
        else:
            self._resolve = provider  # type: ignore[assignment]

        # Indexes built once: the run's cost per step does not grow with the graph.
        listed = workflow.nodes
        nodes: dict[str, Node] = {n.id: n for n in listed}
        if len(nodes) != len(listed):  # a repeated id (validation reports it): its first node counts
            nodes = {}
            for n in listed:
                nodes.setdefault(n.id, n)
        self._nodes = nodes
        # (the step hook looks for pinned nodes only when a node has one)
        self._any_pinned = any(extra.get(PINNED_FIELD) is not None
                               for extra in [getattr(n.data, "__pydantic_extra__", None) for n in listed] if extra)
        # Exact tuples of strings: the cyclic GC untracks them, so a big graph's adjacency does
        # not make every collection during the run slower (lists would stay tracked). A node
        # with one link out (most) gets its tuple at once; lists only for several.
        out: dict[str, Any] = {}
        several: list[str] = []
        children: dict[str, list[str]] = {}
        for c in workflow.connections:
            handle = c.sourceHandle or "output"
            if handle == "subagent":
                children.setdefault(c.source, []).append(c.target)
                continue
            if handle == "true":
                handle = "condition-0"
            source = c.source
            edges = out.get(source)
            if edges is None:
                out[source] = ((handle, c.target),)
            elif edges.__class__ is tuple:
                out[source] = [*edges, (handle, c.target)]
                several.append(source)
            else:
                edges.append((handle, c.target))
        for source in several:
            out[source] = tuple(out[source])
        self._out: dict[str, tuple[tuple[str, str], ...]] = out
        self._sub_children = children
        self._spec_cache: dict[str, list[SubagentSpec]] = {}
        # Joins and loops: arrivals gathered per join (link index -> value) with the last
        # arrival's branch frame; each active loop's iteration; graph facts cached per run.
        self._joins: dict[str, dict[int, Any]] = {}
        self._join_frames: dict[str, BranchFrame | None] = {}
        self._loops: dict[str, int] = {}
        self._join_links_cache: dict[str, tuple[str, ...]] = {}
        self._feeders_cache: dict[tuple[str, str], frozenset[str]] = {}
        self._body_cache: dict[str, frozenset[str]] = {}
        self._paused_since: float | None = None

        self.status = RunStatus.PENDING
        self._ended = False  # status.is_final, kept as a plain bool for the hot path
        self.waiting_for_input = False
        self.current_node_id: str | None = None
        self.error: str | None = None
        self.outputs: dict[str, Any] = {}
        self.visits: dict[str, int] = {}
        # How each node's last step ended (see ``outcomes``): a step that ended otherwise than
        # done is recorded here; done is a node with an output and no such entry (so the hot
        # path of a step writes nothing more than its output).
        self._outcomes: dict[str, NodeOutcome] = {}
        # Plain tuples (untracked by the GC), seen as NodeRecords through ``records``.
        self._records: dict[str, tuple] = {}
        self.last_text_output: str = ""
        self.started_at: float | None = None
        self.ended_at: float | None = None

        self._pending: tuple[str, Any] | None = None
        self._queue: deque[tuple[str, Any]] = deque()
        self._queue_frames: deque[BranchFrame | None] = deque()  # the frame of each queued approval
        self._pending_frame: BranchFrame | None = None
        # Deferred work: (node id, input, where it came from, the branch's frame).
        self._deferred: list[tuple[str, Any, str | None, BranchFrame | None]] = []
        # The live branch tasks, and where each is while it waits: (node id, input, whether that
        # node's visit is counted, where it came from, its frame). Read by checkpoint() to keep a
        # sibling's step that is still in flight, and by joins to know which sources can still deliver.
        self._at: dict[asyncio.Task, tuple[str, Any, bool, str | None, BranchFrame | None]] = {}
        self._idle: asyncio.Event | None = None
        self._lock: asyncio.Lock | None = None

        self._events: list[RunEvent] | None = [] if keep_events else None
        self._listeners: list[EventCallback] = [on_event] if on_event else []
        self._status_listeners: list[EventCallback] = []
        self._streams: list[asyncio.Queue] = []
        self._sinks: tuple[Callable[[RunEvent], Any], ...] = ()
        self._update_sinks()
        self._call_counter = 0
        self._ctx = RunContext(self)
        # Pinned outputs, a run from a node and recorded executions (engine/run/rerun.py); None for
        # a plain run. A recorder asks for recordings with ``record_executions``.
        self._hook: Any = None
        self.reused_from: str | None = None
        self.start_at = start_at
        if start_at is not None and start_at not in self._nodes:
            raise ValueError(f"there is no node '{start_at}' to run from")
        reuse, self.reused_from = reuse_map(reuse_from, store)
        # Made only when a step may be pinned, reused or recorded: a plain run does not scan for it.
        self._step_hook: StepHook | None = None
        if self._any_pinned or reuse or start_at is not None:
            self._step_hook = StepHook(self, reuse=reuse, start_at=start_at)
            self._hook = self._step_hook

    def record_executions(self, callback: Callable[[str, str, Any, Any], None]) -> None:
        """Call ``callback(node_id, key, output, handle)`` for each step that ends with an output
        (a reused one included); the run store's recorder keeps them for later runs from a node.
        ``key`` is the step's part of its execution key (``engine.run.rerun``: ``i`` + a digest); the
        store makes the full key again from the run's workflow when a later run reuses it."""
        if self._step_hook is None:
            self._step_hook = StepHook(self)
        self._step_hook.recorders.append(callback)
        self._hook = self._step_hook

    @property
    def records(self) -> "Mapping[str, NodeRecord]":
        """What each agent node did the last time it ran, by node id."""
        return _RecordView(self._records, self.outcomes)

    @property
    def outcomes(self) -> "Mapping[str, NodeOutcome]":
        """How each node's last step ended (done, failed, cancelled; skipped with later policies), by node id."""
        return _OutcomeView(self._outcomes, self.outputs)

    # ------------------------------------------------------------------ events
    def add_listener(self, callback: EventCallback) -> None:
        self._listeners.append(callback)
        self._update_sinks()

    def remove_listener(self, callback: EventCallback) -> None:
        try:
            self._listeners.remove(callback)
        except ValueError:
            pass
        self._update_sinks()

    def _update_sinks(self) -> None:
        """Where each event goes, in order: the run's log, the listeners, the streams. One tuple,
        made again when they change (an event's dispatch is one loop, and a listener added or
        removed while an event is dispatched takes effect from the next event)."""
        self._sinks = ((() if self._events is None else (self._events.append,)) + tuple(self._listeners)
                       + tuple(q.put_nowait for q in self._streams))

    @property
    def events(self) -> list[RunEvent] | None:
        """The run's log (every event, in order), or None when made with ``keep_events=False``."""
        return self._events

    @events.setter
    def events(self, value: list[RunEvent] | None) -> None:
        self._events = value
        self._update_sinks()

    @property
    def run_path(self) -> str:
        """Where this run sits: "" for a top-level run; a nested run's events carry it (RunEvent.path)."""
        return self._run_path

    @run_path.setter
    def run_path(self, value: str) -> None:
        self._run_path = value
        self._path_item: tuple[str, ...] = (value,) if value else ()  # an event's sixth item, or none

    def add_status_listener(self, callback: EventCallback) -> None:
        """Call ``callback(event)`` with each ``run_status`` event, after every event listener
        has had it (a listener may be added or removed from there)."""
        self._status_listeners.append(callback)

    def remove_status_listener(self, callback: EventCallback) -> None:
        try:
            self._status_listeners.remove(callback)
        except ValueError:
            pass

    def _emit(self, node_id: str, type: str, content: str = "", extra: dict[str, Any] | None = None,
              ts: float | None = None, extra_json: str | None = None) -> RunEvent:
        # RunEvent's fields built inline (as RunEvent.__new__ would): this runs 3 times a step.
        ev = _tuple_new(RunEvent, (node_id, type if type.__class__ is str else str(type), content, ts or self._clock(),
                                   _encode_extra(extra) if extra else extra_json) + self._path_item)
        for sink in self._sinks:
            sink(ev)
        return ev

    def _relay(self, ev: RunEvent) -> None:
        """An event of a nested run (it carries its run path), logged in this run's log as it is."""
        for sink in self._sinks:
            sink(ev)

    async def iter_events(self) -> AsyncIterator[RunEvent]:
        """Events as they are emitted, until the run next settles (paused or ended)."""
        q: asyncio.Queue = asyncio.Queue()
        self._streams.append(q)
        self._update_sinks()
        try:
            while True:
                ev = await q.get()
                if ev is None:
                    return
                yield ev
        finally:
            self._streams.remove(q)
            self._update_sinks()

    def _set_status(self, status: RunStatus, detail: str = "") -> None:
        self.status = status
        self._ended = status in _FINAL
        if self._ended:
            self.ended_at = self._clock()
            self.waiting_for_input = False
        ev = self._emit(SYSTEM_NODE, EventType.RUN_STATUS, str(status), {"detail": detail} if detail else None)
        for cb in list(self._status_listeners):
            cb(ev)

    # ------------------------------------------------------------------ lifecycle
    def _ensure_async_state(self) -> None:
        self._loop = asyncio.get_running_loop()
        if self._lock is None:
            self._lock = asyncio.Lock()
            self._idle = asyncio.Event()
            self._idle.set()

    async def start(self) -> RunStatus:
        """Run from the start node until the run is paused or ended."""
        self._ensure_async_state()
        assert self._lock is not None
        async with self._lock:
            _freeze_older()
            try:
                if self.status != RunStatus.PENDING:
                    raise RunStateError(f"this run has already started (status {self.status})")
                self.started_at = self._clock()
                if self.check:
                    errors = errors_only(validate(self.workflow, library=self.library, path=self.path))
                    if errors:
                        self.status = RunStatus.RUNNING
                        for issue in errors:
                            self._emit(issue.node_ids[0] if issue.node_ids else SYSTEM_NODE, EventType.ERROR,
                                       issue.message, {"code": issue.code})
                        self.error = f"The workflow has {len(errors)} error(s): {errors[0].message}"
                        self._set_status(RunStatus.FAILED, self.error)
                        self._end_streams()
                        return self.status
                start = self.workflow.start_node()
                self._set_status(RunStatus.RUNNING)
                if start is None:
                    self._fail(SYSTEM_NODE, "The workflow has no Start node.")
                else:
                    self._spawn(start.id, None)
                    await self._wait_idle()
                self._settle()
                return self.status
            finally:
                _thaw()

    async def resume(self, decision: Any, note: str | None = None, *, output: Any = None) -> RunStatus:
        """Answer the pending approval and continue until the run is paused again or ended.

        ``output``: the reviewer's edit of the output under review; when given (and different),
        it is what flows on, and ``input_received`` records ``edited: true`` with the original.
        """
        self._ensure_async_state()
        assert self._lock is not None
        answer: dict[str, Any] = normalise_decision(decision, note)
        async with self._lock:
            _freeze_older()
            try:
                await self._wait_idle()
                if self.status != RunStatus.PAUSED or self._pending is None:
                    raise RunStateError(f"this run is not waiting for input (status {self.status})")
                node_id, arrived = self._pending
                self._pending = None
                self.waiting_for_input = False
                self.current_node_id = None
                flowing = arrived
                if output is not None and output != arrived:
                    flowing = output
                    answer = {**answer, "edited": True, "output": output, "original": arrived}
                    if output.__class__ is str:
                        self.last_text_output = output
                sub = node_id in self._subruns
                if not sub:
                    self.outputs[node_id] = answer
                content = {k: answer[k] for k in ("decision", "note", "edited") if k in answer}
                self._emit(node_id, EventType.INPUT_RECEIVED, _encode_extra(content),
                           decision_fields(answer))
                node = self._nodes.get(node_id)
                out_var = node.data.outputVar if node is not None and not sub else None
                if out_var:
                    self.variables[out_var] = answer
                now = self._clock()
                waited = round((now - self._paused_since) * 1000) if self._paused_since else 0
                self._paused_since = None
                if not sub:  # a flow node's step goes on (it ends when its nested run does)
                    self._emit(node_id, _STEP_END, "done", None, now, f'{_END_DONE}{waited}}}')
                self._set_status(RunStatus.RUNNING)
                frame = self._pending_frame or _EMPTY_FRAME
                self._pending_frame = None
                if sub:
                    # The approval is inside the nested run this node runs: the step is taken again,
                    # and it hands the decision to that run (see run_subflow); the visit is not counted twice.
                    self._subanswers[node_id] = answer
                    self.visits[node_id] = max(0, self.visits.get(node_id, 1) - 1)
                    self._spawn(node_id, arrived, None, frame)
                else:
                    if self._hook is not None:
                        node = self._nodes.get(node_id)
                        if node is not None:
                            self._hook.after(node, arrived, flowing, answer["decision"])
                    # The branches leaving the approval know its decision and note (APPROVAL_NOTE, ...).
                    frame = BranchFrame(answer["decision"], answer["note"], frame.loops, frame.fanout)
                    for handle, target in self._out.get(node_id, ()):
                        if handle == answer["decision"]:
                            self._spawn(target, flowing, node_id, frame)
                    self._check_joins()
                await self._wait_idle()
                while self.status == RunStatus.RUNNING and self._deferred:
                    batch, self._deferred = self._deferred, []
                    for target, value, src, fr in batch:
                        self._spawn(target, value, src, fr)
                    await self._wait_idle()
                self._settle()
                return self.status
            finally:
                _thaw()

    def cancel(self, reason: str = "Cancelled by the user.") -> None:
        """Stop the run now: every branch task is cancelled (open HTTP requests close)."""
        if self.status.is_final:
            return
        self.error = reason
        self._pending = None
        self._queue.clear()
        self._queue_frames.clear()
        self._deferred.clear()
        self.current_node_id = None
        for child in list(self._subruns.values()):
            child.cancel(reason)
        self._subruns.clear()
        self._set_status(RunStatus.CANCELLED, reason)
        self._cancel_branches(None)
        if not self._at:
            self._end_streams()

    async def wait(self) -> RunStatus:
        """Wait until no branch is in flight (after cancel(), for example)."""
        self._ensure_async_state()
        await self._wait_idle()
        return self.status

    def _settle(self) -> None:
        if self.status == RunStatus.RUNNING:
            if self._queue:
                node_id, value = self._queue.popleft()
                frame = self._queue_frames.popleft() if self._queue_frames else None
                self._pause_at(node_id, value, None, frame)
            else:
                self.current_node_id = None
                self._set_status(RunStatus.COMPLETED)
        self._end_streams()

    def _end_streams(self) -> None:
        for q in self._streams:
            q.put_nowait(None)

    async def _wait_idle(self) -> None:
        assert self._idle is not None
        while self._at:
            await self._idle.wait()

    def _spawn(self, node_id: str, value: Any, src: str | None = None, frame: Any = False) -> None:
        """A new branch at ``node_id``; ``frame`` (False: the current branch's) is its BranchFrame."""
        self._spawn_all((node_id,), value, src, frame)

    def _spawn_all(self, targets: Any, value: Any, src: str | None, frame: Any = False) -> None:
        """A new branch at each of ``targets`` (a fan-out: the lookups made once for all), in
        ``frame`` (False: the current branch's), each in a context of its own."""
        tasks = self._at
        if not tasks:
            assert self._idle is not None
            self._idle.clear()
        given = frame is not False
        if not given:
            frame = BRANCH.get()
        context = None  # (None: the task copies the current one, whose frame it is)
        create = self._loop.create_task
        branch = self._branch
        for target in targets:
            if given:
                context = contextvars.copy_context()
                context.run(BRANCH.set, frame)
            # The branch takes itself out of ``_at`` when it ends (see ``_branch``): no done
            # callback, which would cost one more event-loop callback per branch. It learns its
            # task from ``own`` (filled in before its first step), cheaper than
            # asyncio.current_task(), a Python function in 3.11.
            own: list[asyncio.Task] = []
            task = create(branch(target, value, src, own), context=context)
            own.append(task)
            tasks[task] = (target, value, False, src, frame)

    def _branch_ended(self, task: asyncio.Task | None) -> None:
        tasks = self._at
        if tasks.pop(task, None) is None:  # type: ignore[arg-type]
            return  # (already taken out)
        if self._joins and not self._ended:
            self._check_joins()
        if not tasks:
            assert self._idle is not None
            self._idle.set()
            if self.status.is_final and self._lock is not None and not self._lock.locked():
                self._end_streams()

    def _cancel_branches(self, keep: asyncio.Task | None) -> None:
        for t in list(self._at):
            if t is not keep:
                t.cancel()
                # A task cancelled before its first step never enters ``_branch``, so its own
                # ``finally`` cannot take it out of ``_at``; this callback does (once either way).
                t.add_done_callback(self._branch_ended)

    def _fail(self, node_id: str, message: str) -> None:
        if self.status.is_final:
            return
        self.error = message
        self._emit(node_id, EventType.ERROR, message)
        self._pending = None
        self.current_node_id = None
        self._set_status(RunStatus.FAILED, message)
        try:
            current = asyncio.current_task()
        except RuntimeError:
            current = None
        self._cancel_branches(current)

    def _pause_at(self, node_id: str, value: Any, prompt: str | None = None, frame: Any = False) -> None:
        self._pending = (node_id, value)
        self._pending_frame = BRANCH.get() if frame is False else frame
        self._paused_since = self._clock()
        self.waiting_for_input = True
        self.current_node_id = node_id
        if prompt is None:  # a queued approval, asked now
            node = self._nodes[node_id]
            spec = SPECS.get(node.type) or spec_for(node.type)
            prompt = spec.pause_prompt(node.data) if spec is not None else ""
        self._emit(node_id, EventType.WAIT_INPUT, prompt or "Approve or reject to continue.")
        self._set_status(RunStatus.PAUSED)

    # ------------------------------------------------------------------ branches
    async def _branch(self, node_id: str | None, value: Any, src: str | None, own: list[asyncio.Task]) -> None:
        """One branch task: walks its path (see below), then takes itself out of the live tasks.

        The walk and its task's end are one coroutine, not a wrapper awaiting the walk: a
        fan-out to thousands of branches makes one coroutine less per branch."""
        # (one assignment each: a tuple packed and unpacked costs more, once per branch of a fan-out)
        nodes = self._nodes
        out = self._out
        visits = self.visits
        limit = self.max_visits
        at = self._at
        task = own[0]
        specs = self._specs
        emit = self._emit
        outcomes = self._outcomes
        clock = self._clock
        path_item = self._path_item
        steps = 0
        try:
            while node_id is not None:
                if self._ended:
                    return
                node = nodes.get(node_id)
                if node is None:
                    self._fail(SYSTEM_NODE, f"A link points to a node that does not exist ('{node_id}').")
                    return
                # (the node's fields from its __dict__: a pydantic model's attribute reads are slow)
                nd = node.__dict__
                spec = specs.get(nd["type"]) or spec_for(nd["type"])
                if spec is not None and spec.gathers:
                    value = self._arrive_join(node, src, value)
                    if value is _WAITING:
                        return
                count = visits.get(node_id, 0) + 1
                visits[node_id] = count
                if count > limit:
                    outcomes[node_id] = NodeOutcome.FAILED
                    self._fail(node_id, f"'{node.title}' was reached more than {limit} times in this run; stopping "
                                        "to avoid an endless loop. Raise the visit limit if the loop is intended.")
                    return
                if spec is None:
                    emit(node_id, _STEP_START, node.title)
                    self._fail(node_id, f"Node '{node_id}' has an unknown type '{node.type}'.")
                    return
                # step_start and step_end built inline (as _emit would): one call less each, every step
                started = clock()
                data = nd["data"]
                fields = data.__dict__
                ev = _tuple_new(RunEvent, (node_id, _STEP_START, spec.title(data), started, None) + path_item)
                for sink in self._sinks:
                    sink(ev)
                at[task] = (node_id, value, True, _FIRE if spec.gathers else src, BRANCH.get())  # type: ignore[index]
                status = "done"
                reused = False
                try:
                    hook = self._hook
                    # pinned? a reusable recorded execution? (engine/run/rerun.py) else it runs, and is recorded
                    reused = hook is not None and hook.supplies and (result := hook.before(spec, node, value)) is not None
                    if not reused:
                        if spec.works and (fields.get("timeoutMs") or fields.get("errorMode") == "retry"):
                            result = await self._attempts(spec, node, value)
                        else:
                            result = await spec.execute(self._ctx, node, value)
                        if hook is not None and result.__class__ is not PauseRequest:
                            hook.after(node, value, *result)
                except asyncio.CancelledError:
                    outcomes[node_id] = NodeOutcome.CANCELLED
                    raise
                except NodeError as err:
                    result, status = self._node_failed(node, str(err), started)
                except Exception as err:  # a node kind's bug must not take the run down
                    result, status = self._node_failed(node, f"'{node.title}' failed: {err!r}", started)
                if result is None:
                    return
                if result.__class__ is PauseRequest:
                    if self.status == RunStatus.PAUSED:
                        self._queue.append((node_id, value))
                        self._queue_frames.append(BRANCH.get())
                        emit(node_id, EventType.APPROVAL_QUEUED, "Another approval is pending; this one will be asked next.")
                    else:
                        self._pause_at(node_id, value, result.prompt)  # type: ignore[union-attr]
                    return
                output, handle = result  # type: ignore[misc]
                if status == "done":
                    if not spec.reports_output and not reused:  # (a reused output was logged by cache_hit)
                        emit(node_id, _NODE_OUTPUT, as_text(output),
                             {"handle": handle} if handle is None or handle.__class__ is str else {"handles": list(handle)})
                    if outcomes and node_id in outcomes:  # done this time (after a failure a policy let pass)
                        del outcomes[node_id]
                    ended = clock()
                    ms = round((ended - started) * 1000)
                    ev = _tuple_new(RunEvent, (node_id, _STEP_END, "done", ended,
                                               _DONE_EXTRAS[ms] if 0 <= ms < _N_DONE_EXTRAS else f"{_END_DONE}{ms}}}")
                                    + path_item)
                    for sink in self._sinks:
                        sink(ev)
                if self._ended:
                    return
                self.outputs[node_id] = output
                out_var = fields.get("outputVar")
                if out_var:
                    self.variables[out_var] = output
                edges = out.get(node_id)
                if not edges:
                    self.result = output
                    return
                src = node_id
                if len(edges) == 1 and self.status is not _PAUSED:  # the common case: one link out
                    h, t = edges[0]
                    if h != handle and (handle.__class__ is str or handle is None or h not in handle):
                        return
                    node_id, value = t, output
                    steps += 1
                    if steps % _YIELD_EVERY == 0:
                        at[task] = (node_id, value, False, src, BRANCH.get())  # type: ignore[index]
                        await asyncio.sleep(0)
                    continue
                if handle.__class__ is str:
                    targets = [t for h, t in edges if h == handle]
                else:  # several handles (a tuple) or none
                    targets = [t for h, t in edges if handle and h in handle]
                if not targets:
                    return
                if self.status == RunStatus.PAUSED:
                    frame = BRANCH.get()
                    self._deferred.extend((t, output, src, frame) for t in targets)
                    return
                if len(targets) > 1:
                    self._spawn_all(targets[1:], output, src)
                node_id, value = targets[0], output
                steps += 1
                if steps % _YIELD_EVERY == 0:
                    at[task] = (node_id, value, False, src, BRANCH.get())  # type: ignore[index]
                    await asyncio.sleep(0)  # keep the event loop (and the GUI) responsive on instant providers
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug, not a model failure: still end the run cleanly
            self._fail(SYSTEM_NODE, f"Internal error: {exc!r}")
        finally:
            self._branch_ended(task)

    # ------------------------------------------------------------------ step policies
    async def _attempts(self, spec: Any, node: Node, value: Any) -> Any:
        """A working node's step under its policy: each attempt limited to ``timeoutMs``; with
        ``errorMode: retry``, up to ``maxRetries`` more attempts after ``retryDelayMs`` (doubling),
        each announced by ``step_retry``. Raises NodeError with the last attempt's error.

        An attempt is one ``execute``: a provider's own HTTP retries (a 429 answered later) happen
        inside it and are not counted again here.
        """
        data = node.data
        timeout = data.timeoutMs  # type: ignore[attr-defined]
        retries = data.maxRetries if data.maxRetries is not None else DEFAULT_MAX_RETRIES  # type: ignore[attr-defined]
        tries = 1 + retries if data.errorMode == "retry" else 1  # type: ignore[attr-defined]
        delay = data.retryDelayMs if data.retryDelayMs is not None else DEFAULT_RETRY_DELAY_MS  # type: ignore[attr-defined]
        ctx = self._ctx
        attempt = 1
        while True:
            try:
                if timeout:
                    return await asyncio.wait_for(spec.execute(ctx, node, value), timeout / 1000)
                return await spec.execute(ctx, node, value)
            except asyncio.CancelledError:
                raise
            except TimeoutError:
                message = f"{spec.describe(node)} timed out after {timeout} ms"
            except NodeError as err:
                message = str(err)
            except Exception as err:
                message = f"'{node.title}' failed: {err!r}"
            if attempt >= tries:
                raise NodeError(message)
            attempt += 1
            self._emit(node.id, _STEP_RETRY, message,
                       {"attempt": attempt, "maxAttempts": tries, "delayMs": delay, "error": message})
            await asyncio.sleep(delay / 1000)
            delay *= 2

    def _node_failed(self, node: Node, message: str, started: float | None = None) -> tuple[Any, str]:
        """A step failed (after its retries): its outcome is recorded, then the node's policy applies.

        Returns ``((output, handle), status)`` for the branch to go on: with ``errorMode: skip``
        (``step_skipped``; null along the normal output) or along the node's ``error`` links
        (the message as the output); else ``(None, "failed")`` after failing the run.
        """
        node_id = node.id
        now = self._clock()
        ms = round((now - started) * 1000) if started else 0
        if getattr(node.data, "errorMode", None) == "skip":
            self._outcomes[node_id] = NodeOutcome.SKIPPED
            self._emit(node_id, _STEP_SKIPPED, message, {"error": message})
            self._emit(node_id, _STEP_END, "skipped", {"status": "skipped", "durationMs": ms})
            return (None, "output"), "skipped"
        self._outcomes[node_id] = NodeOutcome.FAILED
        if any(h == ERROR_HANDLE for h, _t in self._out.get(node_id, ())):
            self._emit(node_id, _STEP_END, message, {"status": "failed", "durationMs": ms, "handle": ERROR_HANDLE})
            return (message, ERROR_HANDLE), "failed"
        self._emit(node_id, _STEP_END, message, {"status": "failed", "durationMs": ms})
        self._fail(node_id, message)
        return None, "failed"  # type: ignore[return-value]

    # ------------------------------------------------------------------ templates
    def _scope(self, value: Any) -> TemplateScope:
        """What references resolve against for a step that received ``value`` on this branch."""
        builtins: dict[str, Any] = {"PREVIOUS_OUTPUT": value, "input": value, "run": {"id": self.run_id},
                                    "workflow": {"name": self.workflow.name or ""}}
        frame = BRANCH.get()
        if frame is not None:
            if frame.decision is not None:
                builtins["APPROVAL_DECISION"] = frame.decision
                builtins["APPROVAL_NOTE"] = frame.note or ""
            if frame.loops:
                builtins["iteration"] = self._loops.get(frame.loops[-1], 1)
            if frame.fanout is not None:
                builtins["__fanout"] = frame.fanout
        return TemplateScope(self.variables, builtins)

    # ------------------------------------------------------------------ joins
    def _gathers(self, node_id: str) -> bool:
        node = self._nodes.get(node_id)
        spec = (SPECS.get(node.type) or spec_for(node.type)) if node is not None else None
        return bool(spec is not None and spec.gathers)

    def _join_links(self, join_id: str) -> tuple[str, ...]:
        """The sources of the execution links into a join, in the file's order."""
        links = self._join_links_cache.get(join_id)
        if links is None:
            links = tuple(c.source for c in self.workflow.connections
                          if c.target == join_id and c.sourceHandle != "subagent")
            self._join_links_cache[join_id] = links
        return links

    def _feeders(self, source: str, join_id: str) -> frozenset[str]:
        """The nodes from which ``source`` can be reached without passing through the join."""
        key = (source, join_id)
        found = self._feeders_cache.get(key)
        if found is None:
            into: dict[str, list[str]] = {}
            for s, edges in self._out.items():
                for _h, t in edges:
                    into.setdefault(t, []).append(s)
            seen = {source}
            stack = [source]
            while stack:
                cur = stack.pop()
                for s in into.get(cur, ()):
                    if s != join_id and s not in seen:
                        seen.add(s)
                        stack.append(s)
            found = self._feeders_cache[key] = frozenset(seen)
        return found

    def _arrive_join(self, node: Node, src: str | None, value: Any) -> Any:
        """An arrival at a join: the gathered list when the join fires now, else ``_WAITING``."""
        if src == _FIRE:
            return value
        join_id = node.id
        links = self._join_links(join_id)
        buf = self._joins.setdefault(join_id, {})
        index = next((i for i, s in enumerate(links) if s == src and i not in buf), None)
        if index is None:
            index = next((i for i in range(len(links)) if i not in buf), len(links) + len(buf))
        buf[index] = value
        self._join_frames[join_id] = BRANCH.get()
        if len(buf) < len(links):
            self._emit(join_id, _JOIN_WAIT, f"{len(buf)} of {len(links)} arrived",
                       {"delivered": len(buf), "expected": len(links)})
            return _WAITING
        return self._gathered(join_id, set_frame=True)

    def _gathered(self, join_id: str, set_frame: bool) -> Any:
        buf = self._joins.pop(join_id)
        frame = self._join_frames.pop(join_id, None)
        values = [buf[i] for i in sorted(buf)]
        frame = (frame or BranchFrame())._replace(fanout=values)
        if set_frame:
            BRANCH.set(frame)
            return values
        return values, frame

    def _check_joins(self) -> None:
        """Fire each waiting join none of whose missing sources can still run (DESIGN.md: an
        untaken branch, a skipped or failed source does not hold a join back; a branch in flight
        or paused at an approval does)."""
        if not self._joins or self._ended:
            return
        live: set[str] = set()
        for task, where in self._at.items():
            if not task.done():
                live.add(where[0])
        live.update(d[0] for d in self._deferred)
        if self._pending is not None:
            live.add(self._pending[0])
        live.update(n for n, _v in self._queue)
        for join_id in list(self._joins):
            buf = self._joins[join_id]
            links = self._join_links(join_id)
            if any(i not in buf and not live.isdisjoint(self._feeders(s, join_id)) for i, s in enumerate(links)):
                continue
            values, frame = self._gathered(join_id, set_frame=False)
            if self.status == RunStatus.PAUSED:
                self._deferred.append((join_id, values, _FIRE, frame))
            else:
                self._spawn(join_id, values, _FIRE, frame)

    # ------------------------------------------------------------------ loops
    def _loop_body(self, loop_id: str) -> frozenset[str]:
        """The nodes reachable from a loop's ``body`` links without passing through the loop."""
        found = self._body_cache.get(loop_id)
        if found is None:
            seen: set[str] = set()
            stack = [t for h, t in self._out.get(loop_id, ()) if h == "body"]
            while stack:
                cur = stack.pop()
                if cur == loop_id or cur in seen:
                    continue
                seen.add(cur)
                stack.extend(t for _h, t in self._out.get(cur, ()))
            found = self._body_cache[loop_id] = frozenset(seen)
        return found

    async def _loop_step(self, node: Node, value: Any) -> tuple[Any, str]:
        """A loop node's step (see ``engine.nodes.loop``): start, go round again, or be done."""
        loop_id = node.id
        frame = BRANCH.get() or _EMPTY_FRAME
        if loop_id in frame.loops:  # the body came back: one iteration ended
            iteration = self._loops.get(loop_id, 1)
            data = node.data
            matched = until_matches(getattr(data, "until", ""), as_text(value))
            self._emit(loop_id, _LOOP_CHECK, f"iteration {iteration}: {'matched' if matched else 'not matched'}",
                       {"iteration": iteration, "matched": matched})
            if matched or iteration >= (getattr(data, "maxIterations", None) or DEFAULT_MAX_ITERATIONS):
                self._loop_turn(loop_id, "done")
                return value, "done"
        self._loop_turn(loop_id, "body")
        return value, "body"

    def _loop_turn(self, loop_id: str, handle: str) -> None:
        """The loop's state after a step that followed ``handle``: ``done`` leaves the loop;
        ``body`` starts iteration 1, or the next one when the body came back. Also what a
        reused step of the loop does (``LoopSpec.replayed``), so a run from a node after a loop
        whose steps are reused counts its iterations as the recorded run did."""
        frame = BRANCH.get() or _EMPTY_FRAME
        if handle == "done":
            self._loops.pop(loop_id, None)
            if loop_id in frame.loops:
                BRANCH.set(frame._replace(loops=frame.loops[:frame.loops.index(loop_id)]))
            return
        if loop_id in frame.loops:
            self._loops[loop_id] = self._loops.get(loop_id, 1) + 1
        else:  # the first arrival: iteration 1
            self._loops[loop_id] = 1
            BRANCH.set(frame._replace(loops=(*frame.loops, loop_id)))
        # A bounded loop never trips the visit guard: each iteration counts its body afresh.
        visits = self.visits
        for n in self._loop_body(loop_id):
            if n in visits:
                visits[n] = 0
        visits[loop_id] = 0

    # ------------------------------------------------------------------ nested runs (flows)
    def _library(self) -> Any:
        if self.library is None:
            from engine.flows.library import default_library

            self.library = default_library()
        return self.library

    def _child_run(self, workflow: Workflow, path: Any, call: str, inputs: dict[str, Any]) -> "Run":
        """A nested run of ``workflow`` with ``inputs`` as its variables; its events relayed here."""
        child_id = self._id_source()
        run_path = (self.run_path + "/" if self.run_path else "") + f"{call}:{child_id}"
        child = Run(workflow, self._resolve, run_id=child_id, max_visits=self.max_visits, keep_events=False,
                    delta_interval=self.delta_interval, clock=self._clock, id_source=self._id_source,
                    library=self._library(), path=str(path) if path is not None else None, run_path=run_path,
                    variables=inputs)
        child.inputs = inputs  # type: ignore[attr-defined]
        child.add_listener(self._relay)
        return child

    async def run_subflow(self, node: Node, ref: str, field: str, *, by_name: bool, value: Any = None) -> Any:
        """A ``flow``/``action`` step: run the library flow ``ref`` nested, with the node's ``field``
        (``inputs``/``parameters``, templates resolved) as its variables.

        Returns ``(result, "output")`` when the child completes, a :class:`PauseRequest` when it
        waits for an approval (the parent pauses at this node; ``resume`` routes the decision
        back here), and raises :class:`NodeError` when it fails or cannot start.
        """
        from engine.nodes.web import resolve_for_step

        child = self._subruns.get(node.id)
        answer = self._subanswers.pop(node.id, None)
        try:
            if child is not None and answer is not None:
                status = await child.resume(answer)
            else:
                library = self._library()
                entry = library.resolve(ref, base=self.path, by_name=by_name)
                if entry is None:
                    what = f"no flow for the action '{ref}'" if by_name else f"the flow '{ref}' is not in the library"
                    raise NodeError(f"{_describe(node)} cannot run: {what}.")
                try:
                    workflow = library.load_path(entry.path)
                except FlowdeskError as err:
                    raise NodeError(f"{_describe(node)} cannot run: {err}") from None
                data, _secrets = resolve_for_step(self._ctx, node, value)
                inputs = data.get(field) or {}
                if not isinstance(inputs, dict):
                    raise NodeError(f"{_describe(node)}: '{field}' must be an object of variable names and values.")
                try:
                    child = self._child_run(workflow, entry.path, node.id, inputs)
                except FlowdeskError as err:  # an input that does not fit the flow's variables
                    raise NodeError(f"{_describe(node)}: the flow '{entry.name}' cannot start: {err}") from None
                self._subruns[node.id] = child
                status = await child.start()
        except asyncio.CancelledError:
            if child is not None:
                child.cancel()
                self._subruns.pop(node.id, None)
            raise
        if status == RunStatus.PAUSED:
            return PauseRequest(_child_prompt(child))
        self._subruns.pop(node.id, None)
        if status == RunStatus.COMPLETED:
            return child.result, "output"
        raise NodeError(f"{_describe(node)}: the flow '{child.workflow.display_name()}' {status}: "
                        f"{child.error or 'no reason given'}")

    async def _call_flow(self, parent: ProviderCall, tool: Any, arguments: dict[str, Any]) -> str:
        """A library flow called by a model as a tool: run nested, ``flow_call_*`` logged on the agent."""
        self._call_counter += 1
        call_id = f"call_{self._call_counter}_{self._id_source()[:8]}"
        base = {"parentNodeId": parent.node_id, "flowId": tool.flow_id, "flowName": tool.name, "callId": call_id,
                "parentCallId": parent.call_id, "depth": parent.depth + 1}
        args_text = json.dumps(arguments, ensure_ascii=False)

        def log(kind: str, message: str) -> None:
            self._emit(parent.node_id, kind, message, extra=base)

        log(EventType.FLOW_CALL_START, args_text)
        child = None
        try:
            library = self._library()
            entry = library.resolve(tool.flow_id, base=self.path, by_name=False)
            if entry is None:
                raise LLMError(f"the flow '{tool.flow_id}' is not in the library")
            workflow = library.load_path(entry.path)
            try:
                child = self._child_run(workflow, entry.path, f"{parent.node_id}.{call_id}", dict(arguments))
            except FlowdeskError as err:
                raise LLMError(f"the flow '{entry.name}' cannot start: {err}") from None
            status = await child.start()
            if status == RunStatus.PAUSED:
                child.cancel("A flow called as a tool cannot wait for an approval.")
                raise LLMError(f"the flow '{entry.name}' waited for an approval, which a tool call cannot do")
            if status != RunStatus.COMPLETED:
                raise LLMError(f"the flow '{entry.name}' {status}: {child.error or 'no reason given'}")
        except asyncio.CancelledError:
            if child is not None:
                child.cancel()
            log(EventType.FLOW_CALL_ERROR, "cancelled")
            raise
        except LLMError as err:
            log(EventType.FLOW_CALL_ERROR, str(err))
            raise
        except FlowdeskError as err:
            log(EventType.FLOW_CALL_ERROR, str(err))
            raise LLMError(str(err)) from err
        text = as_text(child.result)
        log(EventType.FLOW_CALL_END, text)
        return text

    async def _call_subagent(self, parent: ProviderCall, child: SubagentSpec, argument: str) -> str:
        self._call_counter += 1
        call_id = f"call_{self._call_counter}_{self._id_source()[:8]}"
        depth = parent.depth + 1
        base = {"parentNodeId": parent.node_id, "subagentNodeId": child.node_id, "subagentName": child.name,
                "callId": call_id, "parentCallId": parent.call_id, "depth": depth}

        def log(kind: str, message: str) -> None:
            self._emit(parent.node_id, kind, message, extra=base)

        log(EventType.SUBAGENT_CALL_START, argument)
        if depth > MAX_SUBAGENT_DEPTH:
            message = f"subagents nested deeper than {MAX_SUBAGENT_DEPTH} levels"
            log(EventType.SUBAGENT_CALL_ERROR, message)
            raise LLMError(message)
        name, system, model, effort = child.name, child.system_prompt, child.model, child.reasoning_effort
        secrets: frozenset[str] = frozenset()
        # Its data's templates, with the call's input as input (a host without the workflow's
        # nodes, a remote worker's model call, sends the prompt as written).
        nodes = getattr(self, "_nodes", None)
        node = nodes.get(child.node_id) if nodes is not None else None
        if node is not None and templated(node.data):
            content, _shown, name, system, model, effort, secrets = resolved_prompt(self._ctx, node, argument)
        else:
            content = fill_prompt(child.user_prompt, argument)
        inv = AgentInvocation(node_id=child.node_id, name=name, system_prompt=system,
                              user_content=content, model=model, reasoning_effort=effort,
                              tools=child.tools, subagents=child.children, provider=child.provider, depth=depth)
        ctx = ProviderCall(self, child.node_id, depth, call_id, secrets)
        try:
            provider = self._resolve(inv)
            result = await provider.complete(inv, ctx)
        except asyncio.CancelledError:
            log(EventType.SUBAGENT_CALL_ERROR, "cancelled")
            raise
        except LLMError as err:
            log(EventType.SUBAGENT_CALL_ERROR, str(err))
            raise
        except Exception as err:
            message = f"Unexpected error from the model provider: {err!r}"
            log(EventType.SUBAGENT_CALL_ERROR, message)
            raise LLMError(message) from err
        text = mask_secrets(result.text, secrets) if secrets else result.text  # an echoed secret is never shown
        # The call's tokens and the model that answered, as an llm_response has them: a run's
        # totals and costs count its subagent calls too.
        end = base
        if result.usage:
            end = {**end, "usage": result.usage}
        if result.model:
            end = {**end, "model": result.model}
        self._emit(parent.node_id, EventType.SUBAGENT_CALL_END, text, extra=end)
        return text

    # ------------------------------------------------------------------ snapshot
    @property
    def pending_approval(self) -> str | None:
        return self._pending[0] if self._pending else None

    @property
    def queued_approvals(self) -> list[str]:
        return [n for n, _ in self._queue]

    def pending_input(self) -> Any:
        """The output under review at the pending approval (None when not paused)."""
        return self._pending[1] if self._pending else None

    def queued_approval_inputs(self) -> list[tuple[str, Any]]:
        """The approvals queued behind the pending one, in the order they will be asked, each with
        the output it will review (a copy: changing it changes nothing in the run)."""
        return list(self._queue)

    def snapshot(self, *, include_workflow: bool = True) -> dict[str, Any]:
        """The run's whole state as a JSON value. Only while no branch is in flight."""
        if self._at:
            raise RunStateError("a snapshot is taken when the run is paused or ended, not while steps are running")
        return self._state(include_workflow, self._deferred, self.visits)

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
        try:
            current = asyncio.current_task()
        except RuntimeError:
            current = None
        deferred = list(self._deferred)
        visits = dict(self.visits)
        for task, (node_id, value, counted, src, frame) in list(self._at.items()):
            if task is current or task.done():
                continue
            deferred.append((node_id, value, src, frame))
            if counted and visits.get(node_id):
                visits[node_id] -= 1
        return self._state(False, deferred, visits)

    def _nested_state(self) -> dict[str, Any]:
        """This nested run's snapshot, workflow included (a checkpoint when siblings are in flight)."""
        if not self._at:
            return self.snapshot(include_workflow=True)
        state = self.checkpoint() or self._state(False, self._deferred, self.visits)
        state["workflow"] = json.loads(dumps_workflow(self.workflow, indent=None))
        return state

    def _state(self, include_workflow: bool, deferred: list[tuple[str, Any, str | None, BranchFrame | None]],
               visits: dict[str, int]) -> dict[str, Any]:
        snap: dict[str, Any] = {
            "format": SNAPSHOT_FORMAT,
            "runId": self.run_id,
            "status": str(self.status),
            "waitingForInput": self.waiting_for_input,
            "currentNodeId": self.current_node_id,
            "initialInput": self.initial_input,
            "maxVisits": self.max_visits,
            "pending": _with_frame({"nodeId": self._pending[0], "input": self._pending[1]}, self._pending_frame)
            if self._pending else None,
            "approvalQueue": [_with_frame({"nodeId": n, "input": v}, f)
                              for (n, v), f in zip(self._queue, _padded(self._queue_frames, len(self._queue)))],
            "deferred": [_with_frame({"nodeId": n, "input": v, **({"from": src} if src and self._gathers(n) else {})}, f)
                         for n, v, src, f in deferred],
            "variables": dict(self.variables),
            "joins": {j: {"arrived": [[i, v] for i, v in sorted(buf.items())],
                          **_with_frame({}, self._join_frames.get(j))} for j, buf in self._joins.items()},
            "loops": dict(self._loops),
            "outputs": dict(self.outputs),
            "visits": dict(visits),
            "outcomes": _OutcomeView(self._outcomes, self.outputs).texts(),
            "lastTextOutput": self.last_text_output,
            "error": self.error,
            "startedAt": self.started_at,
            "meta": self.meta,
        }
        if self.result is not None:
            snap["result"] = self.result
        if self.run_path:
            snap["runPath"] = self.run_path
        if self.path:
            snap["path"] = self.path
        if self._subruns:
            snap["subflows"] = {nid: child._nested_state() for nid, child in self._subruns.items()}
        if include_workflow:
            snap["workflow"] = json.loads(dumps_workflow(self.workflow, indent=None))
        return snap

    @classmethod
    def restore(cls, snapshot: dict[str, Any], provider: LLMProvider | Callable[[AgentInvocation], LLMProvider], *,
                workflow: Workflow | None = None, **kwargs: Any) -> "Run":
        """A run in the state ``snapshot`` describes (a paused run can then be resumed)."""
        if not isinstance(snapshot, dict) or snapshot.get("format") != SNAPSHOT_FORMAT:
            raise ValueError("not a Flowdesk run snapshot")
        if workflow is None:
            if "workflow" not in snapshot:
                raise ValueError("the snapshot has no workflow; pass the workflow that ran")
            workflow = parse_workflow(snapshot["workflow"])
        kwargs.setdefault("max_visits", snapshot.get("maxVisits", DEFAULT_MAX_VISITS))
        kwargs.setdefault("meta", snapshot.get("meta"))
        kwargs.setdefault("variables", snapshot.get("variables") or {})
        run = cls(workflow, provider, run_id=snapshot["runId"], initial_input=snapshot.get("initialInput"),
                  _restoring=True, **kwargs)
        status = snapshot["status"]
        run.status = _STATUSES.get(status) or RunStatus(status)
        run._ended = run.status in _FINAL
        run.waiting_for_input = bool(snapshot.get("waitingForInput"))
        run.current_node_id = snapshot.get("currentNodeId")
        pending = snapshot.get("pending")
        run._pending = (pending["nodeId"], pending.get("input")) if pending else None
        run._pending_frame = BranchFrame.from_json(pending.get("frame")) if pending else None
        queue = list(snapshot.get("approvalQueue", ()))
        run._queue = deque((q["nodeId"], q.get("input")) for q in queue)
        run._queue_frames = deque(BranchFrame.from_json(q.get("frame")) for q in queue)
        run._deferred = [(q["nodeId"], q.get("input"), q.get("from"), BranchFrame.from_json(q.get("frame")))
                         for q in snapshot.get("deferred", ())]
        for join_id, held in (snapshot.get("joins") or {}).items():
            run._joins[join_id] = {int(i): v for i, v in held.get("arrived", ())}
            run._join_frames[join_id] = BranchFrame.from_json(held.get("frame"))
        run._loops = {k: int(v) for k, v in (snapshot.get("loops") or {}).items()}
        run.outputs = dict(snapshot.get("outputs", {}))
        run.visits = dict(snapshot.get("visits", {}))
        run._outcomes = {k: NodeOutcome(v) for k, v in snapshot.get("outcomes", {}).items() if v != _DONE}
        run.last_text_output = snapshot.get("lastTextOutput", "")
        run.error = snapshot.get("error")
        run.started_at = snapshot.get("startedAt")
        run.result = snapshot.get("result")
        if "runPath" in snapshot and not run.run_path:
            run.run_path = snapshot["runPath"]
        if run.path is None and isinstance(snapshot.get("path"), str):
            run.path = snapshot["path"]
        for nid, child_snap in (snapshot.get("subflows") or {}).items():
            child = cls.restore(child_snap, run._resolve, library=run.library, clock=run._clock,
                                id_source=run._id_source, keep_events=False, delta_interval=run.delta_interval)
            child.add_listener(run._relay)
            run._subruns[nid] = child
        return run

