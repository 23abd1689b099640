"""A run the desktop follows on a Temporal server, paused at its approval and answered by
another client (``flowdesk resume ID --temporal``): the window notices within a second or two,
says so, and follows the run on to its end (the server is the one source of truth)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

from ..editor.conftest import app, dialogs, isolated  # noqa: F401 - fixtures
from ..integration.conftest import SAMPLES, choose_provider, press_run, states, window  # noqa: F401
from ..run.conftest import qloop  # noqa: F401 - fixture
from .conftest import ROOT, needs_temporal
from .test_desktop_remote import _run_on_server

pytestmark = needs_temporal


def test_a_remote_run_answered_by_another_client_is_followed_on(qtbot, window, temporal_server, worker):
    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    choose_provider(window, "echo")
    _run_on_server(window, temporal_server)
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    console = window.run_console
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=20000):
        press_run(qtbot, window)
    qtbot.waitUntil(lambda: not console.bridge.is_busy and console.approvals.active_card is not None, timeout=5000)
    run_id = console.run_id
    resumed = subprocess.run(
        [sys.executable, "-m", "engine.cli", "resume", run_id, "--temporal", temporal_server, "--decide", "approve"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert resumed.returncode == 0, resumed.stderr
    answered = time.monotonic()
    with qtbot.waitSignal(console.run_finished, timeout=5000) as finished:
        pass
    assert time.monotonic() - answered < 5
    assert finished.args == ["completed"]
    assert console.approvals.cards == [] and not console.bridge.is_active
    assert states(window.scene)["signoff"] == "done" and states(window.scene)["send"] == "done"
    text = console.elsewhere_notice.text
    assert "answered elsewhere" in text and f"Temporal server at {temporal_server}" in text, text
    assert "Completed" in console.header.status_text
    # answered once, by the other client: the window sent no second answer
    received = [e for e in console.all_events() if e.type == "input_received"]
    assert len(received) == 1
