"""The OpenAI-compatible provider against a fake server: answers, streaming, tools, subagents."""

from __future__ import annotations

import asyncio
import json

from engine import RunStatus
from engine.llm.base import tool_name_for
from engine.llm.tools import NO_SEARCH_BACKEND
from tests.fakes.openai_server import Reply, error_reply, openai_plain, openai_text, openai_tool_calls

from .conftest import agent, flow, make_run, types


async def test_streamed_answer_emits_deltas_then_response_with_usage(server, fast):
    server.push(openai_text("Hello there, world!", pieces=3, usage=(11, 7)))
    run = make_run(flow(agent("a", "Greeter")), server, fast)
    assert await run.start() == RunStatus.COMPLETED
    seq = types(run)
    assert seq[:5] == ["run_status", "step_start", "step_end", "step_start", "start_prompt"]
    assert seq[-3:] == ["llm_response", "step_end", "run_status"]
    deltas = [e.content for e in run.events if e.type == "llm_delta"]
    assert len(deltas) >= 2 and "".join(deltas) == "Hello there, world!"
    assert seq.index("llm_delta") < seq.index("llm_response")
    response = next(e for e in run.events if e.type == "llm_response")
    assert response.content == "Hello there, world!"
    assert response.to_wire()["usage"] == {"prompt_tokens": 11, "completion_tokens": 7}
    assert run.records["a"].usage == {"prompt_tokens": 11, "completion_tokens": 7}

    req = server.requests[0]
    assert req.method == "POST" and req.path == "/v1/chat/completions"
    body = req.json
    assert body["model"] == "gpt-4o-mini"
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["messages"] == [
        {"role": "system", "content": "You are Greeter."},
        {"role": "user", "content": "Question?"},
    ]
    assert "tools" not in body and "reasoning_effort" not in body
    assert "authorization" not in req.headers  # a local base URL needs no key


async def test_plain_json_answer(server, fast):
    server.push(openai_plain("Plain answer.", usage=(5, 3)))
    run = make_run(flow(agent("a", "A")), server, fast)
    assert await run.start() == RunStatus.COMPLETED
    response = next(e for e in run.events if e.type == "llm_response")
    assert response.content == "Plain answer."
    assert response.to_wire()["usage"] == {"prompt_tokens": 5, "completion_tokens": 3}


async def test_reasoning_effort_only_for_models_that_accept_it(server, fast):
    server.push(openai_text("one"), openai_text("two"), openai_text("three"))
    wf = flow(
        agent("a", "A", model="o4-mini", effort="high"),
        agent("b", "B", model="gpt-4o-mini"),
        agent("c", "C", model="some-unknown-model"),
        chain=["a", "b", "c"],
    )
    run = make_run(wf, server, fast)
    assert await run.start() == RunStatus.COMPLETED
    bodies = [r.json for r in server.requests]
    assert bodies[0]["model"] == "o4-mini" and bodies[0]["reasoning_effort"] == "high"
    assert "reasoning_effort" not in bodies[1]
    assert bodies[2]["model"] == "some-unknown-model" and "reasoning_effort" not in bodies[2]


async def test_model_override_and_node_model_as_is(server, fast):
    from engine import Run
    from engine.llm.registry import make_resolver

    server.push(openai_text("x"))
    run = Run(
        flow(agent("a", "A", model="llama3.2:latest")),
        make_resolver("openai", base_url=server.base_url, model="qwen2.5", **fast),
    )
    assert await run.start() == RunStatus.COMPLETED
    assert server.requests[0].json["model"] == "qwen2.5"


def _nested_handler(parallel_delay: float = 0.0):
    """lead → (mid → leaf, other): each agent recognised by its system prompt."""
    names = {
        "lead": tool_name_for("Mid", "mid"),
        "other": tool_name_for("Other", "other"),
        "leaf": tool_name_for("Leaf", "leaf"),
    }

    def handler(rec):
        system, results = rec.system_prompt, rec.tool_results
        if system == "You are Lead.":
            if not results:
                return openai_tool_calls(
                    [(names["lead"], {"input": "dig deeper"}), (names["other"], {"input": "second opinion"})],
                    text="Delegating.",
                )
            return openai_text("Final: " + " | ".join(results))
        if system == "You are Mid.":
            if not results:
                return openai_tool_calls([(names["leaf"], {"input": "leaf task"})])
            return openai_text("mid got " + results[0])
        if system == "You are Leaf.":
            return Reply(events=openai_text("leaf answer").events, delay=parallel_delay)
        if system == "You are Other.":
            return Reply(events=openai_text("other answer").events, delay=parallel_delay)
        return error_reply(400, f"unexpected system prompt {system!r}")

    return handler


