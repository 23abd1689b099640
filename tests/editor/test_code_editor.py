"""The code kind's inspector page (highlighting, line numbers, language, inputs, limits, undo,
the failing line marked), the script page, the workflow's permissions page, and code_log lines
in the run console."""

from __future__ import annotations

import json
import shutil

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from editor.panels.code_edit import CodeEdit, failed_line
from editor.panels.code_pages import CodePage, ScriptPage
from editor.run.log_model import LogModel
from editor.run.log_view import code_log_fields, summary_for
from editor.window.settings import settings
from engine import RunEvent, RunState
from tests.run.conftest import qloop  # noqa: F401  (asyncio on the Qt loop for the run)

from .conftest import SAMPLES

FIX = SAMPLES.parent / "tests" / "fixtures" / "imports"


def _open_code_sample(window, tmp_path):
    path = tmp_path / "code.flow.json"
    shutil.copy(SAMPLES / "code.flow.json", path)
    assert window.files.open_path(str(path), ask=False)
    window.inspector.show_node("totals")
    page = window.inspector.stack.currentWidget()
    assert isinstance(page, CodePage)
    return path, page


def test_code_page_highlights_numbers_lines_and_switches_language(window, tmp_path):
    _path, page = _open_code_sample(window, tmp_path)
    doc = window.document
    editor = page.editor
    assert editor.toPlainText().startswith("total = 0\nfor order in orders:")
    assert editor.blockCount() == 5 and editor.gutter.width() == editor.gutter_width() > 10
    QApplication.processEvents()
    keyword = "#ff7b72"  # FlowdeskDarkStyle's Keyword
    assert any(colour == keyword for _s, _n, colour in editor.highlighter.formats_of_line(1))  # 'for', 'in'
    strings = [(s, n) for s, n, c in editor.highlighter.formats_of_line(2) if c == "#a5e0a0"]
    assert strings  # "qty" and "price"
    assert page.language.currentData() == "python" and "pydantic-monty" in page.how.text()
    page.language.setCurrentIndex(page.language.findData("typescript"))
    assert doc.node("totals").data.language == "typescript"
    assert editor.highlighter.language == "typescript" and "Deno" in page.how.text()
    doc.undo_stack.undo()
    assert doc.node("totals").data.language == "python" and page.language.currentData() == "python"
    assert editor.highlighter.language == "python"
    # the policy section does not show the timeout a second time
    assert not window.inspector.policy.layout().isRowVisible(window.inspector.policy.timeout)


def test_typing_code_is_one_undo_step_and_limits_edit_the_node(window, tmp_path):
    _path, page = _open_code_sample(window, tmp_path)
    doc = window.document
    before = doc.node("totals").data.model_dump()
    page.editor.moveCursor(page.editor.textCursor().MoveOperation.End)
    for ch in "\n# ok":
        page.editor.insertPlainText(ch)
    assert doc.node("totals").data.code.endswith("\n# ok")
    doc.end_merge()
    page.memory.setValue(128)
    page.timeout.setValue(9000)
    doc.end_merge()
    data = doc.node("totals").data
    assert (data.memoryMb, data.timeoutMs) == (128, 9000)
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    assert doc.node("totals").data.model_dump() == before
    assert page.editor.toPlainText() == before["code"] and page.memory.value() == 64


def test_inputs_table_edits_the_inputs_map(window, tmp_path):
    _path, page = _open_code_sample(window, tmp_path)
    doc = window.document
    assert page.inputs.rows() == [
        {"key": "orders", "value": "{{orders}}"},
        {"key": "currency", "value": "{{currency}}"},
    ]
    page.inputs.add_row()  # a row with no name yet: shown, nothing saved
    assert len(page.inputs.rows()) == 3 and len(doc.node("totals").data.inputs) == 2
    page.inputs.table.item(2, 0).setText("rate")
    page.inputs.table.item(2, 1).setText("1.1")
    assert doc.node("totals").data.inputs == {"orders": "{{orders}}", "currency": "{{currency}}", "rate": "1.1"}
    page.inputs.table.setCurrentCell(0, 0)
    page.inputs.remove_current()
    assert list(doc.node("totals").data.inputs) == ["currency", "rate"]
    doc.undo_stack.undo()
    assert list(doc.node("totals").data.inputs) == ["orders", "currency", "rate"]


