"""The ``mcp`` node: calls one tool of an MCP server, deterministically (no model in between).

Data: ``server`` (a name declared in the settings' ``mcp.servers`` or the workflow's
``mcpServers``), ``tool`` (the tool's name on it), ``arguments`` (an object; every string a
template, a whole-field reference keeps its type), ``outputVar`` and the step policies. The
output is the tool's structured content when it gives one, else its text. The call is logged
``tool_call_start`` / ``tool_call_end`` / ``tool_call_error`` on the node (``{tool, server,
callId, arguments, result | error}``); a result the server flags as an error, arguments that do
not fit the tool's input schema, or a server that cannot be reached fail the step with a message
naming the server. The workflow's ``permissions.tools`` bound it (``permission_denied``); with
no ``permissions``, the tool it names is allowed. The connection is the run's (engine/mcp/pool.py).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from engine.mcp.calls import call_tool_logged
from engine.mcp.config import McpError, servers_for
from engine.nodes.base import NodeData, NodeError, NodeSpec, PolicyData, resolve_for_step

__all__ = ["McpData", "McpSpec", "SPEC"]


class McpData(PolicyData):
    server: str = ""
    tool: str = ""
    arguments: dict[str, Any] = Field(default_factory=dict)

    @field_validator("server", "tool", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v

    @field_validator("arguments", mode="before")
    @classmethod
    def _arguments(cls, v: Any) -> Any:
        return {} if v is None else v


class McpSpec(NodeSpec):
    kind = "mcp"
    data_model = McpData
    label = "MCP tool"
    description = "Calls one tool of an MCP server with the arguments you give."
    icon = "mcp"
    color = "#0f766e"
    width = 232.0
    category = "Acting"
    works = True

    def title(self, data: NodeData) -> str:
        tool = getattr(data, "tool", "")
        return f"MCP: {tool}" if tool else self.label

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        server = getattr(data, "server", "") or "(no server)"
        args = getattr(data, "arguments", {}) or {}
        return [(server, False)] + ([(", ".join(args)[:80], True)] if args else [])

    def new_data(self) -> dict[str, Any]:
        return {"server": "", "tool": "", "arguments": {}}

    def check(self, node: Any, checks: Any) -> None:
        data = node.data
        label = checks.label(node)
        if not data.server.strip():
            checks.error("mcp_no_server", f"{label} has no MCP server chosen.")
        else:
            try:
                workflow = checks.index.workflow
            except (AttributeError, ReferenceError):
                workflow = None
            if data.server not in servers_for(workflow):
                checks.error(
                    "mcp_server_unknown",
                    f"{label} uses the MCP server '{data.server}', which is declared neither in the "
                    "settings (mcp.servers) nor in the workflow's mcpServers.",
                )
        if not data.tool.strip():
            checks.error("mcp_no_tool", f"{label} has no tool chosen.")

    async def execute(self, ctx: Any, node: Any, value: Any) -> tuple[Any, str]:
        data, secrets = resolve_for_step(ctx, node, value)
        server, tool = str(data.get("server") or "").strip(), str(data.get("tool") or "").strip()
        if not server or not tool:
            raise NodeError(f"{self.describe(node)} needs a server and a tool.")
        arguments = data.get("arguments") or {}
        if not isinstance(arguments, dict):
            raise NodeError(f"{self.describe(node)}: 'arguments' must be an object of argument names and values.")
        if getattr(ctx, "memo", None) is None:  # a Temporal worker's step context: no run to share connections
            raise NodeError(
                f"{self.describe(node)}: MCP steps cannot run on a Temporal worker yet; run this flow here."
            )
        try:
            outcome = await call_tool_logged(ctx, node.id, server, tool, arguments, secrets=frozenset(secrets))
        except McpError as err:
            raise NodeError(str(err)) from None
        value = ctx.mask(outcome.value, secrets) if secrets else outcome.value  # (an echoed secret)
        return value, "output"


SPEC = McpSpec()
