"""An exported run_<id>.json names the run's input: the one typed, else the Start node's, and
the stored run's when a run from the history is shown."""

from __future__ import annotations

from PySide6.QtCore import Qt

from engine.store import RunStore


def test_exported_record_has_the_start_nodes_input(qtbot, console, review, tmp_path):
    store = RunStore(tmp_path / "runs.db")
    console.set_store(store)
    console.set_workflow(review, "review.flow.json")
    console.input_edit.setPlainText("")  # nothing typed: the Start node's input is the run's
    with qtbot.waitSignal(console.approvals.waiting_changed, timeout=5000):
        console.run_action.trigger()
    expected = review.nodes[0].data.initialInput
    assert expected and console.run_record()["initialInput"] == expected
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        qtbot.mouseClick(console.approvals.active_card.approve_button, Qt.MouseButton.LeftButton)
    run_id = console.run_id
    assert store.get_run(run_id).initial_input == expected
    # shown again from the history
    assert console.replay(store.workflow_of(run_id), store.events(run_id), run_id=run_id, status="completed")
    assert console.run_record()["initialInput"] == expected
    store.close()
