"""The scheduler: runs a workflow's branches (docs/design.md, "Run model (runtime semantics)").

``Run`` knows no node kind. It keeps the branches, the queue of arrivals, pausing and deferred
work, cancellation, the clock and id source, events, snapshot and restore; what a kind means
(a join's buffer, a loop's rounds, a nested flow, an approval's decision, a subagent call) is
the kind's own (``engine.nodes``), done through the run's :class:`~engine.run.context.RunContext`,
and step policies are one wrapper around any working step (``engine.run.policies``).

Concepts and invariants
* A *branch* is one asyncio task that walks a path of the graph in a loop (never by
  recursion): it runs a node, looks its outgoing execution edges up in a dict built
  once, continues with the first successor itself and spawns a task for each other
  one, so several successors run concurrently, each with the same output.
* A kind that ``gathers`` is asked (``arrive``) before its step whether an arrival fires it or
  waits; a waiting node is asked again (``release``) whenever work ends somewhere.
* Subagent edges are never followed; subagent children are offered to their parent's
  LLM as tools (see ``engine.llm.base``).
* The first pause reached (a step returning ``PauseRequest``) pauses the run (``paused``,
  ``waiting_for_input``, ``current_node_id``). While paused, further pauses are queued and
  edges that would be followed are deferred with their input. ``resume()`` hands the answer
  to the kind (``answered``): it goes on along a handle, or the step is taken again; then
  deferred work is drained, then the run pauses at the next queued approval or completes.
* ``start()``/``resume()`` return once the run is quiescent (no branch in flight):
  paused, completed, failed or cancelled. ``cancel()`` cancels every branch task, which
  closes open HTTP requests of providers at once.
* Every node has a per-run visit limit (default 25); exceeding it fails the run with an
  ``error`` event, so an execution loop cannot run forever.
* A paused run's whole state is a JSON value (``snapshot()``): the kinds' states go under
  their ``state_key``; ``Run.restore()`` makes a run that another process can resume.

This module and ``engine.nodes.agent`` are the engine's hot path (``tests/bench/bench_engine``):
events built inline as tuples and fields read through ``__dict__`` stay here, each with what
it saves; everywhere else events are emitted through ``RunContext.emit``.

What stays here is the branch walk (``_branch``) with the slots it reads on every step, and the
operations that change the run's status in the order the walk and the event sequences expect:
starting, failing, cancelling. What is not that lives beside it: ``setup`` (``RunFields``, the
run's public fields and settings; the provider resolver, the step hook, the GC pause), ``kinds``
(each node's kind state, nested runs included, and the nodes holding arrivals), ``pauses`` (the
pending approval, the queue behind it, deferred work, and the pause / settle / resume sequence),
``context`` (what kinds may do), ``branches`` (the live tasks), ``policies``, ``snapshot`` (the
format and its parts), ``emitter`` (where events go), ``records``; the graph's adjacency is the
workflow's ``GraphIndex`` (engine/graph/index.py). Those are reached only on rare paths (a
pause, a join's arrival, a snapshot): a plain step reads nothing but this object's slots.
This file is over 600 lines for that one concern: the walk and the run state it changes stay
together, so a step reads no attribute of another object.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from engine.errors import FlowdeskError
from engine.flows.library import default_library
from engine.graph.index import GraphIndex
from engine.graph.model import Node, Workflow
from engine.graph.templates import mask_url_passwords
from engine.graph.variables import VariableError, json_safe  # noqa: F401  (VariableError: raised by Run())
from engine.llm.base import AgentInvocation, LLMProvider
from engine.nodes import SPECS, NodeError, NodeOutcome, PauseRequest, spec_for
from engine.nodes.approval import normalise_decision
from engine.nodes.base import as_text
from engine.run import setup
from engine.run import snapshot as snapshot_format
from engine.run.branches import Branches
from engine.run.context import BRANCH, WAITING, BranchFrame, RunContext
from engine.run.emitter import EventCallback
from engine.run.events import SYSTEM_NODE, EventType, RunEvent, RunStatus
from engine.run.events import _encode as _encode_extra
from engine.run.kinds import KindStates
from engine.run.pauses import Pausing
from engine.run.policies import attempts, failed
from engine.run.records import NodeRecord, RecordView, StepLog
from engine.run.rerun import any_pinned_node
from engine.run.setup import RunFields

__all__ = [
    "Run",
    "RunStateError",
    "NodeRecord",
    "normalise_decision",
    "DEFAULT_MAX_VISITS",
    "SNAPSHOT_FORMAT",
    "Clock",
    "IdSource",
    "uuid_ids",
    "as_text",
]

DEFAULT_MAX_VISITS = 25
SNAPSHOT_FORMAT = snapshot_format.SNAPSHOT_FORMAT
_tuple_new = tuple.__new__
# Event types as plain strings for the hot path (RunEvent stores plain str).
_STEP_START = EventType.STEP_START.value
_DONE = NodeOutcome.DONE
_PAUSED = RunStatus.PAUSED
_FINAL = (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)  # RunStatus.is_final, without a call
_NODE_OUTPUT = EventType.NODE_OUTPUT.value
_STEP_END = EventType.STEP_END.value
# step_end's extra fields, preformatted per status (the hot path formats one number into it)
_END_DONE = '{"status": "done", "durationMs": '
# ... and whole for the usual durations of an instant step (shared strings, none made per step)
_N_DONE_EXTRAS = 64
_DONE_EXTRAS = tuple(f"{_END_DONE}{ms}}}" for ms in range(_N_DONE_EXTRAS))
_FIRE = "\x00fire"  # the "source" of a gathering node's step whose arrivals are already gathered
_YIELD_EVERY = 64  # steps a branch runs before yielding to the event loop when nothing else awaits

Clock = Callable[[], float]
IdSource = Callable[[], str]


def uuid_ids() -> str:
    """The default id source: a random UUID as 32 hex digits."""
    return uuid.uuid4().hex


def _handles(handle: Any) -> dict[str, Any]:
    """``node_output``'s extra fields: the handle followed, or the handles (a tuple)."""
    return {"handle": handle} if handle is None or handle.__class__ is str else {"handles": list(handle)}


