"""Regression tests for issue 13: what was shown is stored, a paused run survives a kill, no
input crashes or hangs the CLI, empty answers fail, credentials in a base URL stay secret,
a full disk is reported."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from engine import Run, RunStatus, WorkflowLoadError, load_workflow, loads_workflow
from engine.store import RunRecorder, RunStore
from tests.engine.flows import Recorder, agent, approval, flow, link, start
from tests.fakes.openai_server import FakeLLMServer, openai_empty_stream, openai_null_content, openai_text

ROOT = Path(__file__).resolve().parents[2]


def cli(*args: str, data: Path, timeout: float = 30, **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "editor.launcher", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "FLOWDESK_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)},
        **kw,
    )


def write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value) if not isinstance(value, str) else value)
    return path


# ----------------------------------------------------------------------------- 1. paused + sibling
def _paused_with_sibling():
    """start → pre → approval (pauses at once); start → slow (still running) → b."""
    return flow(
        [start(), agent("pre"), approval("ok"), agent("post"), agent("slow"), agent("b")],
        [link("s", "pre"), link("pre", "ok"), link("ok", "post", "approve"), link("s", "slow"), link("slow", "b")],
    )


async def test_pause_is_stored_with_its_state_while_a_sibling_still_runs(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    wf = _paused_with_sibling()
    run = Run(wf, Recorder(delays={"slow": 0.5}), keep_events=False)
    recorder = RunRecorder(store, run)
    task = asyncio.ensure_future(run.start())
    reader = RunStore(tmp_path / "runs.db")  # as another process sees it
    deadline = time.monotonic() + 5
    while not ((info := reader.get_run(run.run_id)) and info.status == "paused"):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.01)
    assert not task.done()  # the sibling is still running: start() has not returned
    snap = reader.snapshot_of(run.run_id)
    assert snap is not None and snap["pending"]["nodeId"] == "ok"
    # The step in flight is kept as deferred work, its visit not counted.
    assert {"nodeId": "slow", "input": "hello"} in snap["deferred"]
    assert snap["visits"].get("slow", 0) == 0
    # Resumed from that state (as a new process would, after a kill): the sibling's branch runs again.
    events: list = []
    again = Run.restore(snap, Recorder(), workflow=wf, on_event=events.append)
    assert await again.resume("approve") == RunStatus.COMPLETED
    assert set(again.outputs) >= {"slow", "b", "post"}
    assert again.visits["slow"] == 1
    await task
    recorder.settled()
    recorder.close()
    store.close()
    reader.close()


async def test_snapshot_follows_the_sibling_while_paused(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    wf = _paused_with_sibling()
    run = Run(wf, Recorder(delays={"slow": 0.2, "b": 5}), keep_events=False)
    recorder = RunRecorder(store, run)
    task = asyncio.ensure_future(run.start())
    deadline = time.monotonic() + 5
    # Once slow has answered, the stored state has its output and b is the step in flight.
    while True:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.02)
        snap = store.snapshot_of(run.run_id)
        if snap and "slow" in snap["outputs"]:
            break
    assert {"nodeId": "b", "input": snap["outputs"]["slow"]} in snap["deferred"]
    assert snap["visits"]["slow"] == 1
    run.cancel()
    await task
    recorder.close()
    store.close()


def test_recovery_marks_a_paused_run_without_state_interrupted(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    wf = _paused_with_sibling()
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    store.create_run("lost", wf, status="paused")
    store.update_run("lost", owner_pid=dead.pid, waiting=1)
    store.create_run("mine", wf, status="paused")  # this process is alive: left alone
    assert "lost" in store.recover()
    assert store.get_run("lost").status == "interrupted"
    assert "cannot be resumed" in store.get_run("lost").error
    assert store.get_run("mine").status == "paused"


def _approval_flow_file(tmp_path: Path) -> Path:
    return write(
        tmp_path / "sib.flow.json",
        {
            "nodes": [
                start(),
                agent("pre", "PRE {{PREVIOUS_OUTPUT}}"),
                approval("ok"),
                agent("post", "POST"),
                agent("slow", "SLOW {{PREVIOUS_OUTPUT}}"),
                agent("b", "NEXT {{PREVIOUS_OUTPUT}}"),
            ],
            "connections": [
                link("s", "pre"),
                link("pre", "ok"),
                link("ok", "post", "approve"),
                link("s", "slow"),
                link("slow", "b"),
            ],
        },
    )


def test_cli_paused_run_killed_while_sibling_streams_resumes_in_a_new_process(tmp_path: Path) -> None:
    path = _approval_flow_file(tmp_path)
    data = tmp_path / "data"
    with FakeLLMServer() as server:

        def reply(rec):
            user = json.loads(rec.body)["messages"][1]["content"]
            return openai_text(f"re {user}", pieces=5, pause=0.3 if user.startswith(("SLOW", "NEXT")) else 0)

        server.handler = reply
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "editor.launcher",
                "run",
                str(path),
                "--provider",
                "openai",
                "--base-url",
                server.base_url,
                "--jsonl",
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "FLOWDESK_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)},
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            if json.loads(line)["content"] == "paused":
                break
        proc.kill()  # SIGKILL, the sibling still streaming
        proc.wait(10)
        res = cli("resume", RunStore(data / "runs.db").list_runs()[0].id, "--decide", "approve", "--jsonl", data=data)
    assert res.returncode == 0, res.stderr
    entries = [json.loads(x) for x in res.stdout.splitlines()]
    answered = {e["nodeId"] for e in entries if e["type"] == "llm_response"}
    assert {"post", "b"} <= answered
    assert entries[-1]["content"] == "completed"


# ----------------------------------------------------------------------------- 2. shown = stored
async def test_on_commit_delivers_only_committed_events(tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    other = RunStore(tmp_path / "runs.db")
    chain = flow(
        [start()] + [agent(f"a{i}") for i in range(30)],
        [link("s", "a0")] + [link(f"a{i}", f"a{i + 1}") for i in range(29)],
    )
    run = Run(chain, Recorder(delays={f"a{i}": 0.01 for i in range(30)}), keep_events=False)
    shown: list = []
    checks: list[bool] = []

    def on_commit(events, recorded):
        shown.extend(events)
        # Read with another connection, as a process started after a kill would.
        checks.append(recorded and len(other.events(run.run_id)) >= len(shown))

    recorder = RunRecorder(store, run, on_commit=on_commit)
    await run.start()
    recorder.settled()
    recorder.close()
    assert checks and all(checks)
    assert [e for e in shown] == store.events(run.run_id)
    store.close()
    other.close()


def test_cli_prints_only_what_is_stored(tmp_path: Path) -> None:
    """A run killed mid-way: every line it printed is in the store, but streamed text (issue 32:
    printed as it comes once its step's start is committed, not after the store's next batch)."""
    path = _approval_flow_file(tmp_path)
    data = tmp_path / "data"
    with FakeLLMServer() as server:
        server.handler = lambda rec: openai_text("word " * 20, pieces=10, pause=0.02)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "editor.launcher",
                "run",
                str(path),
                "--provider",
                "openai",
                "--base-url",
                server.base_url,
                "--jsonl",
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "FLOWDESK_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)},
        )
        assert proc.stdout is not None
        printed = []
        for line in proc.stdout:
            printed.append(json.loads(line))
            if len(printed) >= 12:
                proc.kill()
                break
        proc.wait(10)
    store = RunStore(data / "runs.db")
    stored = {
        (e.to_wire()["timestamp"], e.node_id, str(e.type), e.content)
        for e in store.iter_events(store.list_runs()[0].id)
    }
    assert all(
        (e["timestamp"], e["nodeId"], e["type"], e["content"]) in stored for e in printed if e["type"] != "llm_delta"
    )


# ----------------------------------------------------------------------------- 3. bad input
SURROGATE_DOC = '{"nodes":[{"id":"s\\ud800","type":"start","data":{"initialInput":"hi"}}],"connections":[]}'


@pytest.mark.parametrize(
    "where, doc",
    [
        ("nodes[0].id", SURROGATE_DOC),
        ("nodes[0].type", '{"nodes":[{"id":"s","type":"st\\udfffart","data":{}}],"connections":[]}'),
        (
            "connections[0].sourceHandle",
            '{"nodes":[{"id":"s","type":"start","data":{}}],"connections":'
            '[{"source":"s","target":"s","sourceHandle":"out\\uDC80"}]}',
        ),
    ],
)
def test_lone_surrogate_refused_at_load_with_its_place(where: str, doc: str) -> None:
    with pytest.raises(WorkflowLoadError) as info:
        loads_workflow(doc)
    assert info.value.where == where
    assert "lone surrogate" in str(info.value)


def test_cli_validate_and_run_refuse_a_lone_surrogate(tmp_path: Path) -> None:
    path = write(tmp_path / "s.flow.json", SURROGATE_DOC)
    for args in (("validate", str(path)), ("validate", str(path), "--json"), ("run", str(path), "--provider", "echo")):
        res = cli(*args, data=tmp_path / "data")
        assert res.returncode == 2, res
        assert "Traceback" not in res.stderr
        assert "nodes[0].id" in res.stderr + res.stdout


def test_cli_input_that_is_not_utf8(tmp_path: Path) -> None:
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "editor.launcher",
            "run",
            str(ROOT / "samples" / "hello.flow.json"),
            "--provider",
            "echo",
            "--input",
            os.fsdecode(b"caf\xe9"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, "FLOWDESK_DATA_DIR": str(tmp_path)},
    )
    assert res.returncode == 2
    assert "not UTF-8" in res.stderr and "Traceback" not in res.stderr


async def test_surrogate_in_a_model_answer_is_stored_escaped(tmp_path: Path) -> None:
    class Odd:
        async def complete(self, inv, ctx):
            from engine import LLMResult

            return LLMResult("bad \ud800 text", None, "m")

    store = RunStore(tmp_path / "runs.db")
    run = Run(flow([start(), agent("a")], [link("s", "a")]), Odd())
    recorder = RunRecorder(store, run)
    assert await run.start() == RunStatus.COMPLETED
    recorder.settled()
    recorder.close()
    assert recorder.error is None
    contents = [e.content for e in store.events(run.run_id)]
    assert "bad \\ud800 text" in contents
    assert store.get_run(run.run_id).status == "completed"


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_special_files_refused_at_once(tmp_path: Path, special: str) -> None:
    if special == "fifo":
        path = tmp_path / "pipe.flow.json"
        os.mkfifo(path)
    else:
        path = Path(special)
        if not path.exists():
            pytest.skip("no /dev/zero here")
    with pytest.raises(WorkflowLoadError, match="not a regular file"):
        load_workflow(path)
    for args in (("validate", str(path)), ("run", str(path), "--provider", "echo")):
        t0 = time.monotonic()
        res = cli(*args, data=tmp_path / "data", timeout=20)
        assert time.monotonic() - t0 < 10
        assert res.returncode == 2 and "not a regular file" in res.stderr and "Traceback" not in res.stderr


def test_huge_integer_message_is_plain(tmp_path: Path) -> None:
    doc = '{"nodes":[{"id":"s","type":"start","position":{"x":' + "7" * 5000 + ',"y":0},"data":{}}],"connections":[]}'
    with pytest.raises(WorkflowLoadError) as info:
        loads_workflow(doc)
    text = str(info.value)
    assert "too long" in text and "line 1, column" in text
    assert "set_int_max_str_digits" not in text
    res = cli("validate", str(write(tmp_path / "n.flow.json", doc)), data=tmp_path / "data")
    assert res.returncode == 2 and "set_int_max_str_digits" not in res.stderr


def test_ctrl_c_early_in_run_exits_4_quietly(tmp_path: Path) -> None:
    rng = random.Random(4)
    path = ROOT / "samples" / "hello.flow.json"
    # Before the interpreter has run a line of ours nothing can be done: kill points start
    # after a bare interpreter's start-up time on this (possibly busy) machine.
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-c", "pass"], check=True)
    bare = time.monotonic() - t0
    for _ in range(6):
        proc = subprocess.Popen(
            [sys.executable, "-m", "editor.launcher", "run", str(path), "--provider", "echo"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "FLOWDESK_DATA_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)},
        )
        time.sleep(rng.uniform(1.5 * bare, 0.3 + bare))
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode in (0, 4), (proc.returncode, err)  # 0: the run had already completed
        assert "Traceback" not in err and "KeyboardInterrupt" not in err


# ----------------------------------------------------------------------------- 5. empty answers
@pytest.mark.parametrize("reply", [openai_empty_stream, openai_null_content])
def test_empty_answer_is_an_llm_error(tmp_path: Path, reply) -> None:
    with FakeLLMServer() as server:
        server.push(reply())
        res = cli(
            "run",
            str(ROOT / "samples" / "hello.flow.json"),
            "--provider",
            "openai",
            "--base-url",
            server.base_url,
            "--model",
            "m",
            "--jsonl",
            "--no-store",
            data=tmp_path,
        )
    assert res.returncode == 1, res.stderr
    entries = [json.loads(x) for x in res.stdout.splitlines()]
    kinds = [e["type"] for e in entries]
    assert "llm_response" not in kinds
    err = next(e for e in entries if e["type"] == "llm_error")
    assert "empty answer" in err["content"]
    assert entries[-1]["content"] == "failed"


# ----------------------------------------------------------------------------- 6. base URL secrets
def _all_stored_text(db: Path) -> str:
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        return "\n".join(
            str(v)
            for table in ("runs", "events", "workflows")
            for row in conn.execute(f"SELECT * FROM {table}")
            for v in row
        )
    finally:
        conn.close()


def test_base_url_credentials_never_shown_or_stored(tmp_path: Path) -> None:
    secret = "sk-test-s3cr3t-0123456789"
    data = tmp_path / "data"
    review = _approval_flow_file(tmp_path)
    with FakeLLMServer() as server:
        server.handler = lambda rec: openai_text("fine")
        url = server.base_url.replace("http://", f"http://alice:{secret}@")
        ok = cli("run", str(review), "--provider", "openai", "--base-url", url, "--model", "m", "--jsonl", data=data)
        auth = server.requests[0].headers.get("authorization", "")
    assert ok.returncode == 3, ok.stderr  # paused at the approval: its snapshot is stored too
    assert base64.b64decode(auth.split()[1]).decode() == f"alice:{secret}"  # sent as Basic auth
    # A server that is not there: the error names the URL, without the password.
    dead = cli(
        "run",
        str(ROOT / "samples" / "hello.flow.json"),
        "--provider",
        "openai",
        "--base-url",
        f"http://alice:{secret}@127.0.0.1:9/v1",
        "--model",
        "m",
        "--jsonl",
        data=data,
    )
    assert dead.returncode == 1
    assert "127.0.0.1:9" in dead.stdout + dead.stderr
    for res in (ok, dead):
        assert secret not in res.stdout + res.stderr
    assert secret not in _all_stored_text(data / "runs.db")
    assert "alice" not in json.dumps(
        RunStore(data / "runs.db").snapshot_of(RunStore(data / "runs.db").list_runs(status="paused")[0].id)
    )


def test_redact_masks_url_passwords() -> None:
    from engine.llm.config import redact, split_url_credentials

    assert redact("GET http://u:hunter2@h/v1 failed") == "GET http://u:***@h/v1 failed"
    assert split_url_credentials("https://u:p%40ss@h:8/v1") == ("https://h:8/v1", ("u", "p@ss"))
    assert split_url_credentials("http://h/v1") == ("http://h/v1", None)


# ----------------------------------------------------------------------------- 7. disk full
@pytest.fixture
def small_disk(tmp_path: Path):
    mount = tmp_path / "small"
    mount.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a 2 MB tmpfs here (needs root): {res.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_disk_full_run_exits_1_and_is_listed_not_fully_recorded(tmp_path: Path, small_disk: Path) -> None:
    # An existing database first (so the run row and the WAL exist), then a run too big for the disk.
    first = cli("run", str(ROOT / "samples" / "hello.flow.json"), "--provider", "echo", data=small_disk)
    assert first.returncode == 0, first.stderr
    big = write(
        tmp_path / "big.flow.json",
        {
            "nodes": [start(text="x" * 150_000)] + [agent(f"a{i}") for i in range(15)],
            "connections": [link("s", "a0")] + [link(f"a{i}", f"a{i + 1}") for i in range(14)],
        },
    )
    res = cli("run", str(big), "--provider", "echo", data=small_disk)
    assert res.returncode == 1, res.stderr
    assert "not fully recorded" in res.stderr or "not in the run history" in res.stderr
    assert "could not be written" in res.stderr
    assert "the disk is full" in res.stderr and "disk I/O error" not in res.stderr
    assert "Traceback" not in res.stderr
    listed = cli("runs", "--json", data=small_disk)
    runs = json.loads(listed.stdout)["runs"]
    if len(runs) == 2:  # the big run's row fitted: it says how it ended and that events are missing
        assert runs[0]["status"] == "completed" and runs[0]["fullyRecorded"] is False
        assert "not fully recorded" in cli("runs", data=small_disk).stdout


def test_disk_io_error_on_a_full_disk_is_called_full(tmp_path: Path, monkeypatch) -> None:
    import sqlite3

    store = RunStore(tmp_path / "runs.db")
    monkeypatch.setattr(shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10_000_000, 9_999_000, 1000))
    assert "the disk is full" in str(store._error(sqlite3.OperationalError("disk I/O error")))
    monkeypatch.setattr(shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10**10, 10**9, 9 * 10**9))
    assert "disk I/O error" in str(store._error(sqlite3.OperationalError("disk I/O error")))
