"""Acceptance tests for "Learning and routing" (DESIGN.md), written from its names only.

Everything goes through the `flowdesk` command line (a real subprocess) and `import engine`;
the fake OpenAI-compatible server plays the model and counts what was asked of it.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

import engine
from tests.acceptance.conftest import (
    agent_node,
    answer,
    chats,
    code_flow,
    code_node,
    link,
    model_args,
    start,
    user_text,
    write,
)
from tests.fakes.openai_server import FakeLLMServer, Recorded, Reply, openai_tool_calls

# The flows of this suite compute in Python code steps: without the code extra they cannot run.
pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("pydantic_monty") is None,
    reason="the code extra (pydantic-monty) is not installed: pip install -e '.[code]'",
)

QUESTION = "What is the weather in Paris?"
PROPOSAL = {
    "variables": [{"name": "city", "type": "string", "description": "the city asked about", "from": "Paris"}],
    "triggers": ["what is the weather in $(city:wildcard)", "weather in $(city:wildcard)"],
    "reasons": "the city came from the request",
}


def weather_flow(**top: Any) -> dict[str, Any]:
    return code_flow(
        "weather",
        "'Sunny in ' + city",
        [{"name": "city", "type": "string", "required": True, "value": "", "description": "the city"}],
        name="Weather",
        description="Current weather in a city",
        **top,
    )


def helper_agent(question: str = QUESTION, **tools: Any) -> dict[str, Any]:
    return {
        "name": "Helper",
        "nodes": [start(initial=question), agent_node("helper", "Answer with the tools.", "", **tools)],
        "connections": [link("start", "helper")],
    }


def is_proposal_request(rec: Recorded) -> bool:
    system = json.dumps((rec.json or {}).get("messages", [])[:1])
    return "triggers" in system and "variables" in system and not (rec.json or {}).get("tools")


def tool_agent_model(rec: Recorded) -> Reply:
    """The model of an agent with one tool: call it with Paris, then answer; and a learn proposal."""
    body = rec.json or {}
    if is_proposal_request(rec):
        return answer(rec, json.dumps(PROPOSAL))
    if body.get("tools") and not rec.tool_results:
        name = body["tools"][0]["function"]["name"]
        return openai_tool_calls([(name, {"city": "Paris"})])
    results = " / ".join(rec.tool_results)
    return answer(rec, f"Answer: {results}" if results else "Answer: nothing to call")


@pytest.fixture
def library(home: Path) -> Path:
    """The user's library folder with the `weather` flow in it."""
    folder = home / "data" / "library"
    write(folder / "weather.flow.json", weather_flow())
    return folder


def agent_run(fd: Any, server: FakeLLMServer, home: Path, flow: dict[str, Any] | None = None) -> str:
    server.handler = tool_agent_model
    path = write(home / "work" / "helper.flow.json", flow or helper_agent(flows=["weather"]))
    done = fd("run", str(path), "--json", *model_args(server))
    assert done.code == 0, done
    result = done.json()
    assert result["status"] == "completed"
    assert "Sunny in Paris" in result["output"]
    return result["runId"]


def outputs(result: dict[str, Any]) -> list[Any]:
    return [r["output"] for r in result["results"]]


# ----------------------------------------------------------------------------- learn
def test_learned_flow_validates_and_repeats_the_calls_without_planning(fd, server, home, library):
    run_id = agent_run(fd, server, home)
    before = len(chats(server))
    out = home / "work" / "learned.flow.json"
    done = fd("learn", run_id, "-o", str(out), *model_args(server))
    assert done.code == 0, done
    assert out.exists()
    # The proposal is ONE request.
    assert len(chats(server)) == before + 1
    assert is_proposal_request(chats(server)[-1])

    assert engine.load_workflow(out).nodes, "the learned file loads through the public API"
    checked = fd("validate", str(out))  # in the user's environment, where its library is
    assert checked.code == 0, checked
    data = json.loads(out.read_text())
    start_node = next(n for n in data["nodes"] if n["type"] == "start")
    names = [v["name"] for v in start_node["data"].get("variables", [])]
    assert "city" in names, "the proposal's variable becomes a Start variable"
    patterns = [t if isinstance(t, str) else t["pattern"] for t in data.get("triggers", [])]
    assert "what is the weather in $(city:wildcard)" in patterns

    # Run with the same input: the same call, and no planning request (no request offers tools).
    before = len(chats(server))
    done = fd("run", str(out), "--input", QUESTION, "--json", *model_args(server))
    assert done.code == 0, done
    result = done.json()
    assert result["status"] == "completed"
    assert "Sunny in Paris" in outputs(result)
    new = chats(server)[before:]
    assert all(not (r.json or {}).get("tools") for r in new), "a learned flow makes no planning turn"
    assert len(new) <= 1, "at most the answer node asks the model"

    # The variable is a real parameter: another city makes the call with it.
    done = fd("run", str(out), "--var", "city=Rome", "--json", *model_args(server))
    assert done.code == 0, done
    assert "Sunny in Rome" in outputs(done.json())


