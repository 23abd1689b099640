"""Run history in the main window: a finished run is listed, opens read-only in a run view
window with the same states and log, its workflow opens as a new document; a paused run
stored by another process is resumed from the panel; closing the window cancels a live run."""

from __future__ import annotations

import json

from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QApplication

from engine import EchoProvider, load_workflow
from tests.fakes.cli_runs import paused_by_the_cli

from ..editor.conftest import mouse_drag
from .conftest import SAMPLES, choose_provider, click_node, followed, states


def run_review_to_the_end(qtbot, window) -> str:
    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    choose_provider(window, "echo")
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    console = window.run_console
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=5000):
        window.act_run.trigger()
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        qtbot.mouseClick(console.approvals.active_card.approve_button, Qt.MouseButton.LeftButton)
    return console.run_id


def doc_nodes(win) -> list[str]:
    return [n.id for n in win.document.workflow.nodes]


def history_ids(window) -> list[str]:
    model = window.history.model
    return [r.id for r in model.runs] if hasattr(model, "runs") else []


def test_a_finished_run_is_listed_and_opens_read_only(qtbot, window):
    run_id = run_review_to_the_end(qtbot, window)
    live_states = states(window.scene)
    live_links = followed(window.scene)
    live_log = [(e.node_id, e.type, e.content) for e in window.run_console.visible_entries()]

    window.history_dock.show()
    window.history_dock.raise_()
    qtbot.waitUntil(lambda: run_id in history_ids(window), timeout=3000)
    assert window.history.model.runs[0].status == "completed"

    # Open it from the panel: select its row, press Return (the panel's Open action).
    assert window.history.select_run(run_id)
    window.history.table.setFocus()
    qtbot.keyClick(window.history.table, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: len(window.run_views.run_windows) == 1, timeout=2000)
    view_win = window.run_views.run_windows[0]
    qtbot.waitExposed(view_win)
    assert view_win.run_id == run_id
    assert "read-only" in view_win.windowTitle()
    assert window.history.open_run(run_id)  # opened again: the same window comes forward
    assert window.run_views.run_windows == [view_win]
    assert states(view_win.scene) == live_states
    assert followed(view_win.scene) == live_links
    assert [(e.node_id, e.type, e.content) for e in view_win.console.visible_entries()] == live_log
    assert not view_win.console.run_button.isVisible() and not view_win.console.input_edit.isVisible()
    qtbot.waitUntil(lambda: view_win.view.minimap.card_count == len(doc_nodes(view_win)), timeout=2000)
    assert not view_win.view.acceptDrops()

    # Read-only: a drag on a node does not move it, Delete and a chevron click do nothing.
    doc = view_win.document
    before = doc.workflow.model_dump()
    item = view_win.scene.node_items["triage"]
    pos = item.pos()
    start = item.mapToScene(QPointF(60, 18))
    mouse_drag(qtbot, view_win.view, start, start + QPointF(160, 120))
    assert item.pos() == pos
    click_node(qtbot, view_win.view, view_win.scene, "triage")
    assert view_win.scene.selected_node_ids() == ["triage"]
    assert view_win.details.details is not None and view_win.details.details["nodeId"] == "triage"
    view_win.view.setFocus()
    qtbot.keyClick(view_win.view, Qt.Key.Key_Delete)
    qtbot.keyClick(view_win.view, Qt.Key.Key_Backspace)
    chevron = item.mapToScene(item.chevron_rect().center())
    qtbot.mouseClick(view_win.view.viewport(), Qt.MouseButton.LeftButton, pos=view_win.view.mapFromScene(chevron))
    qtbot.mouseDClick(
        view_win.view.viewport(),
        Qt.MouseButton.LeftButton,
        pos=view_win.view.mapFromScene(item.mapToScene(QPointF(60, 18))),
    )
    QApplication.processEvents()
    assert doc.workflow.model_dump() == before
    assert not doc.is_modified() and doc.undo_stack.count() == 0
    assert set(view_win.scene.node_items) == {n.id for n in doc.workflow.nodes}

    # "Open this version as a new document": an untitled, unsaved document in the main window.
    window.document.set_collapsed(["route"], True)  # the main document moved on since the run
    window.files.save = lambda: True  # noqa: E731 - never asked: the dialog answer is Discard
    qtbot.mouseClick(view_win.open_button, Qt.MouseButton.LeftButton)
    assert window.document.path is None
    assert window.document.display_name() == "Untitled"
    assert window.document.is_modified()
    assert window.document.workflow.model_dump() == window.store.workflow_of(run_id).model_dump()
    assert "Untitled" in window.windowTitle()

    view_win.close()
    qtbot.waitUntil(lambda: not window.run_views.run_windows, timeout=2000)


