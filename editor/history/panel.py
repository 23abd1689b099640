"""The run history panel: past and paused runs, one page at a time, and what to do with them.

Concept: a standalone widget the main window docks. It reads the :class:`engine.store.RunStore`
directly (a page of 50 runs is a couple of indexed queries, well under a frame), and hands
everything that needs the rest of the application back as signals:

* ``run_opened(run_id, workflow, events, info)`` — show this past run read-only (console log,
  canvas states: see :class:`editor.history.replay.RunReplay`);
* ``workflow_version_requested(workflow, run_id)`` — open the workflow that ran as a new document;
* ``resume_requested(run_id)`` — the run is paused with a saved state; the owner of runs resumes it.

Invariants: the panel never blocks on the database for more than one page; it never raises
from a user action (every :class:`StoreError`, file or format error ends in a message); with
no usable store it shows "Run history unavailable: <reason>" instead of the table and the
application keeps working. Deleting skips runs that are still running (their recorder would
lose its row). Files are written with :func:`engine.atomic_write_text`.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import (QEvent, QItemSelection, QItemSelectionModel, QModelIndex, QObject, QPoint, QRect, QSize, Qt,
                            QTimer, QUrl, Signal, Slot)
from PySide6.QtGui import QAction, QColor, QDesktopServices, QFontMetrics, QIcon, QKeyEvent, QKeySequence, QPainter, QPalette
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QFileDialog, QHBoxLayout, QHeaderView, QLabel, QMenu,
                               QMessageBox, QPushButton, QSizePolicy, QStackedWidget, QStyle, QStyledItemDelegate,
                               QStyleOptionViewItem, QTableView, QToolBar, QToolButton, QVBoxLayout, QWidget)

from engine import WorkflowLoadError, atomic_write_text
from engine import AlreadyImported, RunInfo, RunStore, StoreError, agentflow_record, data_dir

from .model import (COL_DURATION, COL_EVENTS, COL_INPUT, COL_STARTED, COL_STATUS, COL_WORKFLOW, RUN_ROLE, STATUS_COLORS,
                    STATUS_LABELS, STATUS_ROLE, RunHistoryModel)

__all__ = ["HistoryPanel", "open_store_for_gui", "PAGE_SIZE"]

log = logging.getLogger(__name__)

PAGE_SIZE = 50
STATUS_FILTERS = ("paused", "running", "completed", "failed", "cancelled", "interrupted")
PAGE_TABLE, PAGE_EMPTY, PAGE_UNAVAILABLE = range(3)

# Non-modal message boxes without a parent must outlive the call that shows them.
_open_boxes: set[QMessageBox] = set()


def _show_store_error(parent: QWidget | None, text: str) -> None:
    """Tell the user the run history cannot be used, without blocking start-up."""
    box = QMessageBox(QMessageBox.Icon.Warning, "Run history unavailable", text, QMessageBox.StandardButton.Ok, parent)
    box.setInformativeText("Flowdesk works without it, but runs are not recorded or listed until this is fixed.")
    box.setWindowModality(Qt.WindowModality.NonModal)
    box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
    _open_boxes.add(box)
    box.finished.connect(lambda _r, b=box: _open_boxes.discard(b))
    box.show()


def open_store_for_gui(parent: QWidget | None = None, *, path: str | os.PathLike[str] | None = None,
                       panel: HistoryPanel | None = None) -> RunStore | None:
    """Open the run store, mark runs left running by a dead process ``interrupted``.

    On :class:`StoreError` shows a non-blocking message and returns None, so the app still
    starts. With ``panel`` (or when ``parent`` is a :class:`HistoryPanel`) the panel is given
    the store, or the reason it is unavailable.
    """
    if panel is None and isinstance(parent, HistoryPanel):
        panel = parent
    try:
        store = RunStore(path)
        recovered = store.recover()
    except StoreError as err:
        log.warning("%s", err)
        if panel is not None:
            panel.set_store(None, reason=str(err), path=path)
        _show_store_error(parent, str(err))
        return None
    if panel is not None:
        panel.set_store(store)
        if recovered:
            n = len(recovered)
            panel.show_message(f"{n} run{'s' if n != 1 else ''} left running when Flowdesk last stopped "
                               f"{'were' if n != 1 else 'was'} marked interrupted.")
    return store


class StatusBadgeDelegate(QStyledItemDelegate):
    """Paints the status column as a coloured pill with the status label."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        text = opt.text
        opt.text = ""
        opt.icon = QIcon()  # no decoration: the pill is the icon
        opt.features &= ~QStyleOptionViewItem.ViewItemFeature.HasDecoration
        style = opt.widget.style() if opt.widget else None
        if style is not None:
            style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        status = index.data(STATUS_ROLE) or ""
        colour = STATUS_COLORS.get(status, QColor("#6e7681"))
        font = index.data(Qt.ItemDataRole.FontRole) or opt.font
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setFont(font)
        fm = painter.fontMetrics()
        h = fm.height() + 4
        w = min(fm.horizontalAdvance(text) + 16, opt.rect.width() - 8)
        pill = QRect(opt.rect.left() + 6, opt.rect.center().y() - h // 2 + 1, max(w, 0), h)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(colour)
        painter.drawRoundedRect(pill, h / 2, h / 2)
        painter.setPen(QColor("white"))
        room = max(pill.width() - 16, 0)
        if fm.horizontalAdvance(text) > room:  # elidedText() elides even text that fits exactly
            text = fm.elidedText(text, Qt.TextElideMode.ElideRight, room)
        painter.drawText(pill.adjusted(8, 0, -8, 0), int(Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft),
                         text)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        base = super().sizeHint(option, index)
        fm = option.fontMetrics
        text = index.data(Qt.ItemDataRole.DisplayRole) or ""
        return QSize(fm.horizontalAdvance(text) + 30, max(base.height(), fm.height() + 10))


class HistoryPanel(QWidget):
    """Runs list with pagination, filters and actions. Dock it; connect its three signals."""

    #: ``(run_id, workflow that ran, its events in order, its RunInfo)``
    run_opened = Signal(str, object, list, object)
    #: ``(workflow that ran, run_id)``: open this version as a new, unsaved document
    workflow_version_requested = Signal(object, str)
    #: ``run_id`` of a paused run whose state is saved: resume it (the console asks for the decision)
    resume_requested = Signal(str)

    def __init__(self, store: RunStore | None = None, parent: QWidget | None = None, *,
                 unavailable_reason: str | None = None, page_size: int = PAGE_SIZE) -> None:
        super().__init__(parent)
        self.setObjectName("HistoryPanel")
        self._store: RunStore | None = None
        self._store_path: str | os.PathLike[str] | None = None
        self._reason = ""
        self.page_size = page_size
        self._offset = 0
        self._total = 0
        self._paused_total = 0
        self._last_dir = str(Path.home())
        #: milliseconds between refreshes while the shown page has running runs (0: never)
        self.auto_refresh_interval = 3000

        self.model = RunHistoryModel(self)
        self._build()
        self._message_timer = QTimer(self, singleShot=True, interval=8000)
        self._message_timer.timeout.connect(lambda: self._message.setVisible(False))
        self._poll_timer = QTimer(self, singleShot=True)
        self._poll_timer.timeout.connect(self._poll)
        self.set_store(store, reason=unavailable_reason)

    # ================================================================ building
    def _build(self) -> None:
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
        lay.setSpacing(6)

        # filters
        self.filter_bar = QWidget(self)
        row = QHBoxLayout(self.filter_bar)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(6)
        self.workflow_combo = QComboBox(self)
        self.workflow_combo.setObjectName("workflowFilter")
        self.workflow_combo.setToolTip("Show the runs of one workflow")
        self.workflow_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.workflow_combo.setMinimumContentsLength(14)
        self.workflow_combo.addItem("All workflows", None)
        self.status_combo = QComboBox(self)
        self.status_combo.setObjectName("statusFilter")
        self.status_combo.setToolTip("Show the runs with one status")
        self.status_combo.addItem("All statuses", None)
        for s in STATUS_FILTERS:
            self.status_combo.addItem(STATUS_LABELS[s], s)
        row.addWidget(QLabel("Workflow:", self))
        row.addWidget(self.workflow_combo)
        row.addSpacing(8)
        row.addWidget(QLabel("Status:", self))
        row.addWidget(self.status_combo)
        row.addStretch(1)
        lay.addWidget(self.filter_bar)
        self.workflow_combo.currentIndexChanged.connect(self._filters_changed)
        self.status_combo.currentIndexChanged.connect(self._filters_changed)

        # actions
        self._make_actions()
        self.toolbar = QToolBar(self)
        self.toolbar.setIconSize(QSize(16, 16))
        self.toolbar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        for a in (self.open_action, self.resume_action):
            self.toolbar.addAction(a)
        self.toolbar.addSeparator()
        self.toolbar.addAction(self.delete_action)
        export_button = QToolButton(self)
        export_button.setText("Export")
        export_button.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_DialogSaveButton))
        export_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        export_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        export_button.setToolTip("Export the selected run")
        export_menu = QMenu(export_button)
        export_menu.addAction(self.export_jsonl_action)
        export_menu.addAction(self.export_agentflow_action)
        export_button.setMenu(export_menu)
        self._export_button = export_button
        self.toolbar.addWidget(export_button)
        self.toolbar.addAction(self.import_action)
        spacer = QWidget(self)
        spacer.setObjectName("toolbarSpacer")  # transparent in the app style (not a box in the toolbar)
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self.toolbar.addWidget(spacer)
        self.toolbar.addAction(self.refresh_action)
        lay.addWidget(self.toolbar)

        # "runs waiting for approval" banner
        self.paused_banner = QLabel(self)
        self.paused_banner.setObjectName("pausedBanner")
        self.paused_banner.setTextFormat(Qt.TextFormat.RichText)
        self.paused_banner.setWordWrap(True)
        self.paused_banner.setStyleSheet(
            "QLabel#pausedBanner { background: rgba(137, 87, 229, 0.16); border: 1px solid rgba(137, 87, 229, 0.55);"
            " border-radius: 4px; padding: 4px 8px; }")
        self.paused_banner.linkActivated.connect(self._show_paused)
        self.paused_banner.setVisible(False)
        lay.addWidget(self.paused_banner)

        # table / empty / unavailable
        self.stack = QStackedWidget(self)
        self.table = QTableView(self)
        self.table.setObjectName("runsTable")
        self.table.setModel(self.model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setAlternatingRowColors(True)
        self.table.setWordWrap(False)
        self.table.setShowGrid(False)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.table.setSortingEnabled(False)
        self.table.verticalHeader().setVisible(False)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.table.verticalHeader().setDefaultSectionSize(self.fontMetrics().height() + 12)
        self.table.setHorizontalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.table.customContextMenuRequested.connect(self._context_menu)
        self.table.doubleClicked.connect(lambda index: self.open_run(self.model.data(index, RUN_ROLE).id))
        self.table.installEventFilter(self)
        self._badges = StatusBadgeDelegate(self.table)
        self.table.setItemDelegateForColumn(COL_STATUS, self._badges)
        header = self.table.horizontalHeader()
        header.setHighlightSections(False)
        header.setStretchLastSection(False)
        for col in (COL_STATUS, COL_WORKFLOW, COL_STARTED, COL_DURATION, COL_EVENTS):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
        self._size_columns()
        header.setSectionResizeMode(COL_INPUT, QHeaderView.ResizeMode.Stretch)
        header.setMinimumSectionSize(40)
        self._wide_columns = {COL_EVENTS: 760}  # hidden when the table is narrower (docked at the side)
        self.table.viewport().installEventFilter(self)
        self.table.selectionModel().selectionChanged.connect(self._update_actions)
        self.stack.addWidget(self.table)

        self.empty_label = QLabel(self)
        self.empty_label.setObjectName("emptyState")
        self.empty_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty_label.setWordWrap(True)
        self.empty_label.setEnabled(False)
        self.stack.addWidget(self.empty_label)

        unavailable = QWidget(self)
        ul = QVBoxLayout(unavailable)
        ul.addStretch(1)
        icon = QLabel(unavailable)
        icon.setPixmap(self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning).pixmap(32, 32))
        icon.setAlignment(Qt.AlignmentFlag.AlignCenter)
        ul.addWidget(icon)
        self.unavailable_label = QLabel(unavailable)
        self.unavailable_label.setObjectName("unavailableState")
        self.unavailable_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.unavailable_label.setWordWrap(True)
        self.unavailable_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        ul.addWidget(self.unavailable_label)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        self.retry_button = QPushButton("Try Again", unavailable)
        self.retry_button.clicked.connect(self.retry)
        buttons.addWidget(self.retry_button)
        self.folder_button = QPushButton("Show Folder", unavailable)
        self.folder_button.setToolTip("Open the folder that holds the run history file")
        self.folder_button.clicked.connect(self._show_folder)
        buttons.addWidget(self.folder_button)
        buttons.addStretch(1)
        ul.addLayout(buttons)
        ul.addStretch(2)
        self.stack.addWidget(unavailable)
        lay.addWidget(self.stack, 1)

        # pager
        self.pager = QWidget(self)
        pager = QHBoxLayout(self.pager)
        pager.setContentsMargins(0, 0, 0, 0)
        self.prev_button = QToolButton(self)
        self.prev_button.setDefaultAction(self.prev_action)
        self.prev_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.next_button = QToolButton(self)
        self.next_button.setDefaultAction(self.next_action)
        self.next_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.next_button.setLayoutDirection(Qt.LayoutDirection.RightToLeft)  # arrow after the text
        self.range_label = QLabel(self)
        self.range_label.setObjectName("rangeLabel")
        self.range_label.setAlignment(Qt.AlignmentFlag.AlignCenter)
        pager.addWidget(self.prev_button)
        pager.addStretch(1)
        pager.addWidget(self.range_label)
        pager.addStretch(1)
        pager.addWidget(self.next_button)
        lay.addWidget(self.pager)

        self._message = QLabel(self)
        self._message.setObjectName("historyMessage")
        self._message.setWordWrap(True)
        self._message.setVisible(False)
        pal = self._message.palette()
        pal.setColor(QPalette.ColorRole.WindowText, pal.color(QPalette.ColorRole.PlaceholderText))
        self._message.setPalette(pal)
        lay.addWidget(self._message)

    def _make_actions(self) -> None:
        st = self.style()

        def act(text: str, slot: Any, tip: str, keys: tuple = (), icon: QStyle.StandardPixmap | None = None) -> QAction:
            a = QAction(text, self)
            a.setToolTip(tip + (f" ({QKeySequence(keys[0]).toString(QKeySequence.SequenceFormat.NativeText)})"
                                if keys else ""))
            a.setStatusTip(tip)
            if icon is not None:
                a.setIcon(st.standardIcon(icon))
            if keys:
                a.setShortcuts([QKeySequence(k) for k in keys])
                a.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            a.triggered.connect(lambda _checked=False: slot())
            self.addAction(a)
            return a

        self.open_action = act("Open", self.open_run, "Show this run's log and node states", ("Return", "Enter"),
                               QStyle.StandardPixmap.SP_DialogOpenButton)
        self.open_version_action = act("Open This Version as New Document", self.open_version,
                                       "Open the exact workflow that ran as a new document")
        self.resume_action = act("Resume…", self.resume_run, "Answer the pending approval of this paused run",
                                 ("Ctrl+Shift+R",), QStyle.StandardPixmap.SP_MediaPlay)
        self.delete_action = act("Delete", self.delete_runs, "Delete the selected runs from the history",
                                 (QKeySequence.StandardKey.Delete,), QStyle.StandardPixmap.SP_TrashIcon)
        self.export_jsonl_action = act("Export Log as JSON Lines…", self.export_jsonl,
                                       "Save the run's log, one JSON event per line")
        self.export_agentflow_action = act("Export as AgentFlow Run Record…", self.export_agentflow,
                                           "Save the run as an AgentFlow run_<id>.json record")
        self.import_action = act("Import…", self.import_agentflow, "Import an AgentFlow run record (run_<id>.json)",
                                 (), QStyle.StandardPixmap.SP_DialogOpenButton)
        self.import_action.setIconText("Import")
        self.refresh_action = act("Refresh", self.retry, "Reload the runs list", (QKeySequence.StandardKey.Refresh,),
                                  QStyle.StandardPixmap.SP_BrowserReload)
        self.prev_action = act("Previous", self.previous_page, "Newer runs", ("Ctrl+PgUp",),
                               QStyle.StandardPixmap.SP_ArrowLeft)
        self.next_action = act("Next", self.next_page, "Older runs", ("Ctrl+PgDown",),
                               QStyle.StandardPixmap.SP_ArrowRight)

    # ================================================================ store
    @property
    def store(self) -> RunStore | None:
        return self._store

    @property
    def unavailable_reason(self) -> str:
        """Why there is no history ("" when the store is usable)."""
        return "" if self.is_available else self._reason

    @property
    def is_available(self) -> bool:
        return self._store is not None and self.stack.currentIndex() != PAGE_UNAVAILABLE

    def set_store(self, store: RunStore | None, *, reason: str | None = None,
                  path: str | os.PathLike[str] | None = None) -> None:
        """Use this store (None: show the unavailable state with ``reason``)."""
        self._store = store
        if store is not None:
            self._store_path = store.path
        elif path is not None:
            self._store_path = path
        self._reason = reason or ("" if store else "no run history was opened.")
        self._offset = 0
        if store is None:
            self._show_unavailable(self._reason)
        else:
            self.refresh()

    @Slot()
    def retry(self) -> None:
        """Try to open the store again (after the user moved a damaged file away, closed another program...)."""
        if self._store is None:
            try:
                store = RunStore(self._store_path)
                store.recover()
            except StoreError as err:
                self._show_unavailable(str(err))
                return
            self.set_store(store)
        else:
            self.refresh()

    def _show_unavailable(self, reason: str) -> None:
        self._reason = reason
        text = reason.strip()
        self.unavailable_label.setText(f"<b>Run history unavailable:</b> {_html(text)}")
        self.stack.setCurrentIndex(PAGE_UNAVAILABLE)
        self.model.set_page([])
        self._total = 0
        self.paused_banner.setVisible(False)
        self.range_label.setText("")
        for w in (self.filter_bar, self.toolbar, self.pager):
            w.setVisible(False)
        self._update_actions()

    def _show_folder(self) -> None:
        if self._store is not None:
            path = Path(self._store.path)
        else:
            try:
                path = Path(self._store_path) if self._store_path is not None else data_dir() / "runs.db"
            except Exception:  # noqa: BLE001 - no folder to show is not worth an error dialog
                return
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(path.parent)))

    def _fail(self, err: StoreError, doing: str) -> None:
        """A store error during an action: say so; if the store is unusable now, show that state."""
        log.warning("%s: %s", doing, err)
        _warn(self, "Run history", f"{doing} failed.\n\n{err}")

    # ================================================================ paging and filters
    @property
    def page_offset(self) -> int:
        return self._offset

    @property
    def total(self) -> int:
        """How many runs match the filters."""
        return self._total

    @property
    def workflow_filter(self) -> str | None:
        return self.workflow_combo.currentData()

    @property
    def status_filter(self) -> str | None:
        return self.status_combo.currentData()

    def set_filters(self, *, workflow: str | None = None, status: str | None = None) -> None:
        """Show only the runs of ``workflow`` and/or with ``status`` (None: all); back to the first page."""
        for combo, value in ((self.workflow_combo, workflow), (self.status_combo, status)):
            i = combo.findData(value)
            if i < 0 and combo is self.workflow_combo and value is not None:
                combo.blockSignals(True)
                combo.addItem(value, value)
                combo.blockSignals(False)
                i = combo.count() - 1
            combo.blockSignals(True)
            combo.setCurrentIndex(max(i, 0))
            combo.blockSignals(False)
        self._filters_changed()

    def _filters_changed(self, *_: Any) -> None:
        self._offset = 0
        self.refresh()

    def _show_paused(self, *_: Any) -> None:
        self.set_filters(workflow=None, status="paused")

    @Slot()
    def next_page(self) -> None:
        if self._offset + self.page_size < self._total:
            self._offset += self.page_size
            self._reload(keep_selection=False)

    @Slot()
    def previous_page(self) -> None:
        if self._offset > 0:
            self._offset = max(0, self._offset - self.page_size)
            self._reload(keep_selection=False)

    def range_text(self) -> str:
        if self._total == 0:
            return "No runs"
        first = self._offset + 1
        last = min(self._offset + self.model.rowCount(), self._total)
        noun = "run" if self._total == 1 else "runs"
        return f"{first}–{last} of {self._total:,} {noun}"

    # ================================================================ refresh
    @Slot()
    def refresh(self) -> None:
        """Reload the filters' choices, the total and the current page from the store.

        The main window calls this when a run starts or ends. Keeps the page (clamped to
        the last one) and the selected runs that are still on it.
        """
        self._reload(keep_selection=True)

    def _reload(self, keep_selection: bool) -> None:
        store = self._store
        if store is None:
            self._show_unavailable(self._reason or "no run history was opened.")
            return
        selected = self.selected_run_ids() if keep_selection else []
        current = self.table.currentIndex()
        current_id = self.model.data(current, RUN_ROLE).id if current.isValid() and keep_selection else None
        wf, status = self.workflow_filter, self.status_filter
        try:
            names = store.workflow_names()
            total = store.count_runs(workflow=wf, status=status)
            if self._offset >= total and total:
                self._offset = (total - 1) // self.page_size * self.page_size
            runs = store.list_runs(workflow=wf, status=status, limit=self.page_size, offset=self._offset)
            counts = store.event_counts([r.id for r in runs])
            paused = store.count_runs(status="paused")
        except StoreError as err:
            log.warning("run history: %s", err)
            self._show_unavailable(str(err))
            return
        for w in (self.filter_bar, self.toolbar, self.pager):
            w.setVisible(True)
        self._fill_workflows(names, wf)
        self._total = total
        self._paused_total = paused
        self.model.set_page(runs, counts)
        self.range_label.setText(self.range_text())
        if runs:
            self.stack.setCurrentIndex(PAGE_TABLE)
        else:
            filtered = wf is not None or status is not None
            self.empty_label.setText("No runs match these filters." if filtered else
                                     "No runs yet.\nRuns appear here as soon as they start.")
            self.stack.setCurrentIndex(PAGE_EMPTY)
        if paused and status != "paused":
            self.paused_banner.setText(
                f"<b>{paused} run{'s are' if paused != 1 else ' is'} waiting for approval.</b> "
                f"&nbsp;<a href='#paused' style='color: {self._link_colour()}'>Show {'them' if paused != 1 else 'it'}</a>")
            self.paused_banner.setVisible(True)
        else:
            self.paused_banner.setVisible(False)
        self._restore_selection(selected, current_id)
        self._update_actions()
        self._schedule_poll(runs)

    def _link_colour(self) -> str:
        # The palette's link blue is unreadable on the purple banner of a dark theme.
        dark = self.palette().color(QPalette.ColorRole.Window).lightness() < 128
        return "#cdb8ff" if dark else "#5a2fc2"

    def _fill_workflows(self, names: list[str], current: str | None) -> None:
        combo = self.workflow_combo
        have = [combo.itemData(i) for i in range(1, combo.count())]
        if have == names:
            return
        combo.blockSignals(True)
        combo.clear()
        combo.addItem("All workflows", None)
        for n in names:
            if n:  # an empty name cannot be filtered on (the store treats "" as "all")
                combo.addItem(n, n)
        i = combo.findData(current) if current is not None else 0
        if i < 0:  # the filter's workflow has no runs left: keep it chosen, it simply lists none
            combo.addItem(current, current)
            i = combo.count() - 1
        combo.setCurrentIndex(i)
        combo.blockSignals(False)

    def _restore_selection(self, run_ids: list[str], current_id: str | None) -> None:
        sel = self.table.selectionModel()
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

    def _schedule_poll(self, runs: list[RunInfo]) -> None:
        # Runs of another process (the CLI) change state on their own: follow them while shown.
        if self.auto_refresh_interval > 0 and any(r.status == "running" for r in runs):
            self._poll_timer.start(self.auto_refresh_interval)
        else:
            self._poll_timer.stop()

    def _poll(self) -> None:
        if self.isVisible() and self._store is not None:
            self._recover()  # a run whose process died meanwhile (a killed CLI) becomes interrupted
            self.refresh()

    def _recover(self) -> None:
        try:
            if self._store is not None:
                self._store.recover()
        except StoreError as err:  # the refresh that follows shows the state
            log.warning("run history: %s", err)

    # ================================================================ selection
    def selected_runs(self) -> list[RunInfo]:
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [r for r in (self.model.run_at(i) for i in rows) if r is not None]

    def selected_run_ids(self) -> list[str]:
        return [r.id for r in self.selected_runs()]

    def select_run(self, run_id: str) -> bool:
        """Select the run if it is on the current page."""
        row = self.model.row_of(run_id)
        if row < 0:
            return False
        self.table.selectRow(row)
        self.table.setCurrentIndex(self.model.index(row, 0))
        return True

    def _one(self, run_id: str | None) -> str | None:
        if run_id:
            return run_id
        runs = self.selected_runs()
        if len(runs) == 1:
            return runs[0].id
        current = self.table.currentIndex()
        if not runs and current.isValid():
            return self.model.data(current, RUN_ROLE).id
        return None

    def _update_actions(self, *_: Any) -> None:
        ok = self._store is not None and self.stack.currentIndex() != PAGE_UNAVAILABLE
        runs = self.selected_runs() if ok else []
        one = len(runs) == 1
        for a in (self.open_action, self.open_version_action, self.export_jsonl_action, self.export_agentflow_action):
            a.setEnabled(one)
        self._export_button.setEnabled(one)
        self.resume_action.setEnabled(one and runs[0].status == "paused")
        self.delete_action.setEnabled(any(r.status != "running" for r in runs))
        self.import_action.setEnabled(ok)
        self.prev_action.setEnabled(ok and self._offset > 0)
        self.next_action.setEnabled(ok and self._offset + self.page_size < self._total)

    def _context_menu(self, pos: QPoint) -> None:
        index = self.table.indexAt(pos)
        if index.isValid() and not self.table.selectionModel().isRowSelected(index.row(), QModelIndex()):
            self.table.selectRow(index.row())
        menu = QMenu(self)
        menu.addAction(self.open_action)
        menu.addAction(self.open_version_action)
        menu.addAction(self.resume_action)
        menu.addSeparator()
        menu.addAction(self.export_jsonl_action)
        menu.addAction(self.export_agentflow_action)
        menu.addAction(self.import_action)
        menu.addSeparator()
        menu.addAction(self.delete_action)
        menu.addSeparator()
        menu.addAction(self.refresh_action)
        menu.popup(self.table.viewport().mapToGlobal(pos))

    def _size_columns(self) -> None:
        table = self.table
        fm = table.fontMetrics()
        bold = table.font()
        bold.setBold(True)
        # the status pill: 6 px in, 8 px padding each side, and a few pixels to spare
        widths = {COL_STATUS: QFontMetrics(bold).horizontalAdvance("Waiting for approval") + 36,
                  COL_WORKFLOW: fm.horizontalAdvance("Support reply review") + 12,
                  COL_STARTED: fm.horizontalAdvance("0000-00-00 00:00") + 16,
                  COL_DURATION: fm.horizontalAdvance("00 min 00 s") + 16,
                  COL_EVENTS: fm.horizontalAdvance("Events") + 24}
        header = table.horizontalHeader()
        for col, w in widths.items():
            header.resizeSection(col, w)

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if not getattr(self, "_columns_sized", False):
            # The application style sheet sets the font size when the panel is polished, after
            # it was built: measured before, "Waiting for approval" was elided in its pill.
            self._columns_sized = True
            self._size_columns()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        # When the window is not active the actions' shortcuts do not fire; the table's own
        # keys still must (Enter would otherwise only emit `activated`).
        if obj is self.table.viewport() and event.type() == QEvent.Type.Resize:
            width = self.table.width()
            for col, minimum in self._wide_columns.items():
                self.table.setColumnHidden(col, width < minimum)
        if obj is self.table and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            key = event.key()
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and event.modifiers() in (
                    Qt.KeyboardModifier.NoModifier, Qt.KeyboardModifier.KeypadModifier):
                if self.open_action.isEnabled():
                    self.open_run()
                return True
            if key == Qt.Key.Key_Delete and event.modifiers() == Qt.KeyboardModifier.NoModifier:
                if self.delete_action.isEnabled():
                    self.delete_runs()
                return True
        return super().eventFilter(obj, event)

    # ================================================================ messages
    def show_message(self, text: str) -> None:
        """A short, passive note under the list (export done, run imported...)."""
        self._message.setText(text)
        self._message.setVisible(True)
        self._message_timer.start()

    @property
    def message(self) -> str:
        return self._message.text() if self._message.isVisible() else ""

    # ================================================================ actions
    def _require_store(self) -> RunStore | None:
        if self._store is None:
            _warn(self, "Run history", f"Run history unavailable: {self._reason}")
        return self._store

    @Slot()
    def open_run(self, run_id: str | None = None) -> bool:
        """Emit ``run_opened`` for the selected run (or ``run_id``); False if it cannot be read."""
        store = self._require_store()
        run_id = self._one(run_id)
        if store is None or not run_id:
            return False
        try:
            info = store.get_run(run_id)
            if info is None:
                _warn(self, "Open run", "This run is no longer in the run history.")
                self.refresh()
                return False
            workflow = store.workflow_of(run_id)
            events = store.events(run_id)
        except StoreError as err:
            self._fail(err, "Opening the run")
            return False
        except (WorkflowLoadError, ValueError) as err:
            _warn(self, "Open run", f"The workflow recorded with run {run_id} cannot be read:\n\n{err}")
            return False
        self.run_opened.emit(run_id, workflow, events, info)
        return True

    @Slot()
    def open_version(self, run_id: str | None = None) -> bool:
        """Emit ``workflow_version_requested`` with the workflow exactly as it ran."""
        store = self._require_store()
        run_id = self._one(run_id)
        if store is None or not run_id:
            return False
        try:
            workflow = store.workflow_of(run_id)
        except StoreError as err:
            self._fail(err, "Reading the run's workflow")
            return False
        except (WorkflowLoadError, ValueError) as err:
            _warn(self, "Open this version", f"The workflow recorded with run {run_id} cannot be read:\n\n{err}")
            return False
        self.workflow_version_requested.emit(workflow, run_id)
        return True

    @Slot()
    def resume_run(self, run_id: str | None = None) -> bool:
        """Emit ``resume_requested`` if the run is paused and its state was saved."""
        store = self._require_store()
        run_id = self._one(run_id)
        if store is None or not run_id:
            return False
        try:
            info = store.get_run(run_id)
            snap = store.snapshot_of(run_id) if info is not None and info.status == "paused" else None
        except StoreError as err:
            self._fail(err, "Reading the run")
            return False
        if info is None:
            _warn(self, "Resume run", "This run is no longer in the run history.")
        elif info.status != "paused":
            _warn(self, "Resume run", f"This run is {info.status}, not waiting for approval; only a paused run "
                                      "can be resumed.")
        elif snap is None:
            _warn(self, "Resume run", "This run is paused, but its state was not saved (it may have been imported "
                                      "or recorded by an older Flowdesk), so it cannot be resumed.")
        else:
            self.resume_requested.emit(run_id)
            return True
        self.refresh()
        return False

    @Slot()
    def delete_runs(self, run_ids: list[str] | None = None) -> int:
        """Delete the selected runs (or ``run_ids``) after confirmation; returns how many were deleted."""
        store = self._require_store()
        if store is None:
            return 0
        if run_ids is None:
            runs = self.selected_runs()
        else:
            try:
                runs = [r for r in (store.get_run(i) for i in run_ids) if r is not None]
            except StoreError as err:
                self._fail(err, "Reading the runs")
                return 0
        running = [r for r in runs if r.status == "running"]
        runs = [r for r in runs if r.status != "running"]
        if not runs:
            if running:
                _warn(self, "Delete runs", "A run that is still running cannot be deleted. Cancel it first.")
            return 0
        n = len(runs)
        what = f"run {runs[0].id[:8]} of “{runs[0].workflow_name}”" if n == 1 else f"these {n} runs"
        text = f"Delete {what}? Its log is removed from the run history. This cannot be undone." if n == 1 else \
            f"Delete {what}? Their logs are removed from the run history. This cannot be undone."
        paused = sum(1 for r in runs if r.status == "paused")
        if paused:
            text += f"\n\n{paused} of them {'is' if paused == 1 else 'are'} waiting for approval and can no longer " \
                    "be resumed." if n > 1 else "\n\nIt is waiting for approval and can no longer be resumed."
        if running:
            text += f"\n\n{len(running)} running run{'s are' if len(running) != 1 else ' is'} not deleted."
        answer = QMessageBox.question(self, "Delete runs" if n > 1 else "Delete run", text,
                                      QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
                                      QMessageBox.StandardButton.Cancel)
        if answer != QMessageBox.StandardButton.Yes:
            return 0
        deleted = 0
        try:
            for r in runs:
                store.delete_run(r.id)
                deleted += 1
        except StoreError as err:
            self._fail(err, "Deleting runs")
        self.refresh()
        if deleted:
            self.show_message(f"Deleted {deleted} run{'s' if deleted != 1 else ''}.")
        return deleted

    def _save_path(self, title: str, name: str, filters: str) -> str | None:
        path, _ = QFileDialog.getSaveFileName(self, title, os.path.join(self._last_dir, name), filters)
        if not path:
            return None
        self._last_dir = os.path.dirname(path) or self._last_dir
        return path

    def _write(self, path: str, text: str) -> bool:
        try:
            atomic_write_text(path, text)
        except OSError as err:
            _warn(self, "Export run", f"{path} could not be written: {err.strerror or err}")
            return False
        self.show_message(f"Saved {os.path.basename(path)}.")
        return True

    def _export(self, run_id: str | None, path: str | None, title: str, filename: str, filters: str,
                make_text: Callable[[RunStore, str], str | None], reading: str) -> str | None:
        """Ask where (unless ``path``), make the text from the store, write it atomically."""
        store = self._require_store()
        run_id = self._one(run_id)
        if store is None or not run_id:
            return None
        path = path or self._save_path(title, filename.format(run_id=run_id), filters)
        if not path:
            return None
        try:
            text = make_text(store, run_id)
        except StoreError as err:
            self._fail(err, reading)
            return None
        if text is None:
            _warn(self, "Export run", "This run is no longer in the run history.")
            return None
        return path if self._write(path, text) else None

    @Slot()
    def export_jsonl(self, run_id: str | None = None, path: str | None = None) -> str | None:
        """Save the run's log as JSON Lines (wire form, one event per line); returns the path written."""
        return self._export(run_id, path, "Export Run Log as JSON Lines", "run_{run_id}.jsonl",
                            "JSON Lines (*.jsonl);;All files (*)",
                            lambda store, rid: "".join(line + "\n" for line in store.export_jsonl(rid)),
                            "Reading the run's log")

    @Slot()
    def export_agentflow(self, run_id: str | None = None, path: str | None = None) -> str | None:
        """Save the run as an AgentFlow ``run_<id>.json`` record; returns the path written."""

        def record_text(store: RunStore, rid: str) -> str | None:
            info = store.get_run(rid)
            wf_json = store.workflow_json(rid)
            if info is None or wf_json is None:
                return None
            record = agentflow_record(info, wf_json, store.iter_events(rid))
            return json.dumps(record, ensure_ascii=False, indent=2) + "\n"

        return self._export(run_id, path, "Export as AgentFlow Run Record", "run_{run_id}.json",
                            "AgentFlow run records (*.json);;All files (*)", record_text, "Reading the run")

    @Slot()
    def import_agentflow(self, path: str | None = None) -> str | None:
        """Import an AgentFlow run record file; returns the new run's id (None if nothing was imported)."""
        store = self._require_store()
        if store is None:
            return None
        if not path:
            path, _ = QFileDialog.getOpenFileName(self, "Import AgentFlow Run Record", self._last_dir,
                                                  "AgentFlow run records (*.json);;All files (*)")
            if not path:
                return None
            self._last_dir = os.path.dirname(path) or self._last_dir
        name = os.path.basename(path)
        try:
            raw = Path(path).read_bytes()
        except OSError as err:
            _warn(self, "Import run", f"{name} could not be read: {err.strerror or err}")
            return None
        try:
            record = json.loads(raw.decode("utf-8-sig"))
        except UnicodeDecodeError:
            _warn(self, "Import run", f"{name} is not a text file (not UTF-8), so it is not an AgentFlow run record. "
                                      "Nothing was imported.")
            return None
        except json.JSONDecodeError as err:
            _warn(self, "Import run", f"{name} is not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}). "
                                      "Nothing was imported.")
            return None
        try:
            run_id = store.import_agentflow(record)
        except AlreadyImported as err:  # the same record twice: say so, show the one already there
            QMessageBox.information(self, "Import run", f"{name}: {err}")
            self.refresh()
            self.select_run(err.run_id)
            return None
        except StoreError as err:
            self._fail(err, "Importing the run")
            return None
        except (ValueError, TypeError) as err:
            _warn(self, "Import run", f"{name} is not an AgentFlow run record: {err}\n\nNothing was imported.")
            return None
        self._recover()  # an imported "running" record has no live process: it is interrupted
        self.refresh()
        self.select_run(run_id)
        self.show_message(f"Imported {name} as run {run_id[:12]}.")
        return run_id


def _warn(parent: QWidget, title: str, text: str) -> None:
    QMessageBox.warning(parent, title, text)


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
