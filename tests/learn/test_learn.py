"""`flowdesk learn RUN_ID`: a run whose agent called a subagent and a library flow (in one
turn) saved as a flow; it validates and, run with the same input, makes the same calls with
no planning request (requests counted at the fake server); --no-model; refusing to overwrite."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import FlowLibrary, parse_workflow, validate
from engine.llm.base import tool_name_for
from tests.fakes.openai_server import error_reply, openai_plain, openai_text, openai_tool_calls

INPUT = "Plan a trip to Lisbon for 3 days"
PROPOSAL = {
    "variables": [
        {"name": "city", "type": "string", "description": "Where to go", "from": "Lisbon"},
        {"name": "days", "type": "number", "description": "How long", "from": "3"},
        {"name": "ghost", "type": "string", "description": "not in the input", "from": "Madrid"},
    ],
    "triggers": ["plan a trip to $(city:wildcard) for $(days:number) days", "broken ((", "trip $(who:wildcard)"],
    "reasons": "The city and the length of the stay come from the request.",
}


def weather_flow() -> dict:
    return {
        "id": "weather",
        "name": "Weather",
        "description": "The weather in a city",
        "nodes": [
            {
                "id": "s",
                "type": "start",
                "data": {
                    "initialInput": "",
                    "variables": [{"name": "city", "required": True}, {"name": "days", "type": "number"}],
                },
            },
            {
                "id": "w",
                "type": "agent",
                "data": {"agentName": "W", "userPrompt": "sunny in {{city}} for {{days}}", "provider": "echo"},
            },
        ],
        "connections": [{"source": "s", "target": "w", "sourceHandle": "output", "targetHandle": "input"}],
    }


def planner() -> dict:
    return {
        "name": "Trip planner",
        "nodes": [
            {"id": "start", "type": "start", "data": {"initialInput": INPUT}},
            {
                "id": "plan",
                "type": "agent",
                "data": {
                    "agentName": "Planner",
                    "systemPrompt": "You are Planner.",
                    "model": "fake-model",
                    "tools": {"web_search": False, "subagents": True, "flows": ["weather"]},
                },
            },
            {
                "id": "hotels",
                "type": "agent",
                "data": {
                    "agentName": "Hotels",
                    "systemPrompt": "You are Hotels.",
                    "userPrompt": "Find {{PREVIOUS_OUTPUT}}",
                    "model": "fake-model",
                },
            },
        ],
        "connections": [
            {"source": "start", "target": "plan", "sourceHandle": "output", "targetHandle": "input"},
            {"source": "plan", "target": "hotels", "sourceHandle": "subagent", "targetHandle": "input"},
        ],
    }


@pytest.fixture
def setup(cli, server, isolated: Path):
    lib = FlowLibrary()  # the user's library (the isolated data folder)
    (lib.primary).mkdir(parents=True, exist_ok=True)
    (lib.primary / "weather.flow.json").write_text(json.dumps(weather_flow()))
    hotels_tool = tool_name_for("Hotels", "hotels")
    weather_tool = tool_name_for("Weather", "flow_weather")
    state = {"learning": 0}

    def handler(rec):
        system = rec.system_prompt or ""
        if system.startswith("You turn a recorded agent run"):
            state["learning"] += 1
            return openai_plain(json.dumps(PROPOSAL))
        if system == "You are Hotels.":
            return openai_text("Hotel Azul in " + rec.json["messages"][-1]["content"])
        if system == "You are Planner.":
            if "tools" in rec.json and not rec.tool_results:
                return openai_tool_calls(
                    [(hotels_tool, {"input": "hotels in Lisbon"}), (weather_tool, {"city": "Lisbon", "days": 3})]
                )
            return openai_text("Your plan is ready.")
        return error_reply(400, f"unexpected {system!r}")

    server.handler = handler
    path = isolated / "planner.flow.json"
    path.write_text(json.dumps(planner()))
    res = cli("run", str(path), "--base-url", server.base_url, "--model", "fake-model", "--json")
    assert res.code == 0, res
    run_id = json.loads(res.out)["runId"]
    return {"run_id": run_id, "state": state, "lib": lib, "server": server}


def requests_of(server) -> list[dict]:
    return [r.json for r in server.requests]


def test_learned_flow_validates_and_makes_the_same_calls_without_planning(cli, setup, isolated) -> None:
    server, run_id = setup["server"], setup["run_id"]
    before = requests_of(server)
    hotel_calls = [r for r in before if r["messages"][0]["content"] == "You are Hotels."]
    assert [r["messages"][-1]["content"] for r in hotel_calls] == ["Find hotels in Lisbon"]
    out = isolated / "trip.flow.json"
    res = cli("learn", run_id[:10], "-o", str(out), "--base-url", server.base_url, "--model", "fake-model", "--json")
    assert res.code == 0, res
    assert setup["state"]["learning"] == 1  # ONE proposal request
    written = json.loads(res.out)
    assert [v["name"] for v in written["variables"]] == ["city", "days"]
    assert written["triggers"] == ["plan a trip to $(city:wildcard) for $(days:number) days"]
    assert any("Madrid" in r for r in written["reasons"])
    raw = json.loads(out.read_text())
    wf = parse_workflow(raw)
    assert not [i for i in validate(wf, path=str(out)) if i.is_error]
    kinds = [n["type"] for n in raw["nodes"]]
    assert kinds == ["start", "agent", "flow", "join", "agent"]  # parallel calls: fan-out + join; answer last
    assert raw["nodes"][2]["data"]["inputs"] == {"city": "{{city}}", "days": "{{days}}"}
    assert raw["nodes"][1]["data"]["userPrompt"] == "Find hotels in {{city}}"
    assert raw["learnedFrom"]["runId"] == run_id
    start_vars = {v["name"]: v["value"] for v in raw["nodes"][0]["data"]["variables"]}
    assert start_vars == {"city": "Lisbon", "days": 3}

    n = len(server.requests)
    res = cli("run", str(out), "--input", INPUT, "--base-url", server.base_url, "--model", "fake-model", "--json")
    assert res.code == 0, res
    after = requests_of(server)[n:]
    assert not [r for r in after if "tools" in r]  # no planning request
    assert [r["messages"][-1]["content"] for r in after if r["messages"][0]["content"] == "You are Hotels."] == [
        "Find hotels in Lisbon"
    ]
    result = json.loads(res.out)
    assert result["vars"]["call2"] == "sunny in Lisbon for 3"  # the same flow call, by echo
    assert len(after) == 2  # the hotels call and the answer


def test_no_model_keeps_literals_and_refuses_to_overwrite(cli, setup, isolated) -> None:
    server, run_id = setup["server"], setup["run_id"]
    out = isolated / "literal.flow.json"
    n = len(server.requests)
    res = cli("learn", run_id, "-o", str(out), "--no-model", "--name", "Literal trip")
    assert res.code == 0, res
    assert len(server.requests) == n  # no model request at all
    raw = json.loads(out.read_text())
    assert raw["name"] == "Literal trip"
    assert "variables" not in raw["nodes"][0]["data"] or not raw["nodes"][0]["data"]["variables"]
    assert raw["nodes"][2]["data"]["inputs"] == {"city": "Lisbon", "days": 3}
    text = out.read_text()
    res = cli("learn", run_id, "-o", str(out), "--no-model")
    assert res.code == 2 and "exists" in res.err
    assert out.read_text() == text
    res = cli("learn", run_id, "-o", str(out), "--no-model", "--force", "--name", "Again")
    assert res.code == 0 and json.loads(out.read_text())["name"] == "Again"


def test_a_run_without_tool_calls_cannot_be_learned(cli, isolated) -> None:
    path = isolated / "hello.flow.json"
    path.write_text(
        json.dumps(
            {
                "nodes": [
                    {"id": "s", "type": "start", "data": {"initialInput": "hi"}},
                    {"id": "a", "type": "agent", "data": {"agentName": "A", "provider": "echo"}},
                ],
                "connections": [{"source": "s", "target": "a", "sourceHandle": "output", "targetHandle": "input"}],
            }
        )
    )
    res = cli("run", str(path), "--provider", "echo", "--json")
    run_id = json.loads(res.out)["runId"]
    res = cli("learn", run_id, "--no-model", "-o", str(isolated / "x.flow.json"))
    assert res.code == 2 and "no agent called a tool" in res.err
    assert not (isolated / "x.flow.json").exists()
