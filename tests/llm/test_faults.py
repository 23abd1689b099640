"""Faults: every failure ends the run cleanly with a clear llm_error, retries are bounded,
cancellation closes the HTTP stream at once, nothing hangs."""

from __future__ import annotations

import asyncio
import json
import time

import httpx
import pytest

from engine import Run, RunState, RunStatus
from engine.llm._http import RetryPolicy, parse_retry_after
from engine.llm.config import HttpSettings
from engine.llm.registry import make_resolver
from tests.fakes.openai_server import Reply, error_reply, free_port, garbage_json, garbage_stream, openai_text, sse

from .conftest import agent, flow, make_run


async def _fail(run) -> str:
    started = time.monotonic()
    assert await run.start() == RunStatus.FAILED
    assert time.monotonic() - started < 5
    errors = [e.content for e in run.events if e.type == "llm_error"]
    assert len(errors) == 1
    assert run.status == RunStatus.FAILED and run.error and errors[0] in run.error
    return errors[0]


async def test_a_server_that_starts_a_moment_late_is_connected_to(fast):
    # A local server still starting up: the refused connection is tried again (by httpx's
    # transport, 0.5 s later), and the run completes.
    import threading

    from tests.fakes.openai_server import FakeLLMServer

    port = free_port()
    late = FakeLLMServer(port=port)
    late.push(openai_text("ready now"))
    timer = threading.Timer(0.2, late.start)
    timer.start()
    try:
        run = make_run(flow(agent("a", "A")), None, fast, base_url=f"http://127.0.0.1:{port}/v1")
        assert await run.start() == RunStatus.COMPLETED
        assert run.outputs["a"] == "ready now" and len(late.requests) == 1
    finally:
        timer.join()
        late.stop()


async def test_connection_refused_names_the_url(fast):
    url = f"http://127.0.0.1:{free_port()}/v1"
    run = make_run(flow(agent("a", "A")), None, fast, base_url=url)
    message = await _fail(run)
    assert "Could not connect to" in message and url in message
    # The provider could not serve at all: the event says so and which one, and the run state
    # every view reads has it (the console then offers another provider; the CLI says how).
    [err] = [e for e in run.events if e.type == "llm_error"]
    assert err.extra == {"providerUnavailable": True, "provider": "openai"}
    state = RunState(run.workflow)
    state.apply_many(run.events)
    assert state.provider_problem == {"node": "a", "message": message, "provider": "openai", "model": None}


async def test_a_provider_that_is_not_set_up_is_a_provider_problem_too(fast):
    # The agent names its own provider, which has no key: the call cannot be made at all.
    run = Run(flow(agent("a", "A", provider="anthropic")), make_resolver(None, **fast), delta_interval=0.0)
    message = await _fail(run)
    assert "ANTHROPIC_API_KEY" in message
    [err] = [e for e in run.events if e.type == "llm_error"]
    assert err.extra == {"providerUnavailable": True}
    state = RunState(run.workflow)
    state.apply_many(run.events)
    assert state.provider_problem is not None and state.provider_problem["provider"] is None


async def test_a_model_the_server_does_not_have_is_a_model_problem(server, fast):
    # (a flow written for OpenAI's models, run on a local server that has others)
    server.push(error_reply(404, 'model "gpt-4o-mini" not found, try pulling it first'))
    run = make_run(flow(agent("a", "A")), server, fast)
    message = await _fail(run)
    assert "Model 'gpt-4o-mini' was not found" in message
    [err] = [e for e in run.events if e.type == "llm_error"]
    assert err.extra == {"modelUnavailable": True, "model": "gpt-4o-mini", "provider": "openai"}
    state = RunState(run.workflow)
    state.apply_many(run.events)
    assert state.provider_problem == {"node": "a", "message": message, "provider": "openai", "model": "gpt-4o-mini"}


async def test_an_error_the_server_answers_is_not_a_provider_problem(server, fast):
    server.push(error_reply(400, "model 'nope' not found"))
    run = make_run(flow(agent("a", "A")), server, fast)
    await _fail(run)
    [err] = [e for e in run.events if e.type == "llm_error"]
    assert err.extra is None
    state = RunState(run.workflow)
    state.apply_many(run.events)
    assert state.provider_problem is None


@pytest.mark.parametrize("status", [401, 403])
async def test_authentication_failed(server, fast, status):
    server.push(error_reply(status, "Invalid credentials"))
    message = await _fail(make_run(flow(agent("a", "A")), server, fast))
    assert message.startswith("Authentication failed") and f"HTTP {status}" in message
    assert "Invalid credentials" in message
    assert len(server.requests) == 1  # not retried


async def test_model_not_found(server, fast):
    server.push(error_reply(404, "The model `nope` does not exist", code="model_not_found"))
    message = await _fail(make_run(flow(agent("a", "A", model="nope")), server, fast))
    assert "Model 'nope' was not found" in message and "does not exist" in message


