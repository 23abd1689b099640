"""The kernel's boundary: kinds and adapters talk to a run only through its RunContext, the
scheduler knows no kind, and a new stateful kind needs no change to ``engine/run/``."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

from engine import EchoProvider, NodeSpec, Run, RunStatus, parse_workflow
from engine.nodes import BUILTIN_KINDS, register_node_spec, unregister_node_spec

ROOT = Path(__file__).resolve().parents[2]
SCHEDULER = ROOT / "engine" / "run" / "scheduler.py"
_RUNLIKE = {"run", "ctx"}


def _private_run_reads(tree: ast.AST) -> list[tuple[int, str]]:
    """``run._x``, ``ctx._x``, ``<anything>.run._x``, ``<anything>.ctx._x`` (dunders allowed)."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_") or node.attr.startswith("__"):
            continue
        owner = node.value
        name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else None
        if name in _RUNLIKE:
            found.append((node.lineno, f"{name}.{node.attr}"))
    return sorted(found)


def test_nothing_outside_the_scheduler_reads_a_runs_private_attributes() -> None:
    offences = []
    for top in ("engine", "editor"):
        for path in sorted((ROOT / top).rglob("*.py")):
            if path == SCHEDULER:
                continue
            for line, text in _private_run_reads(ast.parse(path.read_text(encoding="utf-8"))):
                offences.append(f"{path.relative_to(ROOT)}:{line}: {text}")
    assert offences == []


def test_the_scan_finds_what_it_looks_for() -> None:
    tree = ast.parse("ctx.run._loop_step(n)\nrun._pending = None\nctx._x\nself.run._emit()\nrun.__class__\n")
    assert [text for _line, text in _private_run_reads(tree)] == [
        "run._loop_step",
        "run._pending",
        "ctx._x",
        "run._emit",
    ]


def test_the_scheduler_names_no_kind() -> None:
    tree = ast.parse(SCHEDULER.read_text(encoding="utf-8"))
    # A dict key is a field name (an event's {"code": ...}), not a kind.
    keys = {id(k) for node in ast.walk(tree) if isinstance(node, ast.Dict) for k in node.keys if k is not None}
    named = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant) and id(node) not in keys} & set(
        BUILTIN_KINDS
    )
    assert named == set()


# ------------------------------------------------------------------ a stateful kind of its own
class CounterSpec(NodeSpec):
    """Fires every third arrival, with the three values; its count is its own state."""

    kind = "test_counter"
    label = "Counter"
    gathers = True
    state_key = "testCounters"

    def arrive(self, ctx: Any, node: Any, src: str | None, value: Any) -> Any:
        held = list(ctx.state(node.id, ())) + [value]
        if len(held) < 3:
            ctx.set_state(node.id, held)
            ctx.emit(node.id, "join_wait", f"{len(held)} of 3 arrived")
            return ctx.WAITING
        ctx.drop_state(node.id)
        return held

    async def execute(self, ctx: Any, node: Any, value: Any) -> tuple[Any, str]:
        return " + ".join(value), "output"

    def state_to_json(self, state: Any) -> Any:
        return {"held": list(state)}

    def state_from_json(self, ctx: Any, data: Any) -> Any:
        return list(data["held"])


def _counting_flow() -> Any:
    nodes = [
        {"id": "s", "type": "start", "data": {"initialInput": "go"}},
        {"id": "a", "type": "agent", "data": {"agentName": "A", "userPrompt": "a {{PREVIOUS_OUTPUT}}"}},
        {"id": "b", "type": "agent", "data": {"agentName": "B", "userPrompt": "b {{PREVIOUS_OUTPUT}}"}},
        {"id": "ok", "type": "approval", "data": {"prompt": "third?"}},
        {"id": "c", "type": CounterSpec.kind, "data": {}},
        {"id": "end", "type": "agent", "data": {"agentName": "End", "userPrompt": "got {{PREVIOUS_OUTPUT}}"}},
    ]
    links = [
        ("s", "a", "output"),
        ("s", "b", "output"),
        ("s", "ok", "output"),
        ("a", "c", "output"),
        ("b", "c", "output"),
        ("ok", "c", "approve"),
        ("c", "end", "output"),
    ]
    return parse_workflow(
        {
            "nodes": nodes,
            "connections": [
                {"source": s, "target": t, "sourceHandle": h, "targetHandle": "input"} for s, t, h in links
            ],
        }
    )


async def test_a_counter_kind_keeps_its_state_across_snapshot_and_restore() -> None:
    register_node_spec(CounterSpec())
    try:
        run = Run(_counting_flow(), EchoProvider(), check=False)
        assert await run.start() == RunStatus.PAUSED
        assert "end" not in run.outputs  # two arrivals so far: the counter waits
        snap = json.loads(json.dumps(run.snapshot()))
        assert sorted(snap["testCounters"]["c"]["held"]) == ["a go", "b go"]
        assert snap["joins"] == {} and snap["loops"] == {}  # (the built-in kinds' keys as before)

        again = Run.restore(snap, EchoProvider(), check=False)
        assert await again.resume("approve") == RunStatus.COMPLETED
        fired = again.outputs["c"].split(" + ")
        assert sorted(fired) == ["a go", "b go", "go"]
        assert again.outputs["end"].startswith("got ")
        assert [e.node_id for e in again.events if e.type == "step_start"] == ["c", "end"]
    finally:
        unregister_node_spec(CounterSpec.kind)
