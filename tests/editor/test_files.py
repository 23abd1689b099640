"""Files: save/reopen/compare, bad files leave the document as it was, modified marker and
asking on close, recent files and autosave recovery."""

from __future__ import annotations

import json
import os

from PySide6.QtCore import QSize
from PySide6.QtWidgets import QMessageBox

from engine import workflow_to_dict

from .conftest import SAMPLES, copy_sample, open_flow, write_flow


def test_save_reopen_compare(window, tmp_path, dialogs):
    open_flow(window, copy_sample(tmp_path, "review"))
    doc = window.document
    doc.set_node_field("triage", "systemPrompt", "Be brief.")
    doc.add_node("approval", 100, 500)
    assert window.isWindowModified() and "[*]" in window.windowTitle()
    target = tmp_path / "out" / "saved.flow.json"
    target.parent.mkdir()
    dialogs.save_path = str(target)
    assert window.files.save_as()
    assert not window.isWindowModified()
    assert window.windowTitle().startswith("saved.flow.json")
    saved = json.loads(target.read_text(encoding="utf-8"))
    assert saved == workflow_to_dict(doc.workflow)
    assert saved["nodes"][1]["data"]["systemPrompt"] == "Be brief."
    # Reopen: the same workflow comes back.
    expected = doc.workflow.model_dump()
    assert window.files.open_path(str(target), ask=False)
    assert window.document.workflow.model_dump() == expected
    assert not [f for f in os.listdir(target.parent) if f.endswith(".tmp")]  # atomic save leaves no temp file


def test_agentflow_files_open_and_save_unchanged(window, tmp_path, dialogs):
    for sample in SAMPLES.glob("*.flow.json"):
        original = json.loads(sample.read_text(encoding="utf-8"))
        path = tmp_path / sample.name
        path.write_text(json.dumps(original), encoding="utf-8")
        assert window.files.open_path(str(path), ask=False)
        assert window.files.save()
        assert json.loads(path.read_text(encoding="utf-8")) == original, sample.name


def test_malformed_file_leaves_document_untouched(window, tmp_path, dialogs):
    open_flow(window, copy_sample(tmp_path, "hello"))
    doc = window.document
    doc.add_node("agent", 50, 300)
    before = doc.workflow.model_dump()
    path_before, count_before = doc.path, doc.undo_stack.count()
    bad_json = tmp_path / "bad.flow.json"
    bad_json.write_text("{ nodes: [", encoding="utf-8")
    bad_shape = write_flow(tmp_path, {"nodes": [{"id": "x"}], "connections": []}, "shape.flow.json")
    for bad in (bad_json, bad_shape, tmp_path / "missing.flow.json"):
        dialogs.calls.clear()
        assert not window.files.open_path(str(bad), ask=False)
        ((kind, title, text),) = dialogs.of("critical")
        assert str(bad) in text
        assert doc.workflow.model_dump() == before
        assert doc.path == path_before and doc.undo_stack.count() == count_before
    assert "not valid JSON" in window_message(window, bad_json, dialogs)


def window_message(window, path, dialogs) -> str:
    dialogs.calls.clear()
    window.files.open_path(str(path), ask=False)
    return dialogs.of("critical")[0][2]


def test_open_dialog_and_recent_files(window, tmp_path, dialogs):
    p = copy_sample(tmp_path, "hello")
    dialogs.open_path = str(p)
    window.files.open_dialog()
    assert window.document.path == str(p.resolve())
    assert window.files.recent_files()[0] == str(p.resolve())
    window.files.fill_recent_menu(window.recent_menu)
    assert [a.text() for a in window.recent_menu.actions()][0] == "hello.flow.json"


def test_close_with_unsaved_changes_asks(window, tmp_path, dialogs):
    open_flow(window, copy_sample(tmp_path, "hello"))
    window.document.add_node("agent", 0, 300)
    dialogs.question_answer = QMessageBox.StandardButton.Cancel
    assert not window.close()
    assert window.isVisible()
    assert dialogs.of("question")
    dialogs.question_answer = QMessageBox.StandardButton.Discard
    assert window.close()


