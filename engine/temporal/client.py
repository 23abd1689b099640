"""Clients of remote runs: submit, follow (the ``events`` query), answer, cancel, list."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Mapping
from typing import Any

from temporalio.api.common.v1 import WorkflowExecution
from temporalio.api.enums.v1 import EventType, TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest, GetWorkflowExecutionHistoryRequest
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.service import RPCError

from engine.graph.model import Workflow, parse_workflow, workflow_to_dict
from engine.run.costs import readable_prices, usage_cost
from engine.run.events import RunEvent
from engine.run.scheduler import uuid_ids
from engine.temporal import DEFAULT_NAMESPACE, DEFAULT_TASK_QUEUE, WORKFLOW_TYPE, TemporalUnavailable
from engine.temporal.converter import DATA_CONVERTER

__all__ = [
    "connect",
    "connect_reason",
    "submit",
    "follow",
    "answer",
    "cancel",
    "list_runs",
    "event_from_row",
    "RemoteRun",
    "ProgressWatch",
    "task_queue_has_worker",
    "paused_runs",
]

POLL_EVERY = 0.2
FINAL = ("completed", "failed", "cancelled")
# History events after which a run's own events may have changed: its events are made only in
# workflow tasks, and a closed run makes no more.
_PROGRESS = {
    EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
    EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
}


async def connect(address: str, namespace: str = DEFAULT_NAMESPACE) -> Client:
    try:
        return await Client.connect(address, namespace=namespace, data_converter=DATA_CONVERTER)
    except Exception as err:  # the SDK raises RuntimeError for a refused connection
        raise TemporalUnavailable(
            f"cannot reach the Temporal server at {address} (namespace {namespace}): {connect_reason(err)}"
        ) from None


_REASON = re.compile(r'\b(?:message|error): "([^"]+)"')


def connect_reason(err: BaseException) -> str:
    """The reason inside the SDK's connection error ("Connection refused"), not the Rust
    ``tonic::transport::Error(...)`` text it is wrapped in; the whole text when none is found."""
    text = str(err)
    found = _REASON.findall(text)
    return found[-1] if found else text


def event_from_row(row: list[Any]) -> RunEvent:
    node_id, kind, content, ts, extra_json, path = row
    return RunEvent(node_id, kind, content, timestamp=ts, extra_json=extra_json, path=path or "")


async def submit(
    client: Client,
    workflow: Workflow,
    *,
    run_id: str | None = None,
    initial_input: str | None = None,
    max_visits: int = 25,
    meta: dict[str, Any] | None = None,
    task_queue: str = DEFAULT_TASK_QUEUE,
    options: dict[str, Any] | None = None,
    variables: dict[str, Any] | None = None,
    path: str | None = None,
) -> WorkflowHandle:
    """Start a run on the server (the workflow id is the run id); returns its handle. ``path``: the
    workflow's file, where its ``flow`` steps' relative references are looked up (on the workers)."""
    run_id = run_id or uuid_ids()
    request = {
        "workflow": workflow_to_dict(workflow),
        "runId": run_id,
        "initialInput": initial_input,
        "maxVisits": max_visits,
        "meta": dict(meta or {}),
        "options": dict(options or {}),
        "variables": dict(variables) if variables else None,
        "path": str(path) if path is not None else None,
    }
    return await client.start_workflow(
        WORKFLOW_TYPE,
        request,
        id=run_id,
        task_queue=task_queue,
        memo={"workflowName": workflow.name or "", "status": "running", "initialInput": (initial_input or "")[:200]},
    )


class RemoteRun:
    """What a client knows of a remote run after following it (the last ``events`` answer)."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.next = 0
        self.status = "pending"
        self.pending: str | None = None
        self.error: str | None = None
        self.pending_input: Any = None
        self.queued: list[tuple[str, Any]] = []


async def _query(handle: WorkflowHandle, after: int) -> dict[str, Any]:
    return await handle.query("events", after)


