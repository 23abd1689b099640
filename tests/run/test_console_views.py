"""The console's views: streamed text filling one entry live, the subagent trace (echo provider),
filters, collapse, node selection sync both ways, details rendering, replay and node details."""

from __future__ import annotations

import asyncio

from PySide6.QtCore import Qt

from editor.run.log_model import TYPE_GROUPS
from engine import AgentInvocation, LLMResult, ProviderContext, RunEvent
from engine.store import RunStore

from .conftest import parallel_approvals


class GatedStream:
    """Streams three pieces, waiting for the test to open a gate before the last one."""

    name = "gated"

    def __init__(self) -> None:
        self.gate = asyncio.Event()

    async def complete(self, inv: AgentInvocation, ctx: ProviderContext) -> LLMResult:
        ctx.delta("Hello ")
        await asyncio.sleep(0.06)
        ctx.delta("**world**")
        await self.gate.wait()
        ctx.delta(" and more")
        return LLMResult(text="Hello **world**, final.", usage={"prompt_tokens": 3, "completion_tokens": 4})


def test_streamed_text_fills_the_response_entry_live_then_the_final_answer_replaces_it(qtbot, console, review):
    provider = GatedStream()
    console.set_workflow(review)
    console.set_resolver_factory(lambda: provider)
    console.run_action.trigger()
    qtbot.waitUntil(
        lambda: any(e.type == "llm_stream" and e.content == "Hello **world**" for e in console.visible_entries()),
        timeout=5000,
    )
    streaming = [e for e in console.visible_entries() if e.node_id == "triage"]
    assert [e.type for e in streaming] == ["step_start", "start_prompt", "llm_stream"]
    # nothing selected: the details pane follows the answer being streamed, rendered as Markdown
    # (its growing text at most every STREAM_REFRESH seconds)
    qtbot.waitUntil(lambda: "world" in console.entry_view.toPlainText(), timeout=1000)
    assert console.entry_kind == "markdown"
    assert "**" not in console.entry_view.toPlainText()
    assert console.bridge.node_states()["triage"] == "running"
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        provider.gate.set()  # the answer has no "refund": the flow ends on the general branch
    triage = [e for e in console.visible_entries() if e.node_id == "triage"]
    assert [e.type for e in triage] == ["step_start", "start_prompt", "llm_response"]
    assert triage[-1].content == "Hello **world**, final." and triage[-1].extra == {
        "usage": {"prompt_tokens": 3, "completion_tokens": 4}
    }
    assert not any(e.type == "llm_delta" for e in console.visible_entries())
    assert sum(e.type == "llm_delta" and e.node_id == "triage" for e in console.all_events()) == 3
    assert console.node_details("triage")["usage"] == {"prompt_tokens": 3, "completion_tokens": 4}


def test_echo_subagent_conversation_gives_the_nested_trace(qtbot, console, research):
    console.set_workflow(research)
    with qtbot.waitSignal(console.run_finished, timeout=5000) as finished:
        console.run_action.trigger()
    assert finished.args == ["completed"]
    roots = console.trace.roots()
    assert len(roots) == 1 and roots[0].text(0) == "Lead researcher"
    children = [roots[0].child(i) for i in range(roots[0].childCount())]
    assert [c.text(0) for c in children] == ["Fact finder", "Skeptic"]
    assert [c.text(1) for c in children] == ["done", "done"]
    calls = list(console.trace.calls.values())
    assert {c.node_id for c in calls} == {"facts", "skeptic"}
    for c in calls:
        assert c.parent_node_id == "lead" and c.parent_call_id is None and c.depth == 1
        assert c.input.startswith("Research question:") and c.output == c.input and c.duration is not None
    # subagent nodes get states on the canvas too
    states = console.bridge.node_states()
    assert states["facts"] == "done" and states["skeptic"] == "done" and states["writer"] == "done"
    # selecting a call shows its input and output
    console.trace.tree.setCurrentItem(children[1])
    assert "Skeptic" in console.trace.detail.toPlainText() and "Research question" in console.trace.detail.toPlainText()
    assert calls[0].usage and " out tokens" in console.trace.detail.toPlainText()  # what the call used
    # a subagent entry's JSON content is pretty-printed and highlighted
    sub = next(i for i, e in enumerate(console.visible_entries()) if e.type == "subagent_call_start")
    console.view.setCurrentIndex(console.proxy.index(sub, 0))
    assert console.entry_kind == "json"
    html = console.entry_view.toHtml()
    assert "subagentNodeId" in console.entry_view.toPlainText() and "color:" in html
    assert '\n  "type"' in console.entry_view.toPlainText() or '  "type"' in console.entry_view.toPlainText()


