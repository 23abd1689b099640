"""`flowdesk flows show|enable|disable|delete`, usage in the library's index, AnythingLLM
`active: false` imports landing disabled, TypeAgent patterns' isAlias/examples kept."""

from __future__ import annotations

import json
from pathlib import Path

from engine import FlowLibrary, import_flow, parse_workflow


def hello(name: str = "Hello", fid: str = "hello") -> dict:
    return {
        "id": fid,
        "name": name,
        "description": "Says hello",
        "triggers": ["say hello to $(who:wildcard)"],
        "nodes": [
            {"id": "s", "type": "start", "data": {"initialInput": "", "variables": [{"name": "who"}]}},
            {"id": "a", "type": "agent", "data": {"agentName": "A", "userPrompt": "hello {{who}}", "model": "m"}},
        ],
        "connections": [{"source": "s", "target": "a", "sourceHandle": "output", "targetHandle": "input"}],
    }


def make_lib(tmp_path: Path, *flows: dict) -> Path:
    folder = tmp_path / "lib"
    folder.mkdir(exist_ok=True)
    for f in flows:
        (folder / f"{f['id']}.flow.json").write_text(json.dumps(f))
    return folder


def test_flows_show_enable_disable_delete(cli, tmp_path) -> None:
    lib = make_lib(tmp_path, hello(), hello("Other", "other"))
    res = cli("flows", "show", "hello", "--library", str(lib))
    assert res.code == 0 and "Hello  [hello]" in res.out and "runs: 0" in res.out, res
    res = cli("flows", "show", "hello", "--library", str(lib), "--json")
    shown = json.loads(res.out)
    assert shown["usage"]["runs"] == 0 and shown["usage"]["created"]
    assert cli("flows", "disable", "hello", "--library", str(lib)).code == 0
    listed = json.loads(cli("flows", "--json", "--library", str(lib)).out)["flows"]
    assert {f["id"]: f["enabled"] for f in listed} == {"hello": False, "other": True}
    assert cli("flows", "enable", "hello", "--library", str(lib)).code == 0
    assert json.loads(cli("flows", "show", "hello", "--json", "--library", str(lib)).out)["enabled"] is True
    res = cli("flows", "delete", "hello", "--library", str(lib))
    assert res.code == 0, res
    assert not (lib / "hello.flow.json").exists()
    index = json.loads((lib / "index.json").read_text())
    assert "hello" not in index["flows"] and "other" in index["flows"]
    assert cli("flows", "delete", "hello", "--library", str(lib)).code == 2
    assert cli("flows", "show", "nope", "--library", str(lib)).code == 2
    assert cli("flows", "enable", "--library", str(lib)).code == 2


def test_flows_show_lists_a_learned_trigger_once_marked_learned(cli, tmp_path) -> None:
    flow = hello()
    flow["triggers"] = [*flow["triggers"], {"pattern": "greet $(who:wildcard)", "learned": True}]
    lib = make_lib(tmp_path, flow)
    res = cli("flows", "show", "hello", "--library", str(lib))
    assert res.code == 0, res
    assert res.out.count("greet $(who:wildcard)") == 1, res
    assert "trigger: greet $(who:wildcard)  (learned)" in res.out


def test_usage_is_counted_in_the_index_not_the_file(cli, tmp_path) -> None:
    lib = make_lib(tmp_path, hello(), hello("Other", "other"))
    before = (lib / "hello.flow.json").read_text()
    res = cli("do", "say hello to Ada", "--yes", "--provider", "echo", "--library", str(lib), "--no-store")
    assert res.code == 0, res
    assert (lib / "hello.flow.json").read_text() == before
    library = FlowLibrary([lib])
    usage = {f.id: f.usage for f in library.flows()}
    assert usage["hello"]["runs"] == 1 and usage["hello"]["lastRun"]
    assert usage["other"]["runs"] == 0
    assert [f.id for f in library.by_use()] == ["hello", "other"]


def test_anythingllm_inactive_import_lands_disabled(tmp_path) -> None:
    raw = {
        "name": "Sleeper",
        "active": False,
        "steps": [
            {"type": "start", "config": {"variables": []}},
            {"type": "llmInstruction", "config": {"instruction": "hi"}},
        ],
    }
    imported = import_flow(raw)
    assert imported.note("sleeper.json").startswith("sleeper.json is an AnythingLLM agent flow;")
    wf = parse_workflow(imported.workflow)
    library = FlowLibrary([tmp_path / "lib"])
    entry = library.save(wf)
    (listed,) = library.flows()
    assert listed.id == entry.id and listed.enabled is False
    library.set_enabled(entry.id, True)  # turned on by the user: it stays on
    assert library.flows()[0].enabled is True


def test_typeagent_patterns_keep_isalias_and_examples(tmp_path) -> None:
    raw = {
        "actionName": "greet",
        "description": "Greets",
        "parameters": [],
        "grammarPatterns": [
            {"pattern": "greet $(who:wildcard)", "isAlias": False, "examples": ["greet Ada"]},
            {"pattern": "hi $(who:wildcard)", "isAlias": True},
            "hello $(who:wildcard)",
        ],
        "steps": [
            {"id": "t", "schemaName": "utility", "actionName": "llmTransform", "parameters": {"prompt": "hi ${who}"}}
        ],
    }
    result = import_flow(raw)
    assert result.workflow["triggers"] == [
        {"pattern": "greet $(who:wildcard)", "isAlias": False, "examples": ["greet Ada"]},
        {"pattern": "hi $(who:wildcard)", "isAlias": True},
        "hello $(who:wildcard)",
    ]
    wf = parse_workflow(result.workflow)
    path = tmp_path / "lib"
    library = FlowLibrary([path])
    entry = library.save(wf)
    assert entry.triggers == ["greet $(who:wildcard)", "hi $(who:wildcard)", "hello $(who:wildcard)"]
    saved = json.loads(entry.path.read_text())
    assert saved["triggers"][0]["examples"] == ["greet Ada"]
