"""LogPane: the run console's log as the user reads it: the filter row and the list.

Concept: the entries of :class:`~editor.run.log_model.LogModel` pass through a
:class:`~editor.run.log_model.LogFilterProxy` (node, type groups, text, collapsed steps) into
a list view (:class:`~editor.run.log_view.LogListView`) painted by
:class:`~editor.run.log_view.LogDelegate`. The pane owns the filter widgets and the view; the
console owns the model and the proxy and says what to show.

Invariants
* The view has uniform row heights and paints through its delegate: 20,000 entries cost
  what is visible, not what is stored; a row that changed (a streamed answer growing) is
  repainted alone.
* The node filter is one string-list model filled in one call (a big workflow has 100k
  nodes), from a :class:`~editor.run.log_model.NodeNames` made once per workflow.
* The list follows the tail while a run is live, unless the user scrolled up; it follows
  again once scrolled back to the bottom.
* A short log filters on every keystroke; a long one (5,000 entries or more) once typing pauses.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPoint, QStringListModel, Qt, QTimer
from PySide6.QtGui import QAction, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMenu,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine import SYSTEM_NODE, EventType

from .log_model import TYPE_GROUPS, EntryRole, LogEntry, LogFilterProxy, LogModel, NodeNames
from .log_view import LogDelegate, LogListView

__all__ = ["LogPane", "LONG_LOG"]

#: Entries from which the text filter waits for typing to pause (150 ms) before it runs.
LONG_LOG = 5000


class LogPane(QWidget):
    """The filter row (node, types, search, collapse) above the log's list view."""

    def __init__(self, model: LogModel, proxy: LogFilterProxy, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.model = model
        self.proxy = proxy
        self.follow_tail = True
        ll = QVBoxLayout(self)
        ll.setContentsMargins(0, 0, 0, 0)
        ll.setSpacing(4)
        filters = QHBoxLayout()
        self.node_filter = QComboBox()
        self.node_filter.setObjectName("nodeFilter")
        self.node_filter.setMinimumWidth(140)
        # One list model for all the entries (a big workflow has 100k nodes: one call, not
        # 100k addItem calls), and a width that does not measure every entry.
        self.node_filter.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.node_filter.setMinimumContentsLength(14)
        self._filter_model = QStringListModel(["All nodes"], self.node_filter)
        self._filter_ids: list[str | None] = [None]  # the node id of each entry (None: all nodes)
        self._filter_rows: dict[str, int] = {}
        self.node_filter.setModel(self._filter_model)
        self.type_button = QToolButton()
        self.type_button.setObjectName("typeFilter")
        self.type_button.setText("Types: all")
        self.type_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.type_button.setMinimumWidth(self.type_button.fontMetrics().horizontalAdvance("Types: 8 of 8") + 28)
        self.type_menu = QMenu(self.type_button)
        self.type_actions: dict[str, QAction] = {}
        for group in TYPE_GROUPS:
            a = self.type_menu.addAction(group)
            a.setCheckable(True)
            a.setChecked(True)
            a.toggled.connect(self._apply_type_filter)
            self.type_actions[group] = a
        self.type_menu.addSeparator()
        self.type_menu.addAction("Show all types", lambda: self.set_type_groups(None))
        self.type_button.setMenu(self.type_menu)
        self.search_edit = QLineEdit()
        self.search_edit.setObjectName("logSearch")
        self.search_edit.setPlaceholderText("Search the log…")
        self.search_edit.setClearButtonEnabled(True)
        self.collapse_button = QToolButton()
        self.collapse_button.setText("Collapse all")
        self.collapse_button.setToolTip("Show only each step's first entry (click ▸ on a step to expand it)")
        self.collapse_button.setCheckable(True)
        filters.addWidget(self.node_filter)
        filters.addWidget(self.type_button)
        filters.addWidget(self.search_edit, 1)
        filters.addWidget(self.collapse_button)
        ll.addLayout(filters)
        self.view = LogListView()
        self.view.setObjectName("runLog")
        self.view.setModel(self.proxy)
        self.view.setUniformItemSizes(True)
        self.view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.view.setMouseTracking(True)
        self.delegate = LogDelegate(self.proxy.is_collapsed, self.view)
        self.delegate.toggle_requested = self.toggle_collapsed  # type: ignore[method-assign]
        self.view.setItemDelegate(self.delegate)
        ll.addWidget(self.view, 1)
        self.empty_label = QLabel("Press Run (F5) to run the workflow; its steps, prompts and answers appear here.")
        self.empty_label.setStyleSheet("color: #6b7280; padding: 6px")
        self.empty_label.setWordWrap(True)
        ll.addWidget(self.empty_label)

        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(150)
        self._search_timer.timeout.connect(lambda: self.proxy.set_text_filter(self.search_edit.text()))
        self.node_filter.currentIndexChanged.connect(self._apply_node_filter)
        self.search_edit.textChanged.connect(self._on_search_text)
        self.collapse_button.toggled.connect(self._collapse_all)
        self.view.customContextMenuRequested.connect(self._context_menu)
        bar = self.view.verticalScrollBar()
        bar.valueChanged.connect(self._on_scrolled)
        bar.rangeChanged.connect(self._on_range_changed)

    # ------------------------------------------------------------------ node names
    def set_names(self, table: NodeNames) -> None:
        """The node filter's entries, keeping the node chosen if it is still there."""
        current = self.node_filter_id()
        self.node_filter.blockSignals(True)
        self._filter_ids = table.ids
        self._filter_rows = table.rows
        self._filter_model.setStringList(table.labels)
        self.node_filter.setCurrentIndex(self._filter_rows.get(current, 0) if current is not None else 0)
        self.node_filter.blockSignals(False)
        self._apply_node_filter()

    # ------------------------------------------------------------------ filters
    def node_filter_id(self) -> str | None:
        """The node the log is filtered to (None: all nodes)."""
        i = self.node_filter.currentIndex()
        return self._filter_ids[i] if 0 <= i < len(self._filter_ids) else None

    def set_node_filter(self, node_id: str | None) -> None:
        self.node_filter.setCurrentIndex(self._filter_rows.get(node_id, 0) if node_id is not None else 0)

    def set_type_groups(self, groups: Any) -> None:
        """Show only the entry type groups named (keys of TYPE_GROUPS); None shows every type."""
        wanted = set(TYPE_GROUPS) if groups is None else set(groups)
        for name, action in self.type_actions.items():
            action.blockSignals(True)
            action.setChecked(name in wanted)
            action.blockSignals(False)
        self._apply_type_filter()

    def toggle_collapsed(self, node_id: str) -> None:
        self.proxy.set_collapsed(node_id, not self.proxy.is_collapsed(node_id))
        self.view.viewport().update()

    def _apply_node_filter(self, *_args: Any) -> None:
        node = self.node_filter_id()
        self.proxy.set_node_filter(None if node is None else [node])

    def _apply_type_filter(self, *_args: Any) -> None:
        checked = [g for g, a in self.type_actions.items() if a.isChecked()]
        if len(checked) == len(self.type_actions):
            self.proxy.set_type_filter(None)
            self.type_button.setText("Types: all")
        else:
            types = [t for g in checked for t in TYPE_GROUPS[g]]
            self.proxy.set_type_filter(types)
            self.type_button.setText(f"Types: {len(checked)} of {len(self.type_actions)}")

    def _on_search_text(self, text: str) -> None:
        if len(self.model.entries) < LONG_LOG:
            self.proxy.set_text_filter(text)
        else:
            self._search_timer.start()

    def _collapse_all(self, on: bool) -> None:
        if on:
            self.proxy.collapse_all(self.model.node_ids())
            self.collapse_button.setText("Expand all")
        else:
            self.proxy.expand_all()
            self.collapse_button.setText("Collapse all")

    # ------------------------------------------------------------------ the list
    def current_entry(self) -> LogEntry | None:
        idx = self.view.currentIndex()
        return idx.data(EntryRole) if idx.isValid() else None

    def visible_entries(self) -> list[LogEntry]:
        """The entries the view shows, in order (after filters)."""
        return [self.proxy.index(r, 0).data(EntryRole) for r in range(self.proxy.rowCount())]

    def select_node(self, node_id: str) -> None:
        """Select and centre the entries of ``node_id``: its latest step, else its first entry
        shown; the node filter widens to it if it hides that node."""
        rows = self.model.rows_of(node_id)
        current = self.current_entry()
        if not rows or (current is not None and current.node_id == node_id):
            return  # already there (the canvas echoing an entry click): keep the entry the user chose
        node_filter = self.proxy.node_filter
        if node_filter is not None and node_id not in node_filter:
            self.node_filter.setCurrentIndex(self._filter_rows.get(node_id, 0))
        entries = self.model.entries
        steps = [r for r in rows if entries[r].type == EventType.STEP_START]
        candidates = ([steps[-1]] if steps else []) + rows
        for row in candidates:
            pidx = self.proxy.mapFromSource(self.model.index(row))
            if pidx.isValid():
                self.view.setCurrentIndex(pidx)
                self.view.scrollTo(pidx, QAbstractItemView.ScrollHint.PositionAtCenter)
                return

    def _on_scrolled(self, value: int) -> None:
        # following the tail stops when the user scrolls up, and resumes at the bottom
        self.follow_tail = value >= self.view.verticalScrollBar().maximum() - 4

    def _on_range_changed(self, _lo: int, hi: int) -> None:
        if self.follow_tail:
            self.view.verticalScrollBar().setValue(hi)

    def _context_menu(self, pos: QPoint) -> None:
        idx = self.view.indexAt(pos)
        entry: LogEntry | None = idx.data(EntryRole) if idx.isValid() else None
        menu = QMenu(self)
        if entry is not None:
            menu.addAction("Copy content", lambda: QGuiApplication.clipboard().setText(entry.content))
            menu.addAction("Copy as JSON", lambda: QGuiApplication.clipboard().setText(entry.to_event().to_json()))
            if entry.group != SYSTEM_NODE:
                menu.addSeparator()
                group, name = entry.group, self.model.node_name(entry.group)
                collapsed = self.proxy.is_collapsed(group)
                menu.addAction(
                    ("Expand" if collapsed else "Collapse") + f" entries of “{name}”",
                    lambda: self.toggle_collapsed(group),
                )
                menu.addAction(f"Show only “{name}”", lambda: self.set_node_filter(group))
        menu.addAction("Show all nodes", lambda: self.set_node_filter(None))
        menu.exec(self.view.viewport().mapToGlobal(pos))
