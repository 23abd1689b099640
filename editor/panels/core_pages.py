"""Inspector pages of the core kinds: ``agent``, ``start`` and ``if`` (conditions); ``approval``'s
is in :mod:`.approval_page`.

Each page is made for a :class:`~editor.panels.inspector_pages.PageHost` (the inspector),
shows a node's data given as plain data (``load(node.data.model_dump())``) and writes every
edit back through the host: a field through ``host.edit_field`` (one undo step; typing merges
until the field loses focus), a structural change (conditions, variables, subagents) through
the document's own request. While the host is loading (``host.loading``) a page's widgets
echo nothing back.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QCheckBox, QComboBox, QFormLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from engine import model_choices
from engine import reasoning_efforts as efforts_for

from ..document import is_subagent_node
from ..resources import icon_path
from .conditions import ConditionRow
from .inspector_host import PageHost
from .kind_pages import FlowToolsList
from .mcp_pages import McpToolPicker
from .prompt_edit import PromptEdit, prompt_with_insert, title_label
from .schema_editor import DEFAULT_SCHEMA, SchemaEditor
from .variables import VariablesTable

__all__ = ["AgentPage", "StartPage", "ConditionPage", "form_page", "hint_label"]


def form_page(page: QWidget) -> QFormLayout:
    """The form layout every page uses: labels above their fields, fields as wide as the page."""
    form = QFormLayout(page)
    form.setContentsMargins(12, 8, 12, 12)
    form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
    form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
    return form


def hint_label(text: str) -> QLabel:
    hint = QLabel(text)
    hint.setWordWrap(True)
    hint.setObjectName("hint")
    return hint


def _is_subagent(host: PageHost) -> bool:
    node = host.doc.node(host.node_id or "")
    return node is not None and is_subagent_node(node, host.doc.graph_index())


def model_combo(host: PageHost) -> QComboBox:
    """The model a step asks (an agent's, a router's): the catalogue's models to pick from, any
    other typed in, empty for the provider's default."""
    combo = QComboBox()
    combo.setEditable(True)
    combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
    combo.lineEdit().setPlaceholderText("Provider default")
    for model_id, label, _prov in model_choices():
        combo.addItem(model_id, model_id)
        combo.setItemData(combo.count() - 1, label, Qt.ItemDataRole.ToolTipRole)
    host.watch(combo)
    return combo


