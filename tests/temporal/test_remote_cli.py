"""The command line of remote runs as a user meets it (issue 30, items 16-20): an edited
approval, an agent calling library flows, a flow step's relative path, Ctrl+C while following,
the run list's tokens, cost and order, a task queue with no worker, ``show`` of a remote id."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

from engine import EchoProvider, FlowLibrary, Run, RunStatus, parse_workflow
from tests.engine.flows import agent, approval, link, start

from .conftest import ROOT, WorkerProcess, needs_temporal

pytestmark = needs_temporal

_LAUNCHER = "import sys; from editor.launcher import main; sys.exit(main())"  # the `flowdesk` entry point


def _cli(*args, cwd=ROOT, env=None, timeout=90):
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env} if env else None,
    )


def _write(path: Path, nodes, links, name: str) -> Path:
    path.write_text(json.dumps({"name": name, "nodes": nodes, "connections": links}), encoding="utf-8")
    return path


def _run_id(stderr: str) -> str:
    return re.search(r"run ([0-9a-f]{32}) submitted", stderr).group(1)


def test_resume_temporal_with_output_applies_the_edit(temporal_server, worker, tmp_path):
    path = _write(
        tmp_path / "review.flow.json",
        [
            start(text="draft"),
            agent("w", "write {{PREVIOUS_OUTPUT}}"),
            approval("ap", "ok?"),
            agent("after", "final: {{PREVIOUS_OUTPUT}}"),
        ],
        [link("s", "w"), link("w", "ap"), link("ap", "after", "approve")],
        "Edited review",
    )
    first = _cli("run", str(path), "--temporal", temporal_server, "--task-queue", "shared", "--provider", "echo")
    assert first.returncode == 3, first.stderr
    run_id = _run_id(first.stderr)
    second = _cli(
        "resume",
        run_id,
        "--temporal",
        temporal_server,
        "--decide",
        "approve:tightened",
        "--output",
        "THE EDITED TEXT",
        "--jsonl",
    )
    assert second.returncode == 0, second.stderr
    events = [json.loads(line) for line in second.stdout.splitlines() if line.startswith("{")]
    received = next(e for e in events if e["type"] == "input_received")
    assert json.loads(received["content"]) == {"decision": "approve", "note": "tightened", "edited": True}
    assert received["edited"] is True and received["output"] == "THE EDITED TEXT"
    answer = next(e for e in events if e["type"] == "llm_response" and e["nodeId"] == "after")
    assert answer["content"] == "final: THE EDITED TEXT"


def _lookup_flow():
    return parse_workflow(
        {
            "name": "Weather lookup",
            "description": "Looks up the weather for a city.",
            "nodes": [
                {
                    "id": "s",
                    "type": "start",
                    "data": {
                        "initialInput": "weather",
                        "variables": [
                            {"name": "city", "type": "string", "required": True, "description": "Which city"}
                        ],
                    },
                },
                {
                    "id": "a",
                    "type": "agent",
                    "data": {"agentName": "Inner", "userPrompt": "look up {{city}}", "model": "m", "provider": "echo"},
                },
            ],
            "connections": [{"source": "s", "target": "a"}],
        }
    )


def _caller(flow_id: str):
    return parse_workflow(
        {
            "name": "Caller",
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "Paris"}},
                {
                    "id": "lead",
                    "type": "agent",
                    "data": {
                        "agentName": "Lead",
                        "userPrompt": "{{PREVIOUS_OUTPUT}}",
                        "model": "m",
                        "provider": "echo",
                        "tools": {"web_search": False, "subagents": False, "flows": [flow_id]},
                    },
                },
            ],
            "connections": [{"source": "s", "target": "lead"}],
        }
    )


async def test_agent_with_flows_as_tools_runs_on_temporal(temporal_server, tmp_path):
    """The activity rebuilds the flow tools and runs the called flow nested on the worker: the
    same events as locally, the nested run's with their run path."""
    from .test_remote_runs import _comparable, _remote

    data = tmp_path / "data"
    lib = FlowLibrary([data / "library"])
    entry = lib.save(_lookup_flow())
    wf = _caller(entry.id)
    local = Run(wf, EchoProvider(), library=lib)
    assert await local.start() == RunStatus.COMPLETED, local.error
    w = WorkerProcess(temporal_server, "flowtools", env={"FLOWDESK_DATA_DIR": str(data)})
    try:
        remote, status = await _remote(temporal_server, wf, [], task_queue="flowtools")
    finally:
        w.stop()
    assert status == "completed", [e.content for e in remote if e.type in ("error", "llm_error")]
    calls = [(e.node_id, e.type) for e in remote if e.type.startswith("flow_call_")]
    assert calls == [("lead", "flow_call_start"), ("lead", "flow_call_end")]
    assert next(e for e in remote if e.type == "flow_call_end").content == "look up Paris"
    nested = [e for e in remote if e.path]
    assert nested and all(re.match(r"^lead\.call_1_[0-9a-f]{8}:[0-9a-f]{32}$", e.path) for e in nested)

    def shape(events):
        return [(n, t, c, x, "nested" if p else "") for n, t, c, x, p in _comparable(events)]

    assert shape(remote) == shape(local.events)


