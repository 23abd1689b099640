"""`flowdesk do "TEXT"`: trigger phrases first (no model call), else one routed model request
whose JSON schema lists the library's flows; the answer is validated before anything runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import FlowLibrary
from engine.flows.dispatch import NoFlowMatches, match_sentence, parse_routing_answer, routable_flows, routing_schema
from tests.fakes.openai_server import FakeLLMServer, openai_plain

ROOT = Path(__file__).resolve().parents[2]


def _flow(fid: str, name: str, variables: list[dict], triggers: list[str], prompt: str) -> dict:
    return {
        "id": fid,
        "name": name,
        "description": f"{name} for the tests",
        "version": 1,
        "triggers": triggers,
        "nodes": [
            {"id": "start", "type": "start", "x": 80, "y": 120, "data": {"initialInput": "", "variables": variables}},
            {
                "id": "work",
                "type": "agent",
                "x": 400,
                "y": 120,
                "data": {
                    "agentName": name,
                    "userPrompt": prompt,
                    "provider": "echo",
                    "tools": {"web_search": False, "subagents": False},
                },
            },
        ],
        "connections": [{"source": "start", "target": "work", "sourceHandle": "output", "targetHandle": "input"}],
    }


@pytest.fixture
def library(tmp_path: Path) -> Path:
    folder = tmp_path / "lib"
    folder.mkdir()
    flows = [
        _flow(
            "make-playlist",
            "Make playlist",
            [
                {"name": "genre", "type": "string", "required": True},
                {"name": "quantity", "type": "number", "value": 10},
            ],
            [
                "create (a)? $(genre:wildcard) playlist (with)? $(quantity:number) (songs)?",
                "make me a $(genre:wildcard) playlist",
            ],
            "Make a {{genre}} playlist of {{quantity}} songs",
        ),
        _flow(
            "weather",
            "Weather report",
            [{"name": "city", "type": "string", "required": True}],
            ["(what is the)? weather in $(city:wildcard)"],
            "Weather in {{city}}",
        ),
        _flow(
            "summarise",
            "Summarise text",
            [{"name": "text", "type": "string", "required": True}, {"name": "bullets", "type": "number", "value": 3}],
            [],
            "Summarise {{text}} in {{bullets}} bullets",
        ),
    ]
    for i, f in enumerate(flows):
        (folder / f"{i}-{f['id']}.flow.json").write_text(json.dumps(f))
    return folder


def do(library: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "FLOWDESK_CONFIG_DIR": str(tmp_path / "config"),
        "FLOWDESK_DATA_DIR": str(tmp_path / "data"),
    }
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", "do", *args, "--library", str(library)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def server():
    with FakeLLMServer() as s:
        yield s


def test_trigger_match_runs_with_no_model_request(library, tmp_path, server) -> None:
    r = do(
        library,
        tmp_path,
        "Create a blues playlist with 12 songs!",
        "--yes",
        "--no-store",
        "--base-url",
        server.base_url,
        "--model",
        "fake-model",
    )
    assert r.returncode == 0, r.stderr
    assert server.requests == []
    assert 'flow: Make playlist (make-playlist) · trigger "create (a)?' in r.stdout
    assert '  genre = "blues"' in r.stdout and "  quantity = 12" in r.stdout
    assert "llm_response" in r.stdout and "completed" in r.stderr
    assert "Make a blues playlist of 12 songs" in r.stdout  # the captures are the run's variables


def test_dry_run_and_json(library, tmp_path, server) -> None:
    r = do(library, tmp_path, "weather in New York", "--dry-run", "--json", "--base-url", server.base_url)
    assert r.returncode == 0, r.stderr
    choice = json.loads(r.stdout)
    assert choice["flow"] == "weather" and choice["arguments"] == {"city": "New York"}
    assert choice["source"] == "trigger" and choice["pattern"] == "(what is the)? weather in $(city:wildcard)"
    assert server.requests == []


def test_fewest_wildcard_words_win_then_library_order(library) -> None:
    flows = routable_flows(FlowLibrary([library], seed=False))
    ranked = match_sentence("make me a jazz playlist", flows)
    assert [(c.flow.id, c.arguments) for c in ranked] == [("make-playlist", {"genre": "jazz"})]
    both = match_sentence("create a deep house playlist with 5 songs", flows)
    assert both[0].arguments == {"genre": "deep house", "quantity": 5} and both[0].wildcard_words == 2


def test_no_match_asks_the_model_once_with_the_library_schema(library, tmp_path, server) -> None:
    server.push(openai_plain(json.dumps({"flow": "summarise", "arguments": {"text": "the memo", "bullets": 4}})))
    r = do(
        library,
        tmp_path,
        "boil this memo down for me",
        "--yes",
        "--no-store",
        "--base-url",
        server.base_url,
        "--model",
        "fake-model",
    )
    assert r.returncode == 0, r.stderr
    assert len(server.requests) == 1
    body = server.requests[0].json
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    schema = fmt["json_schema"]["schema"]
    assert schema["properties"]["flow"]["enum"] == ["make-playlist", "weather", "summarise", None]
    per_flow = {s["title"]: s for s in schema["properties"]["arguments"]["anyOf"]}
    assert per_flow["arguments of make-playlist"]["properties"]["quantity"]["type"] == "number"
    assert per_flow["arguments of weather"]["required"] == ["city"]
    assert body["messages"][-1]["content"] == "boil this memo down for me"
    assert "flow: Summarise text (summarise) · chosen by the model" in r.stdout
    assert '  text = "the memo"' in r.stdout and "Summarise the memo in 4 bullets" in r.stdout


@pytest.mark.parametrize(
    "answer, reason",
    [
        ({"flow": "order-pizza", "arguments": {}}, "'order-pizza', which is not in the library"),
        ({"flow": "summarise", "arguments": {"text": "memo", "bullets": "four"}}, "bullets"),
        ({"flow": "weather", "arguments": {}}, "city"),
        ({"flow": "weather", "arguments": {"city": "Oslo", "when": "now"}}, "when"),
        ({"flow": None, "arguments": {}}, "found no flow"),
        ("sure, I'd run the weather one", "not a flow choice"),
        ("", "empty"),
    ],
)
def test_unusable_answers_run_nothing(library, tmp_path, server, answer, reason) -> None:
    text = answer if isinstance(answer, str) else json.dumps(answer)
    server.push(openai_plain(text) if text else openai_plain("{}"))
    if not text:  # an empty answer is checked without a server round trip
        flows = routable_flows(FlowLibrary([library], seed=False))
        with pytest.raises(NoFlowMatches, match="empty"):
            parse_routing_answer("  ", flows)
        return
    r = do(
        library,
        tmp_path,
        "something nobody planned for",
        "--yes",
        "--no-store",
        "--base-url",
        server.base_url,
        "--model",
        "fake-model",
    )
    assert r.returncode == 2, r.stderr
    assert "no flow matches" in r.stderr and reason in r.stderr
    assert len(server.requests) == 1
    assert "step_start" not in r.stdout and "flow:" not in r.stdout


def test_not_confirmed_without_yes_runs_nothing(library, tmp_path, server) -> None:
    r = do(library, tmp_path, "weather in Lisbon", "--no-store", "--base-url", server.base_url)
    assert r.returncode == 4
    assert "flow: Weather report" in r.stdout and "not confirmed" in r.stderr and "step_start" not in r.stdout


def test_empty_library_and_model_errors_exit_2(tmp_path, server) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    r = do(empty, tmp_path, "anything", "--yes", "--base-url", server.base_url)
    assert r.returncode == 2 and "no flow matches" in r.stderr and server.requests == []


def test_routing_schema_shape(library) -> None:
    flows = routable_flows(FlowLibrary([library], seed=False))
    schema = routing_schema(flows)
    assert schema["required"] == ["flow", "arguments"] and schema["additionalProperties"] is False
    choice = parse_routing_answer('```json\n{"flow": "weather", "arguments": {"city": "Porto"}}\n```', flows)
    assert choice.flow.id == "weather" and choice.arguments == {"city": "Porto"} and choice.source == "model"


def test_with_the_echo_provider_the_refusal_says_why_no_flow_was_chosen(library, tmp_path):
    res = do(library, tmp_path, "something no trigger says", "--provider", "echo", "--yes")
    assert res.returncode != 0
    assert "no flow matches" in res.stderr and "echo provider repeats the sentence" in res.stderr
    assert "trigger phrases" in res.stderr
