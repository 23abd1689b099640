"""The run console's form for a run's arguments: one field per variable the Start node declares.

Fields are pre-filled with the variable's default (or the value last used for this document,
kept in the GUI settings under the document's path); a required variable's label carries a
``*``. A variable with ``enum`` is a drop-down of its values. As the user types, each value is
checked as the engine will check it (its type, then its rules: ``pattern``, ``enum``,
``min``/``max``, ``pathMustExist``): a field breaking one is marked and says why in its tooltip,
and :attr:`RunArguments.validity_changed` tells the console whether the run may start. The
engine checks again when the run starts (a value given elsewhere is refused the same way).
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox, QGridLayout, QLabel, QLineEdit, QToolButton, QWidget

from engine import Variable, coerce_variable, rule_problem

from ..window.settings import settings

__all__ = ["RunArguments", "declared_variables", "remembered_arguments", "remember_arguments"]

_COLUMNS = 3  # label + field pairs per row: the console is a short dock
_SETTINGS_GROUP = "runArguments"


def declared_variables(workflow: Any) -> list[dict[str, Any]]:
    """The Start node's ``variables`` as plain dicts (entries without a name left out)."""
    start = workflow.start_node() if workflow is not None else None
    raw = getattr(start.data, "variables", None) if start is not None else None
    out = []
    for v in raw or []:
        d = v.model_dump() if hasattr(v, "model_dump") else dict(v) if isinstance(v, dict) else {}
        if str(d.get("name") or "").strip():
            out.append(d)
    return out


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def _checked(value: Any) -> bool:
    """Whether a boolean variable's value (a default, a remembered or a past run's) ticks its box."""
    return _text(value).strip().lower() in ("true", "1", "yes", "on")


def _field_text(field: Any) -> str:
    return field.currentText() if isinstance(field, QComboBox) else field.text()


def _settings() -> Any:
    return settings()


def remembered_arguments(path: str | None) -> dict[str, str]:
    """The values last used to run the document at ``path`` ({} for an unsaved document)."""
    if not path:
        return {}
    raw = _settings().value(f"{_SETTINGS_GROUP}/{_key(path)}", "")
    try:
        data = json.loads(raw) if isinstance(raw, str) and raw else {}
    except ValueError:
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def remember_arguments(path: str | None, values: dict[str, str]) -> None:
    if not path:
        return
    s = _settings()
    s.setValue(f"{_SETTINGS_GROUP}/{_key(path)}", json.dumps(values, ensure_ascii=False))
    s.sync()


def _key(path: str) -> str:
    # QSettings keys treat "/" and "\" as groups: the path is kept whole as one key.
    return path.replace("\\", "|").replace("/", "|")


_INVALID_STYLE = "border: 1px solid #d1242f; border-radius: 3px"


def value_problem(declared: dict[str, Any], text: str) -> str | None:
    """Why the text typed for ``declared`` would refuse the run (its type, a required value,
    a rule), or None when it is fine. An empty field means the default: that is checked."""
    try:
        var = Variable.model_validate(declared)
    except ValueError:
        return None
    raw: Any = text if text != "" else var.value
    try:
        value = coerce_variable(raw, var.type)
    except ValueError as err:
        return f"{var.name} ({var.type}): {err}"
    if value is None or value == "":
        return f"{var.name} is required" if var.required else None
    broken = rule_problem(var, value)
    return broken[1] if broken is not None else None


