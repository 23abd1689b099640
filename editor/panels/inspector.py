"""Inspector: a form per node type editing the selected node's ``data`` through the document.

Every widget edit becomes a document request (one undo step; typing in a field merges into
one step until the field loses focus). When the document changes (undo, canvas edits) the
form reloads from the model; ``_loading`` stops that reload from echoing back as an edit.
"""

from __future__ import annotations

from typing import Any

from collections.abc import Callable

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import (QColor, QFont, QHelpEvent, QIcon, QKeyEvent, QKeySequence, QStandardItem,
                           QStandardItemModel, QSyntaxHighlighter, QTextCharFormat, QTextCursor, QTextDocument)
from PySide6.QtWidgets import (QCheckBox, QComboBox, QCompleter, QFormLayout, QFrame, QHBoxLayout, QLabel, QLineEdit,
                               QPlainTextEdit, QPushButton, QScrollArea, QSizePolicy, QStackedWidget, QToolButton,
                               QToolTip, QVBoxLayout, QWidget)

from engine import (TEMPLATE_BUILTINS, TemplateCompletion, TemplateReference, find_references, model_choices,
                    spec_for, template_completion)
from engine import reasoning_efforts as efforts_for

from ..document import is_subagent_node
from ..editing import WorkflowDocument
from ..resources import icon_path
from ..long_text import preview, too_long_to_show
from .variables import POLICY_FIELDS, AvailableNames, PolicySection, VariablesTable, available_names, has_fields

PREVIOUS_OUTPUT = "{{PREVIOUS_OUTPUT}}"
TEMPLATE_RE = r"\{\{\s*[A-Za-z_][A-Za-z0-9_.]*\s*\}\}"  # kept for callers; references come from engine.find_references


def unknown_reference_message(ref: TemplateReference) -> str:
    """The warning shown for a reference that names nothing (the validator's wording when it has one)."""
    return (f"Unknown reference {ref.raw}: '{ref.name}' is not a declared variable, an output variable "
            "or a built-in; it is sent as written.")


COMPLETION_NAME_ROLE = Qt.ItemDataRole.UserRole + 1  # a completion's name (what is matched and inserted)


class TemplateHighlighter(QSyntaxHighlighter):
    """Colours template references found by ``engine.find_references``: built-ins (``{{PREVIOUS_OUTPUT}}``,
    ``{{iteration}}``...) in orange, known variables in blue; a reference to a name the node cannot
    see (``known`` given, the name not in it) is underlined in red (its warning is the tooltip)."""

    def __init__(self, document: QTextDocument) -> None:
        super().__init__(document)
        self.known_names: frozenset[str] | None = None  # None: no context, nothing is called unknown
        self.known = QTextCharFormat()  # built-ins
        self.known.setForeground(QColor("#ffb454"))
        self.known.setBackground(QColor(255, 180, 84, 40))
        self.known.setFontWeight(QFont.Weight.Bold)
        self.other = QTextCharFormat()  # variables and output variables
        self.other.setForeground(QColor("#79c0ff"))
        self.other.setBackground(QColor(121, 192, 255, 35))
        self.unknown = QTextCharFormat()
        self.unknown.setForeground(QColor("#ffa198"))
        self.unknown.setUnderlineStyle(QTextCharFormat.UnderlineStyle.WaveUnderline)
        self.unknown.setUnderlineColor(QColor("#f85149"))

    def set_known(self, names: frozenset[str] | set[str] | None) -> None:
        names = None if names is None else frozenset(names)
        if names != self.known_names:
            self.known_names = names
            self.rehighlight()

    def is_unknown(self, ref: TemplateReference) -> bool:
        return (self.known_names is not None and ref.name not in self.known_names
                and ref.name not in TEMPLATE_BUILTINS)

    def highlightBlock(self, text: str) -> None:
        for ref in find_references(text):
            if ref.name in TEMPLATE_BUILTINS:
                fmt = self.known
            elif self.is_unknown(ref):
                fmt = self.unknown
            else:
                fmt = self.other
            self.setFormat(ref.start, ref.end - ref.start, fmt)


