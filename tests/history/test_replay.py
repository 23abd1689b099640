"""RunReplay: node states and followed links computed from real runs' logs (no Qt)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from editor.history.replay import NOT_REACHED, RunReplay
from engine import EchoProvider, Run, RunEvent, load_workflow

from ..engine.flows import Recorder, agent, approval, cond, flow, link, start

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"


def run_events(wf, provider=None, decisions=(), **kw) -> tuple[Run, list[RunEvent]]:
    async def go() -> Run:
        run = Run(wf, provider or EchoProvider(), **kw)
        status = await run.start()
        for d in decisions:
            if status != "paused":
                break
            status = await run.resume(d)
        return run

    run = asyncio.run(go())
    return run, list(run.events or [])


def test_review_sample_paused_then_approved() -> None:
    wf = load_workflow(SAMPLES / "review.flow.json")
    _, events = run_events(wf)
    r = RunReplay(wf, events)
    assert r.status == "paused"
    assert r.states == {"start": "done", "triage": "done", "route": "done", "signoff": "waiting",
                        "send": NOT_REACHED, "revise": NOT_REACHED, "general": NOT_REACHED}
    assert r.links == {("start", "output", "triage"), ("triage", "output", "route"), ("route", "condition-0", "signoff")}

    _, events = run_events(wf, decisions=["approve"])
    r = RunReplay(wf, events)
    assert r.status == "completed"
    assert r.states["signoff"] == "done" and r.states["send"] == "done" and r.states["revise"] == NOT_REACHED
    assert ("signoff", "approve", "send") in r.links and ("signoff", "reject", "revise") not in r.links
    assert r.outputs["send"].startswith("Final reply to send:")


def test_else_branch_and_failure() -> None:
    wf = flow([start(text="nothing here"), cond("c", ("contains", "refund")), agent("yes"), agent("no")],
              [link("s", "c"), link("c", "yes", "condition-0"), link("c", "no", "false")])
    _, events = run_events(wf, Recorder(fail={"no": "boom"}))
    r = RunReplay(wf, events)
    assert r.states == {"s": "done", "c": "done", "yes": NOT_REACHED, "no": "failed"}
    assert r.links == {("s", "output", "c"), ("c", "false", "no")}
    assert r.status == "failed" and "boom" in r.errors["no"]


def test_fan_out_queued_approval_and_loop_visits() -> None:
    # s -> a -> (p1, p2) approvals: the second one reached is queued while the first is pending.
    wf = flow([start(), agent("a"), approval("p1"), approval("p2"), agent("after1"), agent("after2")],
              [link("s", "a"), link("a", "p1"), link("a", "p2"), link("p1", "after1", "approve"),
               link("p2", "after2", "reject")])
    _, events = run_events(wf)
    r = RunReplay(wf, events)
    assert r.status == "paused"
    assert sorted(r.states[n] for n in ("p1", "p2")) == ["queued", "waiting"]
    assert {("a", "output", "p1"), ("a", "output", "p2")} <= r.links

    _, events = run_events(wf, decisions=["approve", "reject"])
    r = RunReplay(wf, events)
    assert r.status == "completed"
    assert r.states["after1"] == "done" and r.states["after2"] == "done"
    assert {("p1", "approve", "after1"), ("p2", "reject", "after2")} <= r.links


def test_subagent_calls_mark_children_and_subagent_links() -> None:
    wf = load_workflow(SAMPLES / "research.flow.json")
    _, events = run_events(wf)
    r = RunReplay(wf, events)
    assert r.status == "completed"
    assert set(r.states.values()) == {"done"}
    assert {("lead", "subagent", "facts"), ("lead", "subagent", "skeptic"), ("lead", "output", "writer")} <= r.links


def test_legacy_true_handle_and_loop_counts_visits() -> None:
    raw = {"nodes": [start(text="go"), cond("c", ("contains", "go")), agent("a")],
           "connections": [link("s", "c"), {"source": "c", "target": "a", "sourceHandle": "true"}]}
    from engine import parse_workflow

    wf = parse_workflow(raw)
    _, events = run_events(wf)
    r = RunReplay(wf, events)
    assert r.states["a"] == "done"
    handle = next(c.sourceHandle for c in wf.connections if c.target == "a")
    assert ("c", handle or "output", "a") in r.links

    loop = flow([start(text="x"), agent("a")], [link("s", "a"), link("a", "a")])
    _, events = run_events(loop, max_visits=3)
    r = RunReplay(loop, events)
    assert r.visits["a"] == 3 and r.states["a"] == "failed" and r.status == "failed"
    assert ("a", "output", "a") in r.links


def test_replay_module_imports_no_qt() -> None:
    code = "import sys, editor.history.replay, editor.history; assert not any(m.startswith('PySide6') for m in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], check=False, cwd=ROOT, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert res.returncode == 0, res.stderr


def test_unknown_event_content_is_ignored() -> None:
    wf = flow([start(), agent("a")], [link("s", "a")])
    events = [RunEvent("s", "step_start", "Start"), RunEvent("a", "subagent_call_start", "not json"),
              RunEvent("a", "input_received", json.dumps({"decision": "maybe"})), RunEvent("a", "step_start", "a")]
    r = RunReplay(wf, events)
    assert r.states == {"s": "done", "a": "running"} and r.links == {("s", "output", "a")}
