"""``FlowdeskRun``: a Flowdesk run as a Temporal workflow.

The workflow drives the engine's own scheduler (:class:`engine.Run`), unchanged: its clock is
``workflow.now()`` and its ids ``workflow.uuid4()``, so a replay rebuilds the same run, events
included. Agent steps resolve their provider to :class:`_ActivityProvider`, which runs the
model call as the :data:`AGENT_ACTIVITY` activity with the node's step policy (``timeoutMs``
-> start-to-close timeout; ``errorMode: retry`` with ``maxRetries``/``retryDelayMs`` -> the
retry policy for a lost worker or a timed-out attempt; a model's own error is not retried by
Temporal: the node's policy handles it as in a local run).

Input (JSON, no secrets): ``{workflow, runId, initialInput, maxVisits, meta, options}``.
* update ``approve`` ``{nodeId, decision, note, output}`` answers the pending approval
  (refused when the run is not waiting at that node);
* query ``events`` ``(after)`` -> ``{events, next, status, pending, queued, error}``: the run's
  events after sequence number ``after`` (each ``[nodeId, type, content, timestamp,
  extraJson, path]``), at most :data:`PAGE` at a time;
* cancelling the workflow cancels the run (in-flight model calls are cancelled and closed).
A run that fails ends the workflow as failed; a cancelled run as cancelled.
"""

from __future__ import annotations

import asyncio
from collections import deque
from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError
from temporalio.exceptions import CancelledError as TemporalCancelledError

with workflow.unsafe.imports_passed_through():
    from ..errors import FlowdeskError
    from ..events import RunStatus
    from ..llm.base import LLMError, LLMResult
    from ..model import parse_workflow
    from ..runtime import Run
    from . import AGENT_ACTIVITY, WORKFLOW_TYPE
    from .activities import invocation_to_json

__all__ = ["FlowdeskRunWorkflow", "PAGE", "step_options"]

PAGE = 2000
DEFAULT_HEARTBEAT_MS = 20_000
DEFAULT_TIMEOUT_MS = 3_600_000
TIMEOUT_GRACE_MS = 30_000
DEFAULT_ATTEMPTS = 3  # a lost worker's step is tried again on another one


def _field(data: Any, name: str) -> Any:
    value = getattr(data, name, None)
    if value is None:
        extra = getattr(data, "model_extra", None) or {}
        value = extra.get(name)
    return value


def step_options(data: Any, heartbeat_ms: int) -> dict[str, Any]:
    """The activity options for one step from the node's policy fields (defaults otherwise)."""
    timeout_ms = _field(data, "timeoutMs")
    mode = _field(data, "errorMode")
    retries = _field(data, "maxRetries")
    delay_ms = _field(data, "retryDelayMs")
    attempts = DEFAULT_ATTEMPTS
    if mode == "retry":
        attempts = 1 + (int(retries) if isinstance(retries, (int, float)) and retries >= 0 else 3)
    delay = int(delay_ms) if isinstance(delay_ms, (int, float)) and delay_ms > 0 else 1000
    # The node's timeoutMs is enforced by the scheduler itself (a durable timer here), which
    # cancels the activity, as in a local run; the server's start-to-close timeout is that plus
    # a grace period, for a worker that cannot even hear the cancellation.
    timeout = int(timeout_ms) + TIMEOUT_GRACE_MS if isinstance(timeout_ms, (int, float)) and timeout_ms > 0 \
        else DEFAULT_TIMEOUT_MS
    return {
        "start_to_close_timeout": timedelta(milliseconds=timeout),
        "heartbeat_timeout": timedelta(milliseconds=heartbeat_ms),
        "retry_policy": RetryPolicy(initial_interval=timedelta(milliseconds=delay), backoff_coefficient=2.0,
                                    maximum_attempts=attempts, non_retryable_error_types=["LLMError"]),
        "cancellation_type": workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    }


class _ActivityProvider:
    """The provider every agent step of a remote run gets: the call is an activity."""

    name = "temporal"

    def __init__(self, owner: "FlowdeskRunWorkflow") -> None:
        self.owner = owner

    async def complete(self, inv: Any, ctx: Any) -> LLMResult:
        owner = self.owner
        node = owner.nodes.get(inv.node_id)
        options = step_options(node.data if node is not None else None, owner.heartbeat_ms)
        request = {"invocation": invocation_to_json(inv), "meta": owner.run.meta}
        run = owner.run
        try:
            answer = await workflow.execute_activity(AGENT_ACTIVITY, request, **options)
        except ActivityError as err:
            cause = err.cause
            if isinstance(cause, TemporalCancelledError):  # the step was cancelled (the run was): as locally
                raise asyncio.CancelledError() from None
            if isinstance(cause, ApplicationError) and cause.type == "LLMError":
                for node_id, kind, content, extra_json in (cause.details[0] if cause.details else ()):
                    run._emit(node_id, kind, content, extra_json=extra_json)
                raise LLMError(cause.message) from None
            raise LLMError(f"the step could not be completed on a worker: {cause or err}") from None
        for node_id, kind, content, extra_json in answer.get("events") or ():
            run._emit(node_id, kind, content, extra_json=extra_json)
        return LLMResult(answer["text"], answer.get("usage"), answer.get("model"))


