"""The main window's actions, menus, toolbar and status bar, and its pop-up menus
(recent files, quick add on a double-click, the canvas context menu)."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QAction, QIcon, QKeySequence
from PySide6.QtWidgets import QLabel, QLineEdit, QMenu, QSizePolicy, QToolBar, QWidget, QWidgetAction

from ..document import PALETTE_KINDS
from ..panels.palette import DESCRIPTIONS, entry_icon
from ..resources import icon_path
from .settings import settings
from .welcome import sample_list


class MenusMixin:
    """Builds the window's actions (``act_*``), menus, toolbar and status bar; each action's
    slot is a window method defined in the module that owns that concern."""

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
        self.act_export = self._action("&Export as AnythingLLM Agent Flow…", None, None, self.export_dialog,
                                       "Write this workflow as an AnythingLLM agent flow")
        self.act_command = self._action("&Command Bar…", None, "Ctrl+K", self.open_command_bar,
                                        "Run a library flow by saying what you want (trigger phrases, or the model)")
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
        self.act_edit_node = self._action("&Edit Node", None, "F2", self.edit_selected_node,
                                          "Type in the selected node's first field (an agent's name)", local=True)
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
        self.act_run_from = self._action("Run from &Here", "run-from", "Ctrl+Alt+R", lambda: self.run_from_node(),
                                         "Run from the selected node: the nodes before it reuse their outputs "
                                         "from the last run (from cache) when nothing they depend on changed")
        self.act_run_from.setIconText("▶ From here")
        self.act_run_only = self._action("Run &Only This Node", None, None, lambda: self.run_from_node(only=True),
                                         "Run the selected node alone, its inputs from the last run")
        self.act_max_console = self._action("Ma&ximise Run Console", None, "Ctrl+Shift+M", None,
                                            "The run console takes the whole window, or goes back (Ctrl+Shift+M); "
                                            "its title bar's float button detaches it")
        self.act_max_console.setCheckable(True)
        self.act_max_console.toggled.connect(self.set_console_maximised)
        for a in (self.act_undo, self.act_redo, self.act_find, self.act_zoom_100, self.act_zoom_in, self.act_zoom_out,
                  self.act_layout, self.act_run, self.act_max_console):
            self.addAction(a)

    def _build_menus(self) -> None:
        mb = self.menuBar()
        f = mb.addMenu("&File")
        f.addActions([self.act_new, self.act_open])
        self.recent_menu = f.addMenu(QIcon(icon_path("recent")), "Open &Recent")
        self.recent_menu.aboutToShow.connect(self._fill_recent_menu)
        self.sample_menu = f.addMenu(QIcon(icon_path("sample")), "Open Sa&mple")
        for path, name, desc in sample_list():  # the names the welcome page shows
            a = self.sample_menu.addAction(name)
            a.setToolTip(desc or name)
            a.setStatusTip(desc)
            a.triggered.connect(lambda _=False, p=str(path): self.open_sample(p))
        self.sample_menu.setToolTipsVisible(True)
        f.addSeparator()
        f.addActions([self.act_save, self.act_save_as, self.act_revert])
        if hasattr(self, "library_panel"):
            self.act_save_library = f.addAction(QIcon(icon_path("save")), "Save to &Library", self.save_to_library)
            self.act_save_library.setStatusTip("Save this workflow into the flow library (it gets a stable id)")
        f.addSeparator()
        f.addAction(self.act_export)
        f.addSeparator()
        f.addAction(self.act_quit)
        e = mb.addMenu("&Edit")
        e.addActions([self.act_undo, self.act_redo])
        e.addSeparator()
        e.addActions([self.act_cut, self.act_copy, self.act_paste, self.act_duplicate, self.act_delete])
        e.addSeparator()
        e.addActions([self.act_select_all, self.act_find, self.act_edit_node])
        add = e.addMenu(QIcon(icon_path("add")), "Add &Node")
        for kind in PALETTE_KINDS:
            a = add.addAction(entry_icon(kind), DESCRIPTIONS[kind][0])
            a.triggered.connect(lambda _=False, k=kind: self._add_node_at_centre(k))
        v = mb.addMenu("&View")
        v.addActions([self.act_fit, self.act_zoom_100, self.act_zoom_in, self.act_zoom_out])
        v.addSeparator()
        v.addActions([self.act_layout, self.act_collapse, self.act_snap, self.act_minimap])
        v.addSeparator()
        docks = [self.palette_dock, self.inspector_dock, self.problems_dock, self.run_console_dock, self.history_dock]
        if hasattr(self, "library_dock"):
            docks.append(self.library_dock)
        for dock in docks:
            v.addAction(dock.toggleViewAction())
            # Shown from the menu, a dock comes to the front of the tabs it shares (the library
            # behind the palette, the history behind the console), rather than staying behind them.
            dock.toggleViewAction().triggered.connect(lambda on, d=dock: d.raise_() if on else None)
        v.addAction(self.act_max_console)
        r = mb.addMenu("&Run")
        r.addActions([self.act_run, self.act_run_from, self.act_run_only, self.run_console.cancel_action])
        r.addAction(self.act_command)
        r.addSeparator()
        self.provider_menu = r.addMenu("LLM &Provider")
        self.provider_menu.aboutToShow.connect(self._fill_provider_menu)
        r.addAction("Provider &Settings…", self.open_provider_settings)
        self.run_on_menu = r.addMenu("Run &On")  # this computer, or a Temporal server (window/run_on.py)
        self.run_on_menu.aboutToShow.connect(self._fill_run_on_menu)
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
        tb.addAction(self.act_run_from)
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

    def _quick_add(self, pos: QPointF, kinds: list[str] | None = None, add=None,
                   placeholder: str = "Add node…") -> None:
        """Double-click on the canvas: a small searchable menu of node types (``kinds``, all by
        default); the one picked is added at ``pos`` (or handed to ``add(kind, pos)``)."""
        menu = QMenu(self)
        menu.setObjectName("quickAdd")
        search = QLineEdit(menu)
        search.setPlaceholderText(placeholder)
        field = QWidgetAction(menu)
        field.setDefaultWidget(search)
        menu.addAction(field)
        entries = []
        add = add or self._add_node_at
        for kind in PALETTE_KINDS if kinds is None else kinds:
            name, desc = DESCRIPTIONS[kind]
            a = menu.addAction(entry_icon(kind), name)
            a.setToolTip(desc)
            a.triggered.connect(lambda _=False, k=kind: add(k, pos))
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
            run_from = menu.addAction(QIcon(icon_path("run-from")), "Run from Here")
            run_from.setToolTip(self.act_run_from.toolTip())
            run_from.triggered.connect(lambda _=False, n=node_id: self.run_from_node(n))
            run_only = menu.addAction("Run Only This Node")
            run_only.triggered.connect(lambda _=False, n=node_id: self.run_from_node(n, only=True))
            for a in (run_from, run_only):
                a.setEnabled(self.act_run.isEnabled())
            item = self.scene.node_items.get(node_id)
            if item is not None and item.run_state == "failed":
                repair = menu.addAction("Repair…")
                repair.setToolTip("Ask the model for a fix of this node's settings, shown before it is applied")
                repair.triggered.connect(lambda _=False, n=node_id: self.repair_node(n))
            menu.addSeparator()
            menu.addAction(self.act_layout)
        else:
            add = menu.addMenu(QIcon(icon_path("add")), "Add node")
            for kind in PALETTE_KINDS:
                a = add.addAction(entry_icon(kind), DESCRIPTIONS[kind][0])
                a.triggered.connect(lambda _=False, k=kind: self._add_node_at(k, pos))
            menu.addActions([self.act_paste, self.act_select_all])
            menu.addSeparator()
            menu.addActions([self.act_layout, self.act_fit])
        menu.popup(self.view.mapToGlobal(self.view.mapFromScene(pos)))
