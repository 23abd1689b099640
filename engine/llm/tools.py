"""Function tools offered to a model: subagents, library flows, MCP tools and ``web_search``.

Invariants
* Each subagent child of an agent is one tool named ``spec.tool_name`` whose schema is
  :func:`engine.llm.base.tool_schema`; calling it goes through ``ctx.call_subagent``,
  which emits the ``subagent_call_*`` events (tools never build those payloads).
* The tool calls of one model turn run concurrently (``asyncio.gather``); results come
  back in the order of the calls.
* A tool never crashes the loop: a failing call answers ``"Error: ..."`` so the model
  can react. Cancellation is not a failure and propagates.
* Without a search backend, ``web_search`` answers a message saying so.
* Approving tool calls (docs/design.md, "Approving tool calls"): a tool whose ``approve`` is
  ``ask`` is called only once a person decided. Before any call of a turn runs, each asking
  call is looked up in the context's ``tool_decisions`` (call id -> answer); the first with no
  answer stops the turn with :class:`ToolApprovalPending` (nothing of the turn has run, so the
  turn is replayed as a whole once answered). An approved call runs with the arguments the
  person gave, when given; a rejected one answers the model ``DECLINED`` plus the note. A
  context that cannot pause (``tool_decisions`` None: a subagent's own loop) answers the model
  that the call needs an approval it cannot get there.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from engine.errors import FlowdeskError
from engine.llm.base import (
    AgentInvocation,
    DirectOutput,
    FlowToolSpec,
    LLMError,
    McpToolSpec,
    ProviderContext,
    SubagentSpec,
    flow_tool_arguments,
    tool_schema,
)
from engine.llm.structured import example_for_schema

__all__ = [
    "Tool",
    "ToolCall",
    "WebSearch",
    "build_tools",
    "run_tool_calls",
    "WEB_SEARCH_TOOL",
    "ToolApprovalPending",
    "DECLINED",
    "declined_text",
    "each_tool_once",
    "has_asking_tools",
    "pending_to_json",
    "pending_from_json",
]

log = logging.getLogger("flowdesk.llm")

WEB_SEARCH_TOOL = "web_search"
NO_SEARCH_BACKEND = (
    "Web search is not available: no search backend is configured (set FLOWDESK_SEARXNG_URL "
    "or webSearch.searxngUrl in the Flowdesk settings). Answer from what you know."
)


DECLINED = "The user declined this call."


def declined_text(note: str | None) -> str:
    """What a model gets as the result of a call a person rejected."""
    note = (note or "").strip()
    return f"{DECLINED} Note: {note}" if note else DECLINED


@dataclass(slots=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[dict[str, Any]], Awaitable[str]]
    approve: str = "always"
    kind: str = "function"  # subagent, flow, mcp, web_search
    label: str = ""  # the tool's own name (an MCP tool's, a flow's, a subagent's)
    server: str | None = None  # an MCP tool's server


class ToolApprovalPending(FlowdeskError):
    """A turn's call waits for a person's decision (not a failure: the agent's step pauses).

    ``call``, ``tool`` and ``arguments`` (parsed) say what waits; ``conversation`` is set by a
    provider with a conversation to keep (the messages so far and the turn, as JSON) so that
    the step, taken again once answered, goes on from there instead of asking the model again.
    """

    def __init__(self, call: ToolCall, tool: Tool, arguments: dict[str, Any]) -> None:
        super().__init__(f"the call of '{tool.label or tool.name}' waits for approval")
        self.call = call
        self.tool = tool
        self.arguments = arguments
        self.conversation: dict[str, Any] | None = None


@dataclass(slots=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # the JSON text the model produced


class WebSearch:
    """SearxNG's JSON API (``{url}/search?q=...&format=json``), top results as text."""

    def __init__(self, url: str | None, client: httpx.AsyncClient, max_results: int = 5) -> None:
        self.url = url.rstrip("/") if url else None
        self.client = client
        self.max_results = max_results

    async def __call__(self, query: str) -> str:
        if not self.url:
            return NO_SEARCH_BACKEND
        if not query.strip():
            return "Error: the search query is empty."
        endpoint = f"{self.url}/search"
        try:
            resp = await self.client.get(endpoint, params={"q": query, "format": "json"})
            resp.raise_for_status()
            data = resp.json()
        except httpx.HTTPStatusError as err:
            return f"Error: the search backend at {endpoint} answered HTTP {err.response.status_code}."
        except httpx.HTTPError as err:
            return f"Error: the search backend at {endpoint} could not be reached ({type(err).__name__})."
        except ValueError:
            return f"Error: the search backend at {endpoint} did not answer JSON (is format=json enabled?)."
        results = data.get("results") if isinstance(data, dict) else None
        if not results:
            return f"No results for '{query}'."
        lines = []
        for i, r in enumerate(results[: self.max_results], 1):
            if isinstance(r, dict):
                title, snippet = str(r.get("title", "")).strip(), str(r.get("content", "")).strip()
                lines.append(f"{i}. {title} — {r.get('url', '')}\n   {snippet}")
        return "\n".join(lines)


def _subagent_tool(spec: SubagentSpec, ctx: ProviderContext) -> Tool:
    async def run(args: dict[str, Any]) -> str:
        value = args.get("input")
        if not isinstance(value, str):
            strings = [v for v in args.values() if isinstance(v, str)]
            value = strings[0] if len(strings) == 1 else json.dumps(args, ensure_ascii=False)
        return await ctx.call_subagent(spec, value)

    return Tool(spec.tool_name, spec.description, tool_schema(spec), run, spec.approve, "subagent", spec.name)


def _flow_tool(spec: FlowToolSpec, ctx: ProviderContext) -> Tool:
    async def run(args: dict[str, Any]) -> str:
        return await ctx.call_flow(spec, args)

    return Tool(spec.tool_name, spec.tool_description, spec.parameters, run, spec.approve, "flow", spec.flow_id)


def _mcp_tool(spec: McpToolSpec, ctx: ProviderContext) -> Tool:
    async def run(args: dict[str, Any]) -> str:
        return await ctx.call_mcp(spec, args)

    return Tool(
        spec.tool_name, spec.tool_description, spec.parameters, run, spec.approve, "mcp", spec.tool, spec.server
    )


def build_tools(inv: AgentInvocation, ctx: ProviderContext, search: WebSearch | None) -> dict[str, Tool]:
    """The tools this agent gets, by name."""
    tools: dict[str, Tool] = {}
    for spec in inv.subagents:
        tool = _subagent_tool(spec, ctx)
        tools[tool.name] = tool
    for flow in getattr(inv, "flows", None) or ():
        tool = _flow_tool(flow, ctx)
        tools[tool.name] = tool
    for spec in getattr(inv, "mcp_tools", None) or ():
        tool = _mcp_tool(spec, ctx)
        tools[tool.name] = tool
    if search is not None:

        async def run_search(args: dict[str, Any]) -> str:
            query = args.get("query")
            return await search(query if isinstance(query, str) else json.dumps(args, ensure_ascii=False))

        tools[WEB_SEARCH_TOOL] = Tool(
            WEB_SEARCH_TOOL,
            "Search the web and get the top results (title, URL, snippet).",
            {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "What to search for."}},
                "required": ["query"],
            },
            run_search,
        )
    return tools