class AgentPage(QWidget):
    """An agent (or a subagent: an agent another one calls as a tool)."""

    def __init__(self, host: PageHost) -> None:
        super().__init__()
        self.host = host
        form = form_page(self)
        self.name = QLineEdit()
        self.name.setPlaceholderText("Agent")
        host.bind_text(self.name, "agentName")
        self.system = PromptEdit("You are a helpful assistant.")
        host.bind_text(self.system, "systemPrompt")
        self.user = PromptEdit("Empty: the previous output is sent as is")
        host.bind_text(self.user, "userPrompt")
        self.model = model_combo(host)
        self.model.editTextChanged.connect(self._model_edited)
        self.effort = QComboBox()
        self.effort.setEditable(True)
        self.effort.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.effort.editTextChanged.connect(lambda t: host.edit_field("reasoningEffort", t, True))
        host.watch(self.effort)
        self.web = QCheckBox("Web search")
        self.web.toggled.connect(lambda on: host.edit_field("tools.web_search", on, False))
        self.subs = QCheckBox("Subagents (call linked agents as tools)")
        self.subs.toggled.connect(self._subagents_toggled)
        self.title = title_label("Agent")
        form.addRow(self.title)
        form.addRow("Name", self.name)
        form.addRow("System prompt", self.system)
        form.addRow("User prompt", prompt_with_insert(self.user))
        form.addRow("Model", self.model)
        form.addRow("Reasoning effort", self.effort)
        tools = QWidget()
        tl = QVBoxLayout(tools)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.web)
        tl.addWidget(self.subs)
        self.flows = FlowToolsList(lambda: list(host.library_flows()))
        self._flow_asks: set[str] = set()  # flows whose calls ask for approval ({flow, approve: "ask"})
        self._flow_ids: list[str] = []  # the flows ticked
        self.flows.edited.connect(self._flows_edited)
        tl.addWidget(self.flows)
        # approve: "ask" on the ticked flows (``{flow, approve}``; partly checked when only some ask)
        self.flow_ask = QCheckBox("Ask me before each call of a ticked flow")
        self.flow_ask.setObjectName("flowToolsAsk")
        self._flow_ask_tip = (
            "The run pauses before the model calls one of these flows; you see the arguments, may "
            "edit them, and approve or reject the call (approve: ask)."
        )
        self.flow_ask.setToolTip(self._flow_ask_tip)
        self.flow_ask.clicked.connect(self._flow_ask_clicked)
        tl.addWidget(self.flow_ask)
        # A subagent's own approve: its parent's model asks before calling it.
        self.subagent_ask = QCheckBox("Ask me before each call of this subagent")
        self.subagent_ask.setObjectName("subagentAsk")
        self.subagent_ask.setToolTip(
            "The run pauses before a call of this subagent; you see its input, may edit it, and "
            "approve or reject the call (approve: ask)."
        )
        self.subagent_ask.toggled.connect(self._subagent_ask_toggled)
        tl.addWidget(self.subagent_ask)
        self.mcp = McpToolPicker(lambda: host.doc.workflow)
        self.mcp.edited.connect(lambda entries: host.edit_field("tools.mcp", entries, False))
        tl.addWidget(self.mcp)
        form.addRow("Tools", tools)
        self.structured = QCheckBox("Answer with JSON fields")
        self.structured.setObjectName("structuredAnswer")
        self.structured.setToolTip(
            "The model answers with JSON matching the schema below; the node's output is "
            "that value, so later nodes can use {{name.field}}."
        )
        self.structured.toggled.connect(self._structured_toggled)
        self.schema = SchemaEditor(host.watch)
        self.schema.edited.connect(self._schema_edited)
        form.addRow("Structured answer", self.structured)
        form.addRow(self.schema)

    def heading(self, node: Any) -> str:
        return f"{'Subagent' if _is_subagent(self.host) else 'Agent'} · {node.id}"

    def _flows_edited(self, ids: Any) -> None:
        """The flows ticked; one that asked for approval keeps asking (``{flow, approve}``)."""
        self._flow_ids = [str(i) for i in ids or ()]
        self._show_flow_asks()  # a flow ticked now does not ask: the box says when only some do
        entries = [{"flow": i, "approve": "ask"} if i in self._flow_asks else i for i in self._flow_ids]
        self.host.edit_field("tools.flows", entries or None, False)

    def _show_flow_asks(self) -> None:
        """The flows' ask box: checked when every ticked flow asks, partly when some do."""
        asking = [i for i in self._flow_ids if i in self._flow_asks]
        some = bool(asking) and len(asking) < len(self._flow_ids)
        self.flow_ask.setTristate(some)
        state = Qt.CheckState.PartiallyChecked if some else Qt.CheckState.Checked if asking else Qt.CheckState.Unchecked
        self.flow_ask.setCheckState(state)
        self.flow_ask.setEnabled(bool(self._flow_ids))
        self.flow_ask.setVisible(bool(self._flow_ids))  # nothing to ask about before a flow is ticked
        tip = self._flow_ask_tip
        self.flow_ask.setToolTip(f"{tip}\nOnly these ask now: {', '.join(asking)}." if some else tip)

    def _flow_ask_clicked(self, _checked: bool) -> None:
        """Every ticked flow asks (a partly checked box becomes checked), or none does."""
        on = self.flow_ask.checkState() != Qt.CheckState.Unchecked
        self.flow_ask.setTristate(False)
        self.flow_ask.setChecked(on)
        self._flow_asks = set(self._flow_ids) if on else set()
        self._flows_edited(self._flow_ids)

    def _subagent_ask_toggled(self, on: bool) -> None:
        data = self._edited_data()
        if data is None or (data.get("approve") == "ask") == on:
            return
        if on:
            data["approve"] = "ask"
        else:
            data.pop("approve", None)  # "always" is the default: the file is as it was
        self.host.doc.end_merge()
        self.host.doc.edit_node_data(self.host.node_id, data, None)

    def load(self, data: dict[str, Any]) -> None:
        self.title.setText("Subagent" if _is_subagent(self.host) else "Agent")
        if self.name.text() != data["agentName"]:
            self.name.setText(data["agentName"])
        self.system.set_text_keep_cursor(data["systemPrompt"])
        self.user.set_text_keep_cursor(data["userPrompt"])
        if self.model.currentText() != data["model"]:
            self.model.setEditText(data["model"])
        self._fill_efforts(data["model"])
        if self.effort.currentText() != data["reasoningEffort"]:
            self.effort.setEditText(data["reasoningEffort"])
        tools = data.get("tools") or {}
        self.web.setChecked(bool(tools.get("web_search")))
        self.subs.setChecked(bool(tools.get("subagents")))
        refs = tools.get("flows") or []
        self._flow_asks = {
            str(r.get("flow") or r.get("id")) for r in refs if isinstance(r, dict) and r.get("approve") == "ask"
        }
        self._flow_ids = [str(r.get("flow") or r.get("id") or "") if isinstance(r, dict) else str(r) for r in refs]
        self.flows.load(self._flow_ids or None)
        self._show_flow_asks()
        self.subagent_ask.setVisible(_is_subagent(self.host))
        self.subagent_ask.setChecked(str(data.get("approve") or "").strip().lower() == "ask")
        self.mcp.load(tools.get("mcp"))
        fmt = data.get("responseFormat")
        structured = isinstance(fmt, dict) and fmt.get("type") == "json_schema"
        self.structured.setChecked(structured)
        self.schema.setVisible(structured)
        if structured:
            self.schema.load(fmt.get("schema"))

    def _edited_data(self) -> dict[str, Any] | None:
        """The shown node's data to edit, or None while a node is being loaded or none is shown."""
        host = self.host
        if host.loading or host.node_id is None:
            return None
        node = host.doc.node(host.node_id)
        return None if node is None else node.data.model_dump()

    def _structured_toggled(self, on: bool) -> None:
        self.schema.setVisible(on)
        host = self.host
        data = self._edited_data()
        if data is None:
            return
        if on:
            data["responseFormat"] = {"type": "json_schema", "schema": json.loads(json.dumps(DEFAULT_SCHEMA))}
        else:
            data.pop("responseFormat", None)  # free text again: the file is as it was
        host.doc.end_merge()
        host.doc.edit_node_data(host.node_id, data, None)

    def _schema_edited(self, schema: dict[str, Any], merge: str | None) -> None:
        host = self.host
        data = self._edited_data()
        if data is None:
            return
        fmt = data.get("responseFormat")
        data["responseFormat"] = {**(fmt if isinstance(fmt, dict) else {}), "type": "json_schema", "schema": schema}
        if merge is None:
            host.doc.end_merge()
        host.doc.edit_node_data(host.node_id, data, merge)

    def _model_edited(self, text: str) -> None:
        self._fill_efforts(text)
        self.host.edit_field("model", text, True)

    def _fill_efforts(self, model: str) -> None:
        """The efforts ``model`` offers, keeping the text typed (no edit is echoed meanwhile)."""
        current = self.effort.currentText()
        host = self.host
        was = host.loading
        host.loading = True
        try:
            self.effort.clear()
            self.effort.addItems(efforts_for(model))
            self.effort.setEditText(current)
        finally:
            host.loading = was

    def _subagents_toggled(self, on: bool) -> None:
        if not self.host.loading and self.host.node_id is not None:
            self.host.doc.set_subagents_enabled(self.host.node_id, on)


