"""What a run is made with: its settings, its provider resolver, its step hook, and the GC pause.

docs/design.md, "Run model (runtime semantics)". ``Run.__init__`` (engine/run/scheduler.py)
keeps on the run the slots its branch walk reads on every step (nodes, links, clock, the kinds'
specs) and calls these for the rest: :class:`RunFields` is the run's public fields (settings
from its arguments, where it stands) and its events, :func:`resolver` turns a provider into a
function of the agent call, :func:`step_hook` checks ``start_at`` and makes the hook of a run
from a node or with pinned or reused outputs (engine/run/rerun.py), :func:`workflow_errors` is
the check made when a run starts and :func:`refuse` fails a run that does not pass it.
:func:`freeze_older` and :func:`thaw` bracket ``start``/``resume``. :class:`RunStateError` is
what an operation the run's status does not allow raises (resume a run that is not paused).

Invariants: nothing here reads or writes the scheduler's private state; a plain run (nothing
pinned, reused or started from a node) gets no step hook, so its steps do not ask one.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping
from typing import Any

from engine.errors import FlowdeskError
from engine.graph.model import Workflow
from engine.graph.validate import Issue, errors_only, validate
from engine.graph.variables import run_variables
from engine.llm.base import AgentInvocation, LLMProvider
from engine.run.emitter import EventCallback, EventSource
from engine.run.events import SYSTEM_NODE, EventType, RunStatus
from engine.run.rerun import StepHook, reuse_map
from engine.store import RunStore

__all__ = [
    "RunFields",
    "RunStateError",
    "DEFAULT_MAX_VISITS",
    "resolver",
    "step_hook",
    "workflow_errors",
    "refuse",
    "freeze_older",
    "thaw",
]

#: How many times a run takes one node's step before it fails (an execution loop cannot run for ever).
DEFAULT_MAX_VISITS = 25


class RunStateError(FlowdeskError, RuntimeError):
    """An operation that the run's current state does not allow (resume a run that is not paused, ...)."""


class RunFields(EventSource):
    """A run's public fields: its settings (what it was made with) and where it stands (status,
    outputs, visits, the pending input's flags, times), with its events (``EventSource``).

    Callers, snapshots (engine/run/snapshot.py) and the kinds' context read these; the
    scheduler (``Run``, a subclass) adds the machinery that changes them. Slots, not an
    instance dict: a run has more attributes than CPython 3.11 keeps in a dict whose keys are
    shared between instances (30), so every Run() copied and regrew its dict; with slots a run
    starts (and a paused run is restored) 1-2 µs sooner, and the fields its steps read are at
    fixed offsets.
    """

    __slots__ = (
        "workflow",
        "variables",
        "run_id",
        "initial_input",
        "max_visits",
        "delta_interval",
        "check",
        "meta",
        "library",
        "path",
        "result",
        "inputs",
        "status",
        "waiting_for_input",
        "current_node_id",
        "error",
        "outputs",
        "visits",
        "last_text_output",
        "started_at",
        "ended_at",
        "reused_from",
        "start_at",
    )

    def __init__(
        self,
        workflow: Workflow,
        variables: Mapping[str, Any] | None,
        restoring: bool,
        *,
        keep_events: bool,
        on_event: EventCallback | None,
        run_id: str,
        initial_input: str | None,
        max_visits: int,
        delta_interval: float,
        check: bool,
        meta: dict[str, Any] | None,
        library: Any,
        path: str | None,
        run_path: str,
        start_at: str | None,
        clock: Callable[[], float],
    ) -> None:
        EventSource.__init__(self, keep_events, on_event, clock)
        self.workflow = workflow
        # The run's variable map (docs/design.md, "Data flow: variables and templates"): Start's
        # variables overridden by the arguments, coerced; a bad or missing value refuses the run
        # here (VariableError). A restored run's are its snapshot's, as they were.
        self.variables: dict[str, Any] = dict(variables or {}) if restoring else run_variables(workflow, variables)
        self.run_id = run_id
        self.initial_input = initial_input
        self.max_visits = max_visits
        self.delta_interval = delta_interval
        self.check = check
        # Caller's settings that a later process needs to resume the run the same way
        # (for example the CLI's --provider/--model); JSON values, no secrets.
        self.meta = dict(meta or {})
        # Flows this run may run (flow/action nodes, flows as tools): the library they are looked
        # up in (None: the user's default library) and this workflow's file (relative references).
        self.library = library
        self.path = str(path) if path is not None else None
        self.run_path = run_path
        self.start_at = start_at  # (a run from a node: engine/run/rerun.py)
        self.reused_from: str | None = None
        # The output of the last node to complete that has no outgoing execution link (a flow's result).
        self.result: Any = None
        self.status = RunStatus.PENDING
        self.waiting_for_input = False
        self.current_node_id: str | None = None
        self.error: str | None = None
        self.outputs: dict[str, Any] = {}
        self.visits: dict[str, int] = {}
        self.last_text_output: str = ""
        self.started_at: float | None = None
        self.ended_at: float | None = None


