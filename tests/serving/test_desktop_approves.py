"""A run started over HTTP (``flowdesk serve``, a subprocess) is approved in the desktop's run
console, or answered from its Inbox panel, and the server then reports it completed with the
note in its output."""

from __future__ import annotations

import json
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


def test_a_run_started_over_http_is_answered_from_the_inbox_panel(
    qtbot,
    qloop,  # noqa: F811
    served_dirs,
    tmp_path,
    monkeypatch,
) -> None:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDockWidget, QMainWindow

    from editor.controllers.inbox import InboxController
    from editor.panels.inbox import InboxPanel

    monkeypatch.setenv("FLOWDESK_CONFIG_DIR", str(tmp_path / "config"))
    library, data = served_dirs
    frame = QMainWindow()
    qtbot.addWidget(frame)
    panel = InboxPanel()
    dock = QDockWidget("Inbox", frame)
    dock.setWidget(panel)
    frame.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
    frame.show()
    messages: list[str] = []
    store = RunStore(Path(data) / "runs.db")
    inbox = InboxController(frame, panel, dock, store, lambda: [], lambda _item: None, lambda m, _t: messages.append(m))
    try:
        with served(["serve", "--port", "0", "--library", str(library), "--provider", "echo"], data) as api:
            with httpx.Client(base_url=api.url, timeout=30) as c:
                run_id = c.post("/flows/review/runs", json={"vars": {"topic": "kites"}}).json()["runId"]
                deadline = time.monotonic() + 20
                while c.get(f"/runs/{run_id}").json()["status"] != "paused":
                    assert time.monotonic() < deadline
                    time.sleep(0.05)
                inbox.refresh()
                qtbot.waitUntil(lambda: run_id in [i.run_id for i in panel.items], timeout=10000)
                row = [i.run_id for i in panel.items].index(run_id)
                panel.table.setCurrentItem(panel.table.topLevelItem(row))
                assert panel.table.topLevelItem(row).text(1) == "Review"
                assert panel.table.topLevelItem(row).text(3) == "Send the draft?"
                buttons = {b.property("decision"): b for b in panel.decision_buttons}
                assert list(buttons) == ["approve", "reject"]
                qtbot.keyClicks(panel.note_edit, "too long")
                with qtbot.waitSignal(inbox.answered, timeout=15000) as answered:
                    qtbot.mouseClick(buttons["reject"], Qt.MouseButton.LeftButton)
                assert answered.args == [run_id, "completed"]
                body = c.get(f"/runs/{run_id}").json()  # the server sees what the desktop did
        assert body["status"] == "completed" and body["output"] == "Rejected with note [too long]"
        received = [e for e in store.events(run_id) if e.type == "input_received"]
        assert json.loads(received[-1].content) == {"decision": "reject", "note": "too long"}
        qtbot.waitUntil(lambda: run_id not in [i.run_id for i in panel.items], timeout=5000)
        assert any(f"Run {run_id[:8]} of Review answered (reject): completed." in m for m in messages)
    finally:
        inbox.timer.stop()
