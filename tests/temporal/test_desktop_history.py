"""The desktop's run history lists a Temporal server's runs beside the local ones, each with a
"Temporal" badge, and opens one through the same read-only view, RunState and console as a
stored run (a real dev server and worker; runs started from the command line)."""

from __future__ import annotations

import os
import re
import subprocess
import sys

from PySide6.QtCore import Qt

from ..editor.conftest import app, dialogs, isolated  # noqa: F401 - fixtures
from ..integration.conftest import SAMPLES, window  # noqa: F401
from ..run.conftest import qloop  # noqa: F401 - fixture
from .conftest import ROOT, needs_temporal

pytestmark = needs_temporal


def _cli(*args):
    res = subprocess.run(
        [sys.executable, "-m", "engine.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
        env=dict(os.environ),
    )
    assert res.returncode == 0, res.stderr
    return res


def test_remote_runs_are_listed_with_a_badge_and_open_like_local_ones(qtbot, window, temporal_server, worker):
    from editor.history.model import COL_STATUS, COL_WORKFLOW, SERVER_ROLE
    from editor.run_view import RunViewWindow
    from editor.window.settings import settings

    hello = str(SAMPLES / "hello.flow.json")
    _cli("run", hello, "--provider", "echo", "--input", "a local run")  # into this test's own run store
    remote = _cli(
        "run",
        hello,
        "--provider",
        "echo",
        "--input",
        "a remote run",
        "--temporal",
        temporal_server,
        "--task-queue",
        "shared",
    )
    run_id = re.search(r"run ([0-9a-f]{32}) completed", remote.stderr).group(1)

    history = window.history
    history.refresh()
    qtbot.waitUntil(lambda: len(history.model.runs) == 1, timeout=5000)
    assert history.remote_server is None  # no server configured: local runs only
    local_id = history.model.runs[0].id

    s = settings()
    s.setValue("run/temporalAddress", temporal_server)
    window.providers.sync_remote_history()
    assert history.remote_server == temporal_server
    qtbot.waitUntil(lambda: history.model.row_of(run_id) >= 0, timeout=20000)
    model = history.model
    assert {r.id for r in model.runs} >= {run_id, local_id}
    row, local_row = model.row_of(run_id), model.row_of(local_id)
    assert model.index(row, COL_WORKFLOW).data(SERVER_ROLE) == temporal_server  # the badge
    assert model.index(local_row, COL_WORKFLOW).data(SERVER_ROLE) == ""  # a local run has none
    assert (
        model.index(row, COL_WORKFLOW).data(Qt.ItemDataRole.AccessibleTextRole)
        == f"Hello (Temporal run on {temporal_server})"
    )
    assert model.index(row, COL_STATUS).data() == "Completed"
    assert f"Temporal server at {temporal_server}" in model.index(row, COL_STATUS).data(Qt.ItemDataRole.ToolTipRole)
    assert model.index(row, 4).data() == "a remote run"

    history.select_run(run_id)
    assert history.open_action.isEnabled()
    assert not history.delete_action.isEnabled() and not history.resume_action.isEnabled()
    with qtbot.waitSignal(history.run_opened, timeout=20000) as opened:
        history.open_action.trigger()
    opened_id, workflow, events, info = opened.args
    assert opened_id == run_id and workflow.name == "Hello" and info.server == temporal_server
    qtbot.waitUntil(lambda: any(w.run_id == run_id for w in window.run_views.run_windows), timeout=5000)
    view = next(w for w in window.run_views.run_windows if w.run_id == run_id)
    assert isinstance(view, RunViewWindow)
    # the same reducer and console as a local run: node states and log from the server's events
    assert view.run_state.states == {"start": "done", "greeter": "done"}
    assert view.run_state.status == "completed"
    assert f"Temporal {temporal_server}" in view.console.header.run_id_label.text()
    assert f"on Temporal {temporal_server}" in view.banner_label.text()
    assert [e.type for e in events][-1] == "run_status" and events[-1].content == "completed"
    assert any(e.type == "llm_response" and "a remote run" in e.content for e in events)

    # the local run opens from the store as before
    with qtbot.waitSignal(history.run_opened, timeout=5000) as opened_local:
        assert history.open_run(local_id)
    assert not getattr(opened_local.args[3], "server", "")

    if os.environ.get("FLOWDESK_SHOT"):
        window.history_dock.show()
        window.history_dock.raise_()
        history.select_run(local_id)
        qtbot.waitUntil(history.isVisible, timeout=2000)
        window.grab().save(os.environ["FLOWDESK_SHOT"])
        view.grab().save(os.environ["FLOWDESK_SHOT"].replace(".png", "-view.png"))

    s.setValue("run/temporalAddress", "")
    window.providers.sync_remote_history()
    qtbot.waitUntil(lambda: model.row_of(run_id) < 0, timeout=5000)


def test_a_remote_run_paused_while_the_app_was_closed_is_taken_up_from_the_history(
    qtbot, window, temporal_server, worker
):
    """A run started elsewhere waits at its approval on the server: the history's Resume opens it
    in a window of its own with its approval card; Approve goes to the server and the run ends."""
    from editor.window.settings import settings

    review = str(SAMPLES / "review.flow.json")
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine.cli",
            "run",
            review,
            "--provider",
            "echo",
            "--temporal",
            temporal_server,
            "--task-queue",
            "shared",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=90,
        env=dict(os.environ),
    )
    assert res.returncode == 3, res.stderr  # paused
    run_id = re.search(r"resume ([0-9a-f]{32})", res.stderr).group(1)

    history = window.history
    settings().setValue("run/temporalAddress", temporal_server)
    window.providers.sync_remote_history()
    qtbot.waitUntil(lambda: history.model.row_of(run_id) >= 0, timeout=20000)
    history.select_run(run_id)
    assert history.resume_action.isEnabled() and not history.delete_action.isEnabled()
    history.resume_action.trigger()
    qtbot.waitUntil(lambda: any(w.run_id == run_id and w.live for w in window.run_views.run_windows), timeout=20000)
    view = next(w for w in window.run_views.run_windows if w.run_id == run_id)
    console = view.console
    qtbot.waitUntil(lambda: console.approvals.active_card is not None, timeout=5000)
    assert console.bridge.run_state.states.get("signoff") == "waiting"
    with qtbot.waitSignal(console.run_finished, timeout=30000) as finished:
        qtbot.mouseClick(console.approvals.active_card.approve_button, Qt.MouseButton.LeftButton)
    assert finished.args == ["completed"]
    assert console.bridge.run_state.states.get("send") == "done"
    settings().setValue("run/temporalAddress", "")
    window.providers.sync_remote_history()
