"""The Anthropic Messages provider against the fake server: streaming, tool use, faults."""

from __future__ import annotations

import asyncio
import json
import time

from engine import RunStatus
from engine.llm.base import tool_name_for
from tests.fakes.anthropic_server import (
    anthropic_error,
    anthropic_error_event,
    anthropic_plain,
    anthropic_text,
    anthropic_tool_use,
)

from .conftest import agent, flow, make_run


def _run(wf, server, fast, **kw):
    return make_run(wf, server, fast, provider="anthropic", base_url=server.url, **kw)


async def test_streamed_answer_with_usage_and_headers(server, fast, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-anthropic-key-123")
    server.push(anthropic_text("Bonjour tout le monde", pieces=3, usage=(13, 8)))
    run = _run(flow(agent("a", "A", model="claude-haiku-4-5")), server, fast)
    assert await run.start() == RunStatus.COMPLETED, run.error
    deltas = [e.content for e in run.events if e.type == "llm_delta"]
    assert "".join(deltas) == "Bonjour tout le monde" and len(deltas) >= 2
    response = next(e for e in run.events if e.type == "llm_response")
    assert response.content == "Bonjour tout le monde"
    assert response.to_wire()["usage"] == {"prompt_tokens": 13, "completion_tokens": 8}
    req = server.requests[0]
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == "test-anthropic-key-123"
    assert req.headers["anthropic-version"] == "2023-06-01"
    body = req.json
    assert body["model"] == "claude-haiku-4-5" and body["system"] == "You are A." and body["stream"] is True
    assert body["messages"] == [{"role": "user", "content": "Question?"}]
    assert body["max_tokens"] > 0 and "tools" not in body


async def test_plain_answer(server, fast):
    server.push(anthropic_plain("Short."))
    run = _run(flow(agent("a", "A")), server, fast)
    assert await run.start() == RunStatus.COMPLETED
    response = next(e for e in run.events if e.type == "llm_response")
    assert response.content == "Short." and response.to_wire()["usage"] == {"prompt_tokens": 4, "completion_tokens": 2}


async def test_base_url_with_v1(server, fast):
    server.push(anthropic_text("ok"))
    run = make_run(flow(agent("a", "A")), server, fast, provider="anthropic", base_url=server.base_url)
    assert await run.start() == RunStatus.COMPLETED
    assert server.requests[0].path == "/v1/messages"


async def test_tool_use_with_nested_subagents(server, fast):
    mid, leaf, other = tool_name_for("Mid", "mid"), tool_name_for("Leaf", "leaf"), tool_name_for("Other", "other")

    def handler(rec):
        system, results = rec.system_prompt, rec.tool_results
        if system == "You are Lead.":
            if not results:
                return anthropic_tool_use([(mid, {"input": "dig"}), (other, {"input": "doubt"})])
            return anthropic_text("Final: " + " | ".join(results))
        if system == "You are Mid.":
            if not results:
                return anthropic_tool_use([(leaf, {"input": "deeper"})], text="")
            return anthropic_text("mid/" + results[0])
        return anthropic_text(system.removeprefix("You are ").rstrip(".").lower())

    server.handler = handler
    wf = flow(
        agent("lead", "Lead", subagents=True),
        agent("mid", "Mid", subagents=True),
        agent("leaf", "Leaf"),
        agent("other", "Other"),
        links=[("lead", "mid"), ("mid", "leaf"), ("lead", "other")],
    )
    run = _run(wf, server, fast)
    assert await run.start() == RunStatus.COMPLETED, run.error
    assert next(e for e in run.events if e.type == "llm_response").content == "Final: mid/leaf | other"
    starts = {
        json.loads(e.to_wire()["content"])["subagentNodeId"]: json.loads(e.to_wire()["content"])
        for e in run.events
        if e.type == "subagent_call_start"
    }
    assert starts["mid"]["depth"] == 1 and starts["other"]["depth"] == 1 and starts["leaf"]["depth"] == 2
    assert starts["leaf"]["parentCallId"] == starts["mid"]["callId"] and starts["mid"]["parentCallId"] is None

    lead = [r.json for r in server.requests if r.system_prompt == "You are Lead."]
    assert {t["name"] for t in lead[0]["tools"]} == {mid, other}
    assert all(t["input_schema"]["required"] == ["input"] for t in lead[0]["tools"])
    assistant, results = lead[1]["messages"][1:]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {"type": "text", "text": "Let me delegate."}
    assert [(b["type"], b["id"], b["name"], b["input"]) for b in assistant["content"][1:]] == [
        ("tool_use", "toolu_0", mid, {"input": "dig"}),
        ("tool_use", "toolu_1", other, {"input": "doubt"}),
    ]
    assert results["role"] == "user"
    assert [(b["type"], b["tool_use_id"], b["content"]) for b in results["content"]] == [
        ("tool_result", "toolu_0", "mid/leaf"),
        ("tool_result", "toolu_1", "other"),
    ]


async def test_error_event_mid_stream(server, fast):
    server.push(anthropic_error_event("Overloaded"))
    run = _run(flow(agent("a", "A")), server, fast)
    assert await run.start() == RunStatus.FAILED
    assert "reported an error mid-stream: Overloaded" in next(e for e in run.events if e.type == "llm_error").content


async def test_stream_cut(server, fast):
    server.push(anthropic_text("never finished", stop=False, cut=True))
    run = _run(flow(agent("a", "A")), server, fast)
    assert await run.start() == RunStatus.FAILED
    assert "cut before" in next(e for e in run.events if e.type == "llm_error").content


async def test_auth_and_model_errors(server, fast):
    server.push(anthropic_error(401, "invalid x-api-key", kind="authentication_error"))
    run = _run(flow(agent("a", "A")), server, fast)
    assert await run.start() == RunStatus.FAILED
    assert next(e for e in run.events if e.type == "llm_error").content.startswith("Authentication failed")

    server.push(anthropic_error(404, "model: claude-nope", kind="not_found_error"))
    run = _run(flow(agent("a", "A", model="claude-nope")), server, fast)
    assert await run.start() == RunStatus.FAILED
    assert "Model 'claude-nope' was not found" in next(e for e in run.events if e.type == "llm_error").content


async def test_overloaded_529_is_retried(server, fast, sleeps):
    server.push(anthropic_error(529, "Overloaded", kind="overloaded_error", retry_after="0.5"), anthropic_text("ok"))
    run = _run(flow(agent("a", "A")), server, fast)
    assert await run.start() == RunStatus.COMPLETED
    assert sleeps.delays == [0.5]


async def test_cancel_closes_the_stream(server, fast):
    server.push(anthropic_text("slow slow slow", pieces=3, pause=10))
    run = _run(flow(agent("a", "A")), server, fast)
    got = asyncio.Event()
    run.add_listener(lambda ev: got.set() if ev.type == "llm_delta" else None)
    task = asyncio.create_task(run.start())
    await asyncio.wait_for(got.wait(), 5)
    started = time.monotonic()
    run.cancel()
    assert await asyncio.wait_for(task, 2) == RunStatus.CANCELLED
    assert await asyncio.to_thread(server.requests[0].disconnected.wait, 1.0)
    assert time.monotonic() - started < 1.5


async def test_missing_key_for_remote_anthropic_is_a_config_error():
    import pytest

    from engine.llm import ProviderConfigError
    from engine.llm.registry import make_resolver

    with pytest.raises(ProviderConfigError, match="ANTHROPIC_API_KEY"):
        make_resolver("anthropic")