def test_failing_line_is_marked_from_the_run_state(window, tmp_path):
    _path, page = _open_code_sample(window, tmp_path)
    events = [
        RunEvent("system", "run_status", "running"),
        RunEvent("totals", "step_start", ""),
        RunEvent("totals", "error", "line 3: KeyError: 'qty'"),
        RunEvent("system", "run_status", "failed"),
    ]
    state = RunState.of(window.document.workflow, events)
    window.inspector.set_run_errors(state.errors)
    assert page.editor.marked_line == 3
    assert page.failure.isVisible() and page.failure.text().startswith("Line 3 failed in the last run")
    selections = page.editor.extraSelections()
    assert len(selections) == 1 and selections[0].cursor.blockNumber() == 2
    window.inspector.set_run_errors({})
    assert page.editor.marked_line is None and not page.failure.isVisible()
    assert failed_line("Code (python): line 12: NameError: x") == 12 and failed_line("timed out after 5 ms") is None


def test_code_edit_keeps_indentation_and_tab_is_spaces(qtbot):
    edit = CodeEdit("python")
    qtbot.addWidget(edit)
    edit.show()
    qtbot.keyClicks(edit, "if x:")
    qtbot.keyPress(edit, "\r")
    qtbot.keyClicks(edit, "y")
    assert edit.toPlainText() == "if x:\n    y"
    edit.set_language("javascript")
    assert edit.highlighter.language == "javascript"


def test_script_page_shows_the_script_read_only(window):
    assert window.files.open_path(str(FIX / "typeagent_list_files.recipe.json"), ask=False)
    script = next(n for n in window.document.workflow.nodes if n.type == "script")
    window.inspector.show_node(script.id)
    page = window.inspector.stack.currentWidget()
    assert isinstance(page, ScriptPage)
    assert page.editor.isReadOnly() and page.editor.toPlainText() == script.data.script
    assert page.language.text() == "PowerShell" and page.editor.highlighter.language == "powershell"


def test_permissions_page_edits_saves_and_undoes(window, tmp_path, dialogs):
    path, _page = _open_code_sample(window, tmp_path)
    doc = window.document
    window.inspector.show_node(None)
    perms = window.inspector.wf_permissions
    assert perms.switch.isChecked() and perms.lists["network"].entries() == ["api.example.com"]
    assert "only what is listed" in perms.meaning.text()
    perms.lists["network"].new.setText("*.docs.org")
    perms.lists["network"].add_typed()
    assert doc.workflow.permissions.network == ["api.example.com", "*.docs.org"]
    dialogs.folder = str(tmp_path)
    perms.lists["files"]._pick_folder = lambda: str(tmp_path / "data")
    perms.lists["files"].add_folder()
    assert doc.workflow.permissions.files == [str(tmp_path / "data")]
    assert window.files.save()
    saved = json.loads(path.read_text())
    assert saved["permissions"] == {"network": ["api.example.com", "*.docs.org"], "files": [str(tmp_path / "data")]}
    # off: the key leaves the file (the kinds' defaults); on with nothing listed: present and empty
    perms.switch.setChecked(False)
    assert doc.workflow.permissions is None and "sets no permissions" in perms.meaning.text()
    assert window.files.save() and "permissions" not in json.loads(path.read_text())
    perms.switch.setChecked(True)
    assert window.files.save() and json.loads(path.read_text())["permissions"] == {}
    assert perms.lists["network"].entries() == []
    doc.undo_stack.undo()
    doc.undo_stack.undo()
    assert doc.workflow.permissions.files == [str(tmp_path / "data")] and perms.switch.isChecked()
    assert perms.lists["files"].entries() == [str(tmp_path / "data")]
    perms.lists["network"].list.setCurrentRow(0)
    perms.lists["network"].remove_current()
    assert doc.workflow.permissions.network == ["*.docs.org"]


def test_console_shows_code_log_lines_stderr_apart_and_api_calls(qapp):
    model = LogModel()
    model.add_events(
        [
            RunEvent("c", "code_log", "", extra={"stream": "stdout", "text": "3 orders read\n"}),
            RunEvent("c", "code_log", "", extra={"stream": "stderr", "text": "warning: no rate"}),
            RunEvent(
                "s", "api_call_start", "", extra={"method": "queryLLM", "args": ["Summarise", {"parseJson": True}]}
            ),
            RunEvent("s", "api_call_end", "", extra={"method": "queryLLM", "result": "A summary"}),
            RunEvent("c", "permission_denied", "permission_denied: network access to 'evil.com' is not granted"),
        ]
    )
    out, err, start, end, denied = model.entries
    assert code_log_fields(out) == ("stdout", "3 orders read\n") and summary_for(out) == "3 orders read"
    assert code_log_fields(err)[0] == "stderr" and summary_for(err) == "warning: no rate"
    assert summary_for(start) == '→ queryLLM("Summarise", {"parseJson": true})'
    assert summary_for(end) == "← queryLLM: A summary"
    assert denied.label == "Denied" and "evil.com" in summary_for(denied)
    assert out.label == "Print"


