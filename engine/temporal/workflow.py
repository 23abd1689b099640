"""``FlowdeskRun``: a Flowdesk run as a Temporal workflow.

The workflow drives the engine's own scheduler (:class:`engine.Run`), unchanged: its clock is
``workflow.now()`` and its ids ``workflow.uuid4()``, so a replay rebuilds the same run, events
included. Agent steps resolve their provider to :class:`_ActivityProvider`, which runs the
model call as the :data:`AGENT_ACTIVITY` activity with the node's step policy (``timeoutMs``
-> start-to-close timeout; ``errorMode: retry`` with ``maxRetries``/``retryDelayMs`` -> the
retry policy for a lost worker or a timed-out attempt; a model's own error is not retried by
Temporal: the node's policy handles it as in a local run).

A short step (its node's ``timeoutMs`` at most the run's ``shortStepMs``, 5 s by default, or
every step of a run with ``localSteps``) runs as a local activity instead, inside the workflow
task (:mod:`engine.temporal.steps`).

Every other working step (a kind whose spec ``works`` and does not go ``through_run``: ``http``,
``fetch``, plug-in kinds) runs whole as the :data:`STEP_ACTIVITY` activity with the same options
(the registry says which: :class:`_RemoteSpecs`); its templates, secrets included, are resolved
on the worker. ``flow``/``action`` steps run their flow as a child ``FlowdeskRun`` (found in the
worker's library by the :data:`FLOW_ACTIVITY` activity): the child signals its events to the
parent (``child`` signal, in order, before it pauses or ends), so the parent's log has them with
their run path as a local nested run's; an approval inside the child pauses the parent, and
the parent's answer is signalled to the child (``answer`` signal).

Input (JSON, no secrets): ``{workflow, runId, initialInput, maxVisits, meta, options, variables,
path, parent}`` (``path``: the workflow's file, for relative flow references; ``parent``
``{workflowId, nodeId, runPath}`` for a child).
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
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError
from temporalio.exceptions import CancelledError as TemporalCancelledError

from engine.errors import FlowdeskError
from engine.graph.model import parse_workflow
from engine.graph.templates import find_references
from engine.graph.variables import run_variables
from engine.llm.base import LLMError, LLMResult
from engine.llm.tools import pending_from_json
from engine.nodes import NodeError, PauseRequest, spec_for
from engine.nodes.approval import normalise_decision
from engine.nodes.base import resolve_for_step
from engine.nodes.flow import Subflow, describe
from engine.run.costs import run_costs
from engine.run.events import RunEvent, RunStatus, format_timestamp
from engine.run.scheduler import Run
from engine.run.state import RunState
from engine.temporal import AGENT_ACTIVITY, FLOW_ACTIVITY, STEP_ACTIVITY, WORKFLOW_TYPE
from engine.temporal.activities import invocation_to_json
from engine.temporal.steps import (
    DEFAULT_HEARTBEAT_MS,
    QUICK_STEPS_PATCH,
    SHORT_STEP_MS,
    execute_step,
    field,
    is_quick,
    reach_of,
)

__all__ = ["FlowdeskRunWorkflow", "PAGE"]

PAGE = 2000


def _uses_secrets(node: Any) -> bool:
    """Whether an agent's own data refers to ``secrets.NAME`` or ``env.NAME`` (resolved here in the
    workflow, the prompt sent would hold the value, and an activity's input is kept in the
    server's history)."""

    data = node.data
    return any(
        ref.name in ("secrets", "env")
        for f in ("userPrompt", "systemPrompt", "agentName", "model")
        for ref in find_references(str(getattr(data, f, "") or ""))
    )


def _log(ctx: Any, rows: Any) -> None:
    """Log the events an activity made: its own (``[node, type, content, extraJson]``) and those of
    a nested run it ran (a flow called as a tool: ``[..., timestamp, runPath]``), as a local run logs them."""
    for row in rows or ():
        node_id, kind, content, extra_json = row[:4]
        if len(row) > 5 and row[5]:
            ctx.relay(RunEvent(node_id, kind, content, timestamp=row[4], extra_json=extra_json, path=row[5]))
        else:
            ctx.emit(node_id, kind, content, extra_json=extra_json)


