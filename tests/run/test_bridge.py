"""RunBridge on its own: batching, signal order, node states and followed links derived from
events, refused requests, and the Qt-free run state."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from editor.run.bridge import RunBridge
from engine import EchoProvider, RunEvent, RunState, RunStateError, parse_workflow

from .conftest import parallel_approvals


@pytest.fixture
def bridge(qtbot, qloop):
    b = RunBridge()
    yield b
    if b.is_active:
        b.cancel()
        qtbot.waitUntil(lambda: not b.is_busy, timeout=3000)


def test_signals_in_order_and_batches_hold_every_event(qtbot, bridge, review):
    log: list[tuple] = []
    batches: list[list[RunEvent]] = []
    bridge.run_started.connect(lambda rid: log.append(("started", rid)))
    bridge.events_batched.connect(lambda b: (batches.append(b), log.append(("batch", len(b)))))
    bridge.status_changed.connect(lambda s: log.append(("status", s)))
    bridge.approvals_changed.connect(lambda: log.append(("approvals",)))
    bridge.node_states_changed.connect(lambda s: log.append(("states", dict(s))))
    with qtbot.waitSignal(bridge.approvals_changed, timeout=5000):
        run_id = bridge.start(review, None, EchoProvider())
    qtbot.waitUntil(lambda: not bridge.is_busy, timeout=5000)
    assert log[0] == ("started", run_id)
    events = [e for b in batches for e in b]
    assert events == bridge.run.events  # every event, in emission order, none twice
    assert ("status", "paused") in log
    # in a flush: the batch first, then the status it brought
    i = log.index(("status", "paused"))
    assert log[i - 1][0] == "batch"
    states = [x[1] for x in log if x[0] == "states"][-1]
    assert states == {"start": "done", "triage": "done", "route": "done", "signoff": "waiting"}
    assert bridge.approvals()[0].node_id == "signoff" and bridge.approvals()[0].active
    with pytest.raises(RunStateError):
        bridge.start(review, None, EchoProvider())  # one run at a time
    with qtbot.waitSignal(bridge.run_finished, timeout=5000) as finished:
        bridge.resume("reject", "no")
    assert finished.args == ["completed"]
    with pytest.raises(RunStateError):
        bridge.resume("approve")
    assert bridge.approvals() == []


def test_the_run_uses_a_copy_of_the_workflow(qtbot, bridge, review):
    with qtbot.waitSignal(bridge.approvals_changed, timeout=5000):
        bridge.start(review, "please refund me", EchoProvider())
    qtbot.waitUntil(lambda: not bridge.is_busy, timeout=5000)
    review.nodes[1].data.userPrompt = "changed on the canvas: {{PREVIOUS_OUTPUT}}"
    assert bridge.run.workflow is not review
    assert bridge.run.workflow.nodes[1].data.userPrompt.startswith("Customer message:")


def test_queued_approvals_carry_their_inputs(qtbot, bridge):
    with qtbot.waitSignal(bridge.approvals_changed, timeout=5000):
        bridge.start(parallel_approvals(), None, EchoProvider())
    qtbot.waitUntil(lambda: not bridge.is_busy and len(bridge.approvals()) == 2, timeout=5000)
    first, second = bridge.approvals()
    assert (first.node_id, first.active, first.prompt) == ("ap1", True, "Legal sign-off?")
    assert (second.node_id, second.active, second.input_text) == ("ap2", False, "draft: go")


def test_run_state_links_states_and_details_from_events():
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "hi"}},
                {"id": "c", "type": "if", "data": {"conditions": [{"operator": "contains", "value": "x"}]}},
                {"id": "yes", "type": "agent", "data": {"agentName": "Yes"}},
                {"id": "no", "type": "agent", "data": {"agentName": "No"}},
                {"id": "never", "type": "agent", "data": {"agentName": "Never"}},
            ],
            "connections": [
                {"source": "s", "target": "c"},
                {"source": "c", "target": "yes", "sourceHandle": "true"},
                {"source": "c", "target": "no", "sourceHandle": "false"},
            ],
        }
    )
    t = RunState(wf)
    t.apply_many(
        [
            RunEvent("system", "run_status", "running", timestamp=1.0),
            RunEvent("s", "step_start", "Start", timestamp=1.0),
            RunEvent("c", "step_start", "Condition", timestamp=1.1),
            # an AgentFlow log: no extra fields, the text says what matched (read once, as it is imported)
            RunEvent.from_wire(
                {
                    "timestamp": 1.1,
                    "nodeId": "c",
                    "type": "logic_check",
                    "content": "Condition 1: contains 'x' → matched",
                }
            ),
            RunEvent("yes", "step_start", "Yes", timestamp=1.2),
            RunEvent("yes", "start_prompt", "hix", timestamp=1.2),
        ]
    )
    assert t.states == {"s": "done", "c": "done", "yes": "running"}
    # the legacy "true" handle is read as condition-0 (engine.graph.model normalises it on load)
    assert t.links == {("s", "output", "c"), ("c", "condition-0", "yes")}
    t.apply(RunEvent("yes", "llm_error", "HTTP 500", timestamp=2.0))
    t.apply(RunEvent("system", "error", "Agent 'Yes' failed: HTTP 500", timestamp=2.0))
    t.apply(RunEvent("system", "run_status", "failed", timestamp=2.0, extra={"detail": "Agent 'Yes' failed"}))
    assert t.states == {"s": "done", "c": "done", "yes": "failed", "no": "skipped", "never": "skipped"}
    d = t.node_details("yes")
    assert d["input"] == "hix" and d["error"] == "HTTP 500" and d["duration"] == pytest.approx(0.8)
    assert t.error == "Agent 'Yes' failed" and t.node_details("s")["output"] == "hi"


def test_f5_runs_and_shift_f5_cancels(qtbot, console, review):
    from .conftest import slow_echo

    console.set_workflow(review)
    console.set_resolver_factory(slow_echo(30))
    with qtbot.waitSignal(console.run_started, timeout=2000):
        qtbot.keyClick(console.view, Qt.Key.Key_F5)
    qtbot.waitUntil(lambda: console.bridge.node_states().get("triage") == "running", timeout=5000)
    assert console.elapsed_label.text() != ""
    with qtbot.waitSignal(console.run_finished, timeout=1000) as finished:
        qtbot.keyClick(console.view, Qt.Key.Key_F5, Qt.KeyboardModifier.ShiftModifier)
    assert finished.args == ["cancelled"]


def test_waiting_for_input_signal_for_the_window_title(qtbot, console, review):
    console.set_workflow(review)
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=5000) as waiting:
        console.start_run()
    assert waiting.args == [True]
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=5000) as waiting:
        console.approvals.decide_active("approve")
    assert waiting.args == [False]


def test_a_provider_that_cannot_be_built_is_reported_not_raised(qtbot, console, review):
    def broken():
        raise ValueError("Provider 'openai' needs an API key")

    console.set_workflow(review)
    console.set_resolver_factory(broken)
    assert console.start_run() is None
    assert "needs an API key" in console.header.status_text
    assert console.run_action.isEnabled() and not console.bridge.is_active


def test_input_box_text_is_the_run_input(qtbot, console, review):
    console.set_workflow(review)
    assert console.input_edit.toPlainText().startswith("Hello, I was charged twice")
    console.input_edit.setPlainText("Where is my parcel?")
    with qtbot.waitSignal(console.run_finished, timeout=5000) as finished:
        console.start_run()
    assert finished.args == ["completed"]  # no "refund": the general branch, no approval
    prompt = next(e for e in console.visible_entries() if e.type == "start_prompt")
    assert prompt.content == "Customer message:\n\nWhere is my parcel?"
    assert console.run_record()["initialInput"] == "Where is my parcel?"


def test_a_flow_node_names_its_subflow_relative_to_the_documents_file(qtbot, bridge, tmp_path):
    """As `flowdesk run FILE` does: `child.flow.json` next to the open document is found."""
    import json

    (tmp_path / "child.flow.json").write_text(
        json.dumps(
            {
                "name": "Child",
                "nodes": [
                    {"id": "s", "type": "start", "data": {"initialInput": "", "variables": [{"name": "topic"}]}},
                    {"id": "w", "type": "agent", "data": {"agentName": "W", "userPrompt": "child got: {{topic}}"}},
                ],
                "connections": [{"source": "s", "target": "w"}],
            }
        )
    )
    parent = parse_workflow(
        {
            "name": "Parent",
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "hello"}},
                {
                    "id": "f",
                    "type": "flow",
                    "data": {"flow": "child.flow.json", "inputs": {"topic": "{{PREVIOUS_OUTPUT}}"}},
                },
            ],
            "connections": [{"source": "s", "target": "f"}],
        }
    )
    (tmp_path / "parent.flow.json").write_text("{}")  # where the document lives
    with qtbot.waitSignal(bridge.run_finished, timeout=10000) as finished:
        bridge.start(parent, None, EchoProvider(), workflow_path=str(tmp_path / "parent.flow.json"))
    assert finished.args == ["completed"], [e for e in bridge.run.events if "error" in e.type]
    assert bridge.run.outputs["f"] == "child got: hello"


def test_a_bridge_closed_while_its_run_is_being_stored_lets_the_store_finish_quietly(
    qtbot, qloop, tmp_path, monkeypatch
):
    """The window closes (its bridge deleted) while the store commits the run's end on a worker
    thread: the commit completes and the run is stored; nothing touches the deleted Qt objects."""
    import time

    import shiboken6

    from engine import RunRecorder, RunStore

    settled = RunRecorder.settled

    def slow_settled(self):
        time.sleep(0.3)  # a slow disk
        settled(self)

    monkeypatch.setattr(RunRecorder, "settled", slow_settled)
    store = RunStore(tmp_path / "runs.db")
    b = RunBridge()
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "hi"}},
                {"id": "a", "type": "agent", "data": {"agentName": "A", "model": "m"}},
            ],
            "connections": [{"source": "s", "target": "a"}],
        }
    )
    run_id = b.start(wf, None, EchoProvider(), store)
    task = b._task
    qtbot.waitUntil(lambda: b.run is not None and b.run.status.is_final, timeout=5000)
    shiboken6.delete(b)  # closed mid-commit
    qtbot.waitUntil(task.done, timeout=5000)
    assert task.exception() is None
    assert store.get_run(run_id).status == "completed"
    assert b._recorder is not None and b._recorder._closed.is_set()  # let go of, not left attached to the writer