class RunArguments(QWidget):
    """Label and field per declared variable; hidden when the workflow declares none."""

    #: True when every field holds an acceptable value (the console enables Run on it)
    validity_changed = Signal(bool)
    #: a field was checked again (:attr:`problems` may say something else now)
    problems_changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("runArguments")
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setHorizontalSpacing(6)
        self.grid.setVerticalSpacing(4)
        self.fields: dict[str, QLineEdit | QCheckBox | QComboBox] = {}
        self.problems: dict[str, str] = {}  # variable -> why its value would refuse the run
        self._valid = True
        self.labels: dict[str, QLabel] = {}
        self._declared: list[dict[str, Any]] = []
        self._signature: Any = None
        self.reset_button = QToolButton()
        self.reset_button.setText("Defaults")
        self.reset_button.setToolTip("Put every field back to the variable's default value")
        self.reset_button.clicked.connect(self.reset_to_defaults)
        self.setVisible(False)

    def set_variables(self, declared: list[dict[str, Any]], remembered: dict[str, str] | None = None) -> None:
        """Build the fields for ``declared`` (rebuilt only when the declarations change; typed
        values are kept for the variables that stay)."""
        signature = [
            (
                v.get("name"),
                v.get("type"),
                bool(v.get("required")),
                _text(v.get("value")),
                v.get("description"),
                _text({k: v.get(k) for k in ("pattern", "enum", "min", "max", "pathMustExist")}),
            )
            for v in declared
        ]
        if signature == self._signature:
            return
        typed = self.values(include_empty=True) if self._signature is not None else {}
        self._signature = signature
        self._declared = [dict(v) for v in declared]
        while self.grid.count():
            item = self.grid.takeAt(0)
            w = item.widget()
            if w is not None and w is not self.reset_button:
                w.deleteLater()
        self.fields.clear()
        self.labels.clear()
        remembered = remembered or {}
        for i, v in enumerate(self._declared):
            name = str(v["name"]).strip()
            kind = v.get("type") or "string"
            required = bool(v.get("required"))
            label = QLabel(f"{name}{' *' if required else ''}")
            label.setObjectName(f"arg-label-{name}")
            tip = (v.get("description") or "") + (f"\n({kind}{', required' if required else ''})")
            label.setToolTip(tip.strip())
            if required:
                label.setStyleSheet("font-weight: bold")
            start = typed.get(name, remembered.get(name, _text(v.get("value"))))
            field: QLineEdit | QCheckBox | QComboBox
            if kind == "boolean":
                field = QCheckBox()
                field.setChecked(_checked(start))
            elif isinstance(v.get("enum"), list) and v["enum"]:
                field = QComboBox()  # enum: a drop-down of the allowed values ("" = the default)
                if not required or v.get("value") not in (None, ""):
                    field.addItem("")
                field.addItems([_text(e) for e in v["enum"]])
                at = field.findText(start)
                field.setCurrentIndex(max(0, at))
                field.currentTextChanged.connect(lambda _t, n=name: self._check(n))
            else:
                field = QLineEdit(start)
                field.setCursorPosition(0)  # a long default shows its start
                field.setPlaceholderText(("required " if required else "") + kind)
                field.setClearButtonEnabled(True)
                field.textChanged.connect(lambda _t, n=name: self._check(n))
            field.setObjectName(f"arg-{name}")
            field.setToolTip(tip.strip())
            label.setBuddy(field)
            row, col = divmod(i, _COLUMNS)
            self.grid.addWidget(label, row, col * 2, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.grid.addWidget(field, row, col * 2 + 1)
            self.fields[name] = field
            self.labels[name] = label
        if self._declared:
            self.grid.addWidget(self.reset_button, 0, _COLUMNS * 2)
            for c in range(_COLUMNS):
                self.grid.setColumnStretch(c * 2 + 1, 1)
        self.setVisible(bool(self._declared))
        self.problems.clear()
        for name in self.fields:
            self._check(name, announce=False)
        self._announce()

    def _check(self, name: str, announce: bool = True) -> None:
        """Check one field as the engine will (marked, with the reason in its tooltip)."""
        field = self.fields.get(name)
        declared = next((v for v in self._declared if str(v["name"]).strip() == name), None)
        if field is None or declared is None or isinstance(field, QCheckBox):
            return
        problem = value_problem(declared, _field_text(field))
        tip = (declared.get("description") or "").strip()
        if problem:
            self.problems[name] = problem
            field.setStyleSheet(_INVALID_STYLE)
            field.setToolTip(problem + (f"\n\n{tip}" if tip else ""))
        else:
            self.problems.pop(name, None)
            field.setStyleSheet("")
            field.setToolTip(tip)
        if announce:
            self._announce()

    def _announce(self) -> None:
        self.problems_changed.emit()
        valid = not self.problems
        if valid != self._valid:
            self._valid = valid
            self.validity_changed.emit(valid)

    @property
    def valid(self) -> bool:
        return not self.problems

    def reset_to_defaults(self) -> None:
        for v in self._declared:
            field = self.fields.get(str(v["name"]).strip())
            if isinstance(field, QCheckBox):
                field.setChecked(_checked(v.get("value")))
            elif isinstance(field, QComboBox):
                field.setCurrentIndex(max(0, field.findText(_text(v.get("value")))))
            elif field is not None:
                field.setText(_text(v.get("value")))

    def set_values(self, values: dict[str, Any]) -> None:
        """Fill the fields of the variables named in ``values`` (a past run's arguments); the
        others keep what they show."""
        for name, value in values.items():
            field = self.fields.get(name)
            if isinstance(field, QCheckBox):
                field.setChecked(_checked(value))
            elif isinstance(field, QComboBox):
                field.setCurrentIndex(max(0, field.findText(_text(value))))
            elif field is not None:
                field.setText(_text(value))
                field.setCursorPosition(0)

    def required_names(self) -> list[str]:
        return [str(v["name"]).strip() for v in self._declared if v.get("required")]

    def values(self, include_empty: bool = False) -> dict[str, str]:
        """Name -> text typed (an empty field means "not given": the variable keeps its default)."""
        out: dict[str, str] = {}
        for name, field in self.fields.items():
            text = ("true" if field.isChecked() else "false") if isinstance(field, QCheckBox) else _field_text(field)
            if include_empty or text != "":
                out[name] = text
        return out
