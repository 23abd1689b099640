"""A run started over HTTP (``flowdesk serve``, a subprocess) is approved in the desktop's run
console, and the server then reports it completed with the note in its output."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from engine.store import RunStore
from tests.run.conftest import console, qloop  # noqa: F401 - the console fixture and its event loop
from tests.serving.conftest import served

pytest.importorskip("fastapi", reason="flowdesk serve needs the 'serve' extra (FastAPI): pip install -e '.[serve]'")
httpx = pytest.importorskip("httpx")


def test_a_run_started_over_http_is_approved_in_the_desktop(qtbot, console, served_dirs) -> None:  # noqa: F811
    from PySide6.QtCore import Qt

    library, data = served_dirs
    with served(["serve", "--port", "0", "--library", str(library), "--provider", "echo"], data) as api:
        with httpx.Client(base_url=api.url, timeout=30) as c:
            run_id = c.post("/flows/review/runs", json={"vars": {"topic": "boats"}}).json()["runId"]
            deadline = time.monotonic() + 20
            while c.get(f"/runs/{run_id}").json()["status"] != "paused":
                assert time.monotonic() < deadline
                time.sleep(0.05)
            store = RunStore(Path(data) / "runs.db")
            console.set_store(store)
            assert console.open_paused_run(run_id)
            card = console.approvals.active_card
            assert card.request.node_id == "ok"
            card.note_edit.setText("from the desktop")
            with qtbot.waitSignal(console.run_finished, timeout=10000) as finished:
                qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
            assert finished.args == ["completed"]
            body = c.get(f"/runs/{run_id}").json()
    assert body["status"] == "completed"
    assert body["output"] == "Sent with note [from the desktop]: Draft about boats"
