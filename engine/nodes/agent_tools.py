"""An agent's tools beyond its subagents: how they are declared and a call waiting for approval.

* ``tools.flows`` entries (:func:`flow_refs`: an id, or ``{flow, approve}``) and ``tools.mcp``
  entries (checked by :func:`check_mcp_tools`: each server declared);
* ``approve`` (:func:`approve_mode`): ``"ask"`` or ``"always"`` (anything else);
* :class:`ToolPause`, the agent node's state while a call waits for a person (docs/design.md,
  "Approving tool calls"), and :func:`pause_for`, the step's pause made from the provider's
  :class:`~engine.llm.tools.ToolApprovalPending`.

The agent kind (engine/nodes/agent.py) uses these; they hold no run state of their own.
"""

from __future__ import annotations

from typing import Any

from engine.llm.tools import ToolApprovalPending
from engine.mcp.calls import tool_entries
from engine.mcp.config import servers_for
from engine.nodes.base import PauseRequest

__all__ = ["ToolPause", "pause_for", "check_mcp_tools", "flow_refs", "approve_mode"]


def flow_refs(refs: Any) -> list[tuple[str, str]]:
    """``tools.flows`` as ``(library reference, approve)`` pairs: an entry is an id, or
    ``{flow (or id), approve}``."""
    out = []
    for ref in refs or ():
        if isinstance(ref, dict):
            target = ref.get("flow") or ref.get("id")
            if target:
                out.append((str(target), approve_mode(ref.get("approve"))))
        elif ref is not None and str(ref):
            out.append((str(ref), "always"))
    return out


def approve_mode(value: Any) -> str:
    return "ask" if isinstance(value, str) and value.strip().lower() == "ask" else "always"


class ToolPause:
    """An agent step paused before a tool call (its node's state while the run waits): the
    conversation kept by the provider (None for a provider without one: echo, local, which make
    the same calls again), the decisions given so far by call id, and the call that waits
    (``pending``: ``{callId, tool, kind, server, arguments, schema}``; None once answered)."""

    __slots__ = ("conversation", "decisions", "pending", "prompt")

    def __init__(
        self,
        conversation: dict[str, Any] | None,
        decisions: dict[str, dict[str, Any]],
        pending: dict[str, Any] | None,
        prompt: str = "",
    ) -> None:
        self.conversation = conversation
        self.decisions = decisions
        self.pending = pending
        self.prompt = prompt

    def extra(self) -> dict[str, Any] | None:
        """The ``wait_input`` event's fields: ``{kind: "tool_call", tool, server?, arguments, ...}``."""
        p = self.pending
        if p is None:
            return None
        extra: dict[str, Any] = {"kind": "tool_call", "tool": p.get("tool"), "arguments": p.get("arguments")}
        if p.get("server"):
            extra["server"] = p["server"]
        extra.update({"toolKind": p.get("kind"), "callId": p.get("callId"), "schema": p.get("schema")})
        return extra

    def to_json(self) -> dict[str, Any]:
        return {
            "conversation": self.conversation,
            "decisions": self.decisions,
            "pending": self.pending,
            "prompt": self.prompt,
        }

    @classmethod
    def from_json(cls, data: Any) -> ToolPause:
        data = data if isinstance(data, dict) else {}
        return cls(
            data.get("conversation"), dict(data.get("decisions") or {}), data.get("pending"), data.get("prompt") or ""
        )


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