def test_learn_from_a_subagent_call(fd, server, home, library):
    """A run whose agent called a subagent: the learned flow calls the subagent's model once,
    with the same argument, and makes no planning request."""

    def model(rec: Recorded) -> Reply:
        body = rec.json or {}
        if is_proposal_request(rec):
            return answer(rec, json.dumps({"variables": [], "triggers": [], "reasons": "nothing to vary"}))
        if "You look things up." in json.dumps(body.get("messages", [])[:1]):
            return answer(rec, f"looked up: {user_text(rec)}")
        if body.get("tools") and not rec.tool_results:
            return openai_tool_calls([(body["tools"][0]["function"]["name"], {"input": "the capital of France"})])
        return answer(rec, "Answer: " + " / ".join(rec.tool_results))

    flow = {
        "name": "Lead",
        "nodes": [
            start(initial="Find the capital of France"),
            agent_node("lead", "You delegate.", "", subagents=True),
            {**agent_node("finder", "You look things up."), "x": 500, "y": 200},
        ],
        "connections": [
            link("start", "lead"),
            {"source": "lead", "target": "finder", "sourceHandle": "subagent", "targetHandle": "input"},
        ],
    }
    server.handler = model
    path = write(home / "work" / "lead.flow.json", flow)
    done = fd("run", str(path), "--json", *model_args(server))
    assert done.code == 0, done
    run_id = done.json()["runId"]
    out = home / "work" / "lead-learned.flow.json"
    done = fd("learn", run_id, "-o", str(out), *model_args(server))
    assert done.code == 0, done
    before = len(chats(server))
    done = fd("run", str(out), "--json", *model_args(server))
    assert done.code == 0, done
    new = chats(server)[before:]
    assert all(not (r.json or {}).get("tools") for r in new)
    lookups = [r for r in new if "You look things up." in json.dumps((r.json or {}).get("messages", [])[:1])]
    assert len(lookups) == 1 and "the capital of France" in user_text(lookups[0])
    assert len(new) == 2, "the subagent's call and the answer, nothing else"


def test_learn_no_model_keeps_literals(fd, server, home, library):
    run_id = agent_run(fd, server, home)
    before = len(chats(server))
    out = home / "work" / "literal.flow.json"
    done = fd("learn", run_id, "-o", str(out), "--no-model", *model_args(server))
    assert done.code == 0, done
    assert len(chats(server)) == before, "--no-model asks no model"
    data = json.loads(out.read_text())
    start_node = next(n for n in data["nodes"] if n["type"] == "start")
    assert not start_node["data"].get("variables"), "no argument became a variable"
    calls = [n for n in data["nodes"] if n["type"] not in ("start", "agent")]
    assert calls and "Paris" in json.dumps(calls), "the argument is kept as written"
    done = fd("run", str(out), "--json", *model_args(server))
    assert done.code == 0, done
    assert "Sunny in Paris" in outputs(done.json())


def test_learn_refuses_to_overwrite_without_force(fd, server, home, library):
    run_id = agent_run(fd, server, home)
    out = home / "work" / "taken.flow.json"
    out.write_text("keep me", encoding="utf-8")
    done = fd("learn", run_id, "-o", str(out), "--no-model")
    assert done.code == 2, done
    assert out.read_text(encoding="utf-8") == "keep me"
    assert "taken.flow.json" in done.out + done.err
    done = fd("learn", run_id, "-o", str(out), "--no-model", "--force")
    assert done.code == 0, done
    assert engine.load_workflow(out) is not None


def test_learn_without_output_goes_to_the_library_and_its_trigger_routes(fd, server, home, library):
    run_id = agent_run(fd, server, home)
    listed = {f["id"] for f in fd("flows", "--json").json()["flows"]}
    done = fd("learn", run_id, *model_args(server))
    assert done.code == 0, done
    after = fd("flows", "--json").json()["flows"]
    new = [f for f in after if f["id"] not in listed]
    assert len(new) == 1, "the learned flow is a new library flow"
    before = len(chats(server))
    done = fd("do", "What is the weather in Rome?", "--dry-run", "--json", *model_args(server))
    assert done.code == 0, done
    choice = done.json()
    assert choice["flow"] == new[0]["id"]
    assert choice["match"]["by"] == "trigger"
    assert choice["arguments"] == {"city": "Rome"}
    assert len(chats(server)) == before


def test_learn_a_run_that_called_no_tool_is_refused(fd, server, home, library):
    server.handler = lambda rec: answer(rec, "plain answer")
    path = write(home / "work" / "plain.flow.json", helper_agent())
    done = fd("run", str(path), "--json", *model_args(server))
    assert done.code == 0, done
    out = home / "work" / "never.flow.json"
    done = fd("learn", done.json()["runId"], "-o", str(out), "--no-model")
    assert done.code != 0, done
    assert not out.exists()
    assert "Traceback" not in done.err


# ----------------------------------------------------------------------------- do
@pytest.fixture
def routes(home: Path) -> Path:
    """A library folder for `do --library`: greet (trigger), shout (trigger), forecast (none)."""
    folder = home / "routes"
    write(
        folder / "greet.flow.json",
        code_flow(
            "greet",
            "'Hello ' + name",
            [{"name": "name", "type": "string", "required": True, "value": ""}],
            description="Say hello to someone",
            triggers=["greet $(name:word)"],
        ),
    )
    shout = code_flow("shout", "text.upper()", [], description="Shout the text", triggers=["shout it"])
    shout["nodes"][1]["data"]["inputs"] = {"text": "{{PREVIOUS_OUTPUT}}"}
    write(folder / "shout.flow.json", shout)
    write(
        folder / "forecast.flow.json",
        code_flow(
            "forecast",
            "'Forecast for ' + city + ' over ' + str(days) + ' days'",
            [
                {"name": "city", "type": "string", "required": True, "value": ""},
                {"name": "days", "type": "number", "value": 1},
            ],
            description="Weather forecast for a city over some days",
        ),
    )
    return folder


