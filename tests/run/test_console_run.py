"""Running the review sample from the console with the echo provider: the entries shown, in
order; the approval card answered by a click (approve, reject with a note); two parallel
approvals answered in order; cancel; store recording; exports."""

from __future__ import annotations

import json
import time

from PySide6.QtCore import Qt

from engine.store import RunStore

from .conftest import parallel_approvals, slow_echo

PAUSED_ENTRIES = [
    ("system", "run_status", "running"),
    ("start", "step_start", None),
    ("triage", "step_start", None),
    ("triage", "start_prompt", None),
    ("triage", "llm_response", None),
    ("route", "step_start", None),
    ("route", "logic_check", None),
    ("signoff", "step_start", None),
    ("signoff", "wait_input", None),
    ("system", "run_status", "paused"),
]


def shown(console) -> list[tuple[str, str, str]]:
    return [(e.node_id, e.type, e.content) for e in console.visible_entries()]


def check(entries, expected) -> None:
    assert [(n, t) for n, t, _ in entries] == [(n, t) for n, t, _ in expected]
    for (n, t, c), (_, _, want) in zip(entries, expected, strict=True):
        if want is not None:
            assert c == want, (n, t, c)


def run_to_pause(qtbot, console, review) -> None:
    console.set_workflow(review, "review.flow.json")
    with qtbot.waitSignal(console.approvals.waiting_changed, timeout=5000):
        console.run_action.trigger()
    qtbot.waitUntil(lambda: console.status == "paused" and console.approvals.active_card is not None, timeout=5000)


def test_review_sample_entries_in_order_until_the_approval(qtbot, console, review):
    run_to_pause(qtbot, console, review)
    check(shown(console), PAUSED_ENTRIES)
    entries = shown(console)
    assert "Hello, I was charged twice" in entries[3][2] and entries[3][2].startswith("Customer message:")
    assert entries[6][2].endswith("matched")
    assert console.header.status_text.startswith("● Paused")
    assert not console.run_action.isEnabled() and console.cancel_action.isEnabled()
    card = console.approvals.active_card
    assert card.request.node_id == "signoff"
    assert card.prompt_label.text().startswith("A refund reply is about to be sent.")
    assert "Hello, I was charged twice" in card.review.toPlainText()
    assert console.bridge.node_states()["signoff"] == "waiting"
    assert console.bridge.node_states()["triage"] == "done"
    assert ("start", "output", "triage") in console.bridge.followed_links()
    assert ("route", "condition-0", "signoff") in console.bridge.followed_links()
    assert ("route", "false", "general") not in console.bridge.followed_links()


def test_approve_by_click_resumes_on_the_approve_branch(qtbot, console, review):
    run_to_pause(qtbot, console, review)
    card = console.approvals.active_card
    with qtbot.waitSignal(console.run_finished, timeout=5000) as finished:
        qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
    assert finished.args == ["completed"]
    entries = shown(console)
    check(
        entries[len(PAUSED_ENTRIES) :],
        [
            ("signoff", "input_received", json.dumps({"decision": "approve", "note": ""})),
            ("system", "run_status", "running"),
            ("send", "step_start", None),
            ("send", "start_prompt", None),
            ("send", "llm_response", None),
            ("system", "run_status", "completed"),
        ],
    )
    assert entries[-2][2].startswith("Final reply to send:")
    assert not console.approvals.isVisible() and console.approvals.cards == []
    states = console.bridge.node_states()
    assert states["send"] == "done" and states["signoff"] == "done"
    assert states["revise"] == "skipped" and states["general"] == "skipped"
    assert ("signoff", "approve", "send") in console.bridge.followed_links()
    assert console.header.status_text == "● Completed"
    assert console.run_action.isEnabled() and not console.cancel_action.isEnabled()
    assert console.final_output().startswith("Final reply to send:")


def test_reject_with_a_note_takes_the_reject_branch(qtbot, console, review):
    run_to_pause(qtbot, console, review)
    card = console.approvals.active_card
    qtbot.keyClicks(card.note_edit, "Too generous, only promise a review")
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        qtbot.mouseClick(card.reject_button, Qt.MouseButton.LeftButton)
    entries = shown(console)
    received = [e for e in entries if e[1] == "input_received"]
    assert received == [
        ("signoff", "input_received", json.dumps({"decision": "reject", "note": "Too generous, only promise a review"}))
    ]
    nodes_after = [n for n, t, _ in entries[len(PAUSED_ENTRIES) :] if t == "step_start"]
    assert nodes_after == ["revise"]
    assert console.bridge.node_states()["send"] == "skipped"
    assert ("signoff", "reject", "revise") in console.bridge.followed_links()


