"""Import of AnythingLLM agent flows and TypeAgent recipes; export back to AnythingLLM.

The fixtures under tests/fixtures/imports/ are written from the formats in seeds 004 and 000."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine import load_workflow, parse_workflow, validate
from engine.flows.importers import (
    ExportRefused,
    ImportRefused,
    detect_flow_format,
    export_anythingllm,
    import_flow,
    load_any_workflow,
)
from engine.graph.model import WorkflowLoadError

FIX = Path(__file__).parent.parent / "fixtures" / "imports"


def raw(name: str) -> dict:
    return json.loads((FIX / name).read_text())


def chain(wf: dict) -> list[str]:
    """Node types from start along the links."""
    out = {c["source"]: c["target"] for c in wf["connections"]}
    nodes = {n["id"]: n for n in wf["nodes"]}
    nid = next(n["id"] for n in wf["nodes"] if n["type"] == "start")
    kinds = [nodes[nid]["type"]]
    while nid in out:
        nid = out[nid]
        kinds.append(nodes[nid]["type"])
    return kinds


def start_vars(wf: dict) -> dict[str, dict]:
    start = next(n for n in wf["nodes"] if n["type"] == "start")
    return {v["name"]: v for v in start["data"].get("variables", [])}


def data_of(wf: dict, kind: str, index: int = 0) -> dict:
    return [n for n in wf["nodes"] if n["type"] == kind][index]["data"]


# ------------------------------------------------------------------------------- detection
@pytest.mark.parametrize(
    "name, fmt",
    [
        ("anythingllm_issue_digest.json", "anythingllm"),
        ("anythingllm_direct_output.json", "anythingllm"),
        ("anythingllm_with_code.json", "anythingllm"),
        ("typeagent_research_topic.recipe.json", "typeagent-steps"),
        ("typeagent_page_digest.recipe.json", "typeagent-steps"),
        ("typeagent_list_files.recipe.json", "typeagent-script"),
        ("typeagent_top_songs.recipe.json", "typeagent-script"),
    ],
)
def test_detected_by_shape(name: str, fmt: str) -> None:
    assert detect_flow_format(raw(name)) == fmt


def test_flowdesk_and_unknown_shapes() -> None:
    assert detect_flow_format({"nodes": [], "connections": []}) == "flowdesk"
    assert detect_flow_format({"hello": 1}) is None
    assert detect_flow_format([1, 2]) is None


def test_plain_load_names_the_foreign_format(tmp_path: Path) -> None:
    with pytest.raises(WorkflowLoadError) as err:
        load_workflow(FIX / "typeagent_research_topic.recipe.json")
    assert "TypeAgent step recipe" in str(err.value) and "flowdesk import" in str(err.value)
    with pytest.raises(WorkflowLoadError) as err:
        load_workflow(FIX / "anythingllm_issue_digest.json")
    assert "AnythingLLM agent flow" in str(err.value)


# ------------------------------------------------------------------------------- AnythingLLM
def test_anythingllm_graph_variables_and_templates() -> None:
    result = import_flow(raw("anythingllm_issue_digest.json"))
    wf = result.workflow
    assert result.format == "anythingllm" and result.warnings == []
    assert chain(wf) == ["start", "http", "fetch", "agent"]
    xs = [n["x"] for n in wf["nodes"]]
    assert xs == sorted(xs) and len(set(xs)) == 4  # laid out left to right
    assert wf["name"] == "Issue triage digest"
    variables = start_vars(wf)
    assert list(variables) == ["trackerUrl", "project", "apiToken", "limit"]
    assert variables["trackerUrl"]["value"] == "https://tracker.example.com/api"
    assert variables["limit"] == {
        "name": "limit",
        "value": "5",
        "type": "string",
        "description": "How many issues to fetch",
    }
    http = data_of(wf, "http")
    assert http["method"] == "POST" and http["url"] == "${trackerUrl}/search?project=${project}"
    assert http["headers"][1] == {"key": "Authorization", "value": "Bearer ${apiToken}"}
    assert http["bodyType"] == "json" and json.loads(http["body"].replace("${limit}", "5"))["state"] == "open"
    assert http["outputVar"] == "issues" and http["directOutput"] is False
    fetch = data_of(wf, "fetch")
    assert fetch == {"url": "${issues.items[0].url}", "format": "markdown", "outputVar": "topIssuePage"}
    agent = data_of(wf, "agent")
    assert "${issues.items[0].title}" in agent["userPrompt"] and agent["outputVar"] == "digest"
    assert wf["imported"]["format"] == "anythingllm" and wf["imported"]["metadata"] == {"active": True}
    parse_workflow(wf)  # it loads


def test_anythingllm_direct_output_ends_the_chain() -> None:
    result = import_flow(raw("anythingllm_direct_output.json"))
    wf = result.workflow
    assert chain(wf) == ["start", "http"]
    assert [n["type"] for n in wf["nodes"]] == ["start", "http", "agent", "fetch"]
    linked = {c["target"] for c in wf["connections"]} | {c["source"] for c in wf["connections"]}
    later = [n for n in wf["nodes"] if n["id"] not in linked]
    assert [n["type"] for n in later] == ["agent", "fetch"] and all(n["y"] > wf["nodes"][0]["y"] for n in later)
    assert len(result.warnings) == 1
    assert "AnythingLLM agent flow" in result.warnings[0] and "directOutput" in result.warnings[0]
    assert "2 later blocks" in result.warnings[0]


def test_anythingllm_unknown_block_refuses_naming_block_and_index(tmp_path: Path) -> None:
    with pytest.raises(ImportRefused) as err:
        import_flow(raw("anythingllm_unknown_block.json"))
    text = str(err.value)
    assert "AnythingLLM agent flow" in text and "'slackMessage' block" in text and "steps[2]" in text
    assert err.value.format == "anythingllm"


def test_anythingllm_code_block_imports_as_a_javascript_code_node() -> None:
    result = import_flow(raw("anythingllm_with_code.json"))
    wf = result.workflow
    assert chain(wf) == ["start", "http", "code", "agent"]
    code = data_of(wf, "code")
    assert code["language"] == "javascript"
    assert code["code"] == "return leads.map(l => ({...l, score: l.visits * 2}));"
    # every flow variable defined before the block: the start's, then the apiCall's result
    assert code["inputs"] == {"crmUrl": "{{crmUrl}}", "leads": "{{leads}}"}
    assert code["outputVar"] == "scored" and "resultVariable" not in code
    assert result.warnings == []
    loaded = parse_workflow(wf)
    assert not [i for i in validate(loaded) if i.severity == "error" and i.code != "script_cannot_run"]


def test_anythingllm_code_block_round_trip() -> None:
    doc = raw("anythingllm_with_code.json")
    out = export_anythingllm(parse_workflow(import_flow(doc).workflow))
    assert [s["type"] for s in out["steps"]] == ["start", "apiCall", "code", "llmInstruction"]
    assert out["steps"][2:] == doc["steps"][2:]  # the code block (and what reads its result) as written
    assert out["steps"][1]["config"]["responseVariable"] == "leads"
    assert out["active"] is False and out["name"] == doc["name"]


def test_export_refuses_code_anythingllm_cannot_run() -> None:
    def one_code(data: dict) -> object:
        return parse_workflow(
            {
                "nodes": [{"id": "s", "type": "start", "data": {}}, {"id": "c", "type": "code", "data": data}],
                "connections": [{"source": "s", "target": "c"}],
            }
        )

    with pytest.raises(ExportRefused, match="python code; AnythingLLM code blocks run JavaScript"):
        export_anythingllm(one_code({"language": "python", "code": "1"}))
    with pytest.raises(ExportRefused, match="input 'rows' is not the flow variable"):
        export_anythingllm(one_code({"language": "javascript", "code": "return rows", "inputs": {"rows": "{{x}}"}}))
    ok = export_anythingllm(one_code({"language": "javascript", "code": "return 1", "inputs": {"x": "${x}"}}))
    assert ok["steps"][1] == {"type": "code", "config": {"language": "javascript", "code": "return 1"}}


def test_anythingllm_literal_credential_is_not_written() -> None:
    doc = raw("anythingllm_issue_digest.json")
    token = "sk-" + "a1B2" * 10  # made here; never in a fixture
    doc["steps"][1]["config"]["headers"][1]["value"] = f"Bearer {token}"
    result = import_flow(doc)
    assert token not in json.dumps(result.workflow)
    assert data_of(result.workflow, "http")["headers"][1]["value"] == "Bearer {{secrets.AUTHORIZATION}}"
    assert any("literal credential" in w and "AUTHORIZATION" in w for w in result.warnings)


# ------------------------------------------------------------------------------- TypeAgent step recipes
def test_typeagent_steps_graph_variables_triggers() -> None:
    result = import_flow(raw("typeagent_research_topic.recipe.json"))
    wf = result.workflow
    assert result.format == "typeagent-steps"
    assert chain(wf) == ["start", "agent", "fetch", "agent", "action"]
    assert wf["name"] == "researchTopic"
    assert wf["triggers"] == [
        "research $(topic:wildcard)",
        "(please)? summarise (the)? $(topic:wildcard) in $(bullets:number) (bullet)? points",
    ]
    v = start_vars(wf)
    assert v["topic"]["type"] == "string" and v["topic"]["required"] is True
    assert v["topic"]["testValue"] == "sqlite write-ahead logging" and "value" not in v["topic"]
    assert v["bullets"]["type"] == "number" and v["bullets"]["value"] == 3 and v["bullets"]["testValue"] == 5
    assert v["notesFolder"]["type"] == "string" and v["notesFolder"]["originalType"] == "path"
    assert v["notesFolder"]["validation"] == {"pathMustExist": False}
    assert v["notify"]["type"] == "boolean" and v["notify"]["value"] is False
    search = data_of(wf, "agent", 0)
    assert search["tools"]["web_search"] is True and search["userPrompt"] == "${topic}"
    assert search["outputVar"] == "search"
    assert data_of(wf, "fetch")["url"] == "${search.results[0].url}"  # ${search.data.results[0].url}
    summary = data_of(wf, "agent", 1)
    assert summary["userPrompt"] == "Summarise this page about ${topic} in ${bullets} bullet points.\n\n${page}"
    assert summary["outputVar"] == "summary" and summary["tools"]["web_search"] is False
    action = data_of(wf, "action")
    assert action["schema"] == "notes" and action["action"] == "createNote"
    assert action["parameters"] == {
        "folder": "${notesFolder}",
        "title": "Research: ${topic}",
        "body": "${summary}",
        "notify": "${notify}",
    }
    assert action["typeagentStep"] == {"id": "note", "schemaName": "notes", "actionName": "createNote"}
    assert (
        wf["imported"]["metadata"]["grammarPatterns"] == raw("typeagent_research_topic.recipe.json")["grammarPatterns"]
    )
    assert wf["imported"]["metadata"]["source"]["type"] == "reasoning"
    from engine import compile_trigger

    match = compile_trigger(wf["triggers"][1]).match("Please summarise the sqlite locking in 4 points")
    assert match is not None and match.captures["topic"] == "sqlite locking" and match.captures["bullets"] == 4


def test_step_output_names_avoid_parameter_names() -> None:
    doc = {
        "name": "x",
        "parameters": [{"name": "page", "type": "string", "required": True, "description": ""}],
        "steps": [
            {"id": "page", "schemaName": "utility", "actionName": "webFetch", "parameters": {"url": "${page}"}},
            {
                "id": "sum",
                "schemaName": "utility",
                "actionName": "llmTransform",
                "parameters": {"prompt": "Sum up ${page.text}"},
            },
        ],
    }
    wf = import_flow(doc).workflow
    fetch = data_of(wf, "fetch")
    assert fetch["url"] == "${page}" or fetch["outputVar"] != "page"
    assert fetch["outputVar"] == "page_result"
    assert data_of(wf, "agent")["userPrompt"] == "Sum up ${page_result}"


# ------------------------------------------------------------------------------- TypeAgent script recipes
def test_powershell_script_recipe_kept_verbatim_and_needs_pwsh() -> None:
    doc = raw("typeagent_list_files.recipe.json")
    result = import_flow(doc)
    wf = result.workflow
    assert chain(wf) == ["start", "script"]
    script = data_of(wf, "script")
    assert script["language"] == "powershell" and script["script"] == doc["script"]["body"]
    assert script["expectedOutputFormat"] == "table"
    assert wf["name"] == "listFiles"
    # the patterns, with TypeAgent's isAlias/examples kept where the recipe has them
    assert [t["pattern"] if isinstance(t, dict) else t for t in wf["triggers"]] == [
        "list (the)? files in $(path:wildcard)",
        "(show | list) $(filter:word) files",
    ]
    assert wf["triggers"][0]["examples"] == ["list the files in my downloads", "list files in c:\\temp"]
    assert wf["imported"]["metadata"]["sandbox"] == doc["sandbox"]
    assert wf["imported"]["metadata"]["displayName"] == "List files"
    v = start_vars(wf)
    assert v["path"]["type"] == "string" and v["path"]["originalType"] == "path" and v["limit"]["value"] == 20
    issues = validate(parse_workflow(wf))
    errors = [i for i in issues if i.is_error]
    assert [i.code for i in errors] == ["script_interpreter_missing"]  # (no pwsh on this machine)
    assert "pwsh" in errors[0].message and "PowerShell" in errors[0].message


def test_taskflow_script_recipe() -> None:
    doc = raw("typeagent_top_songs.recipe.json")
    wf = import_flow(doc).workflow
    script = data_of(wf, "script")
    assert script["language"] == "typescript" and script["script"] == doc["script"]
    assert wf["triggers"] == doc["grammarPatterns"]
    assert start_vars(wf)["quantity"]["value"] == 10


# ------------------------------------------------------------------------------- files and CLI
def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "FLOWDESK_CONFIG_DIR": str(cwd / "config"), "FLOWDESK_DATA_DIR": str(cwd / "data")}
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=60
    )


def test_load_any_workflow_converts_and_leaves_flowdesk_files_alone(tmp_path: Path) -> None:
    wf, imported = load_any_workflow(FIX / "typeagent_list_files.recipe.json")
    assert imported is not None and imported.label == "TypeAgent script recipe"
    assert "TypeAgent script recipe" in imported.note(FIX / "typeagent_list_files.recipe.json")
    _, anything = load_any_workflow(FIX / "anythingllm_with_code.json")
    assert anything is not None and "is an AnythingLLM agent flow;" in anything.note(FIX / "anythingllm_with_code.json")
    plain = tmp_path / "a.flow.json"
    plain.write_text(json.dumps({"nodes": [{"id": "s", "type": "start", "data": {}}], "connections": []}))
    wf, imported = load_any_workflow(plain)
    assert imported is None and wf.nodes[0].id == "s"


def test_cli_import_writes_a_flowdesk_file_and_leaves_the_original(tmp_path: Path) -> None:
    src = FIX / "anythingllm_direct_output.json"
    before = src.read_bytes()
    out = tmp_path / "rate.flow.json"
    r = _cli("import", str(src), "-o", str(out), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "AnythingLLM agent flow" in r.stderr and "directOutput" in r.stderr
    wf = load_workflow(out)
    assert [n.type for n in wf.nodes] == ["start", "http", "agent", "fetch"]
    assert src.read_bytes() == before
    r = _cli("import", str(FIX / "anythingllm_unknown_block.json"), cwd=tmp_path)
    assert r.returncode == 2 and "'slackMessage' block at steps[2]" in r.stderr and "AnythingLLM agent flow" in r.stderr
    r = _cli("import", str(FIX / "anythingllm_with_code.json"), cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["nodes"][2]["type"] == "code"
    r = _cli("import", str(FIX / "typeagent_top_songs.recipe.json"), cwd=tmp_path)
    assert r.returncode == 0 and json.loads(r.stdout)["nodes"][1]["type"] == "script"


def test_cli_validate_accepts_foreign_files(tmp_path: Path) -> None:
    r = _cli("validate", str(FIX / "typeagent_list_files.recipe.json"), cwd=tmp_path)
    assert r.returncode == 1
    assert "TypeAgent script recipe; converted" in r.stderr and "script_interpreter_missing" in r.stdout
    r = _cli("validate", "--json", str(FIX / "anythingllm_unknown_block.json"), cwd=tmp_path)
    assert r.returncode == 2 and "steps[2]" in json.loads(r.stdout)["error"]


# ------------------------------------------------------------------------------- export
def test_export_round_trip_of_an_anythingllm_flow() -> None:
    doc = raw("anythingllm_issue_digest.json")
    wf = parse_workflow(import_flow(doc).workflow)
    out = export_anythingllm(wf)
    assert out["name"] == doc["name"] and out["description"] == doc["description"] and out["active"] is True
    assert [s["type"] for s in out["steps"]] == [s["type"] for s in doc["steps"]]
    assert out["steps"][0]["config"]["variables"] == doc["steps"][0]["config"]["variables"]
    api = out["steps"][1]["config"]
    for key in ("url", "method", "headers", "bodyType", "body", "responseVariable"):
        assert api[key] == doc["steps"][1]["config"][key], key
    assert out["steps"][2]["config"] == doc["steps"][2]["config"]
    assert out["steps"][3]["config"] == doc["steps"][3]["config"]


def test_export_refuses_what_the_format_cannot_express() -> None:
    wf = parse_workflow(import_flow(raw("typeagent_research_topic.recipe.json")).workflow)
    with pytest.raises(ExportRefused) as err:
        export_anythingllm(wf)
    assert "AnythingLLM" in str(err.value) and "uses tools" in str(err.value)  # the web-search agent
    branching = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {}},
                {"id": "c", "type": "if", "data": {"conditions": [{"operator": "contains", "value": "x"}]}},
                {"id": "a", "type": "agent", "data": {"userPrompt": "hi"}},
            ],
            "connections": [
                {"source": "s", "target": "c"},
                {"source": "c", "target": "a", "sourceHandle": "condition-0"},
            ],
        }
    )
    with pytest.raises(ExportRefused) as err:
        export_anythingllm(branching)
    assert "'if' node" in str(err.value)
    previous = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {}},
                {"id": "a", "type": "agent", "data": {"userPrompt": ""}},
            ],
            "connections": [{"source": "s", "target": "a"}],
        }
    )
    with pytest.raises(ExportRefused) as err:
        export_anythingllm(previous)
    assert "previous output" in str(err.value)


def test_cli_export(tmp_path: Path) -> None:
    src = tmp_path / "digest.flow.json"
    r = _cli("import", str(FIX / "anythingllm_issue_digest.json"), "-o", str(src), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    r = _cli("export", str(src), "--to", "anythingllm", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert [s["type"] for s in json.loads(r.stdout)["steps"]] == ["start", "apiCall", "webScraping", "llmInstruction"]
    r = _cli("export", str(FIX / "typeagent_list_files.recipe.json"), "--to", "anythingllm", cwd=tmp_path)
    assert r.returncode == 2 and "'script' node" in r.stderr


def test_malformed_trigger_is_a_workflow_error_naming_pattern_and_position() -> None:
    wf = parse_workflow(
        {
            "triggers": ["research $(topic:wildcard)", "play $(song:wildcard"],
            "nodes": [{"id": "s", "type": "start", "data": {}}, {"id": "a", "type": "agent", "data": {}}],
            "connections": [{"source": "s", "target": "a"}],
        }
    )
    errors = [i for i in validate(wf) if i.is_error]
    assert [i.code for i in errors] == ["trigger_invalid"]
    assert errors[0].node_ids == ()
    assert "'play $(song:wildcard'" in errors[0].message and "character 6" in errors[0].message