def router(choice: dict[str, Any]) -> Any:
    return lambda rec: answer(rec, json.dumps(choice))


FORECAST = {"flow": "forecast", "arguments": {"city": "Lisbon", "days": 3}, "reason": "it asks about the weather"}


def test_do_trigger_match_asks_no_model(fd, server, routes):
    done = fd("do", "Greet Alice!", "--library", str(routes), "--yes", "--json", *model_args(server))
    assert done.code == 0, done
    choice = done.json()
    assert choice["flow"] == "greet"
    assert choice["arguments"] == {"name": "Alice"}
    assert choice["match"]["by"] == "trigger"
    assert choice["match"]["pattern"] == "greet $(name:word)"
    assert choice["match"]["captures"] == {"name": "Alice"}
    assert "Hello Alice" in done.out + done.err
    assert chats(server) == []


def test_do_model_routed_and_confirmed_is_learned(fd, server, routes):
    server.handler = router(FORECAST)
    sentence = "how will the sky look in Lisbon over 3 days"
    done = fd("do", sentence, "--library", str(routes), *model_args(server), typed="y\n")
    assert done.code == 0, done
    assert len(chats(server)) == 1
    assert "Forecast for Lisbon over 3 days" in done.out + done.err
    triggers = json.loads((routes / "forecast.flow.json").read_text())["triggers"]
    learned = [t for t in triggers if isinstance(t, dict) and t.get("learned") is True]
    assert len(learned) == 1 and set(learned[0]) >= {"pattern", "learned"}
    pattern = learned[0]["pattern"]
    assert "Lisbon" not in pattern and "$(" in pattern

    done = fd(
        "do",
        "How will the sky look in New York over 5 days?",
        "--library",
        str(routes),
        "--yes",
        "--json",
        *model_args(server),
    )
    assert done.code == 0, done
    assert len(chats(server)) == 1, "the learned trigger answers with no model request"
    choice = done.json()
    assert choice["flow"] == "forecast"
    assert choice["match"]["by"] == "trigger"
    assert choice["match"]["pattern"] == pattern
    assert choice["arguments"]["city"] == "New York"
    assert choice["arguments"]["days"] == 5
    assert "Forecast for New York over 5 days" in done.out + done.err


def test_do_not_confirmed_learns_nothing(fd, server, routes):
    server.handler = router(FORECAST)
    before = (routes / "forecast.flow.json").read_bytes()
    done = fd(
        "do", "how will the sky look in Lisbon over 3 days", "--library", str(routes), *model_args(server), typed="n\n"
    )
    assert done.code != 0, done
    assert (routes / "forecast.flow.json").read_bytes() == before


def test_do_no_learn(fd, server, routes):
    server.handler = router(FORECAST)
    before = (routes / "forecast.flow.json").read_bytes()
    done = fd(
        "do",
        "how will the sky look in Lisbon over 3 days",
        "--library",
        str(routes),
        "--yes",
        "--no-learn",
        *model_args(server),
    )
    assert done.code == 0, done
    assert (routes / "forecast.flow.json").read_bytes() == before
    done = fd(
        "do",
        "how will the sky look in Porto over 2 days",
        "--library",
        str(routes),
        "--yes",
        "--no-learn",
        *model_args(server),
    )
    assert done.code == 0, done
    assert len(chats(server)) == 2, "nothing was learned, so the model is asked again"


def test_do_json_explains_a_model_choice(fd, server, routes):
    server.handler = router(FORECAST)
    done = fd(
        "do",
        "what is the sky doing in Lisbon for 3 days",
        "--library",
        str(routes),
        "--dry-run",
        "--json",
        *model_args(server),
    )
    assert done.code == 0, done
    choice = done.json()
    assert choice["flow"] == "forecast"
    assert choice["arguments"] == {"city": "Lisbon", "days": 3}
    assert choice["match"]["by"] == "model"
    assert choice["match"]["reason"] == "it asks about the weather"
    # --dry-run runs nothing and confirms nothing, so nothing is learned.
    assert all(isinstance(t, str) for t in json.loads((routes / "forecast.flow.json").read_text()).get("triggers", []))


def test_do_nothing_matched_suggests_up_to_three(fd, server, routes):
    for i in range(3):
        write(
            routes / f"extra{i}.flow.json",
            code_flow(f"extra{i}", "'x'", [], name=f"Weather extra {i}", description="weather things"),
        )
    server.handler = router({"flow": None, "arguments": {}, "reason": "nothing fits"})
    done = fd("do", "weather forecast please", "--library", str(routes), "--yes", *model_args(server))
    assert done.code == 2, done
    text = done.out + done.err
    names = ["Forecast", "Weather extra 0", "Weather extra 1", "Weather extra 2", "Greet", "Shout"]
    shown = [n for n in names if n in text]
    assert 1 <= len(shown) <= 3, text
    assert "Greet" not in shown and "Shout" not in shown, "only flows near the sentence"
    assert "Traceback" not in text


def test_do_and_then_passes_the_output_on(fd, server, routes):
    done = fd("do", "greet Bob and then shout it", "--library", str(routes), "--yes", *model_args(server))
    assert done.code == 0, done
    assert "HELLO BOB" in done.out + done.err
    assert chats(server) == []


def test_do_and_then_asks_once(fd, server, routes):
    done = fd("do", "greet Bob and then shout it", "--library", str(routes), *model_args(server), typed="y\n")
    assert done.code == 0, done
    assert "HELLO BOB" in done.out + done.err


