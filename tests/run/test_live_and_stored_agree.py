"""The same recorded events, fed to the live path (RunBridge → RunConsole) and to the stored path
(run store → RunViewWindow, as the history opens a run), give the same node states, followed
links, per-node outputs and subagent calls: both derive them with the engine's RunState."""

from __future__ import annotations

import asyncio

import pytest

from editor.run.bridge import RunBridge
from editor.run.console import RunConsole
from editor.run_view import RunViewWindow
from engine import EchoProvider, Run, RunStore, Workflow

from .conftest import parallel_approvals


def record(qtbot, workflow: Workflow, decisions: list[str]) -> tuple[Run, list]:
    """A real run on the Qt loop (echo provider), answered with ``decisions`` in order."""
    run = Run(workflow, EchoProvider())
    task = asyncio.ensure_future(run.start())
    qtbot.waitUntil(task.done, timeout=5000)
    for word in decisions:
        task = asyncio.ensure_future(run.resume(word, "noted" if word == "reject" else ""))
        qtbot.waitUntil(task.done, timeout=5000)
    return run, list(run.events or [])


def live(qtbot, workflow: Workflow, events: list) -> RunConsole:
    """The console's live path: events arrive through the bridge's listener and its flush."""
    bridge = RunBridge()
    console = RunConsole(bridge=bridge)
    qtbot.addWidget(console)
    bridge.run_state.reset(workflow)  # as RunBridge.start() does for the run it starts
    for ev in events:
        bridge._on_event(ev)  # what the engine calls as it emits
    bridge.flush()
    return console


def stored(qtbot, tmp_path, run: Run, events: list) -> RunViewWindow:
    """The stored path: the events go through the run store (their wire form) and back."""
    store = RunStore(tmp_path / "runs.db")
    store.create_run(run.run_id, run.workflow, status=str(run.status), owner=False)
    store.append_events(run.run_id, 0, events)
    back = store.events(run.run_id)
    assert back == events  # typed fields survive the wire form
    window = RunViewWindow(run.run_id, store.workflow_of(run.run_id), back, store.get_run(run.run_id), store=store)
    qtbot.addWidget(window)
    store.close()
    return window


CASES = {
    "approved": ("review", ["approve"]),
    "rejected": ("review", ["reject"]),
    "paused": ("review", []),
    "queued approvals": ("parallel", []),
    "queued then answered": ("parallel", ["approve", "reject"]),
    "subagents": ("research", []),
}


@pytest.mark.parametrize("case", list(CASES))
def test_live_and_stored_paths_agree(qtbot, qloop, tmp_path, review, research, case):
    name, decisions = CASES[case]
    workflow = {"review": review, "research": research, "parallel": parallel_approvals()}[name]
    run, events = record(qtbot, workflow, decisions)

    console = live(qtbot, run.workflow, events)
    window = stored(qtbot, tmp_path, run, events)
    a, b = console.bridge.run_state, window.run_state

    assert a.status == b.status == str(run.status)
    assert a.node_states() == b.node_states()
    assert a.links == b.links and a.links
    assert a.outputs == b.outputs
    assert (
        a.pending_approvals
        == b.pending_approvals
        == ([run.pending_approval, *run.queued_approvals] if run.pending_approval else [])
    )
    assert {n: d.visits for n, d in a.details.items()} == {n: d.visits for n, d in b.details.items()}
    assert [(c.node_id, c.state, c.input, c.output) for c, _ in a.call_tree()] == [
        (c.node_id, c.state, c.input, c.output) for c, _ in b.call_tree()
    ]
    # what the views show: the console's signals, the trace, and the stored view's canvas
    assert console.bridge.node_states() == dict(b.states)
    assert set(console.trace.calls) == set(window.console.trace.calls)
    canvas = {nid: item.run_state for nid, item in window.scene.node_items.items()}
    assert canvas == {
        nid: ({"skipped": "not_reached", "cancelled": "not_reached"}.get(s, s) if s else None)
        for nid in canvas
        for s in [a.states.get(nid)]
    }
    followed = {(k[0], k[1], k[2]) for k, e in window.scene.edge_items.items() if e.followed}
    assert {(s, "condition-0" if h == "true" else h, t) for s, h, t in followed} == a.links
    for nid in a.node_states():
        assert console.run_state.node_details(nid)["output"] == window.console.node_details(nid)["output"]
    if case == "subagents":
        assert {c.node_id for c, _ in a.call_tree()} == {"facts", "skeptic"}
    if case == "queued approvals":
        assert [a.states[n] for n in a.pending_approvals] == ["waiting", "queued"]


def test_the_run_view_says_what_the_run_was_given(qtbot, tmp_path, review):
    store = RunStore(tmp_path / "runs.db")
    store.create_run(
        "given",
        review,
        initial_input="Hello,\nI was charged twice",
        owner=False,
        arguments={"tone": "warm", "limit": 3},
    )
    store.create_run("bare", review, owner=False)
    window = RunViewWindow("given", review, [], store.get_run("given"), store=store)
    qtbot.addWidget(window)
    assert window.given_label.text() == "Input: Hello, I was charged twice · Arguments: tone=warm, limit=3"
    assert window.given_label.toolTip() == "Input: Hello,\nI was charged twice\nArguments: tone=warm, limit=3"
    assert not window.given_label.isHidden()
    bare = RunViewWindow("bare", review, [], store.get_run("bare"), store=store)
    qtbot.addWidget(bare)
    assert bare.given_label.text() == "" and bare.given_label.isHidden()
    store.close()
