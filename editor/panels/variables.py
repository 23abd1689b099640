"""The inspector's data-flow widgets: the Start node's variables table, the names a node can
use in its templates, and the Policy section of working nodes.

What the engine decides stays in the engine: which fields a kind has is asked of its spec's
data model (never of its kind name), template references are found by
``engine.find_references`` and the reference being typed by ``engine.template_completion``.

The widgets never write to the model. Each emits a request (a whole new value of the field it
edits, with a merge key for typing) and the inspector turns it into one document edit, so each
gesture is one undo step and typing in one cell merges into one.
"""

from __future__ import annotations

import json
from collections import deque
from typing import Any

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QSizePolicy,
    QSpinBox,
    QTableWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine import TEMPLATE_BUILTINS, GraphIndex, spec_for

from ..resources import icon_path

__all__ = [
    "VARIABLE_TYPES",
    "POLICY_FIELDS",
    "VariablesTable",
    "PolicySection",
    "AvailableNames",
    "available_names",
    "has_fields",
    "BUILTIN_HELP",
]

VARIABLE_TYPES = ("string", "number", "boolean", "json")
POLICY_FIELDS = ("errorMode", "maxRetries", "retryDelayMs", "timeoutMs")
ERROR_MODES = (("fail", "Fail"), ("skip", "Skip (go on)"), ("retry", "Retry"))

# What each built-in name holds (the variable view's tooltips and the completion list).
BUILTIN_HELP: dict[str, str] = {
    "PREVIOUS_OUTPUT": "the output that arrived at this node",
    "input": "the output that arrived at this node",
    "iteration": "the innermost loop's iteration, from 1",
    "item": "the current item of a loop over a list (its over field)",
    "APPROVAL_NOTE": "the note of the approval this branch passed most recently",
    "APPROVAL_DECISION": "approve or reject, of that approval",
    "__fanout": "the last join's list",
    "run": "run.id: this run's id",
    "workflow": "workflow.name: this workflow's name",
    "env": "env.NAME: an environment variable",
    "secrets": "secrets.NAME: a secret (environment or keyring), shown as ••••",
}
_COLUMNS = ("Name", "Default", "Type", "Req.")


def has_fields(kind: str, *fields: str) -> bool:
    """Whether the kind's data model declares every one of ``fields`` (the spec answers)."""
    spec = spec_for(kind)
    model_fields = getattr(getattr(spec, "data_model", None), "model_fields", {}) if spec is not None else {}
    return all(f in model_fields for f in fields)


def _variables_of(node: Any) -> list[dict[str, Any]]:
    raw = getattr(node.data, "variables", None) or []
    out = []
    for v in raw:
        d = v.model_dump() if hasattr(v, "model_dump") else dict(v) if isinstance(v, dict) else {}
        out.append(d)
    return out


def available_names(workflow_or_index: Any, node_id: str | None) -> list[tuple[str, str]]:
    """``(name, where it comes from)`` of every name a template at ``node_id`` can use: the Start
    node's declared variables, the ``outputVar`` of every node upstream of it (along execution
    links), then the built-ins. Without a node: every declared variable and output variable."""
    index = workflow_or_index if isinstance(workflow_or_index, GraphIndex) else GraphIndex(workflow_or_index)
    names: dict[str, str] = {}
    for node in index.nodes.values():
        spec = spec_for(node.type)
        if spec is not None and getattr(spec, "entry", False):
            for v in _variables_of(node):
                name = str(v.get("name") or "").strip()
                if name and name not in names:
                    kind = v.get("type") or "string"
                    names[name] = f"variable ({kind})" + (", required" if v.get("required") else "")
    if node_id is None:
        upstream = set(index.nodes)
    else:  # nodes that can run before this one: walk the execution links backwards
        upstream, todo = set(), deque(index.exec_in.get(node_id, ()))
        while todo:
            nid = todo.popleft()
            if nid in upstream:
                continue
            upstream.add(nid)
            todo.extend(index.exec_in.get(nid, ()))
    for nid in sorted(upstream):
        node = index.nodes.get(nid)
        var = str(getattr(node.data, "outputVar", "") or "").strip() if node is not None else ""
        if var and var not in names:
            names[var] = f"output of {node.title}" + ("" if node.title == nid else f" ({nid})")
    for name in sorted(TEMPLATE_BUILTINS, key=lambda n: (n.startswith("_"), n.lower())):
        names.setdefault(name, "built-in: " + BUILTIN_HELP.get(name, ""))
    return list(names.items())


