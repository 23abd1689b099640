"""A tool call waiting for approval survives its process: ``flowdesk run`` killed (-9) while the
run waits, ``flowdesk resume --decide approve --arguments JSON`` in a new process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from engine.store import RunStore

from .conftest import stdio_server
from .helpers import agent

ROOT = Path(__file__).resolve().parents[2]


def _flow(path: Path) -> Path:
    wf = {
        "name": "ask first",
        "mcpServers": {"calc": stdio_server()},
        "nodes": [
            {"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "hello"}},
            agent("a", [{"server": "calc", "tools": ["echo"], "approve": "ask"}]),
        ],
        "connections": [{"source": "start", "target": "a", "sourceHandle": "output", "targetHandle": "input"}],
    }
    path.write_text(json.dumps(wf))
    return path


def _cli(*args: str, data: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "engine.cli", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "FLOWDESK_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)},
    )


def test_kill_9_while_waiting_then_resume_with_edited_arguments(tmp_path):
    data = tmp_path / "data"
    flow = _flow(tmp_path / "ask.flow.json")
    proc = _cli("run", str(flow), "--provider", "echo", data=data)
    deadline = time.monotonic() + 60
    run_id = None
    while time.monotonic() < deadline:
        if (data / "runs.db").exists():
            runs = RunStore(data / "runs.db").list_runs()
            if runs and runs[0].status == "paused" and RunStore(data / "runs.db").snapshot_of(runs[0].id):
                run_id = runs[0].id
                break
        time.sleep(0.1)
    assert run_id is not None, proc.stderr.read() if proc.poll() is not None else "no pause"
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)

    bad = _cli("resume", run_id, "--decide", "approve", "--arguments", '{"text": 5}', data=data)
    _out, err = bad.communicate(timeout=60)
    assert bad.returncode == 2 and "--arguments" in err and "input schema" in err
    assert RunStore(data / "runs.db").get_run(run_id).status == "paused"

    res = _cli("resume", run_id, "--decide", "approve", "--arguments", '{"text": "edited"}', "--jsonl", data=data)
    out, err = res.communicate(timeout=60)
    assert res.returncode == 0, err
    lines = [json.loads(line) for line in out.splitlines() if line.strip()]
    ends = [e for e in lines if e["type"] == "tool_call_end"]
    assert ends and json.loads(ends[0]["content"]) == {"result": "echo: edited"}
    answers = [e for e in lines if e["type"] == "llm_response"]
    assert '[calc/echo] {"result": "echo: edited"}' in answers[-1]["content"]
