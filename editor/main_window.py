"""MainWindow: the composition root. It builds the widgets and docks, the controllers that
own each concern (:mod:`editor.controllers`) and the menus (:mod:`editor.window.menus`), and
wires their signals; what a concern does lives in its controller.

Palette and library (left), canvas (centre), inspector (right), problems, run console and run
history (bottom). Validation runs debounced after every document change and drives the node
badges, the problems list, the status bar and the Run action.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QCloseEvent, QIcon, QKeySequence
from PySide6.QtWidgets import QApplication, QDockWidget, QLabel, QMainWindow, QStackedWidget, QTabWidget, QWidget

from .canvas.scene import CanvasScene
from .canvas.view import CanvasView, local_paths
from .controllers.command_bar import CommandBarController
from .controllers.editing import EditController
from .controllers.files import FilesController
from .controllers.help import HelpController
from .controllers.inbox import InboxController
from .controllers.learn import LearnController
from .controllers.library import LibraryController
from .controllers.providers import ProvidersController, resolver_factory
from .controllers.repair import RepairController
from .controllers.run_node import RunNodeController
from .controllers.run_views import RunViewsController
from .controllers.runs import RunActions, RunController
from .controllers.schedules import SchedulesController
from .controllers.session import DocumentSession
from .controllers.tests import install_tests_dock
from .controllers.validation import ValidationController
from .editing import WorkflowDocument
from .history.panel import HistoryPanel, open_store_for_gui
from .panels.inbox import InboxPanel
from .panels.inspector import InspectorPanel
from .panels.library import LibraryPanel
from .panels.palette import PalettePanel
from .panels.problems import ProblemsPanel
from .resources import icon_path
from .run.console import RunConsole
from .run.details import NodeRunDetails
from .screen_fit import fit_resize
from .window import menus
from .window.find_bar import FindBar
from .window.settings import restore_window, save_window, settings
from .window.welcome import WelcomePage

__all__ = ["MainWindow", "settings"]


class MainWindow(QMainWindow):
    run_requested = Signal()  # Run was pressed
    validated = Signal(list)  # list[Issue], after each debounced validation
    closed = Signal()  # the window closed for good (not cancelled): the app ends with it

    def __init__(self) -> None:
        super().__init__()
        self.setObjectName("mainWindow")
        self.setWindowIcon(QIcon(icon_path("app")))
        self.document = WorkflowDocument(parent=self)
        self.scene = CanvasScene(self.document, self)
        self.view = CanvasView(self.scene)
        self.session = DocumentSession()
        self._console_max_state = None  # the dock layout to go back to when the console is maximised
        self._build_docks()
        status = self.statusBar().showMessage
        self.validation_label = QLabel()  # the status bar's summary (menus.build_status_bar places it)

        # The controllers, each given what it works on.
        self.store = open_store_for_gui(self, panel=self.history)
        self.validation = ValidationController(
            self,
            self.session,
            self.document,
            self.scene,
            self.inspector,
            self.problems,
            self.run_console,
            self.validation_label,
        )
        self.runs = RunController(
            self,
            self.session,
            self.document,
            self.scene,
            self.run_console,
            self.run_console_dock,
            self.inspector,
            self.inspector_tabs,
            self.node_run_details,
            self.history,
            self.validation,
            self.store,
            lambda: self._console_max_state is not None,
            status,
        )
        self.files = FilesController(
            self, self.session, self.document, self.scene, self.view, self.validation, self.runs.run_in_progress, status
        )
        self.library = LibraryController(
            self,
            self.library_panel,
            self.library_dock,
            self.session,
            self.document,
            self.scene,
            self.inspector,
            self.problems,
            self.run_console,
            self.files,
            self.validation,
            status,
        )
        self.edit = EditController(
            self,
            self.session,
            self.document,
            self.scene,
            self.view,
            self.inspector,
            self.inspector_dock,
            self.inspector_tabs,
            self.files.new_document,
            status,
        )
        self.providers = ProvidersController(
            self, self.run_console, self.history, self.validation, self.store, self.runs.run, status
        )
        self.commands = CommandBarController(
            self, self.store, resolver_factory, self.files.open_path, self.providers.choose_provider, status
        )
        self.repair = RepairController(
            self, self.document, self.run_console, self.run_console.current_resolver, self.runs.run_from_node, status
        )
        self.help = HelpController(self, self.store)
        self.run_node = RunNodeController(self, self.document, self.inspector, resolver_factory)

        self.welcome = WelcomePage(self.files)
        self.central.insertWidget(0, self.welcome)
        self.find_bar = FindBar(self.central, self.document, self.scene, self.view)
        menus.build_actions(self)
        menus.build_menus(self)
        menus.build_help_menu(self)
        menus.build_status_bar(self)
        self.runs.use_actions(RunActions(self.act_run, self.act_run_from, self.act_run_only))
        self.run_views = RunViewsController(
            self,
            self.session,
            self.document,
            self.run_console,
            self.run_console_dock,
            self.history,
            self.runs,
            self.files,
            self.validation,
            self.act_run,
            self.store,
            resolver_factory,
            status,
        )
        self.tests_panel, self.tests_dock = install_tests_dock(self)  # evals (issue 37)
        self.learn = LearnController(
            self, self.store, self.run_console.current_resolver, self.run_views.open_workflow_version, status
        )
        self.run_console.repair_requested.connect(self.repair.repair_node)
        self.run_console.save_as_flow_requested.connect(self.learn.save_run_as_flow)
        # The Inbox (every run waiting for a decision, answerable here) and schedules (issue 38).
        self.inbox = InboxController(
            self,
            self.inbox_panel,
            self.inbox_dock,
            self.store,
            self._run_bridges,
            self._open_inbox_run,
            status,
        )
        self.schedules = SchedulesController(self, self.library_panel, self.store, resolver_factory, status)
        self._wire()
        # The document and the canvas are deleted after the controllers that listen to them: a
        # QObject's children go in the order they were added, and a scene clearing its items
        # as it goes emits selectionChanged.
        for obj in (self.scene, self.document):
            obj.setParent(None)
            obj.setParent(self)

        fit_resize(self, 1400, 860)
        restore_window(self, self.act_snap, self.act_minimap)
        self.files.show_welcome()
        self.validation.run_validation()

    # ------------------------------------------------------------------ construction
    def _build_docks(self) -> None:
        self.central = QStackedWidget()
        self.central.addWidget(self.view)  # the welcome page goes before it, once the files controller is made
        self.setCentralWidget(self.central)
        self.palette = PalettePanel()
        self.inspector = InspectorPanel(self.document)
        self.problems = ProblemsPanel()
        self.palette_dock = self._dock("Nodes", "paletteDock", self.palette, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.inspector_dock = self._dock(
            "Inspector", "inspectorDock", self.inspector, Qt.DockWidgetArea.RightDockWidgetArea
        )
        self.problems_dock = self._dock(
            "Problems", "problemsDock", self.problems, Qt.DockWidgetArea.BottomDockWidgetArea
        )
        # Running: the console (live log, approvals, trace), the run history, and the
        # inspector's Run tab. Run state lives there, apart from the document, never undoable.
        self.run_console = RunConsole()
        self.run_console.run_action.setShortcut(QKeySequence())  # F5 is the window's Run action
        self.run_console_dock = self._dock(
            "Run console", "runConsoleDock", self.run_console, Qt.DockWidgetArea.BottomDockWidgetArea
        )
        self.history = HistoryPanel()
        self.history_dock = self._dock(
            "Run history", "historyDock", self.history, Qt.DockWidgetArea.BottomDockWidgetArea
        )
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
        self.inspector_empty = QLabel("No workflow is open.\n\nCreate a new one or open a file to edit its nodes here.")
        self.inspector_empty.setObjectName("hint")
        self.inspector_empty.setWordWrap(True)
        self.inspector_empty.setAlignment(Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop)
        self.inspector_empty.setContentsMargins(16, 24, 16, 16)
        self.inspector_stack = QStackedWidget()
        self.inspector_stack.setObjectName("inspectorStack")
        self.inspector_stack.addWidget(self.inspector_empty)
        self.inspector_stack.addWidget(self.inspector_tabs)
        self.inspector_dock.setWidget(self.inspector_stack)
        # The inspector keeps the full height on the right (its Run tab shows a node's input
        # and output); the bottom docks sit under the canvas and the palette.
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        # The Library dock, tabbed with the palette. Shown from View ▸ Library (or by "Save to
        # library"); hidden in the default layout, where the tab bar it adds under the palette
        # would take height from the palette and the console.
        self.library_panel = LibraryPanel(None)
        self.library_dock = self._dock(
            "Library", "libraryDock", self.library_panel, Qt.DockWidgetArea.LeftDockWidgetArea
        )
        self.tabifyDockWidget(self.palette_dock, self.library_dock)
        self.palette_dock.raise_()
        self.library_dock.hide()
        self.inbox_panel = InboxPanel()
        self.inbox_dock = self._dock("Inbox", "inboxDock", self.inbox_panel, Qt.DockWidgetArea.BottomDockWidgetArea)
        self.tabifyDockWidget(self.history_dock, self.inbox_dock)
        self.problems_dock.raise_()
        self._default_dock_sizes()

    def _wire(self) -> None:
        d = self.document
        d.path_changed.connect(lambda _p: self._update_title())
        d.meta_changed.connect(self._update_title)
        d.undo_stack.cleanChanged.connect(self._clean_changed)
        self.files.shown.connect(self._document_shown)
        self.files.replacing.connect(self.runs.document_replacing)
        self.files.chrome_changed.connect(self._update_chrome)
        self.validation.validated.connect(self.validated)
        self.runs.run_requested.connect(self.run_requested)
        self.runs.title_changed.connect(self._update_title)
        self.runs.nodes_requested.connect(self.edit.show_nodes)
        self.run_console.set_resolver_factory(resolver_factory)
        # The canvas's requests (the library controller took a flow node's double-click first).
        scene, view, edit = self.scene, self.view, self.edit
        scene.selectionChanged.connect(edit.selection_changed)  # scene.select_nodes() emits once per change
        scene.status_message.connect(lambda m: self.statusBar().showMessage(m, 5000))
        scene.background_double_clicked.connect(edit.quick_add)
        scene.link_dropped_on_canvas.connect(edit.link_to_new_node)
        scene.context_menu_requested.connect(lambda pos, node_id: menus.context_menu(self, pos, node_id))
        scene.annotation_menu_requested.connect(lambda pos, kind, ann: menus.annotation_menu(self, pos, kind, ann))
        scene.group_rename_requested.connect(lambda gid: menus.rename_group(self, gid))
        scene.node_activated.connect(edit.edit_node)
        view.node_dropped.connect(edit.add_node_at)
        view.files_dropped.connect(self.files.open_dropped)
        self.setAcceptDrops(True)  # a workflow file dropped from a file manager opens
        view.nudge_requested.connect(edit.nudge)
        view.zoom_changed.connect(lambda z: self.zoom_label.setText(f"{round(z * 100)}%"))
        self.palette.node_requested.connect(edit.add_node_at_centre)
        self.problems.nodes_requested.connect(edit.show_nodes)
        scene.selectionChanged.connect(self.runs.sync_console_selection)

    def _run_bridges(self) -> list:
        """The run bridges of this window: its console's and its run windows' (the Inbox answers
        a run live in one of them through it)."""
        return [self.run_console.bridge, *(w.console.bridge for w in self.run_views.run_windows if w.live)]

    def _open_inbox_run(self, item) -> None:
        """Show a waiting run of the Inbox: a local one as the history's Resume does, a remote one in its window."""
        if item.where == "temporal":
            self.run_views.resume_remote_run(item.run_id, item.server or "", "default")
        elif self.run_console.bridge.run_id == item.run_id:
            self.run_console_dock.show()
            self.run_console_dock.raise_()
        else:
            self.run_views.resume_stored_run(item.run_id)

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
    def _document_shown(self, shown: bool) -> None:
        """The canvas (a document is open) or the welcome page (none is)."""
        self.inspector.setEnabled(shown)
        self.inspector_stack.setCurrentWidget(self.inspector_tabs if shown else self.inspector_empty)
        if not shown:
            self.welcome.refresh()
        self.central.setCurrentWidget(self.view if shown else self.welcome)
        self._update_chrome()
        if shown:
            self.view.setFocus()

    def _clean_changed(self, clean: bool) -> None:
        self.setWindowModified(not clean)

    def _update_chrome(self) -> None:
        self._update_title()
        self._update_actions()

    def _update_actions(self) -> None:
        has_document = self.session.has_document
        for a in (self.act_save, self.act_save_as, self.act_revert, self.act_layout, self.act_fit, self.act_find):
            a.setEnabled(has_document)
        self.act_revert.setEnabled(has_document and bool(self.document.path))
        self.runs.update_run_action()

    def _update_title(self) -> None:
        # A run waiting for a decision is worth a glance from the task bar, whatever is open.
        waiting = "⏸ Waiting for approval — " if self.runs.waiting_for_input else ""
        if not self.session.has_document:
            self.setWindowTitle(f"{waiting}Flowdesk")
            return
        name = self.document.display_name()
        wf_name = self.document.workflow.name
        extra = f" — {wf_name}" if wf_name and self.document.path else ""
        self.setWindowTitle(f"{waiting}{name}[*]{extra} — Flowdesk")
        self.setWindowModified(self.document.is_modified())

    # ------------------------------------------------------------------ drops and closing
    # A file dropped anywhere on the window (the welcome page, a panel); the canvas passes its own on.
    def dragEnterEvent(self, event) -> None:
        if local_paths(event.mimeData()):
            event.acceptProposedAction()
        else:
            super().dragEnterEvent(event)

    def dropEvent(self, event) -> None:
        paths = local_paths(event.mimeData())
        if paths:
            event.acceptProposedAction()
            self.files.open_dropped(paths)
        else:
            super().dropEvent(event)

    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.files.maybe_save():
            event.ignore()
            return
        self.files.cancel_open()  # a big file still being read is not shown in a closed window
        # A run waiting for approval stays paused in the run history (its state was saved at
        # the pause, even while its pause is still being settled or a sibling branch runs on),
        # to be answered after a restart: cancelling it here threw that away.
        if self.run_console.bridge.status != "paused":
            self.run_console.cancel_run()  # a running run stops with the window (its events are kept)
        self.run_views.close_all()
        self.schedules.stop()
        self.set_console_maximised(False)  # the layout saved is the normal one
        save_window(self, self.act_snap, self.act_minimap, self.document.path)
        self.files.autosaver.clear()
        event.accept()
        self.close_other_windows()
        self.closed.emit()

    def close_other_windows(self) -> None:
        """The app ends with this window (issue 30, item 22): the windows it opened (Compare,
        a command bar's runs, a run's read-only view) close with it, each stopping what it runs;
        with one of them left open, Qt would keep the process alive after the main window went."""
        for widget in QApplication.topLevelWidgets():
            # (a window closed just before may be deleted already: its wrapper is no longer valid)
            if widget is self or isinstance(widget, MainWindow) or not shiboken6.isValid(widget):
                continue
            if widget.isWindow() and widget.isVisible():
                widget.close()
