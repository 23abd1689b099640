"""Save a run as a flow (TypeAgent's reasoning-trace capture; docs/flows.md, "Learning a flow").

A completed run in which an agent called tools is turned into a deterministic workflow that
makes the same calls without the planning model turn:

* :func:`tool_calls` reads the run's events into :class:`ToolCall` records, one per call the
  agent's model made (subagents, library flows, MCP tools: any ``*_call_start``/``*_call_end``
  pair carrying a ``callId``), in the order made; calls of one model turn overlap in time and
  form one parallel group (:func:`groups`);
* the model is asked ONE question (:func:`proposal_request`): which literal argument values
  came from the run's input (``{variables: [{name, type, description, from}], triggers:
  [pattern], reasons}``); :func:`check_proposal` keeps only the variables whose ``from`` is in
  the input and in some argument, and the triggers that compile and capture only those
  variables. ``--no-model`` skips the question: every argument stays literal;
* :func:`build_flow` writes Start (the input, the variables with ``from`` as their default),
  one node per call (a parallel group as a fan-out into a ``join``), and the answer node last:
  the agent itself with no tools, given the original request and each call's result.

The result carries ``learnedFrom: {runId, reasons}`` so the editor can show why.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from engine.errors import FlowdeskError
from engine.flows.grammar import TriggerPatternError, compile_trigger
from engine.graph.model import Workflow, new_id, parse_workflow
from engine.llm.base import AgentInvocation, NoToolsContext
from engine.nodes.base import fill_prompt

__all__ = [
    "LearnError",
    "ToolCall",
    "Proposal",
    "tool_calls",
    "groups",
    "proposal_request",
    "parse_proposal",
    "check_proposal",
    "build_flow",
    "propose",
    "learn_from_run",
    "LEARN_NODE",
]

LEARN_NODE = "learn"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TYPES = ("string", "number", "boolean", "json")
# A call's start and end events: kind → (start type, end type, error type).
_CALL_EVENTS = {
    "subagent": ("subagent_call_start", "subagent_call_end", "subagent_call_error"),
    "flow": ("flow_call_start", "flow_call_end", "flow_call_error"),
    "tool": ("tool_call_start", "tool_call_end", "tool_call_error"),  # MCP tools (extra: tool, server, arguments)
}
_SYSTEM = (
    "You turn a recorded agent run into a reusable, parameterised flow. You get the user's request and the "
    "tool calls the agent made, with their arguments. Decide which literal argument values came from the "
    "request and should become parameters, and propose two or three trigger patterns for requests of the "
    "same shape. Pattern grammar: plain words; (a|b) alternatives; (...)? optional; captures $(name:wildcard), "
    "$(name:word), $(name:number) named after the parameters. Answer with one JSON object only: "
    '{"variables": [{"name": "<identifier>", "type": "string|number|boolean|json", "description": "...", '
    '"from": "<the literal value as it appears in the arguments>"}], "triggers": ["<pattern>", ...], '
    '"reasons": "<why these parameters and patterns>"}'
)


class LearnError(FlowdeskError):
    """A run cannot be learned (not completed, no tool calls) or the proposal is unusable."""


@dataclass
class ToolCall:
    """One tool call an agent's model made: generic over subagents, flows and MCP tools."""

    kind: str  # subagent | flow | tool
    call_id: str
    name: str  # the subagent's or flow's name, or the MCP tool's
    target: str  # subagent node id, flow id, or "server/tool"
    arguments: Any  # the subagent's input text, or the flow's/tool's arguments object
    started: float
    ended: float | None = None
    result: str | None = None


@dataclass
class Proposal:
    variables: list[dict[str, Any]] = field(default_factory=list)
    triggers: list[str] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)


def _extra(ev: Any) -> dict[str, Any]:
    extra = ev.extra if ev.extra_json else None
    return extra if isinstance(extra, dict) else {}


