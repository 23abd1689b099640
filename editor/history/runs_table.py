"""RunsTable: the run history panel's table of runs, and which runs are selected.

Split from :mod:`editor.history.panel` (which keeps ``table`` as the name of the view and
asks this object which runs are selected). It owns the :class:`QTableView` over the
panel's :class:`~editor.history.model.RunHistoryModel`: the status pills and the
"Temporal" badges, the column widths (measured once the application's style sheet has set
the font, and again with room for a badge when server runs are listed), the columns hidden
when the table is narrow (docked at the side), the table's own keys (Enter opens, Delete
deletes: they must work even when the window is not active and the actions' shortcuts do
not fire), a double click (opens) and the context menu (the actions ``menu_actions()``
lists, None for a separator).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtCore import QEvent, QItemSelection, QItemSelectionModel, QModelIndex, QObject, QPoint, Qt
from PySide6.QtGui import QAction, QFontMetrics, QKeyEvent
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QMenu, QTableView, QWidget

from engine import RunInfo

from .badge import RemoteBadgeDelegate, StatusBadgeDelegate
from .model import (
    COL_COST,
    COL_DURATION,
    COL_EVENTS,
    COL_INPUT,
    COL_STARTED,
    COL_STATUS,
    COL_WORKFLOW,
    REMOTE_BADGE,
    RUN_ROLE,
    RunHistoryModel,
)

__all__ = ["RunsTable"]

#: Columns hidden when the table is narrower than this (docked at the side).
WIDE_COLUMNS = {COL_EVENTS: 760, COL_COST: 900}


class RunsTable(QObject):
    """The table view of one page of runs; ``view`` is the QTableView."""

    def __init__(
        self,
        owner: QWidget,
        model: RunHistoryModel,
        *,
        open_action: QAction,
        delete_action: QAction,
        open_run: Callable[..., Any],
        delete_runs: Callable[[], Any],
        menu_actions: Callable[[], Sequence[QAction | None]],
    ) -> None:
        super().__init__(owner)
        self._owner = owner
        self.model = model
        self._open_action, self._delete_action = open_action, delete_action
        self._open_run, self._delete_runs = open_run, delete_runs
        self._menu_actions = menu_actions
        self._badge_room = False
        self.view = table = QTableView(owner)
        self._viewport = table.viewport()
        table.setObjectName("runsTable")
        table.setModel(model)
        table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        table.setAlternatingRowColors(True)
        table.setWordWrap(False)
        table.setShowGrid(False)
        table.setTextElideMode(Qt.TextElideMode.ElideRight)
        table.setSortingEnabled(False)
        table.verticalHeader().setVisible(False)
        table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        table.verticalHeader().setDefaultSectionSize(owner.fontMetrics().height() + 12)
        table.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        table.customContextMenuRequested.connect(self._context_menu)
        table.doubleClicked.connect(lambda index: open_run(model.data(index, RUN_ROLE).id))
        table.installEventFilter(self)
        self.status_badges = StatusBadgeDelegate(table)
        table.setItemDelegateForColumn(COL_STATUS, self.status_badges)
        self.remote_badges = RemoteBadgeDelegate(table)
        table.setItemDelegateForColumn(COL_WORKFLOW, self.remote_badges)
        header = table.horizontalHeader()
        header.setHighlightSections(False)
        header.setStretchLastSection(False)
        for col in (COL_STATUS, COL_WORKFLOW, COL_STARTED, COL_DURATION, COL_EVENTS, COL_COST):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
        self.size_columns()
        header.setSectionResizeMode(COL_INPUT, QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(40)
        self._viewport.installEventFilter(self)

    # ------------------------------------------------------------------ columns
    def size_columns(self) -> None:
        table = self.view
        fm = table.fontMetrics()
        bold = table.font()
        bold.setBold(True)
        # the status pill: 6 px in, 8 px padding each side, and a few pixels to spare
        widths = {
            COL_STATUS: QFontMetrics(bold).horizontalAdvance("Waiting for approval") + 36,
            COL_WORKFLOW: fm.horizontalAdvance("Support reply review") + 12,
            COL_STARTED: fm.horizontalAdvance("0000-00-00 00:00") + 16,
            COL_DURATION: fm.horizontalAdvance("00 min 00 s") + 16,
            COL_EVENTS: fm.horizontalAdvance("Events") + 24,
            COL_COST: fm.horizontalAdvance("12,345 · $0.0000") + 16,
        }
        header = table.horizontalHeader()
        for col, w in widths.items():
            header.resizeSection(col, w)

    def make_badge_room(self) -> None:
        """Room for the "Temporal" badge before a workflow's name (once)."""
        if self._badge_room:
            return
        self._badge_room = True
        header = self.view.horizontalHeader()
        header.resizeSection(
            COL_WORKFLOW,
            header.sectionSize(COL_WORKFLOW) + self.view.fontMetrics().horizontalAdvance(REMOTE_BADGE) + 24,
        )

    # ------------------------------------------------------------------ selection
    def selected_runs(self) -> list[RunInfo]:
        rows = sorted({i.row() for i in self.view.selectionModel().selectedRows()})
        return [r for r in (self.model.run_at(i) for i in rows) if r is not None]

    def select_run(self, run_id: str) -> bool:
        """Select the run if it is on the current page."""
        row = self.model.row_of(run_id)
        if row < 0:
            return False
        self.view.selectRow(row)
        self.view.setCurrentIndex(self.model.index(row, 0))
        return True

    def current_run_id(self) -> str | None:
        """The run of the current row (None: no current row)."""
        current = self.view.currentIndex()
        return self.model.data(current, RUN_ROLE).id if current.isValid() else None

    def restore_selection(self, run_ids: list[str], current_id: str | None) -> None:
        """Select the runs ``run_ids`` still listed, and make ``current_id``'s row current."""
        sel = self.view.selectionModel()
        sel.clearSelection()
        selection = QItemSelection()
        for rid in run_ids:
            row = self.model.row_of(rid)
            if row >= 0:
                selection.select(self.model.index(row, 0), self.model.index(row, self.model.columnCount() - 1))
        if not selection.isEmpty():
            sel.select(selection, QItemSelectionModel.SelectionFlag.ClearAndSelect)
        row = self.model.row_of(current_id) if current_id else -1
        if row >= 0:
            sel.setCurrentIndex(self.model.index(row, 0), QItemSelectionModel.SelectionFlag.NoUpdate)

    # ------------------------------------------------------------------ menu and keys
    def _context_menu(self, pos: QPoint) -> None:
        table = self.view
        index = table.indexAt(pos)
        if index.isValid() and not table.selectionModel().isRowSelected(index.row(), QModelIndex()):
            table.selectRow(index.row())
        menu = QMenu(self._owner)
        for action in self._menu_actions():
            if action is None:
                menu.addSeparator()
            else:
                menu.addAction(action)
        menu.popup(table.viewport().mapToGlobal(pos))

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        # When the window is not active the actions' shortcuts do not fire; the table's own
        # keys still must (Enter would otherwise only emit `activated`). (The objects are
        # compared before the view is asked anything: it may be going away with the panel.)
        table = self.view
        if obj is self._viewport and event.type() == QEvent.Type.Resize:
            width = table.width()
            for col, minimum in WIDE_COLUMNS.items():
                table.setColumnHidden(col, width < minimum)
        if obj is table and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            key = event.key()
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and event.modifiers() in (
                Qt.KeyboardModifier.NoModifier,
                Qt.KeyboardModifier.KeypadModifier,
            ):
                if self._open_action.isEnabled():
                    self._open_run()
                return True
            if key == Qt.Key.Key_Delete and event.modifiers() == Qt.KeyboardModifier.NoModifier:
                if self._delete_action.isEnabled():
                    self._delete_runs()
                return True
        return super().eventFilter(obj, event)
