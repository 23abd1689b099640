"""Issue 18 in the GUI: the approval card's editable review text (what flows on is the edit,
"show changes" renders a word diff), the canvas "from cache" state, the compare view and the timeline."""

from __future__ import annotations

import json

from PySide6.QtCore import Qt

from .test_console_run import run_to_pause


def test_edit_before_approving_sends_the_edited_text_downstream(qtbot, console, review):
    run_to_pause(qtbot, console, review)
    card = console.approvals.active_card
    original = card.request.input_text
    assert not card.editor.isVisible() and card.edited_output is None
    qtbot.mouseClick(card.edit_button, Qt.MouseButton.LeftButton)
    assert card.editor.isVisible() and not card.review.isVisible()
    card.editor.setPlainText(original.replace("refund", "full refund today"))
    assert card.edited_output is not None and "edited" in card.edited_label.text()
    card.changes_box.setChecked(True)
    assert card.changes.isVisible()
    html = card.changes.toHtml()
    assert "full" in html and "today" in html
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
    received = next(e for e in console.bridge.run.events if e.type == "input_received")
    assert json.loads(received.content) == {"decision": "approve", "note": "", "edited": True}
    assert received.extra["original"] == original and "full refund today" in received.extra["output"]
    send_prompt = next(e for e in console.bridge.run.events if e.type == "start_prompt" and e.node_id == "send")
    assert "full refund today" in send_prompt.content
    assert console.bridge.run_state.details["signoff"].review["original"] == original
    from editor.run.log_view import summary_for

    decision = next(e for e in console.model.entries if e.type == "input_received")
    assert summary_for(decision) == "Approve — with the output edited"  # the log says the text was changed


def test_timeline_tab_shows_one_bar_per_execution_and_selects_on_click(qtbot, console, review):
    run_to_pause(qtbot, console, review)
    card = console.approvals.active_card
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
    tl = console.timeline
    console.tabs.setCurrentWidget(tl)
    spans = tl.timeline.spans
    assert [s.node_id for s in spans] == ["start", "triage", "route", "signoff", "send"]
    assert [s.state for s in spans] == ["done"] * 5
    signoff = spans[3]
    assert signoff.wait_start is not None and signoff.wait_end is not None and signoff.end >= signoff.wait_end
    assert tl.timeline.final
    canvas = tl.canvas
    qtbot.waitUntil(lambda: canvas.width() > 300, timeout=2000)
    rect = canvas.bar_rect(1)
    with qtbot.waitSignal(console.node_activated, timeout=2000) as got:
        qtbot.mouseClick(canvas, Qt.MouseButton.LeftButton, pos=rect.center().toPoint())
    assert got.args == ["triage"]
    assert console.current_entry() is not None and console.current_entry().node_id == "triage"
    # the stored view's timeline is the same
    events = list(console.bridge.run.events)
    console.replay(review, events, run_id="x", status="completed")
    assert [(s.node_id, s.state) for s in console.timeline.timeline.spans] == [(s.node_id, s.state) for s in spans]


def test_compare_view_marks_changed_nodes_and_renders_the_output_diff(qtbot, tmp_path):
    import asyncio

    from editor.history.compare import CompareWindow
    from engine import EchoProvider, Run, parse_workflow
    from tests.engine.flows import agent, link, start

    def wf(prompt: str):
        return parse_workflow(
            {
                "nodes": [start("s", "hello world"), agent("a", prompt), agent("b", "{{PREVIOUS_OUTPUT}}")],
                "connections": [link("s", "a"), link("a", "b")],
            }
        )

    runs = []
    for prompt in ("say: {{PREVIOUS_OUTPUT}}", "shout: {{PREVIOUS_OUTPUT}}"):
        r = Run(wf(prompt), EchoProvider())
        asyncio.run(r.start())
        runs.append(r)
    win = CompareWindow("a" * 32, runs[0].workflow, runs[0].events, "b" * 32, runs[1].workflow, runs[1].events)
    qtbot.addWidget(win)
    win.show()
    assert win.result["workflow"]["changed"] == {"a": ["userPrompt"]}
    assert win.summary.text() == "Workflow changed: a (userPrompt)  ·  those nodes are outlined in blue on the canvases"
    assert win.side_a.scene.node_items["a"].found and win.side_b.scene.node_items["a"].found
    assert not win.side_a.scene.node_items["b"].found
    assert win.side_a.scene.node_items["a"].run_state == "done"
    assert win.table.topLevelItemCount() == 3
    assert win.table.currentItem().data(0, Qt.ItemDataRole.UserRole) == "a"  # the first changed output
    html = win.diff_view.toHtml()
    assert "line-through" in html and "shout" in html
    win.select_node("s")
    assert "the same" in win.diff_view.toPlainText()
    same = CompareWindow("a" * 32, runs[0].workflow, runs[0].events, "c" * 32, runs[0].workflow, runs[0].events)
    qtbot.addWidget(same)
    assert same.summary.text() == "Workflow unchanged between the two runs"  # (no outline to point at)


