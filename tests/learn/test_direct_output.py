"""`directOutput: true` on a flow offered as a tool: its output becomes the agent's answer and
the caller's model gets no further request (seed 004)."""

from __future__ import annotations

from pathlib import Path

from engine import FlowLibrary, Run, RunStatus, parse_workflow
from engine.llm.base import tool_name_for
from engine.llm.registry import make_resolver
from tests.fakes.openai_server import error_reply, openai_text, openai_tool_calls


def inner(direct: bool):
    wf = {
        "name": "Lookup",
        "description": "Looks a thing up.",
        "nodes": [
            {"id": "s", "type": "start", "data": {"initialInput": "", "variables": [{"name": "q", "required": True}]}},
            {
                "id": "a",
                "type": "agent",
                "data": {"agentName": "Inner", "userPrompt": "found {{q}}", "provider": "echo"},
            },
        ],
        "connections": [{"source": "s", "target": "a", "sourceHandle": "output", "targetHandle": "input"}],
    }
    if direct:
        wf["directOutput"] = True
    return parse_workflow(wf)


def caller(flow_id: str):
    return parse_workflow(
        {
            "name": "caller",
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "find cats"}},
                {
                    "id": "lead",
                    "type": "agent",
                    "data": {
                        "agentName": "Lead",
                        "systemPrompt": "You are Lead.",
                        "model": "fake-model",
                        "tools": {"web_search": False, "subagents": False, "flows": [flow_id]},
                    },
                },
            ],
            "connections": [{"source": "s", "target": "lead"}],
        }
    )


async def run_with(server, tmp_path: Path, direct: bool) -> Run:
    lib = FlowLibrary([tmp_path / f"lib{direct}"])
    entry = lib.save(inner(direct))
    name = tool_name_for("Lookup", "flow_" + entry.id)

    def handler(rec):
        if not rec.tool_results:
            return openai_tool_calls([(name, {"q": "cats"})])
        if direct:
            return error_reply(400, "no further turn was expected")
        return openai_text("Summary: " + rec.tool_results[0])

    server.handler = handler
    resolver = make_resolver(None, base_url=server.base_url, model="fake-model")
    run = Run(caller(entry.id), resolver, library=lib)
    assert await run.start() == RunStatus.COMPLETED, run.error
    return run


async def test_direct_output_ends_the_agent_with_no_further_request(server, tmp_path) -> None:
    run = await run_with(server, tmp_path, direct=True)
    assert len(server.requests) == 1
    assert run.outputs["lead"] == "found cats"


async def test_without_it_the_model_takes_its_turn(server, tmp_path) -> None:
    run = await run_with(server, tmp_path, direct=False)
    assert len(server.requests) == 2
    assert run.outputs["lead"] == "Summary: found cats"