def _activity_error(err: ActivityError, ctx: Any) -> BaseException:
    """What a failed step activity means to the scheduler (events it made are logged first)."""
    cause = err.cause
    if isinstance(cause, TemporalCancelledError):  # the step was cancelled (the run was): as locally
        return asyncio.CancelledError()
    if isinstance(cause, ApplicationError) and cause.type in ("NodeError", "LLMError"):
        _log(ctx, cause.details[0] if cause.details else ())
        return (NodeError if cause.type == "NodeError" else LLMError)(cause.message)
    return NodeError(f"the step could not be completed on a worker: {cause or err}")


class _ActivityStep:
    """A working kind's spec as a remote run's steps see it: ``execute`` is the step activity
    (everything else is the kind's own spec)."""

    def __init__(self, spec: Any, owner: FlowdeskRunWorkflow) -> None:
        self._spec = spec
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spec, name)

    async def execute(self, ctx: Any, node: Any, value: Any) -> Any:
        owner = self._owner
        scope = ctx.scope(node, value)
        builtins = {k: v for k, v in scope.builtins.items() if k not in ("PREVIOUS_OUTPUT", "input")}
        request = {
            "node": node.model_dump(mode="json"),
            "value": value,
            "variables": dict(scope.variables),
            "builtins": builtins,
            "initialInput": ctx.initial_input,
            "lastText": ctx.last_text_output,
            "meta": ctx.meta,
            # a flow the step runs nested (a code step's call_flow, a script's callAction)
            "path": ctx.path,
            "runPath": owner.started.run_path,
            "maxVisits": ctx.max_visits,
        }
        # What the step may reach (code, script, http, fetch, mcp) and the MCP servers it may use.
        request.update({k: v for k, v in reach_of(ctx.workflow, None).items() if k != "mcpTools"})
        try:
            answer = await execute_step(owner, STEP_ACTIVITY, request, node.data)
        except ActivityError as err:
            raise _activity_error(err, ctx) from None
        _log(ctx, answer.get("events"))
        if answer.get("timedOut"):  # a short step's timeoutMs ran out on the worker: as the timer says
            raise TimeoutError()
        if answer.get("cancelled"):  # given up (timeoutMs, the run cancelled): as locally
            raise asyncio.CancelledError()
        if "pause" in answer:
            return PauseRequest(answer["pause"] or "")
        if answer.get("lastText") != ctx.last_text_output:
            ctx.last_text_output = answer.get("lastText") or ""
        handle = answer.get("handle")
        return answer.get("output"), tuple(handle) if isinstance(handle, list) else handle


class _RemoteSpecs(dict):
    """The specs a remote run's steps use: a working kind that does its own I/O (its spec
    ``works`` and not ``through_run``) runs as the step activity; a kind that runs a nested flow
    (its spec has ``subflow_target``) runs it as a child workflow; every other kind (agents,
    whose model call is the agent activity; joins, loops, approvals) runs in the workflow."""

    def __init__(self, owner: FlowdeskRunWorkflow, kinds: Any) -> None:
        super().__init__()
        for kind in kinds:
            spec = spec_for(kind)
            if spec is not None:
                if hasattr(spec, "subflow_target"):
                    self[kind] = _ChildFlowStep(spec, owner)
                else:
                    self[kind] = _ActivityStep(spec, owner) if spec.works and not spec.through_run else spec


