"""The schema of an agent's structured answer: a table of fields, or JSON Schema as text.

An agent's ``responseFormat: {type: "json_schema", schema}`` (DESIGN.md "Conditions, routing and
structured answers") asks the model for JSON matching ``schema``. :class:`SchemaEditor` shows
the schema two ways, kept in step:

* **Fields**: the simple case, an object of named fields, each with a type (string, number,
  integer, boolean, array, object), required or not, and a description. A schema that says
  more than that (nested properties, enums, ...) is shown read-only there (its top-level
  fields, their types in words: ``array of string``), edited as text.
* **JSON Schema**: the schema as text, checked as it is typed; its problem is shown in words
  (line and column for a JSON syntax error) and nothing is written until it is valid.

The editor emits ``edited(schema, merge)``: ``merge`` is a key when the edit is typing that
should merge into one undo step, else None. The owner turns it into one document edit.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont, QIcon
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPlainTextEdit,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..resources import icon_path

__all__ = [
    "FIELD_TYPES",
    "SchemaEditor",
    "fields_to_schema",
    "schema_to_fields",
    "schema_problem",
    "schema_summary",
    "DEFAULT_SCHEMA",
]

FIELD_TYPES = ("string", "number", "integer", "boolean", "array", "object")
_JSON_TYPES = frozenset(FIELD_TYPES) | {"null"}
_TABLE_TOP_KEYS = frozenset({"type", "properties", "required", "additionalProperties", "title", "description"})
_TABLE_FIELD_KEYS = frozenset({"type", "description"})
DEFAULT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def fields_to_schema(fields: list[dict[str, Any]], base: dict[str, Any] | None = None) -> dict[str, Any]:
    """The object schema of ``fields`` (``{name, type, required, description}``; unnamed ones
    left out), keeping ``base``'s title, description and ``additionalProperties``."""
    props: dict[str, Any] = {}
    required: list[str] = []
    for f in fields:
        name = str(f.get("name") or "").strip()
        if not name or name in props:
            continue
        prop: dict[str, Any] = {"type": f.get("type") if f.get("type") in FIELD_TYPES else "string"}
        if str(f.get("description") or "").strip():
            prop["description"] = str(f["description"]).strip()
        props[name] = prop
        if f.get("required"):
            required.append(name)
    schema: dict[str, Any] = {"type": "object"}
    for key in ("title", "description"):
        if base and key in base:
            schema[key] = base[key]
    schema["properties"] = props
    schema["required"] = required
    if base is None or "additionalProperties" in base:  # a schema written as text keeps its choice
        schema["additionalProperties"] = base.get("additionalProperties", False) if base else False
    return schema


def schema_to_fields(schema: Any) -> list[dict[str, Any]] | None:
    """The fields of a schema the table can show, or None: it says more than names and types."""
    if not isinstance(schema, dict) or schema.get("type") != "object" or not set(schema) <= _TABLE_TOP_KEYS:
        return None
    props = schema.get("properties") or {}
    required = schema.get("required") or []
    if not isinstance(props, dict) or not isinstance(required, list):
        return None
    fields = []
    for name, prop in props.items():
        if not isinstance(prop, dict) or not set(prop) <= _TABLE_FIELD_KEYS or prop.get("type") not in FIELD_TYPES:
            return None
        fields.append(
            {
                "name": name,
                "type": prop["type"],
                "required": name in required,
                "description": str(prop.get("description") or ""),
            }
        )
    return fields


def _type_words(prop: Any) -> str:
    """A field's type in words, for the read-only table: ``array of string``, ``one of a, b``."""
    if not isinstance(prop, dict):
        return "any"
    if isinstance(prop.get("enum"), list):
        shown = ", ".join(str(v) for v in prop["enum"][:4])
        return f"one of {shown}" + (", …" if len(prop["enum"]) > 4 else "")
    kind = prop.get("type")
    words = " or ".join(str(k) for k in kind) if isinstance(kind, list) else str(kind or "any")
    items = prop.get("items")
    if kind == "array" and isinstance(items, dict):
        return f"array of {_type_words(items)}"
    return words


