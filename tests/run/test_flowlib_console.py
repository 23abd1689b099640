"""Issue 16 in the run console and the http inspector: a subflow's entries grouped under its
flow node (collapsible), flow calls in the trace, and "Send test request" against a real
local HTTP server (tests/fakes/web_server.py)."""

from __future__ import annotations

import json

from PySide6.QtCore import Qt

from editor.run.log_model import flow_node_of_path
from engine import RunEvent, parse_workflow
from tests.fakes.web_server import WebServer, json_answer, text_answer


def parent_workflow():
    return parse_workflow(
        {
            "name": "Parent",
            "version": 1,
            "nodes": [
                {"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "go"}},
                {
                    "id": "sub",
                    "type": "flow",
                    "x": 300,
                    "y": 0,
                    "data": {"flow": "flow-child", "inputs": {"topic": "x"}},
                },
                {"id": "api", "type": "http", "x": 600, "y": 0, "data": {"url": "http://127.0.0.1:1/x"}},
            ],
            "connections": [
                {"source": "start", "target": "sub", "sourceHandle": "output", "targetHandle": "input"},
                {"source": "sub", "target": "api", "sourceHandle": "output", "targetHandle": "input"},
            ],
        }
    )


def child_workflow():
    return parse_workflow(
        {
            "name": "Child",
            "version": 1,
            "nodes": [
                {"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": ""}},
                {"id": "writer", "type": "agent", "x": 300, "y": 0, "data": {"agentName": "Child writer"}},
            ],
            "connections": [],
        }
    )


def events():
    t = 1000.0
    path = "sub:run-child-1"
    out = [
        RunEvent("system", "run_status", "running", timestamp=t),
        RunEvent("start", "step_start", "", timestamp=t + 1),
        RunEvent("sub", "step_start", "", timestamp=t + 2),
        RunEvent("start", "step_start", "", timestamp=t + 3, path=path),
        RunEvent("writer", "step_start", "", timestamp=t + 4, path=path),
        RunEvent("writer", "llm_delta", "Hel", timestamp=t + 5, path=path),
        RunEvent("writer", "llm_delta", "lo", timestamp=t + 5.5, path=path),
        RunEvent("writer", "llm_response", "Hello child", timestamp=t + 6, path=path),
        RunEvent("sub", "node_output", "Hello child", timestamp=t + 7, extra={"handle": "output"}),
        RunEvent("api", "step_start", "", timestamp=t + 8),
        RunEvent("api", "http_request", "", timestamp=t + 9, extra={"method": "GET", "url": "http://127.0.0.1/x"}),
        RunEvent("api", "http_response", "", timestamp=t + 10, extra={"status": 200, "bytes": 12, "durationMs": 3}),
        RunEvent("system", "run_status", "completed", timestamp=t + 11),
    ]
    return out


def rows(console):
    return [(e.group, e.node_id, e.type, e.depth, e.node_name) for e in console.visible_entries()]


def test_path_names_the_flow_node():
    assert flow_node_of_path("sub:run-1", {"sub": "Subflow"}) == "sub"
    assert flow_node_of_path("sub:run-1/inner:run-2", {"sub": "x"}) == "sub"
    assert flow_node_of_path("other/1", {}) == "other"
    assert flow_node_of_path("writer.call_1_ab12:run-9", {"writer": "Writer"}) == "writer"  # a flow as a tool


def test_child_entries_are_grouped_under_the_flow_node_and_collapse_with_it(console):
    console.model.child_workflow = lambda node_id: child_workflow() if node_id == "sub" else None
    assert console.replay(parent_workflow(), events(), run_id="r1", status="completed")
    got = rows(console)
    nested = [r for r in got if r[3] == 1]
    # the child's entries follow the flow node's step, named from the child workflow, streamed
    # deltas folded into the final response like a top-level node's
    assert nested == [
        ("sub", "start", "step_start", 1, "Start"),
        ("sub", "writer", "step_start", 1, "Child writer"),
        ("sub", "writer", "llm_response", 1, "Child writer"),
    ]
    i = got.index(("sub", "start", "step_start", 1, "Start"))
    assert got[i - 1][:3] == ("sub", "sub", "step_start")
    assert console.visible_entries()[i + 2].content == "Hello child"
    # collapsing the flow node hides its own entries and its child run's, not its step row
    console.toggle_collapsed("sub")
    got = rows(console)
    assert [r for r in got if r[0] == "sub"] == [("sub", "sub", "step_start", 0, got[2][4])]
    assert ("api", "api", "http_response", 0, got[-2][4]) in got
    console.toggle_collapsed("sub")
    assert len([r for r in rows(console) if r[3] == 1]) == 3
    # the node filter keeps a flow node's child entries with it
    console.set_node_filter("sub")
    assert {r[0] for r in rows(console)} == {"sub"} and len(rows(console)) == 5
    # clicking a child entry points the canvas at its flow node
    seen = []
    console.node_activated.connect(seen.append)
    entry_row = next(i for i, e in enumerate(console.visible_entries()) if e.depth)
    console._on_entry_clicked(console.proxy.index(entry_row, 0))
    assert seen == ["sub"]