@pytest.mark.usefixtures("qloop")
def test_a_failed_run_marks_the_code_nodes_line_from_the_console_run_state(window, qtbot, tmp_path):
    """F5 on a flow whose code fails: the code page reads the node's error from the console's run
    state (`line 2: NameError…`), marks line 2 and says the line once."""
    pytest.importorskip("pydantic_monty", reason="the code extra (pydantic-monty) is not installed")
    settings().setValue("run/provider", "echo")
    path = tmp_path / "broken.flow.json"
    path.write_text(
        json.dumps(
            {
                "nodes": [
                    {"id": "start", "type": "start", "data": {}},
                    {"id": "c", "type": "code", "data": {"language": "python", "code": "x = 1\ny = missing + x\ny"}},
                ],
                "connections": [{"source": "start", "target": "c", "sourceHandle": "output", "targetHandle": "input"}],
            }
        )
    )
    assert window.files.open_path(str(path), ask=False)
    window.scene.select_nodes(["c"])
    with qtbot.waitSignal(window.run_console.run_finished, timeout=20000):
        window.act_run.trigger()
    qtbot.waitUntil(lambda: window.inspector.run_error("c") is not None, timeout=5000)
    window.inspector_tabs.setCurrentWidget(window.inspector)
    window.inspector.show_node("c")
    page = window.inspector.stack.currentWidget()
    assert isinstance(page, CodePage)
    error = window.inspector.run_error("c")
    assert error.startswith("line 2: NameError")
    assert (
        page.failure.isVisible() and page.failure.text() == f"Line 2 failed in the last run: {error[len('line 2: ') :]}"
    )
    assert page.editor.marked_line == 2
    settings().setValue("run/provider", "")


def test_ctrl_z_in_the_code_editor_undoes_the_document(window, qtbot, tmp_path):
    _path, page = _open_code_sample(window, tmp_path)
    doc = window.document
    before = doc.workflow.model_dump()
    page.editor.setFocus()
    page.editor.moveCursor(page.editor.textCursor().MoveOperation.End)
    qtbot.keyClicks(page.editor, " # total")
    assert doc.node("totals").data.code.endswith(" # total")
    qtbot.keyClick(page.editor, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert doc.workflow.model_dump() == before and not page.editor.toPlainText().endswith("# total")
    qtbot.keyClick(page.editor, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
    assert page.editor.toPlainText().endswith(" # total")


def test_code_opens_in_a_larger_window_and_apply_is_one_undo_step(window, tmp_path):
    _path, page = _open_code_sample(window, tmp_path)
    doc = window.document
    before = doc.node("totals").data.code
    larger = page.open_larger()
    assert larger.isVisible() and larger.editor.toPlainText() == before
    assert larger.width() > page.editor.width() and larger.editor.highlighter.language == "python"
    larger.editor.setPlainText(before + "\n# checked by hand")
    larger.reject()  # Cancel: the node stays as it was
    assert doc.node("totals").data.code == before
    larger = page.open_larger()
    larger.editor.setPlainText(before + "\n# checked by hand")
    larger.buttons.button(larger.buttons.StandardButton.Apply).click()
    assert not larger.isVisible()
    assert doc.node("totals").data.code.endswith("# checked by hand")
    assert page.editor.toPlainText().endswith("# checked by hand")
    doc.undo_stack.undo()  # one step
    assert doc.node("totals").data.code == before and page.editor.toPlainText() == before


def test_a_script_opens_in_a_larger_window_read_only(window):
    assert window.files.open_path(str(FIX / "typeagent_list_files.recipe.json"), ask=False)
    script = next(n for n in window.document.workflow.nodes if n.type == "script")
    window.inspector.show_node(script.id)
    page = window.inspector.stack.currentWidget()
    larger = page.open_larger()
    assert larger.editor.isReadOnly() and larger.editor.toPlainText() == script.data.script
    assert larger.editor.highlighter.language == "powershell"
    larger.reject()
    assert window.document.node(script.id).data.script == script.data.script


def test_variables_here_says_the_code_runs_as_written(window, tmp_path):
    """Templates work in a code node's inputs, not in its source: the hint under "Variables
    here" says so on a code page, and says both forms work on other pages."""
    from editor.panels.variables import AvailableNames

    _path, _page = _open_code_sample(window, tmp_path)
    names = window.inspector.findChild(AvailableNames)
    assert "other than the code, which runs as written" in names.forms.text()
    other = next(n.id for n in window.document.workflow.nodes if n.type != "code")
    window.inspector.show_node(other)
    assert names.forms.text() == AvailableNames.FORMS