def test_a_paused_run_from_another_process_is_resumed_from_the_panel(qtbot, window, isolated):
    other, run_id = paused_by_the_cli(isolated / "data")
    before = [(e.node_id, e.type, e.content) for e in other.events(run_id)]
    choose_provider(window, "echo")

    panel = window.history
    window.history_dock.show()
    window.history_dock.raise_()
    panel.refresh()
    qtbot.waitUntil(lambda: run_id in history_ids(window), timeout=3000)
    assert panel.select_run(run_id)
    assert panel.resume_action.isEnabled()
    console = window.run_console
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=3000):
        panel.resume_action.trigger()
    assert window.run_console_dock.isVisible()
    assert "Waiting for approval" in window.windowTitle()
    card = console.approvals.active_card
    assert card is not None and card.request.node_id == "signoff"
    # Nothing was open: the run's workflow is opened (untitled, like a sample) to show where it waits.
    assert window.document.path is None and not window.document.is_modified()
    assert window.document.workflow.model_dump() == other.workflow_of(run_id).model_dump()
    s = states(window.scene)
    assert (s["triage"], s["route"], s["signoff"]) == ("done", "done", "waiting")
    with qtbot.waitSignal(console.run_finished, timeout=5000) as finished:
        qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
    assert finished.args == ["completed"]
    assert other.get_run(run_id).status == "completed"
    stored = [(e.node_id, e.type, e.content) for e in other.events(run_id)]
    assert stored[: len(before)] == before
    appended = stored[len(before) :]
    assert appended[0][:2] == ("signoff", "input_received")
    assert json.loads(appended[0][2])["decision"] == "approve"
    assert [n for n, t, _ in appended if t == "llm_response"] == ["send"]
    assert "Waiting for approval" not in window.windowTitle()
    qtbot.waitUntil(lambda: states(window.scene)["send"] == "done", timeout=2000)
    assert states(window.scene)["revise"] == "not_reached"
    qtbot.waitUntil(lambda: panel.model.runs and panel.model.runs[0].status == "completed", timeout=3000)
    other.close()


def test_a_paused_run_of_another_workflow_resumes_in_its_own_window(qtbot, window, isolated):
    """Runs belong to their document: resuming a paused review run while hello is open
    opens the review workflow read-only in a window of its own, with the run's card, input
    and title; the main console and canvas keep showing hello (no card, no states)."""
    other, run_id = paused_by_the_cli(isolated / "data")
    assert window.files.open_sample(str(SAMPLES / "hello.flow.json"))
    choose_provider(window, "echo")
    window.history.refresh()
    assert window.history.select_run(run_id)
    console = window.run_console
    window.history.resume_action.trigger()
    qtbot.waitUntil(lambda: any(w.live for w in window.run_views.run_windows), timeout=3000)
    run_win = next(w for w in window.run_views.run_windows if w.live)
    review = load_workflow(SAMPLES / "review.flow.json")
    # its own workflow, read-only, with its card, its input and its title
    assert run_win.document.workflow.model_dump() == other.workflow_of(run_id).model_dump()
    assert {n.id for n in run_win.document.workflow.nodes} == {n.id for n in review.nodes}
    card = run_win.console.approvals.active_card
    assert card is not None and card.request.node_id == "signoff"
    assert card.approve_button.isVisible()
    initial = other.get_run(run_id).initial_input
    assert initial and initial.split()[0] in run_win.console.header.input_summary.text()
    assert run_win.windowTitle().startswith("⏸ Waiting for approval")
    assert review.display_name() in run_win.windowTitle() and "read-only" in run_win.windowTitle()
    assert states(run_win.scene)["signoff"] == "waiting"
    # the main window still shows hello and no run
    assert window.document.workflow.name == load_workflow(SAMPLES / "hello.flow.json").name
    assert set(states(window.scene).values()) == {None}
    assert not followed(window.scene)
    assert console.approvals.active_card is None and not console.model.entries
    assert "Waiting for approval" not in window.windowTitle()
    with qtbot.waitSignal(run_win.console.run_finished, timeout=5000) as finished:
        qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
    assert finished.args == ["completed"]
    assert states(run_win.scene)["send"] == "done"
    assert not run_win.windowTitle().startswith("⏸")
    assert set(states(window.scene).values()) == {None}
    assert other.get_run(run_id).status == "completed"
    run_win.close()
    other.close()


