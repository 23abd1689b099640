"""Load/save of the AgentFlow-compatible workflow format (engine.graph.model).

Covers the round trip of plain AgentFlow files, preservation of unknown fields and ids,
the legacy normalisation (docs/design.md), atomic saving, and the typed WorkflowLoadError for
everything that is not a workflow graph.
"""

from __future__ import annotations

import copy
import errno
import gc
import json
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest

from engine import (
    AgentData,
    ApprovalData,
    Connection,
    IfData,
    Node,
    StartData,
    Workflow,
    WorkflowLoadError,
    dumps_workflow,
    load_workflow,
    loads_workflow,
    parse_workflow,
    save_workflow,
    workflow_to_dict,
)

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def agentflow_file() -> dict[str, Any]:
    """A file as AgentFlow writes it: only ``nodes`` and ``connections``, integer coordinates."""
    return {
        "nodes": [
            {"id": "start-1", "type": "start", "x": 80, "y": 120, "data": {"initialInput": "Hello"}},
            {
                "id": "agent-1",
                "type": "agent",
                "x": 380,
                "y": 100,
                "data": {
                    "agentName": "Writer",
                    "systemPrompt": "You write.",
                    "userPrompt": "{{PREVIOUS_OUTPUT}}",
                    "model": "gpt-4o-mini",
                    "reasoningEffort": "medium",
                    "tools": {"web_search": True, "subagents": True},
                },
            },
            {
                "id": "agent-2",
                "type": "agent",
                "x": 380,
                "y": 400,
                "data": {
                    "agentName": "Helper",
                    "systemPrompt": "",
                    "userPrompt": "",
                    "model": "gpt-4o",
                    "reasoningEffort": "low",
                    "tools": {"web_search": False, "subagents": False},
                },
            },
            {
                "id": "if-1",
                "type": "if",
                "x": 700.5,
                "y": 100,
                "data": {
                    "conditions": [{"operator": "equal", "value": "yes"}, {"operator": "contains", "value": "maybe"}]
                },
            },
            {"id": "approval-1", "type": "approval", "x": 1000, "y": 100, "data": {"prompt": "OK?"}},
        ],
        "connections": [
            {"source": "start-1", "target": "agent-1", "sourceHandle": "output", "targetHandle": "input"},
            {"source": "agent-1", "target": "agent-2", "sourceHandle": "subagent", "targetHandle": "input"},
            {"source": "agent-1", "target": "if-1", "sourceHandle": "output", "targetHandle": "input"},
            {"source": "if-1", "target": "approval-1", "sourceHandle": "condition-0", "targetHandle": "input"},
            {"source": "if-1", "target": "approval-1", "sourceHandle": "false", "targetHandle": "input"},
        ],
    }


def contains(big: Any, small: Any) -> bool:
    """Every field of ``small`` is in ``big`` with an equal value (``big`` may have more fields)."""
    if isinstance(small, dict):
        return isinstance(big, dict) and all(k in big and contains(big[k], v) for k, v in small.items())
    if isinstance(small, list):
        return isinstance(big, list) and len(big) == len(small) and all(contains(b, s) for b, s in zip(big, small))
    return big == small and type(big) is type(small)


def load_error(raw_text: str | bytes) -> WorkflowLoadError:
    with pytest.raises(WorkflowLoadError) as info:
        loads_workflow(raw_text)
    return info.value


# ---------------------------------------------------------------------------------------
# Round trip


def test_agentflow_file_opens_with_typed_data() -> None:
    wf = parse_workflow(agentflow_file())
    assert [n.id for n in wf.nodes] == ["start-1", "agent-1", "agent-2", "if-1", "approval-1"]
    assert isinstance(wf.nodes[0].data, StartData) and wf.nodes[0].data.initialInput == "Hello"
    agent = wf.nodes[1].data
    assert isinstance(agent, AgentData)
    assert (agent.agentName, agent.model, agent.reasoningEffort) == ("Writer", "gpt-4o-mini", "medium")
    assert agent.tools.web_search and agent.tools.subagents
    assert isinstance(wf.nodes[3].data, IfData)
    assert [(c.operator, c.value) for c in wf.nodes[3].data.conditions] == [("equal", "yes"), ("contains", "maybe")]
    assert isinstance(wf.nodes[4].data, ApprovalData) and wf.nodes[4].data.prompt == "OK?"
    assert len(wf.connections) == 5 and wf.connections[1].is_subagent


