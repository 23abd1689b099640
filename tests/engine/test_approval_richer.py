"""Richer approvals (docs/design.md, "Serving, inbox and schedules"): options as handles,
timeouts that take ``onTimeout`` (in-process, across a restore, across a kill -9 of
``flowdesk run``), and ``flowdesk inbox [--json]``."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from engine import Run, RunState, RunStore, parse_workflow, spec_for, validate
from engine.flows.inbox import answer_stored, expire_overdue, local_items
from engine.llm.echo import EchoProvider

ROOT = Path(__file__).resolve().parents[2]


def approval_flow(*, options: Any = ("Later",), timeout_ms: int | None = None, on_timeout: str | None = None) -> dict:
    data: dict[str, Any] = {"prompt": "Ship it?"}
    if options:
        data["options"] = list(options)
    if timeout_ms is not None:
        data["timeoutMs"] = timeout_ms
    if on_timeout is not None:
        data["onTimeout"] = on_timeout
    return {
        "name": "Richer approval",
        "nodes": [
            {"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "draft"}},
            {"id": "ask", "type": "approval", "x": 200, "y": 0, "data": data},
            {"id": "yes", "type": "agent", "x": 400, "y": 0, "data": {"userPrompt": "yes {{APPROVAL_NOTE}}"}},
            {"id": "no", "type": "agent", "x": 400, "y": 100, "data": {"userPrompt": "no {{APPROVAL_DECISION}}"}},
            {
                "id": "later",
                "type": "agent",
                "x": 400,
                "y": 200,
                "data": {"userPrompt": "later {{APPROVAL_DECISION}} {{APPROVAL_NOTE}}"},
            },
        ],
        "connections": [
            {"source": "start", "target": "ask", "sourceHandle": "output", "targetHandle": "input"},
            {"source": "ask", "target": "yes", "sourceHandle": "approve", "targetHandle": "input"},
            {"source": "ask", "target": "no", "sourceHandle": "reject", "targetHandle": "input"},
            {"source": "ask", "target": "later", "sourceHandle": "Later", "targetHandle": "input"},
        ],
    }


def responses(run: Run) -> dict[str, str]:
    return {e.node_id: e.content for e in run.events if e.type == "llm_response"}


def flowdesk(*args: str, timeout: float = 60, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "editor.launcher", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )


@pytest.fixture
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A run history of this test's own (subprocesses inherit it)."""
    d = tmp_path / "data"
    monkeypatch.setenv("FLOWDESK_DATA_DIR", str(d))
    return d


# ---------------------------------------------------------------------------------- options
def test_options_are_handles_and_a_label_is_a_decision() -> None:
    wf = parse_workflow(approval_flow(options=["Later", "Escalate"]))
    assert spec_for("approval").outputs(wf.node("ask").data) == ("approve", "reject", "Later", "Escalate")
    codes = [i.code for i in validate(wf)]
    assert "approval_option_unlinked" in codes  # Escalate has no branch: a warning, not an error
    assert not [i for i in validate(wf) if i.is_error]

    async def go() -> Run:
        run = Run(wf, EchoProvider())
        assert await run.start() == "paused"
        assert run.decisions() == ("approve", "reject", "Later", "Escalate")
        with pytest.raises(ValueError, match="'Later'"):
            await run.resume("tomorrow")
        assert run.status == "paused"  # a decision it does not take changes nothing
        assert await run.resume("later", "next week") == "completed"  # case-insensitive
        return run

    run = asyncio.run(go())
    received = next(e for e in run.events if e.type == "input_received")
    assert json.loads(received.content) == {"decision": "Later", "note": "next week"}
    assert received.extra["handle"] == "Later"
    assert responses(run) == {"later": "later Later next week"}
    asked = next(e for e in run.events if e.type == "wait_input")
    assert asked.extra == {"options": ["Later", "Escalate"]}
    state = RunState(wf)
    state.apply_many(run.events)
    assert ("ask", "Later", "later") in state.links  # the option's link is drawn as followed


def test_option_rules() -> None:
    wf = approval_flow(options=["Later", "later", "Approve", "", "a:b"], on_timeout="never")
    issues = validate(parse_workflow(wf))
    errors = {i.code for i in issues if i.is_error}
    warnings = {i.code for i in issues if not i.is_error}
    assert {
        "approval_option_duplicate",
        "approval_option_reserved",
        "approval_option_empty",
        "approval_bad_on_timeout",
    } <= errors
    assert {"approval_option_colon", "approval_on_timeout_unused"} <= warnings
    negative = validate(parse_workflow(approval_flow(timeout_ms=-5, on_timeout="approve")))
    bad = [i for i in negative if i.code == "approval_bad_timeout"]
    assert len(bad) == 1 and bad[0].message.endswith("timeoutMs must be a whole number of milliseconds, 0 or more.")
    # a plain approval stays as AgentFlow writes it: no new fields on save
    plain = parse_workflow(approval_flow(options=None))
    assert plain.node("ask").data.model_dump(mode="json", exclude_none=True) == {"prompt": "Ship it?"}


