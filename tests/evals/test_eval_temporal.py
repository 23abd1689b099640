"""``flowdesk eval --temporal``: the cases run as remote runs on a real Temporal dev server and
``flowdesk worker`` (the ``temporal`` extra; skipped without it)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.temporal.conftest import needs_temporal, temporal_server, worker  # noqa: F401  (fixtures)

ROOT = Path(__file__).resolve().parents[2]


@needs_temporal
def test_eval_cases_run_as_remote_runs(temporal_server, worker, tmp_path) -> None:  # noqa: F811
    env = {**os.environ, "FLOWDESK_DATA_DIR": str(tmp_path / "data"), "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine.cli",
            "eval",
            str(ROOT / "samples" / "evals.flow.json"),
            "--provider",
            "echo",
            "--temporal",
            temporal_server,
            "--task-queue",
            "shared",
            "--json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["passRate"] == 0.8
    assert [c["name"] for c in doc["cases"] if not c["passed"]] == ["apology"]
    assert all(c["runId"] and c["status"] == "completed" for c in doc["cases"])
    # the runs are the server's: listed there, not in the local history
    listed = subprocess.run(
        [sys.executable, "-m", "engine.cli", "runs", "--temporal", temporal_server, "--json"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    remote_ids = {r.get("id") or r.get("runId") for r in json.loads(listed.stdout)["runs"]}
    assert {c["runId"] for c in doc["cases"]} <= remote_ids
