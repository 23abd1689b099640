"""Inspector: a form per node type editing the selected node's ``data`` through the document.

Every widget edit becomes a document request (one undo step; typing in a field merges into
one step until the field loses focus). When the document changes (undo, canvas edits) the
form reloads from the model; ``_loading`` stops that reload from echoing back as an edit.
"""

from __future__ import annotations

import re
from typing import Any

from PySide6.QtCore import QEvent, QObject, QRegularExpression, Qt, Signal
from PySide6.QtGui import (QColor, QFont, QIcon, QKeyEvent, QKeySequence, QSyntaxHighlighter, QTextCharFormat,
                           QTextDocument)
from PySide6.QtWidgets import (QCheckBox, QComboBox, QFormLayout, QFrame, QHBoxLayout, QLabel, QLineEdit,
                               QPlainTextEdit, QPushButton, QScrollArea, QStackedWidget, QToolButton, QVBoxLayout,
                               QWidget)

from engine import model_choices, spec_for
from engine import reasoning_efforts as efforts_for

from ..document import is_subagent_node
from ..editing import WorkflowDocument
from ..resources import icon_path
from ..long_text import preview, too_long_to_show

PREVIOUS_OUTPUT = "{{PREVIOUS_OUTPUT}}"
TEMPLATE_RE = r"\{\{\s*[A-Za-z_][A-Za-z0-9_.]*\s*\}\}"


class TemplateHighlighter(QSyntaxHighlighter):
    """Highlights ``{{PREVIOUS_OUTPUT}}`` and other ``{{variables}}``."""

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self._re = QRegularExpression(TEMPLATE_RE)
        self.known = QTextCharFormat()
        self.known.setForeground(QColor("#ffb454"))
        self.known.setBackground(QColor(255, 180, 84, 40))
        self.known.setFontWeight(QFont.Weight.Bold)
        self.other = QTextCharFormat()
        self.other.setForeground(QColor("#79c0ff"))
        self.other.setBackground(QColor(121, 192, 255, 35))

    def highlightBlock(self, text: str) -> None:
        it = self._re.globalMatch(text)
        while it.hasNext():
            m = it.next()
            fmt = self.known if re.sub(r"\s", "", m.captured(0)) == PREVIOUS_OUTPUT else self.other
            self.setFormat(m.capturedStart(), m.capturedLength(), fmt)