# ----------------------------------------------------------------------------- variable rules
def rules_flow() -> dict[str, Any]:
    variables = [
        {"name": "code", "type": "string", "value": "ABC", "pattern": "[A-Z]{3}"},
        {"name": "size", "type": "string", "value": "M", "enum": ["S", "M", "L"]},
        {"name": "count", "type": "number", "value": 3, "min": 1, "max": 5},
        {"name": "src", "type": "string", "value": "here.txt", "pathMustExist": True},
    ]
    flow = code_flow("rules", "code + size + str(count) + src", variables)
    flow["nodes"][1]["data"]["outputVar"] = "summary"
    return flow


@pytest.mark.parametrize(
    ("var", "value", "field"),
    [
        ("code", "ABCD", "pattern"),
        ("code", "abc", "pattern"),
        ("size", "XL", "enum"),
        ("count", "0", "min"),
        ("count", "5.5", "max"),
        ("src", "missing.txt", "pathMustExist"),
    ],
)
def test_variable_rule_refuses_before_running(fd, home, var, value, field):
    (home / "work" / "here.txt").write_text("x")
    path = write(home / "work" / "rules.flow.json", rules_flow())
    done = fd("run", str(path), "--var", f"{var}={value}", "--provider", "echo")
    assert done.code == 2, done
    text = done.out + done.err
    assert var in text and field in text, text
    assert "step_start" not in text and "Traceback" not in text


@pytest.mark.parametrize(("count", "size"), [("1", "S"), ("5", "L")])
def test_variable_rules_bounds_are_inclusive(fd, home, count, size):
    (home / "work" / "here.txt").write_text("x")
    path = write(home / "work" / "rules.flow.json", rules_flow())
    done = fd(
        "run",
        str(path),
        "--var",
        f"count={count}",
        "--var",
        f"size={size}",
        "--var",
        "code=XYZ",
        "--json",
        "--provider",
        "echo",
    )
    assert done.code == 0, done
    assert done.json()["output"] == f"XYZ{size}{count}here.txt"


# ----------------------------------------------------------------------------- run --json
def test_run_json_shape(fd, home):
    path = write(home / "work" / "rules.flow.json", rules_flow())
    (home / "work" / "here.txt").write_text("x")
    done = fd("run", str(path), "--json", "--provider", "echo")
    assert done.code == 0, done
    result = json.loads(done.out)
    assert set(result) >= {"runId", "status", "output", "vars", "results"}
    assert result["status"] == "completed"
    assert result["output"] == "ABCM3here.txt"
    assert result["vars"]["summary"] == "ABCM3here.txt"
    assert result["vars"]["count"] == 3
    for row in result["results"]:
        assert set(row) >= {"nodeId", "status", "durationMs", "output"}
        assert isinstance(row["durationMs"], (int, float))
    assert [r["nodeId"] for r in result["results"]] == ["start", "say"]
    shown = fd("runs", "--json")
    assert result["runId"] in shown.out


def test_run_json_failed_run(fd, home):
    flow = code_flow("boom", "1 / 0", [])
    path = write(home / "work" / "boom.flow.json", flow)
    done = fd("run", str(path), "--json", "--provider", "echo")
    assert done.code == 1, done
    result = json.loads(done.out)
    assert result["status"] == "failed"
    assert any(r["nodeId"] == "say" and r["status"] == "failed" for r in result["results"])


# ----------------------------------------------------------------------------- directOutput
def test_direct_output_ends_the_agents_turn(fd, server, home):
    write(home / "data" / "library" / "weather.flow.json", weather_flow(directOutput=True))
    server.handler = tool_agent_model
    path = write(home / "work" / "helper.flow.json", helper_agent(flows=["weather"]))
    done = fd("run", str(path), "--json", *model_args(server))
    assert done.code == 0, done
    assert done.json()["output"] == "Sunny in Paris"
    assert len(chats(server)) == 1, "the agent's model takes no further turn"


# ----------------------------------------------------------------------------- AnythingLLM active
def anythingllm(active: bool) -> dict[str, Any]:
    return {
        "name": f"Summariser {'on' if active else 'off'}",
        "description": "Summarise a text",
        "active": active,
        "steps": [
            {"type": "start", "config": {"variables": [{"name": "text", "value": "", "description": "the text"}]}},
            {"type": "llmInstruction", "config": {"instruction": "Summarise: ${text}", "resultVariable": "summary"}},
        ],
    }


def test_anythingllm_inactive_lands_disabled(fd, home):
    fd("flows")  # the library exists
    lib = home / "data" / "library"
    src_off = write(home / "work" / "off.json", anythingllm(False))
    src_on = write(home / "work" / "on.json", anythingllm(True))
    assert fd("import", str(src_off), "-o", str(lib / "off.flow.json")).code == 0
    assert fd("import", str(src_on), "-o", str(lib / "on.flow.json")).code == 0
    flows = {f["name"]: f for f in fd("flows", "--json").json()["flows"]}
    assert flows["Summariser off"]["enabled"] is False
    assert flows["Summariser on"]["enabled"] is True