def _parse_arguments(text: str) -> dict[str, Any]:
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {"input": text, "query": text}  # a model that wrote plain text instead of JSON
    if isinstance(value, dict):
        return value
    return {"input": value if isinstance(value, str) else json.dumps(value)}


async def _run_one(call: ToolCall, tools: dict[str, Tool]) -> str:
    tool = tools.get(call.name)
    if tool is None:
        return f"Error: there is no tool named '{call.name}'. Available: {', '.join(tools) or 'none'}."
    try:
        return await tool.run(_parse_arguments(call.arguments))
    except DirectOutput:  # the answer itself: the caller's loop ends
        raise
    except LLMError as err:
        return f"Error: {err}"
    except Exception as err:  # a tool bug must not end the conversation
        log.warning("tool %s failed", call.name, exc_info=True)
        return f"Error: {type(err).__name__}: {err}"


async def _decided(call: ToolCall, tools: dict[str, Tool], answer: dict[str, Any] | None, can_ask: bool) -> str:
    """A call whose tool asks for approval: its result once decided (or why it cannot be asked)."""
    if answer is None:
        name = tools[call.name].label or call.name
        assert not can_ask
        return (
            f"Error: calling '{name}' needs a person's approval, which cannot be asked here "
            "(only a workflow step's own tool calls can wait for one)."
        )
    if answer.get("decision") != "approve":
        return declined_text(answer.get("note"))
    arguments = answer.get("arguments")
    if isinstance(arguments, dict):
        call = ToolCall(call.id, call.name, json.dumps(arguments, ensure_ascii=False))
    return await _run_one(call, tools)


