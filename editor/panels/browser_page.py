"""The ``browser`` node's inspector page: its steps in a table (action, selector, value,
timeout) with add, remove and move up/down, its scope, and its WebFlow script when it has one.

Every change is one document edit (``doc.edit_node_data``), so one undo step; typing in a cell
commits when the cell is left, as in the router's routes table.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QWidget,
)

from ..resources import icon_path
from .core_pages import form_page, hint_label
from .inspector_host import PageHost
from .prompt_edit import title_label

__all__ = ["BrowserPage"]

_COLUMNS = ("action", "selector", "value", "timeoutMs")
# The kind's actions (docs/nodes.md, "browser"), in the order the engine lists them.
STEP_ACTIONS = (
    "goto",
    "click",
    "type",
    "select",
    "press",
    "waitFor",
    "extractText",
    "extractAttribute",
    "extractTable",
    "screenshot",
)


def _steps_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [dict(s) for s in data.get("steps") or [] if isinstance(s, dict)]


def _cell_text(step: dict[str, Any], key: str) -> str:
    value = step.get(key)
    if value is None and key == "value" and step.get("action") == "goto":
        value = step.get("url")
    return "" if value is None else str(value)


class BrowserPage(QWidget):
    """Steps (action / selector / value / timeout), scope (site domains or global), script."""

    def __init__(self, host: PageHost) -> None:
        super().__init__()
        self.host = host
        self._filling = False
        form = form_page(self)
        form.addRow(title_label("Browser"))
        form.addRow(
            hint_label(
                "Steps run in order in a fresh browser; the output is what the extract steps "
                "returned. Values may use {{variables}}."
            )
        )
        self.table = QTableWidget(0, len(_COLUMNS))
        self.table.setObjectName("browserSteps")
        self.table.setHorizontalHeaderLabels(["Action", "Selector", "Value", "ms"])
        self.table.horizontalHeaderItem(1).setToolTip("The element's CSS selector, e.g. #user or form button")
        self.table.horizontalHeaderItem(2).setToolTip(
            "goto: the URL · type: the text · select: the option · press: the key · "
            "extractAttribute: the attribute · waitFor: a load state or ms · screenshot: full"
        )
        self.table.horizontalHeaderItem(3).setToolTip("This step's timeout in milliseconds (empty: 30,000)")
        self.table.verticalHeader().setVisible(False)
        header = self.table.horizontalHeader()
        # the action and the timeout narrow, the selector and the value share the rest
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Fixed)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(2, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Fixed)
        self.table.setColumnWidth(0, 118)
        self.table.setColumnWidth(3, 56)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setMinimumHeight(180)
        host.watch(self.table)
        self.table.itemChanged.connect(self._cell_edited)
        form.addRow(self.table)
        buttons = QWidget()
        row = QHBoxLayout(buttons)
        row.setContentsMargins(0, 0, 0, 0)
        self.add_button = QPushButton(QIcon(icon_path("add")), "Add step")
        self.add_button.clicked.connect(self.add_step)
        self.up, self.down, self.remove = QToolButton(), QToolButton(), QToolButton()
        for button, icon, tip in (
            (self.up, "up", "Move the selected step up"),
            (self.down, "down", "Move the selected step down"),
            (self.remove, "delete", "Remove the selected step"),
        ):
            button.setIcon(QIcon(icon_path(icon)))
            button.setToolTip(tip)
        self.up.clicked.connect(lambda _=False: self.move_step(self.table.currentRow(), -1))
        self.down.clicked.connect(lambda _=False: self.move_step(self.table.currentRow(), 1))
        self.remove.clicked.connect(lambda _=False: self.remove_step(self.table.currentRow()))
        row.addWidget(self.add_button)
        row.addStretch(1)
        for b in (self.up, self.down, self.remove):
            row.addWidget(b)
        form.addRow(buttons)
        self.scope_type = QComboBox()
        self.scope_type.setObjectName("browserScopeType")
        self.scope_type.addItem("Any site (global)", "global")
        self.scope_type.addItem("Only these sites", "site")
        self.scope_type.activated.connect(lambda _i: self._scope_edited())
        form.addRow("Scope", self.scope_type)
        self.domains = QLineEdit()
        self.domains.setObjectName("browserScopeDomains")
        self.domains.setPlaceholderText("example.com, docs.example.org (subdomains included)")
        self.domains.editingFinished.connect(self._scope_edited)
        form.addRow("Domains", self.domains)
        self.script = QPlainTextEdit()
        self.script.setObjectName("browserScript")
        self.script.setPlaceholderText("async function execute(browser, params) { … }")
        self.script.setMinimumHeight(160)
        host.bind_text(self.script, "script")
        self.script_title = title_label("WebFlow script")
        form.addRow(self.script_title)
        form.addRow(self.script)
        self.table.currentCellChanged.connect(lambda *_a: self._enable_buttons())

    def heading(self, node: Any) -> str:
        return f"Browser · {node.id}"

    # ------------------------------------------------------------------ showing
    def load(self, data: dict[str, Any]) -> None:
        steps = _steps_of(data)
        self._filling = True
        try:
            current = self.table.currentRow()
            self.table.setRowCount(len(steps))
            for i, step in enumerate(steps):
                combo = self.table.cellWidget(i, 0)
                if not isinstance(combo, QComboBox):
                    combo = QComboBox()
                    combo.addItems(list(STEP_ACTIONS))
                    combo.activated.connect(lambda _x, c=combo: self._action_chosen(c))
                    self.table.setCellWidget(i, 0, combo)
                action = str(step.get("action") or "")
                if combo.findText(action) < 0 and action:
                    combo.addItem(action)
                combo.setCurrentText(action)
                for col, key in enumerate(_COLUMNS[1:], 1):
                    item = self.table.item(i, col)
                    if item is None:
                        item = QTableWidgetItem()
                        self.table.setItem(i, col, item)
                    text = _cell_text(step, key)
                    if item.text() != text:
                        item.setText(text)
                        item.setToolTip(text)  # the narrow inspector cuts a URL or a selector short
            if steps and not (0 <= current < len(steps)):
                self.table.setCurrentCell(0, 1)
            scope = data.get("scope") if isinstance(data.get("scope"), dict) else {}
            kind = "site" if (scope or {}).get("type") == "site" else "global"
            self.scope_type.setCurrentIndex(self.scope_type.findData(kind))
            text = ", ".join(str(d) for d in (scope or {}).get("domains") or [])
            if self.domains.text() != text:
                self.domains.setText(text)
            self.domains.setEnabled(kind == "site")
            script = str(data.get("script") or "")
            if self.script.toPlainText() != script:
                self.script.setPlainText(script)
            has_script = bool(script.strip())
            self.script.setVisible(has_script)
            self.script_title.setVisible(has_script)
        finally:
            self._filling = False
        self._enable_buttons()

    def _enable_buttons(self) -> None:
        i, n = self.table.currentRow(), self.table.rowCount()
        self.up.setEnabled(0 < i < n)
        self.down.setEnabled(0 <= i < n - 1)
        self.remove.setEnabled(0 <= i < n)

    # ------------------------------------------------------------------ editing
    def _data(self) -> dict[str, Any] | None:
        node = self.host.doc.node(self.host.node_id or "")
        return node.data.model_dump() if node is not None else None

    def _write(self, data: dict[str, Any], what: str) -> None:
        self.host.doc.end_merge()
        self.host.doc.edit_node_data(self.host.node_id, data, what)

    def _set_steps(self, steps: list[dict[str, Any]], what: str) -> None:
        data = self._data()
        if data is None:
            return
        data["steps"] = steps
        self._write(data, what)

    def _cell_edited(self, item: QTableWidgetItem) -> None:
        if self._filling or self.host.loading or self.host.node_id is None:
            return
        data = self._data()
        if data is None:
            return
        steps = _steps_of(data)
        i, key = item.row(), _COLUMNS[item.column()]
        if i >= len(steps) or _cell_text(steps[i], key) == item.text():
            return
        text = item.text().strip() if key == "timeoutMs" else item.text()
        if key == "timeoutMs":
            if not text:
                steps[i].pop("timeoutMs", None)
            elif text.isdigit():
                steps[i]["timeoutMs"] = int(text)
            else:
                self.load(data)  # not a number: the cell goes back to what the step says
                return
        elif text == "":
            steps[i].pop(key, None)
        else:
            steps[i][key] = text
            if key == "value":
                steps[i].pop("url", None)
        self._set_steps(steps, f"steps.{i}.{key}")

    def _action_chosen(self, combo: QComboBox) -> None:
        if self._filling or self.host.node_id is None:
            return
        for i in range(self.table.rowCount()):
            if self.table.cellWidget(i, 0) is combo:
                data = self._data()
                if data is None:
                    return
                steps = _steps_of(data)
                if i < len(steps) and steps[i].get("action") != combo.currentText():
                    steps[i]["action"] = combo.currentText()
                    self._set_steps(steps, f"steps.{i}.action")
                return

    def add_step(self) -> None:
        data = self._data()
        if data is None:
            return
        steps = _steps_of(data)
        steps.append({"action": "click", "selector": ""} if steps else {"action": "goto", "value": ""})
        self._set_steps(steps, "Add step")
        self.table.setCurrentCell(len(steps) - 1, 1)

    def remove_step(self, i: int) -> None:
        data = self._data()
        steps = _steps_of(data) if data is not None else []
        if not (0 <= i < len(steps)):
            return
        del steps[i]
        self._set_steps(steps, "Remove step")
        if steps:
            self.table.setCurrentCell(min(i, len(steps) - 1), 1)

    def move_step(self, i: int, by: int) -> None:
        data = self._data()
        steps = _steps_of(data) if data is not None else []
        j = i + by
        if not (0 <= i < len(steps) and 0 <= j < len(steps)):
            return
        steps[i], steps[j] = steps[j], steps[i]
        self._set_steps(steps, "Move step")
        self.table.setCurrentCell(j, 1)

    def _scope_edited(self) -> None:
        if self._filling or self.host.loading or self.host.node_id is None:
            return
        data = self._data()
        if data is None:
            return
        kind = self.scope_type.currentData()
        domains = [d.strip() for d in self.domains.text().replace(";", ",").split(",") if d.strip()]
        scope = (
            {"type": kind, "domains": domains}
            if kind == "site"
            else ({"type": "global"} if data.get("scope") else None)
        )
        if scope == data.get("scope"):
            self.domains.setEnabled(kind == "site")
            return
        if scope is None:
            data.pop("scope", None)
        else:
            data["scope"] = scope
        self._write(data, "scope")
