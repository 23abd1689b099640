"""Acceptance: files from other programs (issue 30, items 1, 4, 10 and 21) through `flowdesk
import`, `validate`, `run` and `export`: AnythingLLM agent flows, TypeAgent step recipes, and
React-Flow style node positions (Flowise, Langflow and generators write `position: {x, y}`).

Bad files are refused with a clear message naming the block and its index, never a
traceback, and the original file is never written. A literal credential in a header — even a
short one with a space, `Bearer 1234567890` — is warned about and never copied into a file.
An imported API block whose JSON body carries a model's answer (quotes, newlines) sends JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.support import CliResult, Home, chain, cli, start_node
from tests.acceptance.web_server import RecordingServer

CREDENTIAL = "1234567890"


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    return Home(tmp_path_factory.mktemp("imports"))


def anythingllm(*steps: dict[str, Any], variables: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    start = {"type": "start", "config": {"variables": variables or [{"name": "topic", "value": "tea"}]}}
    return {"name": "Imported", "description": "An AnythingLLM flow", "active": True, "steps": [start, *steps]}


def import_(home: Home, name: str, doc: Any) -> tuple[CliResult, Path, Path]:
    src = home.write(name, doc)
    out = home.root / (name + ".out.flow.json")
    before = src.read_bytes()
    res = home.import_(src, out)
    assert src.read_bytes() == before, "the original file was written"
    return res, src, out


def no_traceback(res: CliResult) -> None:
    assert "Traceback" not in res.combined and "Error(" not in res.combined, res.combined[-3000:]


# --------------------------------------------------------------------------- refused, clearly
@pytest.mark.parametrize("config", ["oops", ["a", "list"]])
def test_anythingllm_block_whose_config_is_not_an_object_is_refused_naming_its_index(home, config):
    doc = anythingllm({"type": "apiCall", "config": config})
    res, _src, out = import_(home, f"bad-config-{type(config).__name__}.json", doc)
    no_traceback(res)
    assert res.rc == 2, res.combined
    assert "steps[1]" in res.stderr and "config" in res.stderr and "not an object" in res.stderr, res.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("doc", "named"),
    [
        pytest.param(
            anythingllm({"type": "apiCall", "config": {"url": "https://a.example/", "method": "GET", "headers": "x"}}),
            ["steps[1]", "headers"],
            id="headers-text",
        ),
        pytest.param(
            anythingllm(
                {"type": "apiCall", "config": {"url": "https://a.example/", "method": "GET", "headers": ["x"]}}
            ),
            ["steps[1]", "headers[0]"],
            id="header-row-text",
        ),
        pytest.param(
            anythingllm({"type": "apiCall", "config": {"url": 5, "method": "GET"}}),
            ["steps[1]", "url"],
            id="url-number",
        ),
        pytest.param(
            anythingllm({"type": "llmInstruction", "config": {"instruction": ["a"]}}),
            ["steps[1]", "instruction"],
            id="instruction-list",
        ),
        pytest.param(
            {
                "name": "r",
                "parameters": "p",
                "steps": [{"id": "a", "schemaName": "u", "actionName": "x", "parameters": {}}],
            },
            ["parameters", "list"],
            id="typeagent-parameters-text",
        ),
    ],
)
def test_field_of_the_wrong_type_is_refused_naming_the_block_and_field(home, doc, named):
    res, _src, out = import_(home, f"wrong-field-{abs(hash(json.dumps(doc)))}.json", doc)
    no_traceback(res)
    assert res.rc == 2 and not out.exists(), res.combined
    assert all(n in res.stderr for n in named), res.stderr


def test_anythingllm_unknown_block_is_refused_naming_the_block_and_its_index(home):
    doc = anythingllm({"type": "llmInstruction", "config": {"instruction": "hi"}}, {"type": "teleport", "config": {}})
    res, _src, out = import_(home, "unknown-block.json", doc)
    no_traceback(res)
    assert res.rc == 2 and "teleport" in res.stderr and "2" in res.stderr, res.combined
    assert not out.exists()


def test_flowise_chatflow_with_edges_is_refused_with_a_clear_message(home):
    doc = {
        "nodes": [
            {"id": "chatOpenAI_0", "type": "customNode", "position": {"x": 10, "y": 20}, "data": {"name": "chatOpenAI"}}
        ],
        "edges": [{"id": "e1", "source": "chatOpenAI_0", "target": "x"}],
    }
    res, _src, out = import_(home, "flowise.json", doc)
    no_traceback(res)
    assert res.rc == 2 and res.stderr.strip(), res.combined


def test_validate_of_a_broken_foreign_file_exits_2_without_a_traceback(home):
    path = home.write("bad-config-validate.json", anythingllm({"type": "webScraping", "config": "not an object"}))
    res = home.validate(path)
    no_traceback(res)
    assert res.rc == 2 and "steps[1]" in res.combined and "config" in res.combined, res.combined


# --------------------------------------------------------------------------- credentials
@pytest.fixture(scope="module")
def credential_import(home: Home) -> tuple[CliResult, Path]:
    doc = anythingllm(
        {
            "type": "apiCall",
            "config": {
                "url": "https://api.example.com/items",
                "method": "GET",
                "headers": [{"key": "Authorization", "value": f"Bearer {CREDENTIAL}"}],
                "responseVariable": "items",
            },
        }
    )
    res, _src, out = import_(home, "with-credential.json", doc)
    return res, out


def test_import_replaces_a_short_literal_bearer_token_with_a_secret_reference(credential_import):
    res, out = credential_import
    assert res.rc == 0, res.combined
    text = out.read_text()
    assert CREDENTIAL not in text, "the literal credential was copied into the imported file"
    assert "{{secrets." in text, text


def test_import_warns_about_the_literal_credential(credential_import):
    res, _ = credential_import
    assert "credential" in res.stderr.lower() or "secret" in res.stderr.lower(), res.stderr


def test_validate_warns_about_a_short_literal_credential_with_a_space(home):
    doc = chain(
        "Literal",
        [
            start_node(),
            {
                "id": "call",
                "type": "http",
                "data": {
                    "method": "GET",
                    "url": "https://api.example.com/x",
                    "headers": [{"key": "Authorization", "value": f"Bearer {CREDENTIAL}"}],
                },
            },
        ],
    )
    res = home.validate(home.write("literal.flow.json", doc), "--json")
    assert res.rc == 0, res.combined
    issues = json.loads(res.stdout)["issues"]
    warned = [i for i in issues if i.get("severity") == "warning" and "call" in json.dumps(i)]
    assert any("credential" in json.dumps(i).lower() or "secret" in json.dumps(i).lower() for i in warned), issues


def test_export_of_a_literal_credential_warns(home):
    doc = chain(
        "Exported",
        [
            start_node(),
            {
                "id": "call",
                "type": "http",
                "data": {
                    "method": "GET",
                    "url": "https://api.example.com/x",
                    "headers": [{"key": "X-Api-Key", "value": CREDENTIAL}],
                },
            },
        ],
    )
    path = home.write("export-me.flow.json", doc)
    out = home.root / "exported.json"
    res = cli("export", str(path), "--to", "anythingllm", "-o", str(out), env=home.env, cwd=home.root)
    no_traceback(res)
    assert res.rc == 0, res.combined
    assert "credential" in res.stderr.lower() or "secret" in res.stderr.lower(), res.stderr


# --------------------------------------------------------------------------- running imports
@pytest.fixture(scope="module")
def site() -> Iterator[RecordingServer]:
    with RecordingServer() as server:
        yield server


def test_imported_api_block_posting_a_model_answer_with_quotes_and_newlines_sends_json(home, site):
    doc = anythingllm(
        {
            "type": "llmInstruction",
            "config": {"instruction": 'Say "hello"\nto ${topic}', "resultVariable": "answer"},
        },
        {
            "type": "apiCall",
            "config": {
                "url": f"{site.base}/echo/imported",
                "method": "POST",
                "headers": [{"key": "Content-Type", "value": "application/json"}],
                "bodyType": "json",
                "body": '{"text": "${answer}", "topic": "${topic}"}',
                "responseVariable": "posted",
            },
        },
    )
    path = home.write("post-answer.json", doc)
    res = home.run(path)
    assert res.rc == 0, res.combined
    (seen,) = site.at("/echo/imported")
    body = seen.json()
    assert body["topic"] == "tea"
    assert '"hello"' in body["text"] and "\n" in body["text"], body


def test_typeagent_step_recipe_imports_with_its_references_and_unknown_actions(home):
    recipe = {
        "name": "digestPage",
        "description": "Fetch a page and summarise it",
        "parameters": [{"name": "url", "type": "string", "required": True, "description": "Page"}],
        "steps": [
            {"id": "page", "schemaName": "utility", "actionName": "webFetch", "parameters": {"url": "${url}"}},
            {
                "id": "sum",
                "schemaName": "utility",
                "actionName": "llmTransform",
                "parameters": {"prompt": "Summarise ${page.text}"},
            },
            {"id": "send", "schemaName": "mail", "actionName": "sendDigest", "parameters": {"body": "${sum.text}"}},
        ],
        "grammarPatterns": ["digest $(url:wildcard)"],
    }
    res, _src, out = import_(home, "digest.recipe.json", recipe)
    no_traceback(res)
    assert res.rc == 0, res.combined
    doc = json.loads(out.read_text())
    kinds = {n["type"] for n in doc["nodes"]}
    assert {"start", "fetch", "agent", "action"} <= kinds, kinds
    assert any("digest" in json.dumps(t) for t in doc.get("triggers", [])), doc.get("triggers")
    checked = home.validate(out)
    assert checked.rc == 1 and "sendDigest" in checked.combined, checked.combined


# --------------------------------------------------------------------------- React Flow positions
def test_nodes_with_react_flow_position_keep_their_places(home):
    doc = {
        "name": "Positioned",
        "nodes": [
            {"id": "s", "type": "start", "position": {"x": 100, "y": 50}, "data": {"initialInput": "hi"}},
            {"id": "a", "type": "agent", "position": {"x": 420, "y": 310}, "data": {"agentName": "A", "model": "m"}},
        ],
        "connections": [{"source": "s", "target": "a", "sourceHandle": "output", "targetHandle": "input"}],
    }
    res, _src, out = import_(home, "positioned.flow.json", doc)
    assert res.rc == 0, res.combined
    nodes = {n["id"]: n for n in json.loads(out.read_text())["nodes"]}
    assert (nodes["s"]["x"], nodes["s"]["y"]) == (100, 50), nodes["s"]
    assert (nodes["a"]["x"], nodes["a"]["y"]) == (420, 310), nodes["a"]


# --------------------------------------------------------------------------- round trip, library
def test_export_to_anythingllm_and_import_back_keeps_the_chain(home):
    doc = chain(
        "Round trip",
        [
            start_node(),
            {
                "id": "call",
                "type": "http",
                "data": {"method": "POST", "url": "https://api.example.com/x", "bodyType": "json", "body": "{}"},
            },
            {"id": "page", "type": "fetch", "data": {"url": "https://example.com/page", "outputVar": "page"}},
            {"id": "sum", "type": "agent", "data": {"agentName": "Sum", "userPrompt": "summarise {{page}}"}},
        ],
    )
    path = home.write("round.flow.json", doc)
    exported = home.root / "round.anythingllm.json"
    res = cli("export", str(path), "--to", "anythingllm", "-o", str(exported), env=home.env, cwd=home.root)
    assert res.rc == 0, res.combined
    types = [s["type"] for s in json.loads(exported.read_text())["steps"]]
    assert types == ["start", "apiCall", "webScraping", "llmInstruction"], types
    back = home.root / "round.back.flow.json"
    again = home.import_(exported, back)
    assert again.rc == 0, again.combined
    nodes = json.loads(back.read_text())["nodes"]
    assert [n["type"] for n in nodes] == ["start", "http", "fetch", "agent"], nodes
    assert nodes[1]["data"]["url"] == "https://api.example.com/x"


def test_export_of_a_workflow_anythingllm_cannot_hold_is_refused_naming_the_node(home):
    doc = chain("Branchy", [start_node(), {"id": "gate", "type": "approval", "data": {"prompt": "ok?"}}])
    path = home.write("branchy.flow.json", doc)
    res = cli("export", str(path), "--to", "anythingllm", env=home.env, cwd=home.root)
    no_traceback(res)
    assert res.rc == 2 and "approval" in res.stderr.lower(), res.combined


def test_inactive_anythingllm_flow_imported_into_the_library_lands_disabled(home):
    doc = anythingllm({"type": "llmInstruction", "config": {"instruction": "hi", "resultVariable": "x"}})
    doc["active"] = False
    src = home.write("inactive.json", doc)
    res = home.import_(src, home.library / "inactive.flow.json")
    assert res.rc == 0, res.combined
    listed = cli("flows", "--json", env=home.env, cwd=home.root)
    assert listed.rc == 0, listed.combined
    flows = json.loads(listed.stdout)
    flows = flows.get("flows", flows) if isinstance(flows, dict) else flows
    mine = [f for f in flows if "inactive" in json.dumps(f)]
    assert mine, flows
    assert mine[0].get("enabled") is False, mine[0]