# ---------------------------------------------------------------------------------- timeouts in process
def test_timeout_takes_on_timeout_in_process_and_after_restore() -> None:
    wf = parse_workflow(approval_flow(timeout_ms=300, on_timeout="approve"))

    async def go() -> tuple[Run, Run, dict]:
        now = [1000.0]
        run = Run(wf, EchoProvider(), clock=lambda: now[0])
        assert await run.start() == "paused"
        assert run.pause_timeout() == (1000.3, "approve")
        snap = run.snapshot()
        assert snap["pending"]["deadline"] == 1000.3 and snap["pending"]["onTimeout"] == "approve"
        assert await run.expire() == "paused"  # not yet
        now[0] = 1000.5
        assert await run.expire() == "completed"
        # restored in another "process" after the deadline: the next resume takes onTimeout
        later = Run.restore(json.loads(json.dumps(snap)), EchoProvider(), clock=lambda: 1001.0)
        assert later.overdue() and later.pause_timeout() == (1000.3, "approve")
        assert await later.resume("reject", "too late") == "completed"
        return run, later, snap

    run, later, _snap = asyncio.run(go())
    for r in (run, later):
        received = next(e for e in r.events if e.type == "input_received")
        assert json.loads(received.content) == {"decision": "approve", "note": "", "timedOut": True}
        assert received.extra["timedOut"] is True
        assert responses(r) == {"yes": "yes "}
    asked = next(e for e in run.events if e.type == "wait_input")
    assert asked.extra["onTimeout"] == "approve" and asked.extra["deadline"].endswith("Z")


# ---------------------------------------------------------------------------------- the command line
def test_cli_decide_label_and_bad_label(tmp_path: Path, data_dir: Path) -> None:
    path = tmp_path / "opt.flow.json"
    path.write_text(json.dumps(approval_flow()))
    res = flowdesk("run", str(path), "--provider", "echo", "--decide", "Later:soon", "--jsonl")
    assert res.returncode == 0, res.stderr
    events = [json.loads(line) for line in res.stdout.splitlines()]
    assert any(e["type"] == "llm_response" and e["content"] == "later Later soon" for e in events)
    res = flowdesk("run", str(path), "--provider", "echo", "--decide", "Someday")
    assert res.returncode == 2 and "'Later'" in res.stderr and "Traceback" not in res.stderr
    run_id = res.stderr.split("flowdesk resume ")[1].split()[0]
    # resume refuses a label it does not take before claiming the run; then takes one it does
    res = flowdesk("resume", run_id, "--decide", "nope")
    assert res.returncode == 2 and "'Later'" in res.stderr
    res = flowdesk("resume", run_id, "--decide", "LATER:from the cli", "--jsonl")
    assert res.returncode == 0, res.stderr
    assert '"later Later from the cli"' in res.stdout


def test_cli_run_waits_for_the_deadline(tmp_path: Path, data_dir: Path) -> None:
    path = tmp_path / "t.flow.json"
    path.write_text(json.dumps(approval_flow(timeout_ms=1500, on_timeout="Later")))
    began = time.monotonic()
    res = flowdesk("run", str(path), "--provider", "echo", "--jsonl")
    assert res.returncode == 0, res.stderr
    assert time.monotonic() - began >= 1.4
    assert res.stderr.count("then it takes 'Later'") == 1  # said once
    events = [json.loads(line) for line in res.stdout.splitlines()]
    received = next(e for e in events if e["type"] == "input_received")
    assert json.loads(received["content"]) == {"decision": "Later", "note": "", "timedOut": True}