def _nested_flow():
    return flow(
        agent("lead", "Lead", subagents=True),
        agent("mid", "Mid", subagents=True),
        agent("leaf", "Leaf"),
        agent("other", "Other"),
        chain=["lead"],
        links=[("lead", "mid"), ("mid", "leaf"), ("lead", "other")],
    )


async def test_nested_subagents_two_levels_deep(server, fast):
    server.handler = _nested_handler()
    run = make_run(_nested_flow(), server, fast)
    assert await run.start() == RunStatus.COMPLETED, run.error

    response = next(e for e in run.events if e.type == "llm_response")
    assert response.node_id == "lead"
    assert response.content == "Final: mid got leaf answer | other answer"
    # usage sums the lead's two turns
    assert response.to_wire()["usage"] == {"prompt_tokens": 31, "completion_tokens": 17}

    calls = [
        (str(e.type), e.node_id, json.loads(e.to_wire()["content"]))
        for e in run.events
        if str(e.type).startswith("subagent_")
    ]
    assert len(calls) == 6
    by = {(c[2]["subagentNodeId"], c[0]): c for c in calls}
    mid_start, mid_end = by[("mid", "subagent_call_start")], by[("mid", "subagent_call_end")]
    leaf_start, leaf_end = by[("leaf", "subagent_call_start")], by[("leaf", "subagent_call_end")]
    other_start, other_end = by[("other", "subagent_call_start")], by[("other", "subagent_call_end")]
    for kind, node, payload in calls:
        assert payload["type"] == kind
        assert node == payload["parentNodeId"]
        assert set(payload) == {
            "type",
            "parentNodeId",
            "subagentNodeId",
            "subagentName",
            "callId",
            "parentCallId",
            "depth",
            "message",
        }
    assert mid_start[1] == "lead" and mid_start[2]["depth"] == 1 and mid_start[2]["parentCallId"] is None
    assert mid_start[2]["message"] == "dig deeper"
    assert other_start[2]["depth"] == 1 and other_start[2]["parentCallId"] is None
    assert leaf_start[1] == "mid" and leaf_start[2]["depth"] == 2
    assert leaf_start[2]["parentCallId"] == mid_start[2]["callId"]
    assert leaf_end[2]["callId"] == leaf_start[2]["callId"] and leaf_end[2]["message"] == "leaf answer"
    assert mid_end[2]["callId"] == mid_start[2]["callId"] and mid_end[2]["message"] == "mid got leaf answer"
    assert other_end[2]["message"] == "other answer"
    assert len({c[2]["callId"] for c in calls}) == 3
    order = [(c[2]["subagentNodeId"], c[0]) for c in calls]
    assert order.index(("mid", "subagent_call_start")) < order.index(("leaf", "subagent_call_start"))
    assert order.index(("leaf", "subagent_call_end")) < order.index(("mid", "subagent_call_end"))
    seq = types(run)
    assert seq.index("subagent_call_start") > seq.index("start_prompt")
    assert max(i for i, t in enumerate(seq) if t.startswith("subagent_")) < seq.index("llm_response")

    # what the lead's model was offered and sent back
    lead_reqs = [r for r in server.requests if r.system_prompt == "You are Lead."]
    first, second = lead_reqs[0].json, lead_reqs[1].json
    tools = {t["function"]["name"]: t["function"] for t in first["tools"]}
    assert set(tools) == {tool_name_for("Mid", "mid"), tool_name_for("Other", "other")}
    mid_tool = tools[tool_name_for("Mid", "mid")]
    assert "You are Mid." in mid_tool["description"] and "Leaf" in mid_tool["description"]
    assert mid_tool["parameters"]["required"] == ["input"]
    assistant, *tool_msgs = second["messages"][2:]
    assert assistant["role"] == "assistant" and [c["id"] for c in assistant["tool_calls"]] == [
        "call_fake_0",
        "call_fake_1",
    ]
    assert [(m["tool_call_id"], m["content"]) for m in tool_msgs] == [
        ("call_fake_0", "mid got leaf answer"),
        ("call_fake_1", "other answer"),
    ]
    # subagent children do not stream into the console
    assert {e.node_id for e in run.events if e.type == "llm_delta"} <= {"lead"}