class _ChildFlow:
    """A flow step's nested run on the server: the child workflow, and what it last reported."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.paused: str | None = None  # the prompt of the approval the child waits at

    def cancel(self, reason: str = "") -> None:
        self.handle.cancel()

    def waiting_prompt(self) -> str:
        return self.paused or "Approve or reject to continue."


class _ChildFlowStep:
    """A flow kind's spec as a remote run's steps see it: the nested run is a child workflow
    (the node's state is a :class:`~engine.nodes.flow.Subflow` of a :class:`_ChildFlow`;
    everything else, the answer routed to it included, is the kind's own spec)."""

    def __init__(self, spec: Any, owner: FlowdeskRunWorkflow) -> None:
        self._spec = spec
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._spec, name)

    async def execute(self, ctx: Any, node: Any, value: Any) -> Any:

        ref, field, by_name = self._spec.subflow_target(node)
        owner = self._owner
        held = ctx.state(node.id)
        child: _ChildFlow | None = held.child if held is not None else None
        answer = held.answer if held is not None else None
        if held is not None:
            held.answer = None
        try:
            if child is not None and answer is not None:
                child.paused = None
                await child.handle.signal("answer", answer)
            else:
                lookup = {"ref": ref, "base": ctx.path, "byName": by_name}
                if owner.local_steps is not False and workflow.patched(QUICK_STEPS_PATCH):
                    # a lookup in the worker's library: quick by nature, a local activity
                    found = await workflow.execute_local_activity(
                        FLOW_ACTIVITY, lookup, start_to_close_timeout=timedelta(seconds=60)
                    )
                else:
                    found = await workflow.execute_activity(
                        FLOW_ACTIVITY, lookup, start_to_close_timeout=timedelta(seconds=60)
                    )
                if found.get("missing"):
                    what = f"no flow for the action '{ref}'" if by_name else f"the flow '{ref}' is not in the library"
                    raise NodeError(f"{describe(node)} cannot run: {what}.")
                if found.get("error"):
                    raise NodeError(f"{describe(node)} cannot run: {found['error']}")
                data, secrets = resolve_for_step(ctx, node, value)
                if secrets:  # they would be written into the child's input, on the server
                    raise NodeError(
                        f"{describe(node)}: a flow's inputs cannot carry secrets on a Temporal server; "
                        "refer to {{secrets.NAME}} inside the flow instead."
                    )
                inputs = data.get(field) or {}
                if not isinstance(inputs, dict):
                    raise NodeError(f"{describe(node)}: '{field}' must be an object of variable names and values.")
                wf = parse_workflow(found["workflow"])
                try:
                    run_variables(wf, inputs)
                except FlowdeskError as err:  # an input that does not fit the flow's variables
                    raise NodeError(f"{describe(node)}: the flow '{found['name']}' cannot start: {err}") from None
                child_id = ctx.new_id()
                run_path = (owner.started.run_path + "/" if owner.started.run_path else "") + f"{node.id}:{child_id}"
                request = {
                    "workflow": found["workflow"],
                    "runId": child_id,
                    "maxVisits": ctx.max_visits,
                    "meta": ctx.meta,
                    "options": owner.options,
                    "variables": inputs,
                    "path": found["path"],
                    "parent": {"workflowId": workflow.info().workflow_id, "nodeId": node.id, "runPath": run_path},
                }
                handle = await workflow.start_child_workflow(
                    WORKFLOW_TYPE,
                    request,
                    id=f"{workflow.info().workflow_id}.{node.id}.{child_id}",
                    task_queue=workflow.info().task_queue,
                    memo={"workflowName": wf.name or "", "status": "running", "parent": workflow.info().workflow_id},
                )
                child = _ChildFlow(handle)
                ctx.set_state(node.id, Subflow(child))
                owner.children[node.id] = child
            await workflow.wait_condition(lambda: child.paused is not None or child.handle.done())
        except asyncio.CancelledError:
            if child is not None:
                child.cancel()
                ctx.drop_state(node.id)
                owner.children.pop(node.id, None)
            raise
        if child.paused is not None and not child.handle.done():
            return PauseRequest(child.paused)
        ctx.drop_state(node.id)
        owner.children.pop(node.id, None)
        try:
            ended = await child.handle
        except ChildWorkflowError as err:
            cause = err.cause
            if isinstance(cause, ApplicationError) and cause.type == "RunFailed" and cause.details:
                ended = cause.details[0]
            elif isinstance(cause, TemporalCancelledError):
                raise asyncio.CancelledError() from None
            else:
                raise NodeError(f"{describe(node)}: the flow could not run on the server: {cause or err}") from None
        if ended.get("status") == "completed":
            return ended.get("result"), "output"
        raise NodeError(
            f"{describe(node)}: the flow '{ended.get('name')}' {ended.get('status')}: "
            f"{ended.get('error') or 'no reason given'}"
        )


def _subagent_ids(inv: Any) -> list[str]:
    """The node ids of an agent call's subagent tree."""
    found, todo = [], list(inv.subagents or ())
    while todo:
        sub = todo.pop()
        found.append(sub.node_id)
        todo.extend(sub.children or ())
    return found


def _timed_out(node: Any) -> LLMError:
    """A short agent step's call given up at its ``timeoutMs`` (on the worker): the message a local
    run's policy gives (the agent logs it as the call's ``llm_error`` too)."""
    spec = spec_for(node.type) if node is not None else None
    what = spec.describe(node) if spec is not None else "The step"
    return LLMError(f"{what} timed out after {field(node.data if node is not None else None, 'timeoutMs')} ms")


