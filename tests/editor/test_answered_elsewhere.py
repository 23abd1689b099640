"""A run paused in the window and answered by another process (``flowdesk resume``, the HTTP
API, an inbox): the window notices by itself within a second or two, offers no decision any
more, says where the run went (with *Open in Run history*), never continues the run, and a new
run can start. Answered in the window itself, it goes on as before, with no such notice."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from PySide6.QtCore import Qt

from engine import RunStore

from ..run.conftest import qloop  # noqa: F401 - fixture
from .conftest import ROOT, copy_sample, open_flow

pytestmark = pytest.mark.usefixtures("qloop")


def _paused_review_run(window, qtbot, tmp_path) -> str:
    from editor.window.settings import settings

    settings().setValue("run/provider", "echo")
    open_flow(window, copy_sample(tmp_path, "review"))
    console = window.run_console
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=10000):
        window.act_run.trigger()
    qtbot.waitUntil(lambda: not console.bridge.is_busy and console.approvals.active_card is not None, timeout=5000)
    assert console.bridge.pending_approval == "signoff"
    return console.run_id


def _resume_elsewhere(run_id: str) -> subprocess.CompletedProcess[str]:
    """``flowdesk resume RUN --decide approve`` in a process of its own, on the same run history
    (the test's FLOWDESK_DATA_DIR, inherited), as a user types it in a terminal."""
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", "resume", run_id, "--decide", "approve", "--provider", "echo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def test_a_run_answered_by_flowdesk_resume_is_let_go_of_and_said_so(window, qtbot, tmp_path):
    console = window.run_console
    run_id = _paused_review_run(window, qtbot, tmp_path)
    assert window.scene.node_items["signoff"].run_state == "waiting"
    resumed = _resume_elsewhere(run_id)
    assert resumed.returncode == 0, resumed.stderr
    answered = time.monotonic()
    qtbot.waitUntil(lambda: console.elsewhere_notice.isVisible(), timeout=3000)
    assert time.monotonic() - answered < 3
    # no decision is offered any more: no card, nothing waiting on the canvas, no waiting title
    assert console.approvals.cards == [] and console.approvals.active_card is None
    assert console.bridge.approvals() == [] and console.bridge.pending_approval is None
    assert window.scene.node_items["signoff"].run_state != "waiting"
    assert not window.runs.waiting_for_input and "Waiting for approval" not in window.windowTitle()
    # said clearly, with who answered it and how to see the rest
    text = console.elsewhere_notice.text
    assert "answered elsewhere" in text and "process " in text and "completed since" in text, text
    assert "Open it from Run history" in text
    assert str(os.getpid()) not in text  # the other process, not this one
    assert "Answered elsewhere" in console.header.status_text
    assert console.elsewhere_notice.open_button.isVisible()
    # the log of what happened here stays
    assert any(e.node_id == "signoff" and e.type == "wait_input" for e in console.all_events())
    # never continued here: the store has the other process's run, answered once
    store = RunStore()
    assert store.get_run(run_id).status == "completed"
    assert len([e for e in store.events(run_id) if e.type == "input_received"]) == 1
    # the editor is ready for a new run (F5), and the notice goes with it
    assert not console.bridge.is_active and window.act_run.isEnabled()
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=10000):
        window.act_run.trigger()
    assert console.run_id != run_id and not console.elsewhere_notice.isVisible()
    qtbot.waitUntil(lambda: not console.bridge.is_busy, timeout=5000)
    console.cancel_run()
    qtbot.waitUntil(lambda: not console.bridge.is_active, timeout=5000)


def test_open_in_run_history_shows_the_run_as_stored_now(window, qtbot, tmp_path):
    console = window.run_console
    run_id = _paused_review_run(window, qtbot, tmp_path)
    other = RunStore()  # another process's store on the same file: it claims, then ends the run
    other.claim_for_resume(run_id)
    other.update_run(run_id, status="completed", owner_pid=4242, owner_host="build-box")
    qtbot.waitUntil(lambda: console.elsewhere_notice.isVisible(), timeout=3000)
    assert "by process 4242 on build-box" in console.elsewhere_notice.text
    qtbot.mouseClick(console.elsewhere_notice.open_button, Qt.MouseButton.LeftButton)
    opened = [w for w in window.run_views.run_windows if w.run_id == run_id]
    assert opened and not opened[0].live
    assert window.history.selected_run_ids() == [run_id]
    for w in opened:
        w.close()


def test_answered_in_the_window_goes_on_here_with_no_notice(window, qtbot, tmp_path):
    console = window.run_console
    run_id = _paused_review_run(window, qtbot, tmp_path)
    with qtbot.waitSignal(console.run_finished, timeout=10000) as finished:
        qtbot.mouseClick(console.approvals.active_card.approve_button, Qt.MouseButton.LeftButton)
    assert finished.args == ["completed"]
    qtbot.wait(1500)  # past a look at the store: its own claim is not news
    assert not console.elsewhere_notice.isVisible()
    assert RunStore().get_run(run_id).status == "completed"
    assert "Completed" in console.header.status_text
