"""The Inbox panel (editor/controllers/inbox.py) answering a run another process paused, the
approval card's option buttons, an approval that times out in the console, and the tray
notification's setting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDockWidget, QMainWindow

from engine import RunStore, parse_workflow
from tests.engine.test_approval_richer import approval_flow

ROOT = Path(__file__).resolve().parents[2]


def paused_by_another_process(data: Path, flow: dict, tmp: Path) -> str:
    """``flowdesk run`` (a subprocess) until its approval pauses it; the run's id."""
    path = tmp / "inbox.flow.json"
    path.write_text(json.dumps(flow))
    res = subprocess.run(
        [sys.executable, "-m", "engine.cli", "run", str(path), "--provider", "echo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "FLOWDESK_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)},
    )
    assert res.returncode == 3, res.stderr
    return res.stderr.split("flowdesk resume ")[1].split()[0]


@pytest.fixture
def inbox(qtbot, qloop, tmp_path, monkeypatch):
    from editor.controllers.inbox import InboxController
    from editor.panels.inbox import InboxPanel

    monkeypatch.setenv("FLOWDESK_CONFIG_DIR", str(tmp_path / "config"))
    data = tmp_path / "data"
    data.mkdir()
    store = RunStore(data / "runs.db")
    frame = QMainWindow()
    qtbot.addWidget(frame)
    panel = InboxPanel()
    dock = QDockWidget("Inbox", frame)
    dock.setWidget(panel)
    frame.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
    frame.resize(1000, 600)
    frame.show()
    messages: list[str] = []
    controller = InboxController(
        frame, panel, dock, store, lambda: [], lambda item: None, lambda m, _t: messages.append(m)
    )
    controller.messages = messages  # type: ignore[attr-defined]
    controller.data = data  # type: ignore[attr-defined]
    yield controller
    controller.timer.stop()


def test_the_inbox_answers_a_run_paused_by_another_process(qtbot, inbox, tmp_path):
    run_id = paused_by_another_process(inbox.data, approval_flow(options=["Later", "Escalate"]), tmp_path)
    panel = inbox.panel
    inbox.refresh()
    qtbot.waitUntil(lambda: [i.run_id for i in panel.items] == [run_id], timeout=5000)
    assert panel.table.topLevelItem(0).text(1) == "Richer approval"
    assert panel.table.topLevelItem(0).text(3) == "Ship it?"
    assert inbox.dock.windowTitle() == "Inbox (1)"
    buttons = {b.property("decision"): b for b in panel.decision_buttons}
    assert list(buttons) == ["approve", "reject", "Later", "Escalate"]
    qtbot.keyClicks(panel.note_edit, "after lunch")
    with qtbot.waitSignal(inbox.answered, timeout=10000) as answered:
        qtbot.mouseClick(buttons["Later"], Qt.MouseButton.LeftButton)
    assert answered.args == [run_id, "completed"]
    store = inbox.store
    assert store.get_run(run_id).status == "completed"
    received = [e for e in store.events(run_id) if e.type == "input_received"]
    assert json.loads(received[0].content) == {"decision": "Later", "note": "after lunch"}
    assert any(e.content == "later Later after lunch" for e in store.events(run_id))
    qtbot.waitUntil(lambda: panel.items == [], timeout=5000)
    assert inbox.dock.windowTitle() == "Inbox"


def test_the_tray_setting_turns_notifications_off_and_on(qtbot, inbox, tmp_path):
    notified: list[tuple[str, str]] = []
    inbox.notified.connect(lambda title, msg: notified.append((title, msg)))
    qtbot.waitUntil(lambda: inbox._seen is not None, timeout=5000)  # listed once: nothing waits
    inbox.panel.notify_box.setChecked(False)
    assert not inbox.notify_enabled
    first = paused_by_another_process(inbox.data, approval_flow(), tmp_path)
    inbox.refresh()
    qtbot.waitUntil(lambda: [i.run_id for i in inbox.panel.items] == [first], timeout=5000)
    assert notified == []
    inbox.panel.notify_box.setChecked(True)
    assert inbox.notify_enabled
    second = paused_by_another_process(inbox.data, approval_flow(), tmp_path)
    inbox.refresh()
    qtbot.waitUntil(lambda: len(notified) == 1, timeout=5000)
    assert notified[0] == ("Waiting for your decision: Richer approval", "Ship it?")
    if inbox.tray is None:  # no system tray here (offscreen, Xvfb): the status bar says it
        assert "Waiting for your decision: Richer approval — Ship it?" in inbox.messages
    assert {i.run_id for i in inbox.panel.items} == {first, second}


def test_option_buttons_on_the_approval_card_and_a_timeout(qtbot, console):
    wf = parse_workflow(approval_flow(options=["Later"]))
    console.set_workflow(wf, "opt.flow.json")
    console.run_action.trigger()
    qtbot.waitUntil(lambda: console.approvals.active_card is not None, timeout=5000)
    card = console.approvals.active_card
    assert [b.text() for b in card.option_buttons] == ["Later"]
    assert not card.deadline_label.isVisible()
    card.note_edit.setText("soon")
    with qtbot.waitSignal(console.run_finished, timeout=5000) as finished:
        qtbot.mouseClick(card.option_buttons[0], Qt.MouseButton.LeftButton)
    assert finished.args == ["completed"]
    assert console.bridge.run.outputs["later"] == "later Later soon"
    # an approval that times out: the card says when; nobody answers; the run takes onTimeout
    wf = parse_workflow(approval_flow(options=["Later"], timeout_ms=600, on_timeout="reject"))
    console.set_workflow(wf, "timeout.flow.json")
    console.run_action.trigger()
    qtbot.waitUntil(lambda: console.approvals.active_card is not None, timeout=5000)
    card = console.approvals.active_card
    assert card.deadline_label.isVisibleTo(card) and "then it takes 'reject'" in card.deadline_label.text()
    with qtbot.waitSignal(console.run_finished, timeout=5000) as finished:
        pass
    assert finished.args == ["completed"]
    run = console.bridge.run
    received = next(e for e in run.events if e.type == "input_received")
    assert json.loads(received.content) == {"decision": "reject", "note": "", "timedOut": True}
    assert run.outputs["no"] == "no reject"
