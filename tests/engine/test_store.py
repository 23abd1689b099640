"""The run store: durability across a SIGKILL, resume from another process, concurrency,
migrations, corrupt and locked databases, recovery, AgentFlow records."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import engine.store.writer
from engine import EchoProvider, Run, RunEvent, RunStatus, load_workflow
from engine.store import (
    MIGRATIONS,
    SCHEMA_VERSION,
    AlreadyImported,
    RunRecorder,
    RunStore,
    StoreError,
    agentflow_record,
)
from tests.fakes.openai_server import FakeLLMServer, openai_text

from .flows import agent, approval, flow, link, start

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"

SLOW_CLI = (
    "import sys, os\n"
    "from engine.llm import registry\n"
    "from engine.llm.echo import EchoProvider\n"
    "delay = float(os.environ.get('ECHO_DELAY', '0'))\n"
    "registry._FACTORIES['echo'] = lambda **_: EchoProvider(delay=delay)\n"
    "from engine.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)


def recorded_run(store: RunStore, wf, **run_options) -> Run:
    """Run ``wf`` on the echo provider with a recorder, to its end or first pause, committed
    (a run from a node, ``reuse_from=RUN_ID``, reuses from the same store)."""

    async def go() -> Run:
        run = Run(wf, EchoProvider(), store=store, **run_options)
        rec = RunRecorder(store, run)
        await run.start()
        rec.settled()
        rec.close()
        return run

    return asyncio.run(go())


@pytest.fixture()
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "data"
    monkeypatch.setenv("FLOWDESK_DATA_DIR", str(d))
    return d


def cli(*args: str, delay: float = 0.0, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", SLOW_CLI, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "ECHO_DELAY": str(delay), "PYTHONPATH": str(ROOT)},
    )


def jsonl(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def chain_file(tmp_path: Path, n: int, name: str = "chain") -> Path:
    nodes = [start(text="go")] + [agent(f"a{i}") for i in range(n)]
    links = [link("s", "a0")] + [link(f"a{i}", f"a{i + 1}") for i in range(n - 1)]
    p = tmp_path / f"{name}.flow.json"
    p.write_text(json.dumps({"name": name, "nodes": nodes, "connections": links}))
    return p


def test_sigkill_mid_run_leaves_interrupted_run_with_committed_events(data_dir: Path, tmp_path: Path) -> None:
    # Every agent talks to a slow fake OpenAI-compatible server (real HTTP, streamed answers).
    flow_file = chain_file(tmp_path, 50)
    with FakeLLMServer() as server:
        server.handler = lambda _rec: openai_text("slow answer", pieces=2, pause=0.05)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "editor.launcher",
                "run",
                str(flow_file),
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
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert proc.stdout is not None
        printed: list[dict] = []
        while True:
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else "the run ended early"
            printed.append(json.loads(line))
            if printed[-1]["type"] == "llm_response" and printed[-1]["nodeId"] == "a5":
                break
        time.sleep(0.4)  # > the 100 ms batch interval: what was printed before now is committed
        cutoff = len(printed)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
        # Read the rest from the same buffered reader (communicate() would skip its buffer).
        printed += jsonl(proc.stdout.read())
    res = cli("runs", "--json")
    assert res.returncode == 0, res.stderr
    listed = json.loads(res.stdout)
    assert listed["total"] == 1
    run = listed["runs"][0]
    assert run["status"] == "interrupted"
    stored = jsonl(cli("show", run["id"], "--jsonl").stdout)
    assert len(stored) >= cutoff, "every event up to the last committed batch is kept"
    assert stored == printed[: len(stored)], "stored events are exactly the emitted ones, in order"
    assert any(e["type"] == "llm_delta" for e in stored), "streamed deltas are recorded too"


def test_pause_in_one_process_and_approve_from_another(data_dir: Path) -> None:
    first = cli("run", str(SAMPLES / "review.flow.json"), "--provider", "echo", "--jsonl")
    assert first.returncode == 3
    assert "flowdesk resume" in first.stderr
    run_id = json.loads(cli("runs", "--json").stdout)["runs"][0]["id"]
    assert json.loads(cli("runs", "--json", "--status", "paused").stdout)["total"] == 1
    second = cli("resume", run_id, "--decide", "approve:looks right", "--jsonl")
    assert second.returncode == 0, second.stderr
    stored = jsonl(cli("show", run_id, "--jsonl").stdout)
    assert stored[: len(jsonl(first.stdout))] == jsonl(first.stdout)
    appended = stored[len(jsonl(first.stdout)) :]
    assert appended == jsonl(second.stdout)
    assert appended[0]["type"] == "input_received"
    assert json.loads(appended[0]["content"]) == {"decision": "approve", "note": "looks right"}
    assert [e["nodeId"] for e in appended if e["type"] == "llm_response"] == ["send"]
    assert appended[-1]["content"] == "completed"
    info = json.loads(cli("runs", "--json").stdout)["runs"][0]
    assert info["status"] == "completed" and info["waitingForInput"] is False
    again = cli("resume", run_id, "--decide", "approve")
    assert again.returncode == 2 and "is completed, not paused" in again.stderr


def test_resuming_the_same_run_twice_at_once_is_refused(data_dir: Path) -> None:
    assert cli("run", str(SAMPLES / "review.flow.json"), "--provider", "echo").returncode == 3
    store = RunStore()
    run_id = store.list_runs()[0].id
    store.claim_for_resume(run_id)  # as a first resumer would
    res = cli("resume", run_id, "--decide", "approve")
    assert res.returncode == 2 and "cannot be resumed twice at once" in res.stderr


def test_two_concurrent_runs_lose_no_events(data_dir: Path, tmp_path: Path) -> None:
    a, b = chain_file(tmp_path, 300, "left"), chain_file(tmp_path, 300, "right")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SLOW_CLI, "run", str(f), "--provider", "echo", "--jsonl"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "ECHO_DELAY": "0.001", "PYTHONPATH": str(ROOT)},
        )
        for f in (a, b)
    ]
    results = [p.communicate(timeout=120) for p in procs]
    outs = [out for out, _ in results]
    assert [p.returncode for p in procs] == [0, 0]
    store = RunStore()
    runs = {r.workflow_name: r for r in store.list_runs()}
    assert set(runs) == {"left", "right"}, [err for _, err in results]
    for name, out in zip(("left", "right"), outs):
        stored = [e.to_wire() for e in store.events(runs[name].id)]
        assert stored == jsonl(out)
        assert len(stored) == 1 + 2 + 300 * 4 + 1  # running, start (+ its end), 4 per agent, completed


def test_in_process_recorder_commits_at_pause_with_snapshot(data_dir: Path) -> None:
    wf = flow([start(), approval("ap"), agent("a")], [link("s", "ap"), link("ap", "a", "approve")])
    store = RunStore()

    async def go() -> None:
        run = Run(wf, EchoProvider())
        rec = RunRecorder(store, run)
        await run.start()
        rec.settled()
        info = store.get_run(run.run_id)
        assert info is not None and info.status == "paused" and info.waiting and info.current_node == "ap"
        assert store.snapshot_of(run.run_id)["pending"]["nodeId"] == "ap"
        assert len(store.events(run.run_id)) == len(run.events)
        restored = Run.restore(store.snapshot_of(run.run_id), EchoProvider(), workflow=store.workflow_of(run.run_id))
        store.claim_for_resume(run.run_id)
        rec2 = RunRecorder(store, restored, new=False)
        assert await restored.resume("approve") == RunStatus.COMPLETED
        rec2.settled()
        rec.close()
        rec2.close()
        assert [e.to_wire() for e in store.events(run.run_id)] == [e.to_wire() for e in run.events + restored.events]
        assert store.get_run(run.run_id).status == "completed"

    asyncio.run(go())


def test_older_schema_is_migrated(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    db = data_dir / "runs.db"
    conn = sqlite3.connect(db)
    conn.executescript(MIGRATIONS[0])
    conn.execute("PRAGMA user_version = 1")
    conn.execute(
        "INSERT INTO runs (id, workflow_name, workflow_json, status, started_at) VALUES "
        "('old1', 'Legacy', '{\"nodes\": [], \"connections\": []}', 'completed', 1700000000)"
    )
    conn.execute("INSERT INTO events VALUES ('old1', 0, 1700000000, 'system', 'run_status', 'completed', NULL)")
    conn.commit()
    conn.close()
    store = RunStore()
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    cols = {r[1] for r in conn.execute("PRAGMA table_info(runs)")}
    assert {"owner_pid", "owner_host", "arguments"} <= cols
    info = store.get_run("old1")
    assert info is not None and info.workflow_name == "Legacy" and info.event_count == 1
    assert info.arguments is None and info.input_summary == ""
    assert store.recover() == []  # a completed run is left alone


def test_newer_schema_is_refused_clearly(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    conn = sqlite3.connect(data_dir / "runs.db")
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 5}")
    conn.close()
    with pytest.raises(StoreError, match="newer Flowdesk"):
        RunStore()


def test_corrupt_database_gives_clear_error_and_runs_still_work(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    (data_dir / "runs.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError, match="damaged"):
        RunStore()
    res = cli("runs")
    assert res.returncode == 2 and "damaged" in res.stderr and "Traceback" not in res.stderr
    res = cli("run", str(SAMPLES / "hello.flow.json"), "--provider", "echo")
    assert res.returncode == 0 and "not recorded" in res.stderr


def test_locked_database_gives_clear_error(data_dir: Path) -> None:
    RunStore().close()
    holder = sqlite3.connect(data_dir / "runs.db", isolation_level=None)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(StoreError, match="locked"):
            store = RunStore(timeout=0.2)
            store.create_run("x", flow([start()], []))
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_recover_marks_dead_process_runs_interrupted(data_dir: Path) -> None:
    store = RunStore()
    wf = flow([start(), agent("a")], [link("s", "a")])
    store.create_run("dead", wf)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    store.update_run("dead", owner_pid=dead.pid)
    store.create_run("alive", wf)  # owned by this (live) process
    assert store.recover() == ["dead"]
    assert store.get_run("dead").status == "interrupted"
    assert store.get_run("alive").status == "running"


def test_list_filter_and_pagination(data_dir: Path) -> None:
    store = RunStore()
    wf_a = flow([start()], [])
    wf_a.name = "A"
    wf_b = flow([start()], [])
    wf_b.name = "B"
    for i in range(25):
        store.create_run(
            f"r{i:02d}", wf_a if i % 2 else wf_b, status="completed" if i % 3 else "failed", started_at=1000 + i
        )
    assert store.count_runs() == 25
    page = store.list_runs(limit=10, offset=0)
    assert [r.id for r in page] == [f"r{i:02d}" for i in range(24, 14, -1)]
    assert [r.id for r in store.list_runs(limit=10, offset=20)] == [f"r{i:02d}" for i in range(4, -1, -1)]
    assert store.count_runs(workflow="A") == 12 and store.count_runs(workflow="A", status="failed") == 4
    assert store.workflow_names() == ["A", "B"]
    store.delete_run("r00")
    assert store.count_runs() == 24 and store.events("r00") == []


def test_event_counts_of_a_page(data_dir: Path) -> None:
    from engine import RunEvent

    store = RunStore()
    wf = flow([start()], [])
    for i, n in enumerate((0, 3, 7)):
        store.create_run(f"c{i}", wf, status="completed")
        if n:
            store.append_events(f"c{i}", 0, [RunEvent("s", "step_start", str(k)) for k in range(n)])
    assert store.event_counts(["c2", "c0", "c1", "nope"]) == {"c2": 7, "c0": 0, "c1": 3, "nope": 0}
    assert store.event_counts([]) == {}


def test_agentflow_record_export_and_import(data_dir: Path) -> None:
    store = RunStore()
    wf = flow([start(text="in"), agent("a")], [link("s", "a")])

    run_id = recorded_run(store, wf).run_id
    info = store.get_run(run_id)
    record = agentflow_record(info, store.workflow_json(run_id), store.events(run_id))
    text = json.dumps(record)
    with pytest.raises(AlreadyImported) as already:  # the run is in the history: no duplicate
        store.import_agentflow(json.loads(text))
    assert already.value.run_id == run_id and store.count_runs() == 1
    store.delete_run(run_id)
    new_id = store.import_agentflow(json.loads(text))
    assert new_id == run_id
    assert [e.to_wire() for e in store.events(new_id)] == record["logs"]
    assert store.get_run(new_id).status == "completed"
    with pytest.raises(ValueError):
        store.import_agentflow({"nodes": []})


def test_processes_opening_a_new_store_at_once_all_succeed(tmp_path: Path) -> None:
    # Switching a new database to WAL does not wait on SQLite's busy handler; the store
    # retries it, so simultaneous first opens (two `flowdesk run` at once) never fail.
    code = (
        "import sys\nfrom engine.store import RunStore\nfrom engine import parse_workflow\n"
        "s = RunStore()\ns.create_run(sys.argv[1], parse_workflow({'nodes': [], 'connections': []}))\n"
    )
    for round_ in range(3):
        env = {**os.environ, "FLOWDESK_DATA_DIR": str(tmp_path / f"d{round_}"), "PYTHONPATH": str(ROOT)}
        procs = [
            subprocess.Popen([sys.executable, "-c", code, f"r{k}"], env=env, stderr=subprocess.PIPE, text=True)
            for k in range(4)
        ]
        errors = [p.communicate(timeout=60)[1] for p in procs]
        assert [p.returncode for p in procs] == [0] * 4, errors
        store = RunStore(tmp_path / f"d{round_}" / "runs.db")
        assert store.count_runs() == 4


@pytest.mark.parametrize("count", [0, 1, 4, 5, 26, 523, 1234])
def test_event_batches_of_any_size_are_stored_whole_and_in_order(data_dir: Path, count: int) -> None:
    # A batch is cut into INSERTs of a few fixed sizes (500, 100, 20, 5, 1 rows).
    from engine.run.events import RunEvent

    store = RunStore()
    wf = flow([start(), agent("a")], [link("s", "a")])
    store.create_run("r1", wf)
    events = [
        RunEvent(f"n{i}", "step_start", f"c{i}", timestamp=float(i), extra={"i": i} if i % 3 else None)
        for i in range(count)
    ]
    store.append_events("r1", 0, events[: count // 2])
    store.append_events("r1", count // 2, events[count // 2 :], {"status": "completed"})
    assert store.events("r1") == events
    assert store.get_run("r1").status == "completed"


def test_concurrent_recorders_share_one_writer_thread(data_dir: Path) -> None:
    import threading

    store = RunStore()
    flows = [
        flow(
            [start()] + [agent(f"a{i}") for i in range(50)],
            [link("s", "a0")] + [link(f"a{i}", f"a{i + 1}") for i in range(49)],
        )
        for _ in range(3)
    ]

    async def go() -> list[Run]:
        before = set(threading.enumerate())
        runs = [Run(wf, EchoProvider(delay=0.001)) for wf in flows]
        recs = [RunRecorder(store, run) for run in runs]
        await asyncio.gather(*(run.start() for run in runs))
        assert [t.name for t in set(threading.enumerate()) - before] == ["run-store-writer"]
        for rec in recs:
            rec.settled()
            rec.close()
            assert rec.error is None
        return runs

    runs = asyncio.run(go())
    for run in runs:
        assert [e.to_wire() for e in store.events(run.run_id)] == [e.to_wire() for e in run.events]
        assert store.get_run(run.run_id).status == "completed"


def test_writer_thread_ends_when_idle_and_a_new_recorder_starts_another(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(engine.store.writer, "_WRITER_IDLE_EXIT", 0.2)
    store = RunStore()
    wf = flow([start(), agent("a")], [link("s", "a")])
    first = recorded_run(store, wf)
    writer = store.writer
    deadline = time.monotonic() + 5
    while writer.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not writer.alive()
    second = recorded_run(store, wf)
    assert [store.get_run(r.run_id).status for r in (first, second)] == ["completed", "completed"]
    assert len(store.events(second.run_id)) == len(second.events)


def test_a_workflow_that_ran_many_times_is_stored_once_and_goes_with_its_last_run(data_dir: Path) -> None:
    store = RunStore()
    wf_a = flow([start(), agent("a")], [link("s", "a")])
    wf_b = flow([start(), agent("b")], [link("s", "b")])
    for rid, wf in (("r1", wf_a), ("r2", wf_a), ("r3", wf_b)):
        store.create_run(rid, wf, status="completed")
    conn = sqlite3.connect(store.path)
    count = lambda: conn.execute("SELECT count(*) FROM workflows").fetchone()[0]  # noqa: E731
    assert count() == 2
    assert store.workflow_of("r1") == store.workflow_of("r2") == wf_a and store.workflow_of("r3") == wf_b
    store.delete_run("r1")
    assert count() == 2 and store.workflow_of("r2") == wf_a
    store.delete_run("r2")
    assert count() == 1 and store.workflow_json("r2") is None
    store.delete_run("r3")
    assert count() == 0


def test_runs_recorded_before_workflows_were_shared_keep_their_workflow(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    db = data_dir / "runs.db"
    conn = sqlite3.connect(db)
    conn.executescript(MIGRATIONS[0] + MIGRATIONS[1])
    conn.execute("PRAGMA user_version = 2")
    legacy = json.dumps({"nodes": [{"id": "s", "type": "start", "data": {"initialInput": "old"}}], "connections": []})
    conn.execute(
        "INSERT INTO runs (id, workflow_name, workflow_json, status, started_at) VALUES "
        "('v2run', 'Old', ?, 'completed', 1700000000)",
        (legacy,),
    )
    conn.commit()
    conn.close()
    store = RunStore()
    assert store.workflow_of("v2run").nodes[0].data.initialInput == "old"
    store.create_run("v3run", flow([start()], []), status="completed")
    assert {r.id for r in store.list_runs()} == {"v2run", "v3run"}
    store.delete_run("v2run")
    assert store.workflow_json("v2run") is None and store.workflow_of("v3run").nodes[0].id == "s"


def test_a_new_run_is_listed_while_it_runs_and_its_events_follow_within_a_tick(data_dir: Path) -> None:
    store = RunStore()
    wf = flow([start(), agent("a"), agent("b")], [link("s", "a"), link("a", "b")])

    async def go() -> None:
        run = Run(wf, EchoProvider(delay=0.6))
        rec = RunRecorder(store, run)
        task = asyncio.create_task(run.start())
        t0 = time.monotonic()
        while store.get_run(run.run_id) is None:
            assert time.monotonic() - t0 < 1.0, "the run's row was not written at its start"
            await asyncio.sleep(0.01)
        assert store.get_run(run.run_id).status == "running"
        t0 = time.monotonic()
        while store.get_run(run.run_id).event_count < 4:  # running, start's step, a's step and prompt
            assert time.monotonic() - t0 < 1.0, "events were not committed within a tick"
            await asyncio.sleep(0.01)
        await task
        rec.settled()
        rec.close()
        assert [e.to_wire() for e in store.events(run.run_id)] == [e.to_wire() for e in run.events]

    asyncio.run(go())


def test_events_of_schema_5_are_kept_in_order_under_the_runs_numbers(data_dir: Path) -> None:
    data_dir.mkdir(parents=True)
    db = data_dir / "runs.db"
    conn = sqlite3.connect(db)
    conn.executescript(";".join(MIGRATIONS[:5]))
    conn.execute("PRAGMA user_version = 5")
    for rid, started in (("b-run", 1700000002), ("a-run", 1700000001)):
        conn.execute(
            "INSERT INTO runs (id, workflow_name, workflow_json, status, started_at) VALUES "
            "(?, 'Old', '{\"nodes\": [], \"connections\": []}', 'completed', ?)",
            (rid, started),
        )
        for seq in range(3):
            conn.execute(
                "INSERT INTO events VALUES (?, ?, ?, 'n', 'step_start', ?, NULL)",
                (rid, seq, started + seq, f"{rid} {seq}"),
            )
    conn.commit()
    conn.close()
    store = RunStore()
    assert [e.content for e in store.events("a-run")] == ["a-run 0", "a-run 1", "a-run 2"]
    assert [e.content for e in store.events("b-run", offset=1)] == ["b-run 1", "b-run 2"]
    assert store.event_counts(["a-run", "b-run"]) == {"a-run": 3, "b-run": 3}
    store.create_run("new-run", flow([start()], []), status="running")
    store.append_events("new-run", 0, [RunEvent("s", "step_start", "x", timestamp=1.0)])
    assert store.next_seq("new-run") == 1 and store.get_run("new-run").event_count == 1
    store.delete_run("b-run")
    assert store.events("b-run") == [] and [e.content for e in store.events("a-run")][0] == "a-run 0"


def test_runs_lists_a_quick_run_in_milliseconds(data_dir: Path) -> None:
    assert cli("run", str(SAMPLES / "hello.flow.json"), "--provider", "echo").returncode == 0
    listed = cli("runs")
    assert listed.returncode == 0, listed.stderr
    row = listed.stdout.splitlines()[1]
    assert re.search(r" \d{1,3} ms  ", row), row  # not "0.0s"


def test_a_run_keeps_the_variables_it_started_with(data_dir: Path, tmp_path: Path) -> None:
    """The history shows what a run was called with: the Start node's variables overridden by
    its arguments, as they were at its start (a step's outputVar set later is not among them)."""
    store = RunStore()
    run = recorded_run(
        store, load_workflow(SAMPLES / "panel.flow.json"), variables={"topic": "dark mode", "maxWords": "80"}
    )
    info = store.get_run(run.run_id)
    assert info is not None and info.initial_input in (None, "")
    assert info.arguments == {"topic": "dark mode", "audience": "existing customers", "maxWords": 80}
    assert set(run.variables) > set(info.arguments)  # the steps' outputVars came later
    assert info.input_summary == "topic=dark mode, audience=existing customers, maxWords=80"
    assert store.list_runs()[0].arguments == info.arguments
    assert info.to_json()["arguments"] == info.arguments
    # a run with an initial input shows that, its arguments beside it in the tooltip only
    hello = recorded_run(store, load_workflow(SAMPLES / "hello.flow.json"))
    hello_info = store.get_run(hello.run_id)
    assert hello_info is not None and hello_info.arguments is None
    assert hello_info.input_summary == hello_info.initial_input and hello_info.initial_input
    # the CLI's list says it too; --json carries the object
    listed = cli("runs")
    assert "Announcement panel — topic=dark mode, audience=existing cu..." in listed.stdout, listed.stdout
    rows = json.loads(cli("runs", "--json").stdout)["runs"]
    assert [r["arguments"] for r in rows if r["id"] == run.run_id] == [info.arguments]
    shown = cli("show", run.run_id).stdout.splitlines()
    assert shown[1] == "arguments: topic=dark mode, audience=existing customers, maxWords=80"
    assert not cli("show", hello.run_id).stdout.splitlines()[1].startswith("arguments")


def test_arguments_that_are_not_plain_text_are_stored_safely(data_dir: Path) -> None:
    store = RunStore()
    wf = flow([start()], [])
    run = Run(wf, EchoProvider())
    run.variables.update({"bad": "\ud800 lone", "list": [1, "é"], "obj": object()})
    row, _workflow = RunStore.run_row(run.run_id, wf, arguments=run.variables)
    with store._transaction() as conn:
        store._insert_run(conn, (row, _workflow))
    info = store.get_run(run.run_id)
    assert info is not None and info.arguments is not None
    assert info.arguments["bad"] == "\ud800 lone" and info.arguments["list"] == [1, "é"]
    assert info.arguments["obj"].startswith("<object object")
