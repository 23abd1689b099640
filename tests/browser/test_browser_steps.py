"""The ``browser`` kind's steps against pages served on 127.0.0.1: every action, the output's
shape, events, screenshots in the run store, scope and permissions, cancel, validation."""

from __future__ import annotations

import asyncio
import base64
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from engine import EchoProvider, Run, WorkflowLoadError, parse_workflow, validate
from engine.browser.scope import Scope
from engine.store import RunRecorder, RunStore
from tests.browser.conftest import chromium_processes, error_text, settled_chromium
from tests.browser.site import Site


def flow(steps: list[dict[str, Any]] | None = None, **data: Any) -> Any:
    node = {"id": "b", "type": "browser", "data": {"steps": steps or [], **data}}
    permissions = data.pop("permissions", None)
    wf: dict[str, Any] = {
        "nodes": [{"id": "s", "type": "start", "data": {}}, node],
        "connections": [{"source": "s", "target": "b"}],
    }
    if permissions is not None:
        wf["permissions"] = permissions
        node["data"].pop("permissions", None)
    return parse_workflow(wf)


async def run_flow(wf: Any, **options: Any) -> Run:
    run = Run(wf, EchoProvider(), **options)
    await run.start()
    return run


def events(run: Run, kind: str) -> list[Any]:
    return [e for e in run.events if e.type == kind]


async def test_every_action_and_the_output_is_the_extracts_in_order(site: Site) -> None:
    wf = flow(
        [
            {"action": "goto", "value": site.url("/login")},
            {"action": "type", "selector": "#user", "value": "{{who}}"},
            {"action": "type", "selector": "#password", "value": "pw"},
            {"action": "select", "selector": "#role", "value": "admin"},
            {"action": "click", "selector": "#go", "timeoutMs": 5000},
            {"action": "waitFor", "selector": "#hello"},
            {"action": "extractText", "selector": "#hello"},
            {"action": "screenshot"},
            {"action": "goto", "value": site.url("/table")},
            {"action": "extractTable", "selector": "#people"},
            {"action": "extractAttribute", "selector": "#logo", "value": "data-kind"},
            {"action": "goto", "value": site.url("/plain-table")},
            {"action": "extractTable"},
            {"action": "goto", "value": site.url("/js")},
            {"action": "waitFor", "selector": "#late", "timeoutMs": 5000},
            {"action": "extractText", "selector": "#late"},
            {"action": "press", "selector": "", "value": "Tab"},
            {"action": "waitFor", "value": "50"},
        ]
    )
    run = await run_flow(wf, variables={"who": "ada"})
    assert str(run.status) == "completed", error_text(run)
    assert run.outputs["b"] == [
        "Welcome ada",
        [{"Name": "Ada", "Age": "36"}, {"Name": "Alan", "Age": "41"}],
        "logo",
        [{"City": "Lyon", "Country": "France"}],
        "Rendered by script",
    ]
    actions = [e.extra["action"] for e in events(run, "browser_action")]
    assert actions[:8] == ["goto", "type", "type", "select", "click", "waitFor", "extractText", "screenshot"]
    assert set(actions) >= {"press", "extractTable", "extractAttribute"}
    first = events(run, "browser_action")[0].extra
    assert set(first) >= {"action", "selector", "url", "durationMs"} and first["url"] == site.url("/login")
    assert "role=admin" in events(run, "browser_action")[4].extra["url"]
    shot = events(run, "browser_screenshot")[0].extra["attachment"]
    assert base64.b64decode(shot["data"])[:8] == b"\x89PNG\r\n\x1a\n" and shot["size"] > 1000
    assert chromium_processes() == []  # closed with the step


async def test_one_extract_gives_its_value_and_a_redirect_is_followed(site: Site) -> None:
    run = await run_flow(flow([{"action": "goto", "value": site.url("/redirect")}, {"action": "extractTable"}]))
    assert run.outputs["b"] == [{"Name": "Ada", "Age": "36"}, {"Name": "Alan", "Age": "41"}]


async def test_a_failing_action_names_the_action_and_selector_and_the_browser_closes(site: Site) -> None:
    wf = flow(
        [{"action": "goto", "value": site.url("/login")}, {"action": "click", "selector": "#nope", "timeoutMs": 300}]
    )
    run = await run_flow(wf)
    assert str(run.status) == "failed"
    assert "click '#nope'" in error_text(run) and "300 ms" in error_text(run)
    assert chromium_processes() == []