class VariablesTable(QWidget):
    """The Start node's ``variables``: one entry per variable, edited in place.

    Each variable takes two lines of the table (the inspector is narrow): name, default value,
    type and required, then its description across the width.
    ``edited(variables, text, merge_key)``: the whole new list; ``merge_key`` is set for typing
    in a cell (consecutive keystrokes in that cell are one undo step), None for a gesture.
    """

    edited = Signal(list, str, object)

    def __init__(self, watch: Any = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._watch = watch or (lambda w: w)
        self._rows: list[dict[str, Any]] = []
        self._widgets: list[tuple[QLineEdit, QLineEdit, QComboBox, QCheckBox, QLineEdit]] = []
        self._loading = False
        self._pending_select: int | None = None
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        self.table = QTableWidget(0, len(_COLUMNS))
        self.table.setObjectName("variablesTable")
        self.table.setHorizontalHeaderLabels(list(_COLUMNS))
        self.table.horizontalHeaderItem(3).setToolTip("Required: a run without a value for it is refused")
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        head = self.table.horizontalHeader()
        head.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        head.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        head.setSectionResizeMode(2, QHeaderView.ResizeMode.ResizeToContents)
        head.setSectionResizeMode(3, QHeaderView.ResizeMode.ResizeToContents)
        self.table.setMinimumHeight(90)
        lay.addWidget(self.table)
        self.empty = QLabel("No variables: add one to give the run arguments.")
        self.empty.setObjectName("hint")
        self.empty.setWordWrap(True)  # a narrow pane wraps it (unwrapped it widened the Start page)
        lay.addWidget(self.empty)
        buttons = QHBoxLayout()
        self.add_button = QToolButton()
        self.add_button.setIcon(QIcon(icon_path("add")))
        self.add_button.setText("Add variable")
        self.add_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.add_button.clicked.connect(self.add_variable)
        self.remove_button = QToolButton()
        self.remove_button.setIcon(QIcon(icon_path("delete")))
        self.remove_button.setToolTip("Remove the selected variable")
        self.remove_button.clicked.connect(lambda: self.remove_variable(self.current_row()))
        self.up_button = QToolButton()
        self.up_button.setIcon(QIcon(icon_path("up")))
        self.up_button.setToolTip("Move the selected variable up")
        self.up_button.clicked.connect(lambda: self.move_variable(self.current_row(), -1))
        self.down_button = QToolButton()
        self.down_button.setIcon(QIcon(icon_path("down")))
        self.down_button.setToolTip("Move the selected variable down")
        self.down_button.clicked.connect(lambda: self.move_variable(self.current_row(), 1))
        buttons.addWidget(self.add_button)
        buttons.addStretch(1)
        for b in (self.up_button, self.down_button, self.remove_button):
            buttons.addWidget(b)
        lay.addLayout(buttons)
        self.table.itemSelectionChanged.connect(self._update_buttons)
        self._update_buttons()

    # ------------------------------------------------------------------ requests
    def count(self) -> int:
        return len(self._widgets)

    def current_row(self) -> int:
        rows = self.table.selectionModel().selectedRows()
        return rows[0].row() // 2 if rows else -1

    def select_variable(self, i: int) -> None:
        if 0 <= i < len(self._widgets):
            self.table.selectRow(2 * i)

    def add_variable(self) -> None:
        taken = {str(v.get("name")) for v in self._rows}
        n = 1
        while f"var{n}" in taken:
            n += 1
        rows = self._rows + [{"name": f"var{n}", "value": None, "description": "", "type": "string", "required": False}]
        self._pending_select = len(rows) - 1
        self.edited.emit(rows, "Add variable", None)

    def remove_variable(self, row: int) -> None:
        if 0 <= row < len(self._rows):
            rows = [dict(v) for i, v in enumerate(self._rows) if i != row]
            self._pending_select = min(row, len(rows) - 1)
            self.edited.emit(rows, "Remove variable", None)

    def move_variable(self, row: int, delta: int) -> None:
        j = row + delta
        if 0 <= row < len(self._rows) and 0 <= j < len(self._rows):
            rows = [dict(v) for v in self._rows]
            rows[row], rows[j] = rows[j], rows[row]
            self._pending_select = j
            self.edited.emit(rows, "Reorder variables", None)

    def set_cell(self, row: int, key: str, value: Any, merge: bool = True) -> None:
        if self._loading or not (0 <= row < len(self._rows)) or self._rows[row].get(key) == value:
            return
        rows = [dict(v) for v in self._rows]
        rows[row][key] = value
        self._rows = rows
        self.edited.emit(rows, f"Edit variable {key}", f"variables.{row}.{key}" if merge else None)

    # ------------------------------------------------------------------ showing
    def load(self, variables: list[dict[str, Any]]) -> None:
        self._loading = True
        try:
            self._rows = [dict(v) for v in variables]
            t = self.table
            while len(self._widgets) > len(self._rows):
                self._widgets.pop()
                t.removeRow(t.rowCount() - 1)
                t.removeRow(t.rowCount() - 1)
            while len(self._widgets) < len(self._rows):
                self._add_row_widgets()
            for i, v in enumerate(self._rows):
                name, value, kind, req, desc = self._widgets[i]
                _show(name, str(v.get("name") or ""))
                shown = _value_text(v.get("value"))
                if value.text() != shown and not value.hasFocus():
                    value.setText(shown)
                    value.setCursorPosition(0)
                value.setToolTip(
                    f"Default: {shown}" if shown else "No default value (coerced to the type when a run starts)"
                )
                kind.setCurrentIndex(max(0, kind.findData(v.get("type") or "string")))
                req.setChecked(bool(v.get("required")))
                _show(desc, str(v.get("description") or ""))
            if self._pending_select is not None:
                self.select_variable(self._pending_select)
            self._pending_select = None
            self.table.setVisible(bool(self._rows))
            self.empty.setVisible(not self._rows)
            height = self.table.horizontalHeader().height() + sum(t.rowHeight(r) for r in range(t.rowCount())) + 6
            self.table.setFixedHeight(max(90, min(height, 330)))
        finally:
            self._loading = False
        self._update_buttons()

    def _cells(self, row: int) -> tuple[QLineEdit, QLineEdit, QComboBox, QCheckBox, QLineEdit]:
        return self._widgets[row]

    def _row_of(self, widget: QWidget) -> int:
        for i, cells in enumerate(self._widgets):
            if widget in cells:
                return i
        return -1

    def _add_row_widgets(self) -> None:
        t = self.table
        row = t.rowCount()
        t.insertRow(row)
        t.insertRow(row + 1)
        name = self._watch(QLineEdit())
        name.setPlaceholderText("name")
        name.textEdited.connect(lambda text, w=name: self.set_cell(self._row_of(w), "name", text.strip()))
        value = self._watch(QLineEdit())
        value.setPlaceholderText("no default")
        value.setToolTip("The default value (coerced to the type when a run starts)")
        value.textEdited.connect(lambda text, w=value: self.set_cell(self._row_of(w), "value", text or None))
        kind = QComboBox()
        for k in VARIABLE_TYPES:
            kind.addItem(k, k)
        kind.currentIndexChanged.connect(
            lambda _i, w=kind: self.set_cell(self._row_of(w), "type", w.currentData(), merge=False)
        )
        box = QWidget()
        bl = QHBoxLayout(box)
        bl.setContentsMargins(0, 0, 0, 0)
        bl.setAlignment(Qt.AlignmentFlag.AlignCenter)
        req = QCheckBox()
        req.setToolTip("Required: a run without a value for it is refused")
        req.toggled.connect(lambda on, w=req: self.set_cell(self._row_of(w), "required", on, merge=False))
        bl.addWidget(req)
        desc = self._watch(QLineEdit())
        desc.setPlaceholderText("description: what it is for")
        desc.textEdited.connect(lambda text, w=desc: self.set_cell(self._row_of(w), "description", text))
        for col, w in enumerate((name, value, kind, box)):
            t.setCellWidget(row, col, w)
        t.setSpan(row + 1, 0, 1, len(_COLUMNS))
        t.setCellWidget(row + 1, 0, desc)
        for w in (name, value, kind, req, desc):
            w.installEventFilter(self)  # focusing a cell selects its variable
        self._widgets.append((name, value, kind, req, desc))
        t.resizeRowToContents(row)
        t.resizeRowToContents(row + 1)

    def eventFilter(self, obj: Any, event: Any) -> bool:

        if event.type() == QEvent.Type.FocusIn and isinstance(obj, QWidget):
            r = self._row_of(obj)
            if r >= 0 and self.current_row() != r:
                self.select_variable(r)
        return False

    def _update_buttons(self) -> None:
        row = self.current_row()
        self.remove_button.setEnabled(row >= 0)
        self.up_button.setEnabled(row > 0)
        self.down_button.setEnabled(0 <= row < len(self._rows) - 1)


def _show(edit: QLineEdit, text: str) -> None:
    # The model trims names and descriptions: a space just typed at the end is kept on screen.
    if edit.text() != text and not (edit.hasFocus() and edit.text().strip() == text):
        edit.setText(text)
        if not edit.hasFocus():
            edit.setCursorPosition(0)  # a long value shows its start, not its tail


def _value_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value

    return json.dumps(value, ensure_ascii=False)


class PolicySection(QFrame):
    """errorMode, maxRetries, retryDelayMs and timeoutMs of a working node.

    ``edited(field, value, merge)`` for each change; spin boxes merge while they are held.
    """

    edited = Signal(str, object, bool)

    def __init__(self, watch: Any = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("policySection")
        watch = watch or (lambda w: w)
        self._loading = False
        form = QFormLayout(self)
        form.setContentsMargins(0, 4, 0, 0)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        title = QLabel("Policy")
        title.setObjectName("inspectorTitle")
        form.addRow(title)
        self.error_mode = QComboBox()
        self.error_mode.setObjectName("policy-errorMode")
        self.error_mode.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        for value, label in ERROR_MODES:
            self.error_mode.addItem(label, value)
        self.error_mode.setToolTip(
            "What happens when a step of this node fails. Whatever the mode, a link "
            "from the node's error port is followed when it finally fails."
        )
        self.error_mode.currentIndexChanged.connect(self._mode_changed)
        self.max_retries = watch(self._spin(0, 100, "", "policy-maxRetries"))
        self.max_retries.setToolTip(
            "Attempts after the first one (retry mode); the provider's own HTTP retries "
            "are then off, so these are the only ones"
        )
        self.retry_delay = watch(self._spin(0, 3_600_000, " ms", "policy-retryDelayMs", 100))
        self.retry_delay.setToolTip("Wait before the first retry; it doubles for each next one")
        self.timeout = watch(self._spin(0, 86_400_000, " ms", "policy-timeoutMs", 1000))
        self.timeout.setSpecialValueText("no time limit")
        self.timeout.setToolTip("One attempt is cancelled after this long and fails with 'timed out'")
        self.max_retries.valueChanged.connect(lambda v: self._emit("maxRetries", v))
        self.retry_delay.valueChanged.connect(lambda v: self._emit("retryDelayMs", v))
        self.timeout.valueChanged.connect(lambda v: self._emit("timeoutMs", v or None))
        form.addRow("On error", self.error_mode)
        form.addRow("Retries", self.max_retries)
        form.addRow("Retry delay", self.retry_delay)
        form.addRow("Timeout", self.timeout)
        self.hint = QLabel()
        self.hint.setObjectName("hint")
        self.hint.setWordWrap(True)
        form.addRow(self.hint)

    @staticmethod
    def _spin(low: int, high: int, suffix: str, name: str, step: int = 1) -> QSpinBox:
        w = QSpinBox()
        w.setRange(low, high)
        w.setSuffix(suffix)
        w.setSingleStep(step)
        w.setObjectName(name)
        w.setKeyboardTracking(False)
        return w

    def _mode_changed(self, _i: int) -> None:
        self._update_enabled()
        self._emit("errorMode", self.error_mode.currentData(), merge=False)

    def _update_enabled(self) -> None:
        retry = self.error_mode.currentData() == "retry"
        self.max_retries.setEnabled(retry)
        self.retry_delay.setEnabled(retry)
        mode = self.error_mode.currentData()
        self.hint.setText(
            {
                "fail": "A failure fails the node; with a link from its error port, the run follows that link instead.",
                "skip": "A failure is logged and the branch goes on with an empty output.",
                "retry": f"Up to {self.max_retries.value()} more attempts, waiting {self.retry_delay.value()} ms "
                "before the first (doubling); then the node fails. These are the only retries: a model "
                f"provider's own HTTP retries are off for this node (at most {self.max_retries.value() + 1} "
                "requests).",
            }.get(mode, "")
        )

    def _emit(self, field: str, value: Any, merge: bool = True) -> None:
        self._update_enabled()
        if not self._loading:
            self.edited.emit(field, value, merge)

    def load(self, data: Any) -> None:
        self._loading = True
        try:
            get = (lambda k: data.get(k)) if isinstance(data, dict) else (lambda k: getattr(data, k, None))
            self.error_mode.setCurrentIndex(max(0, self.error_mode.findData(get("errorMode") or "fail")))
            retries = get("maxRetries")
            self.max_retries.setValue(3 if retries is None else int(retries))
            delay = get("retryDelayMs")
            self.retry_delay.setValue(1000 if delay is None else int(delay))
            self.timeout.setValue(int(get("timeoutMs") or 0))
            self._update_enabled()
        finally:
            self._loading = False


class AvailableNames(QWidget):
    """The names a template at the selected node can use; double-click inserts ``{{name}}``."""

    insert_requested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        # Both reference forms work the same (an imported TypeAgent step keeps its ${…}): the
        # title says so on its own line (a line more would push the page past the pane's height).
        title = QLabel("Variables here")
        title.setObjectName("inspectorTitle")
        title.setToolTip("Use a name as {{name}} or ${name} in any field: both work the same")
        title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # never widens the pane
        lay.addWidget(title)
        # The title alone fits a narrow pane; the two forms are said below it (cut off there before).
        forms = self.forms = QLabel(self.FORMS)
        forms.setWordWrap(True)
        forms.setStyleSheet("color: #8b949e;")
        forms.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        lay.addWidget(forms)
        self.list = QListWidget()
        self.list.setObjectName("availableNames")
        self.list.setToolTip(
            "Double-click to insert {{name}} in the prompt being edited ({{name}} and ${name} both "
            "work; Ctrl+Space completes names)"
        )
        self.list.itemActivated.connect(lambda item: self.insert_requested.emit(item.data(Qt.ItemDataRole.UserRole)))
        self.list.setMaximumHeight(160)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        lay.addWidget(self.list)

    FORMS = "Write {{name}} or ${name}: both work."
    #: A kind whose source runs as written (code, scripts): templates work in its other fields only.
    FORMS_VERBATIM = "Write {{name}} or ${name} in fields other than the {fields}, which runs as written."

    def set_verbatim(self, fields: tuple[str, ...]) -> None:
        """Say where templates work on this node's page: not in ``fields`` (its source code)."""
        text = self.FORMS_VERBATIM.replace("{fields}", " and ".join(fields)) if fields else self.FORMS
        if self.forms.text() != text:
            self.forms.setText(text)

    def set_names(self, names: list[tuple[str, str]]) -> None:
        if [(n, w) for n, w in names] == getattr(self, "_names", None):
            return
        self._names = list(names)
        self.list.clear()
        for name, where in names:
            item = QListWidgetItem(f"{name}  —  {where}")
            item.setData(Qt.ItemDataRole.UserRole, name)
            item.setToolTip(f"{{{{{name}}}}}: {where}")
            self.list.addItem(item)

    def names(self) -> list[str]:
        return [n for n, _ in getattr(self, "_names", [])]

    def names_with_origin(self) -> list[tuple[str, str]]:
        return list(getattr(self, "_names", []))
