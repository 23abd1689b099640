"""Small builders for workflows and test providers used by the runtime tests."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from engine import AgentInvocation, LLMError, LLMResult, ProviderContext, Workflow, parse_workflow


def start(id: str = "s", text: str = "hello") -> dict[str, Any]:
    return {"id": id, "type": "start", "data": {"initialInput": text}}


def agent(
    id: str, prompt: str = "", *, name: str | None = None, subagents: bool = False, model: str = "m"
) -> dict[str, Any]:
    return {
        "id": id,
        "type": "agent",
        "data": {
            "agentName": name or id,
            "userPrompt": prompt,
            "model": model,
            "tools": {"web_search": False, "subagents": subagents},
        },
    }


def cond(id: str, *conds: tuple[str, str]) -> dict[str, Any]:
    return {"id": id, "type": "if", "data": {"conditions": [{"operator": o, "value": v} for o, v in conds]}}


def approval(id: str, prompt: str = "ok?") -> dict[str, Any]:
    return {"id": id, "type": "approval", "data": {"prompt": prompt}}


def link(source: str, target: str, handle: str = "output") -> dict[str, Any]:
    return {"source": source, "target": target, "sourceHandle": handle, "targetHandle": "input"}


def flow(nodes: list[dict[str, Any]], links: list[dict[str, Any]]) -> Workflow:
    return parse_workflow({"nodes": nodes, "connections": links})


class Recorder:
    """A provider that answers ``<node>(<content>)`` after a per-node delay and records timings."""

    name = "recorder"

    def __init__(self, delays: dict[str, float] | None = None, fail: dict[str, str] | None = None) -> None:
        self.delays = delays or {}
        self.fail = fail or {}
        self.calls: list[tuple[str, str]] = []
        self.spans: dict[str, tuple[float, float]] = {}
        self.cancelled: list[str] = []

    async def complete(self, inv: AgentInvocation, ctx: ProviderContext) -> LLMResult:
        self.calls.append((inv.node_id, inv.user_content))
        t0 = time.monotonic()
        try:
            if self.delays.get(inv.node_id):
                await asyncio.sleep(self.delays[inv.node_id])
        except asyncio.CancelledError:
            self.cancelled.append(inv.node_id)
            raise
        self.spans[inv.node_id] = (t0, time.monotonic())
        if inv.node_id in self.fail:
            raise LLMError(self.fail[inv.node_id])
        return LLMResult(text=f"{inv.node_id}({inv.user_content})")


def seq(run: Any, *, deltas: bool = False, ends: bool = False) -> list[tuple[str, str, str]]:
    """The run's events as (nodeId, type, content), without streamed deltas, and without the
    ``step_end`` every finished step logs unless ``ends`` (the data-flow tests check those)."""
    return [
        (e.node_id, str(e.type), e.content)
        for e in run.events
        if (deltas or e.type != "llm_delta") and (ends or e.type != "step_end")
    ]


def types(run: Any, *, ends: bool = False) -> list[tuple[str, str]]:
    return [(e.node_id, str(e.type)) for e in run.events if e.type != "llm_delta" and (ends or e.type != "step_end")]
