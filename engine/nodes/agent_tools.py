"""An agent's tools beyond its subagents: the checks that read the library and the MCP settings,
the answer to a tool call waiting for approval, and the pause that makes it wait.

* :func:`check_flow_tools`: each ``tools.flows`` entry is in the library and cannot pause;
* :func:`check_mcp_tools`: each server ``tools.mcp`` names is declared (settings or ``mcpServers``);
* :func:`arguments_problem`: what is wrong with the arguments an approval gives a call;
* :func:`pause_for`: the step's pause made from the provider's
  :class:`~engine.llm.tools.ToolApprovalPending` (docs/design.md, "Approving tool calls").

How the tools are declared (:func:`~engine.nodes.agent.flow_refs`,
:func:`~engine.nodes.agent.approve_mode`) and the node's state while a call waits
(:class:`~engine.nodes.agent.ToolPause`) are part of the kind's declaration in
engine/nodes/agent.py, which loads this module by name only for a node that offers such tools
(or a run that waits on one): validating a workflow without them never reads the library or
the MCP configuration. Nothing here holds run state of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.flows.library import default_library, workflow_can_pause
from engine.mcp.calls import check_arguments, tool_entries
from engine.mcp.config import servers_for
from engine.nodes.agent import ToolPause, approve_mode, flow_refs
from engine.nodes.base import PauseRequest

if TYPE_CHECKING:
    from engine.llm.tools import ToolApprovalPending

__all__ = [
    "ToolPause",
    "pause_for",
    "check_flow_tools",
    "check_mcp_tools",
    "arguments_problem",
    "flow_refs",
    "approve_mode",
]


def pause_for(ctx: Any, node_id: str, name: str, pause: ToolApprovalPending, call: Any) -> PauseRequest:
    """The pause of an agent step whose model called a tool that asks for approval."""
    tool = pause.tool
    label = tool.label or tool.name
    shown = f"{tool.server}/{label}" if tool.server else label
    what = {"subagent": "the subagent", "flow": "the flow", "mcp": "the tool"}.get(tool.kind, "the tool")
    arguments = ctx.mask(pause.arguments, call.secrets) if call.secrets else pause.arguments
    held = ToolPause(
        ctx.mask(pause.conversation, call.secrets) if call.secrets else pause.conversation,  # (kept in snapshots)
        dict(call.tool_decisions or {}),
        {
            "callId": pause.call.id,
            "tool": label,
            "kind": tool.kind,
            "server": tool.server,
            "arguments": arguments,
            "schema": tool.parameters,
        },
        f"{name} wants to call {what} '{shown}'. Approve the call?",
    )
    ctx.set_state(node_id, held)
    return PauseRequest(held.prompt, held.extra())


def check_flow_tools(node: Any, checks: Any, flows: list[str]) -> None:
    """Each flow an agent offers as a tool exists in the library and cannot wait for an approval."""
    library = getattr(checks, "library", None) or default_library()
    base = getattr(checks, "path", None)
    for ref, _approve_mode in flow_refs(flows):
        entry = library.resolve(ref, base=base, by_name=False)
        if entry is None:
            checks.error(
                "flow_tool_missing",
                f"{checks.label(node)} offers the flow '{ref}' as a tool, but it is not in the library.",
            )
            continue
        own = getattr(checks, "workflow_id", None)
        if own and entry.id == own:
            checks.error(
                "flow_recursive",
                f"{checks.label(node)} offers the flow it is part of ('{entry.name}') as a "
                "tool; a flow cannot run itself.",
            )
            continue
        try:
            pauses = workflow_can_pause(
                library.load_path(entry.path), library, base=entry.path, _seen={str(entry.path)}
            )
        except Exception:
            pauses = False
        if pauses:
            checks.error(
                "flow_tool_pauses",
                f"{checks.label(node)} cannot offer the flow '{entry.name}' as a tool: it "
                "can wait for an approval, and a tool call cannot pause.",
            )


def check_mcp_tools(node: Any, checks: Any, raw: Any) -> None:
    """Each server an agent's ``tools.mcp`` names is declared (settings or ``mcpServers``)."""
    try:
        workflow = checks.index.workflow
    except (AttributeError, ReferenceError):
        workflow = None
    known = servers_for(workflow)
    entries = tool_entries(raw)
    if len(entries) != len(raw):
        checks.error(
            "agent_bad_mcp_tools",
            f'{checks.label(node)}: each tools.mcp entry needs a server ({{server, tools: [names] | "*"}}).',
        )
    for entry in entries:
        if entry["server"] not in known:
            checks.error(
                "mcp_server_unknown",
                f"{checks.label(node)} uses the MCP server '{entry['server']}', which is declared neither in "
                "the settings (mcp.servers) nor in the workflow's mcpServers.",
            )


def arguments_problem(schema: dict[str, Any] | None, arguments: Any) -> str | None:
    """Why the arguments an approval gives a waiting tool call do not fit the tool's input
    ``schema`` (the answer is refused with it); None when they fit."""
    problem = check_arguments(schema, arguments)
    return f"the arguments do not fit the tool's input schema: {problem}" if problem else None
