"""Issue 18 in the window: "Run from here" after a run shows the upstream nodes "from cache" on the
canvas (a state of its own) and runs the node and what follows; pinning a node's output from the
inspector's Run tab badges it and it does not run."""

from __future__ import annotations

from PySide6.QtCore import Qt

from .conftest import choose_provider, states
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


class _ScriptedModel:
    """A test provider: model 'bad-model' fails; a repair request gets a patch; others echo."""

    name = "scripted"

    def __init__(self, patch: dict) -> None:
        self.patch = patch
        self.calls = 0

    async def complete(self, inv, ctx):
        import json as _json

        from engine import LLMError, LLMResult

        self.calls += 1
        if inv.system_prompt.startswith("You repair one failing node"):
            return LLMResult(text=_json.dumps({"patch": self.patch, "reason": "that model does not exist"}))
        if inv.model == "bad-model":
            raise LLMError("The model `bad-model` does not exist")
        return LLMResult(text=f"[{inv.user_content}]")


def test_repair_a_failed_node_one_undo_step_then_run_from_here(qtbot, window):
    from engine import parse_workflow
    from tests.engine.flows import agent, link, start

    flow = {
        "name": "Repairable",
        "nodes": [
            start("s", "go"),
            agent("a1", "{{PREVIOUS_OUTPUT}}"),
            agent("a2", "{{PREVIOUS_OUTPUT}}", model="bad-model"),
        ],
        "connections": [link("s", "a1"), link("a1", "a2")],
    }
    window.run_views.open_workflow_version(parse_workflow(flow))
    model = _ScriptedModel({"model": "good-model"})
    choose_provider(window, "echo")  # a provider chosen (no set-up dialog); the test's model serves the run
    window.run_console.set_resolver_factory(lambda: lambda inv: model)
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    with qtbot.waitSignal(window.run_console.run_finished, timeout=5000) as finished:
        window.act_run.trigger()
    assert finished.args == ["failed"]
    assert window.scene.node_items["a2"].run_state == "failed"
    task = window.repair.repair_node("a2", provider=model)
    dialog = window.repair.repair_dialog
    qtbot.waitUntil(lambda: dialog.accept_button.isEnabled(), timeout=3000)
    assert "that model does not exist" in dialog.reason_label.text()
    assert "good-model" in dialog.diff_view.toPlainText()
    steps = window.document.undo_stack.count()
    dialog.accept_button.click()
    assert window.document.node("a2").data.model == "good-model"
    assert window.document.undo_stack.count() == steps + 1
    box = window.repair.repair_question
    with qtbot.waitSignal(window.run_console.run_finished, timeout=5000) as finished:
        box.button(box.StandardButton.Yes).click()
    assert finished.args == ["completed"]
    assert states(window.scene)["a1"] == "cached" and states(window.scene)["a2"] == "done"
    window.document.undo_stack.undo()
    assert window.document.node("a2").data.model == "bad-model"
    assert task.done()


def test_an_invalid_repair_is_refused_in_the_dialog(qtbot, window):
    from engine import parse_workflow
    from tests.engine.flows import agent, link, start

    window.run_views.open_workflow_version(
        parse_workflow(
            {"nodes": [start("s", "go"), agent("a1", "x", model="bad-model")], "connections": [link("s", "a1")]}
        )
    )
    model = _ScriptedModel({"temperature": 3})
    window.repair.repair_node("a1", provider=model)
    dialog = window.repair.repair_dialog
    qtbot.waitUntil(lambda: "No usable repair" in dialog.reason_label.text(), timeout=3000)
    assert "temperature" in dialog.reason_label.text() and not dialog.accept_button.isEnabled()
