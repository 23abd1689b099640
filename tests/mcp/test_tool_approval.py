"""Approving tool calls: an agent's call waits for a person, who may edit its arguments or
decline it; the pause survives a snapshot and a new process."""

from __future__ import annotations

import json

import pytest

from engine.llm._http import RetryPolicy
from engine.llm.config import HttpSettings
from engine.llm.echo import EchoProvider
from engine.llm.registry import make_resolver
from engine.run.events import RunStatus
from engine.run.scheduler import Run, RunStateError
from tests.fakes.openai_server import FakeLLMServer, openai_text, openai_tool_calls

from .conftest import stdio_server
from .helpers import agent, tool_events, workflow


@pytest.fixture
def llm():
    with FakeLLMServer() as s:
        yield s


def _run(wf, llm, **kw):
    resolver = make_resolver(
        "openai",
        base_url=llm.base_url,
        http=HttpSettings(connectTimeout=2.0, readTimeout=10.0, maxRetries=0),
        retry=RetryPolicy(max_retries=0, base_delay=0.01, max_delay=0.01),
    )
    return Run(wf, resolver, delta_interval=0, **kw)


def _tool_messages(rec):
    return [m for m in rec.json["messages"] if m["role"] == "tool"]


def _calc_flow(approve="ask"):
    return workflow(
        agent("a", [{"server": "calc", "tools": ["add"], "approve": approve}]),
        servers={"calc": stdio_server()},
    )


async def test_a_scripted_tool_call_reaches_the_server_and_the_result_the_model(llm):
    llm.push(openai_tool_calls([("add", {"a": 2, "b": 3})]), openai_text("The total is 5."))
    run = _run(_calc_flow("always"), llm)
    assert await run.start() == RunStatus.COMPLETED, run.error
    assert run.outputs["a"] == "The total is 5."
    offered = llm.requests[0].json["tools"]
    assert offered[0]["function"]["name"] == "add"
    assert offered[0]["function"]["parameters"]["required"] == ["a", "b"]
    assert json.loads(_tool_messages(llm.requests[1])[0]["content"]) == {"total": 5}
    kinds = [t for t, _ in tool_events(run)]
    assert kinds == ["tool_call_start", "tool_call_end"]


async def test_an_error_result_goes_back_to_the_model_and_the_run_goes_on(llm):
    wf = workflow(agent("a", [{"server": "calc", "tools": ["fail"]}]), servers={"calc": stdio_server()})
    llm.push(openai_tool_calls([("fail", {"reason": "x"})]), openai_text("It failed, sorry."))
    run = _run(wf, llm)
    assert await run.start() == RunStatus.COMPLETED, run.error
    (err,) = [x for t, x in tool_events(run) if t == "tool_call_error"]
    assert err["tool"] == "fail" and err["server"] == "calc"
    assert "Error executing tool fail" in _tool_messages(llm.requests[1])[0]["content"]


async def test_pause_edit_the_arguments_and_approve(llm):
    llm.push(openai_tool_calls([("add", {"a": 2, "b": 3})]), openai_text("The total is 10."))
    run = _run(_calc_flow(), llm)
    assert await run.start() == RunStatus.PAUSED
    (wait,) = [e for e in run.events if e.type == "wait_input"]
    assert wait.node_id == "a"
    assert {k: wait.extra[k] for k in ("kind", "tool", "server", "arguments")} == {
        "kind": "tool_call",
        "tool": "add",
        "server": "calc",
        "arguments": {"a": 2, "b": 3},
    }
    assert not tool_events(run)  # nothing called yet
    with pytest.raises(RunStateError, match="input schema"):
        await run.resume("approve", arguments={"a": "x"})
    assert run.status == RunStatus.PAUSED
    # snapshot, restored (as another process would), then answered
    snap = json.loads(json.dumps(run.snapshot()))
    again = Run.restore(snap, run._resolve, delta_interval=0)  # noqa: SLF001 - the same provider
    assert await again.resume("approve", arguments={"a": 4, "b": 6}) == RunStatus.COMPLETED, again.error
    assert again.outputs["a"] == "The total is 10."
    assert len(llm.requests) == 2  # the model was not asked again for the waiting turn
    assert json.loads(_tool_messages(llm.requests[1])[0]["content"]) == {"total": 10}
    (start,) = [x for t, x in tool_events(again) if t == "tool_call_start"]
    assert start["arguments"] == {"a": 4, "b": 6}


async def test_reject_with_a_note_reaches_the_model(llm):
    llm.push(openai_tool_calls([("add", {"a": 2, "b": 3})]), openai_text("Understood."))
    run = _run(_calc_flow(), llm)
    assert await run.start() == RunStatus.PAUSED
    assert await run.resume("reject", "too expensive") == RunStatus.COMPLETED, run.error
    (msg,) = _tool_messages(llm.requests[1])
    assert msg["content"] == "The user declined this call. Note: too expensive"
    assert not tool_events(run)


