"""A key/value table (HTTP headers, query, form data): rows of ``{key, value}``.

The table holds no state of its own: :meth:`KeyValueTable.set_rows` shows the model's rows and
every finished edit (a cell committed, a row added or removed) emits :attr:`rows_edited`
with the whole new list once, which the inspector turns into one undo step.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QHeaderView,
    QTableWidget,
    QTableWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..resources import icon_path

__all__ = ["KeyValueTable"]


class KeyValueTable(QWidget):
    rows_edited = Signal(list)  # list[{"key": str, "value": str}]
    cell_selected = Signal(int)  # the current row (-1: none)

    def __init__(self, key_label: str = "Name", value_label: str = "Value", parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self._loading = False
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        self.table = QTableWidget(0, 2)
        self.table.setHorizontalHeaderLabels([key_label, value_label])
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.Interactive)
        self.table.horizontalHeader().setStretchLastSection(True)
        self.table.verticalHeader().setVisible(False)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.table.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.table.setColumnWidth(0, 120)
        self.table.itemChanged.connect(self._item_changed)
        self.table.currentCellChanged.connect(lambda r, _c, _pr, _pc: self.cell_selected.emit(r))
        lay.addWidget(self.table)
        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        self.add_button = QToolButton()
        self.add_button.setIcon(QIcon(icon_path("add")))
        self.add_button.setToolTip("Add a row")
        self.add_button.clicked.connect(self.add_row)
        self.remove_button = QToolButton()
        self.remove_button.setIcon(QIcon(icon_path("delete")))
        self.remove_button.setToolTip("Remove the selected row")
        self.remove_button.clicked.connect(self.remove_current)
        bar.addWidget(self.add_button)
        bar.addWidget(self.remove_button)
        bar.addStretch(1)
        self.extra_bar = bar  # callers may add buttons (e.g. "Move to keyring")
        lay.addLayout(bar)
        self._fit_height()  # an empty table is one row tall, not Qt's default (set_rows skips no change)

    # ------------------------------------------------------------------ model <-> table
    def rows(self) -> list[dict[str, str]]:
        out = []
        for r in range(self.table.rowCount()):
            k, v = self.table.item(r, 0), self.table.item(r, 1)
            out.append({"key": k.text() if k else "", "value": v.text() if v else ""})
        return out

    def set_rows(self, rows: list[Any]) -> None:
        rows = [_row(r) for r in rows or []]
        if rows == self.rows():
            return
        self._loading = True
        try:
            current = self.table.currentRow()
            self.table.setRowCount(len(rows))
            for r, row in enumerate(rows):
                for c, key in enumerate(("key", "value")):
                    item = self.table.item(r, c)
                    if item is None:
                        self.table.setItem(r, c, QTableWidgetItem(row[key]))
                    elif item.text() != row[key]:
                        item.setText(row[key])
            if 0 <= current < len(rows):
                self.table.setCurrentCell(current, self.table.currentColumn())
        finally:
            self._loading = False
        self._fit_height()

    def _fit_height(self) -> None:
        """As tall as its rows (one empty row's room when there are none), at most 6 rows."""
        rows = max(1, min(6, self.table.rowCount()))
        h = self.table.horizontalHeader().sizeHint().height() + rows * self.table.verticalHeader().defaultSectionSize()
        self.table.setFixedHeight(h + 2 * self.table.frameWidth() + 2)

    def _item_changed(self, _item: QTableWidgetItem) -> None:
        if not self._loading:
            self.rows_edited.emit(self.rows())

    def add_row(self) -> None:
        self.rows_edited.emit(self.rows() + [{"key": "", "value": ""}])
        last = self.table.rowCount() - 1
        if last >= 0:
            self.table.setCurrentCell(last, 0)
            self.table.editItem(self.table.item(last, 0))

    def remove_current(self) -> None:
        r = self.table.currentRow()
        rows = self.rows()
        if 0 <= r < len(rows):
            del rows[r]
            self.rows_edited.emit(rows)


def _row(r: Any) -> dict[str, str]:
    if isinstance(r, dict):
        return {"key": str(r.get("key", "") or ""), "value": "" if r.get("value") is None else str(r.get("value"))}
    return {"key": str(getattr(r, "key", "") or ""), "value": str(getattr(r, "value", "") or "")}
