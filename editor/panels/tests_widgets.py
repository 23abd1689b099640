"""The Tests dock's widgets: the case editor, the pass-rate chart and the word diff (the dock
itself is :mod:`editor.panels.tests_panel`)."""

from __future__ import annotations

import difflib
import html
import json
from datetime import datetime
from typing import Any

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from engine import EvalCaseError, EvalRecord, parse_eval_case

__all__ = ["PassRateChart", "CaseDialog", "word_diff_html", "PASS_COLOR", "FAIL_COLOR", "RUN_COLOR"]

PASS_COLOR, FAIL_COLOR, RUN_COLOR = QColor("#2e7d32"), QColor("#c62828"), QColor("#8d6e00")


def word_diff_html(expected: str, actual: str) -> str:
    """Expected and actual, word by word: removed words struck in red, added ones in green."""
    a, b = expected.split(" "), actual.split(" ")
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(html.escape(" ".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(
                f'<span style="background:#ffd7d7;color:#5c0000;text-decoration:line-through">{html.escape(" ".join(a[i1:i2]))}</span>'
            )
        if j2 > j1:
            out.append(f'<span style="background:#d4f7d4;color:#003300">{html.escape(" ".join(b[j1:j2]))}</span>')
    return " ".join(out)


class PassRateChart(QWidget):
    """The pass rate of a workflow's evals over time, oldest left: a line with a dot an eval, the
    first and last eval's dates beneath it, and each dot's date and count in its tooltip."""

    _MARGINS = (36.0, 8.0, 14.0, 18.0)  # left, top, right, bottom: room for labels and end dots

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.points: list[float] = []
        self.records: list[EvalRecord] = []  # oldest first, as the points
        self.empty_text = "No evals yet: Run All records one"
        self.setMinimumHeight(80)
        self.setMinimumWidth(160)
        self.setMouseTracking(True)  # the tooltip follows the dot under the pointer
        self._pen = QPen(QColor("#1565c0"), 2)
        self._grid = QPen(QColor(128, 128, 128, 70), 1)
        self._font = QFont(self.font())
        self._font.setPointSizeF(max(7.0, self._font.pointSizeF() * 0.85))

    def set_history(self, records: list[EvalRecord], empty_text: str = "No evals yet: Run All records one") -> None:
        self.records = list(reversed(records))  # the store lists newest first
        self.points = [r.pass_rate for r in self.records]
        self.empty_text = empty_text
        self.update()

    def _area(self) -> QRectF:
        left, top, right, bottom = self._MARGINS
        return QRectF(left, top, max(10.0, self.width() - left - right), max(10.0, self.height() - top - bottom))

    def _dots(self, area: QRectF) -> list[QPointF]:
        n = len(self.points)
        step = area.width() / (n - 1) if n > 1 else 0.0
        return [
            QPointF(area.left() + (i * step if n > 1 else area.width() / 2), area.bottom() - v * area.height())
            for i, v in enumerate(self.points)
        ]

    @staticmethod
    def when(record: EvalRecord, *, short: bool = False) -> str:
        """When an eval started, as the chart labels it (local time)."""
        moment = datetime.fromtimestamp(record.started_at)
        return moment.strftime("%d %b %H:%M" if short else "%Y-%m-%d %H:%M")

    def tip_at(self, pos: QPointF) -> str:
        """The tooltip of the dot nearest ``pos`` (horizontally), "" when there is none."""
        dots = self._dots(self._area())
        if not dots:
            return ""
        i = min(range(len(dots)), key=lambda k: abs(dots[k].x() - pos.x()))
        r = self.records[i]
        return f"{self.when(r)}: {r.passed}/{r.cases} passed ({r.pass_rate * 100:.0f}%)"

    def mouseMoveEvent(self, event: Any) -> None:
        tip = self.tip_at(event.position())
        if tip:
            QToolTip.showText(event.globalPosition().toPoint(), tip, self)
        else:
            QToolTip.hideText()

    def paintEvent(self, _event: Any) -> None:
        p = QPainter(self)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setFont(self._font)
        left, _top, _right, bottom = self._MARGINS
        area = self._area()
        text = self.palette().text().color()
        for frac, label in ((0.0, "0%"), (0.5, "50%"), (1.0, "100%")):
            y = area.bottom() - frac * area.height()
            p.setPen(self._grid)
            p.drawLine(QPointF(area.left(), y), QPointF(area.right(), y))
            p.setPen(text)
            p.drawText(
                QRectF(0, y - 8, left - 4, 16), Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter, label
            )
        if not self.points:
            p.drawText(area, Qt.AlignmentFlag.AlignCenter | Qt.TextFlag.TextWordWrap, self.empty_text)
            return
        pts = self._dots(area)
        path = QPainterPath(pts[0])
        for pt in pts[1:]:
            path.lineTo(pt)
        p.setPen(self._pen)
        p.drawPath(path)
        for pt, v in zip(pts, self.points):
            p.setBrush(PASS_COLOR if v >= 1.0 else FAIL_COLOR)
            p.setPen(Qt.PenStyle.NoPen)
            p.drawEllipse(pt, 3.5, 3.5)
        p.setPen(text)
        n = len(self.points)
        labels = QRectF(area.left(), area.bottom() + 2, area.width(), bottom - 2)
        first, last = self.records[0], self.records[-1]
        same_day = datetime.fromtimestamp(first.started_at).date() == datetime.fromtimestamp(last.started_at).date()
        last_when = datetime.fromtimestamp(last.started_at).strftime("%H:%M") if same_day and n > 1 else None
        right = f"{last_when or self.when(last, short=True)}: {self.points[-1] * 100:.0f}%"
        left_text = self.when(first, short=True) if n > 1 else ""
        metrics = p.fontMetrics()
        if left_text and metrics.horizontalAdvance(left_text + right) + 12 <= area.width():
            p.drawText(labels, Qt.AlignmentFlag.AlignLeft, left_text)  # when the line begins
        p.drawText(labels, Qt.AlignmentFlag.AlignRight, right)


class CaseDialog(QDialog):
    """Edit one case: name, input, variables (JSON) and expectations (JSON list)."""

    def __init__(self, case: dict[str, Any], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Test Case")
        self.name = QLineEdit(str(case.get("name", "")))
        self.input = QPlainTextEdit(case.get("input") or "")
        self.vars = QPlainTextEdit(json.dumps(case.get("vars") or {}, ensure_ascii=False, indent=1))
        self.expect = QPlainTextEdit(json.dumps(case.get("expect") or [], ensure_ascii=False, indent=1))
        for edit, lines in ((self.input, 3), (self.vars, 3), (self.expect, 8)):
            edit.setFixedHeight(edit.fontMetrics().lineSpacing() * lines + 12)
        self.error = QLabel()
        self.error.setStyleSheet("color: #c62828")
        self.error.setWordWrap(True)
        form = QFormLayout()
        form.addRow("Name", self.name)
        form.addRow("Input", self.input)
        form.addRow("Variables", self.vars)
        form.addRow("Expectations", self.expect)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self.resize(520, 420)
        self.result_case: dict[str, Any] | None = None

    def case_json(self) -> dict[str, Any]:
        """The case as edited (EvalCaseError naming what is wrong)."""
        try:
            variables = json.loads(self.vars.toPlainText() or "{}")
            expect = json.loads(self.expect.toPlainText() or "[]")
        except ValueError as err:
            raise EvalCaseError(f"not valid JSON: {err}") from None
        obj = {"name": self.name.text(), "input": self.input.toPlainText() or None, "vars": variables, "expect": expect}
        return parse_eval_case(obj, "this case").to_json()

    def _accept(self) -> None:
        try:
            self.result_case = self.case_json()
        except EvalCaseError as err:
            self.error.setText(str(err))
            return
        self.accept()