def test_agentflow_file_saves_back_with_same_nodes_and_connections(tmp_path: Path) -> None:
    original = agentflow_file()
    path = tmp_path / "af.flow.json"
    path.write_text(json.dumps(original), encoding="utf-8")
    wf = load_workflow(path)
    save_workflow(wf, path)
    saved = json.loads(path.read_text(encoding="utf-8"))
    # Equal JSON for every field that existed, with the same JSON types (80 stays 80, not 80.0).
    assert contains(saved, original)
    assert saved["nodes"] == original["nodes"]
    assert saved["connections"] == original["connections"]
    # No top-level keys invented for a plain AgentFlow file.
    assert set(saved) == {"nodes", "connections"}


def test_saved_text_round_trips_to_equal_model() -> None:
    wf = parse_workflow(agentflow_file())
    again = loads_workflow(dumps_workflow(wf))
    assert workflow_to_dict(again) == workflow_to_dict(wf)


@pytest.mark.parametrize("sample", sorted(SAMPLES.glob("*.flow.json")), ids=lambda p: p.name)
def test_samples_round_trip_unchanged(sample: Path, tmp_path: Path) -> None:
    original = json.loads(sample.read_text(encoding="utf-8"))
    out = tmp_path / sample.name
    save_workflow(load_workflow(sample), out)
    assert json.loads(out.read_text(encoding="utf-8")) == original


def test_unknown_fields_kept_on_save(tmp_path: Path) -> None:
    raw = agentflow_file()
    raw["editorState"] = {"zoom": 1.5, "pan": [10, 20]}
    raw["tags"] = ["a", "b"]
    raw["nullField"] = None
    raw["nodes"][1]["color"] = "#ff0000"
    raw["nodes"][1]["width"] = 240
    raw["nodes"][1]["data"]["temperature"] = 0.2
    raw["nodes"][1]["data"]["tools"]["code_interpreter"] = True
    raw["nodes"][3]["data"]["conditions"][0]["caseSensitive"] = False
    raw["nodes"][4]["data"]["timeoutMinutes"] = 30
    raw["connections"][0]["id"] = "edge-1"
    raw["connections"][0]["animated"] = True
    raw["connections"][2]["label"] = None
    path = tmp_path / "extra.flow.json"
    save_workflow(parse_workflow(copy.deepcopy(raw)), path)
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved == raw


def test_ids_kept_as_they_are() -> None:
    odd_ids = ["1", "node with spaces", "ünïcødé-✓", "a.b/c", "00042"]
    raw = {
        "nodes": [{"id": i, "type": "agent", "data": {}} for i in odd_ids],
        "connections": [{"source": odd_ids[0], "target": odd_ids[1]}],
    }
    wf = parse_workflow(raw)
    assert [n.id for n in wf.nodes] == odd_ids
    saved = workflow_to_dict(wf)
    assert [n["id"] for n in saved["nodes"]] == odd_ids
    assert saved["connections"] == [{"source": "1", "target": "node with spaces"}]


def test_integer_ids_accepted_as_text() -> None:
    wf = parse_workflow(
        {"nodes": [{"id": 7, "type": "start"}, {"id": 8, "type": "agent"}], "connections": [{"source": 7, "target": 8}]}
    )
    assert [n.id for n in wf.nodes] == ["7", "8"]
    assert (wf.connections[0].source, wf.connections[0].target) == ("7", "8")


def test_node_built_in_code_saves_its_type_data() -> None:
    """A node created without data (as the editor's palette does) gets and saves its type's fields."""
    wf = Workflow(
        nodes=[Node(id="a", type="agent"), Node(id="s", type="start", data=AgentData())],
        connections=[Connection(source="s", target="a")],
    )
    assert isinstance(wf.nodes[0].data, AgentData)
    assert isinstance(wf.nodes[1].data, StartData)
    saved = workflow_to_dict(wf)
    assert saved["nodes"][0]["data"]["tools"] == {"web_search": False, "subagents": False}
    assert saved["nodes"][1]["data"]["initialInput"] == ""
    assert saved["connections"] == [{"source": "s", "target": "a"}]


def test_edited_agent_data_is_saved(tmp_path: Path) -> None:
    wf = parse_workflow(agentflow_file())
    wf.nodes[1].data.systemPrompt = "Edited prompt"  # type: ignore[attr-defined]
    path = tmp_path / "edited.flow.json"
    save_workflow(wf, path)
    assert json.loads(path.read_text(encoding="utf-8"))["nodes"][1]["data"]["systemPrompt"] == "Edited prompt"