def resolver(
    provider: LLMProvider | Callable[[AgentInvocation], LLMProvider],
) -> Callable[[AgentInvocation], LLMProvider]:
    """The provider for each agent call: ``provider`` itself for every call, or what the
    function ``provider`` returns for it."""
    if hasattr(provider, "complete"):
        single = provider
        return lambda _inv: single  # type: ignore[return-value]
    return provider


def step_hook(
    ctx: Any, nodes: Mapping[str, Any], *, start_at: str | None, reuse_from: Any, store: Any, any_pinned: bool
) -> tuple[StepHook | None, str | None]:
    """The run's step hook (None for a plain run) and the run id its outputs are reused from.

    ``start_at`` must name a node (ValueError); ``reuse_from`` is a run id in ``store`` (default
    the user's run store) or a mapping of node ids to recorded executions."""
    if start_at is not None and start_at not in nodes:
        raise ValueError(f"there is no node '{start_at}' to run from")
    if store is None and isinstance(reuse_from, str):  # a run id: in the user's run store
        store = RunStore()
    reuse, reused_from = reuse_map(reuse_from, store)
    # Made only when a step may be pinned, reused or recorded: a plain run does not scan for it.
    if any_pinned or reuse or start_at is not None:
        return StepHook(ctx, reuse=reuse, start_at=start_at, any_pinned=any_pinned), reused_from
    return None, reused_from


def workflow_errors(workflow: Workflow, library: Any, path: str | None) -> list[Issue]:
    """What refuses the run when it starts (a run made with ``check=True``)."""
    return errors_only(validate(workflow, library=library, path=path))


def refuse(run: Any, errors: list[Issue], emit: Callable[..., Any], set_status: Callable[..., None]) -> None:
    """Fail ``run`` before its first step: its workflow has ``errors`` (one ``error`` event each,
    at the first node concerned, then the status ``failed`` naming the first)."""
    run.status = RunStatus.RUNNING
    for issue in errors:
        emit(issue.node_ids[0] if issue.node_ids else SYSTEM_NODE, EventType.ERROR, issue.message, {"code": issue.code})
    run.error = f"The workflow has {len(errors)} error(s): {errors[0].message}"
    set_status(RunStatus.FAILED, run.error)


_frozen_runs = 0


def freeze_older() -> None:
    """While any run is live, objects that existed before it are left out of the cyclic GC.

    A run with thousands of concurrent branches creates enough long-lived objects (tasks,
    frames) to trigger full collections, and each one rescans the whole loaded graph (tens
    of thousands of pydantic objects): measured at 10,000 branches, 100 ms of 270 ms.
    ``gc.freeze()`` parks the older objects (O(1)); :func:`thaw` returns them when the last
    live run settles, so nothing is kept from collection for longer than a run. Two plain
    calls around ``start``/``resume`` (an async context manager cost 2.4 µs each time).
    """
    global _frozen_runs
    if _frozen_runs == 0:
        gc.freeze()
    _frozen_runs += 1


def thaw() -> None:
    global _frozen_runs
    _frozen_runs -= 1
    if _frozen_runs == 0:
        gc.unfreeze()
