"""The condition row of an ``if`` node's inspector page: operator, a value editor fit for it, a path.

A row shows one condition (``{operator, value, path?}``, DESIGN.md "Conditions, routing and
structured answers") and reports each edit as ``edited(key, value, merge)``: the page turns it
into one document edit (typing in the value or the path merges into one undo step; choosing an
operator is a step of its own). The value editor follows the operator: none for ``isEmpty``, a
number for ``gt``/``lt``, a pattern checked as it is typed for ``regex`` (its error shown under
the row, never a Python repr). What the user typed is always written, even while it is invalid:
nothing typed is lost, and the run's validation names the problem too.

Operators the engine's ``if`` data model does not accept yet are listed but disabled (asked of
the kind's spec, once), so the row never writes data the document would refuse.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QComboBox, QFrame, QGridLayout, QLabel, QLineEdit, QToolButton

from engine import spec_for

from ..resources import icon_path

__all__ = ["OPERATORS", "ConditionRow", "value_problem", "accepted_operators"]

#: (operator, label, what the value is): "text", "pattern", "number" or "" (no value).
OPERATORS: tuple[tuple[str, str, str], ...] = (
    ("contains", "contains", "text"),
    ("equal", "equals", "text"),
    ("notContains", "does not contain", "text"),
    ("startsWith", "starts with", "text"),
    ("endsWith", "ends with", "text"),
    ("regex", "matches pattern", "pattern"),
    ("isEmpty", "is empty", ""),
    ("gt", "is greater than", "number"),
    ("lt", "is less than", "number"),
)
_VALUE_KIND = {op: kind for op, _label, kind in OPERATORS}
_PLACEHOLDER = {
    "text": "value (empty never matches)",
    "pattern": "a pattern, e.g. ^order #\\d+ (any case)",
    "number": "a number, e.g. 10 or 2.5",
}


@lru_cache(maxsize=1)
def accepted_operators() -> frozenset[str]:
    """The operators the engine's ``if`` data model accepts (all of them once it knows them)."""
    spec = spec_for("if")
    if spec is None:
        return frozenset(op for op, _l, _k in OPERATORS)
    ok = set()
    for op, _label, _kind in OPERATORS:
        try:
            data = spec.data_model.model_validate({"conditions": [{"operator": op, "value": ""}]})
        except ValueError:  # pydantic's ValidationError is a ValueError
            continue
        if data.conditions and getattr(data.conditions[0], "operator", None) == op:  # type: ignore[attr-defined]
            ok.add(op)
    return frozenset(ok)


def value_problem(operator: str, value: str) -> str:
    """What is wrong with ``value`` for ``operator`` in words (empty: nothing)."""
    kind = _VALUE_KIND.get(operator, "text")
    if kind == "number":
        text = value.strip()
        if not text:
            return "Enter a number to compare with."
        try:
            float(text)
        except ValueError:
            return f"'{text}' is not a number: {operator} compares numbers (like 10 or 2.5)."
        return ""
    if kind == "pattern":
        if not value:
            return "Enter a pattern (empty never matches)."
        try:
            re.compile(value, re.IGNORECASE)
        except re.error as exc:
            where = f" at character {exc.pos + 1}" if exc.pos is not None else ""
            return f"Not a valid pattern: {exc.msg}{where}."
    return ""


