"""MainWindow: docks, menus, actions and file handling - wiring only.

Palette (left), canvas (centre), inspector (right), problems and a reserved run console
(bottom). Validation runs debounced after every document change and drives the node
badges, the problems list, the status bar and the Run action.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QPointF, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QGuiApplication, QIcon, QKeySequence
from PySide6.QtWidgets import (QCompleter, QDockWidget, QFileDialog, QHBoxLayout, QLabel, QLineEdit, QMainWindow,
                               QMenu, QMessageBox, QPushButton, QSizePolicy, QStackedWidget, QTabWidget, QToolBar,
                               QVBoxLayout, QWidget, QWidgetAction)

from engine import Issue, Node, Workflow, WorkflowLoadError, errors_only, validate

from .canvas.scene import CanvasScene
from .canvas.view import CanvasView
from .document import PALETTE_KINDS, WorkflowDocument
from .history.panel import HistoryPanel, open_store_for_gui
from .files import Autosaver, orphaned_autosaves
from .panels.inspector import InspectorPanel
from .panels.palette import DESCRIPTIONS, PalettePanel
from .panels.problems import ProblemsPanel
from .resources import icon_path, samples
from .run.console import RunConsole
from .run.details import NodeRunDetails
from .run_view import RunViewWindow

log = logging.getLogger(__name__)

ORG = "Flowdesk"
APP = "Flowdesk"
MAX_RECENT = 10
FILE_FILTER = "Flowdesk workflows (*.flow.json *.json);;All files (*)"


# Bumped whenever the set of docks changes, so a layout saved by an older version (which
# Qt would apply to the new docks, squashing them) is ignored instead of restored.
DOCK_LAYOUT_VERSION = 2


def settings() -> QSettings:
    # INI everywhere (not the Windows registry) so tests can isolate it with QSettings.setPath.
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORG, APP)


class FindBar(QWidget):
    """Ctrl+F: type part of a node's name; Enter selects and shows the next match."""

    def __init__(self, window: MainWindow) -> None:
        # A sibling floating over the view, not its child: the canvas's Delete/Ctrl+A/Ctrl+C
        # shortcuts are scoped to the view and its children and must not fire while typing here.
        super().__init__(window.central)
        self.window_ = window
        self.setObjectName("findBar")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 6, 8, 6)
        self.edit = QLineEdit(self)
        self.edit.setPlaceholderText("Find node by name…")
        self.edit.setClearButtonEnabled(True)
        self.count = QLabel(self)
        self.count.setObjectName("hint")
        lay.addWidget(self.edit, 1)
        lay.addWidget(self.count)
        self.setFixedWidth(340)
        self.completer = QCompleter([], self)
        self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.completer.setFilterMode(Qt.MatchFlag.MatchContains)
        self.edit.setCompleter(self.completer)
        self.edit.textChanged.connect(self.highlight)
        self.edit.returnPressed.connect(self.next_match)
        self._cursor = -1
        self.hide()

    def open(self) -> None:
        doc = self.window_.document
        titles = sorted({self.window_.scene.node_items[n.id].layout.title for n in doc.workflow.nodes
                         if n.id in self.window_.scene.node_items})
        self.completer.model().setStringList(titles)  # type: ignore[attr-defined]
        self.move(12, 12)
        self.show()
        self.raise_()
        self.edit.setFocus()
        self.edit.selectAll()
        self.highlight(self.edit.text())

    def matches(self) -> list[str]:
        text = self.edit.text().strip().lower()
        if not text:
            return []
        scene = self.window_.scene
        return [n.id for n in self.window_.document.workflow.nodes
                if n.id in scene.node_items and (text in scene.node_items[n.id].layout.title.lower() or text == n.id.lower())]

    def highlight(self, _text: str = "") -> None:
        found = set(self.matches())
        for nid, item in self.window_.scene.node_items.items():
            item.set_found(nid in found)
        self.count.setText(f"{len(found)} found" if self.edit.text() else "")
        self._cursor = -1

    def next_match(self) -> None:
        ids = self.matches()
        if not ids:
            return
        self._cursor = (self._cursor + 1) % len(ids)
        nid = ids[self._cursor]
        self.window_.scene.select_nodes([nid])
        self.window_.view.centre_on_node(nid)

    def close_bar(self) -> None:
        for item in self.window_.scene.node_items.values():
            item.set_found(False)
        self.hide()
        self.window_.view.setFocus()

    def keyPressEvent(self, event) -> None:
        if event.key() == Qt.Key.Key_Escape:
            self.close_bar()
            return
        super().keyPressEvent(event)


