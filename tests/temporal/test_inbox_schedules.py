"""Richer approvals, the inbox and schedules on a real Temporal dev server: an approval that times
out takes onTimeout by a durable timer, an option chosen with ``resume --decide LABEL``, the
paused run listed by ``flowdesk inbox --temporal`` (where: temporal), and a library flow's
schedule made a Temporal Schedule by ``flowdesk worker``."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from tests.engine.flows import agent, link, start

from .conftest import ROOT, WorkerProcess, needs_temporal

pytestmark = needs_temporal


def _cli(*args: str, env: dict[str, str], timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **env},
    )


def _flow(path: Path, approval_data: dict, name: str, **top: object) -> Path:
    nodes = [
        start(text="draft"),
        {"id": "ap", "type": "approval", "data": {"prompt": "Ship it?", **approval_data}},
        agent("yes", "yes {{APPROVAL_DECISION}}"),
        agent("no", "no {{APPROVAL_DECISION}}"),
        agent("later", "later {{APPROVAL_DECISION}} {{APPROVAL_NOTE}}"),
    ]
    links = [link("s", "ap"), link("ap", "yes", "approve"), link("ap", "no", "reject"), link("ap", "later", "Later")]
    path.write_text(json.dumps({"name": name, **top, "nodes": nodes, "connections": links}), encoding="utf-8")
    return path


def test_options_timeouts_inbox_and_schedules_on_temporal(temporal_server, tmp_path):
    data = tmp_path / "data"
    library = data / "library"
    library.mkdir(parents=True)
    _flow(library / "nightly.flow.json", {"options": ["Later"]}, "Nightly", id="nightly", schedule="0 3 * * *")
    env = {"FLOWDESK_DATA_DIR": str(data)}
    worker = WorkerProcess(temporal_server, "inbox", env=env)
    try:
        # the library's schedule is a Temporal Schedule now
        from temporalio.client import Client

        async def described() -> tuple[list[str], str]:
            client = await Client.connect(temporal_server)
            desc = await client.get_schedule_handle("flowdesk-nightly").describe()
            # (the server keeps a cron expression as calendar specs: 03:00 every day)
            cal = desc.schedule.spec.calendars[0]
            return [str(cal.hour[0].start), str(cal.minute[0].start)], desc.schedule.action.workflow

        assert asyncio.run(described()) == (["3", "0"], "FlowdeskRun")
        where = ["--temporal", temporal_server, "--task-queue", "inbox", "--provider", "echo"]
        # an option chosen from the command line
        path = _flow(tmp_path / "opt.flow.json", {"options": ["Later"]}, "Options on Temporal")
        first = _cli("run", str(path), *where, env=env)
        assert first.returncode == 3, first.stderr
        run_id = re.search(r"run ([0-9a-f]{32}) submitted", first.stderr).group(1)
        listed = _cli("inbox", "--json", "--temporal", temporal_server, env=env)
        assert listed.returncode == 0, listed.stderr
        items = [i for i in json.loads(listed.stdout) if i["runId"] == run_id]
        assert len(items) == 1 and items[0]["where"] == "temporal" and items[0]["prompt"] == "Ship it?"
        assert items[0]["options"] == ["Later"] and items[0]["nodeId"] == "ap"
        res = _cli("resume", run_id, *where[:4], "--decide", "later:from temporal", "--jsonl", env=env)
        assert res.returncode == 0, res.stderr
        assert "later Later from temporal" in res.stdout
        # an approval that times out, answered by nobody: the server's timer takes onTimeout
        path = _flow(
            tmp_path / "t.flow.json",
            {"options": ["Later"], "timeoutMs": 1500, "onTimeout": "reject"},
            "Timeout on Temporal",
        )
        began = time.monotonic()
        res = _cli("run", str(path), *where, env=env)
        assert res.returncode == 3, res.stderr
        run_id = re.search(r"run ([0-9a-f]{32}) submitted", res.stderr).group(1)
        time.sleep(max(0.0, 2.5 - (time.monotonic() - began)))
        followed = _cli("follow", run_id, *where[:4], "--jsonl", env=env)
        assert followed.returncode == 0, followed.stderr
        events = [json.loads(line) for line in followed.stdout.splitlines()]
        received = next(e for e in events if e["type"] == "input_received")
        assert json.loads(received["content"]) == {"decision": "reject", "note": "", "timedOut": True}
        assert any(e["type"] == "llm_response" and e["content"] == "no reject" for e in events)
    finally:
        worker.stop()