def _entries(console):
    return [(e.node_id, e.type) for e in console.visible_entries()]


def test_filters_by_node_type_and_text_and_collapse(qtbot, console, review):
    console.set_workflow(review)
    qtbot.waitUntil(lambda: console.run_action.isEnabled(), timeout=1000)
    console.run_action.trigger()
    qtbot.waitUntil(lambda: console.status == "paused" and not console.bridge.is_busy, timeout=5000)
    total = len(console.visible_entries())

    console.set_node_filter("triage")
    assert _entries(console) == [("triage", "step_start"), ("triage", "start_prompt"), ("triage", "llm_response")]
    console.set_node_filter(None)
    assert len(console.visible_entries()) == total

    console.set_type_groups(["Condition checks", "Approvals"])
    assert _entries(console) == [("route", "logic_check"), ("signoff", "wait_input")]
    assert console.type_button.text() == f"Types: 2 of {len(TYPE_GROUPS)}"
    console.set_type_groups(None)

    qtbot.keyClicks(console.search_edit, "REFUND REPLY")
    assert _entries(console) == [("signoff", "wait_input")]
    console.search_edit.clear()
    assert len(console.visible_entries()) == total

    console.toggle_collapsed("triage")
    assert [t for n, t in _entries(console) if n == "triage"] == ["step_start"]
    console.toggle_collapsed("triage")
    assert [t for n, t in _entries(console) if n == "triage"] == ["step_start", "start_prompt", "llm_response"]
    console.collapse_button.setChecked(True)
    assert all(t == "step_start" or n == "system" for n, t in _entries(console))
    console.collapse_button.setChecked(False)
    assert len(console.visible_entries()) == total


def test_clicking_the_arrow_of_a_step_collapses_its_node(qtbot, console, review):
    console.set_workflow(review)
    console.run_action.trigger()
    qtbot.waitUntil(lambda: console.status == "paused" and not console.bridge.is_busy, timeout=5000)
    row = next(i for i, e in enumerate(console.visible_entries()) if e.node_id == "triage")
    rect = console.view.visualRect(console.proxy.index(row, 0))
    arrow = console.delegate.arrow_rect(rect).center()
    qtbot.mouseClick(console.view.viewport(), Qt.MouseButton.LeftButton, pos=arrow)
    assert console.proxy.is_collapsed("triage")
    assert [t for n, t in _entries(console) if n == "triage"] == ["step_start"]


def test_entry_click_activates_its_node_and_show_node_scrolls_to_it(qtbot, console):
    console.set_workflow(parallel_approvals())
    console.run_action.trigger()
    qtbot.waitUntil(lambda: console.status == "paused" and not console.bridge.is_busy, timeout=5000)
    entries = console.visible_entries()
    row = next(i for i, e in enumerate(entries) if e.node_id == "draft" and e.type == "llm_response")
    rect = console.view.visualRect(console.proxy.index(row, 0))
    with qtbot.waitSignal(console.node_activated, timeout=1000) as activated:
        qtbot.mouseClick(console.view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())
    assert activated.args == ["draft"]
    assert console.current_entry() is entries[row]
    assert console.entry_kind == "markdown" and console.entry_view.toPlainText().strip() == "draft: go"
    assert console.node_panel.output_view.toPlainText().strip() == "draft: go"

    # the canvas echoing the selection back does not move the entry the user clicked
    console.show_node("draft")
    assert console.current_entry() is entries[row]
    # a node selected on the canvas: its entries are scrolled to and selected, no echo back
    with qtbot.assertNotEmitted(console.node_activated):
        console.show_node("ap2")
    assert console.current_entry().node_id == "ap2"
    assert console.view.visualRect(console.view.currentIndex()).intersects(console.view.viewport().rect())
    # with a node filter on another node, show_node switches the filter to the node shown
    console.set_node_filter("draft")
    console.show_node("ap1")
    assert console.current_entry().node_id == "ap1" and console.proxy.node_filter == frozenset({"ap1"})


