"""Hand-made inspector pages of the issue-16 kinds: ``http``, ``flow`` and ``action``.

The pages are registered in :mod:`editor.panels.inspector_pages` (``fetch`` has none: the
generated form is used). Pages take plain data (``model_dump()``) in ``load()`` and write back
through the inspector's setter, so every edit is a document edit.

The ``flow`` page lists the library's flows (``inspector.library_flows()``, set by the window;
each item has ``id``, ``name``, ``description``, ``parameters``, ``path``), and shows one
input field per parameter of the chosen flow; the fields write ``inputs`` (``{variable:
template}``): an emptied field is dropped from ``inputs``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QCompleter,
    QFormLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from .kv_table import KeyValueTable

__all__ = ["FlowPage", "ActionPage", "FlowToolsList", "param_fields", "flow_label"]


def _get(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def param_fields(flow: Any) -> list[dict[str, Any]]:
    """A library flow's parameters as ``{name, type, required, description, value}`` dicts."""
    out = []
    for p in _get(flow, "parameters", None) or []:
        name = _get(p, "name")
        if name:
            out.append(
                {
                    "name": str(name),
                    "type": str(_get(p, "type", "string") or "string"),
                    "required": bool(_get(p, "required", False)),
                    "description": str(_get(p, "description", "") or ""),
                    "value": _get(p, "value"),
                }
            )
    return out


def flow_label(flow: Any) -> str:
    name = _get(flow, "name") or _get(flow, "id") or "?"
    return str(name)


def _hint(form: QFormLayout, text: str = "") -> QLabel:
    """A wrapping line of hint text on a row of its own."""
    label = QLabel(text)
    label.setObjectName("hint")
    label.setWordWrap(True)
    form.addRow(label)
    return label


