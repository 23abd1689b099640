"""The desktop runs a workflow on a Temporal server (Run ▸ Run On) and follows it live:
the canvas states, the log and the approval card, answered from the window."""

from __future__ import annotations

import os
import threading

import pytest
from PySide6.QtCore import Qt, QThread

from ..editor.conftest import app, dialogs, isolated  # noqa: F401 - fixtures
from ..integration.conftest import SAMPLES, choose_provider, followed, press_run, states, window  # noqa: F401
from ..run.conftest import qloop  # noqa: F401 - fixture
from .conftest import needs_temporal

pytestmark = needs_temporal


@pytest.fixture
def gui_loop_callers(qloop, monkeypatch):
    """The threads that hand callbacks to the GUI's event loop from elsewhere (call_soon_threadsafe)."""
    callers = set()
    original = qloop.call_soon_threadsafe

    def recording(callback, *args, **kwargs):
        # An executor's result (asyncio.to_thread on the GUI loop: qasync's worker QThreads,
        # which Python names "Dummy-N" like any foreign thread) comes back through asyncio's
        # own future-chaining callback: told apart by that (or the worker's class).
        name = threading.current_thread().name
        if name.startswith("Dummy-"):
            handed = getattr(callback, "__qualname__", "") or repr(callback)
            worker = type(QThread.currentThread()).__name__ == "_QThreadWorker"
            executor = handed.startswith("_chain_future.") or handed == "_set_state"
            name = "executor-result" if worker or executor else f"{name} handing {handed}"
        callers.add(name)
        return original(callback, *args, **kwargs)

    monkeypatch.setattr(qloop, "call_soon_threadsafe", recording)
    return callers


def _run_on_server(window, address):
    from editor.window.settings import settings

    s = settings()
    s.setValue("run/temporalAddress", address)
    s.setValue("run/temporalTaskQueue", "shared")
    menu = window.run_on_menu
    menu.aboutToShow.emit()
    remote = [a for a in menu.actions() if a.text().startswith("Temporal Server (")]
    assert remote and remote[0].isEnabled(), [a.text() for a in menu.actions()]
    remote[0].trigger()
    assert s.value("run/on") == "temporal"


def test_review_runs_on_the_server_and_is_approved_from_the_window(
    qtbot, window, temporal_server, worker, gui_loop_callers
):
    from engine import RemoteRun

    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    choose_provider(window, "echo")
    _run_on_server(window, temporal_server)
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    console = window.run_console
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=20000) as waiting:
        press_run(qtbot, window)
    assert waiting.args == [True]
    assert isinstance(console.bridge.run, RemoteRun)
    qtbot.waitUntil(lambda: states(window.scene)["signoff"] == "waiting", timeout=5000)
    s = states(window.scene)
    assert (s["start"], s["triage"], s["route"], s["signoff"]) == ("done", "done", "done", "waiting")
    assert followed(window.scene) == {
        ("start", "output", "triage"),
        ("triage", "output", "route"),
        ("route", "condition-0", "signoff"),
    }
    assert "Waiting for approval" in window.windowTitle()
    assert f"Temporal {temporal_server}" in console.header.run_id_label.text()  # the remote run's badge
    card = console.approvals.active_card
    assert card is not None and card.request.node_id == "signoff"
    assert "charged twice" in card.request.input_text
    if os.environ.get("FLOWDESK_SHOT"):
        window.grab().save(os.environ["FLOWDESK_SHOT"])
    with qtbot.waitSignal(console.run_finished, timeout=20000) as finished:
        qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
    assert finished.args == ["completed"]
    qtbot.waitUntil(lambda: states(window.scene)["send"] == "done", timeout=5000)
    assert states(window.scene)["signoff"] == "done"
    # The server keeps the remote run; the local run store does not record it.
    assert window.store is None or window.store.get_run(console.run_id) is None
    # The Temporal SDK's own (Rust) threads never reach the GUI's loop, nor Qt through it: every
    # server call is made on Flowdesk's server thread, whose results alone come back here.
    assert "flowdesk-temporal" in gui_loop_callers and gui_loop_callers <= {
        "flowdesk-temporal",
        "MainThread",
        "executor-result",
    }