# ---------------------------------------------------------------------------------------
# Legacy normalisation


def test_legacy_input_type_becomes_approval() -> None:
    wf = parse_workflow(
        {
            "nodes": [{"id": "s", "type": "start"}, {"id": "in", "type": "input", "data": {"prompt": "Continue?"}}],
            "connections": [{"source": "s", "target": "in"}],
        }
    )
    node = wf.node("in")
    assert node is not None and node.type == "approval"
    assert isinstance(node.data, ApprovalData) and node.data.prompt == "Continue?"


def test_legacy_end_nodes_dropped_with_their_connections() -> None:
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start"},
                {"id": "a", "type": "agent"},
                {"id": "e", "type": "end"},
                {"id": "e2", "type": "end"},
            ],
            "connections": [
                {"source": "s", "target": "a"},
                {"source": "a", "target": "e"},
                {"source": "e", "target": "e2"},
                {"source": "e2", "target": "a"},
            ],
        }
    )
    assert [n.id for n in wf.nodes] == ["s", "a"]
    assert [(c.source, c.target) for c in wf.connections] == [("s", "a")]


@pytest.mark.parametrize("conditions", [None, []], ids=["absent", "empty"])
def test_legacy_condition_string_becomes_conditions(conditions: list | None) -> None:
    data: dict[str, Any] = {"condition": "Approved"}
    if conditions is not None:
        data["conditions"] = conditions
    wf = parse_workflow({"nodes": [{"id": "i", "type": "if", "data": data}], "connections": []})
    if_data = wf.nodes[0].data
    assert isinstance(if_data, IfData)
    assert [(c.operator, c.value) for c in if_data.conditions] == [("contains", "Approved")]
    assert "condition" not in workflow_to_dict(wf)["nodes"][0]["data"]


def test_legacy_condition_ignored_when_conditions_present() -> None:
    wf = parse_workflow(
        {
            "nodes": [
                {
                    "id": "i",
                    "type": "if",
                    "data": {"condition": "old", "conditions": [{"operator": "equal", "value": "new"}]},
                }
            ],
            "connections": [],
        }
    )
    assert [(c.operator, c.value) for c in wf.nodes[0].data.conditions] == [("equal", "new")]  # type: ignore[attr-defined]


def test_legacy_true_handle_on_if_becomes_condition_0() -> None:
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "i", "type": "if", "data": {"condition": "x"}},
                {"id": "a", "type": "agent"},
                {"id": "b", "type": "agent"},
            ],
            "connections": [
                {"source": "i", "target": "a", "sourceHandle": "true"},
                {"source": "i", "target": "b", "sourceHandle": "false"},
                {"source": "a", "target": "b", "sourceHandle": "true"},
            ],  # not an if: left alone
        }
    )
    assert [c.sourceHandle for c in wf.connections] == ["condition-0", "false", "true"]


def test_legacy_input_then_saved_as_approval(tmp_path: Path) -> None:
    path = tmp_path / "legacy.flow.json"
    path.write_text(
        json.dumps(
            {
                "nodes": [{"id": "s", "type": "start"}, {"id": "q", "type": "input"}, {"id": "e", "type": "end"}],
                "connections": [{"source": "s", "target": "q"}, {"source": "q", "target": "e"}],
            }
        )
    )
    save_workflow(load_workflow(path), path)
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert [(n["id"], n["type"]) for n in saved["nodes"]] == [("s", "start"), ("q", "approval")]
    assert saved["connections"] == [{"source": "s", "target": "q"}]


# ---------------------------------------------------------------------------------------
# Atomic save


def _tmp_leftovers(folder: Path, keep: set[str]) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in keep)


