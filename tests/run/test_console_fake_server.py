"""The console against the fake OpenAI-compatible server (real HTTP, real SSE): Cancel during a
slow streamed response closes the connection and ends the run within a second; a two-level
subagent conversation gives the nested trace."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import Qt

from engine import parse_workflow
from engine.llm._http import RetryPolicy
from engine.llm.base import tool_name_for
from engine.llm.config import HttpSettings
from engine.llm.registry import make_resolver
from tests.fakes.openai_server import FakeLLMServer, error_reply, openai_text, openai_tool_calls


@pytest.fixture
def server(monkeypatch, tmp_path) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv("FLOWDESK_CONFIG_DIR", str(tmp_path / "config"))
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    with FakeLLMServer() as s:
        yield s


def resolver_factory(server: FakeLLMServer):
    fast: dict[str, Any] = {
        "http": HttpSettings(connectTimeout=1.0, readTimeout=20.0, maxRetries=0),
        "retry": RetryPolicy(max_retries=0, base_delay=0.01, max_delay=0.05),
    }
    return lambda: make_resolver("openai", base_url=server.base_url, **fast)


def agent(node_id: str, name: str, *, subagents: bool = False) -> dict[str, Any]:
    return {
        "id": node_id,
        "type": "agent",
        "data": {
            "agentName": name,
            "systemPrompt": f"You are {name}.",
            "model": "gpt-4o-mini",
            "tools": {"web_search": False, "subagents": subagents},
        },
    }


def nested_flow():
    nodes = [
        {"id": "start", "type": "start", "data": {"initialInput": "Question?"}},
        agent("lead", "Lead", subagents=True),
        agent("mid", "Mid", subagents=True),
        agent("leaf", "Leaf"),
        agent("other", "Other"),
    ]
    conns = [
        {"source": "start", "target": "lead", "sourceHandle": "output"},
        {"source": "lead", "target": "mid", "sourceHandle": "subagent"},
        {"source": "mid", "target": "leaf", "sourceHandle": "subagent"},
        {"source": "lead", "target": "other", "sourceHandle": "subagent"},
    ]
    return parse_workflow({"name": "Nested", "nodes": nodes, "connections": conns})


def nested_handler(rec):
    system, results = rec.system_prompt, rec.tool_results
    if system == "You are Lead.":
        if not results:
            return openai_tool_calls(
                [
                    (tool_name_for("Mid", "mid"), {"input": "dig deeper"}),
                    (tool_name_for("Other", "other"), {"input": "second opinion"}),
                ]
            )
        return openai_text("Final: " + " | ".join(results))
    if system == "You are Mid.":
        if not results:
            return openai_tool_calls([(tool_name_for("Leaf", "leaf"), {"input": "leaf task"})])
        return openai_text("mid got " + results[0])
    if system == "You are Leaf.":
        return openai_text("leaf answer")
    if system == "You are Other.":
        return openai_text("other answer")
    return error_reply(400, f"unexpected system prompt {system!r}")


def test_cancel_during_a_slow_streamed_response_closes_it_within_a_second(qtbot, console, server):
    server.push(openai_text("tick tock tick tock", pieces=4, pause=10))
    wf = parse_workflow(
        {
            "name": "Slow",
            "nodes": [{"id": "s", "type": "start", "data": {"initialInput": "hi"}}, agent("a", "A")],
            "connections": [{"source": "s", "target": "a"}],
        }
    )
    console.set_workflow(wf)
    console.set_resolver_factory(resolver_factory(server))
    console.run_action.trigger()
    qtbot.waitUntil(lambda: any(e.type == "llm_stream" for e in console.visible_entries()), timeout=5000)
    started = time.monotonic()
    with qtbot.waitSignal(console.run_finished, timeout=1000) as finished:
        qtbot.mouseClick(console.cancel_button, Qt.MouseButton.LeftButton)
    assert time.monotonic() - started < 1.0
    assert finished.args == ["cancelled"]
    qtbot.waitUntil(lambda: server.requests[0].disconnected.is_set(), timeout=1000)  # the HTTP request was closed
    entries = [(e.node_id, e.type, e.content) for e in console.visible_entries()]
    assert entries[-1] == ("system", "run_status", "cancelled")
    assert ("a", "llm_stream", "tick ") in entries  # the partial answer stays visible
    assert not any(t == "llm_error" for _, t, _ in entries)
    assert console.bridge.node_states()["a"] == "cancelled"


def test_two_level_subagent_conversation_gives_the_nested_trace(qtbot, console, server):
    server.handler = nested_handler
    console.set_workflow(nested_flow())
    console.set_resolver_factory(resolver_factory(server))
    with qtbot.waitSignal(console.run_finished, timeout=10000) as finished:
        console.run_action.trigger()
    assert finished.args == ["completed"], console.bridge.run.error
    roots = console.trace.roots()
    assert [r.text(0) for r in roots] == ["Lead"]
    lead = roots[0]
    level1 = sorted((lead.child(i) for i in range(lead.childCount())), key=lambda it: it.text(0))
    assert [c.text(0) for c in level1] == ["Mid", "Other"]
    mid = level1[0]
    assert mid.childCount() == 1 and mid.child(0).text(0) == "Leaf" and mid.child(0).childCount() == 0
    assert [c.text(1) for c in (*level1, mid.child(0))] == ["done", "done", "done"]
    calls = {c.node_id: c for c in console.trace.calls.values()}
    assert calls["leaf"].parent_call_id == calls["mid"].call_id and calls["leaf"].depth == 2
    assert calls["mid"].input == "dig deeper" and calls["mid"].output == "mid got leaf answer"
    assert calls["leaf"].input == "leaf task" and calls["leaf"].output == "leaf answer"
    assert calls["other"].output == "other answer" and calls["other"].parent_call_id is None
    assert all(c.duration is not None for c in calls.values())
    assert mid.text(3) == "dig deeper" and mid.text(4) == "mid got leaf answer"
    response = next(e for e in console.visible_entries() if e.type == "llm_response")
    assert response.content == "Final: mid got leaf answer | other answer"
    states = console.bridge.node_states()
    assert all(states[n] == "done" for n in ("lead", "mid", "leaf", "other"))
