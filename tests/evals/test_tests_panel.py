"""The Tests dock (pytest-qt): a case added from a stored run (undoable), Run All with live
badges, a failing case's expected/actual diff, the eval history chart, a .tests.jsonl kept."""

from __future__ import annotations

import asyncio
import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest
from PySide6.QtCore import QPointF

from editor.editing import WorkflowDocument
from editor.panels.tests_panel import TestsPanel
from editor.panels.tests_widgets import CaseDialog, PassRateChart, word_diff_html
from engine import EvalRecord, Run, RunRecorder, RunStore, load_workflow, make_resolver
from tests.run.conftest import qloop  # noqa: F401  (asyncio on the Qt loop)

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture
def flow(tmp_path) -> Path:
    path = tmp_path / "support.flow.json"
    shutil.copy(SAMPLES / "evals.flow.json", path)
    return path


@pytest.fixture
def store(tmp_path) -> RunStore:
    return RunStore(tmp_path / "runs.db")


@pytest.fixture
def recorded_run(flow, store) -> str:
    """A run of the flow with the echo provider, recorded (before the Qt loop takes asyncio over)."""
    run = Run(load_workflow(flow), make_resolver("echo"), initial_input="Where is my parcel?", store=store)
    rec = RunRecorder(store, run, workflow_path=str(flow))
    asyncio.run(run.start())
    rec.settled()
    rec.close()
    return run.run_id


def make_panel(qtbot, flow: Path, store: RunStore) -> tuple[WorkflowDocument, TestsPanel]:
    doc = WorkflowDocument()
    doc.open(str(flow))
    panel = TestsPanel(doc, store, run_options=lambda: {"provider": "echo"}, edit_case=lambda case: case)
    qtbot.addWidget(panel)
    panel.resize(900, 400)
    panel.show()
    return doc, panel


def test_a_run_becomes_a_case_as_one_undoable_edit(qtbot, flow, store, recorded_run) -> None:
    doc, panel = make_panel(qtbot, flow, store)
    assert panel.table.rowCount() == 0
    assert panel.add_run_as_case(recorded_run)
    tests = doc.workflow.model_extra["tests"]
    assert len(tests) == 1
    case = tests[0]
    assert case["input"] == "Where is my parcel?"
    assert case["expect"] == [
        {"type": "equals", "value": "Polish this reply: Draft a friendly reply to: Where is my parcel?"}
    ]
    assert panel.table.rowCount() == 1 and panel.table.item(0, 1).text() == case["name"]
    doc.undo_stack.undo()
    assert "tests" not in (doc.workflow.model_extra or {}) and panel.table.rowCount() == 0
    assert "tests" not in json.loads(doc.to_json())
    doc.undo_stack.redo()
    assert doc.workflow.model_extra["tests"] == [case] and panel.table.rowCount() == 1
    # the run the console shows, added the same way (its name made unique)
    panel.shown_run = lambda: recorded_run
    assert panel.add_shown_run()
    assert [c["name"] for c in doc.workflow.model_extra["tests"]] == [case["name"], case["name"] + " (2)"]


def test_run_all_shows_badges_the_failing_diff_and_the_history(qtbot, flow, store, recorded_run, qloop) -> None:
    doc, panel = make_panel(qtbot, flow, store)
    panel.add_run_as_case(recorded_run)
    panel.add_case(
        {"name": "sorry", "input": "It broke.", "expect": [{"type": "equals", "value": "We are sorry it broke."}]}
    )
    assert panel.table.rowCount() == 2
    finished = []
    panel.case_finished.connect(lambda name, ok: finished.append((name, ok)))
    with qtbot.waitSignal(panel.eval_finished, timeout=20000) as blocker:
        panel.run_all()
        assert {panel.table.item(r, 0).text() for r in range(2)} == {"…"}  # running
    result = blocker.args[0]
    assert sorted(finished) == [("Where is my parcel?", True), ("sorry", False)]
    assert [panel.table.item(r, 0).text() for r in range(2)] == ["PASS", "FAIL"]
    assert panel.summary.text() == "1/2 passed"
    panel.select_case("sorry")
    html = panel.details.toHtml()
    assert "equals" in html and "We are sorry it broke." in html
    assert "line-through" in html  # the expected words that did not come
    assert "Polish this reply" in panel.details.toPlainText()
    assert panel.chart.points == [0.5]
    assert result.pass_rate == 0.5
    # open the case's run in the history
    opened = []
    panel.run_open_requested.connect(opened.append)
    panel.open_selected_run()
    assert opened == [result.cases[1].run_id]
    assert store.get_run(opened[0]) is not None
    # saved and reopened later: the badges of the last eval come back from the eval history
    doc.save()
    _doc2, again = make_panel(qtbot, flow, store)
    assert [again.table.item(r, 0).text() for r in range(2)] == ["PASS", "FAIL"]
    assert again.chart.points == [0.5]


def test_cases_in_a_tests_jsonl_are_saved_beside_the_flow(qtbot, flow, store) -> None:
    cases = flow.with_name("support.tests.jsonl")
    cases.write_text(json.dumps({"name": "one", "input": "hi", "expect": [{"type": "contains", "value": "hi"}]}) + "\n")
    doc, panel = make_panel(qtbot, flow, store)
    assert panel.table.rowCount() == 1
    panel.select_case("one")
    panel.duplicate_selected()
    lines = [json.loads(line) for line in cases.read_text().splitlines()]
    assert [c["name"] for c in lines] == ["one", "one (2)"]
    panel.select_case("one")
    panel.delete_selected()
    assert [json.loads(line)["name"] for line in cases.read_text().splitlines()] == ["one (2)"]
    assert "tests" not in (doc.workflow.model_extra or {})  # the document is left alone


