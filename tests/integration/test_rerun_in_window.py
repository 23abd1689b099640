"""Issue 18 in the window: "Run from here" after a run shows the upstream nodes "from cache" on the
canvas (a state of its own) and runs the node and what follows; pinning a node's output from the
inspector's Run tab badges it and it does not run."""

from __future__ import annotations

from PySide6.QtCore import Qt

from .conftest import states
from .test_history_in_window import run_review_to_the_end


def test_run_from_here_shows_upstream_from_cache(qtbot, window):
    first = run_review_to_the_end(qtbot, window)
    console = window.run_console
    window.scene.clearSelection()
    window.scene.node_items["send"].setSelected(True)
    assert window.act_run_from.isEnabled()
    with qtbot.waitSignal(console.run_finished, timeout=5000) as finished:
        window.act_run_from.trigger()
    assert finished.args == ["completed"]
    assert console.run_id != first
    got = states(window.scene)
    assert got["start"] == got["triage"] == got["route"] == got["signoff"] == "cached"
    assert got["send"] == "done"
    hits = [e for e in console.bridge.run.events if e.type == "cache_hit"]
    assert [e.node_id for e in hits] == ["start", "triage", "route", "signoff"]
    assert all(e.extra["fromRun"] == first for e in hits)
    assert console.bridge.run_state.details["triage"].cached_from == first
    item = window.scene.node_items["triage"]
    assert "From cache" in item.toolTip()


def test_pin_an_output_from_the_run_tab(qtbot, window):
    run_review_to_the_end(qtbot, window)
    window.scene.clearSelection()
    window.scene.node_items["triage"].setSelected(True)
    details = window.node_run_details
    qtbot.waitUntil(lambda: details.pin_button.isEnabled(), timeout=2000)
    qtbot.mouseClick(details.pin_button, Qt.MouseButton.LeftButton)
    node = window.document.node("triage")
    assert node.data.pinnedOutput == console_output(window, "triage")
    assert window.scene.node_items["triage"].pinned
    assert details.unpin_button.isEnabled() and "Pinned" in details.pin_label.text()
    window.document.undo_stack.undo()
    assert getattr(window.document.node("triage").data, "pinnedOutput", None) is None
    window.document.undo_stack.redo()
    qtbot.mouseClick(details.unpin_button, Qt.MouseButton.LeftButton)
    assert "pinnedOutput" not in window.document.node("triage").data.model_dump()
    assert not window.scene.node_items["triage"].pinned


def console_output(window, node_id: str) -> str:
    return window.run_console.bridge.run_state.details[node_id].output


def test_history_compare_with_previous_run(qtbot, window):
    first = run_review_to_the_end(qtbot, window)
    second = run_review_to_the_end(qtbot, window)
    window.history_dock.show()
    qtbot.waitUntil(lambda: second in [r.id for r in window.history.model.runs], timeout=3000)
    assert window.history.select_run(second)
    assert window.history.compare_action.isEnabled()
    assert window.history.compare_action.text() == "Compare with Previous Run"
    window.history.compare_action.trigger()
    win = window.history.compare_windows[-1]
    assert (win.run_a, win.run_b) == (first, second)
    assert win.result["workflow"]["changed"] == {}
    win.close()
