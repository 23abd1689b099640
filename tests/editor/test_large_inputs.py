"""Issue 13, items 3 and 4 in the editor: big inputs open without freezing the window, long
text is previewed (never laid out whole, never written back), special files are refused, a
save that cannot be written says why and keeps the document modified."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from editor.long_text import too_long_to_show


def long_input_flow(tmp_path: Path, chars: int = 1_000_000) -> Path:
    path = tmp_path / "long.flow.json"
    path.write_text(
        json.dumps(
            {
                "nodes": [
                    {"id": "s", "type": "start", "position": {"x": 0, "y": 0}, "data": {"initialInput": "x" * chars}},
                    {
                        "id": "a",
                        "type": "agent",
                        "position": {"x": 300, "y": 0},
                        "data": {"agentName": "A", "model": "m"},
                    },
                ],
                "connections": [
                    {"id": "c", "source": "s", "target": "a", "sourceHandle": "output", "targetHandle": "input"}
                ],
            }
        )
    )
    return path


def test_a_million_character_start_input_opens_at_once(window, qtbot, tmp_path) -> None:
    path = long_input_flow(tmp_path)
    t0 = time.perf_counter()
    assert window.files.open_path(str(path), ask=False)
    console = window.run_console
    # Validation calls set_workflow again and again: nothing is laid out twice.
    for _ in range(20):
        console.set_workflow(window.document.workflow, window.document.path)
    qtbot.wait(50)
    elapsed = time.perf_counter() - t0
    assert elapsed < 10, elapsed  # was 34 s to open, 35 s more to idle (5.3 s seen under full load)
    assert console.input_edit.toPlainText() == ""  # an empty box runs with the Start node's text
    assert "1,000,000 characters" in console.input_edit.placeholderText()


def test_long_start_input_is_previewed_read_only_and_kept(window, qtbot, tmp_path) -> None:
    assert window.files.open_path(str(long_input_flow(tmp_path, 300_000)), ask=False)
    doc = window.document
    t0 = time.perf_counter()
    window.inspector.show_node("s")  # as selecting the node does
    edit = window.inspector.page("start").input
    assert time.perf_counter() - t0 < 3
    assert edit.isReadOnly() and "300,000 characters" in edit.toPlainText()
    assert doc.workflow.node("s").data.initialInput == "x" * 300_000  # the preview never replaces it
    edit.set_text_keep_cursor("short")
    assert not edit.isReadOnly() and edit.toPlainText() == "short"


def test_too_long_to_show() -> None:
    assert not too_long_to_show("a" * 100)
    assert too_long_to_show("a" * 10_000)
    assert not too_long_to_show(("a" * 100 + "\n") * 100)


def test_short_start_input_still_fills_the_box_and_typed_text_is_kept(window, tmp_path) -> None:
    path = long_input_flow(tmp_path, 20)
    assert window.files.open_path(str(path), ask=False)
    box = window.run_console.input_edit
    assert box.toPlainText() == "x" * 20
    box.setPlainText("mine")
    box.document().setModified(True)  # as typing does
    window.document.set_node_field("s", "initialInput", "changed")
    window.run_console.set_workflow(window.document.workflow, window.document.path)
    assert box.toPlainText() == "mine"


@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_special_files_are_refused_by_the_open_path(window, tmp_path, dialogs, special) -> None:
    if special == "fifo":
        path = tmp_path / "pipe.flow.json"
        os.mkfifo(path)
    else:
        path = Path(special)
    t0 = time.perf_counter()
    assert not window.files.open_path(str(path), ask=False)
    assert time.perf_counter() - t0 < 5
    ((_, _, text),) = dialogs.of("critical")
    assert "not a regular file" in text


def test_a_save_that_cannot_be_written_says_why_and_keeps_the_document_modified(
    window, tmp_path, dialogs, monkeypatch
) -> None:
    import sys

    path = long_input_flow(tmp_path, 10)
    assert window.files.open_path(str(path), ask=False)
    before = path.read_text()
    window.document.set_node_field("s", "initialInput", "bad \ud800 text")  # a lone surrogate (from a paste)
    assert window.document.is_modified()
    hooked: list = []
    monkeypatch.setattr(sys, "excepthook", lambda *a: hooked.append(a))
    assert window.files.save() is False
    ((_, title, text),) = dialogs.of("critical")
    assert title == "Cannot save" and "not valid Unicode" in text
    assert window.document.is_modified()
    assert path.read_text() == before  # the file is untouched
    window.files.autosaver.write(window.document.workflow, window.document.path)  # no exception either
    assert hooked == []