class FlowPage(QWidget):
    """The ``flow`` node: which library flow, and the template for each of its parameters."""

    def __init__(
        self,
        edit: Callable[[str, Any, bool], None],
        watch: Callable[[QWidget], QWidget],
        flows: Callable[[], list[Any]],
        open_flow: Callable[[str], None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("flowPage")
        self._edit, self._watch, self._flows, self._open = edit, watch, flows, open_flow
        self._loading = False
        self._data: dict[str, Any] = {}
        self.param_edits: dict[str, QLineEdit] = {}
        form = QFormLayout(self)
        form.setContentsMargins(12, 8, 12, 12)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        title = QLabel("Subflow")
        title.setObjectName("inspectorTitle")
        form.addRow(title)
        self.flow = QComboBox()
        self.flow.setObjectName("flowChoice")
        self.flow.setEditable(True)  # searchable: type to filter; a path relative to this file works too
        self.flow.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.flow.completer().setFilterMode(Qt.MatchFlag.MatchContains)
        self.flow.completer().setCompletionMode(QCompleter.CompletionMode.PopupCompletion)
        self.flow.lineEdit().setPlaceholderText("A library flow (type to search) or a path")
        self.flow.activated.connect(self._picked)
        self.flow.lineEdit().editingFinished.connect(self._typed)
        form.addRow("Flow", self.flow)
        self.description = _hint(form)
        self.params_box = QWidget()
        self.params_form = QFormLayout(self.params_box)
        self.params_form.setContentsMargins(0, 0, 0, 0)
        self.params_form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
        self.params_title = QLabel("Inputs")
        self.params_title.setObjectName("inspectorTitle")
        form.addRow(self.params_title)
        # A line of its own (wrapping), not in the title: a long title widened the whole page
        self.params_none = _hint(form, "This flow has no parameters.")
        form.addRow(self.params_box)
        self.open_button = QPushButton("Open this flow")
        self.open_button.setObjectName("openChildFlow")
        self.open_button.clicked.connect(lambda: self._open(str(self._data.get("flow") or "")))
        form.addRow(self.open_button)

    # ------------------------------------------------------------------ library
    def _find(self, ref: str) -> Any:
        for f in self._flows():
            if ref and ref in (str(_get(f, "id") or ""), str(_get(f, "path") or "")):
                return f
        return None

    def _fill_choices(self, current: str) -> None:
        self.flow.blockSignals(True)
        try:
            self.flow.clear()
            for f in self._flows():
                label = flow_label(f)
                if _get(f, "enabled", True) is False:
                    label += " (disabled)"
                self.flow.addItem(label, str(_get(f, "id") or _get(f, "path") or ""))
                self.flow.setItemData(self.flow.count() - 1, _get(f, "description") or "", Qt.ItemDataRole.ToolTipRole)
            ix = self.flow.findData(current)
            if ix >= 0:
                self.flow.setCurrentIndex(ix)
            else:
                self.flow.setCurrentIndex(-1)
                self.flow.setEditText(current)
        finally:
            self.flow.blockSignals(False)

    def _picked(self, index: int) -> None:
        ref = self.flow.itemData(index)
        if ref and not self._loading and ref != self._data.get("flow"):
            self._edit("flow", ref, False)

    def _typed(self) -> None:
        if self._loading:
            return
        text = self.flow.currentText().strip()
        ix = self.flow.findText(text)
        ref = self.flow.itemData(ix) if ix >= 0 else text
        if ref != (self._data.get("flow") or ""):
            self._edit("flow", ref, False)

    # ------------------------------------------------------------------ load
    def load(self, data: dict[str, Any]) -> None:
        self._loading = True
        try:
            self._data = dict(data)
            ref = str(data.get("flow") or "")
            self._fill_choices(ref)
            flow = self._find(ref)
            self.open_button.setEnabled(bool(ref))
            if flow is None:
                self.description.setText(
                    "Choose a flow from the library."
                    if not ref
                    else f"'{ref}' is not in the library (a path relative to this file is read when the run starts)."
                )
                params = [
                    {"name": k, "type": "string", "required": False, "description": "", "value": None}
                    for k in (data.get("inputs") or {})
                ]
            else:
                self.description.setText(str(_get(flow, "description") or ""))
                params = param_fields(flow)
            self._sync_params(params, data.get("inputs") or {})
        finally:
            self._loading = False

    def _sync_params(self, params: list[dict[str, Any]], inputs: dict[str, Any]) -> None:
        names = [p["name"] for p in params]
        if names != list(self.param_edits):
            while self.params_form.rowCount():
                self.params_form.removeRow(0)
            self.param_edits = {}
            for p in params:
                edit = self._watch(QLineEdit())
                edit.setObjectName(f"flowInput_{p['name']}")
                default = p.get("value")
                hint = f"{p['type']}" + (", required" if p["required"] else "")
                if default not in (None, ""):
                    hint += f", default {default}"
                edit.setPlaceholderText(f"{{{{…}}}} or a value ({hint})")
                edit.setToolTip(p.get("description") or "")
                edit.textEdited.connect(lambda text, name=p["name"]: self._input_edited(name, text))
                label = p["name"] + (" *" if p["required"] else "")
                self.params_form.addRow(label, edit)
                self.param_edits[p["name"]] = edit
        for name, edit in self.param_edits.items():
            value = inputs.get(name)
            text = "" if value is None else (value if isinstance(value, str) else _json(value))
            if edit.text() != text:
                edit.setText(text)
        self.params_none.setVisible(not params)

    def _input_edited(self, name: str, text: str) -> None:
        if self._loading:
            return
        inputs = dict(self._data.get("inputs") or {})
        if text:
            inputs[name] = text
            self._data["inputs"] = inputs
            self._edit(f"inputs.{name}", text, True)  # typing in one field merges into one step
        else:
            inputs.pop(name, None)
            self._data["inputs"] = inputs
            self._edit("inputs", inputs, False)


class ActionPage(QWidget):
    """The ``action`` node: the action's name (the library flow of that name runs) and its
    parameters (that flow's inputs). An import fills both; here they are set and changed, each
    change one edit (typing in the name merges into one)."""

    def __init__(
        self,
        edit: Callable[[str, Any, bool], None],
        watch: Callable[[QWidget], QWidget],
        flows: Callable[[], list[Any]],
        open_flow: Callable[[str], None],
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("actionPage")
        self._edit, self._flows, self._open = edit, flows, open_flow
        self._loading = False
        self._data: dict[str, Any] = {}
        form = QFormLayout(self)
        form.setContentsMargins(12, 8, 12, 12)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        title = QLabel("Action")
        title.setObjectName("inspectorTitle")
        form.addRow(title)
        self.name = watch(QLineEdit())
        self.name.setObjectName("actionName")
        self.name.setPlaceholderText("The name of a library flow")
        self.name.setCompleter(QCompleter([]))
        self.name.completer().setFilterMode(Qt.MatchFlag.MatchContains)
        self.name.completer().setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.name.textEdited.connect(self._name_edited)
        self.name.completer().activated.connect(self._name_edited)
        form.addRow("Action", self.name)
        self.bound = _hint(form)
        self.params = KeyValueTable("Parameter", "Value")
        self.params.setObjectName("actionParams")
        self.params.rows_edited.connect(self._params_edited)
        form.addRow("Parameters", self.params)
        # Both forms work (imported TypeAgent steps keep their ${…}); the hint says so.
        _hint(form, "The flow's inputs, by name; values may use templates: {{name}} and ${name} both work.")
        self.open_button = QPushButton("Open this flow")
        self.open_button.setObjectName("openActionFlow")
        self.open_button.clicked.connect(lambda: self._open(self._flow_ref()))
        form.addRow(self.open_button)

    def _flow(self, name: str) -> Any:
        wanted = name.strip().lower()
        return next((f for f in self._flows() if wanted and str(_get(f, "name") or "").strip().lower() == wanted), None)

    def _flow_ref(self) -> str:
        flow = self._flow(self.name.text())
        return str(_get(flow, "id") or _get(flow, "path") or "") if flow is not None else ""

    def load(self, data: dict[str, Any]) -> None:
        self._loading = True
        try:
            self._data = dict(data)
            names = sorted({str(_get(f, "name")) for f in self._flows() if _get(f, "name")}, key=str.lower)
            self.name.completer().model().setStringList(names)  # type: ignore[attr-defined]
            name = str(data.get("action") or data.get("name") or "")
            if self.name.text() != name:
                self.name.setText(name)
                self.name.setCursorPosition(0)
            params = data.get("parameters") or {}
            self.params.set_rows(
                [
                    {"key": str(k), "value": v if isinstance(v, str) else _json(v)}
                    for k, v in (params.items() if isinstance(params, dict) else ())
                ]
            )
            self._show_binding(name, str(data.get("schema") or ""))
        finally:
            self._loading = False

    def _show_binding(self, name: str, schema: str) -> None:
        source = f" (from {schema})" if schema else ""
        flow = self._flow(name)
        if not name.strip():
            text = "Name the library flow this action runs."
        elif flow is None:
            text = f"No library flow is named '{name}' yet{source}: Problems offers to create one."
        else:
            text = f"Runs the library flow '{_get(flow, 'name')}'{source} with these parameters as its inputs."
        self.bound.setText(text)
        self.open_button.setEnabled(flow is not None)

    def _name_edited(self, text: str) -> None:
        if self._loading:
            return
        self._data["action"] = text
        self._show_binding(text, str(self._data.get("schema") or ""))
        self._edit("action", text, True)

    def _params_edited(self, rows: list[dict[str, str]]) -> None:
        if self._loading:
            return
        old = self._data.get("parameters") or {}
        params: dict[str, Any] = {}
        for row in rows:
            key = row["key"].strip()
            if key:  # a value that was not text (a number, a list from an import) stays so while it parses
                params[key] = _parsed_like(old.get(key) if isinstance(old, dict) else None, row["value"])
        if params == old:  # a row added with no name yet, or one removed before it had one: shown only
            self._loading = True
            try:
                self.params.set_rows(rows)
            finally:
                self._loading = False
            return
        self._data["parameters"] = params
        self._edit("parameters", params, False)


def _parsed_like(before: Any, text: str) -> Any:
    if before is None or isinstance(before, str):
        return text

    try:
        return json.loads(text)
    except ValueError:
        return text


def _json(value: Any) -> str:

    return json.dumps(value, ensure_ascii=False)


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class FlowToolsList(QWidget):
    """An agent's ``tools.flows``: the library flows offered to the model as tools (checkable).

    A flow that can wait for an approval is listed but cannot be checked (it cannot be a tool);
    a checked id that is no longer in the library stays listed (marked missing) so it can be
    unchecked. Each change is one edit: ``edited(list_of_ids)`` (empty list -> None)."""

    edited = Signal(object)

    def __init__(self, flows: Callable[[], list[Any]], parent: QWidget | None = None) -> None:

        super().__init__(parent)
        self._flows = flows
        self._loading = False
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        self.label = QLabel("Library flows offered as tools")
        lay.addWidget(self.label)
        self.list = QListWidget()
        self.list.setObjectName("agentFlowTools")
        self.list.setMaximumHeight(120)
        self.list.itemChanged.connect(self._changed)
        lay.addWidget(self.list)

    def load(self, checked: list[str] | None) -> None:

        checked = list(checked or [])
        flows = self._flows()
        key = (
            tuple(
                (_get(f, "id"), flow_label(f), bool(_get(f, "can_pause", False)), bool(_get(f, "error"))) for f in flows
            ),
            tuple(checked),
        )
        if key == getattr(self, "_key", None):
            return  # unchanged (the agent page reloads on every keystroke)
        self._key = key
        self._loading = True
        try:
            self.list.clear()
            seen = set()
            for f in flows:
                fid = str(_get(f, "id") or "")
                if not fid or _get(f, "error"):
                    continue
                seen.add(fid)
                item = QListWidgetItem(flow_label(f))
                item.setData(Qt.ItemDataRole.UserRole, fid)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(Qt.CheckState.Checked if fid in checked else Qt.CheckState.Unchecked)
                tip = str(_get(f, "description") or "")
                if _get(f, "can_pause", False):
                    tip = "Waits for an approval: it cannot be offered as a tool." + ("\n" + tip if tip else "")
                    if fid not in checked:
                        item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEnabled)
                item.setToolTip(tip)
                self.list.addItem(item)
            for fid in checked:
                if fid not in seen:
                    item = QListWidgetItem(f"{fid} (not in the library)")
                    item.setData(Qt.ItemDataRole.UserRole, fid)
                    item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                    item.setCheckState(Qt.CheckState.Checked)
                    self.list.addItem(item)
            self.label.setVisible(self.list.count() > 0)
            self.list.setVisible(self.list.count() > 0)
        finally:
            self._loading = False

    def checked(self) -> list[str]:
        out = []
        for i in range(self.list.count()):
            item = self.list.item(i)
            if item.checkState() == Qt.CheckState.Checked:
                out.append(item.data(Qt.ItemDataRole.UserRole))
        return out

    def _changed(self, _item: Any) -> None:
        if not self._loading:
            ids = self.checked()
            self.edited.emit(ids or None)