async def test_a_navigation_outside_the_scope_fails_before_anything_is_sent(site: Site) -> None:
    scope = {"type": "site", "domains": ["127.0.0.1"]}
    out = site.outside.url("/table").replace("127.0.0.1", "localhost")
    run = await run_flow(flow([{"action": "goto", "value": out}], scope=scope))
    assert str(run.status) == "failed"
    assert "outside_scope" in error_text(run) and out in error_text(run)
    assert site.outside.requests == []


async def test_a_redirect_or_a_link_out_of_scope_fails_the_step_and_is_never_sent(site: Site) -> None:
    scope = {"type": "site", "domains": ["127.0.0.1"]}
    run = await run_flow(flow([{"action": "goto", "value": site.url("/redirect-out")}], scope=scope))
    assert "outside_scope" in error_text(run) and "localhost" in error_text(run)
    run = await run_flow(
        flow([{"action": "goto", "value": site.url("/out")}, {"action": "click", "selector": "#away"}], scope=scope)
    )
    assert str(run.status) == "failed" and "outside_scope" in error_text(run)
    assert site.outside.requests == []


async def test_a_sub_resource_and_a_fetch_out_of_scope_are_blocked_without_failing(site: Site) -> None:
    scope = {"type": "site", "domains": ["127.0.0.1"]}
    wf = flow(
        [
            {"action": "goto", "value": site.url("/out")},
            {"action": "click", "selector": "#fetch"},
            {"action": "waitFor", "value": "300"},
            {"action": "extractText", "selector": "#done"},
        ],
        scope=scope,
    )
    run = await run_flow(wf)
    assert str(run.status) == "completed", error_text(run)
    assert run.outputs["b"] == "sent"
    blocked = [e.extra["url"] for e in events(run, "browser_blocked")]
    assert any(u.endswith("/pixel.png") for u in blocked) and any(u.endswith("/api") for u in blocked)
    assert site.outside.requests == []  # never sent
    # each is logged when it is refused (an action is logged when it ends): the image during the
    # goto, the fetch during the click, not all at the step's end
    order = [
        e.extra.get("action") or e.extra["url"].rsplit("/", 1)[-1] for e in run.events if e.type.startswith("browser_")
    ]
    assert order.index("pixel.png") < order.index("goto") < order.index("api") < order.index("waitFor")


async def test_the_workflows_network_permissions_bound_the_browser_too(site: Site) -> None:
    wf = flow([{"action": "goto", "value": site.url("/table")}], permissions={"network": ["example.org"]})
    run = await run_flow(wf)
    assert str(run.status) == "failed" and "permission_denied" in error_text(run)
    assert site.requests == []
    granted = flow(
        [{"action": "goto", "value": site.url("/table")}, {"action": "extractTable"}],
        permissions={"network": [f"127.0.0.1:{site.port}"]},
    )
    assert str((await run_flow(granted)).status) == "completed"


def test_scope_matches_the_end_of_the_host_at_a_dot() -> None:
    scope = Scope.of({"type": "site", "domains": ["example.com"]})
    assert scope.allows_host("example.com", 443) and scope.allows_host("www.example.com", 443)
    assert not scope.allows_host("notexample.com", 443) and not scope.allows_host("example.org", 443)
    assert Scope.of(None).allows_host("anything.net", 80)
    assert Scope.of({"type": "site", "domains": ["127.0.0.1:81"]}).allows_host("127.0.0.1", 81)
    assert not Scope.of({"type": "site", "domains": ["127.0.0.1:81"]}).allows_host("127.0.0.1", 82)


async def test_cancelling_mid_step_leaves_no_chromium_process(site: Site) -> None:
    wf = flow([{"action": "goto", "value": site.url("/slow?s=20"), "timeoutMs": 60000}])
    run = Run(wf, EchoProvider())
    task = asyncio.ensure_future(run.start())
    for _ in range(200):
        await asyncio.sleep(0.05)
        if any(p.startswith("/slow") for p in site.requests):
            break
    assert chromium_processes(), "the browser should be running mid-step"
    run.cancel()
    await asyncio.wait_for(task, 15)
    assert str(run.status) == "cancelled"
    assert settled_chromium() == []
    await asyncio.sleep(1)  # and none turns up later
    assert chromium_processes() == []


@pytest.mark.parametrize("limit", [300, 1500])  # while the browser starts, and mid-navigation
async def test_a_step_timeout_closes_the_browser_too(site: Site, limit: int) -> None:
    wf = flow([{"action": "goto", "value": site.url("/slow?s=20"), "timeoutMs": 60000}], timeoutMs=limit)
    run = await run_flow(wf)
    assert str(run.status) == "failed" and "timed out" in error_text(run)
    assert settled_chromium() == []
    await asyncio.sleep(1)  # a browser still starting when the step was cancelled is closed too
    assert chromium_processes() == []