class WelcomePage(QWidget):
    def __init__(self, window: MainWindow) -> None:
        super().__init__()
        self.setObjectName("welcome")
        self.window_ = window
        outer = QVBoxLayout(self)
        outer.addStretch(1)
        box = QWidget()
        box.setObjectName("welcomeBox")
        box.setMaximumWidth(560)
        lay = QVBoxLayout(box)
        lay.setSpacing(10)
        title = QLabel("Flowdesk")
        title.setObjectName("welcomeTitle")
        sub = QLabel("Draw agentic LLM workflows as graphs, then run them locally.")
        sub.setObjectName("hint")
        lay.addWidget(title)
        lay.addWidget(sub)
        row = QHBoxLayout()
        new = QPushButton(QIcon(icon_path("new")), "New workflow")
        new.setObjectName("primary")
        new.clicked.connect(window.new_document)
        opn = QPushButton(QIcon(icon_path("open")), "Open…")
        opn.clicked.connect(window.open_dialog)
        row.addWidget(new)
        row.addWidget(opn)
        row.addStretch(1)
        lay.addLayout(row)
        lay.addSpacing(8)
        head = QLabel("Samples")
        head.setObjectName("sectionTitle")
        lay.addWidget(head)
        self.sample_buttons: dict[str, QPushButton] = {}
        for path in samples():
            name = path.name.removesuffix(".flow.json")
            try:
                from engine import load_workflow

                wf = load_workflow(path)
                desc = wf.description or ""
                desc = desc if len(desc) <= 64 else desc[:63].rstrip() + "…"
                label = f"{wf.display_name()}  —  {desc}"
            except WorkflowLoadError:
                label = name
            b = QPushButton(QIcon(icon_path("sample")), label)
            b.setObjectName("sampleButton")
            b.setToolTip(f"{path}\n(opens a copy; Save As to keep it)")
            b.clicked.connect(lambda _=False, p=str(path): window.open_sample(p))
            self.sample_buttons[name] = b
            lay.addWidget(b)
        self.recent_head = QLabel("Recent")
        self.recent_head.setObjectName("sectionTitle")
        lay.addSpacing(8)
        lay.addWidget(self.recent_head)
        self.recent_box = QVBoxLayout()
        lay.addLayout(self.recent_box)
        h = QHBoxLayout()
        h.addStretch(1)
        h.addWidget(box, 3)
        h.addStretch(1)
        outer.addLayout(h)
        outer.addStretch(2)

    def refresh(self) -> None:
        while self.recent_box.count():
            w = self.recent_box.takeAt(0).widget()
            if w is not None:
                w.deleteLater()
        recent = self.window_.recent_files()
        self.recent_head.setVisible(bool(recent))
        for path in recent[:5]:
            b = QPushButton(QIcon(icon_path("open")), Path(path).name)
            b.setObjectName("sampleButton")
            b.setToolTip(path)
            b.clicked.connect(lambda _=False, p=path: self.window_.open_path(p))
            self.recent_box.addWidget(b)


