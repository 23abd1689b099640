"""Calling MCP tools from a run: an agent's ``tools.mcp`` and the ``mcp`` kind.

* :func:`mcp_tools_of` turns an agent's ``tools.mcp`` entries (``{server, tools: [names] | "*",
  approve?}``) into the :class:`~engine.llm.base.McpToolSpec` offered to its model, each with
  the tool's input schema as the server lists it. A named tool the workflow's ``permissions``
  do not grant fails the step (``permission_denied``); ``"*"`` offers only the granted ones.
* :func:`call_tool_logged` makes one call, logged on a node as ``tool_call_start`` then
  ``tool_call_end`` or ``tool_call_error`` with ``{tool, server, callId, arguments, result |
  error}`` (docs/design.md, "Contract details"). Arguments are checked against the tool's input
  schema first (``jsonschema``; the SDK does not). A result the server flags as an error is a
  ``tool_call_error`` too.
* :func:`call_for_model` is an agent's call: whatever happens, the model gets text (the result,
  or ``Error: …``) and the run goes on.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

from engine.graph.permissions import PermissionDenied, access_for
from engine.graph.templates import mask_secrets
from engine.llm.base import McpToolSpec, mcp_function_name
from engine.mcp.config import McpError
from engine.mcp.pool import pool_for
from engine.mcp.results import ToolInfo, ToolOutcome
from engine.run.events import EventType

__all__ = ["mcp_tools_of", "call_tool_logged", "call_for_model", "check_arguments", "tool_entries"]

_START = EventType.TOOL_CALL_START.value
_END = EventType.TOOL_CALL_END.value
_ERROR = EventType.TOOL_CALL_ERROR.value


def tool_entries(raw: Any) -> list[dict[str, Any]]:
    """An agent's ``tools.mcp`` as a list of ``{server, tools, approve}`` (bad entries left out)."""
    out = []
    for entry in raw or ():
        if isinstance(entry, str) and entry.strip():  # "server" or "server/tool"
            server, _, tool = entry.strip().partition("/")
            entry = {"server": server, "tools": [tool] if tool and tool != "*" else "*"}
        if not isinstance(entry, dict) or not str(entry.get("server") or "").strip():
            continue
        tools = entry.get("tools", "*")
        if isinstance(tools, str):
            tools = "*" if tools.strip() in ("", "*") else [tools.strip()]
        elif isinstance(tools, list):
            tools = [str(t) for t in tools if str(t).strip()]
        else:
            tools = "*"
        approve = "ask" if str(entry.get("approve") or "").strip().lower() == "ask" else "always"
        out.append({"server": str(entry["server"]).strip(), "tools": tools, "approve": approve})
    return out


async def mcp_tools_of(ctx: Any, node: Any, raw: Any) -> list[McpToolSpec]:
    """The MCP tools an agent offers its model (see the module's docstring)."""
    entries = tool_entries(raw)
    if not entries:
        return []
    if _in_temporal_workflow():
        # A run on a Temporal server: the step's model call is an activity, and the worker that
        # runs it lists and calls the tools (engine/temporal/activities.py); a workflow does no I/O.
        return []
    pool = pool_for(ctx)
    access = access_for(ctx.workflow, open_by_default=True)
    specs: list[McpToolSpec] = []
    taken: set[str] = set()
    for entry in entries:
        server = entry["server"]
        listing = {t.name: t for t in await pool.tools(server)}
        if entry["tools"] == "*":
            chosen = [t for t in listing.values() if access.allows_tool(server, t.name)]
        else:
            chosen = []
            for name in entry["tools"]:
                access.check_tool(server, name)
                info = listing.get(name)
                if info is None:
                    info = await pool.tool(server, name)  # McpError naming it when it has none
                chosen.append(info)
        for info in chosen:
            fname = mcp_function_name(server, info.name, taken)
            taken.add(fname)
            specs.append(McpToolSpec(server, info.name, info.description, info.input_schema, entry["approve"], fname))
    return specs


