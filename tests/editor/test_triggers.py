"""The workflow inspector's trigger phrases and their live tester."""

from __future__ import annotations

import json

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


def test_learned_triggers_are_listed_and_removable_and_objects_kept(window, qtbot, tmp_path):
    path = tmp_path / "learned.flow.json"
    data = json.loads((SAMPLES / "review.flow.json").read_text())
    data["triggers"] = [
        "play $(x:wildcard)",
        {"pattern": "hear $(x:wildcard) now", "learned": True},
        {"pattern": "alias $(x:wildcard)", "isAlias": True, "examples": ["alias it"]},
    ]
    path.write_text(json.dumps(data))
    open_flow(window, path)
    window.inspector.show_node(None)
    editor = window.inspector.wf_triggers
    assert editor.patterns() == ["play $(x:wildcard)", "alias $(x:wildcard)"]
    assert editor.learned() == ["hear $(x:wildcard) now"]
    assert editor.learned_box.isVisibleTo(window) and editor.learned_list.count() == 1
    qtbot.keyClicks(editor.tester, "hear jazz now")
    assert "matches" in editor.result_text()  # learned ones are matched too
    editor.edit.appendPlainText("sing $(x:wildcard)")
    triggers = window.document.workflow.triggers
    assert triggers[:2] == [
        "play $(x:wildcard)",
        {"pattern": "alias $(x:wildcard)", "isAlias": True, "examples": ["alias it"]},
    ]
    assert triggers[2] == "sing $(x:wildcard)" and triggers[3] == {"pattern": "hear $(x:wildcard) now", "learned": True}
    editor.learned_list.setCurrentRow(0)
    editor.remove_learned.click()
    assert {"pattern": "hear $(x:wildcard) now", "learned": True} not in window.document.workflow.triggers
    assert editor.learned() == [] and not editor.learned_box.isVisibleTo(window)
    window.document.undo_stack.undo()
    assert {"pattern": "hear $(x:wildcard) now", "learned": True} in window.document.workflow.triggers
    assert editor.learned() == ["hear $(x:wildcard) now"]
