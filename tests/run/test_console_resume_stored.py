"""A paused run recorded by another process (here the CLI) is taken up in the console: its
log and approval card are shown, a click resumes it, and the store records the rest."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import Qt

from tests.fakes.cli_runs import paused_by_the_cli

ROOT = Path(__file__).resolve().parents[2]


def test_take_up_a_paused_run_and_approve_it(qtbot, console, tmp_path):
    store, run_id = paused_by_the_cli(tmp_path / "data")
    # step_end is shown on its step's row, not as a row of its own
    before = [(e.node_id, e.type, e.content) for e in store.events(run_id) if e.type != "step_end"]
    console.set_store(store)
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=2000):
        assert console.open_paused_run(run_id)
    shown = [x for x in before if x[1] != "step_end"]  # a step_end is shown on its step's row
    assert [(e.node_id, e.type, e.content) for e in console.visible_entries()] == shown
    card = console.approvals.active_card
    assert card.request.node_id == "signoff" and "charged twice" in card.review.toPlainText()
    assert console.bridge.node_states()["signoff"] == "waiting"
    assert console.header.status_text.startswith("● Paused")
    with qtbot.waitSignal(console.run_finished, timeout=5000) as finished:
        qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
    assert finished.args == ["completed"]
    assert store.get_run(run_id).status == "completed"
    stored = [(e.node_id, e.type, e.content) for e in store.events(run_id) if e.type != "step_end"]
    assert stored[: len(before)] == before
    appended = stored[len(before) :]
    assert appended[0][:2] == ("signoff", "input_received") and json.loads(appended[0][2])["decision"] == "approve"
    assert [n for n, t, _ in appended if t == "llm_response"] == ["send"]
    assert [(e.node_id, e.type, e.content) for e in console.visible_entries()] == [
        x for x in stored if x[1] != "step_end"
    ]


def test_cancel_a_taken_up_run_records_it_cancelled(qtbot, console, tmp_path):
    store, run_id = paused_by_the_cli(tmp_path / "data")
    console.set_store(store)
    assert console.open_paused_run(run_id)
    with qtbot.waitSignal(console.run_finished, timeout=2000) as finished:
        console.cancel_run()
    assert finished.args == ["cancelled"]
    assert store.get_run(run_id).status == "cancelled"


def test_a_run_that_is_not_paused_is_refused_with_a_reason(qtbot, console, tmp_path):
    store, run_id = paused_by_the_cli(tmp_path / "data")
    store.update_run(run_id, status="completed")
    console.set_store(store)
    assert not console.open_paused_run(run_id)
    assert "not a paused run" in console.header.status_text
    assert not console.bridge.is_active


def test_a_run_started_here_and_answered_elsewhere_is_not_continued_twice(qtbot, console, review, tmp_path):
    # The window's own paused run is in the run history too, where another process (the HTTP
    # API, an inbox, `flowdesk resume`) may answer it; the window's copy must not go on then.
    from engine.store import RunStore

    store = RunStore(tmp_path / "runs.db")
    console.set_store(store)
    console.set_workflow(review)
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=5000):
        console.start_run()
    qtbot.waitUntil(lambda: not console.bridge.is_busy, timeout=5000)
    run_id = console.run_id
    RunStore(tmp_path / "runs.db").claim_for_resume(run_id)  # answered from elsewhere
    with qtbot.waitSignal(console.bridge.error_occurred, timeout=2000) as said:
        console.approvals.decide_active("approve")
    assert "answered elsewhere" in said.args[0]
    # what the console shows last is that reason, not a pointer to "the message above"
    assert "answered elsewhere" in console.header.status_text and "message above" not in console.header.status_text
    assert store.get_run(run_id).status == "running"  # the other process's, untouched here
    assert [e for e in store.events(run_id) if e.type == "input_received"] == []


def test_a_taken_up_run_answered_elsewhere_meanwhile_is_let_go_of(qtbot, console, tmp_path):
    # Taken up from the history (its owner gone), then answered by another process before a
    # decision came here: the console notices by itself, and never claims or continues it.
    store, run_id = paused_by_the_cli(tmp_path / "data")
    console.set_store(store)
    assert console.open_paused_run(run_id)
    from engine.store import RunStore

    RunStore(tmp_path / "data" / "runs.db").claim_for_resume(run_id)
    with qtbot.waitSignal(console.answered_elsewhere, timeout=3000) as said:
        pass
    assert "answered elsewhere" in said.args[0] and "goes on there" in said.args[0]
    assert console.approvals.cards == [] and not console.bridge.is_active
    assert console.elsewhere_notice.isVisible() and not console.elsewhere_notice.open_button.isVisible()
    assert store.get_run(run_id).status == "running"  # the other process's, untouched here
    assert [e for e in store.events(run_id) if e.type == "input_received"] == []