def tool_calls(events: Any) -> tuple[str | None, list[ToolCall]]:
    """The calling agent's node id and its completed calls, in the order made (top-level
    events only; a call made inside a subagent or a nested flow is part of that call)."""
    starts = {t[0]: k for k, t in _CALL_EVENTS.items()}
    ends = {t[1]: k for k, t in _CALL_EVENTS.items()}
    open_calls: dict[str, ToolCall] = {}
    done: list[ToolCall] = []
    agent: str | None = None
    for ev in events:
        if ev.path or (ev.type not in starts and ev.type not in ends):
            continue
        extra = _extra(ev)
        call_id = str(extra.get("callId") or "")
        if ev.type in starts:
            if int(extra.get("depth") or 1) != 1 or (agent is not None and ev.node_id != agent):
                continue
            kind = starts[ev.type]
            if kind == "subagent":
                call = ToolCall(
                    kind, call_id, str(extra.get("subagentName") or ""), str(extra.get("subagentNodeId") or ""),
                    ev.content, ev.timestamp,
                )  # fmt: skip
            elif kind == "flow":
                call = ToolCall(
                    kind, call_id, str(extra.get("flowName") or ""), str(extra.get("flowId") or ""),
                    _json_or_text(ev.content), ev.timestamp,
                )  # fmt: skip
            else:
                tool, server = str(extra.get("tool") or ""), str(extra.get("server") or "")
                args = extra.get("arguments")
                call = ToolCall(kind, call_id, tool, f"{server}/{tool}", args if args is not None else {}, ev.timestamp)
            agent = agent or ev.node_id
            open_calls[call_id] = call
        elif call_id in open_calls:
            call = open_calls.pop(call_id)
            call.ended, call.result = ev.timestamp, ev.content
            done.append(call)
    done.sort(key=lambda c: c.started)
    return agent, done


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def groups(calls: list[ToolCall]) -> list[list[ToolCall]]:
    """Calls made in one model turn (each starting before the group's others ended) together."""
    out: list[list[ToolCall]] = []
    for call in calls:
        if out and any(other.ended is None or call.started < other.ended for other in out[-1]):
            out[-1].append(call)
        else:
            out.append([call])
    return out


# ------------------------------------------------------------------------------ the proposal
def proposal_request(request: str, calls: list[ToolCall]) -> str:
    lines = [f"User request:\n{request}", "", "Tool calls, in order:"]
    for i, c in enumerate(calls, 1):
        lines.append(f"{i}. {c.kind} {c.name}: {json.dumps(c.arguments, ensure_ascii=False)}")
    return "\n".join(lines)


def parse_proposal(text: str) -> Proposal:
    """The model's answer as a :class:`Proposal`; :class:`LearnError` when it is not the JSON asked for."""
    body = text.strip()
    fence = re.match(r"^```(?:json)?\s*(.*?)\s*```$", body, re.S)
    try:
        raw = json.loads(fence.group(1) if fence else body)
    except ValueError:
        raise LearnError("the model's proposal is not JSON (learn it with --no-model to keep every literal)") from None
    if not isinstance(raw, dict):
        raise LearnError("the model's proposal is not a JSON object")
    variables = [v for v in raw.get("variables") or [] if isinstance(v, dict)]
    triggers = [t for t in raw.get("triggers") or [] if isinstance(t, str)]
    reasons = raw.get("reasons")
    if isinstance(reasons, str):
        reasons = [reasons] if reasons.strip() else []
    elif isinstance(reasons, list):
        reasons = [str(r) for r in reasons if r]
    else:
        reasons = []
    return Proposal(variables, triggers, reasons)


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return [json.dumps(value)] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


def check_proposal(proposal: Proposal, request: str, calls: list[ToolCall]) -> Proposal:
    """The usable part of ``proposal``: variables named as identifiers, once, whose ``from`` is in
    the request and in some call's arguments; triggers that compile and capture only those
    variables (at most three). What is dropped is said in ``reasons``."""
    out = Proposal(reasons=list(proposal.reasons))
    seen: set[str] = set()
    said = request.casefold()
    used = [s for c in calls for s in _strings(c.arguments)]
    for v in proposal.variables:
        name, source = str(v.get("name") or "").strip(), v.get("from")
        text = source if isinstance(source, str) else json.dumps(source) if source is not None else ""
        if not _NAME.match(name) or name in seen:
            out.reasons.append(f"dropped the variable '{name}': not a usable name")
            continue
        if not text or text.casefold() not in said or not any(text in s for s in used):
            out.reasons.append(f"dropped the variable '{name}': '{text}' is not both in the request and an argument")
            continue
        kind = v.get("type") if v.get("type") in _TYPES else "string"
        seen.add(name)
        out.variables.append({"name": name, "type": kind, "description": str(v.get("description") or ""), "from": text})
    for pattern in proposal.triggers:
        try:
            compiled = compile_trigger(pattern)
        except TriggerPatternError as err:
            out.reasons.append(f"dropped the trigger '{pattern}': {err.reason}")
            continue
        if not set(compiled.captures) <= seen:
            out.reasons.append(f"dropped the trigger '{pattern}': it captures a name that is not a variable")
            continue
        if len(out.triggers) < 3:
            out.triggers.append(pattern)
    return out