class StartPage(QWidget):
    """The Start node: the run's initial input and its declared variables (the run's arguments)."""

    def __init__(self, host: PageHost) -> None:
        super().__init__()
        self.host = host
        form = form_page(self)
        self.input = PromptEdit("The run's initial input (the first step's {{PREVIOUS_OUTPUT}})")
        host.bind_text(self.input, "initialInput")
        form.addRow(title_label("Start"))
        form.addRow("Initial input", self.input)
        self.variables_table = VariablesTable(host.watch)
        self.variables_table.edited.connect(self._variables_edited)
        self.variables_label = QLabel("Variables")
        form.addRow(self.variables_label, self.variables_table)
        self.variables_hint = hint_label(
            "The run's arguments: use them as {{name}} or ${name} in any field. "
            "The run console asks for their values; a required one must be given."
        )
        form.addRow(self.variables_hint)

    def load(self, data: dict[str, Any]) -> None:
        self.input.set_text_keep_cursor(data["initialInput"])
        self.variables_table.load([dict(v) for v in (data.get("variables") or [])])

    def _variables_edited(self, rows: list[dict[str, Any]], text: str, merge: str | None) -> None:
        host = self.host
        if host.loading or host.node_id is None:
            return
        node = host.doc.node(host.node_id)
        if node is None:
            return
        data = node.data.model_dump()
        data["variables"] = rows
        if merge is None:
            host.doc.end_merge()
        host.doc.edit_node_data(host.node_id, data, merge)


