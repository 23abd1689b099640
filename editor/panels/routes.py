"""The ``router`` node's inspector page: its routes ``{label, description}`` in a table.

A router (DESIGN.md "Conditions, routing and structured answers") lets a model pick the branch:
route ``i`` owns the output handle ``route-<i>``, and ``false`` is taken when the model's choice
is none of the labels. The page also sets that model (empty: the provider's default) and extra
instructions for it (``systemPrompt``). The page reads and writes the node's data as plain data, so it works
the same on a node whose kind the engine does not register (yet): nothing here asks the kind.

Editing a cell is one document edit (typing merges into one undo step, per cell); adding,
removing and moving a route go through :meth:`WorkflowDocument.set_branches`, so a route's
links move with it and go when it goes, in the same undo step. The node's handles are the
kind's (``outputs(data)``): they follow the labels as soon as the data changes.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QWidget,
)

from ..resources import icon_path
from .core_pages import form_page, hint_label, model_combo
from .inspector_host import PageHost
from .prompt_edit import PromptEdit, title_label

__all__ = ["RouterPage", "ROUTE_PREFIX"]

ROUTE_PREFIX = "route-"
_COLUMNS = ("label", "description")


def _routes_of(data: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for r in data.get("routes") or []:
        if isinstance(r, dict):
            out.append({**r, "label": str(r.get("label") or ""), "description": str(r.get("description") or "")})
        elif isinstance(r, str):  # a bare label (hand-written file): kept, shown as a route
            out.append({"label": r, "description": ""})
    return out


class RouterPage(QWidget):
    """Routes in a table (label, description), with add, remove and move up/down."""

    def __init__(self, host: PageHost) -> None:
        super().__init__()
        self.host = host
        self._filling = False
        form = form_page(self)
        form.addRow(title_label("Router"))
        form.addRow(
            hint_label(
                "A model reads the previous output and picks one route by its label; each route "
                "has its own branch. A choice that is none of them follows Else."
            )
        )
        self.table = QTableWidget(0, 2)
        self.table.setObjectName("routesTable")
        self.table.setHorizontalHeaderLabels(["Label", "When to take it"])
        self.table.verticalHeader().setVisible(False)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Stretch)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setMinimumHeight(140)
        host.watch(self.table)
        self.table.itemChanged.connect(self._cell_edited)
        form.addRow(self.table)
        buttons = QWidget()
        row = QHBoxLayout(buttons)
        row.setContentsMargins(0, 0, 0, 0)
        self.add_button = QPushButton(QIcon(icon_path("add")), "Add route")
        self.add_button.clicked.connect(self.add_route)
        self.up, self.down, self.remove = QToolButton(), QToolButton(), QToolButton()
        for button, icon, tip in (
            (self.up, "up", "Move the selected route up"),
            (self.down, "down", "Move the selected route down"),
            (self.remove, "delete", "Remove the selected route (its link goes too)"),
        ):
            button.setIcon(QIcon(icon_path(icon)))
            button.setToolTip(tip)
        self.up.clicked.connect(lambda _=False: self.move_route(self.table.currentRow(), -1))
        self.down.clicked.connect(lambda _=False: self.move_route(self.table.currentRow(), 1))
        self.remove.clicked.connect(lambda _=False: self.remove_route(self.table.currentRow()))
        row.addWidget(self.add_button)
        row.addStretch(1)
        for b in (self.up, self.down, self.remove):
            row.addWidget(b)
        form.addRow(buttons)
        self.problem = QLabel()
        self.problem.setObjectName("routesProblem")
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet("color: #c0392b;")
        form.addRow(self.problem)
        self.table.currentCellChanged.connect(lambda *_a: self._enable_buttons())
        # The model that chooses, like an agent's (empty: the provider's default), and what it
        # is told beyond the routes (the router's systemPrompt).
        self.model = model_combo(host)
        self.model.setObjectName("routerModel")
        self.model.editTextChanged.connect(self._model_edited)
        form.addRow("Model", self.model)
        self.instructions = PromptEdit("Optional: what else the model should weigh when it chooses")
        self.instructions.setObjectName("routerInstructions")
        self.instructions.setMaximumHeight(110)
        host.bind_text(self.instructions, "systemPrompt")
        form.addRow("Extra instructions", self.instructions)

    def heading(self, node: Any) -> str:
        return f"Router · {node.id}"

    # ------------------------------------------------------------------ showing
    def load(self, data: dict[str, Any]) -> None:
        routes = _routes_of(data)
        self._filling = True
        try:
            current = self.table.currentRow()
            if self.table.rowCount() != len(routes):
                self.table.setRowCount(len(routes))
            for i, route in enumerate(routes):
                for col, key in enumerate(_COLUMNS):
                    item = self.table.item(i, col)
                    if item is None:
                        item = QTableWidgetItem()
                        self.table.setItem(i, col, item)
                    if item.text() != route[key]:
                        item.setText(route[key])
                    item.setToolTip(f"Branch {ROUTE_PREFIX}{i}" if col == 0 else route[key])
            if routes and not (0 <= current < len(routes)):
                self.table.setCurrentCell(0, 0)
        finally:
            self._filling = False
        self._show_problems(routes)
        self._enable_buttons()
        model = str(data.get("model") or "")
        if self.model.currentText() != model:
            self.model.setEditText(model)
        self.instructions.set_text_keep_cursor(str(data.get("systemPrompt") or ""))

    def _show_problems(self, routes: list[dict[str, Any]]) -> None:
        labels = [r["label"].strip() for r in routes]
        seen: set[str] = set()
        dup = next((lab for lab in labels if lab and (lab.lower() in seen or seen.add(lab.lower()))), None)
        if not routes:
            text = "Add a route: the model has nothing to choose from."
        elif any(not lab for lab in labels):
            text = f"Route {labels.index('') + 1} has no label: the model cannot choose it."
        elif dup:
            text = f"Two routes are labelled '{dup}': the model's choice could not tell them apart."
        else:
            text = ""
        self.problem.setText(text)
        self.problem.setVisible(bool(text))

    def _enable_buttons(self) -> None:
        i, n = self.table.currentRow(), self.table.rowCount()
        self.up.setEnabled(0 < i < n)
        self.down.setEnabled(0 <= i < n - 1)
        self.remove.setEnabled(0 <= i < n)

    # ------------------------------------------------------------------ editing
    def _model_edited(self, text: str) -> None:
        if not (self._filling or self.host.loading):
            self.host.edit_field("model", text, True)

    def _routes(self) -> list[dict[str, Any]]:
        node = self.host.doc.node(self.host.node_id or "")
        return _routes_of(node.data.model_dump()) if node is not None else []

    def _cell_edited(self, item: QTableWidgetItem) -> None:
        host = self.host
        if self._filling or host.loading or host.node_id is None:
            return
        node = host.doc.node(host.node_id)
        if node is None:
            return
        data = node.data.model_dump()
        routes = _routes_of(data)
        i, key = item.row(), _COLUMNS[item.column()]
        if i >= len(routes) or routes[i][key] == item.text():
            return
        routes[i][key] = item.text()
        data["routes"] = routes
        host.doc.edit_node_data(host.node_id, data, f"routes.{i}.{key}")

    def add_route(self) -> None:
        if self.host.node_id is None:
            return
        routes = self._routes()
        taken = {r["label"].strip().lower() for r in routes}
        n = len(routes) + 1
        while f"route {n}" in taken:
            n += 1
        self.host.doc.end_merge()
        self.host.doc.set_branches(
            self.host.node_id,
            "routes",
            ROUTE_PREFIX,
            routes + [{"label": f"route {n}", "description": ""}],
            {},
            "Add route",
        )
        self.table.setCurrentCell(len(routes), 0)
        self.table.setFocus()

    def remove_route(self, i: int) -> None:
        routes = self._routes()
        if self.host.node_id is None or not (0 <= i < len(routes)):
            return
        n = len(routes)
        del routes[i]
        mapping = {j: (None if j == i else (j - 1 if j > i else j)) for j in range(n)}
        self.host.doc.end_merge()
        self.host.doc.set_branches(self.host.node_id, "routes", ROUTE_PREFIX, routes, mapping, "Remove route")
        if routes:
            self.table.setCurrentCell(min(i, len(routes) - 1), 0)

    def move_route(self, i: int, d: int) -> None:
        routes = self._routes()
        j = i + d
        if self.host.node_id is None or not (0 <= i < len(routes) and 0 <= j < len(routes)):
            return
        routes[i], routes[j] = routes[j], routes[i]
        self.host.doc.end_merge()
        self.host.doc.set_branches(self.host.node_id, "routes", ROUTE_PREFIX, routes, {i: j, j: i}, "Reorder routes")
        self.table.setCurrentCell(j, max(0, self.table.currentColumn()))
