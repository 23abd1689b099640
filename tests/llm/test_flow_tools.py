"""Library flows offered to agents as tools (``tools.flows``): the fake OpenAI server's tool-call
directives drive the model; the echo provider calls them offline."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine import EchoProvider, FlowLibrary, Run, RunState, RunStatus, parse_workflow, validate
from engine.llm.base import tool_name_for
from tests.fakes.openai_server import error_reply, openai_text, openai_tool_calls

from .conftest import make_run


def lookup_flow(approval: bool = False) -> Any:
    nodes = [
        {
            "id": "s",
            "type": "start",
            "data": {
                "initialInput": "weather",
                "variables": [
                    {"name": "city", "type": "string", "required": True, "description": "Which city"},
                    {"name": "days", "type": "number", "value": 1},
                ],
            },
        },
        {
            "id": "a",
            "type": "agent",
            "data": {
                "agentName": "Inner",
                "systemPrompt": "You are Inner.",
                "userPrompt": "look up {{PREVIOUS_OUTPUT}}",
                "model": "m",
                "provider": "echo",
            },
        },
    ]
    conns = [{"source": "s", "target": "a"}]
    if approval:
        nodes.append({"id": "ap", "type": "approval", "data": {"prompt": "ok?"}})
        conns.append({"source": "a", "target": "ap"})
    return parse_workflow(
        {
            "name": "Weather lookup",
            "description": "Looks up the weather for a city.",
            "nodes": nodes,
            "connections": conns,
        }
    )


def caller(flow_ids: list[str], provider: str | None = None) -> Any:
    data: dict[str, Any] = {
        "agentName": "Lead",
        "systemPrompt": "You are Lead.",
        "userPrompt": "",
        "model": "gpt-4o-mini",
        "tools": {"web_search": False, "subagents": False, "flows": flow_ids},
    }
    if provider:
        data["provider"] = provider
    return parse_workflow(
        {
            "name": "caller",
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "What is the weather in Paris?"}},
                {"id": "lead", "type": "agent", "data": data},
            ],
            "connections": [{"source": "s", "target": "lead"}],
        }
    )


@pytest.fixture()
def lib(tmp_path: Path) -> FlowLibrary:
    return FlowLibrary([tmp_path / "lib"])


async def test_the_model_calls_a_flow_with_arguments_and_gets_its_result(server, fast, lib) -> None:
    entry = lib.save(lookup_flow())
    name = tool_name_for("Weather lookup", "flow_" + entry.id)

    def handler(rec):
        if rec.system_prompt == "You are Lead.":
            if not rec.tool_results:
                return openai_tool_calls([(name, {"city": "Paris", "days": 2})], text="Checking.")
            return openai_text("Final: " + rec.tool_results[0])
        if rec.system_prompt == "You are Inner." and rec.json["messages"][-1]["content"] == "look up weather":
            return openai_text("look up weather")
        return error_reply(400, f"unexpected system prompt {rec.system_prompt!r}")

    server.handler = handler
    run = make_run(caller([entry.id]), server, fast, library=lib)
    assert await run.start() == RunStatus.COMPLETED, run.error
    first = server.requests[0].json
    (tool,) = first["tools"]
    assert tool["function"]["name"] == name
    assert "Looks up the weather for a city." in tool["function"]["description"]
    assert tool["function"]["parameters"] == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "Which city"},
            "days": {"type": "number", "description": "Default: 1."},
        },
        "required": ["city"],
    }
    response = next(e for e in run.events if e.type == "llm_response" and not e.path)
    assert response.content == "Final: look up weather"
    calls = [e for e in run.events if e.type.startswith("flow_call_")]
    assert [(e.type, e.node_id) for e in calls] == [("flow_call_start", "lead"), ("flow_call_end", "lead")]
    start, end = calls
    assert json.loads(start.content) == {"city": "Paris", "days": 2}
    assert start.extra == {
        "parentNodeId": "lead",
        "flowId": entry.id,
        "flowName": "Weather lookup",
        "callId": start.extra["callId"],
        "parentCallId": None,
        "depth": 1,
    }
    assert end.content == "look up weather" and end.extra == start.extra
    nested = [e for e in run.events if e.path]
    assert nested and all(e.path.startswith(f"lead.{start.extra['callId']}:") for e in nested)
    assert [(e.node_id, e.type) for e in nested if e.type not in ("run_status", "llm_delta")] == [
        ("s", "step_start"),
        ("s", "step_end"),
        ("a", "step_start"),
        ("a", "start_prompt"),
        ("a", "llm_response"),
        ("a", "step_end"),
    ]
    state = RunState()
    state.apply_many(run.events)
    (call,) = state.calls.values()
    assert (call.kind, call.name, call.state, call.output) == ("flow", "Weather lookup", "done", "look up weather")


async def test_a_flow_that_can_wait_for_an_approval_is_refused_as_a_tool(lib) -> None:
    entry = lib.save(lookup_flow(approval=True))
    issues = [i for i in validate(caller([entry.id]), library=lib) if i.is_error]
    assert [i.code for i in issues] == ["flow_tool_pauses"] and "Weather lookup" in issues[0].message
    run = Run(caller([entry.id], provider="echo"), EchoProvider(), library=lib)
    assert await run.start() == RunStatus.FAILED
    assert "approval" in run.error
    missing = [i for i in validate(caller(["nope"]), library=lib) if i.is_error]
    assert [i.code for i in missing] == ["flow_tool_missing"] and "'nope'" in missing[0].message


async def test_the_echo_provider_calls_flows_offline(lib) -> None:
    entry = lib.save(lookup_flow())
    run = Run(caller([entry.id], provider="echo"), EchoProvider(), library=lib)
    assert await run.start() == RunStatus.COMPLETED, run.error
    assert run.outputs["lead"] == "What is the weather in Paris?\n\n[Weather lookup] look up weather"
    start = next(e for e in run.events if e.type == "flow_call_start")
    assert json.loads(start.content) == {"city": "What is the weather in Paris?"}
    assert [e.type for e in run.events if e.type.startswith("flow_call_")] == ["flow_call_start", "flow_call_end"]