class ConditionPage(QWidget):
    """An ``if`` node: its conditions in order (each with its own branch), and Else."""

    def __init__(self, host: PageHost) -> None:
        super().__init__()
        self.host = host
        form = form_page(self)
        form.addRow(title_label("Condition"))
        form.addRow(
            hint_label(
                "Conditions are checked in order against the previous output (any case), or "
                "against a value inside it given a path. The first match follows its branch; "
                "none follows Else."
            )
        )
        self.box = QWidget()
        self.rows_layout = QVBoxLayout(self.box)
        self.rows_layout.setContentsMargins(0, 0, 0, 0)
        self.rows_layout.setSpacing(6)
        form.addRow(self.box)
        self.add_button = QPushButton(QIcon(icon_path("add")), "Add condition")
        self.add_button.clicked.connect(self.add_condition)
        form.addRow(self.add_button)
        self.rows: list[ConditionRow] = []

    def load(self, data: dict[str, Any]) -> None:
        self._sync_rows(list(data.get("conditions") or []))

    def _conditions(self) -> list[dict[str, Any]]:
        node = self.host.doc.node(self.host.node_id or "")
        return [c.model_dump() for c in getattr(node.data, "conditions", [])] if node else []

    def add_condition(self) -> None:
        if self.host.node_id is None:
            return
        conds = self._conditions() + [{"operator": "contains", "value": ""}]
        self.host.doc.set_conditions(self.host.node_id, conds, {}, "Add condition")

    def remove_condition(self, i: int) -> None:
        conds = self._conditions()
        n = len(conds)
        del conds[i]
        mapping = {j: (None if j == i else (j - 1 if j > i else j)) for j in range(n)}
        self.host.doc.set_conditions(self.host.node_id, conds, mapping, "Remove condition")

    def move_condition(self, i: int, d: int) -> None:
        conds = self._conditions()
        j = i + d
        if not (0 <= j < len(conds)):
            return
        conds[i], conds[j] = conds[j], conds[i]
        self.host.doc.set_conditions(self.host.node_id, conds, {i: j, j: i}, "Reorder conditions")

    def _condition_edited(self, i: int, key: str, value: Any, merge: bool) -> None:
        """One edit of condition ``i``: typing in its value or path merges into one undo step."""
        host = self.host
        if host.loading or host.node_id is None:
            return
        node = host.doc.node(host.node_id)
        if node is None:
            return
        data = node.data.model_dump()
        if i >= len(data["conditions"]):
            return
        cond = data["conditions"][i]
        if key == "path" and not value:
            cond.pop("path", None)  # no path: the file stays as AgentFlow writes it
        else:
            cond[key] = value
        if not merge:
            host.doc.end_merge()
        host.doc.edit_node_data(host.node_id, data, f"conditions.{i}.{key}" if merge else None)

    def _sync_rows(self, conds: list[dict[str, Any]]) -> None:
        while len(self.rows) > len(conds):
            self.rows.pop().deleteLater()
        while len(self.rows) < len(conds):
            self.rows.append(self._make_row(len(self.rows)))
        for i, (cond, row) in enumerate(zip(conds, self.rows)):
            row.load(cond, i == 0, i == len(conds) - 1)

    def _make_row(self, i: int) -> ConditionRow:
        row = ConditionRow(i, self.host.watch)
        row.edited.connect(lambda key, value, merge: self._condition_edited(i, key, value, merge))
        row.move_requested.connect(lambda d: self.move_condition(i, d))
        row.remove_requested.connect(lambda: self.remove_condition(i))
        self.rows_layout.addWidget(row)
        return row
