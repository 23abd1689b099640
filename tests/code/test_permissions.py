"""Permissions in the engine: http, fetch and flow steps bounded by ``permissions`` when the
workflow declares it (each redirect hop too), ``permission_denied`` logged on the node, and
``validate`` warning about a step that can reach nothing it seems to need."""

from __future__ import annotations

from engine import validate
from tests.code.conftest import code_node, events, extra, needs_monty, run, workflow
from tests.fakes.web_server import WebServer, redirect, text_answer


def http(url: str, id: str = "h") -> dict:
    return {"id": id, "type": "http", "data": {"method": "GET", "url": url}}


def fetch(url: str, id: str = "f") -> dict:
    return {"id": id, "type": "fetch", "data": {"url": url}}


def test_http_and_fetch_are_open_without_permissions_and_bounded_with_them() -> None:
    with WebServer() as web:
        web.route("/a", text_answer("A"))
        host = web.url("/").split("://")[1].rstrip("/")
        assert run(workflow(http(web.url("/a")))).outputs["h"] == "A"
        allowed = run(workflow(http(web.url("/a")), permissions={"network": [host]}))
        assert allowed.status == "completed" and allowed.outputs["h"] == "A"
        before = len(web.requests)
        denied = run(workflow(fetch(web.url("/a")), permissions={"network": ["example.org"]}))
        assert denied.status == "failed" and denied.error.startswith("permission_denied: network access to '127.0.0.1:")
        assert len(web.requests) == before  # never sent
        assert extra(events(denied, "permission_denied")[0])["field"] == "network"


def test_a_redirect_to_an_unlisted_host_is_refused() -> None:
    with WebServer() as web:
        web.route("/hop", redirect("http://127.0.0.2:8081/elsewhere"))
        host = web.url("/").split("://")[1].rstrip("/")
        r = run(workflow(http(web.url("/hop")), permissions={"network": [host]}))
        assert r.status == "failed" and "permission_denied: network access to '127.0.0.2:8081'" in r.error


def test_flow_steps_are_bounded_by_permissions_flows(library) -> None:
    step = {"id": "f", "type": "flow", "data": {"flow": "upper", "inputs": {"text": "hi"}}}
    assert run(workflow(step), library=library).outputs["f"] == "UP hi"
    r = run(workflow(step, permissions={"flows": ["shout"]}), library=library)
    assert r.status == "failed" and r.error.startswith("permission_denied: the flow 'upper'")
    ok = run(workflow(step, permissions={"flows": ["upper"]}), library=library)
    assert ok.status == "completed"


@needs_monty
def test_code_call_flow_is_bounded_and_the_denial_fails_the_step_even_when_caught(library) -> None:
    code = "try:\n    x = await call_flow('upper', text='a')\nexcept Exception as e:\n    x = 'caught'\nx"
    r = run(workflow(code_node(code), permissions={"flows": ["shout"]}), library=library)
    assert r.status == "failed" and r.error.startswith("permission_denied: the flow 'upper'")
    assert extra(events(r, "permission_denied")[0]) == {"what": "the flow 'upper'", "field": "flows"}
    r = run(workflow(code_node(code)), library=library)  # no permissions: flows are open
    assert r.status == "completed" and r.outputs["c"] == "UP a"


def test_validate_warns_about_unreachable_hosts_and_flows() -> None:
    wf = workflow(
        http("https://api.example.com/v1"),
        fetch("https://docs.example.org/page"),
        code_node("await call_flow('other')\n", id="c"),
        permissions={"network": ["api.example.com"], "flows": ["mine"]},
    )
    issues = {(i.code, i.node_ids[0]) for i in validate(wf) if not i.is_error}
    assert ("permission_network", "f") in issues and ("permission_network", "h") not in issues
    assert ("permission_flow", "c") in issues
    open_wf = workflow(http("https://api.example.com/v1"), fetch("https://docs.example.org/page"))
    assert not [i for i in validate(open_wf) if i.code.startswith("permission_")]


def test_validate_warns_about_literal_hosts_code_cannot_reach() -> None:
    code = "const r = await fetch(`https://api.example.com/v1/${id}`);\nreturn 1;"
    closed = [i for i in validate(workflow(code_node(code, "javascript"))) if i.code == "permission_network"]
    assert closed and "api.example.com" in closed[0].message and "no permissions" in closed[0].message
    granted = workflow(code_node(code, "javascript"), permissions={"network": ["api.example.com"]})
    assert not [i for i in validate(granted) if i.code == "permission_network"]
