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
