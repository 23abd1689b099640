"""The activities a worker runs: one agent step's model call (:func:`agent_call`), one step of
any other working kind (:func:`run_step`), and finding a subflow (:func:`find_flow`).

``run_step``: the workflow sends the node (its data as the file has it: templates unresolved),
the value that reached it, the run's variables and the step's built-ins; the worker resolves the
templates itself, ``secrets.``/``env.`` from its own environment or keyring, and runs the
kind's own ``execute`` (looked up in the worker's registry, plug-ins included) with a context
like the run's (``emit``, ``now``, ``new_id``, ``variables``, ``scope``, ``resolve_data``,
``mask``, ``resolve`` for model calls; no ``run``). The events it emits and its output (which
the kind masks, as locally) are returned; a step's failure is a non-retryable ``NodeError``
(the node's policy decides, in the workflow, as in a local run).

Agent model calls:

The workflow sends the invocation (prompts, model, the subagent tree) and the run's provider
settings (``provider``/``model``/``baseUrl`` names, never keys); the worker builds the provider
with its own environment and keyring (:func:`engine.make_resolver`). Subagent calls run here
too, inside the same activity, through the engine's own subagent path (so their
``subagent_call_*`` events have the usual fields); every event the call makes (streamed text,
subagent calls) is returned with the answer and logged by the workflow in order.

A short step runs as a local activity (inside the workflow task, see
:mod:`engine.temporal.steps`): it does not heartbeat, and its ``timeoutMs`` (``deadlineMs``) is
kept here: the step is cancelled and what it logged goes back with ``timedOut``.

While the call lasts the activity heartbeats, so a worker that dies is noticed within the
heartbeat timeout and the step is retried elsewhere; a cancelled step (the run was cancelled)
cancels the call's task, which closes its HTTP request.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import asdict
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from engine.errors import FlowdeskError
from engine.flows.library import default_library
from engine.graph.model import Node, workflow_to_dict
from engine.graph.permissions import PermissionDenied
from engine.graph.templates import TemplateScope, mask_secrets, resolve_templates_masked
from engine.llm.base import AgentInvocation, FlowToolSpec, LLMError, LLMResult, McpToolSpec, SubagentSpec
from engine.llm.registry import make_resolver
from engine.llm.tools import ToolApprovalPending, pending_to_json
from engine.mcp.calls import mcp_tools_of
from engine.mcp.config import McpError
from engine.nodes import NodeError, PauseRequest, spec_for
from engine.nodes.agent_step import ProviderCall
from engine.run.events import _encode
from engine.run.scheduler import Run, uuid_ids
from engine.temporal import AGENT_ACTIVITY, FLOW_ACTIVITY, STEP_ACTIVITY

_log = logging.getLogger("flowdesk.temporal")

__all__ = ["agent_call", "run_step", "find_flow", "invocation_to_json", "invocation_from_json", "HEARTBEAT_EVERY"]

HEARTBEAT_EVERY = 1.0  # seconds between heartbeats (the SDK throttles what reaches the server)
_resolvers: dict[tuple, Any] = {}


def invocation_to_json(inv: AgentInvocation) -> dict[str, Any]:
    return asdict(inv)


def _subagent(d: dict[str, Any]) -> SubagentSpec:
    return SubagentSpec(**{**d, "children": [_subagent(c) for c in d.get("children") or ()]})


def invocation_from_json(d: dict[str, Any]) -> AgentInvocation:
    """The invocation :func:`invocation_to_json` sent, its subagents and flow tools rebuilt."""
    return AgentInvocation(
        **{
            **d,
            "subagents": [_subagent(c) for c in d.get("subagents") or ()],
            "flows": [FlowToolSpec(**f) for f in d.get("flows") or ()],
            "mcp_tools": [McpToolSpec(**m) for m in d.get("mcp_tools") or ()],
        }
    )


def _resolver(meta: dict[str, Any]) -> Any:
    key = (meta.get("provider"), meta.get("model"), meta.get("baseUrl"))
    resolver = _resolvers.get(key)
    if resolver is None:
        resolver = _resolvers[key] = make_resolver(key[0], model=key[1], base_url=key[2])
    return resolver


class _NestedRuns:
    """A flow a step runs nested on this worker (a flow called as a tool, a code step's
    ``call_flow``, a script's ``callAction``): from the worker's library, as a local run makes
    it, its events recorded to return with their run path
    (``[node, type, content, extraJson, ts, path]``). Needs ``resolve``, ``new_id``,
    ``events``, ``_run_path`` and ``_max_visits``; ``_child_options`` adds Run options."""

    resolve: Any
    new_id: Any
    events: list[list[Any]]
    _run_path: str
    _max_visits: int

    def library(self) -> Any:
        return default_library()

    def _child_options(self) -> dict[str, Any]:
        return {}

    def child_run(self, workflow: Any, path: Any, call: str, inputs: dict[str, Any]) -> Run:
        child_id = self.new_id()
        child = Run(
            workflow,
            self.resolve,
            run_id=child_id,
            max_visits=self._max_visits,
            keep_events=False,
            library=self.library(),
            path=str(path) if path is not None else None,
            run_path=(self._run_path + "/" if self._run_path else "") + f"{call}:{child_id}",
            variables=inputs,
            **self._child_options(),
        )
        child.inputs = inputs  # type: ignore[attr-defined]
        child.add_listener(self._relay)
        return child

    def _relay(self, ev: Any) -> None:
        self.events.append([ev.node_id, str(ev.type), ev.content, ev.extra_json, ev.timestamp, ev.path])


class _CallHost(_NestedRuns):
    """What a provider call needs of a run, as a worker has it: the part of a
    :class:`~engine.run.context.RunContext` that a model call, its subagent calls and the flows
    it calls as tools use (``emit``, ``delta_interval``, ``next_call_id``, ``resolve``, ``node``,
    ``resolve_data``, ``mask``, ``library``, ``path``, ``child_run``), recording the events to
    return. A flow called as a tool runs nested here, on the worker, as it runs nested in a local
    run; its events go back with their run path (``[node, type, content, extraJson, ts, path]``)."""

    def __init__(self, resolve: Any, request: dict[str, Any] | None = None) -> None:

        request = request or {}
        self.resolve = resolve
        self.now = time.time
        self.new_id = uuid_ids
        self._calls = 0
        self.delta_interval = 0.05
        self.events: list[list[Any]] = []
        # The subagents' nodes (their data's templates are resolved here, secrets from this
        # worker) and what those templates resolve against (the step's variables and built-ins).
        nodes = [Node.model_validate(n) for n in request.get("nodes") or ()]
        self._nodes = {n.id: n for n in nodes}
        self._step = StepContext(request, resolve)
        self.resolve_data = self._step.resolve_data
        self.scope = self._step.scope
        self.mask = self._step.mask
        # MCP tools (the step's and its subagents'): the workflow's servers and permissions, and
        # the connections this activity opens (engine/mcp/pool.py keeps them in ``memo``).
        self.workflow = self._step.workflow
        self.memo = self._step.memo
        self.at_rest = self._step.at_rest
        self.rest = self._step.rest
        self.path: str | None = request.get("path")
        self._run_path: str = request.get("runPath") or ""
        self._max_visits = int(request.get("maxVisits") or 25)

    def _child_options(self) -> dict[str, Any]:
        return {"delta_interval": self.delta_interval}

    def emit(
        self,
        node_id: str,
        type: str,
        content: str = "",
        extra: dict[str, Any] | None = None,
        ts: float | None = None,
        extra_json: str | None = None,
    ) -> None:

        self.events.append([node_id, str(type), content, _encode(extra) if extra else extra_json])

    def next_call_id(self) -> str:
        self._calls += 1
        return f"call_{self._calls}_{self.new_id()[:8]}"

    def node(self, node_id: str) -> Any:
        return self._nodes.get(node_id)


def _heartbeat() -> None:
    """Heartbeat a remote step (a local activity, a short step, has no heartbeats: its workflow
    task stands for it, and a lost worker loses that task and the step with it)."""
    if not activity.info().is_local:
        activity.heartbeat()


@activity.defn(name=AGENT_ACTIVITY)
async def agent_call(request: dict[str, Any]) -> dict[str, Any]:
    """One model call: ``{text, usage, model, events}``; a model failure is a non-retryable
    ``LLMError`` application error (the node's own policy decides), with the events so far."""
    inv = invocation_from_json(request["invocation"])
    try:
        resolve = _resolver(request.get("meta") or {})
    except LLMError as err:
        raise ApplicationError(str(err), [], type="LLMError", non_retryable=True) from None
    host = _CallHost(resolve, request)
    try:
        return await _agent_call(request, inv, resolve, host)
    finally:
        await host.rest()  # the MCP connections the call opened (a stdio server's process ends)


async def _agent_call(request: dict[str, Any], inv: AgentInvocation, resolve: Any, host: _CallHost) -> dict[str, Any]:
    call = ProviderCall(host, inv.node_id, 0, None)
    # A step taken again after a tool call's approval: the decisions and the kept conversation.
    call.tool_decisions = dict(request.get("toolDecisions") or {})
    call.resumed_conversation = request.get("resumedConversation")
    task = asyncio.ensure_future(_complete(host, inv, call, resolve, request.get("mcpTools")))
    deadline = _deadline(request)
    try:
        while True:
            wait = HEARTBEAT_EVERY if deadline is None else max(0.0, min(HEARTBEAT_EVERY, deadline - time.monotonic()))
            done, _ = await asyncio.wait({task}, timeout=wait)
            if done:
                break
            if deadline is not None and time.monotonic() >= deadline:
                return await _timed_out(task, host.events, call.flush)
            _heartbeat()
        result = task.result()
        if not isinstance(result, LLMResult):
            raise LLMError(f"the provider returned {type(result).__name__}, not an answer")
    except asyncio.CancelledError:
        task.cancel()  # closes the provider's HTTP request
        try:
            await task
        except BaseException:
            pass
        call.flush()
        return _cancelled(host.events)
    except ToolApprovalPending as pause:  # a call waits for a person: the workflow pauses the step
        call.flush()
        return {"pause": pending_to_json(pause), "events": host.events}
    except LLMError as err:
        call.flush()
        raise ApplicationError(str(err), host.events, type="LLMError", non_retryable=True) from None
    except Exception as err:  # a provider bug: reported like the local engine does
        call.flush()
        raise ApplicationError(
            f"Unexpected error from the model provider: {err!r}", host.events, type="LLMError", non_retryable=True
        ) from None
    call.flush()
    return {"text": result.text, "usage": result.usage, "model": result.model, "events": host.events}


async def _complete(host: _CallHost, inv: AgentInvocation, call: ProviderCall, resolve: Any, mcp: Any) -> Any:
    """The provider's answer, the step's MCP tools (``mcp``: its ``tools.mcp``) offered first.

    The workflow sends the node's ``tools.mcp`` only (a workflow does no I/O): the worker lists
    the tools and calls them itself, as a local run does, connecting to the servers the
    workflow's ``mcpServers`` and this worker's settings declare (their ``{{secrets.NAME}}``
    from this worker's environment or keyring) within the workflow's ``permissions``. A server
    that cannot be reached, or a tool not granted, fails the step (as a model error: the node's
    policy decides)."""
    if mcp:
        try:
            inv.mcp_tools = await mcp_tools_of(host, host.node(inv.node_id), mcp)
        except (McpError, PermissionDenied) as err:
            raise LLMError(f"cannot use its MCP tools: {err}") from None
    return await resolve(inv).complete(inv, call)


def _deadline(request: dict[str, Any]) -> float | None:
    """When a short step's ``timeoutMs`` (sent as ``deadlineMs``) runs out, on this clock."""
    ms = request.get("deadlineMs")
    return time.monotonic() + ms / 1000 if isinstance(ms, (int, float)) and ms > 0 else None


class _TimedOut(FlowdeskError):
    """A short step's ``timeoutMs`` ran out on the worker (see :func:`_timed_out`)."""


async def _timed_out(task: Any, events: list[list[Any]], flush: Any = None) -> dict[str, Any]:
    """A short step (a local activity) given up at its ``timeoutMs``: cancelled here, on the
    worker, so what it logged until then goes back with the answer ``timedOut`` (the workflow's
    own timer cannot fire while its task is open), as a local run's log keeps it."""
    task.cancel()
    try:
        await task
    except BaseException:
        pass
    if flush is not None:
        flush()
    return {"timedOut": True, "events": events}


async def _heartbeating(coro: Any, deadline: float | None = None) -> Any:
    """Await ``coro`` while heartbeating; a cancelled activity cancels it (closing its requests).
    At ``deadline`` it is cancelled and :class:`_TimedOut` raised."""
    task = asyncio.ensure_future(coro)
    try:
        while True:
            wait = HEARTBEAT_EVERY if deadline is None else max(0.0, min(HEARTBEAT_EVERY, deadline - time.monotonic()))
            done, _ = await asyncio.wait({task}, timeout=wait)
            if done:
                return task.result()
            if deadline is not None and time.monotonic() >= deadline:
                await _timed_out(task, [])
                raise _TimedOut()
            _heartbeat()
    except asyncio.CancelledError:
        task.cancel()
        try:
            await task
        except BaseException:
            pass
        raise


class _Bounds:
    """The workflow's ``permissions`` and ``mcpServers`` sent with a step (engine.graph.permissions
    and engine.mcp.config read them)."""

    nodes: tuple[Any, ...] = ()
    name = ""

    def __init__(self, permissions: Any, mcp_servers: Any = None) -> None:
        self.permissions = permissions
        self.mcpServers = mcp_servers


class StepContext(_NestedRuns):
    """What a step's ``execute`` gets on a worker (see :class:`engine.RunContext`); records events."""

    run = None
    cancelled = False

    def __init__(self, request: dict[str, Any], resolve: Any) -> None:
        self.events: list[list[Any]] = []
        self.now = time.time
        self.new_id = uuid_ids
        self.initial_input = request.get("initialInput")
        self.resolve = resolve
        self.outputs: dict[str, Any] = {}
        self.variables: dict[str, Any] = dict(request.get("variables") or {})
        self._builtins: dict[str, Any] = dict(request.get("builtins") or {})
        self.last_text_output: str = request.get("lastText") or ""
        # The run's workflow as far as a step sees it here: its permissions and MCP servers (no graph).
        self.workflow = _Bounds(request.get("permissions"), request.get("mcpServers"))
        # Shared resources (a run's ``memo``/``at_rest``): what this activity opens (MCP
        # connections) lives as long as it and is closed by :meth:`rest` when it ends.
        self.memo: dict[str, Any] = {}
        self._closers: dict[str, Any] = {}
        self._calls = 0
        # A flow the step runs nested (a code step's call_flow, a script's callAction): on this
        # worker, from its library, its events sent back with their run path, as for an agent.
        self.path: str | None = request.get("path")
        self._run_path: str = request.get("runPath") or ""
        self._max_visits = int(request.get("maxVisits") or 25)

    def at_rest(self, key: str, closer: Any) -> None:
        self._closers[key] = closer

    async def rest(self) -> None:
        """Close what the step opened (each ``at_rest`` closer once; a failing one is logged)."""
        closers, self._closers = self._closers, {}
        for key, closer in closers.items():
            try:
                await closer()
            except Exception:  # the worker goes on; the connection's process is ended with it
                _log.warning("closing %s failed", key, exc_info=True)

    def next_call_id(self) -> str:
        self._calls += 1
        return f"call_{self._calls}_{self.new_id()[:8]}"

    def emit(self, node_id: str, type: str, content: str = "", extra: dict[str, Any] | None = None) -> None:

        self.events.append([node_id, str(type), content, _encode(extra) if extra else None])

    def scope(self, node: Any, value: Any) -> Any:

        return TemplateScope(self.variables, {**self._builtins, "PREVIOUS_OUTPUT": value, "input": value})

    def resolve_data(self, node: Any, value: Any, *, escape: Any = None) -> Any:

        data = node.data.model_dump(mode="json", exclude_none=True)
        return resolve_templates_masked(data, self.scope(node, value), escape=escape)

    @staticmethod
    def mask(value: Any, secrets: Any) -> Any:

        return mask_secrets(value, secrets) if secrets else value


def _cancelled(events: list[list[Any]]) -> dict[str, Any]:
    """A step the workflow gave up (its run was cancelled, its timeoutMs passed): what it logged
    until then goes back with the answer ``cancelled`` (a cancelled activity's own report
    carries no details), so the run's log keeps it as a local run's does. A worker shutting
    down is not that: the step is tried again elsewhere."""
    if activity.is_worker_shutdown():
        raise asyncio.CancelledError()
    return {"cancelled": True, "events": events}


def _step_error(message: str, events: list[list[Any]]) -> ApplicationError:
    return ApplicationError(message, events, type="NodeError", non_retryable=True)


@activity.defn(name=STEP_ACTIVITY)
async def run_step(request: dict[str, Any]) -> dict[str, Any]:
    """One step of a working kind: ``{output, handle, events, lastText}`` (or ``{pause, events}``)."""

    node = Node.model_validate(request["node"])
    spec = spec_for(node.type)
    if spec is None:
        raise _step_error(
            f"Node '{node.id}' has an unknown type '{node.type}' on this worker "
            "(is the plug-in that provides it installed here?).",
            [],
        )
    ctx = StepContext(request, lambda inv: _resolver(request.get("meta") or {})(inv))
    try:
        return await _run_step(request, node, spec, ctx)
    finally:
        await ctx.rest()  # what the step opened (an mcp step's connection)


async def _run_step(request: dict[str, Any], node: Node, spec: Any, ctx: StepContext) -> dict[str, Any]:
    try:
        result = await _heartbeating(spec.execute(ctx, node, request.get("value")), _deadline(request))
    except _TimedOut:
        return {"timedOut": True, "events": ctx.events}
    except NodeError as err:
        raise _step_error(str(err), ctx.events) from None
    except asyncio.CancelledError:
        return _cancelled(ctx.events)
    except Exception as err:  # a node kind's bug: reported as the local run reports it
        raise _step_error(f"'{node.title}' failed: {err!r}", ctx.events) from None
    if isinstance(result, PauseRequest):
        return {"pause": result.prompt, "events": ctx.events}
    output, handle = result
    return {
        "output": output,
        "handle": list(handle) if isinstance(handle, tuple) else handle,
        "events": ctx.events,
        "lastText": ctx.last_text_output,
    }


@activity.defn(name=FLOW_ACTIVITY)
async def find_flow(request: dict[str, Any]) -> dict[str, Any]:
    """The flow a ``flow``/``action`` step runs, from the worker's library: ``{workflow, path,
    name}``, or ``{missing: true}`` / ``{error}`` (it cannot be loaded)."""

    library = default_library()
    entry = library.resolve(request["ref"], base=request.get("base"), by_name=bool(request.get("byName")))
    if entry is None:
        return {"missing": True}
    try:
        wf = library.load_path(entry.path)
    except FlowdeskError as err:
        return {"error": str(err)}
    return {"workflow": workflow_to_dict(wf), "path": str(entry.path), "name": entry.name}
