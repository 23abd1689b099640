"""File ▸ Open on a foreign flow file (a new unsaved document; the original untouched) and
File ▸ Export as an AnythingLLM agent flow."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "imports"


def test_open_foreign_file_as_new_unsaved_document(window, tmp_path, dialogs):
    src = tmp_path / "digest.json"
    shutil.copy(FIX / "anythingllm_direct_output.json", src)
    before = src.read_bytes()
    dialogs.open_path = str(src)
    window.files.open_dialog()
    doc = window.document
    assert doc.path is None and doc.is_modified() and window.isWindowModified()
    assert [n.type for n in doc.workflow.nodes] == ["start", "http", "agent", "fetch"]
    message = window.statusBar().currentMessage()
    assert "AnythingLLM agent flow" in message and "new unsaved workflow" in message
    assert not dialogs.of("critical")
    ((kind, title, text),) = dialogs.of("information")  # the import's notes, whole (not cut off in the status bar)
    assert title == "Imported with notes" and text.startswith(message)
    assert "• steps[1] (apiCall) has directOutput: the flow ends there; the 2 later blocks are kept below" in text
    target = tmp_path / "rate.flow.json"
    dialogs.save_path = str(target)
    assert window.files.save()  # no path: Save asks where, never writes the original
    assert src.read_bytes() == before
    assert json.loads(target.read_text())["imported"]["format"] == "anythingllm"


def test_open_refused_import_names_format_and_block(window, dialogs):
    assert not window.files.open_path(str(FIX / "anythingllm_unknown_block.json"), ask=False)
    ((kind, title, text),) = dialogs.of("critical")
    assert "AnythingLLM agent flow" in text and "'slackMessage' block at steps[2]" in text


def test_open_anythingllm_code_block_as_a_code_node(window, dialogs):
    assert window.files.open_path(str(FIX / "anythingllm_with_code.json"), ask=False)
    kinds = [n.type for n in window.document.workflow.nodes]
    assert kinds == ["start", "http", "code", "agent"] and not dialogs.of("critical")


def test_open_script_recipe_shows_the_cannot_run_error(window, dialogs):
    assert window.files.open_path(str(FIX / "typeagent_list_files.recipe.json"), ask=False)
    assert "TypeAgent script recipe" in window.statusBar().currentMessage()
    assert window.document.workflow.nodes[1].type == "script"


def test_export_anythingllm(window, tmp_path, dialogs):
    assert window.files.open_path(str(FIX / "anythingllm_issue_digest.json"), ask=False)
    out = tmp_path / "back.json"
    dialogs.save_path = str(out)
    window.act_export.trigger()
    data = json.loads(out.read_text())
    assert [s["type"] for s in data["steps"]] == ["start", "apiCall", "webScraping", "llmInstruction"]
    assert "Exported back.json" in window.statusBar().currentMessage()
    assert window.files.open_path(str(FIX / "typeagent_top_songs.recipe.json"), ask=False)
    dialogs.save_path = str(tmp_path / "never.json")
    window.act_export.trigger()
    assert not (tmp_path / "never.json").exists()
    ((kind, title, text),) = dialogs.of("critical")
    assert title == "Cannot export" and "'script' node" in text
