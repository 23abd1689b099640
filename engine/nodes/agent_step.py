"""The ``agent`` kind's step: one model call with the node's prompts, and the tools offered to it.

What an agent node *is* (its data, ports, labels and checks) is declared in
:mod:`engine.nodes.agent`; this module is what it *does* in a run, loaded by the first step
(validating, importing or exporting a workflow never loads it, nor the providers, MCP and
library flows it reaches):

* :func:`execute`: the step (the hot path of ``bench_engine``: see its docstring);
* :class:`ProviderCall`: the context a provider gets for one call (streamed text, secrets held
  back, the subagent, flow and MCP tool calls it makes);
* :func:`call_subagent`, :func:`subagents_of`, :func:`flow_tools_of`: linked agents and library
  flows offered to the model as tools;
* :func:`templated`, :func:`resolved_prompt`: the node's strings with their templates resolved.

Approving tool calls (docs/design.md, "Approving tool calls"): a tool with ``approve: "ask"``
(an MCP entry's ``approve``, a ``tools.flows`` entry ``{flow, approve}``, a subagent's own
``approve``) makes the provider stop before the call (``ToolApprovalPending``). The step then
returns a :class:`PauseRequest` whose ``wait_input`` says ``{kind: "tool_call", tool, server?,
arguments, callId, schema}``, and keeps :class:`~engine.nodes.agent.ToolPause` as the node's
state (snapshotted under ``toolCalls``: the conversation so far, the decisions given, the call
that waits). The answer (``answered``) is added to the decisions and the step is taken again:
the provider goes on from the kept conversation, so a run paused here resumes in a new process
as any pause does.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from functools import lru_cache
from typing import Any

from engine.graph.templates import find_references, mask_secrets
from engine.llm.base import (
    AgentInvocation,
    FlowToolSpec,
    LLMError,
    LLMResult,
    McpToolSpec,
    ModelNotFound,
    ProviderConfigError,
    ProviderUnavailable,
    SubagentSpec,
)
from engine.llm.structured import SchemaError, openai_response_format, parse_json_answer, schema_instructions, schema_of
from engine.llm.tools import ToolApprovalPending
from engine.mcp.calls import call_for_model, mcp_tools_of
from engine.mcp.config import McpError
from engine.nodes.agent import (
    DEFAULT_REASONING_EFFORT,
    DEFAULT_SYSTEM_PROMPT,
    MAX_SUBAGENT_DEPTH,
    AgentSpec,
    approve_mode,
    flow_refs,
)
from engine.nodes.agent_tools import pause_for
from engine.nodes.base import NodeError, PauseRequest, as_text, fill_prompt
from engine.nodes.flow import call_flow
from engine.run.events import EventType, RunEvent
from engine.run.events import _encode as _encode_extra

__all__ = [
    "execute",
    "ProviderCall",
    "call_subagent",
    "subagents_of",
    "flow_tools_of",
    "templated",
    "resolved_prompt",
]

_tuple_new = tuple.__new__
_START_PROMPT = "start_prompt"
_LLM_RESPONSE = "llm_response"
_LLM_DELTA = "llm_delta"
_LLM_ERROR = "llm_error"
_STRUCTURED_RETRY = EventType.STRUCTURED_RETRY.value
_SUBAGENT_CALL_START = EventType.SUBAGENT_CALL_START.value
_SUBAGENT_CALL_END = EventType.SUBAGENT_CALL_END.value
_SUBAGENT_CALL_ERROR = EventType.SUBAGENT_CALL_ERROR.value


def _usage_json(usage: dict[str, Any] | None, model: str | None = None) -> str | None:
    """The ``llm_response`` event's extra fields as JSON text: ``usage`` (the token counts the
    provider reported) and ``model`` (the model that answered, which prices the call: not
    always the node's, when a run goes to another provider); None when there are neither.

    Every response of a run carries one; the usual shape (the two int counts providers
    report) is formatted directly, at a third of the general encoder's cost.
    """
    tail = _model_field(model) if model and model.__class__ is str else ""
    if not usage:
        return "{" + tail[2:] + "}" if tail else None
    p = usage.get("prompt_tokens")
    c = usage.get("completion_tokens")
    if p.__class__ is int and c.__class__ is int and len(usage) == 2:
        return f'{{"usage": {{"prompt_tokens": {p}, "completion_tokens": {c}}}{tail}}}'
    return _encode_extra({"usage": usage, "model": model} if tail else {"usage": usage})


@lru_cache(maxsize=256)
def _model_field(model: str) -> str:
    """``, "model": "<name>"``: a run's few model names, each encoded once."""
    return ', "model": ' + _encode_extra(model)


@lru_cache(maxsize=1024)
def _templated_prompt(text: str) -> bool:
    """Whether a user prompt holds a reference other than the legacy ``{{PREVIOUS_OUTPUT}}``
    (which the plain replace of :func:`fill_prompt` fills exactly as before)."""
    return any(ref.raw != "{{PREVIOUS_OUTPUT}}" for ref in find_references(text))


_NO_SECRETS: frozenset[str] = frozenset()


def templated(data: Any) -> bool:
    """Whether an agent's prompt, name or model holds a template reference (other than the
    legacy ``{{PREVIOUS_OUTPUT}}`` in the user prompt, which :func:`fill_prompt` fills)."""
    return _templated_fields(data.__dict__)


def _templated_fields(fields: dict[str, Any]) -> bool:
    """:func:`templated` on an agent data's fields (its ``__dict__``)."""
    user_prompt = fields["userPrompt"]
    return bool(
        ("{" in user_prompt and _templated_prompt(user_prompt))
        or "{" in fields["systemPrompt"]
        or "{" in fields["agentName"]
        or "{" in fields["model"]
    )


def resolved_prompt(ctx: Any, node: Any, value: str) -> tuple[str, str, str, str, str, str, frozenset[str]]:
    """An agent's call with every string of its data resolved (docs/design.md, "Data flow:
    variables and templates"): ``(content sent, content shown, name, system prompt, model, effort, secrets used)``. What is
    sent holds the secrets; what is shown and recorded reads •••• in their place."""
    resolved = ctx.resolve_data(node, value)
    real, masked = resolved.value, resolved.masked
    user_prompt = real.get("userPrompt", "")
    blank = not user_prompt or (isinstance(user_prompt, str) and user_prompt.isspace())
    content = value if blank else as_text(user_prompt)
    shown = value if blank else as_text(masked.get("userPrompt", ""))
    return (
        content,
        shown,
        as_text(real.get("agentName")) or "Agent",
        as_text(real.get("systemPrompt")) or DEFAULT_SYSTEM_PROMPT,
        as_text(real.get("model")),
        as_text(real.get("reasoningEffort")) or DEFAULT_REASONING_EFFORT,
        resolved.secrets,
    )


def _is_decision(value: Any) -> bool:
    return isinstance(value, dict) and "decision" in value


class ProviderCall:
    """The ProviderContext handed to a provider for one agent call (a step or a subagent call).

    ``ctx``: the run's :class:`~engine.run.context.RunContext` (or a worker's stand-in with
    ``emit``, ``delta_interval``, ``next_call_id``, ``resolve``, ``node``, ``resolve_data``)."""

    __slots__ = (
        "ctx",
        "node_id",
        "depth",
        "call_id",
        "_buf",
        "_last_flush",
        "secrets",
        "_held",
        "_timer",
        "tool_decisions",
        "resumed_conversation",
    )

    def __init__(
        self, ctx: Any, node_id: str, depth: int, call_id: str | None, secrets: frozenset[str] = frozenset()
    ) -> None:
        self.ctx = ctx
        self.node_id = node_id
        self.depth = depth
        self.call_id = call_id
        self._buf: list[str] | None = None  # made on the first delta: most steps of a run stream nothing
        self._last_flush = 0.0  # the first streamed text is shown at once
        # Secrets the prompt held: a streamed answer that echoes one shows •••• in its place. The
        # end of what has streamed is held back while it could be the start of a secret that
        # the next piece completes.
        self.secrets = secrets
        self._held = ""
        # Streamed text waits at most ``delta_interval`` (a frame): text that came too soon
        # after the last piece is passed on by this timer, so a stream that goes quiet never
        # holds text back. Set only while text waits in _buf (every end of a step flushes it).
        self._timer: asyncio.TimerHandle | None = None
        # Approving tool calls: the decisions given so far by call id (a step's own loop; None
        # in a subagent's, which cannot pause) and the conversation kept at the pause.
        self.tool_decisions: dict[str, dict[str, Any]] | None = {} if depth == 0 else None
        self.resumed_conversation: dict[str, Any] | None = None

    def delta(self, text: str) -> None:
        if self.depth or not text:
            return  # subagent streams are not shown; their answers are, in subagent_call_end
        if self._buf is None:
            self._buf = []
        self._buf.append(text)
        wait = self.ctx.delta_interval - (time.monotonic() - self._last_flush)
        if wait <= 0:
            self.flush(final=False)
        elif self._timer is None:
            try:
                self._timer = asyncio.get_running_loop().call_later(wait, self._flush_waiting)
            except RuntimeError:  # not on an event loop: the next piece or the step's end passes it on
                pass

    def _flush_waiting(self) -> None:
        self._timer = None
        self.flush(final=False)

    def flush(self, final: bool = True) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._buf or (final and self._held):
            text = "".join(self._buf or ())
            if self._buf:
                self._buf.clear()
            self._last_flush = time.monotonic()
            if self.secrets:
                text = self._masked(self._held + text, final)
                if not text:
                    return
            self.ctx.emit(self.node_id, _LLM_DELTA, text)

    def _masked(self, text: str, final: bool) -> str:
        """``text`` with its secrets masked; unless ``final``, less an end that may be the start
        of a secret (kept for the next piece)."""
        text = mask_secrets(text, self.secrets)  # whole secrets first: what is held is a part of one
        cut = len(text)
        if not final:
            for secret in self.secrets:  # the longest end of text that begins some secret
                for size in range(min(len(secret) - 1, len(text)), 0, -1):
                    if secret.startswith(text[-size:]):
                        cut = min(cut, len(text) - size)
                        break
        self._held = text[cut:]
        return text[:cut]

    async def call_subagent(self, child: SubagentSpec, argument: str) -> str:
        return await call_subagent(self.ctx, self, child, argument)

    async def call_flow(self, flow: FlowToolSpec, arguments: dict[str, Any]) -> str:
        return await call_flow(self.ctx, self, flow, arguments)

    async def call_mcp(self, tool: McpToolSpec, arguments: dict[str, Any]) -> str:
        return await call_for_model(self.ctx, self, tool, arguments)


async def call_subagent(ctx: Any, parent: ProviderCall, child: SubagentSpec, argument: str) -> str:
    """An agent linked below ``parent``'s agent, called by its model as a tool: one model call,
    ``subagent_call_*`` logged on the parent."""
    call_id = ctx.next_call_id()
    depth = parent.depth + 1
    base = {
        "parentNodeId": parent.node_id,
        "subagentNodeId": child.node_id,
        "subagentName": child.name,
        "callId": call_id,
        "parentCallId": parent.call_id,
        "depth": depth,
    }

    def log(kind: str, message: str) -> None:
        ctx.emit(parent.node_id, kind, message, extra=base)

    log(_SUBAGENT_CALL_START, argument)
    if depth > MAX_SUBAGENT_DEPTH:
        message = f"subagents nested deeper than {MAX_SUBAGENT_DEPTH} levels"
        log(_SUBAGENT_CALL_ERROR, message)
        raise LLMError(message)
    name, system, model, effort = child.name, child.system_prompt, child.model, child.reasoning_effort
    secrets: frozenset[str] = frozenset()
    # Its data's templates, with the call's input as input (a host without the workflow's
    # nodes, a remote worker's model call, sends the prompt as written).
    node = ctx.node(child.node_id)
    if node is not None and templated(node.data):
        content, _shown, name, system, model, effort, secrets = resolved_prompt(ctx, node, argument)
    else:
        content = fill_prompt(child.user_prompt, argument)
    inv = AgentInvocation(
        node_id=child.node_id,
        name=name,
        system_prompt=system,
        user_content=content,
        model=model,
        reasoning_effort=effort,
        tools=child.tools,
        subagents=child.children,
        provider=child.provider,
        depth=depth,
    )
    call = ProviderCall(ctx, child.node_id, depth, call_id, secrets)
    try:
        # A subagent's own MCP tools (a run's context only: a worker's host shares no connections).
        raw_mcp = getattr(node.data.tools, "mcp", None) if node is not None else None
        if raw_mcp and getattr(ctx, "memo", None) is not None:
            try:
                inv.mcp_tools = await mcp_tools_of(ctx, node, raw_mcp)
            except McpError as err:
                raise LLMError(f"the subagent '{name}' cannot use its MCP tools: {err}") from None
        provider = ctx.resolve(inv)
        result = await provider.complete(inv, call)
    except asyncio.CancelledError:
        log(_SUBAGENT_CALL_ERROR, "cancelled")
        raise
    except LLMError as err:
        log(_SUBAGENT_CALL_ERROR, str(err))
        raise
    except Exception as err:
        message = f"Unexpected error from the model provider: {err!r}"
        log(_SUBAGENT_CALL_ERROR, message)
        raise LLMError(message) from err
    text = ctx.mask(result.text, secrets) if secrets else result.text  # an echoed secret is never shown
    # The call's tokens and the model that answered, as an llm_response has them: a run's
    # totals and costs count its subagent calls too.
    end = base
    if result.usage:
        end = {**end, "usage": result.usage}
    if result.model:
        end = {**end, "model": result.model}
    ctx.emit(parent.node_id, _SUBAGENT_CALL_END, text, extra=end)
    return text


def flow_tools_of(ctx: Any, node: Any) -> list[FlowToolSpec]:
    """The library flows an agent offers as tools (``tools.flows``), those found in the library."""
    refs = node.data.tools.flows
    if not refs:
        return []
    library = ctx.library()
    out = []
    for ref, approve in flow_refs(refs):
        entry = library.resolve(ref, base=ctx.path, by_name=False)
        if entry is not None:
            out.append(FlowToolSpec(entry.id, entry.name, entry.description, entry.parameters_schema(), approve))
    return out


def subagents_of(ctx: Any, node_id: str, depth: int = 0) -> list[SubagentSpec]:
    """The agents linked below ``node_id`` as tools (cached per run)."""
    cache = ctx.memo.get("agent.subagents")
    if cache is None:
        cache = ctx.memo["agent.subagents"] = {}
    cached = cache.get(node_id)
    if cached is not None:
        return cached
    specs = []
    if depth <= MAX_SUBAGENT_DEPTH:
        for child_id in ctx.subagents(node_id):
            child = ctx.node(child_id)
            if child is None or child.type != AgentSpec.kind or child_id == node_id:
                continue
            d = child.data
            specs.append(
                SubagentSpec(
                    node_id=child_id,
                    name=d.agentName or "Agent",
                    system_prompt=d.systemPrompt or DEFAULT_SYSTEM_PROMPT,
                    user_prompt=d.userPrompt,
                    model=d.model,
                    reasoning_effort=d.reasoningEffort or DEFAULT_REASONING_EFFORT,
                    tools={"web_search": d.tools.web_search, "subagents": d.tools.subagents},
                    provider=d.provider,
                    children=subagents_of(ctx, child_id, depth + 1) if d.tools.subagents else [],
                    approve=approve_mode(getattr(d, "approve", None)),
                )
            )
    cache[node_id] = specs
    return specs


async def execute(ctx: Any, node: Any, value: Any) -> tuple[Any, str] | PauseRequest:
    """One LLM call; on failure an ``llm_error`` event and :class:`NodeError`.

    The hot path of ``bench_engine`` (a step of the 100-agent chain): its two events are
    built inline and handed to ``ctx.sinks`` (one call less each, every step), and the
    node's fields are read from ``__dict__`` (see below)."""
    # Read straight from the node: caching these per node would keep several more
    # GC-tracked objects alive per step and slow every collection of a long run. The
    # fields are read from the models' __dict__: pydantic models define __getattr__, which
    # keeps CPython from specialising an attribute read (~200 instructions each, ~20 a step).
    nd = node.__dict__
    d = nd["data"]
    fields = d.__dict__
    t = fields["tools"].__dict__
    name = fields["agentName"] or "Agent"
    user_prompt = fields["userPrompt"]
    node_id = nd["id"]
    if value.__class__ is not str:
        if _is_decision(value):
            value = ctx.last_text_output
        value = value if isinstance(value, str) else as_text(value)
    secrets = _NO_SECRETS
    if _templated_fields(fields):
        content, shown, name, system, model, effort, secrets = resolved_prompt(ctx, node, value)
    else:
        content = shown = fill_prompt(user_prompt, value) if user_prompt else value
        system, model, effort = (
            fields["systemPrompt"] or DEFAULT_SYSTEM_PROMPT,
            fields["model"],
            fields["reasoningEffort"] or DEFAULT_REASONING_EFFORT,
        )
    subagents = t["subagents"]
    inv = AgentInvocation(
        node_id,
        name,
        system,
        content,
        model,
        effort,
        {"web_search": t["web_search"], "subagents": subagents},
        subagents_of(ctx, node_id) if subagents else [],
        fields["provider"],
    )
    if t["flows"]:
        inv.flows = flow_tools_of(ctx, node)
    if t["mcp"]:
        try:
            inv.mcp_tools = await mcp_tools_of(ctx, node, t["mcp"])
        except McpError as err:
            message = ctx.mask(str(err), secrets) if secrets else str(err)
            ctx.emit(node_id, _LLM_ERROR, message)
            raise NodeError(f"Agent '{name}' cannot use its MCP tools: {message}") from None
    # A step taken again after a tool call's approval (its kept conversation and decisions).
    held = ctx.state(node_id) if (subagents or t["flows"] or t["mcp"]) else None
    schema = schema_of(fields["responseFormat"]) if fields["responseFormat"] else None
    parsed: Any = None
    if schema is not None:
        inv.response_format = openai_response_format(schema, name)
        inv.system_prompt = f"{system}\n\n{schema_instructions(schema)}"
    # One clock reading for the record and its event (the record first, so a listener
    # of the event finds it up to date).
    clock = ctx.now
    started = clock()
    records = ctx.records
    records[node_id] = (shown, None, started, None, None, None)
    # The two events built inline (as ctx.emit would): one call less each, every step.
    ev = _tuple_new(RunEvent, (node_id, _START_PROMPT, shown, started, None) + ctx.event_tail)
    for sink in ctx.sinks:
        sink(ev)
    call = ProviderCall(ctx, node_id, 0, None, secrets)
    if held is not None:
        ctx.drop_state(node_id)
        call.tool_decisions = held.decisions
        call.resumed_conversation = held.conversation
    provider = None
    problem: dict[str, Any] | None = None
    try:
        provider = ctx.resolve(inv)
        if schema is None:
            result = await provider.complete(inv, call)
            if not isinstance(result, LLMResult):
                raise LLMError(f"the provider returned {type(result).__name__}, not an answer")
        else:
            result, parsed = await _structured_answer(ctx, node_id, provider, inv, call, schema)
    except asyncio.CancelledError:
        call.flush()
        records[node_id] = (shown, None, started, clock(), None, "cancelled")
        raise
    except ToolApprovalPending as pause:  # a call waits for a person: the step pauses here
        call.flush()
        return pause_for(ctx, node_id, name, pause, call)
    except LLMError as err:
        message = str(err)
        if isinstance(err, (ProviderUnavailable, ProviderConfigError)):
            problem = _provider_problem(provider)
        elif isinstance(err, ModelNotFound):
            problem = _provider_problem(provider, err.model)
    except Exception as err:  # a provider bug must not take the app down
        message = f"Unexpected error from the model provider: {err!r}"
    else:
        if call._buf:
            call.flush()
        text = result.text
        if secrets:  # an answer that echoes a secret is never shown, recorded or passed on
            text = ctx.mask(text, secrets)
        usage = result.usage
        ended = clock()
        # The usage as the event's JSON text, in the record too: a tuple of strings and
        # numbers only is left alone by the cyclic GC (a dict in it would keep it tracked).
        extra = _usage_json(usage, result.model)
        records[node_id] = (shown, text, started, ended, extra, None)
        ev = _tuple_new(RunEvent, (node_id, _LLM_RESPONSE, text, ended, extra) + ctx.event_tail)
        for sink in ctx.sinks:
            sink(ev)
        ctx.last_text_output = text
        if schema is not None:  # the parsed value flows on ({{answer.field}} resolves)
            return (json.loads(text) if secrets else parsed), "output"
        return text, "output"
    call.flush()
    if secrets:
        message = ctx.mask(message, secrets)
    records[node_id] = (shown, None, started, clock(), None, message)
    ctx.emit(node_id, _LLM_ERROR, message, problem)
    raise NodeError(f"Agent '{name}' failed: {message}")


async def _structured_answer(
    ctx: Any, node_id: str, provider: Any, inv: AgentInvocation, call: ProviderCall, schema: dict[str, Any]
) -> tuple[LLMResult, Any]:
    """A structured answer: the model's JSON parsed and checked against ``schema``; one more try
    with the error when it does not match (``structured_retry``), an :class:`LLMError` when the
    second answer does not either."""
    result = await provider.complete(inv, call)
    if not isinstance(result, LLMResult):
        raise LLMError(f"the provider returned {type(result).__name__}, not an answer")
    try:
        return result, parse_json_answer(result.text, schema)
    except SchemaError as err:
        first = str(err)
    call.flush()
    ctx.emit(
        node_id,
        _STRUCTURED_RETRY,
        f"The answer does not match the schema ({first}); asking once more.",
        {"attempt": 2, "error": first},
    )
    again = dataclasses.replace(
        inv,
        user_content=(
            f"{inv.user_content}\n\nYour previous answer was:\n{result.text}\n\nIt is not valid: {first}. "
            "Answer again with JSON only, matching the schema."
        ),
    )
    second = await provider.complete(again, call)
    if not isinstance(second, LLMResult):
        raise LLMError(f"the provider returned {type(second).__name__}, not an answer")
    usage: dict[str, int] = {}
    for part in (result.usage, second.usage):
        for k, v in (part or {}).items():
            usage[k] = usage.get(k, 0) + int(v)
    try:
        parsed = parse_json_answer(second.text, schema)
    except SchemaError as err:
        raise LLMError(f"the answer did not match the response schema, twice: {err}") from None
    return LLMResult(second.text, usage or None, second.model), parsed


def _provider_problem(provider: Any, model: str | None = None) -> dict[str, Any]:
    """An ``llm_error``'s extra when the provider could not serve at all (its server did not
    answer, or it is not configured: ``providerUnavailable``), or has no such model
    (``modelUnavailable`` and ``model``); ``provider`` (its id) when known. A viewer offers to
    choose another provider or model; another try would fail the same way."""
    problem: dict[str, Any] = (
        {"modelUnavailable": True, "model": model} if model is not None else {"providerUnavailable": True}
    )
    pid = getattr(provider, "provider_id", None) or getattr(provider, "name", None)
    if isinstance(pid, str) and pid:
        problem["provider"] = pid
    return problem