async def test_model_not_found_by_code(server, fast):
    server.push(error_reply(400, "no such model", code="model_not_found"))
    message = await _fail(make_run(flow(agent("a", "A", model="nope")), server, fast))
    assert "Model 'nope' was not found" in message


async def test_429_retried_honouring_retry_after(server, fast, sleeps):
    server.push(
        error_reply(429, "slow down", retry_after="0.25"),
        error_reply(429, "slow down", retry_after="1"),
        openai_text("finally"),
    )
    run = make_run(flow(agent("a", "A")), server, fast)
    assert await run.start() == RunStatus.COMPLETED
    assert sleeps.delays == [0.25, 1.0]
    assert len(server.requests) == 3


async def test_5xx_retried_with_backoff_and_jitter(server, fast, sleeps):
    server.push(error_reply(503, "busy"), error_reply(500, "oops"), error_reply(502, "bad gw"), openai_text("ok"))
    run = make_run(flow(agent("a", "A")), server, fast)
    assert await run.start() == RunStatus.COMPLETED
    assert len(sleeps.delays) == 3
    for attempt, delay in enumerate(sleeps.delays):
        backoff = min(0.05, 0.01 * 2**attempt)
        assert backoff / 2 <= delay <= backoff


async def test_rate_limited_after_retries(server, fast, sleeps):
    server.handler = lambda rec: error_reply(429, "quota exceeded", retry_after="0")
    message = await _fail(make_run(flow(agent("a", "A")), server, fast))
    assert message.startswith("Rate limited") and "after 4 attempt(s)" in message and "quota exceeded" in message
    assert len(server.requests) == 4 and sleeps.delays == [0.0, 0.0, 0.0]


async def test_server_error_after_retries(server, fast):
    server.handler = lambda rec: error_reply(500, "down")
    message = await _fail(make_run(flow(agent("a", "A")), server, fast))
    assert "failed with HTTP 500 after 4 attempt(s)" in message


async def test_retry_after_too_long_is_not_waited_for(server, fast, sleeps):
    server.push(error_reply(429, "come back tomorrow", retry_after="86400"))
    message = await _fail(make_run(flow(agent("a", "A")), server, fast))
    assert message.startswith("Rate limited") and sleeps.delays == []


async def test_real_sleep_between_retries_is_short_and_bounded(server):
    server.push(error_reply(503, "busy"), openai_text("ok"))
    kwargs = {
        "http": HttpSettings(connectTimeout=1, readTimeout=2),
        "retry": RetryPolicy(max_retries=1, base_delay=0.05, max_delay=0.05),
    }
    started = time.monotonic()
    run = make_run(flow(agent("a", "A")), server, kwargs)
    assert await run.start() == RunStatus.COMPLETED
    assert 0.02 <= time.monotonic() - started < 2


def test_parse_retry_after_forms():
    assert parse_retry_after(httpx.Headers({"retry-after": "3"})) == 3.0
    assert parse_retry_after(httpx.Headers({"retry-after-ms": "1500", "retry-after": "9"})) == 1.5
    date = time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 30))
    assert 25 <= parse_retry_after(httpx.Headers({"retry-after": date})) <= 31
    assert parse_retry_after(httpx.Headers({"retry-after": "soon"})) is None
    assert parse_retry_after(httpx.Headers()) is None


async def test_timeout_before_headers(server, fast):
    server.push(Reply(delay=3, body=b"{}"))
    fast = dict(fast, http=HttpSettings(connectTimeout=1, readTimeout=0.3))
    started = time.monotonic()
    message = await _fail(make_run(flow(agent("a", "A")), server, fast))
    assert message.startswith("Timed out waiting for") and server.base_url in message
    assert time.monotonic() - started < 2


async def test_timeout_mid_stream(server, fast):
    server.push(openai_text("a slow answer", pieces=3, pause=3))
    fast = dict(fast, http=HttpSettings(connectTimeout=1, readTimeout=0.3))
    message = await _fail(make_run(flow(agent("a", "A")), server, fast))
    assert message.startswith("Timed out waiting for")


async def test_stream_cut_mid_way(server, fast):
    server.push(openai_text("this answer never ends", finish=False, cut=True))
    message = await _fail(make_run(flow(agent("a", "A")), server, fast))
    assert "was cut before the answer was complete" in message


async def test_stream_ends_without_finishing(server, fast):
    server.push(openai_text("half an answer", finish=False, cut=False))
    message = await _fail(make_run(flow(agent("a", "A")), server, fast))
    assert "was cut before the model finished" in message


async def test_malformed_stream(server, fast):
    server.push(garbage_stream())
    message = await _fail(make_run(flow(agent("a", "A")), server, fast))
    assert message.startswith("Malformed response from") and "not JSON" in message