def schema_summary(schema: Any) -> list[dict[str, Any]]:
    """The top-level fields of any object schema, their types in words (:func:`_type_words`):
    what the table shows, read-only, of a schema it cannot edit."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return []
    required = schema.get("required") if isinstance(schema.get("required"), list) else []
    return [
        {
            "name": str(name),
            "type": _type_words(prop),
            "required": name in required,
            "description": str(prop.get("description") or "") if isinstance(prop, dict) else "",
        }
        for name, prop in schema["properties"].items()
    ]


def _type_problem(where: str, node: dict[str, Any]) -> str:
    t = node.get("type")
    types = t if isinstance(t, list) else [t] if t is not None else []
    for one in types:
        if one not in _JSON_TYPES:
            return (
                f"{where}: '{one}' is not a JSON Schema type (string, number, integer, boolean, array, object, null)."
            )
    props = node.get("properties")
    if props is not None:
        if not isinstance(props, dict):
            return f"{where}: 'properties' must be an object of field schemas."
        for name, sub in props.items():
            if not isinstance(sub, dict):
                return f"{where}: the field '{name}' must be described by an object."
            inner = _type_problem(f"field '{name}'", sub)
            if inner:
                return inner
    required = node.get("required")
    if required is not None:
        if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
            return f"{where}: 'required' must be a list of field names."
        missing = [r for r in required if isinstance(props, dict) and r not in props]
        if missing:
            return f"{where}: '{missing[0]}' is required but is not one of its properties."
    items = node.get("items")
    if isinstance(items, dict):
        return _type_problem(f"{where}, its items", items)
    if items is not None and not isinstance(items, dict):
        return f"{where}: 'items' must be a schema (an object)."
    return ""


def schema_problem(text: str) -> tuple[dict[str, Any] | None, str]:
    """``(schema, "")`` for a valid JSON Schema text, else ``(None, what is wrong in words)``."""
    if not text.strip():
        return None, 'Write a JSON Schema, e.g. {"type": "object", "properties": {…}}.'
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"Not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}."
    if not isinstance(value, dict):
        return None, "A schema is a JSON object ({…})."
    problem = _type_problem("The schema", value)
    return (None, problem) if problem else (value, "")


class SchemaEditor(QWidget):
    """Fields table and JSON Schema text of one schema (see the module doc)."""

    edited = Signal(object, object)  # schema (dict), merge key (str) or None

    def __init__(self, watch: Any = None) -> None:
        super().__init__()
        self.setObjectName("schemaEditor")
        self._filling = False
        self._schema: dict[str, Any] = dict(DEFAULT_SCHEMA)
        col = QVBoxLayout(self)
        col.setContentsMargins(0, 0, 0, 0)
        self.tabs = QTabWidget()
        col.addWidget(self.tabs)
        # Fields
        fields_page = QWidget()
        fl = QVBoxLayout(fields_page)
        fl.setContentsMargins(0, 4, 0, 0)
        self.table = QTableWidget(0, 4)
        self.table.setObjectName("schemaFields")
        self.table.setHorizontalHeaderLabels(["Field", "Type", "Required", "Description"])
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        # left-aligned so a narrow inspector cuts a header's end, never both of its sides
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        header.setMinimumSectionSize(24)
        for c, mode in enumerate(
            (
                QHeaderView.ResizeMode.ResizeToContents,
                QHeaderView.ResizeMode.ResizeToContents,
                QHeaderView.ResizeMode.ResizeToContents,
                QHeaderView.ResizeMode.Stretch,
            )
        ):
            header.setSectionResizeMode(c, mode)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setMinimumHeight(130)
        self.table.itemChanged.connect(self._cell_edited)
        fl.addWidget(self.table)
        buttons = QHBoxLayout()
        self.add_button, self.remove_button = QToolButton(), QToolButton()
        self.add_button.setIcon(QIcon(icon_path("add")))
        self.add_button.setToolTip("Add a field")
        self.add_button.clicked.connect(self.add_field)
        self.remove_button.setIcon(QIcon(icon_path("delete")))
        self.remove_button.setToolTip("Remove the selected field")
        self.remove_button.clicked.connect(lambda _=False: self.remove_field(self.table.currentRow()))
        buttons.addWidget(self.add_button)
        buttons.addWidget(self.remove_button)
        buttons.addStretch(1)
        fl.addLayout(buttons)
        self.table_note = QLabel(
            "This schema says more than names and types (nested fields, enums…): edit it under JSON Schema."
        )
        self.table_note.setObjectName("hint")
        self.table_note.setWordWrap(True)
        fl.addWidget(self.table_note)
        self.tabs.addTab(fields_page, "Fields")
        # JSON Schema
        raw_page = QWidget()
        rl = QVBoxLayout(raw_page)
        rl.setContentsMargins(0, 4, 0, 0)
        self.raw = QPlainTextEdit()
        self.raw.setObjectName("schemaText")
        mono = QFont("monospace")
        mono.setStyleHint(QFont.StyleHint.Monospace)
        self.raw.setFont(mono)
        self.raw.setMinimumHeight(150)
        self.raw.textChanged.connect(self._raw_typed)
        if watch is not None:
            watch(self.raw)
            watch(self.table)
        rl.addWidget(self.raw)
        self.tabs.addTab(raw_page, "JSON Schema")
        self.problem = QLabel()
        self.problem.setObjectName("schemaProblem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #c0392b;")
        self.problem.hide()
        col.addWidget(self.problem)

    # ------------------------------------------------------------------ showing
    def schema(self) -> dict[str, Any]:
        return self._schema

    def load(self, schema: Any) -> None:
        schema = schema if isinstance(schema, dict) else dict(DEFAULT_SCHEMA)
        self._schema = schema
        self._filling = True
        try:
            self._fill_table(schema)
            _value, problem = schema_problem(self.raw.toPlainText())
            if problem or _value != schema:  # the text says another schema (or is being fixed): show this one
                if not (problem and self.raw.hasFocus()):  # never wipe what the user is typing
                    self.raw.setPlainText(json.dumps(schema, indent=2, ensure_ascii=False))
                    self.show_problem("")
        finally:
            self._filling = False

    def _fill_table(self, schema: dict[str, Any]) -> None:
        fields = schema_to_fields(schema)
        simple = fields is not None
        self.table.setEnabled(simple)
        self.add_button.setEnabled(simple)
        self.remove_button.setEnabled(simple)
        self.table_note.setVisible(not simple)
        if fields is None:  # shown read-only: its top-level fields, their types in words
            summary = schema_summary(schema)
            self.table.setRowCount(len(summary))
            for i, f in enumerate(summary):
                self._set_row(i, f, editable=False)
            return
        shown = self._table_fields()
        named = [f for f in shown if f["name"].strip()]
        if named == fields and len(shown) == len(fields) + 1 and not shown[-1]["name"].strip():
            return  # a new row not named yet: kept while the user types its name
        self.table.setRowCount(len(fields))
        for i, f in enumerate(fields):
            self._set_row(i, f)

    def _set_row(self, i: int, f: dict[str, Any], editable: bool = True) -> None:
        name = self._cell(i, 0)
        if name.text() != f["name"]:
            name.setText(f["name"])
        if not editable:  # a schema the table cannot edit: the type in words, no picker
            self.table.removeCellWidget(i, 1)
            self.table.setItem(i, 1, QTableWidgetItem(f["type"]))
        else:
            self.table.takeItem(i, 1)
            combo = self.table.cellWidget(i, 1)
            if not isinstance(combo, QComboBox):
                combo = QComboBox()
                combo.addItems(list(FIELD_TYPES))
                combo.currentTextChanged.connect(lambda _t: self._table_edited())
                self.table.setCellWidget(i, 1, combo)
            if combo.currentText() != f["type"]:
                combo.setCurrentText(f["type"])
        req = self._cell(i, 2)
        req.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
        state = Qt.CheckState.Checked if f["required"] else Qt.CheckState.Unchecked
        if req.checkState() != state:
            req.setCheckState(state)
        desc = self._cell(i, 3)
        if desc.text() != f["description"]:
            desc.setText(f["description"])

    def _cell(self, row: int, column: int) -> QTableWidgetItem:
        """The item of a cell, made when it has none (an item is never set twice: Qt warns)."""
        item = self.table.item(row, column)
        if item is None:
            item = QTableWidgetItem()
            self.table.setItem(row, column, item)
        return item

    def show_problem(self, text: str) -> None:
        self.problem.setText(text)
        self.problem.setVisible(bool(text))

    # ------------------------------------------------------------------ editing
    def _table_fields(self) -> list[dict[str, Any]]:
        out = []
        for i in range(self.table.rowCount()):
            name, req, desc = self.table.item(i, 0), self.table.item(i, 2), self.table.item(i, 3)
            combo = self.table.cellWidget(i, 1)
            out.append(
                {
                    "name": name.text() if name else "",
                    "type": combo.currentText() if isinstance(combo, QComboBox) else "string",
                    "required": bool(req and req.checkState() == Qt.CheckState.Checked),
                    "description": desc.text() if desc else "",
                }
            )
        return out

    def _cell_edited(self, _item: QTableWidgetItem) -> None:
        self._table_edited()

    def _table_edited(self) -> None:
        if self._filling:
            return
        fields = self._table_fields()
        names = [f["name"].strip() for f in fields if f["name"].strip()]
        dup = next((n for i, n in enumerate(names) if n in names[:i]), None)
        if dup:
            self.show_problem(f"Two fields are named '{dup}': name each field once.")
            return
        self.show_problem("")
        schema = fields_to_schema(fields, self._schema)
        if schema != self._schema:
            self._schema = schema
            self._filling = True
            try:
                self.raw.setPlainText(json.dumps(schema, indent=2, ensure_ascii=False))
            finally:
                self._filling = False
            self.edited.emit(schema, None)

    def add_field(self) -> None:
        n = self.table.rowCount()
        self._filling = True
        try:
            self.table.setRowCount(n + 1)
            self._set_row(n, {"name": "", "type": "string", "required": True, "description": ""})
        finally:
            self._filling = False
        self.table.setCurrentCell(n, 0)
        self.table.editItem(self.table.item(n, 0))

    def remove_field(self, row: int) -> None:
        if 0 <= row < self.table.rowCount():
            self.table.removeRow(row)
            self._table_edited()

    def _raw_typed(self) -> None:
        if self._filling:
            return
        schema, problem = schema_problem(self.raw.toPlainText())
        self.show_problem(problem)
        if schema is None or schema == self._schema:
            return
        self._schema = schema
        self._filling = True
        try:
            self._fill_table(schema)
        finally:
            self._filling = False
        self.edited.emit(schema, "responseFormat.schema")
