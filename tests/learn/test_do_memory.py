"""`flowdesk do`: routing memory (a model-routed, confirmed sentence becomes a learned trigger;
the next sentence of that shape needs no model request), "did you mean" when nothing
matches (exit 2), "X and then Y" (the output of one is the next one's input), --json's match."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import FlowLibrary
from engine.flows.memory import generalise, split_requests, suggestions
from tests.fakes.openai_server import openai_plain


def flow(fid: str, name: str, description: str, variables: list[dict], prompt: str, triggers=None) -> dict:
    return {
        "id": fid,
        "name": name,
        "description": description,
        "triggers": triggers or [],
        "nodes": [
            {"id": "s", "type": "start", "data": {"initialInput": "", "variables": variables}},
            {"id": "a", "type": "agent", "data": {"agentName": name, "userPrompt": prompt, "provider": "echo"}},
        ],
        "connections": [{"source": "s", "target": "a", "sourceHandle": "output", "targetHandle": "input"}],
    }


@pytest.fixture
def lib(tmp_path: Path) -> Path:
    folder = tmp_path / "lib"
    folder.mkdir()
    flows = [
        flow(
            "weather",
            "Weather report",
            "Tells the weather forecast for a city",
            [{"name": "city", "required": True}, {"name": "days", "type": "number", "value": 1}],
            "Weather in {{city}} for {{days}} days",
        ),
        flow(
            "shout",
            "Shout",
            "Says the input loudly",
            [],
            "LOUD: {{PREVIOUS_OUTPUT}}",
            ["shout it"],
        ),
        flow("translate", "Translate text", "Translates text into another language", [{"name": "lang"}], "to {{lang}}"),
    ]
    for f in flows:
        (folder / f"{f['id']}.flow.json").write_text(json.dumps(f))
    return folder


def base(server) -> list[str]:
    return ["--base-url", server.base_url, "--model", "fake-model", "--no-store"]


def test_a_confirmed_model_route_is_learned_and_the_next_sentence_needs_no_model(cli, lib, server) -> None:
    server.push(
        openai_plain(json.dumps({"flow": "weather", "arguments": {"city": "Lisbon", "days": 3}, "reason": "it asks"}))
    )
    res = cli("do", "how will the sky look in Lisbon over 3 days", "--yes", "--library", str(lib), *base(server))
    assert res.code == 0, res
    assert len(server.requests) == 1
    saved = json.loads((lib / "weather.flow.json").read_text())
    assert {"pattern": "how will the sky look in $(city:wildcard) over $(days:number) days", "learned": True} in saved[
        "triggers"
    ]
    res = cli(
        "do", "how will the sky look in New York over 5 days", "--yes", "--json", "--library", str(lib), *base(server)
    )
    assert res.code == 0, res
    assert len(server.requests) == 1  # no new request: the learned trigger matched
    choice = json.loads(res.out[: res.out.index("\n}\n") + 3])
    assert choice["flow"] == "weather" and choice["arguments"] == {"city": "New York", "days": 5}
    assert choice["match"]["by"] == "trigger" and choice["match"]["learned"] is True
    assert choice["match"]["pattern"].startswith("how will the sky look in")
    assert choice["match"]["captures"] == {"city": "New York", "days": 5}
    shown = json.loads(cli("flows", "show", "weather", "--json", "--library", str(lib)).out)
    assert shown["learned"] == ["how will the sky look in $(city:wildcard) over $(days:number) days"]


def test_model_match_json_and_no_learn(cli, lib, server) -> None:
    server.push(openai_plain(json.dumps({"flow": "weather", "arguments": {"city": "Oslo"}, "reason": "a forecast"})))
    res = cli("do", "is it cold in Oslo", "--dry-run", "--json", "--library", str(lib), *base(server))
    assert res.code == 0, res
    choice = json.loads(res.out)
    assert choice["match"] == {"by": "model", "reason": "a forecast"}
    assert "learned" not in json.loads((lib / "weather.flow.json").read_text())["triggers"].__repr__()
    server.push(openai_plain(json.dumps({"flow": "weather", "arguments": {"city": "Oslo"}})))
    res = cli("do", "is it cold in Oslo", "--yes", "--no-learn", "--library", str(lib), *base(server))
    assert res.code == 0, res
    assert json.loads((lib / "weather.flow.json").read_text())["triggers"] == []


def test_nothing_matches_suggests_and_exits_2(cli, lib, server) -> None:
    server.push(openai_plain(json.dumps({"flow": None, "arguments": {}})))
    res = cli("do", "what is the forecast for tomorrow", "--yes", "--library", str(lib), *base(server))
    assert res.code == 2, res
    assert "did you mean" in res.err and "Weather report [weather]" in res.err
    assert res.err.count("Weather report [weather]") == 1, res  # each suggestion once, with what it does
    assert "Weather report [weather]: Tells the weather forecast for a city" in res.err
    server.push(openai_plain(json.dumps({"flow": None, "arguments": {}})))
    res = cli("do", "translate the forecast", "--json", "--library", str(lib), *base(server))
    assert res.code == 2
    out = json.loads(res.out)
    assert out["flow"] is None
    assert {s["id"] for s in out["suggestions"]} == {"translate", "weather"}
    assert "step_start" not in res.out


def test_x_and_then_y_runs_in_order_with_the_previous_output(cli, lib, server) -> None:
    server.push(openai_plain(json.dumps({"flow": "weather", "arguments": {"city": "Rome"}})))
    res = cli("do", "forecast for Rome and then shout it", "--yes", "--no-learn", "--library", str(lib), *base(server))
    assert res.code == 0, res
    assert len(server.requests) == 1  # "shout it" is a trigger
    assert "1. flow: Weather report" in res.out and "2. flow: Shout" in res.out
    # the echo provider says its prompt back: Shout's prompt holds Weather's output
    assert "LOUD: Weather in Rome for 1 days" in res.out


def test_generalise_refuses_what_it_cannot_bind_back(lib) -> None:
    (weather,) = [f for f in FlowLibrary([lib], seed=False).flows() if f.id == "weather"]
    assert generalise("weather in Paris", {"city": "Paris"}, weather) == "weather in $(city:wildcard)"
    assert generalise("weather in Paris", {"city": "London"}, weather) is None  # not in the sentence
    assert generalise("Paris", {"city": "Paris"}, weather) is None  # nothing literal left
    assert generalise("weather i|n Paris", {"city": "Paris"}, weather) is None  # pattern syntax in a word


def test_split_and_suggestions(lib) -> None:
    assert split_requests("a b and then c; d then e") == ["a b", "c", "d", "e"]
    assert split_requests("just one") == ["just one"]
    flows = FlowLibrary([lib], seed=False).flows()
    assert [f.id for f in suggestions("forecast please", flows)] == ["weather"]
    assert suggestions("zzz", flows) == []


def test_a_long_description_is_cut_in_the_suggestions(cli, tmp_path, server) -> None:
    folder = tmp_path / "long"
    folder.mkdir()
    long = flow("essay", "Essay writer", "Writes an essay " + "about many things " * 20, [], "essay")
    (folder / "essay.flow.json").write_text(json.dumps(long))
    server.push(openai_plain(json.dumps({"flow": None, "arguments": {}})))
    res = cli("do", "an essay on owls", "--library", str(folder), *base(server))
    assert res.code == 2, res
    (line,) = [x for x in res.err.splitlines() if "Essay writer [essay]" in x]
    assert line.endswith("…") and len(line) < 160, line
