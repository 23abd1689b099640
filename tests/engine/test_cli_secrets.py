"""A URL password given with ``--var`` stays out of the run history and of what ``runs`` and
``show`` print (issue 30, item 14): masked as the run's events mask it."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from engine.store.queries import mask_url_passwords

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "hunter2-s3cret"
URL = f"https://bob:{PASSWORD}@example.com/data?page=1"


def flowdesk(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "PYTHONPATH": str(ROOT),
        "FLOWDESK_DATA_DIR": str(tmp_path / "data"),
        "FLOWDESK_CONFIG_DIR": str(tmp_path / "config"),
    }
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        stdin=subprocess.DEVNULL,
    )


def test_mask_url_passwords_masks_only_the_password() -> None:
    assert mask_url_passwords(URL) == "https://bob:••••@example.com/data?page=1"
    assert mask_url_passwords("see ftp://u:p%40ss@h:21/x and https://h/y") == "see ftp://u:••••@h:21/x and https://h/y"
    assert mask_url_passwords("https://u:p@ss@host/") == "https://u:••••@host/"  # the last @ ends the userinfo
    for kept in ("https://bob@example.com/", "https://example.com/a:b@c", "mailto:a@b.c", "no url", 3, None):
        assert mask_url_passwords(kept) == kept
    assert mask_url_passwords({"a": [URL, {"b": URL}], "n": 1}) == {
        "a": ["https://bob:••••@example.com/data?page=1", {"b": "https://bob:••••@example.com/data?page=1"}],
        "n": 1,
    }


def test_url_password_in_var_is_masked_in_stored_arguments_show_and_runs(tmp_path: Path) -> None:
    flow = tmp_path / "v.flow.json"
    flow.write_text(
        json.dumps(
            {
                "nodes": [
                    {"id": "start", "type": "start", "data": {"variables": [{"name": "src", "type": "string"}]}},
                    {"id": "a", "type": "agent", "data": {"model": "m", "userPrompt": "hi"}},
                ],
                "connections": [{"source": "start", "target": "a"}],
            }
        )
    )
    res = flowdesk(tmp_path, "run", str(flow), "--provider", "echo", "--var", f"src={URL}")
    assert res.returncode == 0, res.stderr
    masked = "https://bob:••••@example.com/data?page=1"
    listed = flowdesk(tmp_path, "runs")
    as_json = flowdesk(tmp_path, "runs", "--json")
    run = json.loads(as_json.stdout)["runs"][0]
    assert run["arguments"] == {"src": masked}
    shown = flowdesk(tmp_path, "show", run["id"])
    shown_jsonl = flowdesk(tmp_path, "show", run["id"], "--jsonl")
    assert f"arguments: src={masked}" in shown.stdout
    assert "bob:••••@example" in listed.stdout
    for out in (res, listed, as_json, shown, shown_jsonl):
        assert PASSWORD not in out.stdout + out.stderr
    db = tmp_path / "data" / "runs.db"
    assert PASSWORD.encode() not in db.read_bytes()  # nowhere in the file: arguments, events, workflow


def test_a_password_stored_by_an_older_version_is_masked_when_shown(tmp_path: Path) -> None:
    flow = tmp_path / "v.flow.json"
    flow.write_text(
        json.dumps(
            {
                "nodes": [{"id": "start", "type": "start"}, {"id": "a", "type": "agent", "data": {"model": "m"}}],
                "connections": [{"source": "start", "target": "a"}],
            }
        )
    )
    assert flowdesk(tmp_path, "run", str(flow), "--provider", "echo").returncode == 0
    conn = sqlite3.connect(tmp_path / "data" / "runs.db")
    with conn:
        conn.execute("UPDATE runs SET arguments = ?", (json.dumps({"src": URL}),))
    conn.close()
    for args in (("runs",), ("runs", "--json")):
        out = flowdesk(tmp_path, *args).stdout
        assert PASSWORD not in out and "bob:••••@" in out
