"""The run history panel's widgets and actions, made once (what a Qt Designer form would hold).

:func:`setup_ui` lays out the filter row (:class:`~editor.history.filters.HistoryFilterBar`),
the toolbar with its Export menu, the banner of runs waiting for approval, the runs table
(:class:`~editor.history.runs_table.RunsTable`; or the empty or "unavailable" page in its
place), the pager and the message line, and makes the panel's actions with their shortcuts.
It sets them as attributes of the :class:`~editor.history.panel.HistoryPanel` and connects
them to its slots; what they do is the panel's.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QAction, QKeySequence, QPalette
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QMenu,
    QPushButton,
    QSizePolicy,
    QStackedWidget,
    QStyle,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from .filters import STATUS_FILTERS, HistoryFilterBar
from .runs_table import RunsTable

__all__ = ["setup_ui", "STATUS_FILTERS"]


def setup_ui(self: QWidget) -> None:
    """Make the widgets and actions of ``self``, the :class:`~editor.history.panel.HistoryPanel`
    (typed as the QWidget it is: this module, which the panel imports, does not import it back)."""
    lay = QVBoxLayout(self)
    lay.setContentsMargins(6, 6, 6, 6)
    lay.setSpacing(6)

    # filters
    self.filter_bar = HistoryFilterBar(self)
    self.workflow_combo, self.status_combo = self.filter_bar.workflow_combo, self.filter_bar.status_combo
    lay.addWidget(self.filter_bar)
    self.filter_bar.changed.connect(self._filters_changed)

    # actions
    _make_actions(self)
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
        " border-radius: 4px; padding: 4px 8px; }"
    )
    self.paused_banner.linkActivated.connect(self._show_paused)
    self.paused_banner.setVisible(False)
    lay.addWidget(self.paused_banner)

    # table / empty / unavailable
    self.stack = QStackedWidget(self)
    self.runs_table = RunsTable(
        self,
        self.model,
        open_action=self.open_action,
        delete_action=self.delete_action,
        open_run=lambda *run_id: self.open_run(*run_id),
        delete_runs=lambda: self.delete_runs(),
        menu_actions=self._menu_actions,
    )
    self.table = self.runs_table.view
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


def _make_actions(self: QWidget) -> None:
    st = self.style()

    def act(text: str, slot: Any, tip: str, keys: tuple = (), icon: QStyle.StandardPixmap | None = None) -> QAction:
        a = QAction(text, self)
        a.setToolTip(
            tip + (f" ({QKeySequence(keys[0]).toString(QKeySequence.SequenceFormat.NativeText)})" if keys else "")
        )
        a.setStatusTip(tip)
        if icon is not None:
            a.setIcon(st.standardIcon(icon))
        if keys:
            a.setShortcuts([QKeySequence(k) for k in keys])
            a.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        a.triggered.connect(lambda _checked=False: slot())
        self.addAction(a)
        return a

    self.open_action = act(
        "Open",
        self.open_run,
        "Show this run's log and node states",
        ("Return", "Enter"),
        QStyle.StandardPixmap.SP_DialogOpenButton,
    )
    self.open_version_action = act(
        "Open This Version as New Document", self.open_version, "Open the exact workflow that ran as a new document"
    )
    self.run_again_action = act(
        "Run Again",
        self.run_again,
        "Open the workflow as it ran and run it again with the same input and arguments",
        (),
        QStyle.StandardPixmap.SP_BrowserReload,
    )
    self.resume_action = act(
        "Resume…",
        self.resume_run,
        "Answer the pending approval of this paused run",
        ("Ctrl+Shift+R",),
        QStyle.StandardPixmap.SP_MediaPlay,
    )
    self.compare_action = act(
        "Compare",
        self.compare_runs,
        "Compare two selected runs, or the selected run with "
        "the previous run of its workflow: workflow changes and, node by node, output, "
        "status, duration and tokens",
        (),
    )
    self.delete_action = act(
        "Delete",
        self.delete_runs,
        "Delete the selected runs from the history",
        (QKeySequence.StandardKey.Delete,),
        QStyle.StandardPixmap.SP_TrashIcon,
    )
    self.export_jsonl_action = act(
        "Export Log as JSON Lines…", self.export_jsonl, "Save the run's log, one JSON event per line"
    )
    self.export_agentflow_action = act(
        "Export as AgentFlow Run Record…", self.export_agentflow, "Save the run as an AgentFlow run_<id>.json record"
    )
    self.import_action = act(
        "Import…",
        self.import_agentflow,
        "Import an AgentFlow run record (run_<id>.json)",
        (),
        QStyle.StandardPixmap.SP_DialogOpenButton,
    )
    self.import_action.setIconText("Import")
    self.refresh_action = act(
        "Refresh",
        self.retry,
        "Reload the runs list",
        (QKeySequence.StandardKey.Refresh,),
        QStyle.StandardPixmap.SP_BrowserReload,
    )
    self.prev_action = act(
        "Previous", self.previous_page, "Newer runs", ("Ctrl+PgUp",), QStyle.StandardPixmap.SP_ArrowLeft
    )
    self.next_action = act("Next", self.next_page, "Older runs", ("Ctrl+PgDown",), QStyle.StandardPixmap.SP_ArrowRight)