class PromptEdit(QPlainTextEdit):
    """Plain-text prompt editor with template highlighting, warnings on unknown references
    (tooltip) and completion of names (Ctrl+Space, ``engine.template_completion``)."""

    def __init__(self, placeholder: str = "", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setPlaceholderText(placeholder)
        self.setTabChangesFocus(True)
        self.setMinimumHeight(90)
        self.setUndoRedoEnabled(False)  # undo is the document's (see _FocusOut)
        self.highlighter = TemplateHighlighter(self.document())
        # name -> where it comes from; set by the inspector for the selected node
        self.names_provider: Callable[[], list[tuple[str, str]]] | None = None
        self.completer: QCompleter | None = None
        self._completing: TemplateCompletion | None = None
        self.validator_warnings: list[str] = []  # its "unknown_reference" messages for the node shown

    # ------------------------------------------------------------------ warnings
    def reference_at(self, pos: int) -> TemplateReference | None:
        block = self.document().findBlock(pos)
        offset = pos - block.position()
        for ref in find_references(block.text()):
            if ref.start <= offset < ref.end:
                return ref
        return None

    def warning_at(self, pos: int) -> str:
        """The warning of the unknown reference at ``pos`` (the validator's, when it has said it)."""
        ref = self.reference_at(pos)
        if ref is None or not self.highlighter.is_unknown(ref):
            return ""
        said = [m for m in self.validator_warnings if f"'{ref.raw}'" in m]
        return said[0] if said else unknown_reference_message(ref)

    def event(self, e: QEvent) -> bool:
        if e.type() == QEvent.Type.ToolTip and isinstance(e, QHelpEvent):
            cursor = self.cursorForPosition(self.viewport().mapFrom(self, e.pos()))
            text = self.warning_at(cursor.position())
            if text:
                QToolTip.showText(e.globalPos(), text, self)
            else:
                QToolTip.hideText()
                e.ignore()
            return True
        return super().event(e)

    # ------------------------------------------------------------------ completion
    def keyPressEvent(self, e: QKeyEvent) -> None:
        popup = self.completer.popup() if self.completer is not None else None
        if popup is not None and popup.isVisible() and e.key() in (
                Qt.Key.Key_Enter, Qt.Key.Key_Return, Qt.Key.Key_Escape, Qt.Key.Key_Tab, Qt.Key.Key_Backtab):
            e.ignore()  # the completer's popup takes these
            return
        if e.key() == Qt.Key.Key_Space and e.modifiers() & Qt.KeyboardModifier.ControlModifier:
            self.complete_names()
            return
        super().keyPressEvent(e)
        if popup is not None and popup.isVisible():
            found = template_completion(self.toPlainText(), self.textCursor().position())
            if found is None:
                popup.hide()
            else:
                self._completing = found
                self.completer.setCompletionPrefix(found.prefix)

    def completion_names(self) -> list[str]:
        return [name for name, _origin in self.completion_entries()]

    def completion_entries(self) -> list[tuple[str, str]]:
        """``(name, where it comes from)`` of each name a reference here can use."""
        entries = list(self.names_provider()) if self.names_provider is not None else []
        return entries or [(name, "built-in") for name in sorted(TEMPLATE_BUILTINS)]

    def complete_names(self) -> None:
        """Offer the names that fit what is typed inside ``{{``/``${`` before the cursor (a fresh
        ``{{}}`` is opened when the cursor is outside a reference)."""
        if self.isReadOnly():
            return
        cursor = self.textCursor()
        found = template_completion(self.toPlainText(), cursor.position())
        if found is None:
            cursor.insertText("{{}}")
            cursor.movePosition(QTextCursor.MoveOperation.Left, QTextCursor.MoveMode.MoveAnchor, 2)
            self.setTextCursor(cursor)
            found = template_completion(self.toPlainText(), cursor.position())
            if found is None:
                return
        self._completing = found
        if self.completer is None:
            self.completer = QCompleter(self)
            self.completer.setWidget(self)
            self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
            self.completer.setCompletionMode(QCompleter.CompletionMode.PopupCompletion)
            self.completer.activated[str].connect(self.insert_completion)
            self.completer.popup().setObjectName("completionPopup")
        # Each name with where it comes from ("topic   variable (string)", "draft   output of
        # Writer"); typing matches the name alone, and the name alone is inserted.
        model = QStandardItemModel(self.completer)
        for name, origin in self.completion_entries():
            item = QStandardItem(f"{name}    {origin}" if origin else name)
            item.setData(name, COMPLETION_NAME_ROLE)
            item.setToolTip(origin)
            model.appendRow(item)
        self.completer.setModel(model)
        self.completer.setCompletionRole(COMPLETION_NAME_ROLE)
        self.completer.setCompletionPrefix(found.prefix)
        rect = self.cursorRect()
        rect.setWidth(min(460, max(220, self.completer.popup().sizeHintForColumn(0) + 24)))
        self.completer.complete(rect)

    def insert_completion(self, name: str) -> None:
        found = self._completing or template_completion(self.toPlainText(), self.textCursor().position())
        if found is None:
            return
        cursor = self.textCursor()
        cursor.setPosition(found.start)
        cursor.setPosition(self.textCursor().position(), QTextCursor.MoveMode.KeepAnchor)
        cursor.insertText(name)
        closing = "}}" if found.form == "braces" else "}"
        rest = self.toPlainText()[cursor.position():]
        if not rest.lstrip(" ").startswith(closing):
            cursor.insertText(closing)
        else:
            cursor.setPosition(cursor.position() + rest.index(closing) + len(closing))
        self.setTextCursor(cursor)
        self._completing = None

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
    open_flow_requested = Signal(str)  # a flow node's "Open this flow": its ``flow`` reference

    def __init__(self, document: WorkflowDocument, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("inspector")
        self.doc = document
        self.node_id: str | None = None
        self._loading = False
        self._focus_out = _FocusOut(document)
        self._last_prompt: PromptEdit | None = None
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
        self._build_data_flow()
        scroll.setWidget(self.stack)
        self.scroll = scroll
        # another page shown: back to its top (a long page's scroll position means nothing there)
        self.stack.currentChanged.connect(lambda _i: scroll.verticalScrollBar().setValue(0))
        self.stack.currentChanged.connect(self._fit_to_page)
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
        # Hand-made pages of the kinds of issue 16 (http, flow, action): built on first use.
        self.kind_pages: dict[str, Any] = {}
        self.library_flows: Any = list  # () -> the library's flows; the window sets it
        document.node_data_changed.connect(self._on_data_changed)
        document.node_removed.connect(self._on_node_removed)
        document.workflow_reset.connect(lambda: self.show_node(None))
        document.meta_changed.connect(self._on_meta_changed)
        self.show_node(None)
        self._fit_to_page()  # (the first page shown changes no index: nothing else fits the stack to it)

    # ------------------------------------------------------------------ helpers
    def _fit_to_page(self, _index: int = -1) -> None:
        """The stack as big as the page it shows. A QStackedWidget is otherwise as wide and as
        tall as the largest of all its pages: a small page (an HTTP request) got a sideways
        scroll bar and blank scrolling below its end, from the agent page it was not showing."""
        current = self.stack.currentWidget()
        for i in range(self.stack.count()):
            page = self.stack.widget(i)
            policy = QSizePolicy.Policy.Preferred if page is current else QSizePolicy.Policy.Ignored
            page.setSizePolicy(policy, policy)
        self.stack.updateGeometry()

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
        if isinstance(w, PromptEdit):
            w.installEventFilter(self)
        return w

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.FocusIn and isinstance(obj, PromptEdit):
            self._last_prompt = obj  # where the variable view inserts a name
        return False

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
        self.variables_table = VariablesTable(self._watch)
        self.variables_table.edited.connect(self._variables_edited)
        self.variables_label = QLabel("Variables")
        form.addRow(self.variables_label, self.variables_table)
        self.variables_hint = QLabel("The run's arguments: use them as {{name}} or ${name} in any field. "
                                     "The run console asks for their values; a required one must be given.")
        self.variables_hint.setWordWrap(True)
        self.variables_hint.setObjectName("hint")
        form.addRow(self.variables_hint)

    def _variables_edited(self, rows: list[dict[str, Any]], text: str, merge: str | None) -> None:
        if self._loading or self.node_id is None:
            return
        node = self.doc.node(self.node_id)
        if node is None:
            return
        data = node.data.model_dump()
        data["variables"] = rows
        if merge is None:
            self.doc.end_merge()
        self.doc.edit_node_data(self.node_id, data, merge)

    # ------------------------------------------------------------------ data flow (any kind, asked of its spec)
    def _build_data_flow(self) -> None:
        box = QWidget()
        self.flow_box = box
        self._flow_host: QWidget | None = None
        col = QVBoxLayout(box)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(8)
        out_row = QWidget()
        orl = QFormLayout(out_row)
        orl.setContentsMargins(0, 0, 0, 0)
        orl.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
        self.output_var = self._watch(QLineEdit())
        self.output_var.setObjectName("outputVar")
        self.output_var.setPlaceholderText("none (name to store this node's output under)")
        self.output_var.setToolTip("The node's output is stored under this name: later nodes use it as {{name}}")
        self.output_var.textEdited.connect(lambda t: self._set("outputVar", t.strip() or None))
        orl.addRow("Output variable", self.output_var)
        self.output_var_row = out_row
        col.addWidget(out_row)
        self.policy = PolicySection(self._watch)
        self.policy.edited.connect(lambda field, value, merge: self._set(field, value, merge))
        col.addWidget(self.policy)
        self.available = AvailableNames()
        self.available.insert_requested.connect(self._insert_name)
        col.addWidget(self.available)

    def _host_data_flow(self) -> None:
        """The data-flow sections sit at the end of the page shown (moved there on each change)."""
        host = self.stack.currentWidget()
        if host is self._flow_host or host is None or host.layout() is None:
            return
        if self._flow_host is not None and self._flow_host.layout() is not None:
            self._flow_host.layout().removeWidget(self.flow_box)
        lay = host.layout()
        if isinstance(lay, QFormLayout):
            lay.addRow(self.flow_box)
        else:
            lay.addWidget(self.flow_box)
        self._flow_host = host
        self.flow_box.show()

    def _names_here(self) -> list[tuple[str, str]]:
        return available_names(self.doc.graph_index(), self.node_id)

    def _prompt_edits(self) -> list[PromptEdit]:
        return self.findChildren(PromptEdit)

    def _insert_name(self, name: str) -> None:
        target = self._last_prompt if self._last_prompt is not None and self._last_prompt.isVisible() else None
        if target is None:
            edits = [e for e in self._prompt_edits() if e.isVisible() and not e.isReadOnly()]
            target = edits[-1] if edits else None
        if target is not None:
            target.insert_variable("{{" + name + "}}")

    def _load_data_flow(self, node: Any) -> None:
        """outputVar, Policy and the names available at ``node`` (None: the workflow page)."""
        kind = node.type if node is not None else ""
        shows_output_var = node is not None and has_fields(kind, "outputVar")
        self.output_var_row.setVisible(shows_output_var)
        if shows_output_var:
            value = str(getattr(node.data, "outputVar", "") or "")
            if self.output_var.text() != value and not self.output_var.hasFocus():
                self.output_var.setText(value)
        shows_policy = node is not None and has_fields(kind, *POLICY_FIELDS)
        self.policy.setVisible(shows_policy)
        if shows_policy:
            self.policy.load(node.data)
        names = self._names_here() if node is not None else []
        self.available.setVisible(node is not None)
        self.available.set_names(names)
        known = frozenset(n for n, _ in names) if node is not None else None
        for edit in self._prompt_edits():
            edit.names_provider = self._names_here
            edit.highlighter.set_known(known)
        self._show_warnings()

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
        from .kind_pages import FlowToolsList

        self.agent_flows = FlowToolsList(lambda: list(self.library_flows()))
        self.agent_flows.edited.connect(lambda ids: self._set("tools.flows", ids, merge=False))
        tl.addWidget(self.agent_flows)
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
    def set_issues(self, issues: list[Any]) -> None:
        """The validator's issues: an unknown reference's tooltip in a prompt field is its warning."""
        self._issues = [i for i in issues if getattr(i, "code", "") == "unknown_reference"]
        self._show_warnings()

    def _show_warnings(self) -> None:
        mine = [i.message for i in getattr(self, "_issues", []) if self.node_id in i.node_ids]
        for edit in self._prompt_edits():
            edit.validator_warnings = mine

    def show_selection(self, ids: list[str]) -> None:
        if len(ids) == 1:
            self.show_node(ids[0])
        elif not ids:
            self.show_node(None)
        else:
            self.node_id = None
            self._load_data_flow(None)
            self.available.setVisible(False)
            self.header.setText(f"{len(ids)} nodes selected")
            self.multi_label.setText("Edit one node at a time. Delete, copy, duplicate or auto-layout "
                                     "apply to the whole selection.")
            self.stack.setCurrentWidget(self.pages["multi"])
            self._host_data_flow()

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
            self._load_data_flow(node)
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
            kind_page = self._kind_page(kind) if spec is not None and loader is None else None
            if kind_page is not None:
                self.header.setText(f"{spec.label or kind} · {node.id}")
                kind_page.load(node.data.model_dump())
                self.stack.setCurrentWidget(kind_page)
            elif loader is not None:
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
            self._host_data_flow()

    def _kind_page(self, kind: str) -> Any:
        """The hand-made page of ``kind`` (see :mod:`editor.panels.kind_pages`), or None."""
        page = self.kind_pages.get(kind)
        if page is None:
            from .kind_pages import make_kind_page

            page = make_kind_page(kind, self)
            if page is None:
                return None
            self.kind_pages[kind] = page
            self.stack.addWidget(page)
        return page

    def _form_for(self, spec: Any) -> Any:
        from .data_form import DataForm

        form = self.forms.get(spec.kind)
        if form is None or form.model is not spec.data_model:
            form = DataForm(spec.data_model, spec.label or spec.kind, self._watch,
                            exclude=("outputVar", *POLICY_FIELDS),  # shown by the data-flow sections
                            description=getattr(spec, "description", "") or "")
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
        self.agent_flows.load(getattr(d.tools, "flows", None))

    def _load_start(self, node: Any) -> None:
        self.header.setText(f"Start · {node.id}")
        self.start_input.set_text_keep_cursor(node.data.initialInput)
        self.variables_table.load([v.model_dump() if hasattr(v, "model_dump") else dict(v)
                                   for v in (getattr(node.data, "variables", None) or [])])

    def _load_if(self, node: Any) -> None:
        self.header.setText(f"Condition · {node.id}")
        self._sync_condition_rows([c.model_dump() for c in node.data.conditions])

    def _load_approval(self, node: Any) -> None:
        self.header.setText(f"Approval · {node.id}")
        self.approval_prompt.set_text_keep_cursor(node.data.prompt)


__all__ = ["InspectorPanel", "PromptEdit", "TemplateHighlighter", "PREVIOUS_OUTPUT"]