async def test_parallel_tool_calls_overlap(server, fast):
    server.handler = _nested_handler(parallel_delay=0.3)
    run = make_run(_nested_flow(), server, fast)
    assert await run.start() == RunStatus.COMPLETED, run.error
    leaf = next(r for r in server.requests if r.system_prompt == "You are Leaf.")
    other = next(r for r in server.requests if r.system_prompt == "You are Other.")
    # both subagent branches were in flight at the same time
    assert leaf.started < other.ended and other.started < leaf.ended


async def test_failing_subagent_becomes_error_tool_result(server, fast):
    child_tool = tool_name_for("Child", "child")

    def handler(rec):
        if rec.system_prompt == "You are Child.":
            return error_reply(400, "the child cannot do this")
        if not rec.tool_results:
            return openai_tool_calls([(child_tool, {"input": "try"})])
        return openai_text("recovered after: " + rec.tool_results[0])

    server.handler = handler
    wf = flow(agent("p", "Parent", subagents=True), agent("child", "Child"), links=[("p", "child")])
    run = make_run(wf, server, fast)
    assert await run.start() == RunStatus.COMPLETED, run.error
    err = json.loads(next(e for e in run.events if e.type == "subagent_call_error").to_wire()["content"])
    assert "the child cannot do this" in err["message"]
    response = next(e for e in run.events if e.type == "llm_response")
    assert response.content.startswith("recovered after: Error: ")
    assert "HTTP 400" in response.content


async def test_unknown_tool_and_bad_arguments_do_not_crash(server, fast):
    def handler(rec):
        if not rec.tool_results:
            return openai_tool_calls([("no_such_tool", {"x": 1})])
        return openai_text("ok: " + rec.tool_results[0])

    server.handler = handler
    run = make_run(flow(agent("a", "A")), server, fast)
    assert await run.start() == RunStatus.COMPLETED
    response = next(e for e in run.events if e.type == "llm_response")
    assert response.content.startswith("ok: Error: there is no tool named 'no_such_tool'")


async def test_turn_limit_stops_a_tool_loop(server, fast):
    from engine.llm.config import HttpSettings

    child_tool = tool_name_for("Child", "child")

    def handler(rec):
        if rec.system_prompt == "You are Child.":
            return openai_text("again")
        return openai_tool_calls([(child_tool, {"input": "more"})])

    server.handler = handler
    fast = dict(fast, http=HttpSettings(connectTimeout=1, readTimeout=2, maxTurns=3))
    wf = flow(agent("p", "Parent", subagents=True), agent("child", "Child"), links=[("p", "child")])
    run = make_run(wf, server, fast)
    assert await run.start() == RunStatus.FAILED
    error = next(e for e in run.events if e.type == "llm_error")
    assert "3 turns" in error.content
    assert len([r for r in server.requests if r.system_prompt == "You are Parent."]) == 3


async def test_web_search_over_searxng(server, fast, monkeypatch):
    monkeypatch.setenv("FLOWDESK_SEARXNG_URL", server.url)
    results = {
        "results": [
            {"title": "Flowdesk", "url": "https://example.org/f", "content": "A desktop app."},
            {"title": "Second", "url": "https://example.org/2", "content": "More."},
        ]
    }

    def handler(rec):
        if rec.path.startswith("/search"):
            return Reply(body=json.dumps(results).encode())
        if not rec.tool_results:
            return openai_tool_calls([("web_search", {"query": "what is flowdesk"})])
        return openai_text("Found: " + rec.tool_results[0])

    server.handler = handler
    run = make_run(flow(agent("a", "A", web_search=True)), server, fast)
    assert await run.start() == RunStatus.COMPLETED, run.error
    search = next(r for r in server.requests if r.path.startswith("/search"))
    assert search.method == "GET" and search.path == "/search?q=what+is+flowdesk&format=json"
    first = server.requests[0].json
    assert [t["function"]["name"] for t in first["tools"]] == ["web_search"]
    response = next(e for e in run.events if e.type == "llm_response").content
    assert "1. Flowdesk — https://example.org/f" in response and "A desktop app." in response


async def test_web_search_without_backend_answers_clearly(server, fast):
    def handler(rec):
        if not rec.tool_results:
            return openai_tool_calls([("web_search", {"query": "anything"})])
        return openai_text(rec.tool_results[0])

    server.handler = handler
    run = make_run(flow(agent("a", "A", web_search=True)), server, fast)
    assert await run.start() == RunStatus.COMPLETED
    assert next(e for e in run.events if e.type == "llm_response").content == NO_SEARCH_BACKEND