def test_http_entries_and_flow_calls_are_summarised(console):
    from editor.run.log_view import summary_for

    evs = events() + [
        RunEvent(
            "agent",
            "flow_call_start",
            '{"topic": "tides"}',
            timestamp=2000.0,
            extra={"callId": "fc1", "flowId": "flow-child", "flowName": "Child", "parentNodeId": "agent"},
        ),
        RunEvent(
            "agent",
            "flow_call_end",
            "Hello child",
            timestamp=2001.5,
            extra={"callId": "fc1", "flowId": "flow-child", "flowName": "Child", "parentNodeId": "agent"},
        ),
    ]
    assert console.replay(parent_workflow(), evs)
    by_type = {e.type: e for e in console.model.entries}
    assert summary_for(by_type["http_request"]) == "GET http://127.0.0.1/x"
    assert summary_for(by_type["http_response"]) == "200 · 12 bytes · 3 ms"
    assert summary_for(by_type["flow_call_start"]) == '→ flow Child: {"topic": "tides"}'
    # the trace lists the flow call under the step that made it, next to subagent calls
    trace = console.trace
    roots = trace.roots()
    assert [r.text(0) for r in roots] == ["agent"]
    call = roots[0].child(0)
    assert call.text(0) == "⇢ flow Child" and call.text(1) == "done" and call.text(2) == "1.5 s"
    assert call.text(3) == '{"topic": "tides"}' and call.text(4) == "Hello child"
    trace.tree.setCurrentItem(call)
    assert "Flow Child" in trace.detail.toPlainText() and "Hello child" in trace.detail.toPlainText()


def test_send_test_request_shows_status_headers_and_pretty_json(qtbot, qloop):
    from editor.panels.web_pages import SHOWN_BODY_CHARS, HttpPage

    edits = []
    with WebServer() as server:
        server.route("/items/7", lambda req: json_answer({"items": [{"name": "bolt", "q": req.query}]}))
        server.route("/big", text_answer("x" * (SHOWN_BODY_CHARS + 500)))
        server.route("/missing", json_answer({"error": "nope"}, status=404))
        page = HttpPage(lambda f, v, m: edits.append((f, v)), lambda w: w, lambda: {"item": 7})
        qtbot.addWidget(page)
        page.load(
            {
                "method": "GET",
                "url": server.url("/items/{{item}}"),
                "query": [{"key": "q", "value": "{{item}}"}],
                "headers": [{"key": "X-Trace", "value": "t-{{item}}"}],
                "bodyType": "none",
                "failOnStatus": True,
            }
        )
        with qtbot.waitSignal(page.test_finished, timeout=10000) as sig:
            page.send.click()
            assert page.send.text() == "Cancel test request"  # not blocking: the window keeps running
        assert sig.args == [True]
        assert page.result_status.text().startswith("✓ 200 OK")
        assert "content-type: application/json" in page.result_headers.toPlainText()
        assert json.loads(page.result_body.toPlainText()) == {"items": [{"name": "bolt", "q": [["q", "7"]]}]}
        assert page.result_body.toPlainText().startswith('{\n  "items"')  # pretty-printed
        assert server.last("/items/7").headers.get("x-trace") == "t-7"
        assert edits == []  # a test request changes nothing in the document
        # a 404 is shown, not failed (failOnStatus ignored for a test)
        page.load({"method": "GET", "url": server.url("/missing"), "failOnStatus": True})
        with qtbot.waitSignal(page.test_finished, timeout=10000):
            page.send.click()
        assert page.result_status.text().startswith("⚠ 404")
        # a big body is capped in the display
        page.load({"method": "GET", "url": server.url("/big")})
        with qtbot.waitSignal(page.test_finished, timeout=10000):
            page.send.click()
        body = page.result_body.toPlainText()
        assert len(body) < SHOWN_BODY_CHARS + 100 and body.endswith("(500 more characters not shown)")
        # a refused URL says why
        page.load({"method": "GET", "url": "file:///etc/passwd"})
        with qtbot.waitSignal(page.test_finished, timeout=10000) as sig:
            page.send.click()
        assert sig.args == [False] and page.result_status.text().startswith("✗ ")