def test_node_details_after_a_run(qtbot, console, review):
    console.set_workflow(review)
    console.run_action.trigger()
    qtbot.waitUntil(lambda: console.status == "paused" and not console.bridge.is_busy, timeout=5000)
    d = console.node_details("triage")
    assert d["input"].startswith("Customer message:") and d["output"] == d["input"]
    assert d["duration"] is not None and d["duration"] >= 0 and d["usage"]["prompt_tokens"] > 0
    assert d["state"] == "done"
    waiting = console.node_details("signoff")
    assert waiting["state"] == "waiting" and waiting["input"].startswith("Customer message:")
    assert console.node_details("send")["state"] is None
    console.show_node("triage")
    assert console.node_panel.state_label.text() == "done"
    assert "tokens" not in console.node_panel.tokens_label.text() and "in" in console.node_panel.tokens_label.text()


def test_replay_of_a_stored_run_shows_the_same_log_and_states(qtbot, console, review, tmp_path):
    store = RunStore(tmp_path / "runs.db")
    console.set_store(store)
    console.set_workflow(review)
    console.run_action.trigger()
    qtbot.waitUntil(lambda: console.status == "paused" and not console.bridge.is_busy, timeout=5000)
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        qtbot.mouseClick(console.approvals.active_card.reject_button, Qt.MouseButton.LeftButton)
    live = [(e.node_id, e.type, e.content) for e in console.visible_entries()]
    live_states = console.bridge.node_states()
    run_id = console.run_id

    from editor.run.console import RunConsole

    other = RunConsole()
    qtbot.addWidget(other)
    with qtbot.waitSignal(other.node_states_changed) as states:
        assert other.replay(store.workflow_of(run_id), store.events(run_id), run_id=run_id, status="completed")
    assert [(e.node_id, e.type, e.content) for e in other.visible_entries()] == live
    assert states.args[0] == live_states
    assert other.header.status_text == "● Completed"
    assert other.node_details("revise")["output"] == console.node_details("revise")["output"]
    assert other.run_record()["results"]["revise"] == console.node_details("revise")["output"]


def test_replay_is_refused_during_a_live_run(qtbot, console, review):
    console.set_workflow(review)
    console.run_action.trigger()
    qtbot.waitUntil(lambda: console.status == "paused", timeout=5000)
    assert console.replay(review, [RunEvent("system", "run_status", "completed")]) is False
    assert console.bridge.is_active


class Failing:
    name = "failing"

    async def complete(self, inv: AgentInvocation, ctx: ProviderContext) -> LLMResult:
        from engine import LLMError

        raise LLMError("HTTP 401: invalid API key")


def test_a_failing_agent_fails_the_run_and_its_node_carries_the_error(qtbot, console, review):
    console.set_workflow(review)
    console.set_resolver_factory(lambda: Failing())
    with qtbot.waitSignal(console.run_finished, timeout=5000) as finished:
        console.start_run()
    assert finished.args == ["failed"]
    kinds = [(e.node_id, e.type) for e in console.visible_entries()]
    assert ("triage", "llm_error") in kinds and kinds[-1] == ("system", "run_status")
    assert console.bridge.node_states()["triage"] == "failed"
    assert console.node_errors() == {"triage": "HTTP 401: invalid API key"}
    assert console.header.status_text.startswith("● Failed: Agent 'Triage and draft' failed: HTTP 401")
    console.set_type_groups(["Errors"])
    assert [e.type for e in console.visible_entries()] == ["llm_error", "error"]


def test_a_long_log_is_a_model_and_search_waits_for_typing_to_pause(qtbot, console, review):
    import time as _time

    events = [RunEvent("system", "run_status", "running")]
    for i in range(4000):
        nid = ("triage", "send", "revise")[i % 3]
        events += [
            RunEvent(nid, "step_start", "x"),
            RunEvent(nid, "llm_delta", f"part {i} "),
            RunEvent(nid, "llm_delta", "more"),
            RunEvent(nid, "llm_response", f"answer {i}"),
        ]
    events.append(RunEvent("system", "run_status", "completed"))
    t0 = _time.perf_counter()
    assert console.replay(review, events)
    assert _time.perf_counter() - t0 < 5
    assert console.proxy.rowCount() == 2 + 4000 * 2  # deltas fold into their response entries
    assert console.view.uniformItemSizes()
    qtbot.keyClicks(console.search_edit, "answer 3999")
    assert console.proxy.rowCount() == 2 + 8000  # not filtered yet: typing has not paused
    qtbot.waitUntil(lambda: console.proxy.rowCount() == 1, timeout=2000)
    assert console.visible_entries()[0].content == "answer 3999"