async def test_web_search_available_reflects_env_and_settings(isolated_config, monkeypatch):
    from engine import validate
    from engine.llm import web_search_available

    assert web_search_available() is False
    wf = flow(agent("a", "A", web_search=True))
    codes = [i.code for i in validate(wf, web_search_available=web_search_available())]
    assert "web_search_unconfigured" in codes
    (isolated_config / "settings.json").write_text(json.dumps({"webSearch": {"searxngUrl": "http://127.0.0.1:9"}}))
    assert web_search_available() is True
    (isolated_config / "settings.json").unlink()
    monkeypatch.setenv("FLOWDESK_SEARXNG_URL", "http://127.0.0.1:9")
    assert web_search_available() is True
    assert "web_search_unconfigured" not in [i.code for i in validate(wf, web_search_available=True)]


async def test_provider_called_directly_streams_to_context(server, fast):
    from engine.llm import AgentInvocation
    from engine.llm.openai import OpenAIProvider

    class Ctx:
        node_id = "n"

        def __init__(self):
            self.deltas = []

        def delta(self, text):
            self.deltas.append(text)

        async def call_subagent(self, child, argument):  # pragma: no cover - not used here
            raise AssertionError

    server.push(openai_text("abcdef", pieces=3))
    ctx = Ctx()
    provider = OpenAIProvider(base_url=server.base_url, **fast)
    inv = AgentInvocation("n", "N", "sys", "hi", "m", "low", {}, [])
    result = await provider.complete(inv, ctx)
    assert result.text == "abcdef" and ctx.deltas == ["ab", "cd", "ef"]
    assert result.model == "fake-model"
    assert "api_key" not in repr(provider)
    await asyncio.sleep(0)


async def test_exact_event_sequence_of_a_nested_call_chain(server, fast):
    """lead → mid → leaf, one call per level: the whole log, in order."""

    def handler(rec):
        system, results = rec.system_prompt, rec.tool_results
        if system == "You are Lead.":
            if not results:
                return openai_tool_calls([(tool_name_for("Mid", "mid"), {"input": "go"})])
            return openai_text("lead:" + results[0], pieces=2)
        if system == "You are Mid.":
            if not results:
                return openai_tool_calls([(tool_name_for("Leaf", "leaf"), {"input": "deeper"})])
            return openai_text("mid:" + results[0])
        return openai_text("leaf")

    server.handler = handler
    wf = flow(
        agent("lead", "Lead", subagents=True),
        agent("mid", "Mid", subagents=True),
        agent("leaf", "Leaf"),
        links=[("lead", "mid"), ("mid", "leaf")],
    )
    run = make_run(wf, server, fast)
    assert await run.start() == RunStatus.COMPLETED, run.error
    got = [
        (
            e.node_id,
            str(e.type),
            e.content
            if not str(e.type).startswith("subagent_")
            else (
                json.loads(e.to_wire()["content"])["subagentNodeId"],
                json.loads(e.to_wire()["content"])["depth"],
                json.loads(e.to_wire()["content"])["message"],
            ),
        )
        for e in run.events
    ]
    assert got == [
        ("system", "run_status", "running"),
        ("start", "step_start", "Start"),
        ("start", "step_end", "done"),
        ("lead", "step_start", "Lead"),
        ("lead", "start_prompt", "Question?"),
        ("lead", "subagent_call_start", ("mid", 1, "go")),
        ("mid", "subagent_call_start", ("leaf", 2, "deeper")),
        ("mid", "subagent_call_end", ("leaf", 2, "leaf")),
        ("lead", "subagent_call_end", ("mid", 1, "mid:leaf")),
        ("lead", "llm_delta", "lead:mi"),
        ("lead", "llm_delta", "d:leaf"),
        ("lead", "llm_response", "lead:mid:leaf"),
        ("lead", "step_end", "done"),
        ("system", "run_status", "completed"),
    ]
    ids = [json.loads(e.to_wire()["content"]) for e in run.events if str(e.type).startswith("subagent_")]
    assert ids[0]["callId"] == ids[3]["callId"] and ids[1]["callId"] == ids[2]["callId"]
    assert ids[1]["parentCallId"] == ids[0]["callId"] and ids[0]["parentCallId"] is None
