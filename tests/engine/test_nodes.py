"""Node kinds as specs: the registry, plug-ins through the ``flowdesk.nodes`` entry point
(the example package in tests/plugins), the injected clock and id source, per-node outcomes."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import engine
from engine import (
    EchoProvider,
    NodeOutcome,
    NodeSpec,
    Run,
    RunStatus,
    dumps_workflow,
    loads_workflow,
    node_specs,
    parse_workflow,
    spec_for,
    validate,
)

ROOT = Path(__file__).resolve().parents[2]


def template_flow(template: str = "Hello {{input}}", case: str = "upper") -> dict:
    return {
        "nodes": [
            {"id": "s", "type": "start", "data": {"initialInput": "world"}},
            {
                "id": "t",
                "type": "template",
                "x": 300,
                "y": 80,
                "data": {"template": template, "case": case, "repeat": 1, "extraField": [1, 2]},
            },
            {"id": "a", "type": "agent", "data": {"agentName": "Echo", "model": "m"}},
        ],
        "connections": [{"source": "s", "target": "t"}, {"source": "t", "target": "a"}],
    }


def test_builtin_kinds_are_specs_and_nothing_else_switches_on_them() -> None:
    specs = node_specs()
    assert list(specs)[:4] == ["start", "agent", "if", "approval"]
    assert all(isinstance(s, NodeSpec) for s in specs.values())
    wf = parse_workflow(
        {"nodes": [{"id": "i", "type": "if", "data": {"conditions": [{"value": "x"}]}}], "connections": []}
    )
    assert engine.source_handles(wf.nodes[0]) == ["condition-0", "false"]
    assert spec_for("if").handle_label(wf.nodes[0].data, "condition-0") == "Condition 1: contains 'x'"
    # Outside legacy normalisation (engine/graph/legacy.py) and the spec modules, the engine names no kind.
    for name in ("graph/model.py", "graph/validate.py", "run/scheduler.py", "store/__init__.py", "cli/__init__.py"):
        text = (ROOT / "engine" / name).read_text(encoding="utf-8")
        for kind in ('"agent"', '"if"', '"approval"', '"start"'):
            assert kind not in text, (name, kind)


def test_an_unknown_type_still_loads_and_is_reported() -> None:
    wf = loads_workflow(
        json.dumps(
            {
                "nodes": [{"id": "s", "type": "start"}, {"id": "q", "type": "nope", "data": {"k": 1}}],
                "connections": [{"source": "s", "target": "q"}],
            }
        )
    )
    assert wf.nodes[1].data.model_dump() == {"k": 1}
    assert json.loads(dumps_workflow(wf))["nodes"][1] == {"id": "q", "type": "nope", "x": 0, "y": 0, "data": {"k": 1}}
    assert "unknown_node_type" in [i.code for i in validate(wf)]


def test_the_plugin_kind_loads_validates_and_round_trips(example_plugin) -> None:
    assert "template" in node_specs() and example_plugin.label == "Template"
    assert "template" in [e.key for e in engine.palette_entries()]
    wf = parse_workflow(template_flow())
    node = wf.node("t")
    assert type(node.data).__name__ == "TemplateData" and node.data.case == "upper" and node.title == "Template"
    assert engine.source_handles(node) == ["output"] and engine.accepts_input(node)
    # Passing rule: no issue at all; failing rule: an empty template is an error naming the node.
    assert [i.code for i in validate(wf)] == []
    bad = parse_workflow(template_flow(template="  "))
    issues = validate(bad)
    assert [(i.code, i.severity, i.node_ids) for i in issues] == [("template_empty", "error", ("t",))]
    assert "'Template' has an empty template" in issues[0].message
    assert engine.check_connection(wf, "a", "output", "t").ok  # into its input
    assert engine.check_connection(wf, "t", "nope", "a").reason == "Template has no 'nope' output."
    # Saved and loaded like a built-in: same text again, unknown fields kept.
    text = dumps_workflow(wf)
    again = loads_workflow(text)
    assert dumps_workflow(again) == text
    assert again.node("t").data.extraField == [1, 2] and again.node("t").data.template == "Hello {{input}}"


def test_the_plugin_kind_runs_with_exact_events(example_plugin) -> None:
    wf = parse_workflow(template_flow())
    run = Run(wf, EchoProvider(), clock=itertools.count(100).__next__, id_source=lambda: "fixed")
    assert asyncio.run(run.start()) == RunStatus.COMPLETED
    assert [(e.node_id, e.type, e.content) for e in run.events] == [
        ("system", "run_status", "running"),
        ("s", "step_start", "Start"),
        ("s", "step_end", "done"),
        ("t", "step_start", "Template"),
        ("t", "node_output", "HELLO WORLD"),
        ("t", "step_end", "done"),
        ("a", "step_start", "Echo"),
        ("a", "start_prompt", "HELLO WORLD"),
        ("a", "llm_response", "HELLO WORLD"),
        ("a", "step_end", "done"),
        ("system", "run_status", "completed"),
    ]
    assert run.run_id == "fixed"
    assert run.events[2].extra == {"status": "done", "durationMs": 1000}  # the injected clock: one tick a second
    assert run.events[4].extra == {"handle": "output"}  # node_output, logged by the run for a plug-in kind
    stamps = [e.timestamp for e in run.events]
    assert stamps == sorted(stamps) and stamps[0] >= 100 and all(float(s).is_integer() for s in stamps)
    assert run.outcomes == {"s": NodeOutcome.DONE, "t": NodeOutcome.DONE, "a": NodeOutcome.DONE}
    assert run.records["a"].outcome == NodeOutcome.DONE


def test_a_failing_step_has_a_failed_outcome_and_fails_the_run(example_plugin) -> None:
    wf = parse_workflow(template_flow(template=" "))
    run = Run(wf, EchoProvider(), check=False)
    assert asyncio.run(run.start()) == RunStatus.FAILED
    assert run.outcomes == {"s": NodeOutcome.DONE, "t": NodeOutcome.FAILED}
    assert [(e.node_id, e.type) for e in run.events][-2:] == [("t", "error"), ("system", "run_status")]
    assert run.error == "Template 't' has an empty template."


def test_outcomes_survive_snapshot_and_restore() -> None:
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start"},
                {"id": "ok", "type": "approval"},
                {"id": "a", "type": "agent", "data": {"model": "m"}},
            ],
            "connections": [
                {"source": "s", "target": "ok"},
                {"source": "ok", "sourceHandle": "approve", "target": "a"},
            ],
        }
    )
    ids = iter(["run1", "c1", "c2"])
    run = Run(wf, EchoProvider(), initial_input="x", id_source=lambda: next(ids))
    assert asyncio.run(run.start()) == RunStatus.PAUSED and run.run_id == "run1"
    assert run.outcomes == {"s": NodeOutcome.DONE}
    again = Run.restore(json.loads(json.dumps(run.snapshot())), EchoProvider(), clock=lambda: 5.0)
    assert asyncio.run(again.resume("approve")) == RunStatus.COMPLETED
    assert again.outcomes == {"s": "done", "ok": "done", "a": "done"}
    assert {e.timestamp for e in again.events} == {5.0}


def test_the_plugin_kind_runs_in_the_cli(example_plugin, tmp_path: Path) -> None:
    path = tmp_path / "t.flow.json"
    path.write_text(json.dumps(template_flow()))
    env = {**os.environ, "NO_COLOR": "1"}
    res = subprocess.run(
        [sys.executable, "-m", "editor.launcher", "run", str(path), "--provider", "echo", "--jsonl"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert res.returncode == 0, res.stderr
    events = [json.loads(line) for line in res.stdout.splitlines() if line.strip()]
    assert [(e["nodeId"], e["type"]) for e in events] == [
        ("system", "run_status"),
        ("s", "step_start"),
        ("s", "step_end"),
        ("t", "step_start"),
        ("t", "node_output"),
        ("t", "step_end"),
        ("a", "step_start"),
        ("a", "start_prompt"),
        ("a", "llm_response"),
        ("a", "step_end"),
        ("system", "run_status"),
    ]
    assert events[3]["content"] == "Template" and events[4]["content"] == "HELLO WORLD"
    res = subprocess.run(
        [sys.executable, "-m", "editor.launcher", "validate", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert res.returncode == 0 and "0 errors" in res.stdout, res.stdout + res.stderr


def test_a_broken_plugin_is_skipped_with_a_warning(tmp_path: Path, monkeypatch, caplog) -> None:
    info = tmp_path / "broken_nodes-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-nodes\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[flowdesk.nodes]\nbroken = broken_nodes_missing:SPEC\nnotaspec = json:dumps\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with caplog.at_level(logging.WARNING, logger="flowdesk.nodes"):
        warnings = engine.load_plugins(reload=True)
    assert any("'broken'" in w and "could not be loaded" in w and "broken_nodes_missing" in w for w in warnings)
    assert any("'notaspec'" in w and "is not a NodeSpec" in w for w in warnings)
    assert "could not be loaded" in caplog.text
    assert list(node_specs())[:4] == ["start", "agent", "if", "approval"]


def test_step_end_durations_are_the_clock_s_whatever_their_size() -> None:
    """Short durations come from a table of ready-made texts; long ones, and a clock that
    stepped back (a time adjustment mid-run), are formatted: all read the clock's difference."""
    from engine import LLMResult

    now = [1000.0]
    took = {"a": 0.063, "b": 0.064, "c": 2.5, "d": -0.002}

    class Clocked:  # each answer moves the run's clock on by its node's time
        name = "clocked"

        async def complete(self, inv, ctx):
            now[0] += took[inv.node_id]
            return LLMResult(inv.user_content)

    nodes = [{"id": "s", "type": "start", "data": {"initialInput": "x"}}]
    nodes += [{"id": k, "type": "agent", "data": {"agentName": k.upper(), "model": "m"}} for k in took]
    links = [{"source": a["id"], "target": b["id"]} for a, b in zip(nodes, nodes[1:])]
    run = Run(parse_workflow({"nodes": nodes, "connections": links}), Clocked(), clock=lambda: now[0])
    assert asyncio.run(run.start()) == RunStatus.COMPLETED
    ends = {e.node_id: e.extra["durationMs"] for e in run.events if e.type == "step_end"}
    assert ends == {"s": 0, "a": 63, "b": 64, "c": 2500, "d": -2}


def test_a_start_cards_summary_names_the_runs_arguments() -> None:
    """The canvas card of a Start node with variables lists them (required ones starred): what
    the run console will ask for."""
    wf = parse_workflow(
        {
            "nodes": [
                {
                    "id": "s",
                    "type": "start",
                    "data": {
                        "initialInput": "",
                        "variables": [
                            {"name": "topic", "required": True},
                            {"name": "tone", "value": "calm"},
                            {"name": ""},
                        ],
                    },
                }
            ],
            "connections": [],
        }
    )
    assert spec_for("start").summary(wf.nodes[0].data) == [("(run input)", False), ("topic*, tone", True)]
    plain = parse_workflow({"nodes": [{"id": "s", "type": "start", "data": {"initialInput": "Hi"}}], "connections": []})
    assert spec_for("start").summary(plain.nodes[0].data) == [("Hi", False)]