@pytest.mark.parametrize("failing", ["os.replace", "os.fsync"])
def test_failed_save_leaves_original_untouched_and_no_temp_file(
    failing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "keep.flow.json"
    original_text = json.dumps(agentflow_file())
    path.write_text(original_text, encoding="utf-8")
    wf = parse_workflow(agentflow_file())
    wf.name = "changed"

    def disk_full(*_args: Any, **_kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(failing, disk_full)
    with pytest.raises(OSError) as info:
        save_workflow(wf, path)
    monkeypatch.undo()
    assert info.value.errno == errno.ENOSPC
    assert path.read_text(encoding="utf-8") == original_text
    assert _tmp_leftovers(tmp_path, {path.name}) == []


def test_failed_write_leaves_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "new.flow.json"

    def disk_full(*_args: Any, **_kwargs: Any) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("os.fsync", disk_full)
    with pytest.raises(OSError):
        save_workflow(parse_workflow(agentflow_file()), path)
    monkeypatch.undo()
    assert not path.exists()
    assert list(tmp_path.iterdir()) == []


def test_save_replaces_file_and_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "mode.flow.json"
    path.write_text("{}", encoding="utf-8")
    os.chmod(path, 0o600)
    save_workflow(parse_workflow(agentflow_file()), path)
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert load_workflow(path).nodes[0].id == "start-1"
    assert _tmp_leftovers(tmp_path, {path.name}) == []


# ---------------------------------------------------------------------------------------
# Typed load errors


def test_not_json() -> None:
    err = load_error('{"nodes": [}')
    assert "not valid JSON" in str(err) and "line 1" in str(err)


@pytest.mark.parametrize("value", ["[]", '"text"', "42", "true", "null", "3.5"])
def test_top_level_not_an_object(value: str) -> None:
    assert "top level" in str(load_error(value))


def test_run_record_is_refused() -> None:
    record = {
        "id": "run_123",
        "status": "completed",
        "logs": [{"timestamp": "2024-01-01T00:00:00Z", "nodeId": "system", "type": "step_start", "content": ""}],
        "workflow": agentflow_file(),
    }
    assert "run record" in str(load_error(json.dumps(record)))


def test_missing_nodes() -> None:
    err = load_error('{"connections": []}')
    assert err.where == "nodes" and "nodes" in str(err) and "missing" in str(err)


@pytest.mark.parametrize("nodes", ["{}", '"abc"', "3", "null"])
def test_nodes_not_a_list(nodes: str) -> None:
    err = load_error(f'{{"nodes": {nodes}, "connections": []}}')
    assert err.where == "nodes" and "must be a list" in str(err)


def test_connections_not_a_list() -> None:
    err = load_error('{"nodes": [], "connections": {}}')
    assert err.where == "connections" and "must be a list" in str(err)


def test_node_type_missing_names_the_location() -> None:
    raw = agentflow_file()
    del raw["nodes"][3]["type"]
    err = load_error(json.dumps(raw))
    assert "nodes[3].type missing" in str(err)
    assert err.where == "nodes[3].type"


@pytest.mark.parametrize(
    ("mutate", "where", "says"),
    [
        (lambda r: r["nodes"][1].__setitem__("x", "left"), "nodes[1].x", "must be a number"),
        (lambda r: r["nodes"][3].__setitem__("id", ["a"]), "nodes[3].id", "must be a string"),  # an if node
        (lambda r: r["nodes"][1].__setitem__("id", True), "nodes[1].id", "must be a string"),
        (lambda r: r["nodes"][1].__setitem__("id", ""), "nodes[1].id", "must not be empty"),
        (lambda r: r["nodes"][1].__setitem__("type", 5), "nodes[1].type", "must be a string"),
        (lambda r: r["nodes"][1].__setitem__("data", "text"), "nodes[1].data", "must be an object"),
        (lambda r: r["nodes"][1]["data"].__setitem__("model", 5), "nodes[1].data.model", "must be a string"),
        (lambda r: r["nodes"][1]["data"].__setitem__("tools", []), "nodes[1].data.tools", "must be an object"),
        (
            lambda r: r["nodes"][1]["data"]["tools"].__setitem__("subagents", "maybe"),
            "nodes[1].data.tools.subagents",
            "must be true or false",
        ),
        (
            lambda r: r["nodes"][3]["data"].__setitem__("conditions", "yes"),
            "nodes[3].data.conditions",
            "must be a list",
        ),
        (
            lambda r: r["nodes"][3]["data"]["conditions"][1].__setitem__("operator", "roughly"),
            "nodes[3].data.conditions[1].operator",
            "must be",
        ),
        (lambda r: r["nodes"].__setitem__(2, "agent"), "nodes[2]", "must be an object"),
        (lambda r: r["connections"][2].__setitem__("target", {"id": "x"}), "connections[2].target", "must be a string"),
        (lambda r: r["connections"][2].pop("source"), "connections[2].source", "missing"),
        (
            lambda r: r["connections"][2].__setitem__("sourceHandle", 3),
            "connections[2].sourceHandle",
            "must be a string",
        ),
        (lambda r: r["connections"].__setitem__(0, None), "connections[0]", "must be an object"),
        (lambda r: r.__setitem__("name", 12), "name", "must be a string"),
    ],
)
def test_wrong_field_types_name_what_and_where(mutate: Any, where: str, says: str) -> None:
    raw = agentflow_file()
    mutate(raw)
    err = load_error(json.dumps(raw))
    assert err.where == where
    assert f"{where} {says}" in str(err)


@pytest.mark.parametrize(
    "text",
    [
        "NaN",
        '{"nodes": [{"id": "a", "type": "start", "x": NaN}], "connections": []}',
        '{"nodes": [{"id": "a", "type": "start", "x": 1e999}], "connections": []}',
        '{"nodes": [], "connections": [], "extra": Infinity}',
    ],
)
def test_non_finite_numbers_refused(text: str) -> None:
    """Python's json accepts NaN/Infinity; saved back they would make a file strict readers reject."""
    load_error(text)


def test_huge_integer_is_a_load_error() -> None:
    load_error('{"nodes": [], "connections": [], "n": %s}' % ("9" * 5000))


def test_deeply_nested_json_is_a_load_error() -> None:
    load_error("[" * 100_000 + "]" * 100_000)


@pytest.mark.parametrize(
    "data", [b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\x00", bytes(range(256)), b"\xff\xfe\xfd"]
)
def test_binary_garbage(data: bytes, tmp_path: Path) -> None:
    load_error(data)
    path = tmp_path / "garbage.flow.json"
    path.write_bytes(data)
    with pytest.raises(WorkflowLoadError) as info:
        load_workflow(path)
    assert str(path) in str(info.value)


@pytest.mark.parametrize("content", [b"", b"   \n\t "])
def test_empty_file(content: bytes, tmp_path: Path) -> None:
    path = tmp_path / "empty.flow.json"
    path.write_bytes(content)
    with pytest.raises(WorkflowLoadError) as info:
        load_workflow(path)
    assert "empty" in str(info.value)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.flow.json"
    with pytest.raises(WorkflowLoadError) as info:
        load_workflow(path)
    assert "not found" in str(info.value) and info.value.path == str(path)


def test_directory(tmp_path: Path) -> None:
    with pytest.raises(WorkflowLoadError) as info:
        load_workflow(tmp_path)
    assert "folder" in str(info.value)


def test_empty_workflow_object_is_a_valid_empty_workflow() -> None:
    """An explicit empty graph is not an error (a new file), but it is not invented from nothing."""
    wf = loads_workflow('{"nodes": [], "connections": []}')
    assert wf.nodes == [] and wf.connections == []
    load_error("{}")


def test_load_error_is_a_value_error_with_location_fields() -> None:
    err = load_error('{"nodes": [{"id": "a"}], "connections": []}')
    assert isinstance(err, ValueError)
    assert err.where == "nodes[0].type" and err.reason == "missing"


@pytest.mark.parametrize(
    "text",
    [
        '{"nodes": [{"id": "s", "type": "start"}], "connections": []}',
        "not json",
        '{"nodes": [{"id": "s"}], "connections": []}',
        '{"nodes": [{"id": "s", "x": "a"}]}',
    ],
)
def test_loading_leaves_the_garbage_collector_on(text: str) -> None:
    """Loading pauses the cyclic collector, and resumes it whether the text loads or not."""
    assert gc.isenabled()
    try:
        loads_workflow(text)
    except WorkflowLoadError:
        pass
    assert gc.isenabled()


def test_nodes_and_links_of_dict_subclasses_are_read_like_dicts() -> None:
    """Values that are not plain JSON dicts (built in code) take the full structural checks."""
    wf = parse_workflow(
        {
            "nodes": [OrderedDict(id="s", type="start"), OrderedDict(id=2, type="agent", data=None)],
            "connections": [OrderedDict(source="s", target=2)],
        }
    )
    assert [(n.id, type(n.data)) for n in wf.nodes] == [("s", StartData), ("2", AgentData)]
    assert wf.connections[0].key() == ("s", "output", "2", "input")
    with pytest.raises(WorkflowLoadError) as info:
        parse_workflow({"nodes": [OrderedDict(id="s")], "connections": []})
    assert info.value.where == "nodes[0].type"


def test_error_location_counts_dropped_end_nodes() -> None:
    """The location names the index in the file, even after legacy end nodes were dropped."""
    raw = {
        "nodes": [
            {"id": "e", "type": "end"},
            {"id": "s", "type": "start"},
            {"id": "e2", "type": "end"},
            {"id": "a", "type": "agent", "data": {"model": 42}},
        ],
        "connections": [{"source": "s", "target": "e"}, {"source": "s", "target": "a", "sourceHandle": 7}],
    }
    err = load_error(json.dumps(raw))
    assert err.where == "nodes[3].data.model"
    del raw["nodes"][3]["data"]
    err = load_error(json.dumps(raw))
    assert err.where == "connections[1].sourceHandle"


def test_end_node_with_integer_id_dropped_with_text_links() -> None:
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start"},
                {"id": 9, "type": "end"},
                {"id": 4, "type": "if", "data": {"condition": "x"}},
            ],
            "connections": [{"source": "s", "target": "9"}, {"source": "4", "target": "s", "sourceHandle": "true"}],
        }
    )
    assert [n.id for n in wf.nodes] == ["s", "4"]
    assert [(c.source, c.target, c.sourceHandle) for c in wf.connections] == [("4", "s", "condition-0")]


