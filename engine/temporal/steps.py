"""The options a remote run's step activity gets: an activity with heartbeats and retries
(:func:`step_options`), or, for a short step, a local activity run inside the workflow task
(:func:`local_step_options`; the trade-off is in docs/temporal.md), which of the two a step
runs as (:func:`execute_step`, with :func:`is_quick` for an agent call quick by nature), and what
a step sent to a worker may reach (:func:`reach_of`: its permissions and MCP servers)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError
from temporalio.exceptions import TimeoutError as TimeoutError_

__all__ = [
    "execute_step",
    "is_quick",
    "LOCAL_STEPS_PATCH",
    "QUICK_STEPS_PATCH",
    "step_options",
    "local_step_options",
    "field",
    "reach_of",
    "DEFAULT_HEARTBEAT_MS",
    "SHORT_STEP_MS",
]

DEFAULT_HEARTBEAT_MS = 20_000
DEFAULT_TIMEOUT_MS = 3_600_000
TIMEOUT_GRACE_MS = 30_000
DEFAULT_ATTEMPTS = 3  # a lost worker's step is tried again on another one
SHORT_STEP_MS = 5_000  # a step whose node's timeoutMs is at most this runs as a local activity
LOCAL_GRACE_MS = 2_000  # a local step's own timeout after its timeoutMs (the worker gives it up first)


def field(data: Any, name: str) -> Any:
    value = getattr(data, name, None)
    if value is None:
        extra = getattr(data, "model_extra", None) or {}
        value = extra.get(name)
    return value


def step_options(data: Any, heartbeat_ms: int) -> dict[str, Any]:
    """The activity options for one step from the node's policy fields (defaults otherwise)."""
    timeout_ms = field(data, "timeoutMs")
    mode = field(data, "errorMode")
    retries = field(data, "maxRetries")
    delay_ms = field(data, "retryDelayMs")
    attempts = DEFAULT_ATTEMPTS
    if mode == "retry":
        attempts = 1 + (int(retries) if isinstance(retries, (int, float)) and retries >= 0 else 3)
    delay = int(delay_ms) if isinstance(delay_ms, (int, float)) and delay_ms > 0 else 1000
    # The node's timeoutMs is enforced by the scheduler itself (a durable timer here), which
    # cancels the activity, as in a local run; the server's start-to-close timeout is that plus
    # a grace period, for a worker that cannot even hear the cancellation.
    timeout = (
        int(timeout_ms) + TIMEOUT_GRACE_MS
        if isinstance(timeout_ms, (int, float)) and timeout_ms > 0
        else DEFAULT_TIMEOUT_MS
    )
    return {
        "start_to_close_timeout": timedelta(milliseconds=timeout),
        "heartbeat_timeout": timedelta(milliseconds=heartbeat_ms),
        "retry_policy": RetryPolicy(
            initial_interval=timedelta(milliseconds=delay),
            backoff_coefficient=2.0,
            maximum_attempts=attempts,
            non_retryable_error_types=["LLMError"],
        ),
        "cancellation_type": workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    }


def local_step_options(data: Any, short_step_ms: int = SHORT_STEP_MS, every: bool = False) -> dict[str, Any] | None:
    """The local activity options for a short step, or None for a step that is not short.

    A short step (its node's ``timeoutMs`` at most the run's ``shortStepMs``, or any step of a
    run whose options say ``localSteps``) runs in the worker that runs the workflow task, inside
    that task: no activity task on the server, and the next steps' bookkeeping in the same task.
    The attempt is bounded by the node's ``timeoutMs`` on the worker (sent as ``deadlineMs``: the
    workflow's durable timer cannot fire while the task is open; the step is cancelled there and
    what it logged comes back with ``timedOut``), the local activity's own timeout a little later
    for a worker that hangs; it is tried once, as the node's policy retries it (``errorMode:
    retry``) as in a local run. A worker lost mid-step loses the workflow task with it, and the
    next worker replays the run and runs the step again.
    """
    timeout_ms = field(data, "timeoutMs")
    timeout = int(timeout_ms) if isinstance(timeout_ms, (int, float)) and timeout_ms > 0 else None
    if timeout is None:
        if not every:
            return None
        timeout = DEFAULT_TIMEOUT_MS
    elif timeout > short_step_ms:
        return None
    return {
        "start_to_close_timeout": timedelta(milliseconds=timeout + LOCAL_GRACE_MS),
        "retry_policy": RetryPolicy(maximum_attempts=1),
        "cancellation_type": workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    }


def reach_of(wf: Any, node: Any) -> dict[str, Any]:
    """What a step sent to a worker may reach: the workflow's ``permissions`` and ``mcpServers``
    (as written: their secrets are resolved on the worker) and, for an agent step (``node``), its
    ``tools.mcp`` (the worker lists and calls those tools; a workflow does no I/O)."""
    out: dict[str, Any] = {}
    tools = getattr(getattr(getattr(node, "data", None), "tools", None), "mcp", None)
    if tools:
        out["mcpTools"] = tools
    extra = getattr(wf, "model_extra", None) or {}
    servers = getattr(wf, "mcpServers", None) or extra.get("mcpServers")
    if servers:
        out["mcpServers"] = servers
    permissions = getattr(wf, "permissions", None)
    if permissions is not None:
        out["permissions"] = permissions.model_dump(mode="json", exclude_none=True)
    return out


LOCAL_STEPS_PATCH = "flowdesk-local-steps"
QUICK_STEPS_PATCH = "flowdesk-quick-steps"


def is_quick(owner: Any, inv: Any) -> bool:
    """Whether an agent call is quick by nature: answered by the offline ``echo`` provider (the
    run's forced provider, or the node's own with no subagents) with no tools that reach out
    (web search, library flows, MCP servers). Decided from the run's input alone, so every
    worker replays it the same way."""
    forced = (owner.started.meta or {}).get("provider")
    provider = forced or inv.provider
    if provider != "echo" or (not forced and inv.subagents):
        return False
    return not (any((inv.tools or {}).values()) or inv.flows or inv.mcp_tools)


async def execute_step(owner: Any, name: str, request: dict[str, Any], data: Any, quick: bool = False) -> Any:
    """Run one step's activity: a local activity for a short step (or one ``quick`` by nature,
    unless the run said ``localSteps: false``), else a (remote) activity."""
    every = owner.local_steps is True
    local = None if owner.local_steps is False else local_step_options(data, owner.short_step_ms, every)
    if local is None and quick and owner.local_steps is None:
        # Quick by nature (an echo agent, a library lookup) and a local step by default. A run
        # whose worker did not do this yet keeps such steps activities when replayed here.
        if workflow.patched(QUICK_STEPS_PATCH):
            local = local_step_options(data, owner.short_step_ms, every=True)
    # A run started before workers had local steps ran its short steps as activities: replayed
    # here, it keeps them (Temporal's patch marker, once per run that has a short step).
    elif local is not None and not workflow.patched(LOCAL_STEPS_PATCH):
        local = None
    if local is None:
        return await workflow.execute_activity(name, request, **step_options(data, owner.heartbeat_ms))
    timeout_ms = field(data, "timeoutMs")
    if isinstance(timeout_ms, (int, float)) and timeout_ms > 0:
        request = {**request, "deadlineMs": int(timeout_ms)}
    try:
        return await workflow.execute_local_activity(name, request, **local)
    except ActivityError as err:
        if isinstance(err.cause, TimeoutError_):  # its timeoutMs passed: as the scheduler's own timer says
            raise TimeoutError() from None
        raise
