"""The Tests dock: the open workflow's test cases, run and graded (docs/evals.md).

Where the cases live decides how an edit is kept: a ``NAME.tests.jsonl`` beside the document's
file is rewritten (atomically) on each edit; otherwise the cases are the document's ``tests``
list and each edit is one undoable command (:class:`SetTestsCommand`). Running all or one
case is :func:`engine.run_eval` on the Qt event loop (qasync): each case's badge turns PASS or
FAIL as its run ends, the selected case shows its failed expectations and a word diff of
expected and actual, and the chart paints the workflow's eval history (pass rate over time).
``run_open_requested(run_id)`` asks the history to open a case's run.
"""

from __future__ import annotations

import asyncio
import html
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QUndoCommand
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine import (
    EvalCase,
    EvalCaseError,
    EvalCaseResult,
    EvalHistory,
    EvalRecord,
    StoreError,
    eval_case_from_run,
    eval_cases_file,
    eval_failure_line,
    format_cost,
    format_duration,
    read_test_cases,
    run_eval,
    workflow_test_cases,
    write_test_cases,
)

from .tests_widgets import FAIL_COLOR, PASS_COLOR, RUN_COLOR, CaseDialog, PassRateChart, word_diff_html

__all__ = ["TestsPanel", "SetTestsCommand"]


class SetTestsCommand(QUndoCommand):
    """The document's ``tests`` list replaced (plain data before and after); None removes it."""

    def __init__(self, doc: Any, before: list | None, after: list | None, text: str) -> None:
        super().__init__(text)
        self.doc, self.before, self.after = doc, before, after

    def _apply(self, value: list | None) -> None:
        self.doc.set_meta({"tests": value})
        if value is None:  # absent again, as the file had it (not "tests": null)
            (self.doc.workflow.__pydantic_extra__ or {}).pop("tests", None)

    def redo(self) -> None:
        self._apply(self.after)

    def undo(self) -> None:
        self._apply(self.before)


