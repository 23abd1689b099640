"""What a run is made with: its settings, its provider resolver, its step hook, and the GC pause.

docs/design.md, "Run model (runtime semantics)". ``Run.__init__`` (engine/run/scheduler.py)
keeps on the run the slots its branch walk reads on every step (nodes, links, visits, outputs,
status, clock, sinks) and calls these for the rest: :func:`settings` sets the run's public
settings from its arguments, :func:`resolver` turns a provider into a function of the agent
call, :func:`step_hook` checks ``start_at`` and makes the hook of a run from a node or with
pinned or reused outputs (engine/run/rerun.py), :func:`workflow_errors` is the check made when
a run starts. :func:`freeze_older` and :func:`thaw` bracket ``start``/``resume``.

Invariants: nothing here reads or writes a run's private state; a plain run (nothing pinned,
reused or started from a node) gets no step hook, so its steps do not ask one.
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Mapping
from typing import Any

from engine.graph.model import Workflow
from engine.graph.validate import Issue, errors_only, validate
from engine.graph.variables import run_variables
from engine.llm.base import AgentInvocation, LLMProvider
from engine.run.rerun import StepHook, reuse_map
from engine.store import RunStore

__all__ = ["settings", "resolver", "step_hook", "workflow_errors", "freeze_older", "thaw"]


def settings(
    run: Any,
    workflow: Workflow,
    variables: Mapping[str, Any] | None,
    restoring: bool,
    *,
    initial_input: str | None,
    max_visits: int,
    delta_interval: float,
    check: bool,
    meta: dict[str, Any] | None,
    library: Any,
    path: str | None,
    run_path: str,
) -> None:
    """Set ``run``'s public settings (its ``run_id`` is set by the run)."""
    run.workflow = workflow
    # The run's variable map (docs/design.md, "Data flow: variables and templates"): Start's
    # variables overridden by the arguments, coerced; a bad or missing value refuses the run
    # here (VariableError). A restored run's are its snapshot's, as they were.
    run.variables = dict(variables or {}) if restoring else run_variables(workflow, variables)
    run.initial_input = initial_input
    run.max_visits = max_visits
    run.delta_interval = delta_interval
    run.check = check
    # Caller's settings that a later process needs to resume the run the same way
    # (for example the CLI's --provider/--model); JSON values, no secrets.
    run.meta = dict(meta or {})
    # Flows this run may run (flow/action nodes, flows as tools): the library they are looked
    # up in (None: the user's default library) and this workflow's file (relative references).
    run.library = library
    run.path = str(path) if path is not None else None
    run.run_path = run_path
    # The output of the last node to complete that has no outgoing execution link (a flow's result).
    run.result = None


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
