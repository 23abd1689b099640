"""The main window runs the workflow it shows: F5, the live canvas, the approval card,
the waiting marker in the title, the inspector's Run tab, failures and a deep copy."""

from __future__ import annotations

import json

from PySide6.QtCore import Qt

from engine import load_workflow

from .conftest import SAMPLES, choose_provider, click_node, followed, press_run, states


def words(text: str) -> list[str]:
    return text.split()


PATH_TO_SIGNOFF = {("start", "output", "triage"), ("triage", "output", "route"), ("route", "condition-0", "signoff")}


def test_review_run_pauses_for_approval_then_completes(qtbot, window):
    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    choose_provider(window, "echo")
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    console = window.run_console
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=5000) as waiting:
        press_run(qtbot, window)
    assert waiting.args == [True]
    qtbot.waitUntil(lambda: states(window.scene)["signoff"] == "waiting", timeout=2000)
    s = states(window.scene)
    assert (s["start"], s["triage"], s["route"], s["signoff"]) == ("done", "done", "done", "waiting")
    assert s["send"] is None or s["send"] not in ("done", "running")
    assert followed(window.scene) == PATH_TO_SIGNOFF
    assert "Waiting for approval" in window.windowTitle()
    assert "Waiting for approval" in window.scene.node_items["signoff"].toolTip()
    assert not window.act_run.isEnabled()  # F5 would do nothing while a run is live: it says so
    assert "waiting for approval" in window.act_run.toolTip()
    assert window.inspector_tabs.currentWidget() is window.node_run_details
    # The console grew for the run; the fitted canvas framed the whole graph again.
    assert window.view.visible_scene_rect().contains(window.scene.items_bounds())
    assert window.view.minimap.isHidden()  # everything is in view: the minimap would only cover nodes
    # The history lists the paused run (its row is written by the recorder's thread).
    listed = {r.id: r.status for r in window.history.model.runs}
    assert listed == {console.run_id: "paused"}
    assert window.run_console_dock.isVisible()

    card = console.approvals.active_card
    assert card is not None and card.request.node_id == "signoff"
    assert card.approve_button.isVisible()
    with qtbot.waitSignal(console.run_finished, timeout=5000) as finished:
        qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
    assert finished.args == ["completed"]
    qtbot.waitUntil(lambda: states(window.scene)["send"] == "done", timeout=2000)
    s = states(window.scene)
    assert s["signoff"] == "done"
    assert s["revise"] == "not_reached" and s["general"] == "not_reached"
    assert followed(window.scene) == PATH_TO_SIGNOFF | {("signoff", "approve", "send")}
    assert "Waiting for approval" not in window.windowTitle()
    assert not window.scene.node_items["send"].run_tip
    assert window.act_run.isEnabled()

    # Selecting `send` on the canvas shows what it did in the inspector's Run tab.
    click_node(qtbot, window.view, window.scene, "send")
    assert window.scene.selected_node_ids() == ["send"]
    details = window.node_run_details
    assert details.details is not None and details.details["nodeId"] == "send"
    assert details.state_label.text() == "done"
    assert "charged twice" in details.input_view.toPlainText()
    assert details.output_view.toPlainText().strip()
    record = console.bridge.run.records["send"]
    assert words(details.input_view.toPlainText()) == words(record.input)
    assert words(details.output_view.toPlainText()) == words(record.output)
    assert window.inspector_tabs.tabText(1) == "Run"


def test_a_failing_agent_is_failed_on_the_canvas_with_its_error(qtbot, window, tmp_path):
    data = json.loads((SAMPLES / "hello.flow.json").read_text(encoding="utf-8"))
    agents = [n for n in data["nodes"] if n["type"] == "agent"]
    agents[0]["data"]["provider"] = "no-such-provider"
    path = tmp_path / "broken.flow.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert window.files.open_path(str(path), ask=False)
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    with qtbot.waitSignal(window.run_console.run_finished, timeout=5000) as finished:
        window.act_run.trigger()
    assert finished.args == ["failed"]
    nid = agents[0]["id"]
    qtbot.waitUntil(lambda: window.scene.node_items[nid].run_state == "failed", timeout=2000)
    item = window.scene.node_items[nid]
    assert "no-such-provider" in item.run_tip
    assert "Failed" in item.toolTip() and "no-such-provider" in item.toolTip()
    assert max(len(line) for line in item.toolTip().splitlines()) <= 90  # wrapped, not one screen-wide line
    assert "Failed" in window.run_console.header.status_text
    stored = window.store.get_run(window.run_console.run_id)
    assert stored.status == "failed"


def test_edits_during_and_after_a_run_do_not_change_what_ran(qtbot, window):
    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    choose_provider(window, "echo")
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    console = window.run_console
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=5000):
        window.act_run.trigger()
    run = console.bridge.run
    ran = run.workflow.model_dump()
    # Edit while paused: move a node, then delete the node the run is about to take.
    window.scene.select_nodes(["send"])
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_Delete)
    assert window.document.node("send") is None
    assert run.workflow.model_dump() == ran
    with qtbot.waitSignal(console.run_finished, timeout=5000) as finished:
        qtbot.mouseClick(console.approvals.active_card.approve_button, Qt.MouseButton.LeftButton)
    assert finished.args == ["completed"]
    assert "send" in run.outputs  # the run went on with the node the canvas no longer has
    run_id = console.run_id
    stored = window.store.workflow_of(run_id)
    assert stored.node("send") is not None
    assert stored.model_dump() == load_workflow(SAMPLES / "review.flow.json").model_dump()
    # After the run: edit again; the recorded workflow stays as it ran.
    qtbot.keyClick(window.view, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert window.document.node("send") is not None
    assert window.scene.node_items["send"].run_state == "done"  # the restored node shows what it did
    assert ("signoff", "approve", "send") in followed(window.scene)
    window.document.set_collapsed(["triage"], True)
    assert window.store.workflow_of(run_id).model_dump() == stored.model_dump()


def test_the_console_run_button_runs_the_document_as_it_is_now(qtbot, window):
    assert window.files.open_path(str(SAMPLES / "hello.flow.json"), ask=False)
    choose_provider(window, "echo")
    console = window.run_console
    qtbot.waitUntil(lambda: console.run_button.isEnabled(), timeout=2000)
    assert console.run_button.actions() == [window.act_run]  # one action: no menu arrow on the button
    start = next(n for n in window.document.workflow.nodes if n.type == "start")
    assert console.input_edit.toPlainText() == (start.data.initialInput or "")
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        qtbot.mouseClick(console.run_button, Qt.MouseButton.LeftButton)
    first = console.bridge.run.workflow
    agent = next(n for n in window.document.workflow.nodes if n.type == "agent")
    window.document.set_collapsed([agent.id], True)  # an edit after the run
    qtbot.waitUntil(lambda: console.run_button.isEnabled(), timeout=2000)
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        qtbot.mouseClick(console.run_button, Qt.MouseButton.LeftButton)
    second = console.bridge.run.workflow
    assert not first.node(agent.id).data.collapsed
    assert second.node(agent.id).data.collapsed  # the edited document ran, not the previous copy
    assert states(window.scene)[agent.id] == "done"