class ProgressWatch:
    """Wakes a follower when a quiet run may have new events: a long poll of the run's history
    (``wait_new_event``, answered by the server alone; the run's events are made only in
    workflow tasks, so a completed task is when to query again). A run waiting on a long step
    thus costs its workers no queries (each query goes through a worker), and its next events
    are seen as soon as the task that made them completes."""

    def __init__(self, run_id: str) -> None:
        self._execution = WorkflowExecution(workflow_id=run_id)
        self._token = b""
        self.closed = False

    async def wait(self, client: Client, seen: int) -> bool:
        """Until a workflow task after history event ``seen`` (the one that made the events last
        read) completes (True), or the run closes (False: there is no more to wait for)."""
        while not self.closed:
            answer = await client.workflow_service.get_workflow_execution_history(
                GetWorkflowExecutionHistoryRequest(
                    namespace=client.namespace,
                    execution=self._execution,
                    next_page_token=self._token,
                    wait_new_event=True,
                    skip_archival=True,
                )
            )
            self._token = answer.next_page_token
            self.closed = not self._token
            if any(e.event_type in _PROGRESS and e.event_id > seen + 1 for e in answer.history.events):
                return True
        return False


async def follow(
    client: Client | None,
    run_id: str,
    on_event: Callable[[RunEvent], None],
    *,
    after: int = 0,
    state: RemoteRun | None = None,
    settle: bool = True,
    handle: Any = None,
) -> RemoteRun:
    """Pass the run's events after ``after`` to ``on_event`` as they come, until it pauses or ends
    (``settle=False``: until the events so far are passed). ``handle``: what to query instead of
    ``client``'s handle of the run (anything with ``async query(name, after)``, and
    ``async wait_progress(seen)`` to wait as :class:`ProgressWatch` does; else it is polled)."""
    progress: Any = None  # (seen) -> when to query again
    if handle is None:
        if client is None:
            raise ValueError("follow() needs a client or a handle")
        handle = client.get_workflow_handle(run_id)
        watch = ProgressWatch(run_id)
        progress = lambda seen: watch.wait(client, seen)  # noqa: E731
    else:
        progress = getattr(handle, "wait_progress", None)
    state = state or RemoteRun(run_id)
    state.next = after
    # While events come, a query every POLL_EVERY (one answer takes many events); while the run
    # is quiet, a long poll of its history.
    while True:
        try:
            page = await _query(handle, state.next)
        except RPCError as err:
            raise TemporalUnavailable(f"cannot follow run {run_id}: {err.message}") from None
        for row in page["events"]:
            on_event(event_from_row(row))
        state.next = page["next"]
        state.status, state.pending, state.error = page["status"], page["pending"], page["error"]
        state.pending_input = page.get("pendingInput")
        state.queued = [(n, v) for n, v in page.get("queuedInputs") or ()]
        if state.next < page["total"]:
            continue
        if not settle:
            return state
        if state.status in FINAL or (state.status == "paused" and not page.get("answering")):
            return state
        if progress is None or page["events"]:
            await asyncio.sleep(POLL_EVERY)
            continue
        try:
            if await progress(int(page.get("historyLength") or 0)) is False:  # closed: poll
                progress = None
        except RPCError:  # the history cannot be read: poll
            progress = None


async def definition(client: Client, run_id: str) -> Workflow:
    """The workflow a remote run runs."""

    try:
        data = await client.get_workflow_handle(run_id).query("definition")
    except RPCError as err:
        raise TemporalUnavailable(f"there is no run '{run_id}' on the Temporal server ({err.message})") from None
    return parse_workflow(data)


async def answer(
    client: Client,
    run_id: str,
    decision: str,
    note: str = "",
    *,
    node_id: str | None = None,
    output: Any = None,
    arguments: Any = None,
) -> None:
    handle = client.get_workflow_handle(run_id)
    update = {"nodeId": node_id, "decision": decision, "note": note, "output": output}
    if arguments is not None:  # a tool call's edited arguments
        update["arguments"] = arguments
    await handle.execute_update("approve", update)