def test_after_new_or_open_the_console_shows_no_old_run(qtbot, window, tmp_path):
    """A failed run's log and red banner do not follow the user to another document; a paused
    run is let go of (it stays paused in the run history) rather than shown on the new one."""
    data = json.loads((SAMPLES / "hello.flow.json").read_text(encoding="utf-8"))
    next(n for n in data["nodes"] if n["type"] == "agent")["data"]["provider"] = "no-such-provider"
    broken = tmp_path / "broken.flow.json"
    broken.write_text(json.dumps(data), encoding="utf-8")
    assert window.files.open_path(str(broken))
    console = window.run_console
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    with qtbot.waitSignal(console.run_finished, timeout=5000) as finished:
        window.act_run.trigger()
    assert finished.args == ["failed"]
    assert console.model.entries and "Failed" in console.header.status_text

    def empty() -> bool:
        return (
            not console.model.entries
            and not console.visible_entries()
            and console.run_id is None
            and console.approvals.active_card is None
            and console.header.status_text == "Ready"
            and console.empty_label.isVisibleTo(console)
            and not console.header.run_id_label.text()
        )

    window.files.new_document()
    assert empty()
    # a paused run: opening another file lets go of it; it stays paused in the history
    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    choose_provider(window, "echo")
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=5000):
        window.act_run.trigger()
    paused_id = console.run_id
    qtbot.waitUntil(lambda: window.store.get_run(paused_id).status == "paused", timeout=3000)
    assert window.files.open_path(str(broken))
    assert empty()
    assert "Waiting for approval" not in window.windowTitle()
    assert not console.bridge.is_active and window.act_run.isEnabled()
    assert window.store.get_run(paused_id).status == "paused"
    assert set(states(window.scene).values()) == {None}
    # ... and can be resumed from there, on its own workflow
    window.history.refresh()
    assert window.history.select_run(paused_id)
    window.history.resume_action.trigger()
    qtbot.waitUntil(lambda: any(w.live for w in window.run_views.run_windows), timeout=3000)
    run_win = next(w for w in window.run_views.run_windows if w.live)
    with qtbot.waitSignal(run_win.console.run_finished, timeout=5000) as finished:
        run_win.console.approvals.active_card.approve_button.click()
    assert finished.args == ["completed"]
    run_win.close()


def test_closing_the_window_cancels_a_live_run(qtbot, window):
    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    choose_provider(window, "echo")  # a provider is chosen: Run starts at once
    slow = EchoProvider(delay=30.0)
    window.run_console.set_resolver_factory(lambda: slow)
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    console = window.run_console
    with qtbot.waitSignal(console.run_started, timeout=2000):
        window.act_run.trigger()
    qtbot.waitUntil(lambda: states(window.scene).get("triage") == "running", timeout=3000)
    run_id = console.run_id
    assert window.store.get_run(run_id).status == "running"
    with qtbot.waitSignal(console.run_finished, timeout=3000) as finished:
        window.close()
    assert finished.args == ["cancelled"]
    assert window.store.get_run(run_id).status == "cancelled"


def test_a_subagent_run_looks_the_same_live_and_from_the_history(qtbot, window):
    """research: the lead calls two subagents; the live canvas and the run view agree on
    every node state and followed link, the subagent links included."""
    assert window.files.open_sample(str(SAMPLES / "research.flow.json"))
    choose_provider(window, "echo")
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    with qtbot.waitSignal(window.run_console.run_finished, timeout=5000) as finished:
        qtbot.keyClick(window.view, Qt.Key.Key_F5)
    assert finished.args == ["completed"]
    live_states, live_links = states(window.scene), followed(window.scene)
    subagent_links = {(k[0], k[1], k[2]) for k in window.scene.edge_items if k[1] == "subagent"}
    assert subagent_links and subagent_links <= live_links
    assert set(live_states.values()) == {"done"}
    assert window.history.open_run(window.run_console.run_id)
    view_win = window.run_views.run_windows[-1]
    assert states(view_win.scene) == live_states
    assert followed(view_win.scene) == live_links


def test_a_paused_run_survives_closing_the_window_and_is_resumed_after(qtbot, window, app, dialogs):
    """Close the app while a run waits for approval, start it again, approve from the history."""
    from editor.main_window import MainWindow

    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    choose_provider(window, "echo")
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    with qtbot.waitSignal(window.run_console.waiting_for_input_changed, timeout=5000):
        window.act_run.trigger()
    run_id = window.run_console.run_id
    window.close()
    assert window.store.get_run(run_id).status == "paused"  # not cancelled by the close
    assert window.store.snapshot_of(run_id) is not None

    again = MainWindow()
    qtbot.addWidget(again)
    again.show()
    try:
        assert again.history.select_run(run_id)
        with qtbot.waitSignal(again.run_console.waiting_for_input_changed, timeout=3000):
            again.history.resume_action.trigger()
        assert states(again.scene)["signoff"] == "waiting"
        with qtbot.waitSignal(again.run_console.run_finished, timeout=5000) as finished:
            qtbot.mouseClick(again.run_console.approvals.active_card.approve_button, Qt.MouseButton.LeftButton)
        assert finished.args == ["completed"]
        assert again.store.get_run(run_id).status == "completed"
    finally:
        again.close()
        again.store.close()