class PromptEdit(QPlainTextEdit):
    """Plain-text prompt editor with template highlighting."""

    def __init__(self, placeholder: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setPlaceholderText(placeholder)
        self.setTabChangesFocus(True)
        self.setMinimumHeight(90)
        self.setUndoRedoEnabled(False)  # undo is the document's (see _FocusOut)
        self.highlighter = TemplateHighlighter(self.document())

    def set_text_keep_cursor(self, text: str) -> None:
        if too_long_to_show(text):  # laying it out would freeze the window: a read-only preview
            self._shows_preview = text
            self.setReadOnly(True)
            self.setPlainText(preview(text))
            return
        if getattr(self, "_shows_preview", None) is not None:
            self._shows_preview = None
            self.setReadOnly(False)
        elif self.toPlainText() == text:
            return
        pos = self.textCursor().position()
        self.setPlainText(text)
        cursor = self.textCursor()
        cursor.setPosition(min(pos, len(text)))
        self.setTextCursor(cursor)

    def insert_variable(self, text: str = PREVIOUS_OUTPUT) -> None:
        self.insertPlainText(text)
        self.setFocus()


class _FocusOut(QObject):
    """Ends the current typing merge when an editor loses focus, so the next edit is its own step.

    Also hands Ctrl+Z / Ctrl+Shift+Z to the document: a text widget's private undo would
    otherwise undo characters locally and record that as yet another document edit.
    """

    def __init__(self, doc: WorkflowDocument) -> None:
        super().__init__()
        self.doc = doc

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.FocusOut:
            self.doc.end_merge()
        elif event.type() == QEvent.Type.ShortcutOverride and isinstance(event, QKeyEvent) and (
                event.matches(QKeySequence.StandardKey.Undo) or event.matches(QKeySequence.StandardKey.Redo)
                or (event.key() == Qt.Key.Key_Z and event.modifiers() == (Qt.KeyboardModifier.ControlModifier
                                                                          | Qt.KeyboardModifier.ShiftModifier))):
            event.ignore()  # not overridden: the window's Undo/Redo shortcut fires
            return True
        return False


def _title(text: str) -> QLabel:
    label = QLabel(text)
    label.setObjectName("inspectorTitle")
    return label


class InspectorPanel(QWidget):
    status_message = Signal(str)

    def __init__(self, document: WorkflowDocument, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("inspector")
        self.doc = document
        self.node_id: str | None = None
        self._loading = False
        self._focus_out = _FocusOut(document)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.header = QLabel()
        self.header.setObjectName("inspectorHeader")
        self.header.setWordWrap(True)
        outer.addWidget(self.header)
        scroll = QScrollArea(self)
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.stack = QStackedWidget()
        scroll.setWidget(self.stack)
        outer.addWidget(scroll, 1)
        self.pages: dict[str, QWidget] = {}
        self._build_workflow_page()
        self._build_start_page()
        self._build_agent_page()
        self._build_if_page()
        self._build_approval_page()
        self._build_multi_page()
        # Hand-made pages of the built-in kinds; any other kind the engine knows gets a form
        # generated from its data model (built on first use, one per kind).
        self._custom_loaders = {"agent": self._load_agent, "start": self._load_start, "if": self._load_if,
                                "approval": self._load_approval}
        self.forms: dict[str, Any] = {}
        document.node_data_changed.connect(self._on_data_changed)
        document.node_removed.connect(self._on_node_removed)
        document.workflow_reset.connect(lambda: self.show_node(None))
        document.meta_changed.connect(self._on_meta_changed)
        self.show_node(None)

    # ------------------------------------------------------------------ helpers
    def _page(self, name: str) -> QFormLayout:
        page = QWidget()
        form = QFormLayout(page)
        form.setContentsMargins(12, 8, 12, 12)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.pages[name] = page
        self.stack.addWidget(page)
        return form

    def _watch(self, w: QWidget) -> QWidget:
        w.installEventFilter(self._focus_out)
        return w

    def _bind_text(self, widget: QLineEdit | PromptEdit, field: str) -> None:
        self._watch(widget)
        if isinstance(widget, QLineEdit):
            widget.textEdited.connect(lambda text: self._set(field, text))
        else:
            # A read-only preview of a long text is never written back over the text itself.
            widget.textChanged.connect(lambda: None if getattr(widget, "_shows_preview", None) is not None
                                       else self._set(field, widget.toPlainText()))

    def _set(self, field: str, value: Any, merge: bool = True) -> None:
        if self._loading or self.node_id is None:
            return
        self.doc.set_node_field(self.node_id, field, value, merge)

    def _prompt_with_insert(self, edit: PromptEdit) -> QWidget:
        box = QWidget()
        lay = QVBoxLayout(box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        lay.addWidget(edit)
        row = QHBoxLayout()
        button = QPushButton(QIcon(icon_path("insert")), "Insert {{PREVIOUS_OUTPUT}}")
        button.setObjectName("insertVariable")
        button.setToolTip("Insert the previous step's output at the cursor")
        button.clicked.connect(lambda: edit.insert_variable())
        row.addWidget(button)
        row.addStretch(1)
        lay.addLayout(row)
        edit.insert_button = button  # type: ignore[attr-defined]
        return box

    # ------------------------------------------------------------------ pages
    def _build_workflow_page(self) -> None:
        form = self._page("workflow")
        self.wf_name = self._watch(QLineEdit())
        self.wf_desc = self._watch(PromptEdit("What this workflow does"))
        self.wf_name.textEdited.connect(lambda t: None if self._loading else self.doc.set_info(name=t))
        self.wf_desc.textChanged.connect(
            lambda: None if self._loading else self.doc.set_info(description=self.wf_desc.toPlainText()))
        form.addRow(_title("Workflow"))
        form.addRow("Name", self.wf_name)
        form.addRow("Description", self.wf_desc)
        from .triggers import TriggersEditor

        self.wf_triggers = TriggersEditor()
        self._watch(self.wf_triggers.edit)
        self.wf_triggers.patterns_edited.connect(lambda p: None if self._loading else self.doc.set_triggers(p))
        form.addRow("Trigger phrases", self.wf_triggers)
        hint = QLabel("Select a node to edit it. Drag node types from the palette; drag from a handle to link.")
        hint.setWordWrap(True)
        hint.setObjectName("hint")
        form.addRow(hint)

    def _build_start_page(self) -> None:
        form = self._page("start")
        self.start_input = PromptEdit("The run's initial input (the first step's {{PREVIOUS_OUTPUT}})")
        self._bind_text(self.start_input, "initialInput")
        form.addRow(_title("Start"))
        form.addRow("Initial input", self.start_input)

    def _build_agent_page(self) -> None:
        form = self._page("agent")
        self.agent_name = QLineEdit()
        self.agent_name.setPlaceholderText("Agent")
        self._bind_text(self.agent_name, "agentName")
        self.agent_system = PromptEdit("You are a helpful assistant.")
        self._bind_text(self.agent_system, "systemPrompt")
        self.agent_user = PromptEdit("Empty: the previous output is sent as is")
        self._bind_text(self.agent_user, "userPrompt")
        self.agent_model = QComboBox()
        self.agent_model.setEditable(True)
        self.agent_model.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.agent_model.lineEdit().setPlaceholderText("Provider default")
        for model_id, label, _prov in model_choices():
            self.agent_model.addItem(model_id, model_id)
            self.agent_model.setItemData(self.agent_model.count() - 1, label, Qt.ItemDataRole.ToolTipRole)
        self._watch(self.agent_model)
        self.agent_model.editTextChanged.connect(self._model_edited)
        self.agent_effort = QComboBox()
        self.agent_effort.setEditable(True)
        self.agent_effort.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.agent_effort.editTextChanged.connect(lambda t: self._set("reasoningEffort", t, merge=True))
        self._watch(self.agent_effort)
        self.agent_web = QCheckBox("Web search")
        self.agent_web.toggled.connect(lambda on: self._set("tools.web_search", on, merge=False))
        self.agent_subs = QCheckBox("Subagents (call linked agents as tools)")
        self.agent_subs.toggled.connect(self._subagents_toggled)
        self.agent_title = _title("Agent")
        form.addRow(self.agent_title)
        form.addRow("Name", self.agent_name)
        form.addRow("System prompt", self.agent_system)
        form.addRow("User prompt", self._prompt_with_insert(self.agent_user))
        form.addRow("Model", self.agent_model)
        form.addRow("Reasoning effort", self.agent_effort)
        tools = QWidget()
        tl = QVBoxLayout(tools)
        tl.setContentsMargins(0, 0, 0, 0)
        tl.addWidget(self.agent_web)
        tl.addWidget(self.agent_subs)
        form.addRow("Tools", tools)

    def _model_edited(self, text: str) -> None:
        self._fill_efforts(text)
        self._set("model", text)

    def _fill_efforts(self, model: str) -> None:
        current = self.agent_effort.currentText()
        was = self._loading
        self._loading = True
        try:
            self.agent_effort.clear()
            self.agent_effort.addItems(efforts_for(model))
            self.agent_effort.setEditText(current)
        finally:
            self._loading = was

    def _subagents_toggled(self, on: bool) -> None:
        if not self._loading and self.node_id is not None:
            self.doc.set_subagents_enabled(self.node_id, on)

    def _build_if_page(self) -> None:
        form = self._page("if")
        form.addRow(_title("Condition"))
        hint = QLabel("Conditions are checked in order against the previous output (case-insensitive). "
                      "The first match follows its branch; none follows Else.")
        hint.setWordWrap(True)
        hint.setObjectName("hint")
        form.addRow(hint)
        self.cond_box = QWidget()
        self.cond_layout = QVBoxLayout(self.cond_box)
        self.cond_layout.setContentsMargins(0, 0, 0, 0)
        self.cond_layout.setSpacing(6)
        form.addRow(self.cond_box)
        self.cond_add = QPushButton(QIcon(icon_path("add")), "Add condition")
        self.cond_add.clicked.connect(self._add_condition)
        form.addRow(self.cond_add)
        self.cond_rows: list[tuple[QComboBox, QLineEdit, QToolButton, QToolButton, QToolButton]] = []

    def _conditions(self) -> list[dict[str, Any]]:
        node = self.doc.node(self.node_id or "")
        return [c.model_dump() for c in getattr(node.data, "conditions", [])] if node else []

    def _add_condition(self) -> None:
        if self.node_id is None:
            return
        conds = self._conditions() + [{"operator": "contains", "value": ""}]
        self.doc.set_conditions(self.node_id, conds, {}, "Add condition")

    def _remove_condition(self, i: int) -> None:
        conds = self._conditions()
        n = len(conds)
        del conds[i]
        mapping = {j: (None if j == i else (j - 1 if j > i else j)) for j in range(n)}
        self.doc.set_conditions(self.node_id, conds, mapping, "Remove condition")

    def _move_condition(self, i: int, d: int) -> None:
        conds = self._conditions()
        j = i + d
        if not (0 <= j < len(conds)):
            return
        conds[i], conds[j] = conds[j], conds[i]
        self.doc.set_conditions(self.node_id, conds, {i: j, j: i}, "Reorder conditions")

    def _condition_edited(self, i: int, key: str, value: str) -> None:
        if self._loading or self.node_id is None:
            return
        node = self.doc.node(self.node_id)
        data = node.data.model_dump()
        if i >= len(data["conditions"]):
            return
        data["conditions"][i][key] = value
        self.doc.edit_node_data(self.node_id, data, f"conditions.{i}.{key}" if key == "value" else None)

    def _sync_condition_rows(self, conds: list[dict[str, Any]]) -> None:
        while len(self.cond_rows) > len(conds):
            row = self.cond_rows.pop()
            row[0].parentWidget().deleteLater()
        while len(self.cond_rows) < len(conds):
            i = len(self.cond_rows)
            w = QFrame()
            w.setObjectName("conditionRow")
            lay = QHBoxLayout(w)
            lay.setContentsMargins(6, 4, 6, 4)
            label = QLabel(f"{i + 1}.")
            op = QComboBox()
            op.addItem("contains", "contains")
            op.addItem("equals", "equal")
            op.currentIndexChanged.connect(lambda _ix, i=i, op=op: self._condition_edited(i, "operator", op.currentData()))
            value = QLineEdit()
            value.setPlaceholderText("value (empty never matches)")
            self._watch(value)
            value.textEdited.connect(lambda t, i=i: self._condition_edited(i, "value", t))
            up, down, rm = QToolButton(), QToolButton(), QToolButton()
            up.setIcon(QIcon(icon_path("up")))
            up.setToolTip("Move up")
            down.setIcon(QIcon(icon_path("down")))
            down.setToolTip("Move down")
            rm.setIcon(QIcon(icon_path("delete")))
            rm.setToolTip("Remove condition (its link goes too)")
            up.clicked.connect(lambda _=False, i=i: self._move_condition(i, -1))
            down.clicked.connect(lambda _=False, i=i: self._move_condition(i, 1))
            rm.clicked.connect(lambda _=False, i=i: self._remove_condition(i))
            for x in (label, op):
                lay.addWidget(x)
            lay.addWidget(value, 1)
            for x in (up, down, rm):
                lay.addWidget(x)
            self.cond_layout.addWidget(w)
            self.cond_rows.append((op, value, up, down, rm))
        for i, (cond, row) in enumerate(zip(conds, self.cond_rows)):
            op, value, up, down, _rm = row
            op.setCurrentIndex(max(0, op.findData(cond.get("operator", "contains"))))
            if value.text() != cond.get("value", ""):
                value.setText(cond.get("value", ""))
            up.setEnabled(i > 0)
            down.setEnabled(i < len(conds) - 1)

    def _build_approval_page(self) -> None:
        form = self._page("approval")
        self.approval_prompt = PromptEdit("The message shown to the approver")
        self._bind_text(self.approval_prompt, "prompt")
        form.addRow(_title("Approval"))
        form.addRow("Message to the approver", self.approval_prompt)
        hint = QLabel("The run pauses here until someone approves or rejects; each decision follows its branch.")
        hint.setWordWrap(True)
        hint.setObjectName("hint")
        form.addRow(hint)

    def _build_multi_page(self) -> None:
        form = self._page("multi")
        self.multi_label = QLabel()
        self.multi_label.setWordWrap(True)
        form.addRow(self.multi_label)

    # ------------------------------------------------------------------ showing
    def show_selection(self, ids: list[str]) -> None:
        if len(ids) == 1:
            self.show_node(ids[0])
        elif not ids:
            self.show_node(None)
        else:
            self.node_id = None
            self.header.setText(f"{len(ids)} nodes selected")
            self.multi_label.setText("Edit one node at a time. Delete, copy, duplicate or auto-layout "
                                     "apply to the whole selection.")
            self.stack.setCurrentWidget(self.pages["multi"])

    def show_node(self, node_id: str | None) -> None:
        self.node_id = node_id if node_id and self.doc.node(node_id) else None
        self._load()

    def _on_data_changed(self, node_id: str) -> None:
        if node_id == self.node_id:
            self._load()

    def _on_node_removed(self, node_id: str) -> None:
        if node_id == self.node_id:
            self.show_node(None)

    def _on_meta_changed(self) -> None:
        if self.node_id is None:
            self._load()

    def _load(self) -> None:
        self._loading = True
        try:
            node = self.doc.node(self.node_id) if self.node_id else None
            if node is None:
                wf = self.doc.workflow
                self.header.setText("Workflow")
                if self.wf_name.text() != (wf.name or ""):
                    self.wf_name.setText(wf.name or "")
                self.wf_desc.set_text_keep_cursor(wf.description or "")
                triggers = getattr(wf, "triggers", None)
                if triggers is None:
                    triggers = (wf.model_extra or {}).get("triggers")
                self.wf_triggers.set_patterns(list(triggers) if isinstance(triggers, list) else [])
                self.stack.setCurrentWidget(self.pages["workflow"])
                return
            kind = node.type
            spec = spec_for(kind)
            loader = self._custom_loaders.get(kind) if spec is not None else None
            if loader is not None:
                loader(node)
                self.stack.setCurrentWidget(self.pages[kind])
            elif spec is not None:
                self.header.setText(f"{spec.label or kind} · {node.id}")
                form = self._form_for(spec)
                form.load(node.data)
                self.stack.setCurrentWidget(form)
            else:
                self.header.setText(f"{kind} · {node.id}")
                self.multi_label.setText(f"Nodes of type '{kind}' have no editable fields.")
                self.stack.setCurrentWidget(self.pages["multi"])
        finally:
            self._loading = False

    def _form_for(self, spec: Any) -> Any:
        from .data_form import DataForm

        form = self.forms.get(spec.kind)
        if form is None or form.model is not spec.data_model:
            form = DataForm(spec.data_model, spec.label or spec.kind, self._watch)
            form.edited.connect(lambda field, value, merge: self._set(field, value, merge))
            self.forms[spec.kind] = form
            self.stack.addWidget(form)
        return form

    def _load_agent(self, node: Any) -> None:
        d = node.data
        sub = is_subagent_node(node, self.doc.graph_index())
        self.header.setText(f"{'Subagent' if sub else 'Agent'} · {node.id}")
        self.agent_title.setText("Subagent" if sub else "Agent")
        if self.agent_name.text() != d.agentName:
            self.agent_name.setText(d.agentName)
        self.agent_system.set_text_keep_cursor(d.systemPrompt)
        self.agent_user.set_text_keep_cursor(d.userPrompt)
        if self.agent_model.currentText() != d.model:
            self.agent_model.setEditText(d.model)
        self._fill_efforts(d.model)
        if self.agent_effort.currentText() != d.reasoningEffort:
            self.agent_effort.setEditText(d.reasoningEffort)
        self.agent_web.setChecked(bool(d.tools.web_search))
        self.agent_subs.setChecked(bool(d.tools.subagents))

    def _load_start(self, node: Any) -> None:
        self.header.setText(f"Start · {node.id}")
        self.start_input.set_text_keep_cursor(node.data.initialInput)

    def _load_if(self, node: Any) -> None:
        self.header.setText(f"Condition · {node.id}")
        self._sync_condition_rows([c.model_dump() for c in node.data.conditions])

    def _load_approval(self, node: Any) -> None:
        self.header.setText(f"Approval · {node.id}")
        self.approval_prompt.set_text_keep_cursor(node.data.prompt)


__all__ = ["InspectorPanel", "PromptEdit", "TemplateHighlighter", "PREVIOUS_OUTPUT"]