async def cancel(client: Client, run_id: str) -> None:
    await client.get_workflow_handle(run_id).cancel()


_STATUS = {
    WorkflowExecutionStatus.COMPLETED: "completed",
    WorkflowExecutionStatus.FAILED: "failed",
    WorkflowExecutionStatus.CANCELED: "cancelled",
    WorkflowExecutionStatus.TERMINATED: "cancelled",
    WorkflowExecutionStatus.TIMED_OUT: "failed",
}


LIST_SCAN = 5000  # runs read from the server's visibility store at most, to sort them


def _spent(memo: Mapping[str, Any], prices: Any) -> tuple[int, float | None]:
    """(tokens, cost) from a run's memo (``usage``: ``{node: [prompt, completion, model]}``),
    priced from this computer's catalogue as the local history prices its runs."""
    usage, answered = {}, {}
    for nid, row in (memo.get("usage") or {}).items():
        try:
            p, c, model = row
            usage[nid] = (int(p), int(c))
        except (TypeError, ValueError):
            continue
        if isinstance(model, str) and model:
            answered[nid] = model
    return usage_cost(usage, {}, prices, answered) if usage else (0, None)


async def list_runs(client: Client, *, limit: int = 20) -> list[dict[str, Any]]:
    """Runs on the server, newest first (the server lists open runs first: sorted here), with
    the tokens and cost each spent, from Temporal's visibility API."""
    found = []
    prices = readable_prices()
    async for ex in client.list_workflows(f"WorkflowType = '{WORKFLOW_TYPE}'", limit=max(limit, LIST_SCAN)):
        if ex.parent_id:  # a flow step's nested run: its events are in its parent's log
            continue
        memo = await ex.memo()
        status = (_STATUS.get(ex.status) if ex.status is not None else None) or memo.get("status") or "running"
        ended = ex.close_time.timestamp() if ex.close_time else None
        tokens, cost = _spent(memo, prices)
        found.append(
            {
                "id": ex.id,
                "status": status,
                "workflowName": memo.get("workflowName", ""),
                "initialInput": memo.get("initialInput", ""),
                "pending": memo.get("pending"),
                "startedAt": ex.start_time.timestamp(),
                "duration": (ended - ex.start_time.timestamp()) if ended else None,
                "taskQueue": ex.task_queue,
                "tokens": tokens,
                "cost": cost,
            }
        )
    found.sort(key=lambda r: r["startedAt"], reverse=True)
    return found[:limit]


async def paused_runs(client: Client) -> list[dict[str, Any]]:
    """The runs waiting for a decision on the server (open runs whose memo says ``paused``), with
    what the memo keeps of the wait: ``pending`` (the node), ``prompt``, ``waitingSince``,
    ``options``, ``deadline``, ``onTimeout`` (runs of older workers have only ``pending``)."""
    found = []
    query = f"WorkflowType = '{WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'"
    async for ex in client.list_workflows(query, limit=LIST_SCAN):
        if ex.parent_id:  # a flow step's nested run: its parent waits (and is answered) for it
            continue
        memo = await ex.memo()
        if memo.get("status") != "paused":
            continue
        found.append(
            {
                "id": ex.id,
                "workflowName": memo.get("workflowName", ""),
                "pending": memo.get("pending"),
                "prompt": memo.get("prompt", ""),
                "waitingSince": memo.get("waitingSince"),
                "options": memo.get("options") or [],
                "deadline": memo.get("deadline"),
                "onTimeout": memo.get("onTimeout"),
                "startedAt": ex.start_time.timestamp(),
            }
        )
    return found


async def task_queue_has_worker(client: Client, task_queue: str) -> bool:
    """Whether a worker has polled ``task_queue`` lately (the server's list of its pollers)."""
    answer = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace,
            task_queue=TaskQueue(name=task_queue),
            task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
        )
    )
    return bool(answer.pollers)


def heartbeat_options(ms: int | None) -> dict[str, Any]:
    return {"heartbeatMs": ms} if ms else {}
