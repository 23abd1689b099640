"""Recorded executions: a run "from here" reuses a code step whose code and resolved inputs did
not change (``cache_hit``), and runs it again when either changed."""

from __future__ import annotations

import asyncio
from typing import Any

from engine import EchoProvider, Run, RunRecorder, RunStore, parse_workflow
from tests.code.conftest import needs_monty

pytestmark = needs_monty


def doc(code: str, value: str) -> dict[str, Any]:
    return {
        "name": "c",
        "nodes": [
            {"id": "s", "type": "start", "data": {"variables": [{"name": "v", "type": "string", "value": value}]}},
            {"id": "c", "type": "code", "data": {"code": code, "inputs": {"x": "{{v}}"}}},
            {"id": "a", "type": "agent", "data": {"agentName": "a", "userPrompt": "got {{PREVIOUS_OUTPUT}}"}},
        ],
        "connections": [
            {"source": "s", "target": "c", "sourceHandle": "output", "targetHandle": "input"},
            {"source": "c", "target": "a", "sourceHandle": "output", "targetHandle": "input"},
        ],
    }


def recorded(store: RunStore, d: dict[str, Any], **kwargs: Any) -> Run:
    run = Run(parse_workflow(d), EchoProvider(), store=store, **kwargs)
    rec = RunRecorder(store, run, workflow_path="/flows/c.flow.json")
    asyncio.run(run.start())
    rec.settled()
    rec.close()
    return run


def hits(run: Run) -> list[str]:
    return [e.node_id for e in run.events if e.type == "cache_hit"]


def test_unchanged_code_is_reused_and_changed_code_or_input_runs_again(tmp_path) -> None:
    store = RunStore(tmp_path / "runs.db")
    first = recorded(store, doc("x.upper()", "hi"))
    assert first.outputs["c"] == "HI"
    again = recorded(store, doc("x.upper()", "hi"), reuse_from=first.run_id, start_at="a")
    assert "c" in hits(again) and again.outputs["a"] == "got HI"
    changed = recorded(store, doc("x.lower()", "hi"), reuse_from=first.run_id, start_at="a")
    assert "c" not in hits(changed) and changed.outputs["c"] == "hi"
    other_input = recorded(store, doc("x.upper()", "ho"), reuse_from=first.run_id, start_at="a")
    assert "c" not in hits(other_input) and other_input.outputs["c"] == "HO"
