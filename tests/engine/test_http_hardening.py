"""Issue 30 (requests, pages, credentials): JSON bodies written as text, literal credentials,
the whole-request deadline, fetch's memory bounds, readable messages. Real HTTP servers on
127.0.0.1 (tests/fakes/web_server.py and raw sockets), nothing faked in the product."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from engine import EchoProvider, Run, parse_workflow
from engine.graph.templates import TemplateScope, resolve_json_text
from tests.fakes.web_server import Answer, Request, WebServer, json_answer


def echo(req: Request) -> Answer:
    return json_answer({"contentType": req.headers.get("content-type"), "body": req.body.decode()})


@pytest.fixture()
def web():
    with WebServer() as server:
        server.route("/echo", echo)
        yield server


def http_flow(variables: list[dict[str, Any]], data: dict[str, Any]) -> Any:
    return parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {"variables": variables}},
                {"id": "h", "type": "http", "data": data},
            ],
            "connections": [{"source": "s", "target": "h"}],
        }
    )


async def run_flow(wf: Any) -> Run:
    run = Run(wf, EchoProvider())
    await run.start()
    return run


# ------------------------------------------------------------------ item 1: JSON bodies written as text


async def test_json_body_whole_reference_keeps_list_type(web: WebServer) -> None:
    wf = http_flow(
        [{"name": "tags", "type": "json", "value": ["a", "b"]}, {"name": "n", "value": 2}],
        {
            "method": "POST",
            "url": web.url("/echo"),
            "bodyType": "json",
            "body": '{"tags": "{{tags}}", "n": {{n}}, "who": "{{missing_name}}"}',
        },
    )
    run = await run_flow(wf)
    assert run.status == "completed", run.error
    assert json.loads(run.outputs["h"]["body"]) == {"tags": ["a", "b"], "n": 2, "who": "{{missing_name}}"}


async def test_json_body_reference_inside_string_is_escaped(web: WebServer) -> None:
    answer = 'He said "yes",\nthen left \\ quickly\t{ok}'
    wf = http_flow(
        [{"name": "answer", "value": answer}],
        {
            "method": "POST",
            "url": web.url("/echo"),
            "bodyType": "json",
            "body": '{"text": "Answer: {{answer}}", "raw": "{{answer}}"}',
        },
    )
    run = await run_flow(wf)
    assert run.status == "completed", run.error
    assert json.loads(run.outputs["h"]["body"]) == {"text": f"Answer: {answer}", "raw": answer}


async def test_json_text_body_with_json_content_type_is_json_aware(web: WebServer) -> None:
    wf = http_flow(
        [{"name": "obj", "type": "json", "value": {"k": [1, {"x": None}]}}, {"name": "q", "value": 'a"b'}],
        {
            "method": "POST",
            "url": web.url("/echo"),
            "bodyType": "text",
            "headers": [{"key": "Content-Type", "value": "application/json"}],
            "body": '{"obj": "{{obj}}", "q": "<{{q}}>"}',
        },
    )
    run = await run_flow(wf)
    assert run.status == "completed", run.error
    assert json.loads(run.outputs["h"]["body"]) == {"obj": {"k": [1, {"x": None}]}, "q": '<a"b>'}


def test_resolve_json_text_masks_secrets_and_keeps_types() -> None:
    scope = TemplateScope(
        variables={"n": 3, "s": 'x"y', "flag": True, "none": None},
        secrets=lambda name: "hunter2-secret" if name == "TOK" else None,
    )
    res = resolve_json_text(
        '{"a": "{{n}}", "b": "{{flag}}", "c": "{{none}}", "d": "t={{secrets.TOK}}", '
        '"e": "{{secrets.TOK}}", "f": "{{s}}", "g": ["{{n}}", "{{s}}!"]}',
        scope,
    )
    assert json.loads(res.value) == {
        "a": 3,
        "b": True,
        "c": None,
        "d": "t=hunter2-secret",
        "e": "hunter2-secret",
        "f": 'x"y',
        "g": [3, 'x"y!'],
    }
    assert "hunter2" not in res.masked and json.loads(res.masked)["e"] == "••••"
    assert res.secrets == {"hunter2-secret"}


# ------------------------------------------------------------------ item 7: a default whole-request deadline


def drip(_req: Request) -> Answer:
    return Answer(200, {"Content-Type": "text/html"}, chunks=(b"x" for _ in range(600)), pause=1.0)


@pytest.mark.parametrize("kind", ["http", "fetch"])
async def test_dripping_server_ends_at_the_default_deadline(kind: str, web: WebServer, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FLOWDESK_CONFIG_DIR", str(tmp_path))
    (tmp_path / "settings.json").write_text(json.dumps({"webRequests": {"deadline": 1.5}}))
    web.route("/drip", drip)
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {}},
                {"id": "h", "type": kind, "data": {"url": web.url("/drip")}},
            ],
            "connections": [{"source": "s", "target": "h"}],
        }
    )
    started = time.monotonic()
    run = await run_flow(wf)
    took = time.monotonic() - started
    assert run.status == "failed"
    assert 1.4 < took < 6, took
    assert "Timed out after 1.5 s" in run.error and "webRequests.deadline" in run.error and "timeoutMs" in run.error
    assert "Error(" not in run.error


async def test_node_timeout_ms_overrides_the_default_deadline(web: WebServer, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("FLOWDESK_CONFIG_DIR", str(tmp_path))
    (tmp_path / "settings.json").write_text(json.dumps({"webRequests": {"deadline": 30}}))
    web.route("/drip", drip)
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {}},
                {"id": "h", "type": "http", "data": {"url": web.url("/drip"), "timeoutMs": 800}},
            ],
            "connections": [{"source": "s", "target": "h"}],
        }
    )
    started = time.monotonic()
    run = await run_flow(wf)
    assert run.status == "failed" and time.monotonic() - started < 5
    assert "timed out after 800 ms" in run.error


# ------------------------------------------------------------------ item 13: messages, not Python reprs


def one_node(kind: str, data: dict[str, Any]) -> Any:
    return parse_workflow(
        {
            "nodes": [{"id": "s", "type": "start", "data": {}}, {"id": "h", "type": kind, "data": data}],
            "connections": [{"source": "s", "target": "h"}],
        }
    )


def no_repr(message: str) -> None:
    for marker in ("Error(", "InvalidURL", "UnicodeEncodeError", "RecursionError", "Traceback", "codec"):
        assert marker not in message, message


@pytest.mark.parametrize("kind", ["http", "fetch"])
async def test_redirect_to_data_url_is_a_message_not_invalid_url_repr(kind: str, web: WebServer) -> None:
    web.route("/to-data", lambda _r: Answer(302, {"Location": "data:text/plain,hello", "Content-Length": "0"}))
    run = await run_flow(one_node(kind, {"url": web.url("/to-data")}))
    assert run.status == "failed"
    no_repr(run.error)
    assert "redirected to" in run.error and "http or https" in run.error


@pytest.mark.parametrize("kind", ["http", "fetch"])
async def test_redirect_without_location_says_so(kind: str, web: WebServer) -> None:
    web.route("/noloc", lambda _r: Answer(302, {}, b"moved somewhere"))
    run = await run_flow(one_node(kind, {"url": web.url("/noloc")}))
    assert run.status == "failed"
    no_repr(run.error)
    assert "without a Location header" in run.error and "cut" not in run.error


async def test_non_ascii_header_value_is_a_message_not_unicode_encode_error(web: WebServer) -> None:
    run = await run_flow(one_node("http", {"url": web.url("/echo"), "headers": [{"key": "X-Name", "value": "José"}]}))
    assert run.status == "failed"
    no_repr(run.error)
    assert "X-Name" in run.error and "ASCII" in run.error


async def test_json_nested_200k_deep_is_a_message_not_recursion_error(web: WebServer) -> None:
    deep = "[" * 200_000 + "]" * 200_000
    run = await run_flow(
        one_node("http", {"url": web.url("/echo"), "method": "POST", "bodyType": "json", "body": deep})
    )
    assert run.status == "failed"
    no_repr(run.error)
    assert "nested too deeply" in run.error
    web.route("/deep", lambda _r: Answer(200, {"Content-Type": "application/json"}, deep.encode()))
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {}},
                {"id": "h", "type": "http", "data": {"url": web.url("/deep"), "outputVar": "r"}},
                {"id": "a", "type": "agent", "data": {"agentName": "A", "userPrompt": "{{r.x}}"}},
            ],
            "connections": [{"source": "s", "target": "h"}, {"source": "h", "target": "a"}],
        }
    )
    run = await run_flow(wf)
    assert run.status == "completed", run.error
    assert run.outputs["h"] == deep  # kept as the text it is
