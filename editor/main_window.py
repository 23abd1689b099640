"""MainWindow: docks and wiring only.

Palette (left), canvas (centre), inspector (right), problems, run console and run history
(bottom). What each concern does lives in :mod:`editor.window`: menus and actions, files,
autosave, validation, run wiring and edit actions; this module builds the widgets and
connects them. Validation runs debounced after every document change and drives the node
badges, the problems list, the status bar and the Run action.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QIcon, QKeySequence
from PySide6.QtWidgets import QDockWidget, QLabel, QMainWindow, QStackedWidget, QTabWidget, QWidget

from engine import Issue

from .canvas.scene import CanvasScene
from .canvas.view import CanvasView
from .editing import WorkflowDocument
from .files import Autosaver
from .history.panel import HistoryPanel
from .panels.inspector import InspectorPanel
from .panels.palette import PalettePanel
from .panels.problems import ProblemsPanel
from .resources import icon_path
from .run.console import RunConsole
from .run.details import NodeRunDetails
from .run_view import RunViewWindow
from .screen_fit import fit_resize
from .window.autosave import AutosaveMixin
from .window.edit_actions import EditActionsMixin
from .window.files import FilesMixin
from .window.library import LibraryMixin
from .window.find_bar import FindBar
from .window.help import HelpMixin
from .window.menus import MenusMixin
from .window.repair import RepairMixin
from .window.run_wiring import RunWiringMixin
from .window.settings import WindowSettingsMixin, settings
from .window.validation import ValidationMixin
from .window.welcome import WelcomePage


__all__ = ["MainWindow", "settings"]


class MainWindow(LibraryMixin, MenusMixin, HelpMixin, FilesMixin, AutosaveMixin, ValidationMixin, RunWiringMixin,
                 RepairMixin, EditActionsMixin, WindowSettingsMixin, QMainWindow):
    run_requested = Signal()  # the run console (a later issue) listens here
    validated = Signal(list)  # list[Issue], after each debounced validation

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("mainWindow")
        self.setWindowIcon(QIcon(icon_path("app")))
        self.document = WorkflowDocument(parent=self)
        self.scene = CanvasScene(self.document, self)
        self.view = CanvasView(self.scene)
        self.issues: list[Issue] = []
        self.autosaver = Autosaver()
        self._has_document = False
        self.find_bar: FindBar

        self.central = QStackedWidget()
        self.welcome = WelcomePage(self)
        self.central.addWidget(self.welcome)
        self.central.addWidget(self.view)
        self.setCentralWidget(self.central)
        self.find_bar = FindBar(self)

        self.palette = PalettePanel()
        self.inspector = InspectorPanel(self.document)
        self.problems = ProblemsPanel()
        self.palette_dock = self._dock("Nodes", "paletteDock", self.palette, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.inspector_dock = self._dock("Inspector", "inspectorDock", self.inspector, Qt.DockWidgetArea.RightDockWidgetArea)
        self.problems_dock = self._dock("Problems", "problemsDock", self.problems, Qt.DockWidgetArea.BottomDockWidgetArea)
        # Running: the console (live log, approvals, trace), the run history, and the
        # inspector's Run tab. Run state lives there, apart from the document, never undoable.
        self.run_console = RunConsole()
        self.run_console.run_action.setShortcut(QKeySequence())  # F5 is the window's Run action
        self.run_console_dock = self._dock("Run console", "runConsoleDock", self.run_console,
                                           Qt.DockWidgetArea.BottomDockWidgetArea)
        self.history = HistoryPanel()
        self.history_dock = self._dock("Run history", "historyDock", self.history,
                                       Qt.DockWidgetArea.BottomDockWidgetArea)
        self.tabifyDockWidget(self.problems_dock, self.run_console_dock)
        self.tabifyDockWidget(self.run_console_dock, self.history_dock)
        self.problems_dock.raise_()
        self.node_run_details = NodeRunDetails()
        self.inspector_tabs = QTabWidget()
        self.inspector_tabs.setObjectName("inspectorTabs")
        self.inspector_tabs.addTab(self.inspector, "Edit")
        self.inspector_tabs.addTab(self.node_run_details, "Run")
        # With no document open the inspector says so instead of showing an editable
        # "Untitled workflow" form that belongs to nothing.
        self.inspector_empty = QLabel("No workflow is open.\n\nCreate a new one or open a file to edit "
                                      "its nodes here.")
        self.inspector_empty.setObjectName("hint")
        self.inspector_empty.setWordWrap(True)
        self.inspector_empty.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        self.inspector_empty.setContentsMargins(16, 24, 16, 16)
        self.inspector_stack = QStackedWidget()
        self.inspector_stack.setObjectName("inspectorStack")
        self.inspector_stack.addWidget(self.inspector_empty)
        self.inspector_stack.addWidget(self.inspector_tabs)
        self.inspector_dock.setWidget(self.inspector_stack)
        self.run_windows: list[RunViewWindow] = []
        self._console_max_state = None  # the dock layout to go back to when the console is maximised
        # The inspector keeps the full height on the right (its Run tab shows a node's input
        # and output); the bottom docks sit under the canvas and the palette.
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self._init_library()  # the Library dock, tabbed with the palette
        self._default_dock_sizes()

        self._build_actions()
        self._build_menus()
        self._build_help_menu()
        self._build_status_bar()

        self._init_validation()  # debounced: after every document change
        self._init_autosave()  # periodic, while there are unsaved changes

        d = self.document
        d.path_changed.connect(lambda _p: self._update_title())
        d.meta_changed.connect(self._update_title)
        # scene.select_nodes() emits one selectionChanged per change, so this stays cheap.
        self.scene.selectionChanged.connect(self._selection_changed)
        self.scene.status_message.connect(lambda m: self.statusBar().showMessage(m, 5000))
        self.scene.background_double_clicked.connect(self._quick_add)
        self.scene.link_dropped_on_canvas.connect(self._link_to_new_node)
        self.scene.context_menu_requested.connect(self._context_menu)
        self.scene.node_activated.connect(self._edit_node)
        self.view.node_dropped.connect(self._add_node_at)
        self.view.files_dropped.connect(self.open_dropped)
        self.setAcceptDrops(True)  # a workflow file dropped from a file manager opens (FilesMixin)
        self.view.nudge_requested.connect(
            lambda dx, dy: self.document.nudge_nodes(self.scene.selected_node_ids(), dx, dy))
        self.view.zoom_changed.connect(lambda z: self.zoom_label.setText(f"{round(z * 100)}%"))
        self.palette.node_requested.connect(self._add_node_at_centre)
        self.problems.nodes_requested.connect(self.show_nodes)
        self._wire_running()

        fit_resize(self, 1400, 860)
        self._restore_settings()
        self._show_welcome()
        self.run_validation()

    # ------------------------------------------------------------------ construction
    def _dock(self, title: str, name: str, widget: QWidget, area: Qt.DockWidgetArea) -> QDockWidget:
        dock = QDockWidget(title, self)
        dock.setObjectName(name)
        dock.setWidget(widget)
        self.addDockWidget(area, dock)
        return dock

    def _default_dock_sizes(self) -> None:
        self.resizeDocks([self.palette_dock, self.inspector_dock], [236, 350], Qt.Orientation.Horizontal)
        # Room for a few runs of the history (and the log); the canvas keeps the rest. (The
        # size asked for includes the tab bar of the tabbed bottom docks.)
        self.resizeDocks([self.problems_dock], [340], Qt.Orientation.Vertical)
        QTimer.singleShot(0, self, self._fit_palette)  # once shown, at the size it opens with

    def _fit_palette(self) -> None:
        """In the default layout the palette shows all its entries (the last one was cut off):
        the bottom docks give up what it lacks, keeping at least 240 px."""
        saved = settings().value("window/state")
        if saved or self._console_max_state is not None or not self.palette_dock.isVisible():
            return  # the user's own layout, or not the default one
        lst = self.palette.list
        if not lst.count():
            return
        last = lst.visualItemRect(lst.item(lst.count() - 1))  # laid out, word wrap included
        need = last.bottom() + lst.verticalScrollBar().value() + 2 * lst.spacing() + 2
        deficit = need - lst.viewport().height()
        bottom = self.problems_dock if self.problems_dock.isVisible() else self.run_console_dock
        if deficit > 0 and bottom.isVisible() and not bottom.isFloating():
            self.resizeDocks([bottom], [max(240, bottom.height() - deficit)], Qt.Orientation.Vertical)

    def set_console_maximised(self, on: bool) -> None:
        """The run console takes the whole window (canvas and side docks hidden), or goes back
        to the layout it had. View ▸ Maximise Run Console (Ctrl+Shift+M)."""
        if on == (self._console_max_state is not None):
            return
        dock = self.run_console_dock
        if on:
            self._console_max_state = self.saveState()
            if dock.isFloating():
                dock.setFloating(False)
            dock.show()
            dock.raise_()
            for other in (self.palette_dock, self.inspector_dock, self.library_dock):
                other.hide()
            self.central.hide()
            self.resizeDocks([dock], [self.height()], Qt.Orientation.Vertical)
        else:
            state, self._console_max_state = self._console_max_state, None
            self.central.show()
            self.restoreState(state)
        if self.act_max_console.isChecked() != on:
            self.act_max_console.setChecked(on)

    # ------------------------------------------------------------------ document state
    def _show_welcome(self) -> None:
        self._has_document = False
        self.inspector.setEnabled(False)
        self.inspector_stack.setCurrentWidget(self.inspector_empty)
        self.welcome.refresh()
        self.central.setCurrentWidget(self.welcome)
        self._update_title()
        self._update_actions()

    def _show_canvas(self) -> None:
        self._has_document = True
        self.inspector.setEnabled(True)
        self.inspector_stack.setCurrentWidget(self.inspector_tabs)
        self.central.setCurrentWidget(self.view)
        self._update_title()
        self._update_actions()
        self.view.setFocus()

    def _update_actions(self) -> None:
        for a in (self.act_save, self.act_save_as, self.act_revert, self.act_layout, self.act_fit, self.act_find):
            a.setEnabled(self._has_document)
        self.act_revert.setEnabled(self._has_document and bool(self.document.path))
        self._update_run_action()

    def _update_title(self) -> None:
        # A run waiting for a decision is worth a glance from the task bar, whatever is open.
        waiting = "⏸ Waiting for approval — " if getattr(self, "_waiting_for_input", False) else ""
        if not self._has_document:
            self.setWindowTitle(f"{waiting}Flowdesk")
            return
        name = self.document.display_name()
        wf_name = self.document.workflow.name
        extra = f" — {wf_name}" if wf_name and self.document.path else ""
        self.setWindowTitle(f"{waiting}{name}[*]{extra} — Flowdesk")
        self.setWindowModified(self.document.is_modified())

    # ------------------------------------------------------------------ closing
    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.maybe_save():
            event.ignore()
            return
        self.cancel_open()  # a big file still being read is not shown in a closed window
        bridge = self.run_console.bridge
        if bridge.status == "paused":
            # A run waiting for approval stays paused in the run history (its state was saved
            # at the pause, even while its pause is still being settled or a sibling branch
            # runs on), to be answered after a restart: cancelling it here threw that away.
            pass
        else:
            self.run_console.cancel_run()  # a running run stops with the window (its events are kept)
        for win in list(self.run_windows):
            win.close()
        self.set_console_maximised(False)  # the layout saved is the normal one
        self._save_settings()
        self.autosaver.clear()
        event.accept()
