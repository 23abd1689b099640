"""`flowdesk learn` of a run whose agent called an MCP tool (a real MCP server over stdio,
tests/mcp/server_script.py): the learned flow makes the same call with an `mcp` node, the
argument taken from the input as a Start variable, and no planning request."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.llm.base import mcp_function_name
from tests.fakes.openai_server import openai_plain, openai_text, openai_tool_calls

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed (pip install 'flowdesk[mcp]')")

from tests.mcp.conftest import stdio_server  # noqa: E402 - after the extra's check

PROPOSAL = {
    "variables": [{"name": "word", "type": "string", "description": "What to echo", "from": "parrot"}],
    "triggers": ["echo $(word:wildcard)"],
    "reasons": "The word comes from the request.",
}


def caller() -> dict:
    return {
        "name": "Echoer",
        "mcpServers": {"calc": stdio_server()},
        "nodes": [
            {"id": "start", "type": "start", "data": {"initialInput": "echo parrot"}},
            {
                "id": "lead",
                "type": "agent",
                "data": {
                    "agentName": "Lead",
                    "systemPrompt": "You are Lead.",
                    "model": "fake-model",
                    "tools": {"web_search": False, "subagents": False, "mcp": [{"server": "calc", "tools": ["echo"]}]},
                },
            },
        ],
        "connections": [{"source": "start", "target": "lead", "sourceHandle": "output", "targetHandle": "input"}],
    }


def test_a_learned_mcp_call_repeats_with_no_planning_request(cli, server, isolated: Path) -> None:
    echo = mcp_function_name("calc", "echo")
    asked = {"planning": 0, "answer": 0, "learn": 0}

    def handler(rec):
        system = rec.system_prompt or ""
        if system.startswith("You turn a recorded agent run"):
            asked["learn"] += 1
            return openai_plain(json.dumps(PROPOSAL))
        if "tools" in rec.json and not rec.tool_results:
            asked["planning"] += 1
            return openai_tool_calls([(echo, {"text": "parrot"})])
        asked["answer"] += 1
        return openai_text("Done: " + rec.json["messages"][-1]["content"][-60:])

    server.handler = handler
    path = isolated / "echoer.flow.json"
    path.write_text(json.dumps(caller()))
    base = ["--base-url", server.base_url, "--model", "fake-model"]
    res = cli("run", str(path), *base, "--json")
    assert res.code == 0, res
    assert asked == {"planning": 1, "answer": 1, "learn": 0}
    run_id = json.loads(res.out)["runId"]

    res = cli("learn", run_id, "-o", "learned.flow.json", *base)
    assert res.code == 0, res
    learned = json.loads((isolated / "learned.flow.json").read_text())
    call = next(n for n in learned["nodes"] if n["type"] == "mcp")
    assert call["data"]["server"] == "calc" and call["data"]["tool"] == "echo"
    assert call["data"]["arguments"] == {"text": "{{word}}"}
    assert learned["mcpServers"]["calc"]["args"] == caller()["mcpServers"]["calc"]["args"]
    assert cli("validate", "learned.flow.json").code == 0

    asked.update(planning=0, answer=0, learn=0)
    res = cli("run", "learned.flow.json", *base, "--json")
    assert res.code == 0, res
    assert asked == {"planning": 0, "answer": 1, "learn": 0}  # the call made again, no planning turn
    results = {r["nodeId"]: r for r in json.loads(res.out)["results"]}
    assert "echo: parrot" in json.dumps(results[call["id"]]["output"])
    res = cli("run", "learned.flow.json", *base, "--var", "word=finch", "--json")
    assert res.code == 0, res
    assert "echo: finch" in json.dumps({r["nodeId"]: r for r in json.loads(res.out)["results"]}[call["id"]]["output"])