class MainWindow(QMainWindow):
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
        self.inspector_dock.setWidget(self.inspector_tabs)
        self.run_windows: list[RunViewWindow] = []
        # The inspector keeps the full height on the right (its Run tab shows a node's input
        # and output); the bottom docks sit under the canvas and the palette.
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)
        self._default_dock_sizes()

        self._build_actions()
        self._build_menus()
        self._build_status_bar()

        self._validate_timer = QTimer(self, singleShot=True, interval=150)
        self._validate_timer.timeout.connect(self.run_validation)
        self._autosave_timer = QTimer(self, interval=5000)
        self._autosave_timer.timeout.connect(self.autosave_now)
        self._autosave_timer.start()

        d = self.document
        d.changed.connect(self._validate_timer.start)
        self._autosave_dirty = False
        d.changed.connect(self._mark_autosave_dirty)
        d.undo_stack.cleanChanged.connect(self._on_clean_changed)
        d.path_changed.connect(lambda _p: self._update_title())
        d.meta_changed.connect(self._update_title)
        # scene.select_nodes() emits one selectionChanged per change, so this stays cheap.
        self.scene.selectionChanged.connect(self._selection_changed)
        self.scene.status_message.connect(lambda m: self.statusBar().showMessage(m, 5000))
        self.scene.background_double_clicked.connect(self._quick_add)
        self.scene.context_menu_requested.connect(self._context_menu)
        self.scene.node_activated.connect(self._edit_node)
        self.view.node_dropped.connect(self._add_node_at)
        self.view.zoom_changed.connect(lambda z: self.zoom_label.setText(f"{round(z * 100)}%"))
        self.palette.node_requested.connect(self._add_node_at_centre)
        self.problems.nodes_requested.connect(self.show_nodes)
        self._wire_running()

        self.resize(1400, 860)
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

    def _action(self, text: str, icon: str | None = None, shortcut=None, slot=None, tip: str = "",
                local: bool = False) -> QAction:
        action = QAction(QIcon(icon_path(icon)) if icon else QIcon(), text, self)
        if shortcut is not None:
            if isinstance(shortcut, list):
                action.setShortcuts(shortcut)
            else:
                action.setShortcut(QKeySequence(shortcut))
        if tip:
            action.setToolTip(tip)
            action.setStatusTip(tip)
        if slot is not None:
            action.triggered.connect(slot)
        if local:
            # Canvas editing keys must not fire while typing in the inspector.
            action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
            self.view.addAction(action)
        return action

    def _build_actions(self) -> None:
        K = QKeySequence.StandardKey
        self.act_new = self._action("&New", "new", K.New, self.new_document, "New workflow")
        self.act_open = self._action("&Open…", "open", K.Open, self.open_dialog, "Open a workflow file")
        self.act_save = self._action("&Save", "save", K.Save, self.save, "Save")
        self.act_save_as = self._action("Save &As…", "save-as", K.SaveAs, self.save_as, "Save under a new name")
        self.act_revert = self._action("&Revert", "revert", None, self.revert, "Discard changes and reload the file")
        self.act_quit = self._action("&Quit", None, K.Quit, self.close)
        stack = self.document.undo_stack
        self.act_undo = stack.createUndoAction(self, "&Undo")
        self.act_undo.setIcon(QIcon(icon_path("undo")))
        self.act_undo.setShortcut(K.Undo)
        self.act_redo = stack.createRedoAction(self, "&Redo")
        self.act_redo.setIcon(QIcon(icon_path("redo")))
        self.act_redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
        self.act_copy = self._action("&Copy", "copy", K.Copy, self.copy, local=True)
        self.act_cut = self._action("Cu&t", "cut", K.Cut, self.cut, local=True)
        self.act_paste = self._action("&Paste", "paste", K.Paste, self.paste, local=True)
        self.act_duplicate = self._action("&Duplicate", "duplicate", "Ctrl+D", self.duplicate, local=True)
        self.act_delete = self._action("De&lete", "delete", [QKeySequence(Qt.Key.Key_Delete),
                                                               QKeySequence(Qt.Key.Key_Backspace)],
                                       self.delete_selection, local=True)
        self.act_select_all = self._action("Select &All", None, K.SelectAll, self.select_all, local=True)
        self.act_find = self._action("&Find Node…", "find", K.Find, self.find_bar.open, "Find a node by name")
        self.act_fit = self._action("&Fit to View", "fit", [QKeySequence("F"), QKeySequence("Ctrl+0")],
                                    self.fit, "Fit the whole graph (F, Ctrl+0)", local=True)
        self.act_fit.setShortcuts([QKeySequence("F"), QKeySequence("Ctrl+0")])
        self.act_zoom_100 = self._action("Actual &Size", "zoom-100", "Ctrl+1", lambda: self.view.set_zoom(1.0),
                                         "Zoom to 100% (Ctrl+1)")
        self.act_zoom_in = self._action("Zoom &In", "zoom-in", K.ZoomIn, lambda: self.view.zoom_by(1.25))
        self.act_zoom_out = self._action("Zoom &Out", "zoom-out", K.ZoomOut, lambda: self.view.zoom_by(0.8))
        self.act_layout = self._action("Auto-&Layout", "layout", "Ctrl+L", self.auto_layout,
                                       "Arrange the graph (or the selection) left to right")
        self.act_snap = self._action("Snap to &Grid", "grid", None, None, "Snap moved nodes to the grid")
        self.act_snap.setCheckable(True)
        self.act_snap.setIconVisibleInMenu(False)  # a menu draws an icon instead of the check mark
        self.act_snap.toggled.connect(self.scene.set_snap)
        self.act_minimap = self._action("&Minimap", "minimap", None, None, "Show the minimap")
        self.act_minimap.setCheckable(True)
        self.act_minimap.setIconVisibleInMenu(False)
        self.act_minimap.setChecked(True)
        self.act_minimap.setToolTip("Show the minimap when part of the graph is out of view")
        self.act_minimap.toggled.connect(self.view.set_minimap_enabled)
        self.act_collapse = self._action("Collapse / E&xpand", "collapse", "Ctrl+E", self.toggle_collapse, local=True)
        self.act_run = self._action("&Run", "run", [QKeySequence("F5"), QKeySequence("Ctrl+R")], self._run,
                                    "Run the workflow")
        self.act_run.setEnabled(False)
        for a in (self.act_undo, self.act_redo, self.act_find, self.act_zoom_100, self.act_zoom_in, self.act_zoom_out,
                  self.act_layout, self.act_run):
            self.addAction(a)

    def _build_menus(self) -> None:
        mb = self.menuBar()
        f = mb.addMenu("&File")
        f.addActions([self.act_new, self.act_open])
        self.recent_menu = f.addMenu(QIcon(icon_path("recent")), "Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self.sample_menu = f.addMenu(QIcon(icon_path("sample")), "Open Sa&mple")
        for path in samples():
            a = self.sample_menu.addAction(path.name.removesuffix(".flow.json"))
            a.triggered.connect(lambda _=False, p=str(path): self.open_sample(p))
        f.addSeparator()
        f.addActions([self.act_save, self.act_save_as, self.act_revert])
        f.addSeparator()
        f.addAction(self.act_quit)
        e = mb.addMenu("&Edit")
        e.addActions([self.act_undo, self.act_redo])
        e.addSeparator()
        e.addActions([self.act_cut, self.act_copy, self.act_paste, self.act_duplicate, self.act_delete])
        e.addSeparator()
        e.addActions([self.act_select_all, self.act_find])
        add = e.addMenu(QIcon(icon_path("add")), "Add &Node")
        for kind in PALETTE_KINDS:
            a = add.addAction(QIcon(icon_path(f"node-{kind}")), DESCRIPTIONS[kind][0])
            a.triggered.connect(lambda _=False, k=kind: self._add_node_at_centre(k))
        v = mb.addMenu("&View")
        v.addActions([self.act_fit, self.act_zoom_100, self.act_zoom_in, self.act_zoom_out])
        v.addSeparator()
        v.addActions([self.act_layout, self.act_collapse, self.act_snap, self.act_minimap])
        v.addSeparator()
        for dock in (self.palette_dock, self.inspector_dock, self.problems_dock, self.run_console_dock,
                     self.history_dock):
            v.addAction(dock.toggleViewAction())
        r = mb.addMenu("&Run")
        r.addActions([self.act_run, self.run_console.cancel_action])
        r.addSeparator()
        self.provider_menu = r.addMenu("LLM &Provider")
        self.provider_menu.aboutToShow.connect(self._fill_provider_menu)
        r.addAction("Provider &Settings…", self.open_provider_settings)
        r.addSeparator()
        r.addAction(self.history_dock.toggleViewAction())

        tb = QToolBar("Main", self)
        tb.setObjectName("mainToolbar")
        tb.setMovable(False)
        tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
        tb.addActions([self.act_new, self.act_open, self.act_save])
        tb.addSeparator()
        tb.addActions([self.act_undo, self.act_redo])
        tb.addSeparator()
        tb.addActions([self.act_fit, self.act_zoom_100, self.act_layout, self.act_find])
        spacer = QWidget()
        spacer.setObjectName("toolbarSpacer")
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        tb.addWidget(spacer)
        tb.addAction(self.act_run)
        tb.addAction(self.run_console.cancel_action)
        run_button = tb.widgetForAction(self.act_run)
        if run_button is not None:
            run_button.setObjectName("runButton")
            tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
        self.addToolBar(tb)
        self.toolbar = tb

    def _build_status_bar(self) -> None:
        sb = self.statusBar()
        self.validation_label = QLabel()
        self.validation_label.setObjectName("validationLabel")
        self.zoom_label = QLabel("100%")
        self.zoom_label.setObjectName("hint")
        sb.addPermanentWidget(self.validation_label)
        sb.addPermanentWidget(self.zoom_label)

    def _default_dock_sizes(self) -> None:
        self.resizeDocks([self.palette_dock, self.inspector_dock], [236, 350], Qt.Orientation.Horizontal)
        # Room for a few runs of the history (and the log); the canvas keeps the rest. (The
        # size asked for includes the tab bar of the tabbed bottom docks.)
        self.resizeDocks([self.problems_dock], [340], Qt.Orientation.Vertical)

    # ------------------------------------------------------------------ settings
    def _restore_settings(self) -> None:
        s = settings()
        geo = s.value("window/geometry")
        if isinstance(geo, QByteArray) and not geo.isEmpty():
            self.restoreGeometry(geo)
        state = s.value("window/state")
        if isinstance(state, QByteArray) and not state.isEmpty():
            self.restoreState(state, DOCK_LAYOUT_VERSION)
        self.act_snap.setChecked(s.value("canvas/snap", False, type=bool))
        self.act_minimap.setChecked(s.value("canvas/minimap", True, type=bool))

    def _save_settings(self) -> None:
        s = settings()
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState(DOCK_LAYOUT_VERSION))
        s.setValue("canvas/snap", self.act_snap.isChecked())
        s.setValue("canvas/minimap", self.act_minimap.isChecked())
        s.setValue("lastFile", self.document.path or "")
        s.sync()

    def recent_files(self) -> list[str]:
        value = settings().value("recentFiles", [])
        if isinstance(value, str):
            value = [value] if value else []
        return [str(v) for v in (value or [])]

    def _add_recent(self, path: str) -> None:
        recent = [p for p in self.recent_files() if p != path]
        recent.insert(0, path)
        s = settings()
        s.setValue("recentFiles", recent[:MAX_RECENT])
        s.setValue("lastFile", path)
        s.sync()

    def _fill_recent_menu(self) -> None:
        self.recent_menu.clear()
        recent = self.recent_files()
        if not recent:
            a = self.recent_menu.addAction("(none)")
            a.setEnabled(False)
            return
        for path in recent:
            a = self.recent_menu.addAction(Path(path).name)
            a.setToolTip(path)
            a.triggered.connect(lambda _=False, p=path: self.open_path(p))
        self.recent_menu.addSeparator()
        clear = self.recent_menu.addAction("Clear list")
        clear.triggered.connect(lambda: settings().setValue("recentFiles", []))

    # ------------------------------------------------------------------ document state
    def _show_welcome(self) -> None:
        self._has_document = False
        self.inspector.setEnabled(False)
        self.welcome.refresh()
        self.central.setCurrentWidget(self.welcome)
        self._update_title()
        self._update_actions()

    def _show_canvas(self) -> None:
        self._has_document = True
        self.inspector.setEnabled(True)
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

    def _on_clean_changed(self, clean: bool) -> None:
        self.setWindowModified(not clean)
        if clean:
            self.autosaver.clear()

    def run_validation(self) -> None:
        if not self._has_document:
            # The welcome page has no workflow to judge.
            self.issues = []
            self.scene.set_issues([])
            self.problems.list.clear()
            self.validation_label.setText("No workflow open")
            self.validation_label.setProperty("state", "")
            self._update_run_action()
            return
        if not hasattr(self, "_search_backend"):
            self._search_backend = self._web_search_available()  # read once, not on every edit
        self.issues = validate(self.document.workflow, web_search_available=self._search_backend)
        self.scene.set_issues(self.issues)
        # What Run will start, so the console's input box shows the Start node's text before a run.
        self.run_console.set_workflow(self.document.workflow, self.document.path)
        self.problems.set_issues(self.issues)
        errors = errors_only(self.issues)
        warnings = len(self.issues) - len(errors)
        if errors:
            text = f"{len(errors)} error{'s' * (len(errors) != 1)}"
            if warnings:
                text += f", {warnings} warning{'s' * (warnings != 1)}"
            self.validation_label.setProperty("state", "error")
        elif warnings:
            text = f"✓ Ready to run · {warnings} warning{'s' * (warnings != 1)}"
            self.validation_label.setProperty("state", "warning")
        else:
            text = "✓ Ready to run"
            self.validation_label.setProperty("state", "ok")
        self.validation_label.setText(text)
        self.validation_label.setToolTip(errors[0].message if errors else "No errors")
        self.validation_label.style().unpolish(self.validation_label)
        self.validation_label.style().polish(self.validation_label)
        self._update_run_action()
        self.validated.emit(self.issues)

    def _update_run_action(self) -> None:
        errors = errors_only(self.issues) if self._has_document else []
        busy = self.run_console.bridge.is_active
        ok = self._has_document and not errors and not busy
        self.act_run.setEnabled(ok)
        if busy:  # F5 would do nothing: say why, and how to stop the run
            waiting = self.run_console.status == "paused"
            self.act_run.setToolTip("A run is waiting for approval (answer it in the run console, or Shift+F5 "
                                    "cancels it)" if waiting else "A run is in progress (Shift+F5 cancels it)")
        elif not self._has_document:
            self.act_run.setToolTip("Open a workflow to run it")
        elif errors:
            self.act_run.setToolTip(f"Cannot run: {errors[0].message}")
        else:
            self.act_run.setToolTip("Run the workflow (Ctrl+R)")

    def _run(self) -> None:
        if not self._has_document:
            return
        self.run_console_dock.show()
        self.run_console_dock.raise_()
        # Room for the log and an approval card, the canvas keeping the larger part. The view
        # frames the graph again as it shrinks (if it was framed), so no node ends up cut off.
        want = min(400, int(self.height() * 0.46))
        if self.run_console_dock.height() < want and not self.run_console_dock.isFloating():
            self.resizeDocks([self.run_console_dock], [want], Qt.Orientation.Vertical)
        # The console runs a deep copy: edits made during the run do not reach it.
        self.run_console.set_workflow(self.document.workflow, self.document.path)
        previous, self._run_doc = self._run_doc, self._doc_serial
        if self.run_console.start_run() is None:
            self._run_doc = previous  # nothing started: the run shown before stays as it was
        self.run_requested.emit()

    # ------------------------------------------------------------------ running
    def _wire_running(self) -> None:
        console = self.run_console
        # The console's Run button is the window's Run action: it used to start the console's
        # own copy of the workflow, set at the previous F5, so after an edit it ran the old
        # graph (and before the first run it was disabled while F5 worked).
        self.act_run.setIconText("▶ Run")
        console.run_button.removeAction(console.run_action)  # else two actions: a menu arrow
        console.run_button.setDefaultAction(self.act_run)
        self.store = open_store_for_gui(self, panel=self.history)
        console.set_store(self.store)
        console.set_resolver_factory(self._resolver_factory)
        self._run_states: dict[str, str] = {}
        self._run_links: set = set()
        self._waiting_for_input = False
        # The canvas shows the console's run only on the document that run belongs to: the one
        # Run was pressed on, or the one a stored run was taken up on. Opening another file
        # (or New) gives the document a new serial, and the old run is no longer painted there.
        self._doc_serial = 0
        self._run_doc: int | None = None
        console.node_states_changed.connect(self._on_run_states)
        console.links_followed.connect(self._on_run_links)
        console.node_activated.connect(self._run_entry_activated)
        console.waiting_for_input_changed.connect(self._on_waiting_changed)
        console.run_started.connect(self._run_started)
        console.run_finished.connect(self._run_finished)
        console.status_changed.connect(self._run_status_changed)
        self.history.run_opened.connect(self.open_run_view)
        self.history.workflow_version_requested.connect(self.open_workflow_version)
        self.history.resume_requested.connect(self._resume_stored_run)
        self.scene.selectionChanged.connect(self._sync_console_selection)

    def _resolver_factory(self) -> Any:
        from engine import make_resolver

        provider = str(settings().value("run/provider", "") or "") or None
        return make_resolver(provider)

    def _fill_provider_menu(self) -> None:
        from engine import available_providers

        menu = self.provider_menu
        menu.clear()
        current = str(settings().value("run/provider", "") or "")
        group = QActionGroup(menu)
        hints = {"echo": "echo — offline, answers with its prompt (for trying a flow)"}
        choices = [("", "Each agent's own, else the default")] + [(p, hints.get(p, p)) for p in available_providers()]
        for value, label in choices:
            a = menu.addAction(label)
            a.setData(value)
            a.setCheckable(True)
            a.setChecked(value == current)
            group.addAction(a)
            a.triggered.connect(lambda _=False, v=value: settings().setValue("run/provider", v))

    def _web_search_available(self) -> bool | None:
        """Whether agents with web search have a backend (None: the settings cannot be read)."""
        from engine import web_search_available

        try:
            return web_search_available()
        except Exception:  # a broken settings file is reported where providers are used
            return None

    def open_provider_settings(self) -> None:
        from .panels.provider_settings import ProviderSettingsDialog

        dialog = ProviderSettingsDialog(self)
        if dialog.exec():
            self.statusBar().showMessage("Provider settings saved.", 4000)
            self._search_backend = self._web_search_available()  # it may have changed
            self.run_validation()

    def _on_run_states(self, states: dict) -> None:
        self._run_states = dict(states)
        self._show_run_states()

    def _on_run_links(self, links: Any) -> None:
        self._run_links = set(links)
        self._show_run_states()

    def _on_waiting_changed(self, waiting: bool) -> None:
        self._waiting_for_input = waiting
        self._update_title()
        self._update_run_action()

    def _show_run_states(self) -> None:
        # "skipped" (not reached) and "cancelled" come from the console; the canvas dims the
        # first and shows the second as not reached either.
        if not self._run_on_canvas():
            self.scene.clear_run_states()
        else:
            states = {k: ("not_reached" if v in ("skipped", "cancelled") else v) for k, v in self._run_states.items()}
            self.scene.set_run_states(states, self._run_links, self.run_console.node_errors())
        self._update_node_run_details()

    def _run_on_canvas(self) -> bool:
        """The console's run belongs to the document on the canvas."""
        return self._has_document and self._run_doc is not None and self._run_doc == self._doc_serial

    def _run_entry_activated(self, node_id: str) -> None:
        if node_id in self.scene.node_items:
            self.show_nodes([node_id])

    def _sync_console_selection(self) -> None:
        ids = self.scene.selected_node_ids()
        if len(ids) == 1:
            self.run_console.show_node(ids[0])
        self._update_node_run_details()

    def _update_node_run_details(self) -> None:
        ids = self.scene.selected_node_ids()
        if len(ids) != 1 or not self._run_on_canvas():
            self.node_run_details.set_details(None)
            return
        node = self.document.node(ids[0])
        details = self.run_console.node_details(ids[0])
        self.node_run_details.set_details(details or None, node.title if node else ids[0])

    def _run_started(self, _run_id: str) -> None:
        self.history.refresh()
        self._update_run_action()
        if self._run_on_canvas():
            # Watching a run: the inspector shows what the selected node did (Edit is one click away).
            self.inspector_tabs.setCurrentWidget(self.node_run_details)

    def _run_status_changed(self, status: str) -> None:
        self._update_node_run_details()
        if status in ("running", "paused"):
            # The recorder writes the run's row from its own thread, so at run_started it may
            # not be stored yet and the history missed it (a paused run then stayed unlisted,
            # with nothing to refresh the list). At a pause the row is committed; "running"
            # comes with the first events, by when it normally is (the panel then keeps
            # polling while its page shows a running run).
            self.history.refresh()

    def _run_finished(self, status: str) -> None:
        self._update_run_action()
        self.history.refresh()
        self._update_title()
        self.statusBar().showMessage(f"Run {status}", 5000)

    def _resume_stored_run(self, run_id: str) -> None:
        """Take up a paused stored run in the console. Its states go on the canvas when the
        canvas shows the graph that ran; with no document open, that workflow is opened (as an
        untitled copy, like a sample) so the run can be seen where it waits."""
        self.run_console_dock.show()
        self.run_console_dock.raise_()
        if self.run_console.bridge.is_active:
            self.run_console.open_paused_run(run_id)  # refused, with the reason in the console
            return
        workflow = None
        if self.store is not None:
            try:
                workflow = self.store.workflow_of(run_id)
            except Exception:  # StoreError, an unreadable workflow: the console says why below
                workflow = None
        previous = self._run_doc
        if workflow is not None and not self._has_document:
            self._replace_document(workflow.model_copy(deep=True), None)
            self.statusBar().showMessage(f"Opened the workflow of run {run_id[:8]} to resume it; "
                                         "Save As to keep it.", 6000)
        same = workflow is not None and self._has_document and _same_graph(workflow, self.document.workflow)
        self._run_doc = self._doc_serial if same else None
        if not self.run_console.open_paused_run(run_id):
            self._run_doc = previous
        self._show_run_states()

    def open_run_view(self, run_id: str, workflow: Workflow, events: list, info: Any) -> None:
        """Show a stored run read-only, on the workflow snapshot that actually ran."""
        for open_win in self.run_windows:
            if open_win.run_id == run_id:  # already open: bring it forward instead of a second copy
                open_win.show()
                open_win.raise_()
                open_win.activateWindow()
                return
        win = RunViewWindow(run_id, workflow, events, info, store=self.store)
        win.version_requested.connect(self.open_workflow_version)
        win.destroyed.connect(lambda _=None, w=win: self.run_windows.remove(w) if w in self.run_windows else None)
        self.run_windows.append(win)
        win.show()

    def open_workflow_version(self, workflow: Workflow, run_id: str = "") -> None:
        """Open the workflow that a stored run used as a new, unsaved document."""
        if not self.maybe_save():
            return
        self._replace_document(workflow.model_copy(deep=True), None)
        self.document.undo_stack.resetClean()
        self.raise_()
        self.activateWindow()
        self.statusBar().showMessage(f"Opened the workflow of run {run_id[:8]} as a new document; Save As to keep it.",
                                     6000)

    # ------------------------------------------------------------------ files
    def maybe_save(self) -> bool:
        """Ask about unsaved changes; False means the user cancelled."""
        if not (self._has_document and self.document.is_modified()):
            return True
        answer = QMessageBox.question(
            self, "Unsaved changes", f"Save the changes to “{self.document.display_name()}” before closing it?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Save)
        if answer == QMessageBox.StandardButton.Save:
            return self.save()
        return answer == QMessageBox.StandardButton.Discard

    def _replace_document(self, workflow: Workflow, path: str | None) -> None:
        self._doc_serial += 1  # a run shown on the previous document is not this one's
        self.autosaver.clear()
        self.document.reset(workflow, path)
        self._show_canvas()
        self.run_validation()
        if not self.view.isVisible():
            QTimer.singleShot(0, self.view.fit_all)  # the viewport has no size until shown
        self.view.fit_all()

    def new_document(self) -> None:
        if not self.maybe_save():
            return
        start = Node.model_validate({"id": "start", "type": "start", "x": 80, "y": 200, "data": {"initialInput": ""}})
        self._replace_document(Workflow(name="Untitled workflow", version=1, nodes=[start]), None)
        self.view.set_zoom(1.0, QPointF(420, 260))

    def open_dialog(self) -> None:
        if not self.maybe_save():
            return
        start = str(Path(self.document.path).parent) if self.document.path else str(Path.home())
        path, _ = QFileDialog.getOpenFileName(self, "Open workflow", start, FILE_FILTER)
        if path:
            self.open_path(path, ask=False)

    def open_path(self, path: str, ask: bool = True) -> bool:
        """Open ``path``; a file that cannot be read shows the loader's message and changes nothing."""
        if ask and not self.maybe_save():
            return False
        try:
            from engine import load_workflow

            workflow = load_workflow(path)
        except WorkflowLoadError as err:
            QMessageBox.critical(self, "Cannot open workflow", str(err))
            return False
        self._replace_document(workflow, str(Path(path).resolve()))
        self._add_recent(str(Path(path).resolve()))
        self.statusBar().showMessage(f"Opened {path}", 4000)
        return True

    def open_sample(self, path: str) -> bool:
        """Open a sample as an untitled copy, so saving never overwrites the shipped sample."""
        if not self.maybe_save():
            return False
        try:
            from engine import load_workflow

            workflow = load_workflow(path)
        except WorkflowLoadError as err:
            QMessageBox.critical(self, "Cannot open sample", str(err))
            return False
        self._replace_document(workflow, None)
        self.statusBar().showMessage(f"Opened a copy of the sample {Path(path).name}; Save As to keep it.", 5000)
        return True

    def save(self) -> bool:
        if not self._has_document:
            return False
        if not self.document.path:
            return self.save_as()
        return self._save_to(self.document.path)

    def save_as(self) -> bool:
        if not self._has_document:
            return False
        suggested = self.document.path or str(Path.home() / f"{(self.document.workflow.name or 'workflow').lower().replace(' ', '-')}.flow.json")
        path, _ = QFileDialog.getSaveFileName(self, "Save workflow as", suggested, FILE_FILTER)
        if not path:
            return False
        if not path.endswith(".json"):
            path += ".flow.json"
        return self._save_to(path)

    def _save_to(self, path: str) -> bool:
        try:
            self.document.save(path)
        except OSError as err:
            QMessageBox.critical(self, "Cannot save", f"{path}: {err.strerror or err}")
            return False
        self._add_recent(str(Path(path).resolve()))
        self.autosaver.clear()
        self._update_title()
        self._update_actions()
        self.statusBar().showMessage(f"Saved {path}", 4000)
        return True

    def revert(self) -> None:
        path = self.document.path
        if not path:
            return
        if self.document.is_modified():
            answer = QMessageBox.question(self, "Revert", f"Discard your changes and reload “{Path(path).name}”?",
                                          QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel)
            if answer != QMessageBox.StandardButton.Discard:
                return
        self.open_path(path, ask=False)

    def _mark_autosave_dirty(self) -> None:
        self._autosave_dirty = True

    def autosave_now(self) -> None:
        """Write the autosave file if the document changed since the last one and is unsaved."""
        if self._has_document and self.document.is_modified() and self._autosave_dirty:
            self.autosaver.write(self.document.workflow, self.document.path)
            self._autosave_dirty = False

    def offer_recovery(self) -> bool:
        """Offer autosaves left by a crashed session; returns True when one was restored."""
        found = orphaned_autosaves()
        if not found:
            return False
        latest = found[0]
        where = latest.original_path or "an untitled workflow"
        answer = QMessageBox.question(
            self, "Recover unsaved work?",
            f"Flowdesk closed unexpectedly with unsaved changes to {where} "
            f"({latest.workflow.display_name()}). Recover them?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, QMessageBox.StandardButton.Yes)
        for rec in found:
            try:
                rec.file.unlink()
            except OSError:
                pass
        if answer != QMessageBox.StandardButton.Yes:
            return False
        self._replace_document(latest.workflow, latest.original_path)
        self.document.undo_stack.resetClean()  # recovered work is unsaved
        self._update_title()
        self.autosave_now()
        return True

    def start(self, argv: list[str]) -> None:
        """What ``flowdesk [FILE]`` opens: the file, else a crash recovery, else the last document."""
        files = [a for a in argv if not a.startswith("-")]
        if files:
            self.open_path(files[0], ask=False)
            return
        if self.offer_recovery():
            return
        last = settings().value("lastFile", "")
        if last and Path(str(last)).is_file():
            self.open_path(str(last), ask=False)

    # ------------------------------------------------------------------ editing
    def _add_node_at(self, kind: str, pos: QPointF) -> None:
        if not self._has_document:
            return
        x, y = round(pos.x()), round(pos.y())
        if self.scene.snap_to_grid:
            from .canvas.style import GRID

            x, y = round(x / GRID) * GRID, round(y / GRID) * GRID
        nid = self.document.add_node(kind, x, y)
        self.scene.select_nodes([nid])

    def _add_node_at_centre(self, kind: str) -> None:
        if not self._has_document:
            self.new_document()
        c = self.view.mapToScene(self.view.viewport().rect().center())
        self._add_node_at(kind, QPointF(c.x() - 110, c.y() - 40))

    def _quick_add(self, pos: QPointF) -> None:
        """Double-click on the canvas: a small searchable menu of node types."""
        menu = QMenu(self)
        menu.setObjectName("quickAdd")
        search = QLineEdit(menu)
        search.setPlaceholderText("Add node…")
        field = QWidgetAction(menu)
        field.setDefaultWidget(search)
        menu.addAction(field)
        entries = []
        for kind in PALETTE_KINDS:
            name, desc = DESCRIPTIONS[kind]
            a = menu.addAction(QIcon(icon_path(f"node-{kind}")), name)
            a.setToolTip(desc)
            a.triggered.connect(lambda _=False, k=kind: self._add_node_at(k, pos))
            entries.append((f"{name} {desc}".lower(), a))

        def filter_(text: str) -> None:
            for words, a in entries:
                a.setVisible(text.lower() in words)

        def pick() -> None:
            for _words, a in entries:
                if a.isVisible():
                    a.trigger()
                    menu.close()
                    return

        search.textChanged.connect(filter_)
        search.returnPressed.connect(pick)
        self.quick_add_menu = menu
        menu.popup(self.view.mapToGlobal(self.view.mapFromScene(pos)))
        search.setFocus()

    def _context_menu(self, pos: QPointF, node_id: str | None) -> None:
        menu = QMenu(self)
        if node_id is not None:
            menu.addActions([self.act_collapse, self.act_duplicate, self.act_copy, self.act_delete])
            menu.addSeparator()
            menu.addAction(self.act_layout)
        else:
            add = menu.addMenu(QIcon(icon_path("add")), "Add node")
            for kind in PALETTE_KINDS:
                a = add.addAction(QIcon(icon_path(f"node-{kind}")), DESCRIPTIONS[kind][0])
                a.triggered.connect(lambda _=False, k=kind: self._add_node_at(k, pos))
            menu.addActions([self.act_paste, self.act_select_all])
            menu.addSeparator()
            menu.addActions([self.act_layout, self.act_fit])
        menu.popup(self.view.mapToGlobal(self.view.mapFromScene(pos)))

    def _edit_node(self, _node_id: str) -> None:
        """A double-click on a node body: show its settings."""
        self.inspector_dock.show()
        self.inspector_dock.raise_()
        self.inspector_tabs.setCurrentWidget(self.inspector)

    def _selection_changed(self) -> None:
        self.inspector.show_selection(self.scene.selected_node_ids())

    def show_nodes(self, ids: list[str]) -> None:
        self.scene.select_nodes(ids)
        if ids:
            self.view.centre_on_node(ids[0])

    def copy(self) -> None:
        ids = self.scene.selected_node_ids()
        if ids:
            QGuiApplication.clipboard().setText(self.document.fragment_json(ids))
            self.statusBar().showMessage(f"Copied {len(ids)} node{'s' * (len(ids) != 1)}", 3000)

    def cut(self) -> None:
        self.copy()
        self.delete_selection()

    def paste(self) -> None:
        text = QGuiApplication.clipboard().text()
        self._paste_text(text)

    def _paste_text(self, text: str) -> None:
        if not text.strip() or not self._has_document:
            return
        try:
            ids = self.document.paste_json(text, at=self.view.paste_position(text))
        except WorkflowLoadError as err:
            self.statusBar().showMessage(f"Nothing to paste: the clipboard does not hold workflow JSON ({err})", 5000)
            return
        self.scene.select_nodes(ids)

    def duplicate(self) -> None:
        ids = self.scene.selected_node_ids()
        if ids:
            self._paste_text(self.document.fragment_json(ids))

    def delete_selection(self) -> None:
        self.document.delete(self.scene.selected_node_ids(), self.scene.selected_conn_keys())

    def select_all(self) -> None:
        self.scene.select_nodes(list(self.scene.node_items))

    def toggle_collapse(self) -> None:
        ids = self.scene.selected_node_ids()
        if ids:
            any_open = any(not self.document.node(i).data.collapsed for i in ids)
            self.document.set_collapsed(ids, any_open)

    def auto_layout(self) -> None:
        ids = self.scene.selected_node_ids()
        self.document.auto_layout(ids if len(ids) > 1 else None)
        if len(ids) <= 1:
            self.view.fit_all()

    def fit(self) -> None:
        self.view.fit_all()

    # ------------------------------------------------------------------ closing
    def closeEvent(self, event: QCloseEvent) -> None:
        if not self.maybe_save():
            event.ignore()
            return
        bridge = self.run_console.bridge
        run = bridge.run
        if run is not None and run.status == "paused" and not bridge.is_busy:
            # A run waiting for approval stays paused in the run history (its state was saved
            # at the pause), to be answered after a restart: cancelling it here threw that away.
            pass
        else:
            self.run_console.cancel_run()  # a running run stops with the window (its events are kept)
        for win in list(self.run_windows):
            win.close()
        self._save_settings()
        self.autosaver.clear()
        event.accept()


def _same_graph(a: Workflow, b: Workflow) -> bool:
    """The same nodes (ids and types) and links: a run of ``a`` can be shown on ``b``."""
    return ({(n.id, n.type) for n in a.nodes} == {(n.id, n.type) for n in b.nodes}
            and {c.key() for c in a.connections} == {c.key() for c in b.connections})