class _ActivityProvider:
    """The provider every agent step of a remote run gets: the call is an activity."""

    name = "temporal"

    def __init__(self, owner: FlowdeskRunWorkflow) -> None:
        self.owner = owner

    async def complete(self, inv: Any, ctx: Any) -> LLMResult:
        owner = self.owner
        node = owner.nodes.get(inv.node_id)
        if node is not None and _uses_secrets(node):
            raise LLMError(
                "its prompt uses {{secrets.…}} or {{env.…}}, which a run on a Temporal server cannot "
                "send to a model: the prompt would be kept in the server's history. Use the secret in "
                "an http step (the worker resolves those), or run this flow on this computer."
            )
        run = owner.started
        scope = run.context.scope(None, None)  # this branch's built-ins, for the subagents' templates
        request = {
            "invocation": invocation_to_json(inv),
            "meta": run.meta,
            "nodes": [owner.nodes[i].model_dump(mode="json") for i in _subagent_ids(inv) if i in owner.nodes],
            "variables": dict(scope.variables),
            "path": run.path,
            "runPath": run.run_path,
            "maxVisits": run.max_visits,
            "builtins": {k: v for k, v in scope.builtins.items() if k not in ("PREVIOUS_OUTPUT", "input")},
            # approving tool calls: the decisions so far and the conversation kept at the pause
            "toolDecisions": getattr(ctx, "tool_decisions", None),
            "resumedConversation": getattr(ctx, "resumed_conversation", None),
            **reach_of(run.context.workflow, node),
        }
        try:
            answer = await execute_step(
                owner, AGENT_ACTIVITY, request, node.data if node is not None else None, is_quick(owner, inv)
            )
        except TimeoutError:  # a short step's local activity ran out of its timeoutMs
            raise _timed_out(node) from None
        except ActivityError as err:
            failure = _activity_error(err, run.context)
            if isinstance(failure, NodeError):  # not a model's answer: the worker was lost for good
                failure = LLMError(str(failure))
            raise failure from None
        _log(run.context, answer.get("events"))
        if answer.get("timedOut"):
            raise _timed_out(node)
        if answer.get("cancelled"):  # given up (timeoutMs, the run cancelled): as locally
            raise asyncio.CancelledError()
        if answer.get("pause"):  # a tool call waits for approval: the agent step pauses, as locally
            raise pending_from_json(answer["pause"])
        return LLMResult(answer["text"], answer.get("usage"), answer.get("model"))


