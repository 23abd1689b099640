"""A loop walking a list shows "item 3 of 12" on its card (from the reducer: ``loop_check``'s
``iteration`` and ``total``); a loop without a list keeps "iteration 3"."""

from __future__ import annotations

from editor.canvas.scene import CanvasScene
from editor.editing import WorkflowDocument
from editor.run.badges import run_badges
from engine import RunEvent, RunState, parse_workflow

FLOW = {
    "nodes": [
        {"id": "start", "type": "start", "x": 0, "y": 0, "data": {}},
        {"id": "each", "type": "loop", "x": 300, "y": 0, "data": {"over": "{{rows}}"}},
        {"id": "work", "type": "agent", "x": 600, "y": 0, "data": {"agentName": "Worker"}},
    ],
    "connections": [
        {"source": "start", "target": "each", "sourceHandle": "output", "targetHandle": "input"},
        {"source": "each", "target": "work", "sourceHandle": "body", "targetHandle": "input"},
        {"source": "work", "target": "each", "sourceHandle": "output", "targetHandle": "input"},
    ],
}


def _state(extra: dict) -> RunState:
    wf = parse_workflow(FLOW)
    events = [
        RunEvent("each", "step_start", "", timestamp=1.0),
        RunEvent("each", "loop_check", "", timestamp=2.0, extra=extra),
    ]
    return RunState.of(wf, events)


def test_a_loop_over_a_list_words_its_item_and_count(qtbot):
    state = _state({"iteration": 3, "matched": False, "total": 12})
    assert state.details["each"].iteration == 3 and state.details["each"].total == 12
    badges = run_badges(state)
    assert badges["each"] == ("item 3 of 12", "loop")
    doc = WorkflowDocument(parse_workflow(FLOW), None)
    scene = CanvasScene(doc)
    scene.show_run(state, badges)
    item = scene.node_items["each"]
    assert (item.run_badge, item.run_badge_kind) == ("item 3 of 12", "loop")


def test_a_loop_without_a_list_counts_iterations():
    assert run_badges(_state({"iteration": 3, "matched": False}))["each"] == ("iteration 3", "loop")
    assert run_badges(_state({"iteration": 3, "matched": False, "total": True}))["each"] == ("iteration 3", "loop")
