"""WebFlow scripts (seed 000) run in the Deno host with the browser API bridged to Playwright,
and WebFlow definitions imported as workflows with one browser node."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine import Run, WorkflowLoadError, parse_workflow, validate
from engine.browser.webscript import script_problems, webflow_result
from engine.code.deno import deno_available
from engine.flows.importers import load_any_workflow
from engine.llm.config import HttpSettings
from engine.llm.openai import OpenAIProvider
from engine.nodes.base import NodeError
from tests.browser.conftest import error_text, settled_chromium
from tests.browser.site import Site
from tests.fakes.openai_server import FakeLLMServer, openai_text

needs_deno = pytest.mark.skipif(not deno_available(), reason="WebFlow scripts need Deno (the code extra)")

LOGIN_SCRIPT = """async function execute(browser, params) {
  await browser.navigateTo(params.url);
  const field = await browser.extractComponent(
    { typeName: "UserField", schema: "interface UserField { cssSelector: string }" }, "the user name box");
  await browser.enterText(field.cssSelector, params.user);
  await browser.selectOption('#role', params.role);
  await browser.click('#go');
  await browser.awaitPageLoad();
  const text = await browser.getPageText();
  const state = await browser.checkPageState("the user is logged in");
  const answer = await browser.queryContent("Which role?");
  return { success: true, message: text, data: { text, state, answer, url: await browser.getCurrentUrl() } };
}"""


def script_flow(script: str, **data: Any) -> Any:
    return parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {}},
                {"id": "b", "type": "browser", "data": {"script": script, **data}},
            ],
            "connections": [{"source": "s", "target": "b"}],
        }
    )


def provider(server: FakeLLMServer) -> OpenAIProvider:
    return OpenAIProvider(base_url=server.base_url, api_key="k", http=HttpSettings(maxRetries=0))


@needs_deno
async def test_a_script_navigates_types_clicks_reads_and_asks_the_model(site: Site) -> None:
    with FakeLLMServer() as llm:
        llm.push(
            openai_text('{"cssSelector": "#user"}'),
            openai_text('{"matched": true, "explanation": "it says Welcome"}'),
            openai_text('```json\n{"answered": true, "answerText": "admin", "confidence": 0.9}\n```'),
        )
        wf = script_flow(
            LOGIN_SCRIPT, params={"url": site.url("/login"), "user": "{{who}}", "role": "admin"}, model="m"
        )
        run = Run(wf, provider(llm), variables={"who": "ada"})
        await run.start()
        assert str(run.status) == "completed", error_text(run)
        out = run.outputs["b"]
        assert out["success"] is True and "Welcome ada" in out["message"]
        assert out["data"]["state"] == {"matched": True, "explanation": "it says Welcome"}
        assert out["data"]["answer"] == {"answered": True, "answerText": "admin", "confidence": 0.9}
        assert "role=admin" in out["data"]["url"]
        first = llm.requests[0].json
        asked = json.dumps(first["messages"])
        assert "UserField" in asked and "Log in" in asked and "#user" in asked  # page text and elements
        assert first["model"] == "m"
    actions = [e.extra["action"] for e in run.events if e.type == "browser_action"]
    assert actions[:4] == ["navigateTo", "extractComponent", "enterText", "selectOption"]
    assert settled_chromium() == []


@needs_deno
async def test_a_script_navigating_out_of_scope_fails_even_when_it_catches_the_error(site: Site) -> None:
    out = site.outside.url("/table").replace("127.0.0.1", "localhost")
    script = (
        "async function execute(browser, params) {\n"
        f"  try {{ await browser.navigateTo('{out}'); }} catch (e) {{ return 'caught'; }}\n"
        "  return 'went';\n}"
    )
    run = Run(script_flow(script, scope={"type": "site", "domains": ["127.0.0.1"]}), None)
    await run.start()
    assert str(run.status) == "failed" and "outside_scope" in error_text(run) and out in error_text(run)
    assert site.outside.requests == []


@needs_deno
async def test_a_plain_return_is_wrapped_and_success_false_fails(site: Site) -> None:
    run = Run(script_flow("async function execute(browser, params) { return params.n + 1; }", params={"n": 2}), None)
    await run.start()
    assert run.outputs["b"] == {"success": True, "message": "3", "data": 3}
    failing = "async function execute(browser, params) { return { success: false, error: 'no results' }; }"
    run = Run(script_flow(failing), None)
    await run.start()
    assert str(run.status) == "failed" and "no results" in error_text(run)


def test_script_validation_blocks_the_seeds_identifiers_and_wants_the_signature() -> None:
    script = "async function execute(browser, params) {\n  const x = 'window';\n  // fetch\n  return eval('1');\n}"
    problems = script_problems(script)
    assert problems == [("script_blocked", "the script uses 'eval' (line 4), which WebFlow scripts may not use")]
    assert script_problems("function run(browser) { return 1 }")[0][0] == "script_signature"
    issues = [i for i in validate(script_flow(script)) if i.code == "script_blocked"]
    assert issues and "eval" in issues[0].message and "line 4" in issues[0].message
    assert not script_problems(LOGIN_SCRIPT)


def test_the_result_shape_is_the_seeds() -> None:
    assert webflow_result({"success": True, "data": 1}) == {"success": True, "data": 1}
    assert webflow_result("hi") == {"success": True, "message": "hi", "data": "hi"}
    with pytest.raises(NodeError, match="boom"):
        webflow_result({"success": False, "error": "boom"})


def seed_definition(site: Site) -> dict[str, Any]:
    """A WebFlowDefinition as the seed defines it."""
    return {
        "name": "logIntoSite",
        "description": "Log into the test site with a user name and role",
        "version": 1,
        "parameters": {
            "user": {"type": "string", "required": True, "description": "Who logs in"},
            "role": {
                "type": "string",
                "required": False,
                "description": "The role",
                "default": "reader",
                "valueOptions": ["reader", "admin"],
            },
        },
        "script": (
            "async function execute(browser, params) {\n"
            f"  await browser.navigateTo('{site.url('/login')}');\n"
            "  await browser.enterText('#user', params.user);\n"
            "  await browser.selectOption('#role', params.role);\n"
            "  await browser.clickAndWait('#go');\n"
            "  return { success: true, message: await browser.getPageText() };\n}"
        ),
        "grammarPatterns": ["log in as $(user:wildcard)"],
        "scope": {"type": "site", "domains": ["127.0.0.1"]},
        "source": {"type": "manual", "timestamp": "2026-11-26T00:00:00Z", "originUrl": site.url("/login")},
    }


def test_a_webflow_definition_imports_as_start_variables_a_browser_node_and_triggers(
    site: Site, tmp_path: Path
) -> None:
    path = tmp_path / "logIntoSite.json"
    path.write_text(json.dumps(seed_definition(site)))
    wf, result = load_any_workflow(path)
    assert result is not None and result.format == "webflow"
    start = wf.start_node()
    variables = {v.name: v for v in start.data.variables}
    assert set(variables) == {"user", "role"}
    role = variables["role"].model_dump(mode="json")
    assert role["enum"] == ["reader", "admin"] and role["value"] == "reader" and "valueOptions" not in role
    browser = [n for n in wf.nodes if n.type == "browser"]
    assert len(browser) == 1
    assert browser[0].data.scope == {"type": "site", "domains": ["127.0.0.1"]}
    assert browser[0].data.params == {"user": "{{user}}", "role": "{{role}}"}
    assert [t if isinstance(t, str) else t.get("pattern") for t in wf.triggers] == ["log in as $(user:wildcard)"]
    assert wf.model_dump(mode="json")["imported"]["metadata"]["source"]["type"] == "manual"
    assert not [i for i in validate(wf) if i.severity == "error"]


@needs_deno
async def test_an_imported_webflow_definition_runs(site: Site, tmp_path: Path) -> None:
    path = tmp_path / "logIntoSite.json"
    path.write_text(json.dumps(seed_definition(site)))
    wf, _ = load_any_workflow(path)
    run = Run(wf, None, variables={"user": "grace", "role": "admin"})
    await run.start()
    assert str(run.status) == "completed", error_text(run)
    output = run.outputs[[n.id for n in wf.nodes if n.type == "browser"][0]]
    assert output["success"] is True and "Welcome grace" in output["message"] and "admin" in output["message"]


@needs_deno
async def test_a_scripts_template_literals_are_javascripts_not_flowdesk_templates(site: Site) -> None:
    script = "async function execute(browser, params) { const user = 'js'; return `${user}-${params.user}`; }"
    wf = script_flow(script, params={"user": "{{user}}"})
    run = Run(wf, None, variables={"user": "flow"})
    await run.start()
    assert run.outputs["b"]["data"] == "js-flow"


@pytest.mark.no_browser
def test_a_definition_stored_as_typeagent_stores_it_imports_with_its_script_file(tmp_path: Path) -> None:
    """TypeAgent keeps a definition without its script (flows/sites/DOMAIN/N.json) and the script
    in scripts/N.js: the import finds it; without it, a message naming the file it looked for."""
    with Site() as site:
        definition = seed_definition(site)
    script = definition.pop("script")
    flows = tmp_path / "browser" / "webflows" / "flows" / "sites" / "127_0_0_1"
    flows.mkdir(parents=True)
    (tmp_path / "browser" / "webflows" / "scripts").mkdir()
    (tmp_path / "browser" / "webflows" / "scripts" / "logIntoSite.js").write_text(script)
    path = flows / "logIntoSite.json"
    path.write_text(json.dumps(definition))
    wf, result = load_any_workflow(path)
    assert result is not None and result.format == "webflow"
    assert [n.data.script for n in wf.nodes if n.type == "browser"] == [script]
    absent = {"browser_missing", "browser_extra_missing", "script_host_missing"}  # this machine's, not the file's
    assert not [i for i in validate(wf) if i.severity == "error" and i.code not in absent]
    alone = tmp_path / "alone" / "logIntoSite.json"
    alone.parent.mkdir()
    alone.write_text(json.dumps(definition))
    with pytest.raises(WorkflowLoadError, match=r"WebFlow definition: its script is not in the file.*logIntoSite\.js"):
        load_any_workflow(alone)


def test_a_scripts_template_literals_are_javascripts_not_references() -> None:
    """A WebFlow script runs as written (as a code node's source): ``${params.page}`` in it is
    a JavaScript template literal, so validation warns of no unknown reference."""
    script = (
        "async function execute(browser, params) {\n  await browser.navigateTo(`http://127.0.0.1:1/${params.page}`);\n}"
    )
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {}},
                {"id": "b", "type": "browser", "data": {"script": script, "scope": {"type": "global"}}},
            ],
            "connections": [{"source": "s", "target": "b"}],
        }
    )
    assert [i.code for i in validate(wf) if i.code == "unknown_reference"] == []