class RunStateError(FlowdeskError, RuntimeError):
    """An operation that the run's current state does not allow (resume a run that is not paused, ...)."""


class Run(RunFields):
    """One execution of a workflow.

    A run from a node (docs/design.md, "Re-running, editing, comparing"): ``start_at`` names the node that, with
    everything downstream of it, runs fresh; ``reuse_from`` (a run id in ``store``, default the
    user's run store, or a mapping of node ids to recorded executions) gives the outputs the other
    nodes reuse when their execution key still matches (see ``engine.run.rerun``). ``specs``: the
    kinds' specs by node type as the steps look them up (a durable engine driving the scheduler
    passes a mapping whose working kinds run their steps elsewhere).
    """

    # (the public fields and their slots: RunFields, engine/run/setup.py)
    __slots__ = (
        "__weakref__",
        "_ended",
        "_clock",
        "_id_source",
        "_specs",
        "_resolve",
        "_nodes",
        "_out",
        "_kinds",
        "_gathering",
        "_log",
        "_pauses",
        "_branches",
        "_at",
        "_ctx",
    )

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
        specs: Mapping[str, Any] | None = None,
    ) -> None:
        # The scheduler reads time and makes ids only through these two (a durable engine
        # replaying the run injects its own); all other I/O happens in the nodes' execute.
        self._clock = clock
        self._id_source = id_source
        self._specs: Mapping[str, Any] = SPECS if specs is None else specs
        # the public fields, variables (a bad one refuses the run: VariableError) and events
        RunFields.__init__(
            self,
            workflow,
            variables,
            _restoring,
            keep_events=keep_events,
            on_event=on_event,
            run_id=run_id or id_source(),
            initial_input=initial_input,
            max_visits=max_visits,
            delta_interval=delta_interval,
            check=check,
            meta=meta,
            library=library,
            path=path,
            run_path=run_path,
            start_at=start_at,
        )
        self._ended = False  # status.is_final, kept as a plain bool for the hot path
        # The nodes by id (a repeated id's first node counts; validation reports it) and the
        # execution links out of each node as ``(handle, target)`` tuples, from the workflow's
        # index (built once, kept on the workflow: engine/graph/index.py).
        index = GraphIndex.of(workflow)
        self._nodes, self._out = index.nodes, index.steps_out
        # Each node's state as its kind keeps it, and the nodes holding arrivals (engine/run/kinds.py);
        # ``_gathering`` is the latter, read each time a branch ends.
        self._kinds = KindStates(self._specs, self._nodes)
        self._gathering = self._kinds.gathering

        # How each node's last step ended, what each agent step did, the step hook (records.py)
        self._log = StepLog(any_pinned_node(workflow))
        self._resolve = setup.resolver(provider)  # the provider of each agent call
        # The live branch tasks (engine/run/branches.py), and where each is while it waits: the
        # walk writes ``_at`` (the same dict as ``_branches.at``) on its hot path.
        self._branches = Branches(self._branch)
        self._at = self._branches.at

        self._ctx = RunContext(
            self,
            emit=self._emit,
            relay=self._relay,
            now=clock,
            new_id=id_source,
            resolve=self._resolve,
            records=self._log.records,
            index=index,
            states=self._kinds.states,
            live=self._live_nodes,
            library=self._library,
            recorded=self._log.step_recorded,
            outcome=self._log.set_outcome,
            fail=self._fail,
        )
        # The pending approval, the approvals queued behind it, deferred work, and the pause /
        # settle / resume sequence made of them (engine/run/pauses.py).
        self._pauses = Pausing(
            self,
            self._kinds,
            self._ctx,
            emit=self._emit,
            set_status=self._set_status,
            spawn=self._spawn,
            release_held=self._release_held,
            end_streams=self._end_streams,
        )
        self._update_sinks()
        # Pinned outputs, a run from a node and recorded executions (engine/run/rerun.py); None for
        # a plain run. A recorder asks for recordings with ``record_executions``.
        self._log.hook, self.reused_from = setup.step_hook(
            self._ctx,
            self._nodes,
            start_at=start_at,
            reuse_from=reuse_from,
            store=store,
            any_pinned=self._log.any_pinned,
        )

    @property
    def context(self) -> RunContext:
        """What this run's kinds (and an adapter driving it) may read and do."""
        return self._ctx

    def record_executions(self, callback: Callable[[str, str, Any, Any], None]) -> None:
        """Call ``callback(node_id, key, output, handle)`` for each step that ends with an output
        (a reused one included); the run store's recorder keeps them for later runs from a node.
        ``key`` is the step's part of its execution key (``engine.run.rerun``: ``i`` + a digest); the
        store makes the full key again from the run's workflow when a later run reuses it."""
        self._log.record_executions(self._ctx, callback)

    @property
    def records(self) -> Mapping[str, NodeRecord]:
        """What each agent node did the last time it ran, by node id."""
        return RecordView(self._log.records, self.outcomes)

    @property
    def outcomes(self) -> Mapping[str, NodeOutcome]:
        """How each node's last step ended (done, failed, cancelled; skipped with later policies), by node id."""
        return self._log.outcome_view(self.outputs)

    # ------------------------------------------------------------------ events (the rest: EventSource)
    def _routes_changed(self) -> None:
        # (the agent step publishes its events itself: see RunContext.sinks); the routes are set
        # up before the context exists, which takes them when it is made
        ctx = getattr(self, "_ctx", None)
        if ctx is not None:
            ctx.sinks = self._sinks
            ctx.event_tail = self._path_item

    def _emit(
        self,
        node_id: str,
        type: str,
        content: str = "",
        extra: dict[str, Any] | None = None,
        ts: float | None = None,
        extra_json: str | None = None,
    ) -> RunEvent:
        # RunEvent's fields built inline (as RunEvent.__new__ would): this runs 3 times a step.
        ev = _tuple_new(
            RunEvent,
            (
                node_id,
                type if type.__class__ is str else str(type),
                content,
                ts or self._clock(),
                _encode_extra(extra) if extra else extra_json,
            )
            + self._path_item,
        )
        for sink in self._sinks:
            sink(ev)
        return ev

    def _set_status(self, status: RunStatus, detail: str = "") -> None:
        self.status = status
        self._ended = status in _FINAL
        if self._ended:
            self.ended_at = self._clock()
            self.waiting_for_input = False
        extra: dict[str, Any] | None = {"detail": detail} if detail else None
        if self._ended and self.variables:  # the final variables, kept in the run record (seed 001's `vars`)
            # URL passwords masked, as the run's stored arguments are (a --var URL=… password)
            extra = {**(extra or {}), "vars": mask_url_passwords(json_safe(self.variables))}
        ev = _tuple_new(
            RunEvent,
            (
                SYSTEM_NODE,
                EventType.RUN_STATUS.value,
                str(status),
                self._clock(),
                _encode_extra(extra) if extra else None,
            )
            + self._path_item,
        )
        # The status listeners first (the run store queues the run's new status and, for a pause,
        # its state), then the event's sinks: a commit of the store's writer thread never holds a
        # pause or an end without the state that goes with it, so a process killed as soon as
        # "paused" is printed leaves a resumable run.
        for cb in list(self._status_listeners):
            cb(ev)
        for sink in self._sinks:
            sink(ev)

    async def start(self) -> RunStatus:
        """Run from the start node until the run is paused or ended."""
        self._branches.on_loop()
        lock = self._branches.lock
        assert lock is not None
        async with lock:
            setup.freeze_older()
            try:
                if self.status != RunStatus.PENDING:
                    raise RunStateError(f"this run has already started (status {self.status})")
                self.started_at = self._clock()
                if self.check and (errors := setup.workflow_errors(self.workflow, self.library, self.path)):
                    setup.refuse(self, errors, self._emit, self._set_status)  # (the workflow has errors)
                    self._end_streams()
                    return self.status
                start = self.workflow.start_node()
                self._set_status(RunStatus.RUNNING)
                if start is None:
                    self._fail(SYSTEM_NODE, "The workflow has no Start node.")
                else:
                    self._spawn(start.id, None)
                    await self._branches.wait_idle()
                self._pauses.settle()
                await self._ctx.rest()  # (shared resources of the steps: MCP connections)
                return self.status
            finally:
                setup.thaw()

    async def resume(
        self, decision: Any, note: str | None = None, *, output: Any = None, arguments: Any = None
    ) -> RunStatus:
        """Answer the pending approval and continue until the run is paused again or ended.

        ``output``: the reviewer's edit of the output under review; when given (and different),
        it is what flows on, and ``input_received`` records ``edited: true`` with the original.
        The node's kind takes the answer (``NodeSpec.answered``): it goes on along a handle, or
        its step is taken again (a flow step hands the answer to its nested run).
        ``arguments``: at a tool call's approval, the arguments the call is made with (checked
        against the tool's schema: :class:`RunStateError` when they do not fit, the run still paused).
        """
        self._branches.on_loop()
        lock = self._branches.lock
        assert lock is not None
        async with lock:
            setup.freeze_older()
            try:
                await self._branches.wait_idle()
                if self.status != RunStatus.PAUSED or self._pauses.pending is None:
                    raise RunStateError(f"this run is not waiting for input (status {self.status})")
                answer, output, problem = self._pauses.prepare(decision, note, output, arguments)
                if problem:
                    raise RunStateError(f"the answer is refused: {problem}")
                self._pauses.answer(answer, output)
                await self._pauses.drain(self._branches.wait_idle)
                self._pauses.settle()
                await self._ctx.rest()
                return self.status
            finally:
                setup.thaw()

    async def expire(self) -> RunStatus:
        """Take the pending approval's ``onTimeout`` decision if its deadline has passed (logged
        as ``input_received`` with ``timedOut: true``), and continue as ``resume`` does; nothing
        happens when the run is not paused or the deadline is still to come. Whoever holds a
        paused run calls it at the deadline (``pause_timeout``); a run restored after its
        deadline takes the decision on its next ``resume`` anyway."""
        if self.status != RunStatus.PAUSED or not self.overdue():
            return self.status
        return await self.resume({"decision": self._pauses.on_timeout, "timedOut": True})

    def overdue(self, now: float | None = None) -> bool:
        """Whether the pending approval's deadline has passed (at ``now``, default the run's clock)."""
        return self._pauses.overdue(now)

    def pause_timeout(self) -> tuple[float, str] | None:
        """``(deadline, decision)`` of the pending approval (the run's clock; the decision it takes
        then), or None when nothing waits or it waits for ever."""
        return self._pauses.pause_timeout()

    @property
    def waiting_since(self) -> float | None:
        """When the run paused at its pending approval (the run's clock; None when not paused)."""
        return self._pauses.since if self._pauses.pending is not None else None

    def decisions(self) -> tuple[str, ...]:
        """The decisions the pending approval takes: approve, reject and its options (a flow
        step's: its nested run's)."""
        return self._pauses.decisions()

    def amend_pending(self, value: Any) -> None:
        """Replace the output under review at the pending approval (what goes on when it is
        answered), without recording an edit (a durable engine's reviewer edit)."""
        self._pauses.amend(value)

    def cancel(self, reason: str = "Cancelled by the user.") -> None:
        """Stop the run now: every branch task is cancelled (open HTTP requests close)."""
        if self.status.is_final:
            return
        self.error = reason
        self._pauses.clear()
        self.current_node_id = None
        self._kinds.cancelled(self._ctx, reason)
        self._set_status(RunStatus.CANCELLED, reason)
        self._branches.cancel(None, self._branch_ended)
        if not self._at:
            self._end_streams()

    async def wait(self) -> RunStatus:
        """Wait until no branch is in flight (after cancel(), for example)."""
        self._branches.on_loop()
        await self._branches.wait_idle()
        return self.status

    def _spawn(self, node_id: str, value: Any, src: str | None = None, frame: Any = False) -> None:
        """A new branch at ``node_id``; ``frame`` (False: the current branch's) is its BranchFrame."""
        self._branches.spawn_all((node_id,), value, src, frame)

    def _branch_ended(self, task: asyncio.Task | None) -> None:
        if self._at.pop(task, None) is None:  # type: ignore[arg-type]
            return  # (already taken out)
        if self._gathering and not self._ended:
            self._release_held()
        if self._branches.settled() and self.status.is_final:
            lock = self._branches.lock
            if lock is not None and not lock.locked():
                self._end_streams()

    def _fail(self, node_id: str, message: str) -> None:
        if self.status.is_final:
            return
        self.error = message
        self._emit(node_id, EventType.ERROR, message)
        self._pauses.pending = None
        self.current_node_id = None
        self._set_status(RunStatus.FAILED, message)
        try:
            current = asyncio.current_task()
        except RuntimeError:
            current = None
        self._branches.cancel(current, self._branch_ended)

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
        log = self._log
        outcomes = log.outcomes
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
                if spec is not None and spec.gathers and src != _FIRE:
                    value = spec.arrive(self._ctx, node, src, value)
                    if value is WAITING:
                        self._gathering[node_id] = spec
                        return
                    self._gathering.pop(node_id, None)
                count = visits.get(node_id, 0) + 1
                visits[node_id] = count
                if count > limit or spec is None:
                    return self._refuse_step(node, count > limit)
                # step_start and step_end built inline (as _emit would): one call less each, every step
                started = clock()
                data = nd["data"]
                fields = data.__dict__
                ev = _tuple_new(RunEvent, (node_id, _STEP_START, spec.title(data), started, None) + path_item)
                for sink in self._sinks:
                    sink(ev)
                at[task] = (node_id, value, True, _FIRE if spec.gathers else src, BRANCH.get())
                status = "done"
                reused = False
                result: Any  # (output, handle), a PauseRequest, or None once failed and handled
                try:
                    hook = log.hook
                    # pinned? a reusable recorded execution? (engine/run/rerun.py) else it runs, and is recorded
                    reused = (
                        hook is not None and hook.supplies and (result := hook.before(spec, node, value)) is not None
                    )
                    if not reused:
                        # (policies.has_policy, inlined: a call less on every step)
                        if spec.works and (fields.get("timeoutMs") or fields.get("errorMode") == "retry"):
                            result = await attempts(self._ctx, spec, node, value)
                        else:
                            result = await spec.execute(self._ctx, node, value)
                        if hook is not None and result.__class__ is not PauseRequest:
                            hook.after(node, value, *result)
                except asyncio.CancelledError:
                    outcomes[node_id] = NodeOutcome.CANCELLED
                    raise
                except NodeError as err:
                    result, status = failed(self._ctx, node, str(err), started)
                except Exception as err:  # a node kind's bug must not take the run down
                    result, status = failed(self._ctx, node, f"'{node.title}' failed: {err!r}", started)
                if result is None:
                    return
                if result.__class__ is PauseRequest:  # the run pauses (or queues it behind the pending one)
                    self._pauses.step_paused(node_id, value, result.prompt, result.extra)
                    return
                output, handle = result
                if status == "done":
                    if not spec.reports_output and not reused:  # (a reused output was logged by cache_hit)
                        emit(node_id, _NODE_OUTPUT, as_text(output), _handles(handle))
                    if outcomes and node_id in outcomes:  # done this time (after a failure a policy let pass)
                        del outcomes[node_id]
                    ended = clock()
                    ms = round((ended - started) * 1000)
                    extra = _DONE_EXTRAS[ms] if 0 <= ms < _N_DONE_EXTRAS else f"{_END_DONE}{ms}}}"
                    ev = _tuple_new(RunEvent, (node_id, _STEP_END, "done", ended, extra) + path_item)
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
                        at[task] = (node_id, value, False, src, BRANCH.get())
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
                    self._pauses.deferred.extend((t, output, src, frame) for t in targets)
                    return
                if len(targets) > 1:
                    self._branches.spawn_all(targets[1:], output, src)
                node_id, value = targets[0], output
                steps += 1
                if steps % _YIELD_EVERY == 0:
                    at[task] = (node_id, value, False, src, BRANCH.get())
                    await asyncio.sleep(0)  # keep the event loop (and the GUI) responsive on instant providers
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug, not a model failure: still end the run cleanly
            self._fail(SYSTEM_NODE, f"Internal error: {exc!r}")
        finally:
            self._branch_ended(task)

    def _refuse_step(self, node: Node, over_limit: bool) -> None:
        """Fail the run at ``node``: reached more times than the visit limit, or of no known kind."""
        if over_limit:
            self._log.outcomes[node.id] = NodeOutcome.FAILED
            self._fail(
                node.id,
                f"'{node.title}' was reached more than {self.max_visits} times in this run; stopping "
                "to avoid an endless loop. Raise the visit limit if the loop is intended.",
            )
        else:
            self._emit(node.id, _STEP_START, node.title)
            self._fail(node.id, f"Node '{node.id}' has an unknown type '{node.type}'.")

    # ------------------------------------------------------------------ what the context offers
    def _live_nodes(self) -> set[str]:
        """Where work is in flight or waiting: what can still arrive somewhere."""
        return self._branches.nodes() | self._pauses.nodes()

    def _release_held(self) -> None:
        """Ask each node holding arrivals whether it fires now (a join none of whose missing
        sources can still run); a node that fires runs (deferred while the run is paused)."""
        if not self._gathering or self._ended:
            return
        for node_id, value, frame in self._kinds.fired(self._ctx, self._live_nodes()):
            if self.status == RunStatus.PAUSED:
                self._pauses.deferred.append((node_id, value, _FIRE, frame))
            else:
                self._spawn(node_id, value, _FIRE, frame)

    def _library(self) -> Any:
        if self.library is None:  # (the user's library: read only when a flow runs)
            self.library = default_library()
        return self.library

    def waiting_prompt(self) -> str:
        """What the run waits for: its pending pause's prompt (a flow step's: its nested run's, however deep)."""
        return self._pauses.waiting_prompt()

    def waiting_extra(self) -> dict[str, Any] | None:
        """The pending pause's ``wait_input`` fields besides its prompt (a tool call's: ``{kind:
        "tool_call", tool, server?, arguments, ...}``; None for a plain approval, or none pending)."""
        return self._pauses.waiting_extra()

    def answer_problem(self, answer: dict[str, Any]) -> str | None:
        """Why ``answer`` cannot answer the pending pause (None: it can; its kind decides)."""
        return self._pauses.answer_problem(answer)

    # ------------------------------------------------------------------ snapshot
    @property
    def pending_approval(self) -> str | None:
        pending = self._pauses.pending
        return pending[0] if pending else None

    @property
    def queued_approvals(self) -> list[str]:
        return [n for n, _ in self._pauses.queue]

    def pending_input(self) -> Any:
        """The output under review at the pending approval (None when not paused)."""
        pending = self._pauses.pending
        return pending[1] if pending else None

    def queued_approval_inputs(self) -> list[tuple[str, Any]]:
        """The approvals queued behind the pending one, in the order they will be asked, each with
        the output it will review (a copy: changing it changes nothing in the run)."""
        return list(self._pauses.queue)

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
    ) -> Run:
        """A run in the state ``snapshot`` describes (a paused run can then be resumed)."""
        workflow, kwargs = snapshot_format.restore_args(snapshot, workflow, kwargs, DEFAULT_MAX_VISITS)
        run = cls(
            workflow,
            provider,
            run_id=snapshot["runId"],
            initial_input=snapshot.get("initialInput"),
            _restoring=True,
            **kwargs,
        )
        snapshot_format.read_run(run, snapshot)  # (the public fields: status, outputs, visits, ...)
        run._ended = run.status in _FINAL
        run._pauses.read(snapshot)
        run._log.outcomes = snapshot_format.read_outcomes(snapshot)
        run._kinds.read(snapshot, run._ctx)  # (each kind reads its states back: nested runs too)
        return run
