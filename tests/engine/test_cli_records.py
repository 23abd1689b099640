"""The run-history defects of the CLI, each fixed: event counts in ``runs --json``, an ambiguous
id prefix, the input of an exported record, importing a record twice, the id of a completed run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.store import AlreadyImported, RunStore, agentflow_record

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"


@pytest.fixture()
def data_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "data"
    monkeypatch.setenv("FLOWDESK_DATA_DIR", str(d))
    return d


def flowdesk(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT)},
    )


def runs_json() -> list[dict]:
    res = flowdesk("runs", "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)["runs"]


def test_runs_json_counts_each_runs_events(data_dir):
    assert flowdesk("run", str(SAMPLES / "hello.flow.json"), "--provider", "echo").returncode == 0
    assert flowdesk("run", str(SAMPLES / "review.flow.json"), "--provider", "echo").returncode == 3
    listed = runs_json()
    assert len(listed) == 2
    for run in listed:
        shown = flowdesk("show", run["id"], "--jsonl").stdout.splitlines()
        assert run["eventCount"] == len(shown) > 0


def test_runs_lists_what_each_run_spent(data_dir):
    """`flowdesk runs` has the history's Tokens · cost column, priced the same way: the research
    sample with echo (its two subagent calls counted) costs $0."""
    run = flowdesk("run", str(SAMPLES / "research.flow.json"), "--provider", "echo")
    assert run.returncode == 0, run.stderr
    listed = runs_json()
    assert listed[0]["cost"] == 0.0 and listed[0]["tokens"] > 0
    lines = flowdesk("runs").stdout.splitlines()
    assert "TOKENS · COST" in lines[0]
    assert f"{listed[0]['tokens']:,} · $0" in lines[1] and run.stdout.rstrip().endswith(
        f"tokens {listed[0]['tokens']:,} · $0"
    )


def test_a_completed_run_prints_its_id(data_dir):
    res = flowdesk("run", str(SAMPLES / "hello.flow.json"), "--provider", "echo", "--jsonl")
    assert res.returncode == 0
    run_id = runs_json()[0]["id"]
    assert f"run {run_id} completed" in res.stderr and f"flowdesk show {run_id[:8]}" in res.stderr
    assert all(json.loads(line) for line in res.stdout.splitlines())  # stdout stays pure JSON lines
    plain = flowdesk("run", str(SAMPLES / "hello.flow.json"), "--provider", "echo", "--no-store")
    assert plain.returncode == 0 and " completed" in plain.stderr and "flowdesk show" not in plain.stderr


def test_a_prefix_shared_with_an_imported_copy_is_ambiguous(data_dir):
    paused = flowdesk("run", str(SAMPLES / "review.flow.json"), "--provider", "echo")
    assert paused.returncode == 3
    run_id = runs_json()[0]["id"]
    store = RunStore()
    record = agentflow_record(store.get_run(run_id), store.workflow_json(run_id), store.events(run_id))
    store.close()
    assert flowdesk("resume", run_id, "--decide", "approve").returncode == 0
    store = RunStore()
    copy = store.import_agentflow(record)  # the paused record of a run completed since: a copy of its own
    store.close()
    assert copy.startswith(run_id) and copy != run_id
    res = flowdesk("show", run_id[:8])
    assert res.returncode == 2 and "ambiguous" in res.stderr and run_id in res.stderr and copy in res.stderr
    assert "there is no run" not in res.stderr
    assert flowdesk("show", run_id).returncode == 0  # the whole id is not ambiguous
    missing = flowdesk("show", "zzzz9999")
    assert missing.returncode == 2 and "there is no run 'zzzz9999'" in missing.stderr


def test_importing_the_same_record_twice_is_refused(data_dir, tmp_path):
    assert flowdesk("run", str(SAMPLES / "hello.flow.json"), "--provider", "echo", "--input", "hi").returncode == 0
    store = RunStore()
    run_id = store.list_runs()[0].id
    record = json.loads(
        json.dumps(agentflow_record(store.get_run(run_id), store.workflow_json(run_id), store.events(run_id)))
    )
    other = RunStore(tmp_path / "other.db")
    assert other.import_agentflow(record) == run_id
    with pytest.raises(AlreadyImported, match="in the run history already"):
        other.import_agentflow(record)
    assert other.count_runs() == 1
    with pytest.raises(AlreadyImported):  # nor into the history it came from
        store.import_agentflow(record)
    assert store.count_runs() == 1
    store.close()
    other.close()