def test_opening_another_file_during_a_run_asks_and_stops_it(qtbot, window, dialogs):
    """A running run belongs to its document: New asks first; "Cancel" keeps both, "Yes"
    stops the run, and nothing it still sends reaches the new document's empty console."""
    from PySide6.QtWidgets import QMessageBox

    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    choose_provider(window, "echo")  # a provider is chosen: Run starts at once
    slow = EchoProvider(delay=30.0)
    window.run_console.set_resolver_factory(lambda: slow)
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    console = window.run_console
    with qtbot.waitSignal(console.run_started, timeout=2000):
        window.act_run.trigger()
    qtbot.waitUntil(lambda: states(window.scene).get("triage") == "running", timeout=3000)
    run_id = console.run_id
    dialogs.question_answer = QMessageBox.StandardButton.Cancel
    window.files.new_document()
    assert dialogs.of("question") and "running" in dialogs.of("question")[-1][2]
    assert window.document.workflow.name == load_workflow(SAMPLES / "review.flow.json").name
    assert console.bridge.is_active and console.run_id == run_id
    dialogs.question_answer = QMessageBox.StandardButton.Yes
    with qtbot.waitSignal(console.run_finished, timeout=3000) as finished:
        window.files.new_document()
    assert finished.args == ["cancelled"]
    assert window.store.get_run(run_id).status == "cancelled"
    assert [n.type for n in window.document.workflow.nodes] == ["start"]
    assert not console.model.entries and console.run_id is None
    assert console.header.status_text == "Ready" and set(states(window.scene).values()) == {None}
    assert not console.bridge.is_active and "in progress" not in window.act_run.toolTip()


def run_panel(qtbot, window, **arguments: str) -> tuple[str, list[str]]:
    """The panel sample run on echo with ``arguments`` and the input "Keep it short.": its run
    id and its prompts."""
    assert window.files.open_sample(str(SAMPLES / "panel.flow.json"))
    choose_provider(window, "echo")
    console = window.run_console
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    for name, value in arguments.items():
        console.arguments.fields[name].setText(value)
    console.input_edit.setPlainText("Keep it short.")
    with qtbot.waitSignal(console.run_finished, timeout=10000):
        window.act_run.trigger()
    return console.run_id, [e.content for e in console.all_events() if e.type == "start_prompt"]


def test_opening_a_runs_version_gives_the_console_its_input_and_arguments(qtbot, window):
    """Open this version fills the run form as the run was called, so Run runs it again as it was."""
    first, first_prompts = run_panel(qtbot, window, topic="dark mode", maxWords="80")
    console = window.run_console
    info = window.store.get_run(first)
    assert info.arguments == {"topic": "dark mode", "audience": "existing customers", "maxWords": 80}
    assert info.initial_input == "Keep it short."

    # the form is changed, then the run's version is opened from the history
    console.arguments.fields["topic"].setText("something else")
    console.input_edit.setPlainText("")
    assert window.history.open_version(first)
    assert window.document.path is None
    assert console.arguments.fields["topic"].text() == "dark mode"
    assert console.arguments.fields["maxWords"].text() == "80"
    assert console.input_edit.toPlainText() == "Keep it short."
    assert "with its input and arguments" in window.statusBar().currentMessage()
    qtbot.wait(400)  # the debounced validation of the new document keeps them
    assert console.arguments.fields["topic"].text() == "dark mode"
    assert console.input_edit.toPlainText() == "Keep it short."
    with qtbot.waitSignal(console.run_finished, timeout=10000):
        window.act_run.trigger()
    assert console.run_id != first
    assert [e.content for e in console.all_events() if e.type == "start_prompt"] == first_prompts


def test_run_again_from_the_history_runs_the_version_with_its_input_and_arguments(qtbot, window):
    first, prompts = run_panel(qtbot, window, topic="dark mode")
    console = window.run_console
    # the form changes meanwhile; Run Again uses what the run was given, not what the form shows
    console.arguments.fields["topic"].setText("something else")
    window.history_dock.show()
    qtbot.waitUntil(lambda: first in history_ids(window), timeout=3000)
    assert window.history.select_run(first)
    assert window.history.run_again_action.isEnabled()
    with qtbot.waitSignal(console.run_finished, timeout=10000) as finished:
        window.history.run_again_action.trigger()
    assert finished.args == ["completed"]
    assert console.run_id != first
    assert [e.content for e in console.all_events() if e.type == "start_prompt"] == prompts
    assert window.store.get_run(console.run_id).arguments == window.store.get_run(first).arguments