def test_a_screenshot_is_stored_in_the_run_store_and_the_event_keeps_its_id(site: Site, tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    wf = flow([{"action": "goto", "value": site.url("/login")}, {"action": "screenshot", "selector": "form"}])

    async def go() -> Run:
        run = Run(wf, EchoProvider())
        rec = RunRecorder(store, run)
        await run.start()
        rec.close()
        return run

    run = asyncio.run(go())
    stored = [e for e in store.events(run.run_id) if e.type == "browser_screenshot"]
    assert len(stored) == 1
    attachment = stored[0].extra["attachment"]
    assert "data" not in attachment and attachment["size"] > 100
    mime, png = store.attachment(run.run_id, attachment["id"])
    assert mime == "image/png" and png[:4] == b"\x89PNG" and len(png) == attachment["size"]
    exported = [json.loads(line) for line in store.export_jsonl(run.run_id)]
    shot = next(e for e in exported if e["type"] == "browser_screenshot")
    assert base64.b64decode(shot["attachment"]["data"]) == png  # an export carries the picture
    store.delete_run(run.run_id)
    assert store.attachment(run.run_id, attachment["id"]) is None


def _codes(wf: Any) -> list[str]:
    return [i.code for i in validate(wf)]


def test_validation_names_bad_steps_and_scopes() -> None:
    assert "browser_empty" in _codes(flow([]))
    bad = flow(
        [{"action": "hover"}, {"action": "click"}, {"action": "goto"}, {"action": "extractAttribute", "selector": "a"}]
    )
    issues = [i.message for i in validate(bad) if i.code == "browser_step_invalid"]
    assert len(issues) == 4
    assert any("step 1 has 'hover'" in m for m in issues) and any(
        "step 2 (click) needs a selector" in m for m in issues
    )
    assert "browser_scope_invalid" in _codes(flow([{"action": "goto", "value": "x"}], scope={"type": "site"}))
    assert "browser_scope_invalid" in _codes(flow([{"action": "goto", "value": "x"}], scope={"type": "world"}))
    assert not [c for c in _codes(flow([{"action": "goto", "value": "https://a.b"}])) if c.startswith("browser")]


@pytest.mark.no_browser
def test_a_missing_chromium_is_a_validation_error_with_the_install_command(monkeypatch) -> None:
    if importlib.util.find_spec("playwright") is None:  # then the missing extra is said first
        pytest.skip("the browser extra (playwright) is not installed")
    monkeypatch.setenv("FLOWDESK_CHROMIUM", "/nonexistent/chromium")
    issues = [i for i in validate(flow([{"action": "goto", "value": "https://a.b"}])) if i.code == "browser_missing"]
    assert issues and "apt-get install chromium" in issues[0].message


@pytest.mark.no_browser
def test_a_missing_playwright_is_a_validation_error_with_the_extra(monkeypatch) -> None:
    import engine.browser as eb

    monkeypatch.setattr(eb, "find_spec", lambda name: None)
    issues = [
        i for i in validate(flow([{"action": "goto", "value": "https://a.b"}])) if i.code == "browser_extra_missing"
    ]
    assert issues and "pip install 'flowdesk[browser]'" in issues[0].message


def test_a_browser_step_is_recorded_and_reused_by_a_run_from_a_later_node(site: Site, tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {}},
                {
                    "id": "b",
                    "type": "browser",
                    "data": {"steps": [{"action": "goto", "value": site.url("/table")}, {"action": "extractTable"}]},
                },
                {"id": "a", "type": "agent", "data": {"userPrompt": "{{PREVIOUS_OUTPUT}}", "model": "m"}},
            ],
            "connections": [{"source": "s", "target": "b"}, {"source": "b", "target": "a"}],
        }
    )

    async def go(**options: Any) -> Run:
        run = Run(wf, EchoProvider(), store=store, **options)
        rec = RunRecorder(store, run)
        await run.start()
        rec.settled()
        rec.close()
        return run

    first = asyncio.run(go())
    assert str(first.status) == "completed"
    asked = len(site.requests)
    again = asyncio.run(go(reuse_from=first.run_id, start_at="a"))
    assert str(again.status) == "completed"
    assert [e.node_id for e in again.events if e.type == "cache_hit"] == ["s", "b"]
    assert again.outputs["b"] == first.outputs["b"] and len(site.requests) == asked  # no browser this time