# ----------------------------------------------------------------------------- flows subcommands
def test_flows_show_enable_disable_delete(fd, server, routes):
    lib = ["--library", str(routes)]
    done = fd("flows", "show", "greet", *lib)
    assert done.code == 0, done
    assert "greet" in done.out and "Greet" in done.out

    assert fd("flows", "disable", "greet", *lib).code == 0
    assert fd("flows", "show", "greet", "--json", *lib).json()["enabled"] is False
    disabled = fd("do", "greet Alice", *lib, "--dry-run", "--json", *model_args(server))
    assert not (disabled.code == 0 and disabled.json().get("flow") == "greet"), "a disabled flow is not routed"
    assert fd("flows", "enable", "greet", *lib).code == 0
    assert fd("flows", "show", "greet", "--json", *lib).json()["enabled"] is True

    done = fd("do", "greet Alice", *lib, "--yes", *model_args(server))
    assert done.code == 0, done
    usage = fd("flows", "show", "greet", "--json", *lib).json()["usage"]
    assert usage["runs"] >= 1 and usage["lastRun"] and usage["created"]
    assert "usage" not in json.loads((routes / "greet.flow.json").read_text()), "usage lives in the index"

    done = fd("flows", "delete", "greet", *lib, stdin="")
    assert done.code == 0, done
    assert not (routes / "greet.flow.json").exists()
    ids = [f["id"] for f in fd("flows", "--json", *lib).json()["flows"]]
    assert "greet" not in ids
    index = routes / "index.json"
    if index.exists():
        assert '"greet"' not in index.read_text()

    for verb in ("show", "enable", "disable", "delete"):
        done = fd("flows", verb, "no-such-flow", *lib)
        assert done.code == 2, (verb, done)
        assert "no-such-flow" in done.out + done.err


# ----------------------------------------------------------------------------- the file kind
def minimal_pdf(text: str) -> bytes:
    """A one-page PDF whose page shows ``text`` (offsets computed, so any reader takes it)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{i} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    for off in offsets:
        out += f"{off:010d} 00000 n \n".encode()
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def file_flow(
    home: Path, path: str, fmt: str | None = None, max_chars: int | None = None, files: list[str] | None = None
) -> Path:
    data: dict[str, Any] = {"path": path, "outputVar": "content"}
    if fmt:
        data["format"] = fmt
    if max_chars is not None:
        data["maxChars"] = max_chars
    flow = {
        "name": "Reader",
        "permissions": {"files": files if files is not None else [str(home / "work" / "data")]},
        "nodes": [start(), {"id": "read", "type": "file", "x": 250, "y": 0, "data": data}],
        "connections": [link("start", "read")],
    }
    return write(home / "work" / "reader.flow.json", flow)


@pytest.fixture
def files(home: Path) -> Path:
    folder = home / "work" / "data"
    folder.mkdir()
    (folder / "note.txt").write_text("Hello from a file.\nSecond line.", encoding="utf-8")
    (folder / "conf.json").write_text('{"a": [1, 2], "b": "x"}', encoding="utf-8")
    (folder / "people.csv").write_text("name,age\nAda,36\nAlan,41\n", encoding="utf-8")
    (folder / "doc.pdf").write_bytes(minimal_pdf("Quarterly report"))
    (folder / "blob.bin").write_bytes(bytes(range(256)) * 4)
    (home / "work" / "secret.txt").write_text("outside", encoding="utf-8")
    return folder


def read_output(fd: Any, flow: Path) -> Any:
    done = fd("run", str(flow), "--json", "--provider", "echo")
    assert done.code == 0, done
    return done.json()["output"]


def test_file_text_json_csv_pdf(fd, home, files):
    assert read_output(fd, file_flow(home, "data/note.txt")) == "Hello from a file.\nSecond line."
    assert read_output(fd, file_flow(home, "data/conf.json", "json")) == {"a": [1, 2], "b": "x"}
    rows = read_output(fd, file_flow(home, "data/people.csv", "csv"))
    assert [dict(r) for r in rows] == [{"name": "Ada", "age": "36"}, {"name": "Alan", "age": "41"}]
    assert "Quarterly report" in read_output(fd, file_flow(home, "data/doc.pdf", "pdf"))


def test_file_max_chars(fd, home, files):
    assert read_output(fd, file_flow(home, "data/note.txt", max_chars=5)) == "Hello"


def test_file_outside_permissions_is_refused(fd, home, files):
    done = fd("run", str(file_flow(home, "secret.txt")), "--json", "--provider", "echo")
    assert done.code == 1, done
    assert "permission_denied" in done.out + done.err
    assert "outside" not in str(json.loads(done.out).get("output") or "")


def test_file_binary_fails(fd, home, files):
    done = fd("run", str(file_flow(home, "data/blob.bin")), "--json", "--provider", "echo")
    assert done.code == 1, done
    assert "Traceback" not in done.err


# ----------------------------------------------------------------------------- deeper probes
def test_learn_parallel_calls_fan_out_and_join(fd, server, home, library):
    """Two calls in one model turn: the learned flow makes both, with no planning request."""

    def model(rec: Recorded) -> Reply:
        body = rec.json or {}
        if is_proposal_request(rec):
            return answer(rec, json.dumps({"variables": [], "triggers": [], "reasons": "fixed cities"}))
        if body.get("tools") and not rec.tool_results:
            name = body["tools"][0]["function"]["name"]
            return openai_tool_calls([(name, {"city": "Paris"}), (name, {"city": "Oslo"})])
        return answer(rec, "Answer: " + " / ".join(sorted(rec.tool_results)))

    server.handler = model
    path = write(home / "work" / "two.flow.json", helper_agent("Weather in Paris and Oslo?", flows=["weather"]))
    done = fd("run", str(path), "--json", *model_args(server))
    assert done.code == 0, done
    out = home / "work" / "two-learned.flow.json"
    done = fd("learn", done.json()["runId"], "-o", str(out), *model_args(server))
    assert done.code == 0, done
    data = json.loads(out.read_text())
    assert any(n["type"] == "join" for n in data["nodes"]), "parallel calls become a fan-out and a join"
    before = len(chats(server))
    done = fd("run", str(out), "--json", *model_args(server))
    assert done.code == 0, done
    got = outputs(done.json())
    assert "Sunny in Paris" in got and "Sunny in Oslo" in got
    new = chats(server)[before:]
    assert all(not (r.json or {}).get("tools") for r in new) and len(new) <= 1


def test_learn_name_option(fd, server, home, library):
    run_id = agent_run(fd, server, home)
    out = home / "work" / "named.flow.json"
    done = fd("learn", run_id, "-o", str(out), "--no-model", "--name", "Paris weather")
    assert done.code == 0, done
    assert json.loads(out.read_text())["name"] == "Paris weather"


def test_learn_unknown_run_is_refused(fd, home):
    out = home / "work" / "x.flow.json"
    done = fd("learn", "0000000000", "-o", str(out), "--no-model")
    assert done.code == 2, done
    assert not out.exists()
    assert "Traceback" not in done.err


def test_routing_memory_not_stored_when_it_cannot_bind_the_same_arguments(fd, server, routes):
    """The model's argument (3) is not in the sentence ("three"): no pattern binds days=3."""
    server.handler = router(FORECAST)
    done = fd(
        "do", "how will the sky look in Lisbon over three days", "--library", str(routes), "--yes", *model_args(server)
    )
    assert done.code == 0, done
    triggers = json.loads((routes / "forecast.flow.json").read_text()).get("triggers", [])
    for t in triggers:
        if isinstance(t, dict) and t.get("learned"):
            # If one was stored, it must give back the same arguments for the same sentence.
            check = fd(
                "do", "how will the sky look in Lisbon over three days", "--library", str(routes), "--dry-run", "--json"
            )
            assert check.code == 0, check
            assert check.json()["arguments"] == FORECAST["arguments"], t