def test_revert_and_new(window, tmp_path, dialogs):
    open_flow(window, copy_sample(tmp_path, "hello"))
    before = window.document.workflow.model_dump()
    window.document.delete(["greeter"])
    window.files.revert()
    assert window.document.workflow.model_dump() == before
    window.files.new_document()
    assert window.document.path is None
    assert [n.type for n in window.document.workflow.nodes] == ["start"]
    assert window.windowTitle().startswith("Untitled")


def test_sample_opens_as_untitled_copy(window, tmp_path):
    assert window.central.currentWidget() is window.welcome
    # with nothing open the Problems list says so, as the inspector does (not an empty well)
    problems = [window.problems.list.item(i).text() for i in range(window.problems.list.count())]
    assert problems == ["No workflow is open. Its problems are listed here once you create or open one."]
    window.welcome.sample_buttons["research"].click()
    assert window.central.currentWidget() is window.view
    assert window.document.path is None
    assert window.document.workflow.name == "Research brief"
    assert window.problems.list.item(0).text() == "No problems: the workflow is ready to run."


def test_settings_persist_geometry_and_last_file(app, qtbot, tmp_path, dialogs):
    from editor.main_window import MainWindow

    p = copy_sample(tmp_path, "hello")
    w = MainWindow()
    qtbot.addWidget(w)
    w.resize(1111, 777)
    w.show()
    w.files.open_path(str(p), ask=False)
    w.inspector_dock.hide()
    size = w.size()  # the offscreen screen may clamp the requested size
    assert w.close()
    w2 = MainWindow()
    qtbot.addWidget(w2)
    # Restored (the offscreen screen clamps it to its own width, so compare loosely).
    assert w2.size() != QSize(1400, 860) and abs(w2.size().height() - size.height()) < 10
    assert not w2.inspector_dock.isVisible() and w2.inspector_dock.isHidden()
    w2.files.start([])  # `flowdesk` with no arguments opens the last document
    assert w2.document.path == str(p.resolve())
    w2.close()


def test_autosave_and_crash_recovery(window, app, qtbot, tmp_path, dialogs):
    from editor.files import autosave_dir
    from editor.main_window import MainWindow

    window.files.new_document()
    window.document.add_node("agent", 300, 200)
    window.files.autosave.autosave_now()
    files = list(autosave_dir().glob("*.json"))
    assert len(files) == 1
    payload = json.loads(files[0].read_text())
    assert len(payload["workflow"]["nodes"]) == 2
    # Pretend the process died: rewrite the pid to one that is not running.
    payload["pid"] = 999_999_999
    crashed = autosave_dir() / "999999999-1.json"
    crashed.write_text(json.dumps(payload))
    files[0].unlink()
    dialogs.question_answer = QMessageBox.StandardButton.Yes
    w2 = MainWindow()
    qtbot.addWidget(w2)
    w2.files.start([])
    assert [n.type for n in w2.document.workflow.nodes] == ["start", "agent"]
    assert w2.isWindowModified()
    assert not crashed.exists()
    # Saving clears this window's autosave.
    w2.files.autosave.autosave_now()
    assert w2.files.autosaver.file.exists()
    dialogs.save_path = str(tmp_path / "recovered.flow.json")
    assert w2.files.save()
    assert not w2.files.autosaver.file.exists()
    w2.close()


def test_add_node_snaps_to_the_grid_when_snap_is_on(window):
    from PySide6.QtCore import QPointF

    from editor.canvas.style import GRID

    window.files.new_document()
    window.act_snap.setChecked(True)
    window.edit.add_node_at("agent", QPointF(GRID * 3 + 3, GRID * 5 - 4))
    (nid,) = window.scene.selected_node_ids()
    node = window.document.node(nid)
    assert (node.x, node.y) == (GRID * 3, GRID * 5)


def test_a_sample_opened_as_a_copy_keeps_the_test_cases_beside_it(window):
    # The evals sample keeps its cases in evals.tests.jsonl; the untitled copy has no file to
    # look beside, so the cases come along in its `tests` list (Save As keeps them).
    from engine import sample_paths

    sample = next(p for p in sample_paths() if p.name == "evals.flow.json")
    assert window.files.open_path(str(sample), ask=False)
    assert window.document.path is None
    assert len(window.document.workflow.tests) == 5
    assert window.tests_panel.table.rowCount() == 5
