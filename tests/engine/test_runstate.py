"""RunState, the one run-state reducer: exact event sequences and real runs' logs (no Qt)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine import EchoProvider, Run, RunEvent, RunState, load_workflow, parse_workflow

from .flows import Recorder, agent, approval, cond, flow, link, start

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


def ev(node: str, kind: str, content: str = "", ts: float = 1.0, **extra) -> RunEvent:
    return RunEvent(node, kind, content, timestamp=ts, extra=extra or None)


# ---------------------------------------------------------------------- real runs' logs
def test_review_sample_paused_then_approved() -> None:
    wf = load_workflow(SAMPLES / "review.flow.json")
    _, events = run_events(wf)
    r = RunState.of(wf, events)
    assert r.status == "paused" and r.pending_approvals == ["signoff"] and r.waiting_for == "signoff"
    assert r.node_states() == {
        "start": "done",
        "triage": "done",
        "route": "done",
        "signoff": "waiting",
        "send": "idle",
        "revise": "idle",
        "general": "idle",
    }
    assert r.links == {
        ("start", "output", "triage"),
        ("triage", "output", "route"),
        ("route", "condition-0", "signoff"),
    }

    _, events = run_events(wf, decisions=["approve"])
    r = RunState.of(wf, events)
    assert r.status == "completed" and r.pending_approvals == []
    assert r.states["signoff"] == "done" and r.states["send"] == "done" and r.states["revise"] == "skipped"
    assert ("signoff", "approve", "send") in r.links and ("signoff", "reject", "revise") not in r.links
    assert r.outputs["send"].startswith("Final reply to send:")
    assert r.final_output == r.outputs["send"]


def test_else_branch_and_failure() -> None:
    wf = flow(
        [start(text="nothing here"), cond("c", ("contains", "refund")), agent("yes"), agent("no")],
        [link("s", "c"), link("c", "yes", "condition-0"), link("c", "no", "false")],
    )
    _, events = run_events(wf, Recorder(fail={"no": "boom"}))
    r = RunState.of(wf, events)
    assert r.node_states() == {"s": "done", "c": "done", "yes": "skipped", "no": "failed"}
    assert r.links == {("s", "output", "c"), ("c", "false", "no")}
    assert r.status == "failed" and "boom" in r.errors["no"] and "boom" in (r.error or "")


def test_fan_out_queued_approvals_in_order() -> None:
    # s -> a -> (p1, p2) approvals: the second one reached is queued while the first is pending.
    wf = flow(
        [start(), agent("a"), approval("p1"), approval("p2"), agent("after1"), agent("after2")],
        [
            link("s", "a"),
            link("a", "p1"),
            link("a", "p2"),
            link("p1", "after1", "approve"),
            link("p2", "after2", "reject"),
        ],
    )
    run, events = run_events(wf)
    r = RunState.of(wf, events)
    assert r.status == "paused"
    assert r.pending_approvals == [run.pending_approval, *run.queued_approvals]
    assert [r.states[n] for n in r.pending_approvals] == ["waiting", "queued"]
    assert {("a", "output", "p1"), ("a", "output", "p2")} <= r.links

    _, events = run_events(wf, decisions=["approve", "reject"])
    r = RunState.of(wf, events)
    assert r.status == "completed" and r.pending_approvals == []
    assert r.states["after1"] == "done" and r.states["after2"] == "done"
    assert {("p1", "approve", "after1"), ("p2", "reject", "after2")} <= r.links


def test_subagent_calls_mark_children_links_and_the_call_tree() -> None:
    wf = load_workflow(SAMPLES / "research.flow.json")
    _, events = run_events(wf)
    r = RunState.of(wf, events)
    assert r.status == "completed"
    assert set(r.node_states().values()) == {"done"}
    assert {("lead", "subagent", "facts"), ("lead", "subagent", "skeptic"), ("lead", "output", "writer")} <= r.links
    tree = [(c.node_id, c.parent_node_id, level, c.state) for c, level in r.call_tree()]
    assert sorted(tree) == [("facts", "lead", 0, "done"), ("skeptic", "lead", 0, "done")]


def test_legacy_true_handle_and_loop_counts_visits() -> None:
    raw = {
        "nodes": [start(text="go"), cond("c", ("contains", "go")), agent("a")],
        "connections": [link("s", "c"), {"source": "c", "target": "a", "sourceHandle": "true"}],
    }
    wf = parse_workflow(raw)
    _, events = run_events(wf)
    r = RunState.of(wf, events)
    assert r.states["a"] == "done"
    handle = next(c.sourceHandle for c in wf.connections if c.target == "a")
    assert ("c", handle or "output", "a") in r.links

    loop = flow([start(text="x"), agent("a")], [link("s", "a"), link("a", "a")])
    _, events = run_events(loop, max_visits=3)
    r = RunState.of(loop, events)
    assert r.visits["a"] == 3 and r.states["a"] == "failed" and r.status == "failed"
    assert ("a", "output", "a") in r.links


def test_module_imports_no_qt() -> None:
    code = "import sys, engine.run.state; assert not any(m.startswith('PySide6') for m in sys.modules)"
    res = subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )
    assert res.returncode == 0, res.stderr


# ---------------------------------------------------------------------- exact sequences
def test_unknown_event_content_is_ignored() -> None:
    wf = flow([start(), agent("a")], [link("s", "a")])
    r = RunState.of(
        wf,
        [
            ev("s", "step_start", "Start"),
            ev("a", "subagent_call_start", "not json"),
            ev("a", "input_received", json.dumps({"decision": "maybe"})),
            ev("a", "step_start", "a"),
        ],
    )
    assert r.states == {"s": "done", "a": "running"} and r.links == {("s", "output", "a")}


def test_pause_defers_links_until_their_target_starts_then_resume() -> None:
    wf = flow(
        [start(), approval("ap"), agent("a"), agent("b")], [link("s", "ap"), link("s", "a"), link("ap", "b", "approve")]
    )
    r = RunState(wf)
    r.apply_many(
        [
            ev("system", "run_status", "running", 1.0),
            ev("s", "step_start", "Start", 1.0),
            ev("ap", "step_start", "Approval", 1.1),
            ev("ap", "wait_input", "ok?", 1.1),
            ev("system", "run_status", "paused", 1.1),
        ]
    )
    # s offered a; a has not started (deferred while paused): the link is not followed yet
    assert r.status == "paused" and r.pending_approvals == ["ap"]
    assert r.links == {("s", "output", "ap")} and r.state_of("a") == "idle"
    r.apply_many(
        [
            ev("ap", "input_received", json.dumps({"decision": "approve", "note": ""}), 2.0, handle="approve"),
            ev("system", "run_status", "running", 2.0),
            ev("a", "step_start", "a", 2.1),
            ev("b", "step_start", "b", 2.1),
        ]
    )
    assert r.pending_approvals == [] and r.states["ap"] == "done" and r.details["ap"].visits == 1
    assert r.links == {("s", "output", "ap"), ("s", "output", "a"), ("ap", "approve", "b")}
    assert r.states["a"] == r.states["b"] == "running"
    r.apply_many(
        [
            ev("a", "llm_response", "A", 3.0, usage={"prompt_tokens": 3, "completion_tokens": 4}),
            ev("b", "llm_response", "B", 3.5),
            ev("system", "run_status", "completed", 3.5),
        ]
    )
    assert r.node_states() == {"s": "done", "ap": "done", "a": "done", "b": "done"}
    assert r.details["a"].tokens == 7 and r.details["a"].duration == pytest.approx(0.9)
    assert r.started_at == 1.0 and r.ended_at == 3.5 and r.final_output == "B"


def test_queued_approval_is_asked_next() -> None:
    wf = flow([start(), approval("p1"), approval("p2")], [link("s", "p1"), link("s", "p2")])
    r = RunState(wf)
    r.apply_many(
        [
            ev("s", "step_start"),
            ev("p1", "step_start"),
            ev("p1", "wait_input", "ok?"),
            ev("system", "run_status", "paused"),
            ev("p2", "step_start"),
            ev("p2", "approval_queued", "Another approval is pending"),
        ]
    )
    assert r.pending_approvals == ["p1", "p2"] and (r.states["p1"], r.states["p2"]) == ("waiting", "queued")
    r.apply_many(
        [
            ev("p1", "input_received", '{"decision": "reject", "note": "no"}', handle="reject"),
            ev("system", "run_status", "running"),
            ev("p2", "wait_input", "ok?"),
            ev("system", "run_status", "paused"),
        ]
    )
    assert r.pending_approvals == ["p2"] and r.states["p2"] == "waiting" and r.states["p1"] == "done"


def test_failure_marks_the_node_and_skips_the_rest() -> None:
    wf = flow([start(), agent("a"), agent("b")], [link("s", "a"), link("a", "b")])
    r = RunState(wf)
    r.apply_many(
        [
            ev("s", "step_start", ts=1.0),
            ev("a", "step_start", ts=1.0),
            ev("a", "start_prompt", "hi", 1.0),
            ev("a", "llm_error", "HTTP 500", 2.0),
            ev("a", "error", "Agent 'a' failed: HTTP 500", 2.0),
            ev("system", "run_status", "failed", 2.0, detail="Agent 'a' failed: HTTP 500"),
        ]
    )
    assert r.node_states() == {"s": "done", "a": "failed", "b": "skipped"}
    d = r.node_details("a")
    assert d["input"] == "hi" and d["error"] == "HTTP 500" and d["duration"] == pytest.approx(1.0)
    assert r.error == "Agent 'a' failed: HTTP 500"


def test_cancel_ends_running_and_waiting_nodes_cancelled() -> None:
    wf = flow([start(), agent("a"), approval("ap"), agent("c")], [link("s", "a"), link("s", "ap"), link("a", "c")])
    r = RunState(wf)
    r.apply_many(
        [
            ev("s", "step_start"),
            ev("a", "step_start"),
            ev("ap", "step_start"),
            ev("ap", "wait_input"),
            ev("system", "run_status", "cancelled", 2.0, detail="Cancelled by the user."),
        ]
    )
    assert r.node_states() == {"s": "done", "a": "cancelled", "ap": "cancelled", "c": "skipped"}
    assert r.pending_approvals == [] and r.details["a"].error == "Cancelled." and r.error == "Cancelled by the user."


def test_subagent_tree_from_typed_fields() -> None:
    wf = flow(
        [start(), agent("lead", subagents=True), agent("mid", subagents=True), agent("leaf")],
        [link("s", "lead"), link("lead", "mid", "subagent"), link("mid", "leaf", "subagent")],
    )

    def call(kind: str, parent: str, child: str, cid: str, pcid: str | None, depth: int, msg: str) -> RunEvent:
        return ev(
            parent,
            kind,
            msg,
            parentNodeId=parent,
            subagentNodeId=child,
            subagentName=child.title(),
            callId=cid,
            parentCallId=pcid,
            depth=depth,
        )

    r = RunState(wf)
    r.apply_many(
        [
            ev("s", "step_start"),
            ev("lead", "step_start"),
            call("subagent_call_start", "lead", "mid", "c1", None, 1, "go"),
            call("subagent_call_start", "mid", "leaf", "c2", "c1", 2, "deeper"),
            call("subagent_call_error", "mid", "leaf", "c2", "c1", 2, "boom"),
        ]
    )
    assert r.states["mid"] == "running" and r.states["leaf"] == "failed"
    r.apply_many(
        [call("subagent_call_end", "lead", "mid", "c1", None, 1, "mid answer"), ev("lead", "llm_response", "final")]
    )
    assert [(c.call_id, level, c.state, c.input, c.output or c.error) for c, level in r.call_tree()] == [
        ("c1", 0, "done", "go", "mid answer"),
        ("c2", 1, "failed", "deeper", "boom"),
    ]
    assert {("lead", "subagent", "mid"), ("mid", "subagent", "leaf")} <= r.links
    assert r.details["mid"].output == "mid answer" and r.details["leaf"].error == "boom"


def test_old_format_stored_and_imported_events_are_read_once_at_the_boundary() -> None:
    wf = flow(
        [
            start(),
            cond("c", ("contains", "x")),
            agent("yes"),
            agent("lead", subagents=True),
            agent("kid"),
            approval("ap"),
            agent("after"),
        ],
        [
            link("s", "c"),
            link("c", "yes", "true"),
            link("yes", "lead"),
            link("lead", "kid", "subagent"),
            link("lead", "ap"),
            link("ap", "after", "approve"),
        ],
    )
    sub = json.dumps(
        {
            "type": "subagent_call_start",
            "parentNodeId": "lead",
            "subagentNodeId": "kid",
            "subagentName": "Kid",
            "callId": "c1",
            "parentCallId": None,
            "depth": 1,
            "message": "hi kid",
        },
        ensure_ascii=False,
    )
    # rows as an older Flowdesk stored them: the wire form in content, no typed fields
    rows = [
        ("s", "step_start", "Start", 1.0, None),
        ("c", "step_start", "Condition", 1.0, None),
        ("c", "logic_check", "Condition 1: contains 'x' → matched", 1.0, None),
        ("yes", "step_start", "Yes", 1.0, None),
        ("yes", "llm_response", "ok", 1.0, None),
        ("lead", "step_start", "Lead", 1.0, None),
        ("lead", "subagent_call_start", sub, 1.1, None),
        ("lead", "llm_response", "done", 1.2, None),
        ("ap", "step_start", "ap", 1.3, None),
        ("ap", "wait_input", "ok?", 1.3, None),
        ("ap", "input_received", json.dumps({"decision": "approve", "note": ""}), 2.0, None),
        ("after", "step_start", "after", 2.0, None),
    ]
    events = [RunEvent.from_stored(n, t, c, ts, x) for n, t, c, ts, x in rows]
    start_call = events[6]
    assert start_call.content == "hi kid" and start_call.extra["subagentNodeId"] == "kid"
    assert start_call.to_wire()["content"] == sub  # written out again exactly as it was read
    assert start_call.stored() == (sub, None)
    r = RunState.of(wf, events)
    assert r.links == {
        ("s", "output", "c"),
        ("c", "condition-0", "yes"),
        ("yes", "output", "lead"),
        ("lead", "subagent", "kid"),
        ("lead", "output", "ap"),
        ("ap", "approve", "after"),
    }
    assert r.details["kid"].input == "hi kid" and r.states["after"] == "running"
    # the same through the AgentFlow wire form (an imported record)
    wired = [
        RunEvent.from_wire({"timestamp": "2026-01-01T00:00:00.000Z", "nodeId": n, "type": t, "content": c})
        for n, t, c, _, _ in rows
    ]
    assert wired == events
    assert RunState.of(wf, wired).links == r.links


def test_events_of_a_nested_run_path_do_not_collide() -> None:
    wf = flow([start(), agent("a")], [link("s", "a")])
    r = RunState(wf)
    r.apply_many(
        [
            ev("s", "step_start"),
            RunEvent("a", "step_start", "a", timestamp=1.0, path="sub/1"),
            RunEvent("a", "llm_error", "inner", timestamp=1.0, path="sub/1"),
        ]
    )
    assert r.states == {"s": "done"} and r.children["sub/1"].states == {"a": "failed"}
    nested = RunEvent("a", "step_start", "a", timestamp=1.0, path="sub/1")
    assert nested.path == "sub/1" and nested.to_wire()["path"] == "sub/1"
    assert "path" not in ev("a", "step_start").to_wire()
    assert RunEvent.from_wire(nested.to_wire()) == nested
    assert RunEvent.from_stored("a", "step_start", "a", 1.0, nested.stored()[1]) == nested


def test_a_provider_that_could_not_serve_a_nested_run_is_the_runs_problem() -> None:
    # (the console offers another provider for the run it shows: a subflow's step failed to reach it)
    wf = flow([start(), agent("a")], [link("s", "a")])
    r = RunState(wf)
    r.apply_many(
        [
            ev("s", "step_start"),
            RunEvent(
                "a",
                "llm_error",
                "Could not connect",
                timestamp=1.0,
                path="sub/1",
                extra_json='{"providerUnavailable": true, "provider": "ollama"}',
            ),
        ]
    )
    assert r.children["sub/1"].provider_problem == {
        "node": "a",
        "message": "Could not connect",
        "provider": "ollama",
        "model": None,
    }
    assert r.provider_problem == r.children["sub/1"].provider_problem
    plain = RunState(wf)
    plain.apply(RunEvent("a", "llm_error", "model 'x' not found", timestamp=1.0, path="sub/1"))
    assert plain.provider_problem is None


def test_durations_read_the_same_everywhere() -> None:
    """engine.format_duration: what the history, console, compare view, timeline and CLI show."""
    from engine import format_duration

    cases = {
        0.0004: "0 ms",
        0.04: "40 ms",
        0.9994: "999 ms",
        0.9996: "1.0 s",
        9.94: "9.9 s",
        9.96: "10 s",
        42: "42 s",
        59.6: "1 min 00 s",
        61: "1 min 01 s",
        3599.6: "1 h 00 min",
        3725: "1 h 02 min",
        200000: "2 d 7 h",
        -1.5: "0 ms",
    }
    assert {s: format_duration(s) for s in cases} == cases
    assert format_duration(None) == "" and format_duration(None, "—") == "—"
    assert format_duration(float("nan"), "?") == "?"


def test_steps_that_log_no_input_show_what_reached_them() -> None:
    """A join's input is its branches' outputs in link order, a loop's the last value that came
    round, a condition's and an approval's the output before them (a condition passes it on)."""
    panel = load_workflow(SAMPLES / "panel.flow.json")
    _run, events = run_events(panel)
    state = RunState.of(panel, events)
    outs = state.outputs
    join = state.node_details("reviews")
    assert json.loads(join["input"]) == [outs["clarity"], outs["accuracy"], outs["tone"]]
    assert join["output"] == outs["reviews"]
    assert state.node_details("rounds")["input"] == outs["judge"]  # its last visit: the body's return
    assert state.node_details("start")["input"] is None

    review = load_workflow(SAMPLES / "review.flow.json")
    _run, events = run_events(review, decisions=["approve"])
    state = RunState.of(review, events)
    triage = state.outputs["triage"]
    assert state.node_details("route")["input"] == triage and state.node_details("route")["output"] == triage
    assert state.node_details("signoff")["input"] == triage
    assert state.node_details("revise")["input"] is None  # never reached

    # an approval whose reviewer edited the output passes that on
    wf = flow(
        [start(), approval("ap"), cond("c", ("contains", "x")), agent("a")],
        [link("s", "ap"), link("ap", "c", "approve"), link("c", "a", "condition-0")],
    )

    async def go() -> Run:
        run = Run(wf, EchoProvider())
        await run.start()
        await run.resume("approve", output="edited by the reviewer")
        return run

    state = RunState.of(wf, list(asyncio.run(go()).events or []))
    assert state.node_details("ap")["input"] == "hello"
    assert state.node_details("c")["input"] == "edited by the reviewer"