def test_do_semicolon_and_then_split(fd, server, routes):
    for sentence in ("greet Bob; shout it", "greet Bob then shout it"):
        done = fd("do", sentence, "--library", str(routes), "--yes", *model_args(server))
        assert done.code == 0, (sentence, done)
        assert "HELLO BOB" in done.out + done.err, sentence
    assert chats(server) == []


def test_do_refuses_a_capture_that_breaks_a_rule(fd, server, home):
    folder = home / "strict"
    write(
        folder / "greet.flow.json",
        code_flow(
            "greet",
            "'Hello ' + name",
            [{"name": "name", "type": "string", "required": True, "value": "", "enum": ["Alice", "Bob"]}],
            triggers=["greet $(name:word)"],
        ),
    )
    done = fd("do", "greet Carol", "--library", str(folder), "--yes", *model_args(server))
    assert done.code == 2, done
    text = done.out + done.err
    assert "name" in text and "enum" in text and "Hello Carol" not in text


def test_rules_apply_to_a_subflows_inputs(fd, home):
    """A subflow's inputs are its run's arguments: a value breaking its rule is refused."""
    write(
        home / "work" / "child.flow.json",
        code_flow("child", "str(count)", [{"name": "count", "type": "number", "value": 1, "min": 1, "max": 5}]),
    )
    parent = {
        "name": "Parent",
        "nodes": [
            start(),
            {
                "id": "sub",
                "type": "flow",
                "x": 250,
                "y": 0,
                "data": {"flow": "child.flow.json", "inputs": {"count": "9"}},
            },
        ],
        "connections": [link("start", "sub")],
    }
    path = write(home / "work" / "parent.flow.json", parent)
    done = fd("run", str(path), "--json", "--provider", "echo")
    assert done.code == 1, done
    assert json.loads(done.out)["output"] != "9"
    text = done.out + done.err
    assert "count" in text and "max" in text


def test_enum_on_a_number_compares_the_coerced_value(fd, home):
    flow = code_flow("n", "str(n)", [{"name": "n", "type": "number", "value": 1, "enum": [1, 2, 3]}])
    path = write(home / "work" / "n.flow.json", flow)
    done = fd("run", str(path), "--var", "n=2", "--json", "--provider", "echo")
    assert done.code == 0, done
    done = fd("run", str(path), "--var", "n=4", "--provider", "echo")
    assert done.code == 2, done
    assert "enum" in done.out + done.err


def test_path_must_exist_is_relative_to_the_working_directory(fd, home):
    elsewhere = home / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "only-here.txt").write_text("x")
    (home / "work" / "only-there.txt").write_text("x")
    flow = code_flow("p", "src", [{"name": "src", "type": "string", "value": "", "pathMustExist": True}])
    path = write(home / "work" / "p.flow.json", flow)
    done = fd("run", str(path), "--var", "src=only-here.txt", "--json", "--provider", "echo", cwd=elsewhere)
    assert done.code == 0, done
    done = fd("run", str(path), "--var", "src=only-there.txt", "--provider", "echo", cwd=elsewhere)
    assert done.code == 2, done
    assert "src" in done.out + done.err and "pathMustExist" in done.out + done.err


def test_default_value_breaking_a_rule_is_refused(fd, home):
    flow = code_flow("d", "code", [{"name": "code", "type": "string", "value": "toolong", "pattern": "[a-z]{3}"}])
    path = write(home / "work" / "d.flow.json", flow)
    done = fd("run", str(path), "--provider", "echo")
    assert done.code == 2, done
    assert "code" in done.out + done.err and "pattern" in done.out + done.err