def _in_temporal_workflow() -> bool:
    """Whether this code runs inside a Temporal workflow (only when temporalio is loaded already)."""
    module = sys.modules.get("temporalio.workflow")
    try:
        return bool(module is not None and module.in_workflow())
    except Exception:  # an older SDK without in_workflow: not known, so not refused
        return False


def check_arguments(schema: dict[str, Any] | None, arguments: Any) -> str | None:
    """Why ``arguments`` do not fit the tool's input schema (None when they do)."""
    if not isinstance(arguments, dict):
        return "the arguments must be a JSON object"
    if not schema:
        return None
    try:
        import jsonschema
    except ImportError:  # (the mcp extra brings it; without it the server checks them)
        return None
    try:
        jsonschema.validate(arguments, schema)
    except jsonschema.ValidationError as err:
        where = "/".join(str(p) for p in err.absolute_path)
        return f"{where + ': ' if where else ''}{err.message}"
    except jsonschema.SchemaError:
        return None  # the server's schema is broken: let the server judge
    return None


async def call_tool_logged(
    ctx: Any,
    node_id: str,
    server: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    info: ToolInfo | None = None,
    parent_call: str | None = None,
    depth: int = 0,
    secrets: frozenset[str] | set[str] = frozenset(),
) -> ToolOutcome:
    """One call, logged on ``node_id``. Raises :class:`McpError` when it could not be made or the
    server flagged its result as an error (after logging ``tool_call_error``), and
    :class:`PermissionDenied` when the workflow's permissions do not grant it."""
    access_for(ctx.workflow, open_by_default=True).check_tool(server, tool)
    call_id = ctx.next_call_id()
    pool = pool_for(ctx)
    shown_args = mask_secrets(arguments, secrets) if secrets else arguments
    base: dict[str, Any] = {"tool": tool, "server": server, "callId": call_id, "arguments": shown_args}
    if parent_call:
        base["parentCallId"] = parent_call
    if depth:
        base["depth"] = depth
    ctx.emit(node_id, _START, json.dumps(shown_args, ensure_ascii=False), extra=base)

    def failed(message: str) -> McpError:
        hidden = set(secrets) | pool.secrets
        message = str(mask_secrets(message, hidden)) if hidden else message
        ctx.emit(node_id, _ERROR, message, extra={**base, "error": message})
        return McpError(message)

    try:
        if info is None:
            info = await pool.tool(server, tool)
    except McpError as err:
        raise failed(str(err)) from None
    problem = check_arguments(info.input_schema, arguments)
    if problem:
        raise failed(f"The arguments of '{server}/{tool}' do not fit its input schema: {problem}")
    try:
        outcome = await pool.call(server, tool, arguments)
    except McpError as err:
        raise failed(str(err)) from None
    except asyncio.CancelledError:
        failed("cancelled")
        raise
    except Exception as err:  # an SDK surprise: still a clear step error naming the server
        raise failed(f"The call of '{server}/{tool}' failed: {err}") from None
    hidden = set(secrets) | pool.secrets
    if hidden:  # a server that echoes a secret it was given: never shown, logged or passed on
        outcome = ToolOutcome(
            mask_secrets(outcome.value, hidden), str(mask_secrets(outcome.text, hidden)), outcome.is_error
        )
    if outcome.is_error:
        raise failed(str(outcome.value) or f"The tool '{server}/{tool}' reported an error.")
    ctx.emit(node_id, _END, outcome.text, extra={**base, "result": outcome.value})
    return outcome


async def call_for_model(ctx: Any, parent: Any, spec: McpToolSpec, arguments: dict[str, Any]) -> str:
    """An agent's model calls an MCP tool (``parent``: its ProviderCall): the result as text, or
    ``Error: …`` (a failing or refused call goes back to the model; the run goes on)."""
    info = ToolInfo(spec.tool, spec.description, spec.parameters)
    try:
        outcome = await call_tool_logged(
            ctx,
            parent.node_id,
            spec.server,
            spec.tool,
            arguments,
            info=info,
            parent_call=parent.call_id,
            depth=parent.depth + 1,
            secrets=parent.secrets,
        )
    except (McpError, PermissionDenied) as err:
        return f"Error: {err}"
    return outcome.text
