"""Inspector: the selected node's page, editing its ``data`` through the document.

Which page a kind gets is one table (:data:`~editor.panels.inspector_pages.INSPECTOR_PAGES`):
a registered page, else a form generated from the kind's data model. Below any page sit
the data-flow sections the kind's spec asks for (output variable, step policy, the names
available at the node). With no node selected the workflow's own page shows; with several,
a line saying so.

Every widget edit becomes a document request (one undo step; typing in a field merges into
one step until the field loses focus). When the document changes (undo, canvas edits) the
page reloads from the model; ``loading`` stops that reload from echoing back as an edit.
Pages are made on first use, one per kind.
"""

from __future__ import annotations

import os
from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent, QKeySequence
from PySide6.QtWidgets import (
    QFormLayout,
    QFrame,
    QLabel,
    QLineEdit,
    QScrollArea,
    QSizePolicy,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from engine import NodeSpec, spec_for

from ..editing import WorkflowDocument
from .core_pages import form_page, hint_label
from .data_form import DataForm
from .inspector_pages import page_factory
from .permissions import PermissionsEditor
from .prompt_edit import PREVIOUS_OUTPUT, TEMPLATE_RE, PromptEdit, TemplateHighlighter, title_label
from .triggers import TriggersEditor
from .variables import POLICY_FIELDS, AvailableNames, PolicySection, available_names, has_fields

__all__ = ["InspectorPanel", "PromptEdit", "TemplateHighlighter", "PREVIOUS_OUTPUT", "TEMPLATE_RE"]


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
        elif (
            event.type() == QEvent.Type.ShortcutOverride
            and isinstance(event, QKeyEvent)
            and (
                event.matches(QKeySequence.StandardKey.Undo)
                or event.matches(QKeySequence.StandardKey.Redo)
                or (
                    event.key() == Qt.Key.Key_Z
                    and event.modifiers() == (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
                )
            )
        ):
            event.ignore()  # not overridden: the window's Undo/Redo shortcut fires
            return True
        return False


class InspectorPanel(QWidget):
    """The Inspector dock's content: a stack of pages, one shown (see the module doc)."""

    status_message = Signal(str)
    open_flow_requested = Signal(str)  # a flow node's "Open this flow": its ``flow`` reference
    run_node_requested = Signal(str)  # a page's "Run this node…": the node id

    def __init__(self, document: WorkflowDocument, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("inspector")
        self.doc = document
        self.node_id: str | None = None
        self.loading = False
        self._focus_out = _FocusOut(document)
        self._last_prompt: PromptEdit | None = None
        self._issues: list[Any] = []
        self._run_errors: dict[str, str] = {}  # node id -> its error in the run shown (set by the window)
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
        # Pages by name: "workflow", "multi", and each kind's registered page once made.
        self.pages: dict[str, QWidget] = {}
        self._build_workflow_page()
        self._build_multi_page()
        self.forms: dict[str, DataForm] = {}  # generated forms, by kind (made on first use)
        self.library_flows: Any = list  # () -> the library's flows; the window sets it
        document.node_data_changed.connect(self._on_data_changed)
        document.node_removed.connect(self._on_node_removed)
        document.workflow_reset.connect(lambda: self.show_node(None))
        document.meta_changed.connect(self._on_meta_changed)
        self.show_node(None)
        self._fit_to_page()  # (the first page shown changes no index: nothing else fits the stack to it)

    # ------------------------------------------------------------------ what pages use (PageHost)
    def edit_field(self, field: str, value: Any, merge: bool = True) -> None:
        if self.loading or self.node_id is None:
            return
        self.doc.set_node_field(self.node_id, field, value, merge)

    def watch(self, w: QWidget) -> QWidget:
        w.installEventFilter(self._focus_out)
        if isinstance(w, PromptEdit):
            w.installEventFilter(self)
        return w

    def bind_text(self, widget: QWidget, field: str) -> None:
        self.watch(widget)
        if isinstance(widget, QLineEdit):
            widget.textEdited.connect(lambda text: self.edit_field(field, text))
        elif isinstance(widget, PromptEdit):
            # A read-only preview of a long text is never written back over the text itself.
            widget.textChanged.connect(
                lambda: (
                    None
                    if getattr(widget, "_shows_preview", None) is not None
                    else self.edit_field(field, widget.toPlainText())
                )
            )

    def open_flow(self, ref: str) -> None:
        self.open_flow_requested.emit(ref)

    def request_run_node(self, node_id: str) -> None:
        self.run_node_requested.emit(node_id)

    def run_errors(self) -> dict[str, str]:
        return dict(self._run_errors)

    def run_error(self, node_id: str) -> str | None:
        """The error of ``node_id`` in the run shown on the canvas (the run state's), if it failed."""
        return self._run_errors.get(node_id)

    def set_run_errors(self, errors: dict[str, str]) -> None:
        """The failed nodes of the run shown (``RunState.errors``); the page shown marks its own."""
        errors = dict(errors)
        if errors == self._run_errors:
            return
        changed = self.node_id is not None and errors.get(self.node_id) != self._run_errors.get(self.node_id)
        self._run_errors = errors
        if changed:
            self._load()

    # (the names the window and older callers use)
    _set = edit_field
    _watch = watch

    def page(self, kind: str) -> QWidget | None:
        """The registered page of ``kind`` (made on first use), or None: the kind has none."""
        page = self.pages.get(kind)
        if page is None:
            factory = page_factory(kind)
            if factory is None:
                return None
            page = self.pages[kind] = factory(self)
            self.stack.addWidget(page)
        return page

    # ------------------------------------------------------------------ layout
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

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.FocusIn and isinstance(obj, PromptEdit):
            self._last_prompt = obj  # where the variable view inserts a name
        return False

    def _build_workflow_page(self) -> None:
        page = self.pages["workflow"] = QWidget()
        self.stack.addWidget(page)
        form = form_page(page)
        self.wf_name = self.watch(QLineEdit())
        self.wf_desc = self.watch(PromptEdit("What this workflow does"))
        self.wf_name.textEdited.connect(lambda t: None if self.loading else self.doc.set_info(name=t))
        self.wf_desc.textChanged.connect(
            lambda: None if self.loading else self.doc.set_info(description=self.wf_desc.toPlainText())
        )
        form.addRow(title_label("Workflow"))
        form.addRow("Name", self.wf_name)
        form.addRow("Description", self.wf_desc)
        self.wf_triggers = TriggersEditor()
        self.watch(self.wf_triggers.edit)
        self.wf_triggers.patterns_edited.connect(lambda p: None if self.loading else self.doc.set_triggers(p))
        form.addRow("Trigger phrases", self.wf_triggers)
        self.wf_permissions = PermissionsEditor(lambda: os.path.dirname(self.doc.path or ""))
        self.wf_permissions.permissions_edited.connect(
            lambda value: None if self.loading else self.doc.set_permissions(value)
        )
        form.addRow(title_label("Permissions"))
        form.addRow(self.wf_permissions)
        form.addRow(
            hint_label("Select a node to edit it. Drag node types from the palette; drag from a handle to link.")
        )

    def _build_multi_page(self) -> None:
        page = self.pages["multi"] = QWidget()
        self.stack.addWidget(page)
        self.multi_label = QLabel()
        self.multi_label.setWordWrap(True)
        form_page(page).addRow(self.multi_label)

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
        self.output_var = self.watch(QLineEdit())
        self.output_var.setObjectName("outputVar")
        self.output_var.setPlaceholderText("none (name to store this node's output under)")
        self.output_var.setToolTip(
            "The node's output is stored under this name: later nodes use it as {{name}} or ${name} (both work)"
        )
        self.output_var.textEdited.connect(lambda t: self.edit_field("outputVar", t.strip() or None))
        orl.addRow("Output variable", self.output_var)
        self.output_var_row = out_row
        col.addWidget(out_row)
        self.policy = PolicySection(self._watch)
        self.policy.edited.connect(self.edit_field)
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
            # a page that edits the timeout itself (the code page's limits): not shown twice
            owned = getattr(self.pages.get(kind), "owns_fields", ())
            policy_form = self.policy.layout()
            if isinstance(policy_form, QFormLayout):
                policy_form.setRowVisible(self.policy.timeout, "timeoutMs" not in owned)
        names = self._names_here() if node is not None else []
        self.available.setVisible(node is not None)
        spec = spec_for(kind) if node is not None else None
        self.available.set_verbatim(spec.verbatim if spec is not None else ())
        self.available.set_names(names)
        known = frozenset(n for n, _ in names) if node is not None else None
        for edit in self._prompt_edits():
            edit.names_provider = self._names_here
            edit.highlighter.set_known(known)
        self._show_warnings()

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
            self.multi_label.setText(
                "Edit one node at a time. Delete, copy, duplicate or auto-layout apply to the whole selection."
            )
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
        self.loading = True
        try:
            node = self.doc.node(self.node_id) if self.node_id else None
            if node is None:
                self._load_data_flow(None)
                self._load_workflow()
                return
            kind = node.type
            spec = spec_for(kind)
            if spec is None and page_factory(kind) is not None:
                # A page but no kind (an engine that does not register it yet): the page edits
                # the node's data as the plain data the file has.
                page = self.page(kind)
                self._load_data_flow(node)
                heading = getattr(page, "heading", None)
                self.header.setText(heading(node) if heading is not None else f"{kind} · {node.id}")
                page.load(node.data.model_dump())  # type: ignore[union-attr]
                self.stack.setCurrentWidget(page)
                return
            if spec is None:
                self._load_data_flow(node)
                self.header.setText(f"{kind} · {node.id}")
                self.multi_label.setText(f"Nodes of type '{kind}' have no editable fields.")
                self.stack.setCurrentWidget(self.pages["multi"])
                return
            page = self.page(kind)
            if page is None:  # no page registered: the form generated from the kind's data model
                form = self._form_for(spec)
                self._load_data_flow(node)
                self.header.setText(f"{spec.label or kind} · {node.id}")
                form.load(node.data)
                self.stack.setCurrentWidget(form)
                return
            self._load_data_flow(node)  # (after the page is made: its prompt boxes learn the names)
            heading = getattr(page, "heading", None)
            self.header.setText(heading(node) if heading is not None else f"{spec.label or kind} · {node.id}")
            page.load(node.data.model_dump())  # type: ignore[attr-defined]
            self.stack.setCurrentWidget(page)
        finally:
            self.loading = False
            self._host_data_flow()

    def _load_workflow(self) -> None:
        wf = self.doc.workflow
        self.header.setText("Workflow")
        if self.wf_name.text() != (wf.name or ""):
            self.wf_name.setText(wf.name or "")
        self.wf_desc.set_text_keep_cursor(wf.description or "")
        triggers = getattr(wf, "triggers", None)
        if triggers is None:
            triggers = (wf.model_extra or {}).get("triggers")
        self.wf_triggers.set_patterns(list(triggers) if isinstance(triggers, list) else [])
        perms = getattr(wf, "permissions", None)
        self.wf_permissions.load(perms.model_dump(exclude_none=True) if perms is not None else None)
        self.stack.setCurrentWidget(self.pages["workflow"])

    def _form_for(self, spec: NodeSpec) -> DataForm:
        form = self.forms.get(spec.kind)
        if form is None or form.model is not spec.data_model:
            form = DataForm(
                spec.data_model,
                spec.label or spec.kind,
                self.watch,
                exclude=("outputVar", *POLICY_FIELDS),  # shown by the data-flow sections
                description=getattr(spec, "description", "") or "",
            )
            form.edited.connect(self.edit_field)
            self.forms[spec.kind] = form
            self.stack.addWidget(form)
        return form
