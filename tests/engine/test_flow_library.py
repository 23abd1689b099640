"""The flow library (engine.flows.library), the ``flow`` and ``action`` nodes (nested runs) and
``flowdesk flows``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import engine
from engine import (
    EchoProvider,
    FlowLibrary,
    Run,
    RunRecorder,
    RunState,
    RunStore,
    load_workflow,
    new_flow_for_action,
    parse_workflow,
    sample_paths,
    save_workflow,
    validate,
)
from engine.flows.library import set_default_library

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def own_folders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test: its own data and config folders, and no shared default library."""
    monkeypatch.setenv("FLOWDESK_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("FLOWDESK_CONFIG_DIR", str(tmp_path / "config"))
    set_default_library(None)
    yield tmp_path
    set_default_library(None)


def wf(name: str, nodes: list[dict[str, Any]], links: list[tuple], **top: Any) -> Any:
    conns = [{"source": a, "target": b, **({"sourceHandle": h[0]} if h else {})} for a, b, *h in links]
    return parse_workflow({"name": name, **top, "nodes": nodes, "connections": conns})


def start(initial: str = "", variables: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"initialInput": initial}
    if variables is not None:
        data["variables"] = variables
    return {"id": "s", "type": "start", "data": data}


def agent(nid: str, prompt: str) -> dict[str, Any]:
    return {"id": nid, "type": "agent", "data": {"agentName": nid.upper(), "userPrompt": prompt, "model": "m"}}


def child_flow(approval: bool = False) -> Any:
    nodes = [
        start(
            "child input",
            [{"name": "topic", "type": "string", "required": True}, {"name": "count", "type": "number", "value": 1}],
        ),
        agent("a", "child got {{PREVIOUS_OUTPUT}}"),
        agent("b", "after {{PREVIOUS_OUTPUT}}"),
    ]
    links = [("s", "a")]
    if approval:
        nodes.append({"id": "ap", "type": "approval", "data": {"prompt": "Child asks: ok?"}})
        links += [("a", "ap"), ("ap", "b", "approve")]
    else:
        links += [("a", "b")]
    return wf("Child", nodes, links, description="A child flow.", triggers=["child $(topic:wildcard)"])


def parent_flow(ref: str, inputs: dict[str, Any] | None = None) -> Any:
    return wf(
        "Parent",
        [
            start("parent input"),
            {"id": "f", "type": "flow", "data": {"flow": ref, "inputs": inputs or {"topic": "cats"}}},
            agent("z", "final {{PREVIOUS_OUTPUT}}"),
        ],
        [("s", "f"), ("f", "z")],
    )


# ------------------------------------------------------------------ the library


def test_save_gives_a_stable_id_kept_on_load_and_save(tmp_path: Path) -> None:
    lib = FlowLibrary([tmp_path / "lib"])
    child = child_flow()
    assert child.id is None
    entry = lib.save(child)
    assert child.id and entry.id == child.id and entry.path.parent == tmp_path / "lib"
    assert entry.path.name == "child.flow.json"
    again = load_workflow(entry.path)
    assert again.id == child.id and again.triggers == ["child $(topic:wildcard)"]
    lib.save(again)  # saved again: same id, same file
    assert [f.id for f in lib.flows()] == [child.id]
    assert json.loads(entry.path.read_text())["id"] == child.id


def test_flows_lists_name_description_parameters_triggers_and_path(tmp_path: Path) -> None:
    lib = FlowLibrary([tmp_path / "lib"])
    entry = lib.save(child_flow())
    (f,) = lib.flows()
    assert (f.name, f.description, f.triggers, f.path) == (
        "Child",
        "A child flow.",
        ["child $(topic:wildcard)"],
        entry.path,
    )
    assert [(p.name, p.type, p.required) for p in f.parameters] == [
        ("topic", "string", True),
        ("count", "number", False),
    ]
    assert f.parameters_schema() == {
        "type": "object",
        "properties": {"topic": {"type": "string"}, "count": {"type": "number", "description": "Default: 1."}},
        "required": ["topic"],
    }
    assert lib.get(f.id) == lib.get("child") == lib.get("CHILD")
    assert f.to_json()["canPause"] is False


def test_an_unreadable_file_is_listed_with_its_error(tmp_path: Path) -> None:
    folder = tmp_path / "lib"
    folder.mkdir()
    (folder / "broken.flow.json").write_text("{not json")
    lib = FlowLibrary([folder])
    (f,) = lib.flows()
    assert f.error and "not valid JSON" in f.error
    assert lib.get("broken") is None


def test_enabled_is_kept_in_the_settings(tmp_path: Path) -> None:
    lib = FlowLibrary([tmp_path / "lib"])
    entry = lib.save(child_flow())
    lib.set_enabled(entry.id, False)
    assert [f.enabled for f in FlowLibrary([tmp_path / "lib"]).flows()] == [False]
    assert entry.id in json.loads((tmp_path / "config" / "settings.json").read_text())["library"]["disabled"]
    lib.set_enabled(entry.id, True)
    assert [f.enabled for f in lib.flows()] == [True]


def test_samples_are_seeded_once_and_a_deleted_one_does_not_come_back(tmp_path: Path) -> None:
    lib = FlowLibrary()
    names = sorted(p.name for p in sample_paths())
    assert sorted(f.path.name for f in lib.flows()) == names
    assert lib.primary == tmp_path / "data" / "library"
    hello = lib.get("Hello")
    assert hello is not None and hello.id == "sample-hello"
    hello.path.unlink()
    assert "hello.flow.json" not in [f.path.name for f in FlowLibrary().flows()]


def test_folders_from_the_settings_are_read(tmp_path: Path) -> None:
    extra = tmp_path / "more"
    extra.mkdir()
    save_workflow(child_flow(), extra / "child.flow.json")
    lib = FlowLibrary()
    lib.add_folder(extra)
    assert lib.folders == [tmp_path / "data" / "library", extra]
    assert lib.get("Child") is not None and lib.get("Child").path.parent == extra


def test_cli_flows_lists_the_library(tmp_path: Path) -> None:
    env = {**os.environ, "FLOWDESK_DATA_DIR": str(tmp_path / "data"), "FLOWDESK_CONFIG_DIR": str(tmp_path / "config")}
    FlowLibrary().save(child_flow())
    res = subprocess.run(
        [sys.executable, "-m", "engine.cli", "flows", "--json"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    child = next(f for f in out["flows"] if f["name"] == "Child")
    assert child["parameters"][0] == {
        "name": "topic",
        "type": "string",
        "description": "",
        "required": True,
        "value": None,
    }
    assert child["triggers"] == ["child $(topic:wildcard)"] and child["enabled"] is True
    res = subprocess.run(
        [sys.executable, "-m", "engine.cli", "flows"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert (
        res.returncode == 0 and "Child  [" in res.stdout and "parameters: topic: string, count: number?" in res.stdout
    )


# ------------------------------------------------------------------ subflows


async def run_to_rest(workflow: Any, lib: FlowLibrary, **kwargs: Any) -> Run:
    run = Run(workflow, EchoProvider(), library=lib, **kwargs)
    await run.start()
    return run


async def test_a_subflow_result_is_its_last_leaf_output_and_its_events_carry_the_path(tmp_path: Path) -> None:
    lib = FlowLibrary([tmp_path / "lib"])
    child = lib.save(child_flow())
    run = await run_to_rest(parent_flow(child.id), lib)
    assert run.status == "completed", run.error
    assert run.outputs["f"] == "after child got child input"
    assert run.outputs["z"] == "final after child got child input"
    top = [(e.node_id, e.type) for e in run.events if not e.path]
    assert top == [
        ("system", "run_status"),
        ("s", "step_start"),
        ("s", "step_end"),
        ("f", "step_start"),
        ("f", "node_output"),
        ("f", "step_end"),
        ("z", "step_start"),
        ("z", "start_prompt"),
        ("z", "llm_response"),
        ("z", "step_end"),
        ("system", "run_status"),
    ]
    nested = [e for e in run.events if e.path]
    paths = {e.path for e in nested}
    assert len(paths) == 1
    (path,) = paths
    assert path.startswith("f:")
    assert [(e.node_id, e.type) for e in nested] == [
        ("system", "run_status"),
        ("s", "step_start"),
        ("s", "step_end"),
        ("a", "step_start"),
        ("a", "start_prompt"),
        ("a", "llm_response"),
        ("a", "step_end"),
        ("b", "step_start"),
        ("b", "start_prompt"),
        ("b", "llm_response"),
        ("b", "step_end"),
        ("system", "run_status"),
    ]
    state = RunState()
    state.apply_many(run.events)
    assert list(state.children) == [path]
    assert state.children[path].status == "completed"
    assert state.states["f"] == "done"


async def test_subflow_events_are_stored_under_the_child_path(tmp_path: Path) -> None:
    lib = FlowLibrary([tmp_path / "lib"])
    child = lib.save(child_flow())
    store = RunStore(tmp_path / "runs.db")
    run = Run(parent_flow(child.id), EchoProvider(), library=lib)
    rec = RunRecorder(store, run)
    await run.start()
    rec.settled()
    rec.close()
    stored = list(store.iter_events(run.run_id))
    assert stored == run.events
    assert {e.path for e in stored} == {"", next(e.path for e in run.events if e.path)}
    assert all('"path"' in line for line in store.export_jsonl(run.run_id) if '"f:' in line)
    store.close()


async def test_subflow_inputs_are_mapped_and_typed(tmp_path: Path) -> None:
    lib = FlowLibrary([tmp_path / "lib"])
    child = wf(
        "Typed",
        [
            start(
                "",
                [
                    {"name": "topic", "type": "string", "required": True},
                    {"name": "count", "type": "number"},
                    {"name": "tags", "type": "json"},
                ],
            ),
            agent("a", "{{topic}} x{{count}} {{tags[1]}}"),
        ],
        [("s", "a")],
    )
    entry = lib.save(child)
    parent = wf(
        "P",
        [
            start("", [{"name": "animal", "value": "cats"}, {"name": "list", "type": "json", "value": ["a", "b"]}]),
            {
                "id": "f",
                "type": "flow",
                "data": {"flow": entry.id, "inputs": {"topic": "about {{animal}}", "count": "3", "tags": "{{list}}"}},
            },
        ],
        [("s", "f")],
    )
    run = await run_to_rest(parent, lib)
    assert run.status == "completed", run.error
    assert run.outputs["f"] == "about cats x3 b"
    (child_run_start,) = [e for e in run.events if e.path and e.node_id == "a" and e.type == "start_prompt"]
    assert child_run_start.content == "about cats x3 b"


async def test_a_missing_flow_and_a_missing_action_are_errors_naming_them(tmp_path: Path) -> None:
    lib = FlowLibrary([tmp_path / "lib"])
    issues = validate(parent_flow("no-such-flow"), library=lib)
    (err,) = [i for i in issues if i.is_error]
    assert err.code == "flow_missing" and "'no-such-flow'" in err.message and err.node_ids == ("f",)
    action = wf(
        "A",
        [
            start(),
            {
                "id": "x",
                "type": "action",
                "data": {"schema": "calendar", "action": "addEvent", "parameters": {"when": "today"}},
            },
        ],
        [("s", "x")],
    )
    (err,) = [i for i in validate(action, library=lib) if i.is_error]
    assert err.code == "action_unbound" and "'addEvent'" in err.message
    run = await run_to_rest(parent_flow("no-such-flow"), lib)
    assert run.status == "failed" and "no-such-flow" in run.error


async def test_an_action_runs_the_library_flow_of_its_name(tmp_path: Path) -> None:
    lib = FlowLibrary([tmp_path / "lib"])
    made = new_flow_for_action("addEvent", {"when": "today"}, schema="calendar")
    assert made.name == "addEvent"
    assert [v["name"] for v in made.nodes[0].data.model_dump()["variables"]] == ["when"]
    lib.save(made)
    action = wf(
        "A",
        [
            start("go"),
            {
                "id": "x",
                "type": "action",
                "data": {"schema": "calendar", "action": "addEvent", "parameters": {"when": "today"}},
            },
        ],
        [("s", "x")],
    )
    assert not [i for i in validate(action, library=lib) if i.is_error]
    run = await run_to_rest(action, lib)
    assert run.status == "completed", run.error
    assert run.outputs["x"].startswith("Carry out the action 'addEvent' (calendar).")
    assert any(e.path.startswith("x:") for e in run.events)


def test_self_reference_is_refused_directly_and_through_another_flow(tmp_path: Path) -> None:
    lib = FlowLibrary([tmp_path / "lib"])
    me = wf("Me", [start(), {"id": "f", "type": "flow", "data": {"flow": "me.flow.json"}}], [("s", "f")])
    path = tmp_path / "lib" / "me.flow.json"
    lib.save(me, path)
    (err,) = [i for i in validate(load_workflow(path), library=lib, path=path) if i.is_error]
    assert err.code == "flow_recursive"
    # A -> B -> A, by library id
    a = wf("A", [start(), {"id": "f", "type": "flow", "data": {"flow": "flow-b"}}], [("s", "f")], id="flow-a")
    b = wf("B", [start(), {"id": "f", "type": "flow", "data": {"flow": "flow-a"}}], [("s", "f")], id="flow-b")
    lib.save(a)
    lib.save(b)
    entry = lib.get("flow-a")
    issues = [i for i in validate(a, library=lib, path=entry.path) if i.is_error]
    assert [i.code for i in issues] == ["flow_recursive"] and "(B → A)" in issues[0].message
    # the same flow, not yet saved anywhere but with its id, is caught too
    assert [i.code for i in validate(a, library=lib) if i.is_error] == ["flow_recursive"]


async def test_an_approval_in_the_child_pauses_the_parent_and_resume_completes_it(tmp_path: Path) -> None:
    lib = FlowLibrary([tmp_path / "lib"])
    child = lib.save(child_flow(approval=True))
    run = await run_to_rest(parent_flow(child.id), lib)
    assert run.status == "paused" and run.pending_approval == "f"
    wait = [e for e in run.events if e.type == "wait_input"]
    assert [(bool(e.path), e.node_id, e.content) for e in wait] == [
        (True, "ap", "Child asks: ok?"),
        (False, "f", "Child asks: ok?"),
    ]
    snap = json.loads(json.dumps(run.snapshot()))  # to JSON and back: what another process gets
    again = Run.restore(snap, EchoProvider(), library=lib)
    assert await again.resume("approve", "fine") == "completed", again.error
    assert again.outputs["z"] == "final after child got child input"
    received = [(bool(e.path), e.node_id) for e in again.events if e.type == "input_received"]
    assert received == [(False, "f"), (True, "ap")]


def test_an_approval_in_the_child_resumed_in_a_new_process(tmp_path: Path) -> None:
    env = {**os.environ, "FLOWDESK_DATA_DIR": str(tmp_path / "data"), "FLOWDESK_CONFIG_DIR": str(tmp_path / "config")}
    child = FlowLibrary().save(child_flow(approval=True))
    parent_path = tmp_path / "parent.flow.json"
    save_workflow(parent_flow(child.id), parent_path)
    cli = [sys.executable, "-m", "engine.cli"]
    res = subprocess.run(
        [*cli, "run", str(parent_path), "--provider", "echo"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 3, res.stdout + res.stderr
    res = subprocess.run([*cli, "runs", "--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    runs = json.loads(res.stdout)
    run_id = (runs["runs"] if isinstance(runs, dict) else runs)[0]["id"]
    res = subprocess.run(
        [*cli, "resume", run_id, "--decide", "approve", "--jsonl"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stdout + res.stderr
    lines = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    final = [x for x in lines if x["type"] == "llm_response" and x["nodeId"] == "z"]
    assert final and final[0]["content"] == "final after child got child input"
    assert any(x.get("path", "").startswith("f:") and x["type"] == "input_received" for x in lines)


def test_flow_node_data_round_trips() -> None:
    parent = parent_flow("abc", {"topic": "{{x}}"})
    text = engine.dumps_workflow(parent)
    assert engine.loads_workflow(text).node("f").data.inputs == {"topic": "{{x}}"}
    action = wf(
        "A",
        [start(), {"id": "x", "type": "action", "data": {"schema": "s", "action": "a", "parameters": {"k": 1}}}],
        [("s", "x")],
    )
    assert json.loads(engine.dumps_workflow(action))["nodes"][1]["data"] == {
        "schema": "s",
        "action": "a",
        "parameters": {"k": 1},
    }


def test_a_flow_nodes_card_names_the_flow_once_a_library_has_listed_it(tmp_path: Path) -> None:
    from engine import spec_for

    lib = FlowLibrary([tmp_path / "lib"])
    child = child_flow()
    lib.save(child)
    node = parent_flow(child.id).node("f")
    lib.flows()  # a scan (the editor's library panel makes one): names known from now on, no I/O per card
    assert spec_for("flow").summary(node.data) == [("Child", False), ("topic", True)]
    unknown = parent_flow("not-in-any-library").node("f")
    assert spec_for("flow").summary(unknown.data)[0] == ("not-in-any-library", False)
    empty = parent_flow("").node("f")
    assert spec_for("flow").summary(empty.data)[0] == ("(no flow chosen)", False)


def test_a_required_parameter_with_a_default_need_not_be_given() -> None:
    from engine.flows.library import FlowParameter, LibraryFlow

    flow = LibraryFlow(
        "f",
        "F",
        Path("f.flow.json"),
        parameters=[
            FlowParameter("topic", required=True),
            FlowParameter("tone", required=True, value="friendly", description="How it sounds."),
            FlowParameter("count", "number", required=True, value=0),
        ],
    )
    schema = flow.parameters_schema()
    assert schema["required"] == ["topic"]  # as a run: a required variable with a default takes it
    assert schema["properties"]["tone"] == {"type": "string", "description": 'How it sounds. Default: "friendly".'}
    assert schema["properties"]["count"] == {"type": "number", "description": "Default: 0."}