@workflow.defn(name=WORKFLOW_TYPE)
class FlowdeskRunWorkflow:
    def __init__(self) -> None:
        self.events: list[list[Any]] = []
        self.history_length = 0  # the server's history as the task that made the last event saw it
        self.answers: deque[dict[str, Any]] = deque()
        self.run: Run | None = None  # made by run(); see started
        self.nodes: dict[str, Any] = {}
        self.heartbeat_ms = DEFAULT_HEARTBEAT_MS
        self.short_step_ms = SHORT_STEP_MS
        self.local_steps: bool | None = None  # the run's localSteps option (None: the default)
        self.options: dict[str, Any] = {}
        self.definition: dict[str, Any] | None = None
        self.children: dict[str, _ChildFlow] = {}  # flow steps' child workflows, by node id
        self.parent: dict[str, Any] | None = None  # a child's parent {workflowId, nodeId, runPath}
        self._outbox: list[Any] = []  # what a child has yet to signal to its parent, in order
        self._sending = False
        self.state: RunState | None = None  # the run's state, for the tokens it spent (in the memo)

    def _record(self, ev: Any) -> None:
        row = [ev.node_id, ev.type, ev.content, ev.timestamp, ev.extra_json, ev.path]
        self.events.append(row)
        self.history_length = workflow.info().get_current_history_length()
        if self.state is not None:
            self.state.apply(ev)
        if self.parent is not None:
            self._outbox.append(row)

    def _memo(self) -> None:
        """What a run list shows without asking a worker: status, pending approval, and the tokens
        each node spent with the model that answered (``usage`` ``{node: [prompt, completion,
        model]}``; priced by the client from its catalogue, as the local history prices runs)."""
        run = self.started
        memo: dict[str, Any] = {"status": str(run.status), "pending": run.pending_approval}
        if run.pending_approval is not None:  # what the inbox lists (engine/flows/inbox.py)
            since, timeout = run.waiting_since, run.pause_timeout()
            memo["prompt"] = self._prompt()
            memo["waitingSince"] = format_timestamp(since) if since is not None else None
            memo["options"] = [d for d in run.decisions() if d not in ("approve", "reject")]
            memo["deadline"] = format_timestamp(timeout[0]) if timeout is not None else None
            memo["onTimeout"] = timeout[1] if timeout is not None else None
        if self.state is not None:
            spent = run_costs(self.state, prices={})["nodes"]
            memo["usage"] = {nid: [n["prompt"], n["completion"], n["model"]] for nid, n in spent.items()}
        workflow.upsert_memo(memo)

    # ------------------------------------------------------------------ a child's reports to its parent
    async def _pump(self) -> None:
        """Signal the child's events (and pauses) to the parent, in order, one batch at a time."""
        assert self.parent is not None  # (a child run's pump)
        parent = workflow.get_external_workflow_handle(self.parent["workflowId"])
        node_id = self.parent["nodeId"]
        while True:
            await workflow.wait_condition(lambda: bool(self._outbox))
            batch, self._outbox = self._outbox, []
            self._sending = True
            events = [e for e in batch if isinstance(e, list)]
            paused = next((e["paused"] for e in batch if isinstance(e, dict)), None)
            await parent.signal("child", {"nodeId": node_id, "events": events, "paused": paused})
            self._sending = False

    async def _reported(self, paused: str | None = None) -> None:
        """Wait until the parent has every event so far (and, with ``paused``, that the child waits)."""
        if self.parent is None:
            return
        if paused is not None:
            self._outbox.append({"paused": paused})
        await workflow.wait_condition(lambda: not self._outbox and not self._sending)

    def _prompt(self) -> str:
        """What the approval this run waits at asks (a flow step's: its child's, however deep)."""
        run = self.started
        child = self.children.get(run.pending_approval or "")
        return child.paused if child is not None and child.paused else run.waiting_prompt()

    @property
    def started(self) -> Run:
        """The run, once run() has made it (every step, query and report comes after that)."""
        if self.run is None:
            raise RuntimeError("the run has not started")
        return self.run

    @workflow.signal(name="child")
    def child_report(self, report: dict[str, Any]) -> None:
        """A flow step's child workflow reports events (logged here as a nested run's) or a pause."""
        run = self.run
        if run is None:
            return
        for node_id, kind, content, ts, extra_json, path in report.get("events") or ():
            run.context.relay(RunEvent(node_id, kind, content, timestamp=ts, extra_json=extra_json, path=path or ""))
        child = self.children.get(str(report.get("nodeId") or ""))
        if child is not None and report.get("paused") is not None:
            child.paused = report["paused"]

    @workflow.signal(name="answer")
    def parent_answer(self, answer: dict[str, Any]) -> None:
        """The parent's answer to the approval this child waits at."""
        self.answers.append(answer)

    @workflow.run
    async def run_flow(self, request: dict[str, Any]) -> dict[str, Any]:
        self.definition = request["workflow"]
        wf = parse_workflow(request["workflow"])
        self.nodes = {n.id: n for n in wf.nodes}
        self.state = RunState(wf)
        options = self.options = dict(request.get("options") or {})
        self.heartbeat_ms = int(options.get("heartbeatMs") or DEFAULT_HEARTBEAT_MS)
        short = options.get("shortStepMs")
        self.short_step_ms = int(short) if isinstance(short, (int, float)) and short >= 0 else SHORT_STEP_MS
        local = options.get("localSteps")  # True: every step local; False: none; absent: the default
        self.local_steps = local if isinstance(local, bool) else None
        self.parent = request.get("parent")
        provider = _ActivityProvider(self)
        try:
            run = self.run = Run(
                wf,
                lambda _inv: provider,
                run_id=request.get("runId") or workflow.info().workflow_id,
                initial_input=request.get("initialInput"),
                max_visits=int(request.get("maxVisits") or 25),
                meta=request.get("meta") or {},
                keep_events=False,
                on_event=self._record,
                variables=request.get("variables"),
                clock=lambda: workflow.now().timestamp(),
                id_source=lambda: workflow.uuid4().hex,
                path=request.get("path"),
                run_path=(self.parent or {}).get("runPath", ""),
                specs=_RemoteSpecs(self, {n.type for n in wf.nodes}),
            )
        except FlowdeskError as err:  # a variable that does not coerce: the run is refused, not retried
            raise ApplicationError(str(err), type="RunRefused", non_retryable=True) from None
        if self.parent is not None:
            run.inputs = dict(request.get("variables") or {})  # type: ignore[attr-defined]
            pump = asyncio.ensure_future(self._pump())
        try:
            status = await run.start()
            while status == RunStatus.PAUSED:
                self._memo()
                await self._reported(self._prompt())
                timeout = run.pause_timeout() if self.parent is None else None
                if timeout is not None:  # an approval that times out: a durable timer, then onTimeout
                    left = max(0.0, timeout[0] - workflow.now().timestamp())
                    try:
                        await workflow.wait_condition(lambda: bool(self.answers), timeout=timedelta(seconds=left))
                    except TimeoutError:
                        status = await run.expire()
                        continue
                else:
                    await workflow.wait_condition(lambda: bool(self.answers))
                answer = self.answers.popleft()
                if self.parent is not None:  # the parent's answer, as a local nested run takes it
                    status = await run.resume(answer)
                    continue
                # The reviewer's edited output goes on, recorded as an edit (``edited: true``), as locally.
                status = await run.resume(
                    answer["decision"],
                    answer.get("note") or "",
                    output=answer.get("output"),
                    arguments=answer.get("arguments"),
                )
        except asyncio.CancelledError:
            run.cancel("Cancelled on the Temporal server.")
            await run.wait()
            self._memo()
            raise
        self._memo()
        await self._reported()
        if self.parent is not None:
            pump.cancel()
        ended = {"status": str(status), "result": run.result, "error": run.error, "name": wf.display_name()}
        if status == RunStatus.FAILED:
            raise ApplicationError(run.error or "the run failed", ended, type="RunFailed", non_retryable=True)
        return {**ended, "outputs": run.outputs, "events": len(self.events)}

    @workflow.update(name="approve")
    async def approve(self, answer: dict[str, Any]) -> dict[str, Any]:
        self.answers.append(answer)
        return {"accepted": True, "nodeId": answer.get("nodeId")}

    @approve.validator
    def _check_answer(self, answer: dict[str, Any]) -> None:
        run = self.run
        decisions = run.decisions() if run is not None else ("approve", "reject")
        try:  # approve, reject or an option's label (any case), as a local resume takes it
            normalise_decision(answer.get("decision") if isinstance(answer, dict) else None, options=decisions)
        except ValueError:
            raise ValueError(f"an answer is {{nodeId, decision: {'|'.join(decisions)}, note, output}}") from None
        if self.parent is not None:
            raise ValueError(f"this run is a flow step of run {self.parent['workflowId']}: answer that run")
        if run is None or run.status != RunStatus.PAUSED or run.pending_approval is None or self.answers:
            raise ValueError(f"the run is not waiting for an approval (status {run.status if run else 'pending'})")
        node_id = answer.get("nodeId")
        if node_id and node_id != run.pending_approval:
            raise ValueError(f"the run is waiting at approval '{run.pending_approval}', not '{node_id}'")
        if answer.get("arguments") is not None:  # a tool call's edited arguments: checked as locally
            problem = run.answer_problem({"decision": answer["decision"], "arguments": answer["arguments"]})
            if problem:
                raise ValueError(f"the answer is refused: {problem}")

    @workflow.query(name="events")
    def events_after(self, after: int = 0) -> dict[str, Any]:
        run = self.run
        after = max(0, int(after or 0))
        page = self.events[after : after + PAGE]
        return {
            "events": page,
            "next": after + len(page),
            "total": len(self.events),
            "status": str(run.status) if run else "pending",
            "pending": run.pending_approval if run else None,
            "queued": run.queued_approvals if run else [],
            "error": run.error if run else None,
            "pendingInput": run.pending_input() if run else None,
            "queuedInputs": [[n, v] for n, v in run.queued_approval_inputs()] if run else [],
            "answering": bool(self.answers),
            "historyLength": self.history_length,  # where a follower's long poll of the history starts
        }

    @workflow.query(name="definition")
    def workflow_definition(self) -> dict[str, Any] | None:
        """The workflow that runs (as its JSON file has it), for clients that show the run."""
        return self.definition