def test_file_kind_probes(fd, home, files):
    # No permissions at all: no file is reachable.
    flow = json.loads(file_flow(home, "data/note.txt").read_text())
    del flow["permissions"]
    path = write(home / "work" / "noperm.flow.json", flow)
    done = fd("run", str(path), "--json", "--provider", "echo")
    assert done.code == 1, done
    assert "Hello from a file" not in done.out
    # Climbing out of the granted folder is refused.
    done = fd("run", str(file_flow(home, "data/../secret.txt")), "--json", "--provider", "echo")
    assert done.code == 1, done
    assert "permission_denied" in done.out + done.err
    # A link inside the folder that points outside is refused too.
    (files / "link.txt").symlink_to(home / "work" / "secret.txt")
    done = fd("run", str(file_flow(home, "data/link.txt")), "--json", "--provider", "echo")
    assert done.code == 1, done
    assert "outside" not in str(json.loads(done.out).get("output") or "")


def test_file_path_template_and_structured_output(fd, home, files):
    flow = json.loads(file_flow(home, "data/{{name}}.json", "json").read_text())
    flow["nodes"][0]["data"]["variables"] = [{"name": "name", "type": "string", "value": "conf"}]
    flow["nodes"].append(code_node("use", "str(second)", {"second": "{{content.a[1]}}"}))
    flow["connections"].append(link("read", "use"))
    path = write(home / "work" / "tpl.flow.json", flow)
    done = fd("run", str(path), "--json", "--provider", "echo")
    assert done.code == 0, done
    assert done.json()["output"] == "2"
    assert done.json()["vars"]["content"] == {"a": [1, 2], "b": "x"}


def test_file_csv_quoted_fields(fd, home, files):
    (files / "q.csv").write_text('name,note\n"Lovelace, Ada","said ""hi"""\n', encoding="utf-8")
    rows = read_output(fd, file_flow(home, "data/q.csv", "csv"))
    assert rows == [{"name": "Lovelace, Ada", "note": 'said "hi"'}]


def test_do_chain_with_a_model_routed_part_asks_once(fd, server, routes):
    server.handler = router(FORECAST)
    sentence = "greet Bob and then how will the sky look in Lisbon over 3 days"
    done = fd("do", sentence, "--library", str(routes), *model_args(server), typed="y\n")
    assert done.code == 0, done
    text = done.out + done.err
    assert "Hello Bob" in text and "Forecast for Lisbon over 3 days" in text
    assert len(chats(server)) == 1


def test_do_json_when_it_runs_prints_only_the_choice_on_stdout(fd, server, routes):
    """Regression: the run's log followed the JSON on stdout, so `do --json | jq` failed."""
    done = fd("do", "greet Alice", "--library", str(routes), "--yes", "--json", *model_args(server))
    assert done.code == 0, done
    assert json.loads(done.out)["flow"] == "greet"
    assert "Hello Alice" in done.err, "the log goes to stderr, as with run --json"
    chained = fd("do", "greet Bob and then shout it", "--library", str(routes), "--yes", "--json")
    assert chained.code == 0, chained
    json.loads(chained.out)
    assert "HELLO BOB" in chained.err


def test_run_json_of_a_paused_run(fd, home):
    flow = {
        "name": "Wait",
        "nodes": [
            start(initial="x"),
            {"id": "ok", "type": "approval", "x": 250, "y": 0, "data": {"prompt": "ok?"}},
            code_node("after", "'done'", {}),
        ],
        "connections": [link("start", "ok"), link("ok", "after", "approve")],
    }
    path = write(home / "work" / "wait.flow.json", flow)
    done = fd("run", str(path), "--json", "--provider", "echo")
    assert done.code == 3, done
    result = json.loads(done.out)
    assert result["status"] == "paused" and result["runId"]
    done = fd("run", str(path), "--json", "--provider", "echo", "--decide", "approve")
    assert done.code == 0, done
    assert json.loads(done.out)["output"] == "done"


@pytest.mark.parametrize(("value", "ok"), [("cat", True), ("dog", True), ("catfish", False), ("hotdog", False)])
def test_pattern_with_alternatives_matches_the_whole_value(fd, home, value, ok):
    flow = code_flow("pet", "pet", [{"name": "pet", "type": "string", "value": "cat", "pattern": "cat|dog"}])
    path = write(home / "work" / "pet.flow.json", flow)
    done = fd("run", str(path), "--var", f"pet={value}", "--provider", "echo")
    assert done.code == (0 if ok else 2), done


def test_deleted_library_flow_leaves_the_index_and_stays_deleted(fd, home):
    listed = fd("flows", "--json").json()["flows"]
    victim = listed[0]
    done = fd("flows", "delete", victim["id"])
    assert done.code == 0, done
    assert not Path(victim["path"]).exists()
    index = home / "data" / "library" / "index.json"
    if index.exists():
        assert f'"{victim["id"]}"' not in index.read_text()
    again = [f["id"] for f in fd("flows", "--json").json()["flows"]]
    assert victim["id"] not in again


def test_file_csv_with_a_byte_order_mark(fd, home, files):
    (files / "excel.csv").write_bytes("name,age\r\nAda,36\r\n".encode("utf-8-sig"))
    rows = read_output(fd, file_flow(home, "data/excel.csv", "csv"))
    assert rows == [{"name": "Ada", "age": "36"}]