class TestsPanel(QWidget):
    """The Tests dock (see the module's doc)."""

    __test__ = False  # (a pytest collector would take a class named Test… for a test)
    run_open_requested = Signal(str)
    eval_finished = Signal(object)  # EvalResult
    case_finished = Signal(str, bool)  # case name, passed

    def __init__(
        self,
        document: Any,
        store: Any = None,
        *,
        run_options: Callable[[], dict[str, Any]] | None = None,
        shown_run: Callable[[], str | None] | None = None,
        edit_case: Callable[[dict[str, Any]], dict[str, Any] | None] | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.document, self.store = document, store
        self.run_options = run_options or (lambda: {})
        self.shown_run = shown_run or (lambda: None)  # the run the console shows, to add as a case
        self.edit_case = edit_case or self._edit_in_dialog
        self.results: dict[str, EvalCaseResult] = {}
        self.running: set[str] = set()
        self.task: asyncio.Future | None = None
        self.error_text = ""
        self.eval_error = ""  # why the last eval could not run, shown until the next one starts
        self._history_for: str | None = ""  # the document whose last eval the badges show
        self._history: EvalHistory | None = None  # made on first use (it may create its tables)
        self._build()
        for signal in (document.meta_changed, document.workflow_reset, document.path_changed):
            signal.connect(self.reload)
        self.reload()

    # ------------------------------------------------------------------ building
    def _button(self, text: str, slot: Callable[[], Any], tip: str) -> QToolButton:
        b = QToolButton()
        b.setText(text)
        b.setToolTip(tip)
        b.setAutoRaise(True)
        b.clicked.connect(lambda _checked=False: slot())
        self.bar.addWidget(b)
        return b

    def _build(self) -> None:
        self.bar = QHBoxLayout()
        self.bar.setContentsMargins(4, 2, 4, 2)
        self.add_button = self._button("Add", self.add_case, "Add a test case")
        self.edit_button = self._button("Edit", self.edit_selected, "Edit the selected case")
        self.dup_button = self._button("Duplicate", self.duplicate_selected, "Duplicate the selected case")
        self.delete_button = self._button("Delete", self.delete_selected, "Delete the selected case")
        self.bar.addSpacing(12)
        self.run_all_button = self._button("▶ Run All", self.run_all, "Run every case and grade it (an eval)")
        self.run_one_button = self._button("Run Selected", self.run_selected, "Run the selected case")
        self.open_button = self._button("Open Run", self.open_selected_run, "Open the selected case's last run")
        self.from_run_button = self._button(
            "Add Shown Run", self.add_shown_run, "Add the run the console shows as a case (its output expected)"
        )
        self.bar.addStretch(1)
        self.summary = QLabel()
        self.bar.addWidget(self.summary)
        self.table = QTableWidget(0, 4)
        self.table.setHorizontalHeaderLabels(["Result", "Case", "Input", "Expectations"])
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        header = self.table.horizontalHeader()
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        header.setStretchLastSection(True)
        self.table.setColumnWidth(1, 120)
        self.table.setColumnWidth(2, 140)
        self.table.setColumnWidth(3, 160)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.itemSelectionChanged.connect(self.show_details)
        self.table.doubleClicked.connect(lambda _i: self.edit_selected())
        self.details = QTextBrowser()
        self.details.setOpenLinks(False)
        self.chart = PassRateChart()
        self.source_label = QLabel()
        self.source_label.setContentsMargins(6, 2, 6, 2)
        self.source_label.setWordWrap(True)  # a long reason wraps, it does not widen the dock
        history = QWidget()
        hl = QVBoxLayout(history)
        hl.setContentsMargins(4, 0, 0, 0)
        self.history_label = QLabel("Pass rate of this workflow's evals")
        hl.addWidget(self.history_label)
        hl.addWidget(self.chart, 1)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.table)
        split.addWidget(self.details)
        split.addWidget(history)
        split.setStretchFactor(0, 5)
        split.setStretchFactor(1, 4)
        split.setStretchFactor(2, 2)
        split.setSizes([560, 330, 200])  # the table first: its Expectations column was cut to a word
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(self.bar)
        layout.addWidget(split, 1)
        layout.addWidget(self.source_label)

    # ------------------------------------------------------------------ the cases
    @property
    def cases_path(self) -> Path | None:
        """The ``.tests.jsonl`` beside the document's file, when there is one."""
        path = self.document.path
        if not path:
            return None
        beside = Path(eval_cases_file(path))
        return beside if beside.is_file() else None

    def cases(self) -> list[EvalCase]:
        """The open workflow's cases (the file's, else the document's); [] with the reason kept."""
        self.error_text = ""
        try:
            found = workflow_test_cases(self.document.workflow, "the workflow")
            if self.cases_path is not None:
                found += read_test_cases(self.cases_path)
            return found
        except EvalCaseError as err:
            self.error_text = str(err)
            return []

    def _save(self, cases: list[dict[str, Any]], what: str) -> None:
        """Keep an edited list of cases where they live: the .tests.jsonl file, or the document
        (one undoable command)."""
        in_doc = [c.to_json() for c in workflow_test_cases(self.document.workflow)] if not self.error_text else []
        path = self.cases_path
        if path is not None:
            doc_names = {c["name"] for c in in_doc}
            write_test_cases(path, [c for c in cases if c["name"] not in doc_names])
            kept = [c for c in cases if c["name"] in doc_names]
            if kept != in_doc:
                self._push(in_doc, kept, what)
            self.reload()
            return
        self._push(in_doc, cases, what)

    def _push(self, before: list, after: list, what: str) -> None:
        current = (self.document.workflow.model_extra or {}).get("tests")
        self.document.undo_stack.push(
            SetTestsCommand(self.document, current, after or (None if current is None else []), what)
        )

    def _selected_row(self) -> int:
        rows = self.table.selectionModel().selectedRows()
        return rows[0].row() if rows else -1

    def _all_json(self) -> list[dict[str, Any]]:
        return [c.to_json() for c in self.cases()]

    def _unique(self, name: str, taken: set[str]) -> str:
        if name not in taken:
            return name
        i = 2
        while f"{name} ({i})" in taken:
            i += 1
        return f"{name} ({i})"

    def add_case(self, case: dict[str, Any] | None = None, *, edit: bool = True) -> bool:
        cases = self._all_json()
        taken = {c["name"] for c in cases}
        new = dict(case or {"name": "new case", "input": "", "expect": [{"type": "contains", "value": "..."}]})
        new["name"] = self._unique(str(new.get("name") or "new case"), taken)
        if edit:
            edited = self.edit_case(new)
            if edited is None:
                return False
            new = edited
        new["name"] = self._unique(new["name"], taken)
        self._save(cases + [new], "Add test case")
        self.select_case(new["name"])
        return True

    def add_run_as_case(self, run_id: str, kind: str = "equals") -> bool:
        """A case from a stored run: its input, and its output as an ``equals`` or ``contains``
        expectation, opened for editing."""
        if self.store is None:
            return False
        try:
            case = eval_case_from_run(self.store, run_id, kind=kind)
        except (ValueError, EvalCaseError) as err:
            self.details.setPlainText(f"This run cannot become a case: {err}")
            return False
        return self.add_case(case.to_json())

    def add_shown_run(self) -> bool:
        run_id = self.shown_run()
        return self.add_run_as_case(run_id) if run_id else False

    def edit_selected(self) -> None:
        row = self._selected_row()
        cases = self._all_json()
        if not 0 <= row < len(cases):
            return
        edited = self.edit_case(dict(cases[row]))
        if edited is None:
            return
        taken = {c["name"] for i, c in enumerate(cases) if i != row}
        edited["name"] = self._unique(edited["name"], taken)
        cases[row] = edited
        self._save(cases, "Edit test case")
        self.select_case(edited["name"])

    def duplicate_selected(self) -> None:
        row = self._selected_row()
        cases = self._all_json()
        if 0 <= row < len(cases):
            copy = json.loads(json.dumps(cases[row]))
            copy["name"] = self._unique(copy["name"], {c["name"] for c in cases})
            cases.insert(row + 1, copy)
            self._save(cases, "Duplicate test case")
            self.select_case(copy["name"])

    def delete_selected(self) -> None:
        row = self._selected_row()
        cases = self._all_json()
        if 0 <= row < len(cases):
            del cases[row]
            self._save(cases, "Delete test case")

    def _edit_in_dialog(self, case: dict[str, Any]) -> dict[str, Any] | None:
        dialog = CaseDialog(case, self)
        return dialog.result_case if dialog.exec() == QDialog.DialogCode.Accepted else None

    # ------------------------------------------------------------------ showing
    def reload(self, *_args: Any) -> None:
        self.refresh_history()
        cases = self.cases()
        selected = self._selected_row()
        self.table.setRowCount(len(cases))
        for row, case in enumerate(cases):
            expects = ", ".join(
                (f"{e.node}." if e.node else "")
                + e.type
                + (f" '{e.expected_text()[:30]}'" if e.type != "judge" else "")
                for e in case.expect
            )
            values = [self._badge(case.name), case.name, (case.input or "").replace("\n", " ")[:80], expects]
            for col, value in enumerate(values):
                item = QTableWidgetItem(value)
                item.setToolTip(value if col else "")
                if col == 0:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignCenter)
                    color = {"PASS": PASS_COLOR, "FAIL": FAIL_COLOR}.get(value, RUN_COLOR)
                    item.setForeground(color)
                    bold = item.font()
                    bold.setBold(True)
                    item.setFont(bold)
                self.table.setItem(row, col, item)
        if 0 <= selected < len(cases):
            self.table.selectRow(selected)
        where = self.cases_path.name if self.cases_path is not None else "the workflow's tests list"
        counted = f"{len(cases)} case{'s' if len(cases) != 1 else ''} in {where}"
        self.source_label.setText(self.error_text or (f"{counted} · {self.eval_error}" if self.eval_error else counted))
        self.source_label.setStyleSheet(f"color: {FAIL_COLOR.name()}" if self.error_text or self.eval_error else "")
        self._refresh_summary()
        self.show_details()

    def _badge(self, name: str) -> str:
        if name in self.running:
            return "…"
        result = self.results.get(name)
        return "" if result is None else ("PASS" if result.passed else "FAIL")

    def _refresh_summary(self) -> None:
        done = [r for r in self.results.values()]
        text = f"{sum(1 for r in done if r.passed)}/{len(done)} passed" if done else ""
        if self.running:  # while an eval runs: how many cases are still to come
            text = (text + " · " if text else "") + f"{len(self.running)} running…"
        self.summary.setText(text)
        busy = bool(self.running)
        self.run_all_button.setEnabled(not busy)
        self.run_one_button.setEnabled(not busy)

    def select_case(self, name: str) -> None:
        for row in range(self.table.rowCount()):
            item = self.table.item(row, 1)
            if item is not None and item.text() == name:
                self.table.selectRow(row)
                return

    def selected_name(self) -> str | None:
        row = self._selected_row()
        item = self.table.item(row, 1) if row >= 0 else None
        return item.text() if item is not None else None

    def show_details(self) -> None:
        name = self.selected_name()
        result = self.results.get(name or "")
        if name is None:
            self.details.setHtml("<p>Select a case to see its last result.</p>" if self.table.rowCount() else "")
            return
        if result is None:
            state = "running…" if name in self.running else "not run yet. Run it to see its result."
            self.details.setHtml(f"<p><b>{html.escape(name)}</b>: {state}</p>")
            return
        # a cost that is not known (a model with no price) reads "—", not "$0"
        cost = format_cost(result.cost) if result.cost or not result.unpriced else "—"
        parts = [
            f"<p><b>{html.escape(name)}</b>: "
            f"<span style='color:{(PASS_COLOR if result.passed else FAIL_COLOR).name()}'><b>"
            f"{'PASS' if result.passed else 'FAIL'}</b></span> · {format_duration(result.duration_ms / 1000)}"
            f" · {result.tokens} tokens"
            + (f" (+{result.judge_tokens} judge)" if result.judge_tokens else "")
            + f" · {cost}"
            + (f" · {result.cache_hits} reused" if result.cache_hits else "")
            + "</p>"
        ]
        diffed = False
        for f in result.failures:
            parts.append(f"<p>✗ {html.escape(eval_failure_line(f))}</p>")
            if f.type in ("equals", "contains", "notContains", "regex") and isinstance(f.expected, str):
                diffed = True
                parts.append(
                    "<p style='font-family:monospace'>"
                    f"<b>expected</b> vs <b>actual</b>:<br>{word_diff_html(f.expected, str(f.actual))}</p>"
                )
        for j in result.judges:
            parts.append(f"<p>judge: {'PASS' if j.get('passed') else 'FAIL'} — {html.escape(str(j.get('reason')))}</p>")
        if result.output and not diffed:  # the output, unless a diff above shows it already
            parts.append(
                f"<p><b>output</b>:</p><p style='font-family:monospace'>{html.escape(result.output[:2000])}</p>"
            )
        self.details.setHtml("".join(parts))

    def refresh_history(self, force: bool = False) -> None:
        """The chart of the workflow's evals, read when the document's file changes or ``force``
        (an eval ended); for a workflow just opened, the badges of its last eval too."""
        path = str(Path(self.document.path).resolve()) if self.document.path else None
        opened = path != self._history_for
        if not (opened or force):
            return
        self._history_for = path
        records: list[EvalRecord] = []
        try:
            if self.store is not None and path is not None:
                if self._history is None:
                    self._history = EvalHistory(self.store)
                records = self._history.list(workflow_path=path)
                if opened and records and not self.running:
                    last = self._history.results(records[0].id)
                    self.results = {str(r.get("name")): EvalCaseResult.from_json(r) for r in last}
        except StoreError:
            records = []
        if opened and not records:
            self.results = {}
        if path is None:  # an untitled document: its evals are kept by the file it is saved as
            self.chart.set_history([], "Save the workflow to keep a history of its evals")
        else:
            self.chart.set_history(records)
        count = f" ({len(records)})" if records else ""
        self.history_label.setText(f"Pass rate of this workflow's evals{count}")

    # ------------------------------------------------------------------ running
    def run_all(self) -> asyncio.Future | None:
        return self._start(self.cases())

    def run_selected(self) -> asyncio.Future | None:
        name = self.selected_name()
        return self._start([c for c in self.cases() if c.name == name]) if name else None

    def open_selected_run(self) -> None:
        result = self.results.get(self.selected_name() or "")
        if result is not None and result.run_id:
            self.run_open_requested.emit(result.run_id)

    def _start(self, cases: list[EvalCase]) -> asyncio.Future | None:
        if not cases or self.running:
            return None
        self.running = {c.name for c in cases}
        self.eval_error = ""
        for c in cases:
            self.results.pop(c.name, None)
        self.reload()
        path = str(Path(self.document.path).resolve()) if self.document.path else None
        options = dict(self.run_options())
        workflow = self.document.workflow.model_copy(deep=True)

        def done(_index: int, result: EvalCaseResult) -> None:
            self.results[result.name] = result
            self.running.discard(result.name)
            self.reload()
            self.case_finished.emit(result.name, result.passed)

        async def go() -> None:
            try:
                outcome = await run_eval(
                    workflow,
                    cases,
                    path=path,
                    store=self.store,
                    record=self.store is not None,
                    on_case_done=done,
                    **options,
                )
            except Exception as err:  # a provider that cannot be built, a store that fails
                self.running.clear()
                self.eval_error = f"The eval could not run: {err}"
                self.reload()
                self.details.setPlainText(self.eval_error)
                return
            self.running.clear()
            self.refresh_history(force=True)
            self.reload()
            self.eval_finished.emit(outcome)

        self.task = asyncio.ensure_future(go())
        return self.task