def _start_paused_run(path: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    """A `flowdesk run` waiting at an approval's deadline; its run id once the pause is stored."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "editor.launcher", "run", str(path), "--provider", "echo"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", **env},
    )
    assert proc.stderr is not None
    line = proc.stderr.readline()  # "run ID is paused at approval 'ask' until ..." (after the pause is stored)
    assert "is paused at approval" in line, line
    return proc, line.split("run ")[1].split()[0]


def test_timeout_across_kill_and_inbox(tmp_path: Path, data_dir: Path) -> None:
    path = tmp_path / "k.flow.json"
    # 15 s: room for two `flowdesk inbox` on a loaded machine before the deadline
    path.write_text(json.dumps(approval_flow(timeout_ms=15000, on_timeout="reject")))
    proc, run_id = _start_paused_run(path, {})
    try:
        res = flowdesk("inbox", "--json")
        assert res.returncode == 0, res.stderr
        items = json.loads(res.stdout)
        assert [i["runId"] for i in items] == [run_id]
        item = items[0]
        assert {"runId", "flow", "nodeId", "prompt", "waitingSince", "ageS", "where"} <= set(item)
        assert (item["flow"], item["nodeId"], item["prompt"], item["where"]) == (
            "Richer approval",
            "ask",
            "Ship it?",
            "local",
        )
        assert item["options"] == ["Later"] and item["onTimeout"] == "reject" and item["ageS"] >= 0
        text = flowdesk("inbox")
        assert run_id[:12] in text.stdout and "Ship it?" in text.stdout and "flowdesk resume" in text.stdout
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)
    store = RunStore()
    assert store.get_run(run_id).status == "paused"  # killed while waiting: still paused, state saved
    deadline = store.snapshot_of(run_id)["pending"]["deadline"]
    time.sleep(max(0.0, deadline - time.time() + 0.2))
    # listed after the deadline (its process gone): it takes onTimeout and goes on
    res = flowdesk("inbox", "--json")
    assert res.returncode == 0 and json.loads(res.stdout) == []
    info = store.get_run(run_id)
    assert info.status == "completed"
    received = [e for e in store.events(run_id) if e.type == "input_received"]
    assert json.loads(received[-1].content) == {"decision": "reject", "note": "", "timedOut": True}
    assert any(e.type == "llm_response" and e.content == "no reject" for e in store.events(run_id))


def test_resume_after_the_deadline_takes_on_timeout(tmp_path: Path, data_dir: Path) -> None:
    path = tmp_path / "r.flow.json"
    path.write_text(json.dumps(approval_flow(timeout_ms=1200, on_timeout="reject")))
    proc, run_id = _start_paused_run(path, {})
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    time.sleep(1.4)
    res = flowdesk("resume", run_id, "--decide", "approve", "--jsonl")
    assert res.returncode == 0, res.stderr
    assert "timed out" in res.stderr and "'approve' is not used" in res.stderr
    assert '"no reject"' in res.stdout


def test_inbox_answers_and_lists_oldest_first(tmp_path: Path, data_dir: Path) -> None:
    path = tmp_path / "o.flow.json"
    path.write_text(json.dumps(approval_flow()))
    ids = []
    for _ in range(2):
        res = flowdesk("run", str(path), "--provider", "echo")
        assert res.returncode == 3, res.stderr
        ids.append(res.stderr.split("flowdesk resume ")[1].split()[0])
    store = RunStore()
    items = local_items(store)
    assert [i.run_id for i in items] == ids  # oldest first
    status = asyncio.run(answer_stored(store, ids[1], "Later", "via the inbox"))
    assert status == "completed"
    assert [i.run_id for i in local_items(store)] == ids[:1]
    assert any(e.content == "later Later via the inbox" for e in store.events(ids[1]))
    with pytest.raises(ValueError):
        asyncio.run(answer_stored(store, ids[0], "Never"))
    assert store.get_run(ids[0]).status == "paused"  # refused before it was claimed
    assert asyncio.run(expire_overdue(store)) == []  # nothing times out here


def test_an_approval_inside_a_flow_step_times_out_with_its_parent(tmp_path: Path) -> None:
    child = approval_flow(options=["Later"], timeout_ms=200, on_timeout="Later")
    (tmp_path / "child.flow.json").write_text(json.dumps(child))
    parent = parse_workflow(
        {
            "name": "Parent",
            "nodes": [
                {"id": "s", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "go"}},
                {"id": "sub", "type": "flow", "x": 200, "y": 0, "data": {"flow": "child.flow.json"}},
            ],
            "connections": [{"source": "s", "target": "sub", "sourceHandle": "output", "targetHandle": "input"}],
        }
    )

    async def go() -> Run:
        now = [50.0]
        run = Run(parent, EchoProvider(), clock=lambda: now[0], path=str(tmp_path / "parent.flow.json"))
        assert await run.start() == "paused"
        assert run.decisions() == ("approve", "reject", "Later")
        assert run.pause_timeout() == (50.2, "Later")
        snap = json.loads(json.dumps(run.snapshot()))
        later = Run.restore(snap, EchoProvider(), clock=lambda: 51.0, path=str(tmp_path / "parent.flow.json"))
        assert await later.expire() == "completed"
        return later

    run = asyncio.run(go())
    received = [json.loads(e.content) for e in run.events if e.type == "input_received"]
    assert {"decision": "Later", "note": "", "timedOut": True} in received
    assert run.outputs["sub"] == "later Later "