@workflow.defn(name=WORKFLOW_TYPE)
class FlowdeskRunWorkflow:
    def __init__(self) -> None:
        self.events: list[list[Any]] = []
        self.answers: deque[dict[str, Any]] = deque()
        self.run: Run | None = None
        self.nodes: dict[str, Any] = {}
        self.heartbeat_ms = DEFAULT_HEARTBEAT_MS
        self.definition: dict[str, Any] | None = None

    def _record(self, ev: Any) -> None:
        self.events.append([ev[0], ev[1], ev[2], ev[3], ev[4], ev[5] if len(ev) > 5 else ""])

    def _memo(self) -> None:
        run = self.run
        workflow.upsert_memo({"status": str(run.status), "pending": run.pending_approval})

    @workflow.run
    async def run_flow(self, request: dict[str, Any]) -> dict[str, Any]:
        self.definition = request["workflow"]
        wf = parse_workflow(request["workflow"])
        self.nodes = {n.id: n for n in wf.nodes}
        options = request.get("options") or {}
        self.heartbeat_ms = int(options.get("heartbeatMs") or DEFAULT_HEARTBEAT_MS)
        provider = _ActivityProvider(self)
        try:
            run = self.run = Run(wf, lambda _inv: provider, run_id=request.get("runId") or workflow.info().workflow_id,
                                 initial_input=request.get("initialInput"),
                                 max_visits=int(request.get("maxVisits") or 25), meta=request.get("meta") or {},
                                 keep_events=False, on_event=self._record, variables=request.get("variables"),
                                 clock=lambda: workflow.now().timestamp(), id_source=lambda: workflow.uuid4().hex)
        except FlowdeskError as err:  # a variable that does not coerce: the run is refused, not retried
            raise ApplicationError(str(err), type="RunRefused", non_retryable=True) from None
        try:
            status = await run.start()
            while status == RunStatus.PAUSED:
                self._memo()
                await workflow.wait_condition(lambda: bool(self.answers))
                answer = self.answers.popleft()
                if answer.get("output") is not None and run._pending is not None:
                    run._pending = (run._pending[0], answer["output"])  # the reviewer's edited output goes on
                status = await run.resume(answer["decision"], answer.get("note") or "")
        except asyncio.CancelledError:
            run.cancel("Cancelled on the Temporal server.")
            await run.wait()
            self._memo()
            raise
        self._memo()
        if status == RunStatus.FAILED:
            raise ApplicationError(run.error or "the run failed", type="RunFailed", non_retryable=True)
        return {"status": str(status), "outputs": run.outputs, "events": len(self.events)}

    @workflow.update(name="approve")
    async def approve(self, answer: dict[str, Any]) -> dict[str, Any]:
        self.answers.append(answer)
        return {"accepted": True, "nodeId": answer.get("nodeId")}

    @approve.validator
    def _check_answer(self, answer: dict[str, Any]) -> None:
        run = self.run
        if not isinstance(answer, dict) or answer.get("decision") not in ("approve", "reject"):
            raise ValueError("an answer is {nodeId, decision: approve|reject, note, output}")
        if run is None or run.status != RunStatus.PAUSED or run.pending_approval is None or self.answers:
            raise ValueError(f"the run is not waiting for an approval (status {run.status if run else 'pending'})")
        node_id = answer.get("nodeId")
        if node_id and node_id != run.pending_approval:
            raise ValueError(f"the run is waiting at approval '{run.pending_approval}', not '{node_id}'")

    @workflow.query(name="events")
    def events_after(self, after: int = 0) -> dict[str, Any]:
        run = self.run
        after = max(0, int(after or 0))
        page = self.events[after:after + PAGE]
        return {"events": page, "next": after + len(page), "total": len(self.events),
                "status": str(run.status) if run else "pending",
                "pending": run.pending_approval if run else None,
                "queued": run.queued_approvals if run else [], "error": run.error if run else None,
                "pendingInput": run.pending_input() if run else None,
                "queuedInputs": [[n, v] for n, v in run.queued_approval_inputs()] if run else [],
                "answering": bool(self.answers)}

    @workflow.query(name="definition")
    def workflow_definition(self) -> dict[str, Any] | None:
        """The workflow that runs (as its JSON file has it), for clients that show the run."""
        return self.definition