def test_a_step_entry_shows_how_and_when_the_step_ended(qtbot, console, research):
    """A step's row in full: not only its title, but when it started, how it ended (its
    step_end, shown on the row), when, and where its input and output are; Copy copies that."""
    from PySide6.QtGui import QGuiApplication

    from engine import parse_workflow

    console.set_workflow(research)
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        console.run_action.trigger()
    row = next(i for i, e in enumerate(console.visible_entries()) if e.type == "step_start" and e.node_id == "writer")
    console.view.setCurrentIndex(console.proxy.index(row, 0))
    assert console.entry_kind == "step"
    text = console.entry_view.toPlainText()
    assert "Writer" in text and "Started" in text and "✓ done in" in text and "Ended" in text
    assert "Node tab" in text and "running" not in text
    console.copy_current_entry()
    assert "✓ done in" in QGuiApplication.clipboard().text()

    # a failed step: its error, and the error link it went on by
    failing = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "x"}},
                {"id": "w", "type": "fetch", "data": {"url": "http://127.0.0.1:9/nothing"}},
                {"id": "a", "type": "agent", "data": {"agentName": "Fallback"}},
            ],
            "connections": [{"source": "s", "target": "w"}, {"source": "w", "target": "a", "sourceHandle": "error"}],
        }
    )
    console.set_workflow(failing)
    with qtbot.waitSignal(console.run_finished, timeout=10000):
        console.run_action.trigger()
    row = next(i for i, e in enumerate(console.visible_entries()) if e.type == "step_start" and e.node_id == "w")
    console.view.setCurrentIndex(console.proxy.index(row, 0))
    text = console.entry_view.toPlainText()
    assert "✗ failed in" in text and "Error" in text and "'error' link" in text, text


def test_the_input_box_says_what_an_empty_box_runs_with(qtbot, console):
    """With a Start node that has no text, an empty box starts the flow with nothing, and the
    placeholder says so (it spoke of "the Start node's own text", which there is none of)."""
    from editor.run.header import INPUT_PLACEHOLDER, NO_START_TEXT_PLACEHOLDER
    from engine import parse_workflow

    def flow(text: str):
        return parse_workflow(
            {
                "nodes": [
                    {"id": "s", "type": "start", "data": {"initialInput": text}},
                    {"id": "a", "type": "agent", "data": {}},
                ],
                "connections": [{"source": "s", "target": "a"}],
            }
        )

    console.set_workflow(flow(""))
    assert console.input_edit.toPlainText() == ""
    assert console.input_edit.placeholderText() == NO_START_TEXT_PLACEHOLDER
    console.set_workflow(flow("a question"))
    assert console.input_edit.toPlainText() == "a question"
    assert console.input_edit.placeholderText() == INPUT_PLACEHOLDER
    console.set_workflow(flow(""))
    assert console.input_edit.placeholderText() == NO_START_TEXT_PLACEHOLDER


def test_a_node_called_in_every_round_of_a_loop_shows_its_last_call_and_its_total(qtbot, console):
    from engine import parse_workflow

    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "a draft"}},
                {"id": "rounds", "type": "loop", "data": {"maxIterations": 3, "until": "never said"}},
                {"id": "reviser", "type": "agent", "data": {"agentName": "Reviser"}},
                {"id": "final", "type": "agent", "data": {"agentName": "Final"}},
            ],
            "connections": [
                {"source": "s", "target": "rounds"},
                {"source": "rounds", "target": "reviser", "sourceHandle": "body"},
                {"source": "reviser", "target": "rounds"},
                {"source": "rounds", "target": "final", "sourceHandle": "done"},
            ],
        }
    )
    console.set_workflow(wf)
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        console.run_action.trigger()
    d = console.node_details("reviser")
    assert d["totalUsage"]["completion_tokens"] == 3 * d["usage"]["completion_tokens"]  # the same text each round
    console.show_node("reviser")
    text = console.node_panel.tokens_label.text()
    assert "(last call)" in text and "in this run" in text, text
    console.show_node("final")
    assert "in this run" not in console.node_panel.tokens_label.text()  # called once


def test_the_cost_says_what_it_is_made_of(qtbot, console, research):
    console.set_workflow(research)
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        console.run_action.trigger()
    label = console.header.cost_label
    assert label.text().endswith("tokens · $0")
    tip = label.toolTip()
    assert "tokens in" in tip and "echo: $0" in tip and "No price" not in tip, tip
    from editor.run.console import cost_breakdown

    costs = {
        "nodes": {"a": {"prompt": 5, "completion": 3, "model": "llama3.2", "cost": None}},
        "total": {"prompt": 5, "completion": 3, "tokens": 8, "cost": None, "unpriced": ["llama3.2"]},
    }
    assert "No price known for llama3.2" in cost_breakdown(costs)
