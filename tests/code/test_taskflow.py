"""TypeAgent TaskFlow recipes (in the seed's shape) import through the existing importer and run
in Deno with the TaskFlowScriptAPI: the echo provider for queryLLM, library flows standing in
for callAction, local servers for webSearch (SearxNG's JSON API) and webFetch. Blocked
identifiers are refused before anything runs; TypeAgent's result wrapping applies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine import apply_arguments, import_flow, parse_workflow, validate
from engine.code.blocked import blocked_identifiers
from engine.nodes.script import js_string, wrap_result
from tests.code.conftest import children_left, children_of_tests, events, extra, needs_deno, run
from tests.fakes.web_server import WebServer, json_answer, text_answer

RECIPES = Path(__file__).parent / "recipes"
FIX = Path(__file__).resolve().parents[1] / "fixtures" / "imports"


def imported(path: Path, permissions: dict[str, Any] | None = None, **arguments: Any) -> Any:
    doc = import_flow(json.loads(path.read_text())).workflow
    if permissions is not None:
        doc["permissions"] = permissions
    return apply_arguments(parse_workflow(doc), arguments)


@pytest.fixture
def web():
    with WebServer() as server:
        yield server


def host_of(server: WebServer) -> str:
    return server.url("/").split("://")[1].rstrip("/")


@needs_deno
def test_playlist_recipe_calls_a_library_flow_and_is_wrapped(library) -> None:
    wf = imported(RECIPES / "makePlaylist.recipe.json", genre="jazz")
    r = run(wf, library=library)
    assert r.status == "completed", r.error
    text = "Playlist Top 10 jazz: jazz classics"
    assert r.outputs["n2"] == {"success": True, "message": text, "data": text}
    assert [extra(e)["text"] for e in events(r, "code_log")] == ["making a jazz playlist"]
    start, end = events(r, "api_call_start"), events(r, "api_call_end")
    assert [extra(e)["method"] for e in start] == ["callAction"] and len(end) == 1
    assert extra(start[0])["args"] == ["player", "createPlaylist", {"name": "Top 10 jazz", "songs": "jazz classics"}]


@needs_deno
def test_research_recipe_searches_asks_the_model_and_saves_a_list(library, web, monkeypatch) -> None:
    web.route(
        "/search",
        json_answer({"results": [{"title": "Bees dance", "url": "https://b.example/1", "content": "They waggle."}]}),
    )
    monkeypatch.setenv("FLOWDESK_SEARXNG_URL", web.url(""))
    wf = imported(
        RECIPES / "researchTopic.recipe.json", {"network": [host_of(web)], "flows": ["createList"]}, topic="bees"
    )
    r = run(wf, library=library)
    assert r.status == "completed", r.error
    assert web.last("/search").query == [("q", "bees"), ("format", "json")]
    out = r.outputs["n2"]
    assert out["success"] is True and out["message"].startswith("List bees findings: List the 3 key findings")
    assert "Bees dance" in out["data"]["findings"]
    assert [extra(e)["method"] for e in events(r, "api_call_start")] == ["webSearch", "queryLLM", "callAction"]


@needs_deno
def test_release_dates_recipe_fetches_a_page_and_parses_json(library, web) -> None:
    web.route("/changelog", text_answer('Releases: ["2026-01-05", "2026-02-10"]'))
    wf = imported(RECIPES / "releaseDates.recipe.json", {"network": [host_of(web)]}, url=web.url("/changelog"))
    r = run(wf, library=library)
    assert r.status == "completed", r.error
    assert r.outputs["n2"] == {"success": True, "message": "2", "data": 2}
    assert [e.type for e in r.events if e.type.startswith("http_")] == ["http_request", "http_response"]


@needs_deno
def test_without_permissions_a_script_reaches_no_network(library, web) -> None:
    web.route("/changelog", text_answer("[]"))
    r = run(imported(RECIPES / "releaseDates.recipe.json", url=web.url("/changelog")), library=library)
    assert r.status == "failed" and r.error.startswith("permission_denied: network access to '127.0.0.1:")
    assert not any(req.path == "/changelog" for req in web.requests)
    assert extra(events(r, "permission_denied")[0])["field"] == "network"


@needs_deno
def test_success_false_fails_the_step_with_its_error(library, web) -> None:
    web.route("/changelog", text_answer("nothing here"))
    wf = imported(RECIPES / "releaseDates.recipe.json", {"network": [host_of(web)]}, url=web.url("/changelog"))
    r = run(wf, library=library)
    assert r.status == "failed" and "no dates found" in r.error


@needs_deno
def test_the_project_fixture_recipe_runs_until_its_fetch_is_refused(library) -> None:
    """tests/fixtures/imports/typeagent_top_songs.recipe.json: imports and runs; its page is on
    example.com, which its (absent) permissions do not grant."""
    r = run(imported(FIX / "typeagent_top_songs.recipe.json", genre="jazz"), library=library)
    assert r.status == "failed" and "permission_denied: network access to 'example.com'" in r.error


def eval_recipe() -> Any:
    doc = json.loads((RECIPES / "makePlaylist.recipe.json").read_text())
    doc["script"] = (
        "async function execute(api, params) {\n  const s = 'eval is only text here'; // eval in a comment\n"
        "  return eval('1 + 1');\n}\n"
    )
    return apply_arguments(parse_workflow(import_flow(doc).workflow), {"genre": "jazz"})


def test_eval_is_refused_before_running(library) -> None:
    wf = eval_recipe()
    blocked = [i for i in validate(wf) if i.code == "script_blocked"]
    assert len(blocked) == 1 and blocked[0].is_error
    assert "`eval`" in blocked[0].message and "line 3" in blocked[0].message
    before = children_of_tests()
    r = run(wf, library=library)
    assert r.status == "failed" and "eval" in r.error
    assert not events(r, "step_start") or all(e.node_id != "n2" for e in events(r, "step_start"))
    assert not children_left(before)


def test_blocked_identifiers_skip_strings_comments_and_properties() -> None:
    source = (
        "// fetch the page\nconst a = \"process\";\nconst b = `${'Function'}`;\n"
        "/* require */ const c = api.fetch;\nconst d = globalThis;\nDeno.exit(1);\n"
    )
    assert blocked_identifiers(source) == [("globalThis", 5), ("Deno", 6)]


def test_result_wrapping_follows_typeagent() -> None:
    assert wrap_result({"success": True, "message": "ok"}) == {"success": True, "message": "ok"}
    assert wrap_result([1, 2]) == {"success": True, "message": "1,2", "data": [1, 2]}
    assert wrap_result({"a": 1}) == {"success": True, "message": "[object Object]", "data": {"a": 1}}
    assert js_string(None) == "null" and js_string(2.0) == "2" and js_string(True) == "true"
    with pytest.raises(Exception, match="the script failed: nope"):
        wrap_result({"success": False, "error": "nope"})


def test_powershell_without_pwsh_is_a_validation_error(monkeypatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    wf = parse_workflow(import_flow(json.loads((FIX / "typeagent_list_files.recipe.json").read_text())).workflow)
    missing = [i for i in validate(wf) if i.code == "script_interpreter_missing"]
    assert missing and missing[0].is_error and "pwsh" in missing[0].message
    assert "install PowerShell 7" in missing[0].message
    r = run(wf)
    assert r.status == "failed" and "pwsh" in r.error
    r = run(wf, check=False)  # a worker that did not validate: the step says the same
    assert r.status == "failed" and r.error.startswith("script_interpreter_missing:") and "PowerShell 7" in r.error


def test_scriptflow_sandbox_policy_drops_blocked_and_network_cmdlets() -> None:
    from engine.code.pwsh import allowed_cmdlets

    sandbox = {"allowedCmdlets": ["Get-ChildItem", "Invoke-Expression", "Invoke-WebRequest", "Start-Process"]}
    assert allowed_cmdlets(sandbox) == ["Get-ChildItem"]
    assert allowed_cmdlets({**sandbox, "networkAccess": True}) == ["Get-ChildItem", "Invoke-WebRequest"]