def test_live_subflow_run_groups_entries_and_a_child_approval_is_answered_from_the_parent(qtbot, console, tmp_path):
    """A real run (echo provider): the flow node runs a library flow that waits for an approval;
    the parent's console shows the card, the click resumes the child, the parent completes."""
    from engine import FlowLibrary, set_default_library

    folder = tmp_path / "lib"
    folder.mkdir()
    (folder / "child.flow.json").write_text(
        json.dumps(
            {
                "id": "flow-child",
                "name": "Child",
                "version": 1,
                "nodes": [
                    {"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "draft"}},
                    {"id": "writer", "type": "agent", "x": 300, "y": 0, "data": {"agentName": "Child writer"}},
                    {"id": "ok", "type": "approval", "x": 600, "y": 0, "data": {"prompt": "Send the child's draft?"}},
                    {"id": "done", "type": "agent", "x": 900, "y": 0, "data": {"agentName": "Child sender"}},
                ],
                "connections": [
                    {"source": "start", "target": "writer", "sourceHandle": "output", "targetHandle": "input"},
                    {"source": "writer", "target": "ok", "sourceHandle": "output", "targetHandle": "input"},
                    {"source": "ok", "target": "done", "sourceHandle": "approve", "targetHandle": "input"},
                ],
            }
        )
    )
    set_default_library(FlowLibrary([folder], seed=False))
    try:
        wf = parse_workflow(
            {
                "name": "Parent",
                "version": 1,
                "nodes": [
                    {"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "go"}},
                    {"id": "sub", "type": "flow", "x": 300, "y": 0, "data": {"flow": "flow-child"}},
                    {"id": "after", "type": "agent", "x": 600, "y": 0, "data": {"agentName": "After"}},
                ],
                "connections": [
                    {"source": "start", "target": "sub", "sourceHandle": "output", "targetHandle": "input"},
                    {"source": "sub", "target": "after", "sourceHandle": "output", "targetHandle": "input"},
                ],
            }
        )
        console.model.child_workflow = lambda nid: FlowLibrary([folder], seed=False).load("flow-child")
        console.set_workflow(wf, str(tmp_path / "parent.flow.json"))
        with qtbot.waitSignal(console.approvals.waiting_changed, timeout=8000):
            console.run_action.trigger()
        qtbot.waitUntil(lambda: console.status == "paused" and console.approvals.active_card is not None, timeout=5000)
        card = console.approvals.active_card
        assert card.request.node_id == "sub"  # the parent waits at its flow node
        assert "Send the child's draft?" in card.prompt_label.text()
        nested = [(e.group, e.node_name, e.type) for e in console.visible_entries() if e.depth]
        assert ("sub", "Child writer", "step_start") in nested
        assert any(t == "wait_input" for _g, _n, t in nested)
        with qtbot.waitSignal(console.run_finished, timeout=8000) as finished:
            qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
        assert finished.args == ["completed"]
        entries = console.visible_entries()
        nested_nodes = [e.node_name for e in entries if e.depth and e.type == "step_start"]
        assert nested_nodes[-1] == "Child sender"  # the child went on along approve
        top = [e.node_id for e in entries if not e.depth and e.type == "step_start"]
        assert top[0] == "start" and top[-1] == "after" and set(top[1:-1]) == {"sub"}  # resumed: a new step
        # every child entry sits between the flow node's step and the next top-level step
        i_sub = next(i for i, e in enumerate(entries) if e.node_id == "sub" and e.type == "step_start" and not e.depth)
        i_after = next(i for i, e in enumerate(entries) if e.node_id == "after" and e.type == "step_start")
        assert all(i_sub < i < i_after for i, e in enumerate(entries) if e.depth)
    finally:
        set_default_library(None)
