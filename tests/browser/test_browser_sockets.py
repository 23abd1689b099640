"""What the page's script opens behind the browser's requests: a WebSocket goes through the step's
scope like any request (out of scope: closed, never sent), and service workers are blocked (they
could fetch behind the guard's back). Pages served on 127.0.0.1 (tests/browser/site.py)."""

from __future__ import annotations

from typing import Any

from engine import EchoProvider, Run, parse_workflow
from tests.browser.conftest import error_text, settled_chromium
from tests.browser.site import Site


def flow(steps: list[dict[str, Any]], **data: Any) -> Any:
    return parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {}},
                {"id": "b", "type": "browser", "data": {"steps": steps, **data}},
            ],
            "connections": [{"source": "s", "target": "b"}],
        }
    )


async def run_flow(wf: Any) -> Run:
    run = Run(wf, EchoProvider())
    await run.start()
    return run


def socket_steps(page: str) -> list[dict[str, Any]]:
    return [
        {"action": "goto", "value": page},
        {"action": "waitFor", "selector": "#ws:not(:text('idle'))", "timeoutMs": 8000},
        {"action": "extractText", "selector": "#ws"},
    ]


async def test_a_websocket_in_scope_connects(site: Site) -> None:
    ws = f"ws://127.0.0.1:{site.port}/ws"
    run = await run_flow(
        flow(socket_steps(site.url(f"/socket?to={ws}")), scope={"type": "site", "domains": ["127.0.0.1"]})
    )
    assert str(run.status) == "completed", error_text(run)
    assert run.outputs["b"] == "got hello"
    assert "/ws" in site.requests


async def test_a_websocket_out_of_scope_is_closed_and_never_sent(site: Site) -> None:
    ws = f"ws://localhost:{site.outside.port}/ws"
    run = await run_flow(
        flow(socket_steps(site.url(f"/socket?to={ws}")), scope={"type": "site", "domains": ["127.0.0.1"]})
    )
    assert str(run.status) == "completed", error_text(run)  # a blocked request does not fail the step
    assert run.outputs["b"].startswith("closed")
    blocked = [e.extra for e in run.events if e.type == "browser_blocked"]
    assert [b["url"] for b in blocked] == [ws] and blocked[0]["reason"] == "outside_scope"
    assert site.outside.requests == []


async def test_a_websocket_outside_the_workflows_permissions_is_closed_too(site: Site) -> None:
    ws = f"ws://localhost:{site.outside.port}/ws"
    wf = flow(socket_steps(site.url(f"/socket?to={ws}")))
    wf = parse_workflow({**wf.model_dump(mode="json"), "permissions": {"network": [f"127.0.0.1:{site.port}"]}})
    run = await run_flow(wf)
    assert str(run.status) == "completed", error_text(run)
    assert run.outputs["b"].startswith("closed")
    assert [e.extra["reason"] for e in run.events if e.type == "browser_blocked"] == ["permission_denied"]
    assert site.outside.requests == []


async def test_a_service_worker_is_never_registered(site: Site) -> None:
    steps = [
        {"action": "goto", "value": site.url("/sw")},
        {"action": "waitFor", "selector": "#sw:not(:text('idle'))", "timeoutMs": 8000},
        {"action": "waitFor", "value": "500"},  # time for a registration's script to be fetched
        {"action": "extractText", "selector": "#sw"},
    ]
    run = await run_flow(flow(steps))
    assert str(run.status) == "completed", error_text(run)
    assert run.outputs["b"] in ("not registered", "refused")
    assert "/sw.js" not in site.requests  # its script never even fetched
    assert settled_chromium() == []
