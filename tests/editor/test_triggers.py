"""The workflow inspector's trigger phrases and their live tester."""

from __future__ import annotations

from engine import validate

from .conftest import SAMPLES, open_flow


def test_trigger_tester_shows_match_and_bindings(window, qtbot, tmp_path):
    open_flow(window, SAMPLES / "review.flow.json")  # (a sample with no trigger phrases)
    window.inspector.show_node(None)
    editor = window.inspector.wf_triggers
    qtbot.keyClicks(editor.edit, "create (a)? $(genre:wildcard) playlist (with)? $(quantity:number) (songs)?")
    assert window.document.workflow.triggers == [
        "create (a)? $(genre:wildcard) playlist (with)? $(quantity:number) (songs)?"
    ]
    assert window.document.is_modified()
    qtbot.keyClicks(editor.tester, "Create a Blues playlist with 12 songs")
    qtbot.waitUntil(lambda: "matches" in editor.result_text())
    text = editor.result_text()
    assert "✓ matches" in text and "genre = “Blues”" in text and "quantity = 12" in text
    editor.tester.clear()
    qtbot.keyClicks(editor.tester, "play some jazz")
    assert "no pattern matches" in editor.result_text()
    window.document.undo_stack.undo()
    assert not window.document.workflow.triggers
    assert editor.patterns() == []


def test_malformed_pattern_named_with_position(window, qtbot):
    open_flow(window, SAMPLES / "review.flow.json")  # (a sample with no trigger phrases)
    window.inspector.show_node(None)
    editor = window.inspector.wf_triggers
    qtbot.keyClicks(editor.edit, "play $(song:wildcard")
    assert editor.errors.isVisible()
    assert "Pattern 1 is malformed at character 6" in editor.errors.text()
    issues = [i for i in validate(window.document.workflow) if i.code == "trigger_invalid"]
    assert issues and "'play $(song:wildcard'" in issues[0].message