async def test_steps_running_at_once_share_one_browser_process(site: Site) -> None:
    def node(i: str) -> dict[str, Any]:
        steps = [{"action": "goto", "value": site.url("/slow?s=1.5")}, {"action": "extractText"}]
        return {"id": i, "type": "browser", "data": {"steps": steps}}

    wf = parse_workflow(
        {
            "nodes": [{"id": "s", "type": "start", "data": {}}, node("b1"), node("b2")],
            "connections": [{"source": "s", "target": "b1"}, {"source": "s", "target": "b2"}],
        }
    )
    run = Run(wf, EchoProvider())
    task = asyncio.ensure_future(run.start())
    for _ in range(200):
        await asyncio.sleep(0.05)
        if sum(p.startswith("/slow") for p in site.requests) == 2:
            break
    mains = [p for p in chromium_processes() if "--type=" not in Path(f"/proc/{p}/cmdline").read_text(errors="replace")]
    assert len(mains) == 1  # one browser, a context each
    await asyncio.wait_for(task, 20)
    assert run.outputs["b1"] == "slow" and run.outputs["b2"] == "slow"
    assert settled_chromium() == []


async def test_a_goto_without_a_scheme_reads_host_and_port_as_an_address(site: Site) -> None:
    run = await run_flow(
        flow([{"action": "goto", "value": f"127.0.0.1:{site.port}/table"}, {"action": "extractTable"}])
    )
    assert str(run.status) == "completed", error_text(run)
    assert run.outputs["b"][0] == {"Name": "Ada", "Age": "36"}


def test_bad_input_in_a_browser_node_is_a_validation_message_not_a_crash() -> None:
    for data in ({"steps": "goto"}, {"steps": [1, None]}, {"scope": 5, "steps": []}, {"script": 7}, {"params": []}):
        raw = {
            "nodes": [{"id": "s", "type": "start", "data": {}}, {"id": "b", "type": "browser", "data": data}],
            "connections": [{"source": "s", "target": "b"}],
        }
        try:
            wf = parse_workflow(raw)
        except WorkflowLoadError as err:  # refused on load, with where it is
            assert "nodes[1].data" in str(err)
            continue
        issues = [i for i in validate(wf) if i.node_ids == ("b",) or "b" in i.node_ids]
        assert issues, data
        assert all("Traceback" not in i.message and "object at 0x" not in i.message for i in issues)


async def test_selecting_an_option_that_is_not_there_fails_at_once_naming_the_options(site: Site) -> None:
    wf = flow(
        [{"action": "goto", "value": site.url("/login")}, {"action": "select", "selector": "#role", "value": "boss"}]
    )
    run = await run_flow(wf)
    assert str(run.status) == "failed"
    assert "no option 'boss'" in error_text(run) and "Reader, Administrator" in error_text(run)
    select_by_label = flow(
        [
            {"action": "goto", "value": site.url("/login")},
            {"action": "select", "selector": "#role", "value": "Administrator"},
            {"action": "click", "selector": "#go"},
            {"action": "extractText", "selector": "#role"},
        ]
    )
    assert (await run_flow(select_by_label)).outputs["b"] == "admin"


async def test_press_on_a_field_submits_its_form(site: Site) -> None:
    wf = flow(
        [
            {"action": "goto", "value": site.url("/login")},
            {"action": "type", "selector": "#user", "value": "linus"},
            {"action": "press", "selector": "#user", "value": "Enter"},
            {"action": "waitFor", "selector": "#hello"},
            {"action": "extractText", "selector": "#hello"},
        ]
    )
    run = await run_flow(wf)
    assert run.outputs["b"] == "Welcome linus"
    press = [e.extra for e in run.events if e.type == "browser_action" and e.extra["action"] == "press"]
    assert press[0]["selector"] == "#user"


async def test_a_password_in_a_pages_address_is_masked_in_the_record(site: Site) -> None:
    """The login form is sent with GET, so the address after it holds ``password=…``: the
    browser's events mask it, as an http step's do, though no secret names it."""
    wf = flow(
        [
            {"action": "goto", "value": site.url("/login")},
            {"action": "type", "selector": "#user", "value": "ada"},
            {"action": "type", "selector": "#password", "value": "hunter2-literal"},
            {"action": "click", "selector": "#go"},
            {"action": "waitFor", "selector": "#hello"},
            {"action": "screenshot"},
        ]
    )
    run = await run_flow(wf)
    assert str(run.status) == "completed", error_text(run)
    recorded = [
        e.content + (e.extra_json or "") for e in run.events if e.type in ("browser_action", "browser_screenshot")
    ]
    assert any("password=" in text for text in recorded)
    assert not any("hunter2-literal" in text for text in recorded)
