"""Function tools offered to a model: subagents and ``web_search``.

Invariants
* Each subagent child of an agent is one tool named ``spec.tool_name`` whose schema is
  :func:`engine.llm.base.tool_schema`; calling it goes through ``ctx.call_subagent``,
  which emits the ``subagent_call_*`` events (tools never build those payloads).
* The tool calls of one model turn run concurrently (``asyncio.gather``); results come
  back in the order of the calls.
* A tool never crashes the loop: a failing call answers ``"Error: ..."`` so the model
  can react. Cancellation is not a failure and propagates.
* Without a search backend, ``web_search`` answers a message saying so.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from engine.llm.base import (
    AgentInvocation,
    DirectOutput,
    FlowToolSpec,
    LLMError,
    ProviderContext,
    SubagentSpec,
    tool_schema,
)

__all__ = ["Tool", "ToolCall", "WebSearch", "build_tools", "run_tool_calls", "WEB_SEARCH_TOOL"]

log = logging.getLogger("flowdesk.llm")

WEB_SEARCH_TOOL = "web_search"
NO_SEARCH_BACKEND = (
    "Web search is not available: no search backend is configured (set FLOWDESK_SEARXNG_URL "
    "or webSearch.searxngUrl in the Flowdesk settings). Answer from what you know."
)


@dataclass(slots=True)
class Tool:
    name: str
    description: str
    parameters: dict[str, Any]
    run: Callable[[dict[str, Any]], Awaitable[str]]


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

    return Tool(spec.tool_name, spec.description, tool_schema(spec), run)


def _flow_tool(spec: FlowToolSpec, ctx: ProviderContext) -> Tool:
    async def run(args: dict[str, Any]) -> str:
        return await ctx.call_flow(spec, args)

    return Tool(spec.tool_name, spec.tool_description, spec.parameters, run)


def build_tools(inv: AgentInvocation, ctx: ProviderContext, search: WebSearch | None) -> dict[str, Tool]:
    """The tools this agent gets, by name."""
    tools: dict[str, Tool] = {}
    for spec in inv.subagents:
        tool = _subagent_tool(spec, ctx)
        tools[tool.name] = tool
    for flow in getattr(inv, "flows", None) or ():
        tool = _flow_tool(flow, ctx)
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


async def run_tool_calls(calls: list[ToolCall], tools: dict[str, Tool]) -> list[str]:
    """Run one turn's tool calls concurrently; their results in call order."""
    return list(await asyncio.gather(*(_run_one(c, tools) for c in calls)))
