"""The workflow's ``permissions`` on the inspector's workflow page: what its steps may reach.

``permissions: {network, files, flows, tools}`` (docs/design.md, "Acting"). Whether the object
is in the file at all changes what a flow may do, so the page says it with a switch ("Restrict
what this flow may reach"):

* off: no ``permissions`` in the file. http, fetch, flow, browser and MCP steps reach what they
  name; code and scripts reach no network and no file.
* on: the object is in the file and every kind is bounded by the lists below; an empty list
  grants nothing, so with every list empty no step reaches any host, file, flow or tool
  (http and fetch included).

The editor holds no state of its own: :meth:`PermissionsEditor.load` shows the model's value
and every finished edit emits :attr:`PermissionsEditor.permissions_edited` with the whole new
value (a dict, or None for "off"), which the document turns into one undo step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QCheckBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from ..resources import icon_path

__all__ = ["PermissionsEditor", "EntryList", "FIELDS"]

#: field -> (label, placeholder of a new entry, tooltip)
FIELDS: dict[str, tuple[str, str, str]] = {
    "network": (
        "Network hosts",
        "api.example.com, host:port, *.example.org or *",
        "Hosts http, fetch, browser and code steps may connect to (* is any host)",
    ),
    "files": ("Folders", "a folder (~/data, or relative to this file)", "Folders code and file steps may read"),
    "flows": ("Flows", "a library flow id, or *", "Library flows flow, action and code steps may run"),
    "tools": ("MCP tools", "server/tool, server/* or *", "MCP tools agents and mcp steps may call"),
}
_OFF = (
    "Off: this flow sets no permissions. Its http, fetch, flow, browser and MCP steps reach "
    "whatever they name; code and scripts reach no network and no files."
)
_ON = (
    "On: only what is listed below may be reached, by every kind of step. An empty list "
    "grants nothing: with all lists empty, no step reaches any host, file, flow or tool "
    "(http and fetch included)."
)


class EntryList(QWidget):
    """A list of text entries with a box to add one (Enter or +), remove, and edit in place."""

    entries_edited = Signal(list)  # list[str]: the whole new list

    def __init__(self, field: str, pick_folder: Callable[[], str] | None = None, parent: QWidget | None = None):
        super().__init__(parent)
        self.field = field
        self._loading = False
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        label, placeholder, tip = FIELDS[field]
        self.list = QListWidget()
        self.list.setObjectName(f"permissions-{field}")
        self.list.setToolTip(tip + ". Double-click an entry to edit it.")
        self.list.itemChanged.connect(self._item_changed)
        lay.addWidget(self.list)
        self.empty = QLabel("None granted.")
        self.empty.setObjectName("hint")
        lay.addWidget(self.empty)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        self.new = QLineEdit()
        self.new.setObjectName(f"permissions-{field}-new")
        self.new.setPlaceholderText(placeholder)
        self.new.returnPressed.connect(self.add_typed)
        self.add_button = _tool("add", f"Add to {label.lower()}", self.add_typed)
        self.remove_button = _tool("delete", "Remove the selected entry", self.remove_current)
        row.addWidget(self.new, 1)
        row.addWidget(self.add_button)
        if pick_folder is not None:
            self._pick_folder = pick_folder
            self.browse_button = _tool("open", "Choose a folder…", self.add_folder)
            row.addWidget(self.browse_button)
        row.addWidget(self.remove_button)
        lay.addLayout(row)
        self._fit()

    def entries(self) -> list[str]:
        return [self.list.item(i).text().strip() for i in range(self.list.count()) if self.list.item(i).text().strip()]

    def set_entries(self, entries: list[str]) -> None:
        if entries == self.entries() and self.list.count() == len(entries):
            return
        self._loading = True
        try:
            self.list.clear()
            for text in entries:
                item = QListWidgetItem(text)
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
                self.list.addItem(item)
        finally:
            self._loading = False
        self._fit()

    def _fit(self) -> None:
        """As tall as its entries (at most 5 rows); an empty list says "None granted." instead."""
        self.list.setVisible(self.list.count() > 0)
        self.empty.setVisible(self.list.count() == 0)
        rows = max(1, min(5, self.list.count()))
        self.list.setFixedHeight(rows * (self.list.fontMetrics().height() + 8) + 2 * self.list.frameWidth() + 2)

    def _item_changed(self, _item: QListWidgetItem) -> None:
        if not self._loading:
            self.entries_edited.emit(self.entries())

    def add_typed(self) -> None:
        text = self.new.text().strip()
        if text:
            self.new.clear()
            self.add(text)

    def add(self, text: str) -> None:
        if text and text not in self.entries():
            self.entries_edited.emit(self.entries() + [text])

    def add_folder(self) -> None:
        folder = self._pick_folder()
        if folder:
            self.add(folder)

    def remove_current(self) -> None:
        row = self.list.currentRow()
        entries = [self.list.item(i).text().strip() for i in range(self.list.count())]
        if 0 <= row < len(entries):
            del entries[row]
            self.entries_edited.emit([e for e in entries if e])


def _tool(icon: str, tip: str, slot: Callable[[], None]) -> QToolButton:
    button = QToolButton()
    button.setIcon(QIcon(icon_path(icon)))
    button.setToolTip(tip)
    button.clicked.connect(slot)
    return button


class PermissionsEditor(QWidget):
    """The switch, what it means, and one :class:`EntryList` per field."""

    permissions_edited = Signal(object)  # dict (the whole object) or None (no permissions)

    def __init__(self, base_folder: Callable[[], str] | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("permissionsEditor")
        self._base_folder = base_folder or (lambda: "")
        self._value: dict[str, Any] | None = None
        self._loading = False
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.switch = QCheckBox("Restrict what this flow may reach")
        self.switch.setObjectName("restrictPermissions")
        self.switch.toggled.connect(self._switched)
        lay.addWidget(self.switch)
        self.meaning = QLabel(_OFF)
        self.meaning.setObjectName("hint")
        self.meaning.setWordWrap(True)
        lay.addWidget(self.meaning)
        self.lists_box = QWidget()
        form = QFormLayout(self.lists_box)
        form.setContentsMargins(0, 0, 0, 0)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.WrapAllRows)
        self.lists: dict[str, EntryList] = {}
        for field, (label, _p, _t) in FIELDS.items():
            entries = EntryList(field, self._choose_folder if field == "files" else None)
            entries.entries_edited.connect(lambda items, f=field: self._list_edited(f, items))
            self.lists[field] = entries
            form.addRow(label, entries)
        lay.addWidget(self.lists_box)

    def _choose_folder(self) -> str:
        return QFileDialog.getExistingDirectory(self, "Folder the flow may read", self._base_folder())

    def load(self, value: dict[str, Any] | None) -> None:
        """Show the workflow's permissions (``model_dump`` of them, or None when absent)."""
        self._loading = True
        try:
            self._value = dict(value) if value is not None else None
            on = value is not None
            self.switch.setChecked(on)
            self.meaning.setText(_ON if on else _OFF)
            self.lists_box.setVisible(on)
            for field, entries in self.lists.items():
                entries.set_entries(list((value or {}).get(field) or []))
        finally:
            self._loading = False

    def _switched(self, on: bool) -> None:
        self.meaning.setText(_ON if on else _OFF)
        self.lists_box.setVisible(on)
        if not self._loading:
            self.permissions_edited.emit({} if on else None)

    def _list_edited(self, field: str, items: list[str]) -> None:
        if self._loading:
            return
        value = {k: v for k, v in (self._value or {}).items() if k != field}
        if items:
            value[field] = items
        self.permissions_edited.emit(value)
