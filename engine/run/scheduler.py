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

This module (with ``EventSource._emit``, engine/run/emitter.py) and ``engine.nodes.agent`` are
the engine's hot path (``tests/bench/bench_engine``): events built inline as tuples and fields
read through ``__dict__`` stay here, each with what it saves; everywhere else events are
emitted through ``RunContext.emit``.

What stays here is the branch walk (``_branch``) with the slots it reads on every step, and the
operations that change the run's status in the order the walk and the event sequences expect:
starting, resuming, failing, cancelling. What is not that lives beside it: ``setup``
(``RunFields``, the run's public fields and settings; the provider resolver, the step hook, the
GC pause), ``emitter`` (``EventSource``: events made, and where they go), ``kinds`` (each node's
kind state, nested runs included, and the nodes holding arrivals), ``pauses`` (the pending
approval, the queue behind it, deferred work, and the pause / settle / resume sequence),
``approvals`` (``Approvals``: what callers ask of the pending approval), ``checkpoint``
(``Snapshots``: snapshot, checkpoint, restore), ``snapshot`` (the format and its parts),
``records`` (``StepLog`` and its views, ``StepRecords``), ``context`` (what kinds may do),
``branches`` (the live tasks), ``policies``; the graph's adjacency is the workflow's
``GraphIndex`` (engine/graph/index.py). ``Run`` is ``RunFields`` plus those base classes
(``StepRecords``, ``Approvals``, ``Snapshots``: no state of their own, each reading the few
attributes its annotations name) plus the walk. The objects are reached only on rare paths (a
pause, a join's arrival, a snapshot): a plain step reads nothing but this object's slots.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from engine.flows.library import default_library
from engine.graph.index import GraphIndex
from engine.graph.model import Node, Workflow
from engine.graph.variables import VariableError  # noqa: F401  (raised by Run())
from engine.llm.base import AgentInvocation, LLMProvider
from engine.nodes import SPECS, NodeError, NodeOutcome, PauseRequest, spec_for
from engine.nodes.approval import normalise_decision
from engine.nodes.base import as_text
from engine.run import setup
from engine.run import snapshot as snapshot_format
from engine.run.approvals import Approvals
from engine.run.branches import Branches
from engine.run.checkpoint import Snapshots
from engine.run.context import BRANCH, WAITING, RunContext
from engine.run.emitter import EventCallback, status_event
from engine.run.events import SYSTEM_NODE, EventType, RunEvent, RunStatus
from engine.run.kinds import KindStates
from engine.run.pauses import Pausing
from engine.run.policies import attempts, failed
from engine.run.records import NodeRecord, StepLog, StepRecords
from engine.run.rerun import any_pinned_node
from engine.run.setup import DEFAULT_MAX_VISITS, RunFields, RunStateError

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


class Run(RunFields, StepRecords, Approvals, Snapshots):
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
        # replaying the run injects its own; the clock is EventSource's, which stamps events
        # with it); all other I/O happens in the nodes' execute.
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
            clock=clock,
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

    # ------------------------------------------------------------------ events (the rest: EventSource, emitter.py)
    def _routes_changed(self) -> None:
        # (the agent step publishes its events itself: see RunContext.sinks); the routes are set
        # up before the context exists, which takes them when it is made
        ctx = getattr(self, "_ctx", None)
        if ctx is not None:
            ctx.sinks = self._sinks
            ctx.event_tail = self._path_item

    def _set_status(self, status: RunStatus, detail: str = "") -> None:
        """The run is now ``status`` (``detail``: why, for an end); its ``run_status`` event goes out."""
        self.status = status
        self._ended = status in _FINAL
        if self._ended:
            self.ended_at = self._clock()
            self.waiting_for_input = False
        final_vars = self.variables if self._ended else None
        self._publish_status(status_event(status, detail, final_vars, self._clock(), self._path_item))

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