def test_keyboard_approve(qtbot, console, review):
    run_to_pause(qtbot, console, review)
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        qtbot.keyClick(console.approvals.active_card.note_edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert any(t == "input_received" and "approve" in c for _, t, c in shown(console))


def test_two_pending_approvals_answered_through_their_cards_in_order(qtbot, console):
    console.set_workflow(parallel_approvals())
    console.input_edit.setPlainText("")
    console.run_action.trigger()
    qtbot.waitUntil(lambda: len(console.approvals.cards) == 2 and not console.bridge.is_busy, timeout=5000)
    first, second = console.approvals.cards
    assert first.request.active and not second.request.active
    assert first.request.node_id == "ap1" and second.request.node_id == "ap2"
    assert first.approve_button.isEnabled() and not second.approve_button.isEnabled()
    assert first.review.toPlainText() == "draft: go" and second.review.toPlainText() == "draft: go"
    assert first.prompt_label.text() == "Legal sign-off?" and second.prompt_label.text() == "Tone sign-off?"
    assert console.bridge.node_states()["ap2"] == "queued"
    assert any(t == "approval_queued" and n == "ap2" for n, t, _ in shown(console))

    qtbot.keyClicks(first.note_edit, "one")
    qtbot.mouseClick(first.approve_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(
        lambda: (
            len(console.approvals.cards) == 1
            and console.approvals.cards[0].request.active
            and not console.bridge.is_busy
        ),
        timeout=5000,
    )
    card = console.approvals.cards[0]
    assert card.request.node_id == "ap2"
    qtbot.keyClicks(card.note_edit, "two")
    with qtbot.waitSignal(console.run_finished, timeout=5000) as finished:
        qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
    assert finished.args == ["completed"]
    received = [(n, json.loads(c)) for n, t, c in shown(console) if t == "input_received"]
    assert received == [
        ("ap1", {"decision": "approve", "note": "one"}),
        ("ap2", {"decision": "approve", "note": "two"}),
    ]
    responses = {n: c for n, t, c in shown(console) if t == "llm_response"}
    assert responses["done1"] == "done1: draft: go" and responses["done2"] == "done2: draft: go"


def test_cancel_during_a_slow_response_ends_cancelled_within_a_second(qtbot, console, review):
    console.set_workflow(review)
    console.set_resolver_factory(slow_echo(30))
    console.run_action.trigger()
    qtbot.waitUntil(lambda: console.bridge.node_states().get("triage") == "running", timeout=5000)
    started = time.monotonic()
    with qtbot.waitSignal(console.run_finished, timeout=1000) as finished:
        qtbot.mouseClick(console.cancel_button, Qt.MouseButton.LeftButton)
    assert time.monotonic() - started < 1.0
    assert finished.args == ["cancelled"]
    assert console.bridge.node_states()["triage"] == "cancelled"
    assert shown(console)[-1][1:] == ("run_status", "cancelled")
    assert console.header.status_text.startswith("● Cancelled")
    assert console.run_action.isEnabled()


def test_cancel_while_paused(qtbot, console, review):
    run_to_pause(qtbot, console, review)
    with qtbot.waitSignal(console.run_finished, timeout=1000) as finished:
        console.cancel_action.trigger()
    assert finished.args == ["cancelled"]
    assert console.approvals.cards == [] and not console.approvals.isVisible()


def test_the_run_is_recorded_in_the_store(qtbot, console, review, tmp_path):
    store = RunStore(tmp_path / "runs.db")
    console.set_store(store)
    run_to_pause(qtbot, console, review)
    info = store.get_run(console.run_id)
    assert info is not None and info.status == "paused" and info.waiting
    assert store.snapshot_of(console.run_id)["pending"]["nodeId"] == "signoff"
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        qtbot.mouseClick(console.approvals.active_card.approve_button, Qt.MouseButton.LeftButton)
    info = store.get_run(console.run_id)
    assert info.status == "completed"
    stored = [(e.node_id, e.type, e.content) for e in store.events(console.run_id)]
    assert stored == [(e.node_id, e.type, e.content) for e in console.all_events()]


def test_exports(qtbot, console, review, tmp_path):
    run_to_pause(qtbot, console, review)
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        qtbot.mouseClick(console.approvals.active_card.approve_button, Qt.MouseButton.LeftButton)
    jsonl = tmp_path / "log.jsonl"
    console.export_jsonl(jsonl)
    lines = [json.loads(x) for x in jsonl.read_text().splitlines()]
    assert [x["type"] for x in lines] == [e.type for e in console.all_events()]
    assert set(lines[0]) >= {"timestamp", "nodeId", "type", "content"}
    path = console.export_record(tmp_path)
    assert path.name == f"run_{console.run_id}.json"
    record = json.loads(path.read_text())
    assert record["runId"] == console.run_id and record["status"] == "completed"
    assert record["workflowName"] == "Support reply review"
    assert [x["type"] for x in record["logs"]] == [x["type"] for x in lines]
    assert record["results"]["send"].startswith("Final reply to send:")
    assert record["workflow"]["nodes"][0]["id"] == "start"
    console.copy_final_output()
    from PySide6.QtGui import QGuiApplication

    assert QGuiApplication.clipboard().text() == console.final_output()
