"""Runs recorded by another process: the CLI, as a user would start it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from engine.store import RunStore

ROOT = Path(__file__).resolve().parents[2]


def paused_by_the_cli(data: Path) -> tuple[RunStore, str]:
    """Run the review sample with ``flowdesk run`` into the history at ``data`` until its
    approval pauses it; the store there and the run's id."""
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine.cli",
            "run",
            str(ROOT / "samples" / "review.flow.json"),
            "--provider",
            "echo",
            "--jsonl",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "FLOWDESK_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)},
    )
    assert res.returncode == 3, res.stderr  # paused
    store = RunStore(data / "runs.db")
    return store, store.list_runs()[0].id