def test_file_path_is_relative_to_the_workflow_not_the_shell(fd, home, files):
    elsewhere = home / "elsewhere"
    elsewhere.mkdir()
    done = fd("run", str(file_flow(home, "data/note.txt")), "--json", "--provider", "echo", cwd=elsewhere)
    assert done.code == 0, done
    assert done.json()["output"].startswith("Hello from a file.")


def test_final_variables_are_kept_in_the_run_record(fd, home):
    (home / "work" / "here.txt").write_text("x")
    path = write(home / "work" / "rules.flow.json", rules_flow())
    done = fd("run", str(path), "--json", "--provider", "echo")
    assert done.code == 0, done
    result = json.loads(done.out)
    store = engine.RunStore(home / "data" / "runs.db")
    try:
        assert store.final_variables(result["runId"]) == result["vars"]
    finally:
        store.close()


def test_learn_a_failed_run_is_refused(fd, server, home, library):
    def model(rec: Recorded) -> Reply:
        body = rec.json or {}
        if body.get("tools") and not rec.tool_results:
            return openai_tool_calls([(body["tools"][0]["function"]["name"], {"city": "Paris"})])
        return Reply(status=400, body=b'{"error": {"message": "no"}}')

    server.handler = model
    path = write(home / "work" / "helper.flow.json", helper_agent(flows=["weather"]))
    done = fd("run", str(path), "--json", *model_args(server))
    assert done.code == 1, done
    out = home / "work" / "failed.flow.json"
    done = fd("learn", json.loads(done.out)["runId"], "-o", str(out), "--no-model")
    assert done.code == 2, done
    assert not out.exists()


def test_learn_with_a_garbled_proposal_writes_nothing(fd, server, home, library):
    run_id = agent_run(fd, server, home)
    server.handler = lambda rec: answer(rec, "I think city is a variable, probably.")
    out = home / "work" / "garbled.flow.json"
    done = fd("learn", run_id, "-o", str(out), *model_args(server))
    assert done.code == 1, done
    assert not out.exists()
    assert "Traceback" not in done.err


def test_learn_drops_a_trigger_capturing_no_variable(fd, server, home, library):
    run_id = agent_run(fd, server, home)
    proposal = {
        "variables": [{"name": "city", "type": "string", "description": "the city", "from": "Paris"}],
        "triggers": ["weather in $(city:wildcard)", "weather for $(country:wildcard)", "broken (pattern"],
        "reasons": "r",
    }
    server.handler = lambda rec: answer(rec, json.dumps(proposal))
    out = home / "work" / "dropped.flow.json"
    done = fd("learn", run_id, "-o", str(out), *model_args(server))
    assert done.code == 0, done
    patterns = [t if isinstance(t, str) else t["pattern"] for t in json.loads(out.read_text()).get("triggers", [])]
    assert patterns == ["weather in $(city:wildcard)"]
    assert fd("validate", str(out)).code == 0


@pytest.fixture
def music(home: Path) -> Path:
    folder = home / "music"
    one = [{"name": "song", "type": "string", "required": True, "value": ""}]
    two = one + [{"name": "artist", "type": "string", "value": ""}]
    write(folder / "a-play.flow.json", code_flow("play", "song", one, triggers=["play $(song:wildcard)"]))
    write(
        folder / "b-play-by.flow.json",
        code_flow(
            "playby", "song + '/' + artist", two, triggers=["play $(song:wildcard) by $(artist:wildcard) (please)?"]
        ),
    )
    vol = [{"name": "level", "type": "number", "value": 1}]
    write(
        folder / "c-volume.flow.json",
        code_flow("volume", "str(level)", vol, triggers=["(set|turn) volume to $(level:number)"]),
    )
    return folder


@pytest.mark.parametrize(
    ("sentence", "flow", "arguments"),
    [
        ("Play Hello by Adele!", "playby", {"song": "Hello", "artist": "Adele"}),
        ("play a by b by c", "playby", {"song": "a", "artist": "b by c"}),
        ("play hello by adele please", "playby", {"song": "hello", "artist": "adele"}),
        ("play something nice", "play", {"song": "something nice"}),
        ("Turn volume to 7.", "volume", {"level": 7}),
    ],
)
def test_trigger_grammar_and_the_fewest_wildcard_words(fd, server, music, sentence, flow, arguments):
    done = fd("do", sentence, "--library", str(music), "--dry-run", "--json", *model_args(server))
    assert done.code == 0, done
    choice = done.json()
    assert choice["flow"] == flow and choice["match"]["by"] == "trigger"
    assert choice["arguments"] == arguments
    assert chats(server) == []


@pytest.mark.parametrize(
    "sentence",
    [
        "how will the sky look in Lisbon over 3 days :(",
        "sky in Lisbon over 3 days (or so",
        "sky in Lisbon | over 3 days",
        "sky in Lisbon over 3 days? $(maybe)",
    ],
)
def test_a_learned_sentence_with_grammar_characters_keeps_the_flow_valid(fd, server, routes, sentence):
    server.handler = router(FORECAST)
    done = fd("do", sentence, "--library", str(routes), "--yes", *model_args(server))
    assert done.code == 0, done
    path = routes / "forecast.flow.json"
    checked = fd("validate", str(path))
    assert checked.code == 0, checked
    again = fd("do", sentence, "--library", str(routes), "--dry-run", "--json", *model_args(server))
    assert again.code == 0, again
    assert again.json()["arguments"] == FORECAST["arguments"]
    learned = [t for t in json.loads(path.read_text()).get("triggers", []) if isinstance(t, dict)]
    if learned:  # stored: it must answer the same sentence with no model request
        assert again.json()["match"]["by"] == "trigger"