async def propose(provider: Any, request: str, calls: list[ToolCall], *, model: str = "") -> Proposal:
    """ONE request to the model for the variables and triggers, checked (:func:`check_proposal`)."""
    inv = AgentInvocation(
        node_id=LEARN_NODE,
        name="Learn a flow",
        system_prompt=_SYSTEM,
        user_content=proposal_request(request, calls),
        model=model,
        reasoning_effort="low",
        tools={"web_search": False, "subagents": False},
        subagents=[],
        response_format={"type": "json_object"},
    )
    result = await provider.complete(inv, NoToolsContext(LEARN_NODE))
    return check_proposal(parse_proposal(result.text), request, calls)


# ------------------------------------------------------------------------------ the workflow
def _templated(value: Any, variables: list[dict[str, Any]]) -> Any:
    """``value`` with each variable's ``from`` text replaced by a reference to it (a whole value
    that is exactly ``from`` becomes the reference alone, keeping the variable's type)."""
    if isinstance(value, dict):
        return {k: _templated(v, variables) for k, v in value.items()}
    if isinstance(value, list):
        return [_templated(v, variables) for v in value]
    for var in variables:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and json.dumps(value) == var["from"]:
            return "{{" + var["name"] + "}}"
    if not isinstance(value, str):
        return value
    for var in variables:
        if value == var["from"]:
            return "{{" + var["name"] + "}}"
    for var in sorted(variables, key=lambda v: -len(v["from"])):  # whole words only: "3" is not in "2023"
        value = re.sub(rf"(?<!\w){re.escape(var['from'])}(?!\w)", "{{" + var["name"] + "}}", value)
    return value


def _default(text: str, kind: str) -> Any:
    if kind in ("number", "json", "boolean"):
        try:
            return json.loads(text)
        except ValueError:
            return text
    return text


def build_flow(
    workflow: Workflow,
    agent_id: str,
    request: str,
    calls: list[ToolCall],
    proposal: Proposal,
    *,
    name: str,
    run_id: str,
    run_input: str | None = None,
) -> Workflow:
    """The learned workflow (see the module's docstring); raises :class:`LearnError`.
    ``request``: the agent's user content; ``run_input``: the run's input (Start's output)."""
    agent = workflow.node(agent_id)
    if agent is None or agent.type != "agent":
        raise LearnError(f"the run's workflow has no agent '{agent_id}'")
    variables = proposal.variables
    start_vars = [
        {"name": v["name"], "type": v["type"], "description": v["description"], "value": _default(v["from"], v["type"])}
        for v in variables
    ]
    nodes: list[dict[str, Any]] = [
        {"id": "start", "type": "start", "x": 80, "y": 160,
         "data": {"initialInput": _templated(request if run_input is None else run_input, variables),
                  "variables": start_vars}},
    ]  # fmt: skip
    connections: list[dict[str, Any]] = []

    def link(source: str, target: str) -> None:
        connections.append({"source": source, "target": target, "sourceHandle": "output", "targetHandle": "input"})

    tail, x, n = "start", 380, 0
    results: list[str] = []
    for group in groups(calls):
        ids = []
        for j, call in enumerate(group):
            n += 1
            node_id, var = f"call{n}", f"call{n}"
            nodes.append({"id": node_id, "type": _kind(call), "x": x, "y": 160 + 150 * j,
                          "data": {**_call_data(workflow, call, variables), "outputVar": var}})  # fmt: skip
            link(tail, node_id)
            ids.append(node_id)
            shown = json.dumps(_templated(call.arguments, variables), ensure_ascii=False)
            results.append(f"- {call.name} {shown}:\n{{{{{var}}}}}")
        x += 300
        if len(ids) > 1:  # one model turn's calls ran together: a fan-out and a join
            join = f"join{n}"
            nodes.append({"id": join, "type": "join", "x": x, "y": 160, "data": {"mode": "list"}})
            for i in ids:
                link(i, join)
            tail, x = join, x + 300
        else:
            tail = ids[0]
    d: Any = agent.data
    answer = {
        "agentName": d.agentName or "Answer",
        "systemPrompt": d.systemPrompt,
        "userPrompt": _templated(request, variables) + "\n\nResults of the steps already taken:\n" + "\n".join(results),
        "model": d.model,
        "reasoningEffort": d.reasoningEffort,
        "tools": {"web_search": False, "subagents": False},
    }
    if d.provider:
        answer["provider"] = d.provider
    nodes.append({"id": "answer", "type": "agent", "x": x, "y": 160, "data": answer})
    link(tail, "answer")
    raw = {
        "id": new_id("flow"),
        "name": name,
        "description": f"Learned from run {run_id[:12]}: {' '.join((run_input or request).split())[:120]}",
        "version": 1,
        "nodes": nodes,
        "connections": connections,
        "learnedFrom": {"runId": run_id, "reasons": proposal.reasons},
    }
    if proposal.triggers:
        raw["triggers"] = list(proposal.triggers)
    perms = (workflow.model_extra or {}).get("permissions") or getattr(workflow, "permissions", None)
    if perms is not None:
        raw["permissions"] = perms.model_dump(exclude_none=True) if hasattr(perms, "model_dump") else perms
    if workflow.model_extra and workflow.model_extra.get("mcpServers"):
        raw["mcpServers"] = workflow.model_extra["mcpServers"]
    return parse_workflow(raw)


