"""The run console's form for a run's arguments: one field per variable the Start node declares.

Fields are pre-filled with the variable's default (or the value last used for this document,
kept in the GUI settings under the document's path); a required variable's label carries a
``*``. The form checks nothing itself: the values go to ``Run(..., variables=...)`` as typed
and the engine coerces them to the declared types or refuses the run with a message naming
the variable, which the console shows.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QGridLayout, QLabel, QLineEdit, QToolButton, QWidget

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


class RunArguments(QWidget):
    """Label and field per declared variable; hidden when the workflow declares none."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("runArguments")
        self.grid = QGridLayout(self)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setHorizontalSpacing(6)
        self.grid.setVerticalSpacing(4)
        self.fields: dict[str, QLineEdit | QCheckBox] = {}
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
            (v.get("name"), v.get("type"), bool(v.get("required")), _text(v.get("value")), v.get("description"))
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
            if kind == "boolean":
                field: QLineEdit | QCheckBox = QCheckBox()
                field.setChecked(_checked(start))
            else:
                field = QLineEdit(start)
                field.setCursorPosition(0)  # a long default shows its start
                field.setPlaceholderText(("required " if required else "") + kind)
                field.setClearButtonEnabled(True)
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

    def reset_to_defaults(self) -> None:
        for v in self._declared:
            field = self.fields.get(str(v["name"]).strip())
            if isinstance(field, QCheckBox):
                field.setChecked(_checked(v.get("value")))
            elif field is not None:
                field.setText(_text(v.get("value")))

    def set_values(self, values: dict[str, Any]) -> None:
        """Fill the fields of the variables named in ``values`` (a past run's arguments); the
        others keep what they show."""
        for name, value in values.items():
            field = self.fields.get(name)
            if isinstance(field, QCheckBox):
                field.setChecked(_checked(value))
            elif field is not None:
                field.setText(_text(value))
                field.setCursorPosition(0)

    def required_names(self) -> list[str]:
        return [str(v["name"]).strip() for v in self._declared if v.get("required")]

    def values(self, include_empty: bool = False) -> dict[str, str]:
        """Name -> text typed (an empty field means "not given": the variable keeps its default)."""
        out: dict[str, str] = {}
        for name, field in self.fields.items():
            text = ("true" if field.isChecked() else "false") if isinstance(field, QCheckBox) else field.text()
            if include_empty or text != "":
                out[name] = text
        return out