async def test_malformed_whole_response(server, fast):
    server.push(garbage_json())
    message = await _fail(make_run(flow(agent("a", "A")), server, fast))
    assert message.startswith("Malformed response from") and "choices" in message


async def test_error_event_mid_stream(server, fast):
    server.push(Reply(events=[sse({"error": {"message": "upstream exploded"}})]))
    message = await _fail(make_run(flow(agent("a", "A")), server, fast))
    assert "reported an error mid-stream: upstream exploded" in message


async def test_other_4xx_is_reported_not_retried(server, fast):
    server.push(error_reply(400, "messages: too long"))
    message = await _fail(make_run(flow(agent("a", "A")), server, fast))
    assert "rejected the request (HTTP 400): messages: too long" in message
    assert len(server.requests) == 1


async def test_cancel_mid_stream_closes_the_connection(server, fast):
    server.push(openai_text("tick tock tick tock", pieces=4, pause=10))
    run = make_run(flow(agent("a", "A")), server, fast)
    first_delta = asyncio.Event()
    run.add_listener(lambda ev: first_delta.set() if ev.type == "llm_delta" else None)
    task = asyncio.create_task(run.start())
    await asyncio.wait_for(first_delta.wait(), 5)
    started = time.monotonic()
    run.cancel()
    assert await asyncio.wait_for(task, 2) == RunStatus.CANCELLED
    rec = server.requests[0]
    assert await asyncio.to_thread(rec.disconnected.wait, 1.0), "the server did not see the client hang up"
    assert time.monotonic() - started < 1.5
    assert [e.type for e in run.events][-1] == "run_status" and run.events[-1].content == "cancelled"
    assert not any(e.type == "llm_error" for e in run.events)


async def test_cancel_while_subagents_stream_closes_every_connection(server, fast):
    from engine.llm.base import tool_name_for
    from tests.fakes.openai_server import openai_tool_calls

    def handler(rec):
        if rec.system_prompt == "You are Parent.":
            return openai_tool_calls(
                [(tool_name_for("Kid", "k1"), {"input": "a"}), (tool_name_for("Kid", "k2"), {"input": "b"})]
            )
        return openai_text("slow child", pieces=2, pause=10)

    server.handler = handler
    wf = flow(
        agent("p", "Parent", subagents=True),
        agent("k1", "Kid", system="kid"),
        agent("k2", "Kid", system="kid"),
        links=[("p", "k1"), ("p", "k2")],
    )
    run = make_run(wf, server, fast)
    task = asyncio.create_task(run.start())
    await asyncio.to_thread(server.wait_for_requests, 3)
    await asyncio.sleep(0.1)
    run.cancel()
    assert await asyncio.wait_for(task, 2) == RunStatus.CANCELLED
    for rec in server.requests[1:]:
        assert await asyncio.to_thread(rec.disconnected.wait, 1.0)
    errors = [json.loads(e.to_wire()["content"]) for e in run.events if e.type == "subagent_call_error"]
    assert sorted(e["subagentNodeId"] for e in errors) == ["k1", "k2"]
    assert all(e["message"] == "cancelled" for e in errors)


async def test_cancel_before_the_server_answers_closes_the_connection(server, fast):
    server.push(Reply(delay=10, body=b"{}"))
    run = make_run(flow(agent("a", "A")), server, fast)
    task = asyncio.create_task(run.start())
    await asyncio.to_thread(server.wait_for_requests, 1)
    started = time.monotonic()
    run.cancel()
    assert await asyncio.wait_for(task, 2) == RunStatus.CANCELLED
    assert await asyncio.to_thread(server.requests[0].disconnected.wait, 1.0)
    assert time.monotonic() - started < 1.5


async def test_cancel_during_a_retry_wait_is_prompt(server):
    server.push(error_reply(503, "busy", retry_after="30"))
    kwargs = {"http": HttpSettings(connectTimeout=1, readTimeout=2), "retry": RetryPolicy(max_retries=2)}
    run = make_run(flow(agent("a", "A")), server, kwargs)
    task = asyncio.create_task(run.start())
    await asyncio.to_thread(server.wait_for_requests, 1)
    await asyncio.sleep(0.1)
    started = time.monotonic()
    run.cancel()
    assert await asyncio.wait_for(task, 2) == RunStatus.CANCELLED
    assert time.monotonic() - started < 1 and len(server.requests) == 1


def test_token_counts_keep_the_numbers_a_server_gave_and_drop_the_rest():
    from engine.llm._http import token_usage

    assert token_usage(12, 3.0) == {"prompt_tokens": 12, "completion_tokens": 3}
    assert token_usage(None, 5) == {"completion_tokens": 5}
    assert token_usage("many", True) is None and token_usage(None, None) is None