def _kind(call: ToolCall) -> str:
    return {"subagent": "agent", "flow": "flow", "tool": "mcp"}[call.kind]


def _call_data(workflow: Workflow, call: ToolCall, variables: list[dict[str, Any]]) -> dict[str, Any]:
    """The data of the node that makes ``call`` again."""
    if call.kind == "flow":
        args = call.arguments if isinstance(call.arguments, dict) else {"input": call.arguments}
        return {"flow": call.target, "inputs": _templated(args, variables)}
    if call.kind == "tool":
        server, _, tool = call.target.partition("/")
        return {"server": server, "tool": tool, "arguments": _templated(call.arguments, variables)}
    child = workflow.node(call.target)
    argument = _templated(str(call.arguments), variables)
    if child is None:
        return {"agentName": call.name or "Subagent", "userPrompt": argument}
    d: Any = child.data
    data: dict[str, Any] = {
        "agentName": d.agentName or call.name,
        "systemPrompt": d.systemPrompt,
        "userPrompt": fill_prompt(d.userPrompt, argument),
        "model": d.model,
        "reasoningEffort": d.reasoningEffort,
        "tools": {"web_search": bool(d.tools.web_search), "subagents": False},
    }
    if d.provider:
        data["provider"] = d.provider
    return data


async def learn_from_run(
    workflow: Workflow,
    events: list[Any],
    state: Any,
    *,
    run_id: str,
    provider: Any = None,
    model: str = "",
    name: str | None = None,
) -> tuple[Workflow, Proposal]:
    """A finished run (its workflow, events and :class:`~engine.RunState`) as a learned workflow
    and the proposal it used; ``provider`` None keeps every argument literal (``--no-model``)."""
    if str(state.status) != "completed":
        raise LearnError(f"run {run_id[:12]} is {state.status}: only a completed run can be learned")
    agent_id, calls = tool_calls(events)
    if agent_id is None or not calls:
        raise LearnError(f"run {run_id[:12]}: no agent called a tool, so there are no steps to learn")
    details = state.details.get(agent_id)
    request = (details.input if details is not None else None) or ""
    start = workflow.start_node()
    start_details = state.details.get(start.id) if start is not None else None
    run_input = start_details.output if start_details is not None and start_details.output is not None else None
    if provider is None:
        proposal = Proposal(reasons=["--no-model: every argument is kept as it was written"])
    else:
        proposal = await propose(provider, f"{run_input or ''}\n{request}".strip(), calls, model=model)
    agent = workflow.node(agent_id)
    title = (
        name
        or f"{getattr(agent.data if agent is not None else None, 'agentName', '') or workflow.name or 'Agent'} (learned)"
    )
    return build_flow(
        workflow, agent_id, request, calls, proposal, name=title, run_id=run_id, run_input=run_input
    ), proposal