async def test_echo_asks_before_each_asking_tool():
    wf = workflow(
        agent("a", [{"server": "calc", "tools": ["echo"], "approve": "ask"}, {"server": "calc", "tools": ["add"]}]),
        servers={"calc": stdio_server()},
    )
    run = Run(wf, EchoProvider(), delta_interval=0)
    assert await run.start() == RunStatus.PAUSED
    assert run.waiting_extra()["tool"] == "echo"
    assert await run.resume("approve", arguments={"text": "edited"}) == RunStatus.COMPLETED, run.error
    assert '[calc/echo] {"result": "echo: edited"}' in run.outputs["a"]
    assert "[calc/add]" in run.outputs["a"]


async def test_a_flow_tool_may_ask_too(tmp_path):
    from engine.flows.library import FlowLibrary

    lib_dir = tmp_path / "lib"
    lib_dir.mkdir()
    (lib_dir / "greet.flow.json").write_text(
        json.dumps(
            {
                "id": "greet",
                "name": "Greet",
                "description": "Says hello.",
                "nodes": [
                    {
                        "id": "s",
                        "type": "start",
                        "x": 0,
                        "y": 0,
                        "data": {"initialInput": "", "variables": [{"name": "who", "type": "string"}]},
                    },
                    {
                        "id": "g",
                        "type": "agent",
                        "x": 0,
                        "y": 0,
                        "data": {"agentName": "G", "userPrompt": "hi {{who}}", "tools": {}},
                    },
                ],
                "connections": [{"source": "s", "target": "g", "sourceHandle": "output", "targetHandle": "input"}],
            }
        )
    )
    wf = workflow(
        agent("a", [], tools={"web_search": False, "subagents": False, "flows": [{"flow": "greet", "approve": "ask"}]}),
        servers={},
    )
    run = Run(wf, EchoProvider(), delta_interval=0, library=FlowLibrary([lib_dir]))
    assert await run.start() == RunStatus.PAUSED, run.error
    extra = run.waiting_extra()
    assert extra["kind"] == "tool_call" and extra["tool"] == "greet" and "server" not in extra
    assert await run.resume("reject", "not now") == RunStatus.COMPLETED
    assert "The user declined this call. Note: not now" in run.outputs["a"]


async def test_an_agent_calls_a_tool_over_streamable_http(llm, http_server):
    wf = workflow(
        agent("a", [{"server": "web", "tools": "*"}]),
        servers={"web": {"url": http_server, "headers": {"X-Test": "yes"}}},
    )
    llm.push(openai_tool_calls([("echo", {"text": "over http"})]), openai_text("Done."))
    run = _run(wf, llm)
    assert await run.start() == RunStatus.COMPLETED, run.error
    offered = {t["function"]["name"] for t in llm.requests[0].json["tools"]}
    assert {"echo", "add", "fail", "die", "slow", "env"} <= offered
    assert json.loads(_tool_messages(llm.requests[1])[0]["content"]) == {"result": "echo: over http"}


async def test_a_server_dying_mid_call_goes_back_to_the_model(llm):
    wf = workflow(agent("a", [{"server": "calc", "tools": ["die", "echo"]}]), servers={"calc": stdio_server()})
    llm.push(
        openai_tool_calls([("die", {})]),
        openai_tool_calls([("echo", {"text": "still here"})]),
        openai_text("Recovered."),
    )
    run = _run(wf, llm)
    assert await run.start() == RunStatus.COMPLETED, run.error
    first = _tool_messages(llm.requests[1])[0]["content"]
    assert first.startswith("Error:") and "'calc'" in first
    assert json.loads(_tool_messages(llm.requests[2])[-1]["content"]) == {"result": "echo: still here"}
    kinds = [(t, x["tool"]) for t, x in tool_events(run)]
    assert kinds == [
        ("tool_call_start", "die"),
        ("tool_call_error", "die"),
        ("tool_call_start", "echo"),
        ("tool_call_end", "echo"),
    ]


async def test_a_tool_call_in_a_nested_flow_is_answered_from_the_parent(tmp_path):
    from engine.flows.library import FlowLibrary

    lib_dir = tmp_path / "lib"
    lib_dir.mkdir()
    inner = workflow(
        agent("a", [{"server": "calc", "tools": ["echo"], "approve": "ask"}]),
        servers={"calc": stdio_server()},
        id="inner",
    )
    (lib_dir / "inner.flow.json").write_text(inner.model_dump_json())
    outer = workflow({"id": "f", "type": "flow", "x": 0, "y": 0, "data": {"flow": "inner", "inputs": {}}}, servers={})
    run = Run(outer, EchoProvider(), delta_interval=0, library=FlowLibrary([lib_dir]))
    assert await run.start() == RunStatus.PAUSED, run.error
    assert run.pending_approval == "f"
    assert run.waiting_extra()["tool"] == "echo"
    with pytest.raises(RunStateError, match="input schema"):
        await run.resume("approve", arguments={"text": 1})
    snap = json.loads(json.dumps(run.snapshot()))
    again = Run.restore(snap, EchoProvider(), delta_interval=0, library=FlowLibrary([lib_dir]))
    assert await again.resume("approve", arguments={"text": "nested"}) == RunStatus.COMPLETED, again.error
    assert '[calc/echo] {"result": "echo: nested"}' in again.outputs["f"]
