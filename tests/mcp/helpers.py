"""Workflows for the MCP tests."""

from __future__ import annotations

import json
from typing import Any

from engine.graph.model import parse_workflow


def workflow(*nodes: dict[str, Any], servers: dict[str, Any], chain: list[str] | None = None, **top: Any):
    """start → each node in turn; ``servers``: the workflow's ``mcpServers``."""
    chain = chain or [n["id"] for n in nodes]
    all_nodes = [{"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "hello"}}, *nodes]
    conns, prev = [], "start"
    for nid in chain:
        conns.append({"source": prev, "target": nid, "sourceHandle": "output", "targetHandle": "input"})
        prev = nid
    return parse_workflow({"name": "mcp test", "nodes": all_nodes, "connections": conns, "mcpServers": servers, **top})


def agent(node_id: str, mcp: list[dict[str, Any]], **data: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "type": "agent",
        "x": 0,
        "y": 0,
        "data": {
            "agentName": data.pop("name", "Worker"),
            "systemPrompt": "You are Worker.",
            "userPrompt": "",
            "model": "gpt-4o-mini",
            "tools": {"web_search": False, "subagents": False, "mcp": mcp},
            **data,
        },
    }


def mcp_node(node_id: str, server: str, tool: str, arguments: dict[str, Any], **data: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "type": "mcp",
        "x": 0,
        "y": 0,
        "data": {"server": server, "tool": tool, "arguments": arguments, **data},
    }


def tool_events(run: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(e.type, e.extra or {}) for e in run.events if e.type.startswith("tool_call_")]


def wire(run: Any, kind: str) -> list[dict[str, Any]]:
    return [json.loads(json.dumps(e.extra)) for e in run.events if e.type == kind]
