"""What a node kind may read and do during a run: :class:`RunContext` (one per run).

A kind's ``execute`` (and its other run hooks: ``arrive``, ``release``, ``answered``,
``replayed``, its state's ``to_json``/``from_json``) talks to the run only through this
object; the scheduler (``engine.run.scheduler.Run``) builds it and hands it the capabilities
below. No kind and no adapter reads a run's private attributes (a test scans for that), so the
scheduler knows no kind by name and a new kind needs no change to it. See docs/design.md,
"Run model (runtime semantics)".

Members of :class:`RunContext`:

The run, read only
  ``run_id``        the run's id (text).
  ``workflow``      the :class:`~engine.Workflow` that runs.
  ``path``          the workflow's file (None when unsaved): flows are looked up relative to it.
  ``meta``          the caller's settings kept with the run (JSON values, no secrets).
  ``initial_input`` the run's input when given on start (else None).
  ``max_visits``    the per-node visit limit of the run.
  ``delta_interval`` seconds between two streamed ``llm_delta`` events of a step.
  ``cancelled``     whether the run was cancelled (a cancelled step is also interrupted with
                    ``asyncio.CancelledError`` at its next await).

Events, time and ids
  ``emit(node_id, type, content="", extra=None, ts=None, extra_json=None)`` add an event to
                    the run's log (``extra`` a dict, or ``extra_json`` already encoded).
  ``relay(event)``  log an event of a nested run as it is (it carries its run path).
  ``sinks``, ``event_tail`` the hot path's way to publish an event: build the
                    :class:`~engine.RunEvent` tuple with ``event_tail`` (the run path item, or
                    nothing) appended and hand it to each sink. Only the agent step uses it
                    (see ``engine.nodes.agent``); everything else calls ``emit``.
  ``now()``         the run's clock (seconds); ``new_id()``: a fresh unique id (hex text).
  ``next_call_id()`` a fresh id for a tool call made by a model (``call_<n>_<id>``).

Data flow (docs/design.md, "Data flow: variables and templates")
  ``outputs``       the outputs so far by node id (read only, by convention).
  ``variables``     the run's variable map (Start variables, run arguments, ``outputVar``s;
                    shared by the branches, the last write wins).
  ``last_text_output`` the last text a step produced (read and set).
  ``records``       what each agent step did (raw record tuples by node id; ``Run.records``
                    shows them as :class:`~engine.NodeRecord`).
  ``scope(node, value)`` what references resolve against at this step: the variables and the
                    built-ins (``PREVIOUS_OUTPUT`` and ``input`` = ``value``, ``iteration``, ``item``,
                    ``APPROVAL_NOTE``, ``APPROVAL_DECISION``, ``__fanout``, ``run.id``,
                    ``workflow.name``), secrets from the environment or the keyring.
  ``resolve_data(node, value, *, escape=None)`` every string of the node's data resolved:
                    ``.value`` (secrets in clear: what is sent), ``.masked`` (each secret as
                    ``••••``), ``.secrets``.
  ``mask(value, secrets)`` ``value`` with those secrets replaced by ``••••``.

The graph (indexes built once per run)
  ``node(node_id)``  the node with that id, or None.
  ``links_out(node_id)`` the execution links leaving a node: ``(handle, target)`` pairs.
  ``links_out_all()`` every node's execution links out, by node id (read only).
  ``links_in(node_id)`` the sources of the execution links into a node, in the file's order.
  ``subagents(node_id)`` the nodes linked below a node by ``subagent`` links.
  ``memo``           a per-run dict where kinds keep facts they derive from the graph (keys
                     prefixed by the kind); never snapshotted.

The branch
  ``frame``          the current branch's :class:`BranchFrame` (None before anything set one).
  ``set_frame(frame)`` change it for this branch and the branches it spawns later.
  ``live_nodes()``   the nodes where work is still in flight or waiting (a branch, deferred
                     work, a pending or queued approval): what may still arrive somewhere.
  ``reset_visits(node_ids)`` count the visits of these nodes afresh (a loop's body).

A kind's own state (kept in snapshots: see ``NodeSpec.state_key``)
  ``state(node_id, default=None)`` the state the node's kind keeps in this run.
  ``set_state(node_id, state)``, ``drop_state(node_id)`` change it.

Steps and nested runs
  ``resolve(invocation)`` the LLM provider for an agent call.
  ``library()``      the flow library this run uses (the user's default when none was given).
  ``child_run(workflow, path, call, inputs)`` a nested run of ``workflow`` (a flow step, a
                     flow called as a tool), its events relayed into this run's log.
  ``restore_child(snapshot)`` a nested run restored from its snapshot (a flow step's state).
  ``step_recorded(node, value, output, handle)`` tell the run's re-run hook a step produced
                     ``output`` (a step that ends otherwise than by returning, an approval).
  ``set_outcome(node_id, outcome)`` how the node's step ended (``Run.outcomes``).
  ``fail(node_id, message)`` fail the run (an ``error`` event, every branch cancelled).
  ``at_rest(key, closer)`` call ``await closer()`` once the run comes to rest (paused or ended:
                    ``start``/``resume`` return), then forget it: resources a run's steps share
                    (MCP connections) are kept while it runs and closed there. One per ``key``.
  ``WAITING``        what ``NodeSpec.arrive`` returns to keep waiting for more arrivals.
  Pausing: ``execute`` returns a :class:`~engine.PauseRequest`; the answer comes back through
  the kind's ``answered``.

Step policies (``timeoutMs``, ``errorMode``, retries, the ``error`` handle) are applied by the
run around ``execute`` for every kind whose spec ``works`` (``engine.run.policies``): a kind
raises :class:`~engine.NodeError` and the policy decides.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from engine.graph.templates import TemplateScope, mask_secrets, resolve_templates_masked
from engine.nodes.base import BranchFrame

if TYPE_CHECKING:  # pragma: no cover
    from engine.graph.index import GraphIndex
    from engine.graph.model import Node, Workflow

__all__ = ["RunContext", "BranchFrame", "BRANCH", "WAITING"]

Clock = Callable[[], float]
IdSource = Callable[[], str]


#: The current branch's frame (None: nothing passed yet). Each branch task runs in its own copy
#: of the context, so a frame set on one branch is seen by it and by the branches it spawns later.
BRANCH: ContextVar[BranchFrame | None] = ContextVar("flowdesk_branch", default=None)


class _Waiting:
    __slots__ = ()

    def __repr__(self) -> str:
        return "WAITING"


#: Returned by ``NodeSpec.arrive``: the arrival is held, the branch that brought it ends.
WAITING: Any = _Waiting()


class RunContext:
    """What a kind may read and do in a run (see the module docstring for each member)."""

    WAITING = WAITING

    __slots__ = (
        "_run",
        "run_id",
        "workflow",
        "initial_input",
        "max_visits",
        "emit",
        "relay",
        "now",
        "new_id",
        "resolve",
        "records",
        "sinks",
        "event_tail",
        "memo",
        "_index",
        "_nodes",
        "_out",
        "_links_in",
        "_subagents",
        "_states",
        "_live",
        "_library",
        "_recorded",
        "_outcome",
        "_fail",
        "_calls",
        "_closers",
    )

    def __init__(
        self,
        run: Any,
        *,
        emit: Callable[..., Any],
        relay: Callable[[Any], None],
        now: Clock,
        new_id: IdSource,
        resolve: Callable[[Any], Any],
        records: dict[str, tuple],
        index: GraphIndex,
        states: dict[str, Any],
        live: Callable[[], set[str]],
        library: Callable[[], Any],
        recorded: Callable[..., None],
        outcome: Callable[[str, Any], None],
        fail: Callable[[str, str], None],
    ) -> None:
        self._run = run
        self.run_id: str = run.run_id
        self.workflow: Workflow = run.workflow
        self.initial_input: str | None = run.initial_input
        self.max_visits: int = run.max_visits
        self.emit = emit
        self.relay = relay
        self.now = now
        self.new_id = new_id
        self.resolve = resolve
        self.records = records
        self.sinks: tuple[Callable[[Any], Any], ...] = ()
        self.event_tail: tuple[str, ...] = ()
        self.memo: dict[Any, Any] = {}
        # The workflow's graph index (engine/graph/index.py): nodes by id, links out and in.
        self._index = index
        self._nodes: dict[str, Node] = index.nodes
        self._out: dict[str, tuple[tuple[str, str], ...]] = index.steps_out
        self._links_in: dict[str, tuple[str, ...]] | None = None
        self._subagents: dict[str, list[str]] = index.sub_children
        self._states = states
        self._live = live
        self._library = library
        self._recorded = recorded
        self._outcome = outcome
        self._fail = fail
        self._calls = 0
        self._closers: dict[str, Callable[[], Any]] | None = None

    # ---------------------------------------------------------------- the run
    @property
    def delta_interval(self) -> float:
        return self._run.delta_interval

    @property
    def path(self) -> str | None:
        return self._run.path

    @property
    def meta(self) -> dict[str, Any]:
        return self._run.meta

    @property
    def outputs(self) -> dict[str, Any]:
        return self._run.outputs

    @property
    def variables(self) -> dict[str, Any]:
        return self._run.variables

    @property
    def last_text_output(self) -> str:
        return self._run.last_text_output

    @last_text_output.setter
    def last_text_output(self, text: str) -> None:
        self._run.last_text_output = text

    @property
    def cancelled(self) -> bool:
        return str(self._run.status) == "cancelled"

    def next_call_id(self) -> str:
        self._calls += 1
        return f"call_{self._calls}_{self.new_id()[:8]}"

    # ---------------------------------------------------------------- templates
    def scope(self, node: Node | None, value: Any) -> Any:
        builtins: dict[str, Any] = {
            "PREVIOUS_OUTPUT": value,
            "input": value,
            "run": {"id": self.run_id},
            "workflow": {"name": self.workflow.name or ""},
        }
        frame = BRANCH.get()
        if frame is not None:
            if frame.decision is not None:
                builtins["APPROVAL_DECISION"] = frame.decision
                builtins["APPROVAL_NOTE"] = frame.note or ""
            if frame.loops:  # the innermost loop's iteration (a loop's state is its iteration)
                state = self._states.get(frame.loops[-1], 1)
                if isinstance(state, dict):  # a loop over a list: its round and the round's item
                    builtins["iteration"] = state.get("iteration", 1)
                    builtins["item"] = state.get("item")
                else:
                    builtins["iteration"] = state
            if frame.fanout is not None:
                builtins["__fanout"] = frame.fanout
        return TemplateScope(self.variables, builtins)

    def resolve_data(self, node: Node, value: Any, *, escape: Callable[[str], str] | None = None) -> Any:
        data = node.data.model_dump(mode="json", exclude_none=True)
        return resolve_templates_masked(data, self.scope(node, value), escape=escape)

    @staticmethod
    def mask(value: Any, secrets: Any) -> Any:
        return mask_secrets(value, secrets) if secrets else value

    # ---------------------------------------------------------------- the graph
    def node(self, node_id: str) -> Node | None:
        return self._nodes.get(node_id)

    def links_out(self, node_id: str) -> tuple[tuple[str, str], ...]:
        return self._out.get(node_id, ())

    def links_out_all(self) -> dict[str, tuple[tuple[str, str], ...]]:
        return self._out

    def links_in(self, node_id: str) -> tuple[str, ...]:
        links = self._links_in
        if links is None:  # (from the workflow's index: engine/graph/index.py)
            links = self._links_in = {t: tuple(s) for t, s in self._index.exec_in.items()}
        return links.get(node_id, ())

    def subagents(self, node_id: str) -> list[str]:
        return self._subagents.get(node_id, [])

    # ---------------------------------------------------------------- the branch
    @property
    def frame(self) -> BranchFrame | None:
        return BRANCH.get()

    @staticmethod
    def set_frame(frame: BranchFrame | None) -> None:
        BRANCH.set(frame)

    def live_nodes(self) -> set[str]:
        return self._live()

    def reset_visits(self, node_ids: Any) -> None:
        visits = self._run.visits
        for n in node_ids:
            if n in visits:
                visits[n] = 0

    # ---------------------------------------------------------------- kinds' state
    def state(self, node_id: str, default: Any = None) -> Any:
        return self._states.get(node_id, default)

    def set_state(self, node_id: str, state: Any) -> None:
        self._states[node_id] = state

    def drop_state(self, node_id: str) -> Any:
        return self._states.pop(node_id, None)

    # ---------------------------------------------------------------- steps and nested runs
    def library(self) -> Any:
        return self._library()

    def child_run(self, workflow: Workflow, path: Any, call: str, inputs: dict[str, Any]) -> Any:
        """A nested run of ``workflow`` (a run of the same class) with ``inputs`` as its variables,
        sharing this run's clock, ids, providers and library; its events relayed here."""
        parent = self._run
        child_id = self.new_id()
        run_path = (parent.run_path + "/" if parent.run_path else "") + f"{call}:{child_id}"
        child = type(parent)(
            workflow,
            self.resolve,
            run_id=child_id,
            max_visits=self.max_visits,
            keep_events=False,
            delta_interval=parent.delta_interval,
            clock=self.now,
            id_source=self.new_id,
            library=self.library(),
            path=str(path) if path is not None else None,
            run_path=run_path,
            variables=inputs,
        )
        child.inputs = inputs
        child.add_listener(self.relay)
        return child

    def restore_child(self, snapshot: dict[str, Any]) -> Any:
        """A nested run restored from its snapshot (a flow step's state); its events relayed here."""
        parent = self._run
        child = type(parent).restore(
            snapshot,
            self.resolve,
            library=parent.library,
            clock=self.now,
            id_source=self.new_id,
            keep_events=False,
            delta_interval=parent.delta_interval,
        )
        child.add_listener(self.relay)
        return child

    def step_recorded(self, node: Node, value: Any, output: Any, handle: Any) -> None:
        self._recorded(node, value, output, handle)

    def set_outcome(self, node_id: str, outcome: Any) -> None:
        self._outcome(node_id, outcome)

    def fail(self, node_id: str, message: str) -> None:
        self._fail(node_id, message)

    # ---------------------------------------------------------------- shared resources
    def at_rest(self, key: str, closer: Callable[[], Any]) -> None:
        if self._closers is None:
            self._closers = {}
        self._closers[key] = closer

    async def rest(self) -> None:
        """The run came to rest: each ``at_rest`` closer awaited once (a failing one is logged)."""
        closers, self._closers = self._closers, None
        for key, closer in (closers or {}).items():
            try:
                await closer()
            except Exception:  # closing goes on; the process's end frees the rest
                logging.getLogger("flowdesk.run").warning("closing %s failed", key, exc_info=True)