def test_word_diff_marks_removed_and_added_words() -> None:
    out = word_diff_html("we are sorry", "we are glad")
    assert "line-through" in out and "sorry" in out and "glad" in out


def test_the_case_dialog_refuses_a_bad_expectation_and_says_why(qtbot) -> None:
    dialog = CaseDialog({"name": "a", "input": "hi", "expect": [{"type": "contains", "value": "hi"}]})
    qtbot.addWidget(dialog)
    dialog.expect.setPlainText('[{"type": "startsWith", "value": "x"}]')
    dialog._accept()
    assert dialog.result_case is None and "not an expectation type" in dialog.error.text()
    dialog.expect.setPlainText("[{oops")
    dialog._accept()
    assert "not valid JSON" in dialog.error.text()
    dialog.expect.setPlainText('[{"type": "maxTokens", "value": 50}]')
    dialog.vars.setPlainText('{"tone": "calm"}')
    dialog._accept()
    assert dialog.result_case == {
        "name": "a",
        "input": "hi",
        "vars": {"tone": "calm"},
        "expect": [{"type": "maxTokens", "value": 50}],
    }


def test_the_panel_says_what_is_running_and_shows_a_failing_cases_output(qtbot, flow, store, qloop) -> None:
    doc, panel = make_panel(qtbot, flow, store)
    panel.add_case({"name": "quick", "input": "hi", "expect": [{"type": "maxLatencyMs", "value": 0}]})
    panel.add_case({"name": "fine", "input": "ok", "expect": [{"type": "contains", "value": "ok"}]})
    with qtbot.waitSignal(panel.eval_finished, timeout=20000):
        panel.select_case("fine")
        panel.run_all()
        assert panel.summary.text() == "2 running…"
        assert panel.details.toPlainText() == "fine: running…"
    assert panel.summary.text() == "1/2 passed"
    panel.select_case("quick")
    text = panel.details.toPlainText()
    assert "maxLatencyMs 0: got" in text
    assert "output:" in text and "Polish this reply: Draft a friendly reply to: hi" in text  # no diff shows it
    assert "tokens · $0" in text  # echo costs nothing, and says so
    assert panel.history_label.text() == "Pass rate of this workflow's evals (1)"


def test_the_chart_names_when_each_eval_ran(qtbot) -> None:
    chart = PassRateChart()
    qtbot.addWidget(chart)
    chart.resize(300, 120)
    chart.show()
    t0 = datetime(2026, 3, 1, 9, 30).timestamp()
    records = [  # newest first, as the history lists them
        EvalRecord("b", "/f.flow.json", "f", t0 + 86400, t0 + 86401, 5, 4),
        EvalRecord("a", "/f.flow.json", "f", t0, t0 + 1, 5, 5),
    ]
    chart.set_history(records)
    assert chart.points == [1.0, 0.8]
    area = chart._area()
    assert chart.tip_at(QPointF(area.left(), 10)) == "2026-03-01 09:30: 5/5 passed (100%)"
    assert chart.tip_at(QPointF(area.right(), 10)) == "2026-03-02 09:30: 4/5 passed (80%)"
    chart.grab()  # paints the labels without error


def test_editing_a_case_is_one_undoable_step_and_keeps_names_unique(qtbot, flow, store) -> None:
    doc, panel = make_panel(qtbot, flow, store)
    panel.add_case({"name": "a", "input": "hi", "expect": [{"type": "contains", "value": "hi"}]})
    panel.add_case({"name": "b", "input": "yo", "expect": [{"type": "contains", "value": "yo"}]})
    panel.edit_case = lambda case: dict(case, name="a", expect=[{"type": "regex", "value": r"y\w"}])
    panel.select_case("b")
    panel.edit_selected()
    tests = doc.workflow.model_extra["tests"]
    assert [c["name"] for c in tests] == ["a", "a (2)"]  # not two cases of one name
    assert tests[1]["expect"] == [{"type": "regex", "value": r"y\w"}]
    assert panel.table.item(1, 3).text() == r"regex 'y\w'"  # as written, not a Python repr
    doc.undo_stack.undo()
    assert [c["name"] for c in doc.workflow.model_extra["tests"]] == ["a", "b"]


def test_an_eval_that_cannot_run_keeps_saying_why(qtbot, flow, store, qloop) -> None:
    doc, panel = make_panel(qtbot, flow, store)
    panel.run_options = lambda: {"provider": "no-such-provider"}
    panel.add_case({"name": "a", "input": "hi", "expect": [{"type": "contains", "value": "hi"}]})
    task = panel.run_all()
    qtbot.waitUntil(task.done, timeout=10000)
    assert "The eval could not run" in panel.details.toPlainText()
    assert "no-such-provider" in panel.details.toPlainText()
    panel.select_case("a")  # the details now show the case; the reason stays beneath the table
    assert "The eval could not run" in panel.source_label.text() and not panel.running
    assert panel.run_all_button.isEnabled()