async def run_tool_calls(calls: list[ToolCall], tools: dict[str, Tool], ctx: Any = None) -> list[str]:
    """Run one turn's tool calls concurrently; their results in call order.

    Calls of tools that ask for approval are checked first (see the module's docstring): one
    with no decision yet raises :class:`ToolApprovalPending` before anything of the turn runs."""
    decisions = getattr(ctx, "tool_decisions", None) if ctx is not None else None
    asking: dict[int, dict[str, Any] | None] = {}
    for i, call in enumerate(calls):
        tool = tools.get(call.name)
        if tool is None or tool.approve != "ask":
            continue
        answer = decisions.get(call.id) if decisions is not None else None
        if answer is None and decisions is not None:
            raise ToolApprovalPending(call, tool, _parse_arguments(call.arguments))
        asking[i] = answer
    if not asking:
        return list(await asyncio.gather(*(_run_one(c, tools) for c in calls)))
    return list(
        await asyncio.gather(
            *(
                _decided(c, tools, asking[i], decisions is not None) if i in asking else _run_one(c, tools)
                for i, c in enumerate(calls)
            )
        )
    )


def has_asking_tools(inv: AgentInvocation) -> bool:
    """Whether a tool offered to the agent asks for approval before a call."""
    if not (inv.subagents or inv.flows or inv.mcp_tools):  # (every echo step asks: kept cheap)
        return False
    specs: list[Any] = [*inv.subagents, *(inv.flows or ()), *(inv.mcp_tools or ())]
    return any(getattr(s, "approve", "always") == "ask" for s in specs)


async def each_tool_once(
    inv: AgentInvocation, ctx: ProviderContext, text: str, *, subagents: bool = True, flows: bool = True
) -> list[tuple[str, str]]:
    """Providers without function calling (echo, local) call each offered tool once with the
    agent's input: a subagent with ``text``, a flow with ``text`` for its string parameters, an
    MCP tool with arguments built from its schema and ``text``. One turn through
    :func:`run_tool_calls` (so approvals apply); ``(label, result)`` in that order. The call
    ids are fixed (``tool_<n>``): the same turn made again after a pause finds its decisions."""
    tools = build_tools(inv, ctx, None)
    calls: list[ToolCall] = []
    labels: list[str] = []
    if subagents:
        for spec in inv.subagents:
            calls.append(
                ToolCall(f"tool_{len(calls)}", spec.tool_name, json.dumps({"input": text}, ensure_ascii=False))
            )
            labels.append(spec.name or spec.node_id)
    if flows:
        for flow in inv.flows or ():
            args = flow_tool_arguments(flow, text)
            calls.append(ToolCall(f"tool_{len(calls)}", flow.tool_name, json.dumps(args, ensure_ascii=False)))
            labels.append(flow.name)
    for tool in inv.mcp_tools or ():
        args = example_for_schema(tool.parameters or {"type": "object"}, text)
        calls.append(
            ToolCall(
                f"tool_{len(calls)}",
                tool.tool_name,
                json.dumps(args if isinstance(args, dict) else {}, ensure_ascii=False),
            )
        )
        labels.append(f"{tool.server}/{tool.tool}")
    if not calls:
        return []
    results = await run_tool_calls(calls, tools, ctx)
    return list(zip(labels, results, strict=True))


def pending_to_json(pause: ToolApprovalPending) -> dict[str, Any]:
    """A waiting call as JSON (a Temporal worker hands it back to the workflow, which pauses)."""
    t = pause.tool
    return {
        "call": {"id": pause.call.id, "name": pause.call.name, "arguments": pause.call.arguments},
        "tool": {
            "name": t.name,
            "description": t.description,
            "parameters": t.parameters,
            "kind": t.kind,
            "label": t.label,
            "server": t.server,
        },
        "arguments": pause.arguments,
        "conversation": pause.conversation,
    }


def pending_from_json(data: dict[str, Any]) -> ToolApprovalPending:
    """:func:`pending_to_json` read back (its tool cannot be run: it only says what waits)."""

    async def not_here(_args: dict[str, Any]) -> str:  # pragma: no cover - never called
        raise LLMError("this tool call is answered where the run pauses")

    c, t = data["call"], data["tool"]
    tool = Tool(
        t["name"],
        t.get("description", ""),
        t.get("parameters") or {},
        not_here,
        "ask",
        t.get("kind", "function"),
        t.get("label", ""),
        t.get("server"),
    )
    pause = ToolApprovalPending(ToolCall(c["id"], c["name"], c["arguments"]), tool, data.get("arguments") or {})
    pause.conversation = data.get("conversation")
    return pause