def test_compare_table_says_from_cache_and_not_reached(qtbot, tmp_path):
    """A run from a node next to the full run it reused: the reused node reads "from cache"; a
    node neither run reached reads "not reached" (not "skipped", which a skip policy gives)."""
    import asyncio

    from editor.history.compare import CompareWindow
    from engine import EchoProvider, Run, parse_workflow
    from engine.store import RunRecorder, RunStore
    from tests.engine.flows import agent, link, start

    wf = parse_workflow(
        {
            "nodes": [
                start("s", "hello"),
                agent("a", "{{PREVIOUS_OUTPUT}}"),
                agent("b", "{{PREVIOUS_OUTPUT}}"),
                agent("c", "{{PREVIOUS_OUTPUT}}"),
            ],
            "connections": [link("s", "a"), link("a", "b")],
        }
    )  # nothing leads to c
    store = RunStore(tmp_path / "runs.db")
    runs = []
    for options in ({}, {"start_at": "b", "store": store}):
        run = Run(wf, EchoProvider(), reuse_from=runs[0].run_id if runs else None, **options)
        recorder = RunRecorder(store, run)
        asyncio.run(run.start())
        recorder.settled()
        recorder.close()
        runs.append(run)
    store.close()
    win = CompareWindow(runs[0].run_id, wf, runs[0].events, runs[1].run_id, wf, runs[1].events)
    qtbot.addWidget(win)
    rows = {
        win.table.topLevelItem(i).data(0, Qt.ItemDataRole.UserRole): win.table.topLevelItem(i)
        for i in range(win.table.topLevelItemCount())
    }
    assert [rows["a"].text(1), rows["a"].text(2)] == ["done", "from cache"]
    assert [rows["b"].text(1), rows["b"].text(2)] == ["done", "done"]
    assert [rows["c"].text(1), rows["c"].text(2)] == ["not reached", "not reached"]


def test_an_edited_review_keeps_the_card_inside_its_panel(qtbot):
    """Editing the text under review used to widen the card past the console (its "edited"
    note set the width): a horizontal scroll bar appeared and Reject went off the side."""
    from PySide6.QtWidgets import QApplication

    from editor.run.approvals import ApprovalsPanel
    from editor.run.bridge import ApprovalRequest

    panel = ApprovalsPanel()
    qtbot.addWidget(panel)
    panel.resize(400, 420)
    text = "Customer message:\n\nHello, I was charged twice for my order #1042. I would like a refund."
    panel.set_requests([ApprovalRequest("signoff", "Approval", "A refund reply is about to be sent.", text, True)])
    panel.show()
    card = panel.active_card
    qtbot.mouseClick(card.edit_button, Qt.MouseButton.LeftButton)
    card.editor.setPlainText(text + " Please refund quickly.")
    QApplication.processEvents()
    assert "edited" in card.edited_label.text()
    assert panel._scroll.horizontalScrollBar().maximum() == 0, "no sideways scrolling"
    right = panel._scroll.viewport().mapToGlobal(panel._scroll.viewport().rect().topRight()).x()
    assert card.reject_button.mapToGlobal(card.reject_button.rect().topRight()).x() <= right