def test_run_temporal_resolves_a_flow_steps_relative_path_as_locally(temporal_server, worker, tmp_path):
    folder = tmp_path / "flows"
    folder.mkdir()
    _write(
        folder / "child.flow.json",
        [start(text="inner"), agent("c", "child got {{PREVIOUS_OUTPUT}}")],
        [link("s", "c")],
        "Child",
    )
    parent = _write(
        folder / "parent.flow.json",
        [start(text="cats"), {"id": "sub", "type": "flow", "data": {"flow": "child.flow.json"}}],
        [link("s", "sub")],
        "Parent",
    )
    # Started from another folder (the project's), as a user runs a file from anywhere.
    assert _cli("validate", str(parent)).returncode == 0
    local = _cli("run", str(parent), "--provider", "echo", "--no-store")
    assert local.returncode == 0, local.stderr
    remote = _cli("run", str(parent), "--temporal", temporal_server, "--task-queue", "shared", "--provider", "echo")
    assert remote.returncode == 0, remote.stderr
    assert "child got " in remote.stdout and "run_status  completed" in remote.stdout


def _interrupted(args, wait_for: str, timeout: float = 30):
    """The `flowdesk` entry point run with ``args``, sent SIGINT once stderr shows ``wait_for``."""
    tmp = Path(tempfile.gettempdir()) / f"flowdesk-sigint-{uuid.uuid4().hex}.log"
    with open(tmp, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-c", _LAUNCHER, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=err)
        try:
            deadline = time.monotonic() + timeout
            while wait_for not in tmp.read_text(errors="replace"):
                assert proc.poll() is None and time.monotonic() < deadline, tmp.read_text(errors="replace")
                time.sleep(0.1)
            time.sleep(0.5)  # following, inside the event loop
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=20)
        finally:
            if proc.poll() is None:
                proc.kill()
    text = tmp.read_text(errors="replace")
    tmp.unlink()
    return proc.returncode, out.decode(errors="replace"), text


def test_ctrl_c_during_run_temporal_and_follow_stops_following_only(temporal_server, tmp_path):
    path = _write(
        tmp_path / "slow.flow.json", [start(text="hi"), agent("a", "{{PREVIOUS_OUTPUT}}")], [link("s", "a")], "Waits"
    )
    # No worker on this queue: the run waits on the server, and goes on waiting after Ctrl+C.
    code, _out, err = _interrupted(
        ["run", str(path), "--temporal", temporal_server, "--task-queue", "nobody", "--provider", "echo"], "submitted"
    )
    assert code == 4, err
    assert "Traceback" not in err and "flowdesk: cancelled" not in err
    run_id = _run_id(err)
    assert f"stopped following; run {run_id} goes on on the server" in err
    assert f"follow it with: flowdesk follow {run_id} --temporal {temporal_server}" in err
    assert f"cancel it with: flowdesk cancel {run_id} --temporal {temporal_server}" in err
    code, _out, err = _interrupted(["follow", run_id, "--temporal", temporal_server], "no worker is polling")
    assert code == 4, err
    assert "Traceback" not in err and f"follow it with: flowdesk follow {run_id}" in err
    listed = json.loads(_cli("runs", "--temporal", temporal_server, "--json").stdout)["runs"]
    assert next(r for r in listed if r["id"] == run_id)["status"] == "running"  # it goes on on the server
    assert _cli("cancel", run_id, "--temporal", temporal_server).returncode == 0


def test_run_on_a_task_queue_without_worker_says_so(temporal_server, tmp_path):
    path = _write(
        tmp_path / "w.flow.json", [start(text="hi"), agent("a", "{{PREVIOUS_OUTPUT}}")], [link("s", "a")], "No worker"
    )
    code, _out, err = _interrupted(
        ["run", str(path), "--temporal", temporal_server, "--task-queue", "empty-queue", "--provider", "echo"],
        "no worker is polling task queue empty-queue",
    )
    assert code == 4
    assert f"flowdesk worker --temporal {temporal_server} --task-queue empty-queue" in err
    _cli("cancel", _run_id(err), "--temporal", temporal_server)


def test_runs_temporal_shows_tokens_and_cost_newest_first(temporal_server, worker, tmp_path):
    paused = _write(
        tmp_path / "p.flow.json",
        [start(text="first"), approval("ap"), agent("x")],
        [link("s", "ap"), link("ap", "x", "approve")],
        "Open one",
    )
    done = _write(
        tmp_path / "d.flow.json",
        [start(text="second run"), agent("a", "{{PREVIOUS_OUTPUT}} twice")],
        [link("s", "a")],
        "Spent one",
    )
    first = _cli("run", str(paused), "--temporal", temporal_server, "--task-queue", "shared")
    assert first.returncode == 3, first.stderr  # left open (paused): the server lists open runs first
    second = _cli("run", str(done), "--temporal", temporal_server, "--task-queue", "shared", "--provider", "echo")
    assert second.returncode == 0, second.stderr
    open_id, done_id = _run_id(first.stderr), _run_id(second.stderr)
    listed = json.loads(_cli("runs", "--temporal", temporal_server, "--json").stdout)["runs"]
    started = [r["startedAt"] for r in listed]
    assert started == sorted(started, reverse=True)
    ids = [r["id"] for r in listed]
    assert ids.index(done_id) < ids.index(open_id)
    spent = next(r for r in listed if r["id"] == done_id)
    assert spent["tokens"] > 0 and spent["cost"] == 0  # priced as locally: the echo provider costs nothing
    table = _cli("runs", "--temporal", temporal_server).stdout
    assert "TOKENS · COST" in table
    row = next(line for line in table.splitlines() if line.startswith(done_id[:12]))
    assert f" {spent['tokens']:,} · $0 " in row
    _cli("cancel", open_id, "--temporal", temporal_server)


def test_show_of_a_remote_id_points_to_follow_temporal(tmp_path):
    run_id = uuid.uuid4().hex
    shown = _cli("show", run_id, env={"FLOWDESK_DATA_DIR": str(tmp_path / "data")})
    assert shown.returncode == 2
    assert f"flowdesk follow {run_id} --temporal HOST:PORT" in shown.stderr
    assert "Traceback" not in shown.stderr