class ConditionRow(QFrame):
    """One condition: number, operator, value (as fits the operator), path, move and remove."""

    edited = Signal(str, object, bool)  # key ("operator", "value", "path"), value, merge typing
    move_requested = Signal(int)  # -1 up, +1 down
    remove_requested = Signal()

    def __init__(self, index: int, watch: Any = None) -> None:
        super().__init__()
        self.setObjectName("conditionRow")
        self._filling = False
        grid = QGridLayout(self)
        grid.setContentsMargins(6, 4, 6, 4)
        grid.setHorizontalSpacing(6)
        grid.setVerticalSpacing(2)
        self.number = QLabel(f"{index + 1}.")
        self.operator = QComboBox()
        self.operator.setObjectName("conditionOperator")
        self.operator.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.operator.setMinimumContentsLength(10)
        accepted = accepted_operators()
        for op, label, _kind in OPERATORS:
            self.operator.addItem(label, op)
            if op not in accepted:
                item = self.operator.model().item(self.operator.count() - 1)  # type: ignore[attr-defined]
                item.setEnabled(False)
                item.setToolTip("This version of the engine does not know this operator yet.")
        self.operator.currentIndexChanged.connect(self._operator_chosen)
        self.value = QLineEdit()
        self.value.setObjectName("conditionValue")
        self.value.textEdited.connect(self._value_typed)
        self.path = QLineEdit()
        self.path.setObjectName("conditionPath")
        self.path.setPlaceholderText("optional: a path into JSON, e.g. .items[0].status")
        self.path.setToolTip(
            "Empty: the condition tests the previous output's text. A path such as .key[0] "
            "tests that value of the previous output read as JSON."
        )
        self.path.textEdited.connect(lambda t: self._emit("path", t.strip(), True))
        if watch is not None:
            watch(self.value)
            watch(self.path)
        self.problem = QLabel()
        self.problem.setObjectName("conditionProblem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #c0392b;")
        self.problem.hide()
        self.up, self.down, self.remove = QToolButton(), QToolButton(), QToolButton()
        for button, icon, tip in (
            (self.up, "up", "Move up"),
            (self.down, "down", "Move down"),
            (self.remove, "delete", "Remove condition (its link goes too)"),
        ):
            button.setIcon(QIcon(icon_path(icon)))
            button.setToolTip(tip)
        self.up.clicked.connect(lambda _=False: self.move_requested.emit(-1))
        self.down.clicked.connect(lambda _=False: self.move_requested.emit(1))
        self.remove.clicked.connect(lambda _=False: self.remove_requested.emit())
        # operator and buttons on the first line, the value and the path each on a line of their
        # own: side by side, the value was squeezed to a few characters in a narrow inspector
        grid.addWidget(self.number, 0, 0)
        grid.addWidget(self.operator, 0, 1)
        grid.addWidget(self.up, 0, 2)
        grid.addWidget(self.down, 0, 3)
        grid.addWidget(self.remove, 0, 4)
        grid.addWidget(self.value, 1, 1, 1, 4)
        grid.addWidget(self.path, 2, 1, 1, 4)
        grid.addWidget(self.problem, 3, 1, 1, 4)
        grid.setColumnStretch(1, 1)

    # ------------------------------------------------------------------ showing
    def load(self, cond: dict[str, Any], first: bool, last: bool) -> None:
        self._filling = True
        try:
            op = str(cond.get("operator") or "contains")
            ix = self.operator.findData(op)
            if ix < 0:  # an operator this editor does not know (a newer file): shown, kept as it is
                self.operator.addItem(op, op)
                ix = self.operator.count() - 1
            if self.operator.currentIndex() != ix:
                self.operator.setCurrentIndex(ix)
            value = "" if cond.get("value") is None else str(cond.get("value"))
            if self.value.text() != value:
                self.value.setText(value)
            path = str(cond.get("path") or "")
            if self.path.text() != path:
                self.path.setText(path)
            self.up.setEnabled(not first)
            self.down.setEnabled(not last)
            self._fit_value_editor()
        finally:
            self._filling = False

    def current_operator(self) -> str:
        return str(self.operator.currentData() or "contains")

    def _fit_value_editor(self) -> None:
        kind = _VALUE_KIND.get(self.current_operator(), "text")
        self.value.setVisible(bool(kind))
        if kind:
            self.value.setPlaceholderText(_PLACEHOLDER[kind])
            self.value.setToolTip(
                {
                    "pattern": "A Python regular expression, searched in the text, any case.",
                    "number": "The text (or the path's value) read as a number is compared with "
                    "this; a text that is not a number never matches.",
                }.get(kind, "")
            )
        self.show_problem(value_problem(self.current_operator(), self.value.text()) if kind else "")

    def show_problem(self, text: str) -> None:
        self.problem.setText(text)
        self.problem.setVisible(bool(text))
        self.value.setProperty("invalid", bool(text))
        self.value.setStyleSheet("border: 1px solid #c0392b;" if text else "")

    # ------------------------------------------------------------------ editing
    def _emit(self, key: str, value: Any, merge: bool) -> None:
        if not self._filling:
            self.edited.emit(key, value, merge)

    def _operator_chosen(self, _index: int) -> None:
        self._fit_value_editor()
        self._emit("operator", self.current_operator(), False)

    def _value_typed(self, text: str) -> None:
        self._fit_value_editor()
        self._emit("value", text, True)