def test_save_through_a_symlink_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.flow.json"
    real.write_text("{}", encoding="utf-8")
    link_path = tmp_path / "link.flow.json"
    link_path.symlink_to(real)
    save_workflow(parse_workflow(agentflow_file()), link_path)
    assert link_path.is_symlink()
    assert load_workflow(real).nodes[0].id == "start-1"
    assert _tmp_leftovers(tmp_path, {real.name, link_path.name}) == []


def test_known_optional_field_given_as_null_is_written_as_absent(tmp_path: Path) -> None:
    # AgentFlow reads a null and an absent optional field alike; Flowdesk writes neither
    # a null it did not need nor a field that was never set.
    raw = agentflow_file()
    raw["nodes"][1]["data"]["provider"] = None
    raw["connections"][0]["targetHandle"] = None
    path = tmp_path / "nulls.flow.json"
    save_workflow(parse_workflow(copy.deepcopy(raw)), path)
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert "provider" not in saved["nodes"][1]["data"]
    assert "targetHandle" not in saved["connections"][0]
    del raw["nodes"][1]["data"]["provider"]
    del raw["connections"][0]["targetHandle"]
    assert saved["nodes"] == raw["nodes"] and saved["connections"] == raw["connections"]


def test_canvas_notes_and_groups_round_trip_and_stay_optional():
    """Issue 31: notes and groups are top-level fields AgentFlow ignores; kept on save, absent when unused."""
    from engine import dumps_workflow, loads_workflow

    text = json.dumps(
        {
            "nodes": [{"id": "s", "type": "start", "x": 0, "y": 0, "data": {}}],
            "connections": [],
            "notes": [
                {"id": "n1", "x": 5, "y": 6, "width": 200, "height": 90, "text": "# Hi", "color": "pink", "extra": 1}
            ],
            "groups": [{"id": "g1", "title": "Intro", "nodes": ["s", 7], "collapsed": True}],
        }
    )
    wf = loads_workflow(text)
    assert wf.notes[0].text == "# Hi" and wf.groups[0].nodes == ["s", "7"]
    again = json.loads(dumps_workflow(wf))
    assert again["notes"][0] == {
        "id": "n1",
        "x": 5,
        "y": 6,
        "width": 200,
        "height": 90,
        "text": "# Hi",
        "color": "pink",
        "extra": 1,
    }
    assert again["groups"][0]["collapsed"] is True
    from engine import validate

    bare = wf.model_copy(update={"notes": None, "groups": None})
    assert [i.code for i in validate(wf)] == [i.code for i in validate(bare)]  # display only: no rule reads them
    plain = json.loads(dumps_workflow(loads_workflow('{"nodes": [], "connections": []}')))
    assert "notes" not in plain and "groups" not in plain


def test_bad_canvas_notes_get_a_clear_message():
    from engine import WorkflowLoadError, loads_workflow

    with pytest.raises(WorkflowLoadError) as err:
        loads_workflow('{"nodes": [], "connections": [], "notes": [{"id": "n", "width": "wide"}]}')
    assert "notes[0].width" in str(err.value) and "number" in str(err.value)
