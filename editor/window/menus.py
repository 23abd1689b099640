"""The main window's actions, menus, toolbar and status bar, and the canvas's context menu.

Menus and actions are built in this one place; each action calls the controller that owns
its concern (:mod:`editor.controllers`), which the window builds before its menus.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QAction, QIcon, QKeySequence
from PySide6.QtWidgets import QInputDialog, QLabel, QMainWindow, QMenu, QSizePolicy, QToolBar, QWidget

from engine import NOTE_COLORS, set_show_browser, show_browser

from ..document import PALETTE_KINDS
from ..panels.mcp_pages import McpServersDialog
from ..panels.palette import DESCRIPTIONS, entry_icon, note_icon
from ..resources import icon_path
from .settings import settings
from .welcome import sample_list

# The window these functions build into (editor.main_window.MainWindow), typed as the Qt class it
# is: the window imports this module, which does not import the window back.
MainWindow = QMainWindow


def action(
    w: MainWindow, text: str, icon: str | None = None, shortcut=None, slot=None, tip: str = "", local: bool = False
) -> QAction:
    """An action of the window; ``local``: its keys work only while the canvas has the focus."""
    act = QAction(QIcon(icon_path(icon)) if icon else QIcon(), text, w)
    if shortcut is not None:
        if isinstance(shortcut, list):
            act.setShortcuts(shortcut)
        else:
            act.setShortcut(QKeySequence(shortcut))
    if tip:
        act.setToolTip(tip)
        act.setStatusTip(tip)
    if slot is not None:
        act.triggered.connect(slot)
    if local:
        # Canvas editing keys must not fire while typing in the inspector.
        act.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        w.view.addAction(act)
    return act


def build_actions(w: MainWindow) -> None:
    K = QKeySequence.StandardKey
    w.act_new = action(w, "&New", "new", K.New, w.files.new_document, "New workflow")
    w.act_open = action(w, "&Open…", "open", K.Open, w.files.open_dialog, "Open a workflow file")
    w.act_save = action(w, "&Save", "save", K.Save, w.files.save, "Save")
    w.act_save_as = action(w, "Save &As…", "save-as", K.SaveAs, w.files.save_as, "Save under a new name")
    w.act_export = action(
        w,
        "&Export as AnythingLLM Agent Flow…",
        None,
        None,
        w.files.export_dialog,
        "Write this workflow as an AnythingLLM agent flow",
    )
    w.act_command = action(
        w,
        "&Command Bar…",
        None,
        "Ctrl+K",
        w.commands.open_command_bar,
        "Run a library flow by saying what you want (trigger phrases, or the model)",
    )
    w.act_revert = action(w, "&Revert", "revert", None, w.files.revert, "Discard changes and reload the file")
    w.act_quit = action(w, "&Quit", None, K.Quit, w.close)
    stack = w.document.undo_stack
    w.act_undo = stack.createUndoAction(w, "&Undo")
    w.act_undo.setIcon(QIcon(icon_path("undo")))
    w.act_undo.setShortcut(K.Undo)
    w.act_redo = stack.createRedoAction(w, "&Redo")
    w.act_redo.setIcon(QIcon(icon_path("redo")))
    w.act_redo.setShortcuts([QKeySequence("Ctrl+Shift+Z"), QKeySequence("Ctrl+Y")])
    w.act_copy = action(w, "&Copy", "copy", K.Copy, w.edit.copy, local=True)
    w.act_cut = action(w, "Cu&t", "cut", K.Cut, w.edit.cut, local=True)
    w.act_paste = action(w, "&Paste", "paste", K.Paste, w.edit.paste, local=True)
    w.act_duplicate = action(w, "&Duplicate", "duplicate", "Ctrl+D", w.edit.duplicate, local=True)
    w.act_delete = action(
        w,
        "De&lete",
        "delete",
        [QKeySequence(Qt.Key.Key_Delete), QKeySequence(Qt.Key.Key_Backspace)],
        w.edit.delete_selection,
        local=True,
    )
    w.act_select_all = action(w, "Select &All", None, K.SelectAll, w.edit.select_all, local=True)
    w.act_find = action(w, "&Find Node…", "find", K.Find, w.find_bar.open, "Find a node by name")
    w.act_edit_node = action(
        w,
        "&Edit Node",
        None,
        "F2",
        w.edit.edit_selected_node,
        "Type in the selected node's first field (an agent's name)",
        local=True,
    )
    w.act_fit = action(
        w,
        "&Fit to View",
        "fit",
        [QKeySequence("F"), QKeySequence("Ctrl+0")],
        w.edit.fit,
        "Fit the whole graph (F, Ctrl+0)",
        local=True,
    )
    w.act_fit.setShortcuts([QKeySequence("F"), QKeySequence("Ctrl+0")])
    w.act_zoom_100 = action(
        w, "Actual &Size", "zoom-100", "Ctrl+1", lambda: w.view.set_zoom(1.0), "Zoom to 100% (Ctrl+1)"
    )
    w.act_zoom_in = action(w, "Zoom &In", "zoom-in", K.ZoomIn, lambda: w.view.zoom_by(1.25))
    w.act_zoom_out = action(w, "Zoom &Out", "zoom-out", K.ZoomOut, lambda: w.view.zoom_by(0.8))
    w.act_layout = action(
        w, "Auto-&Layout", "layout", "Ctrl+L", w.edit.auto_layout, "Arrange the graph (or the selection) left to right"
    )
    w.act_snap = action(w, "Snap to &Grid", "grid", None, None, "Snap moved nodes to the grid")
    w.act_snap.setCheckable(True)
    w.act_snap.setIconVisibleInMenu(False)  # a menu draws an icon instead of the check mark
    w.act_snap.toggled.connect(w.scene.set_snap)
    w.act_minimap = action(w, "&Minimap", "minimap", None, None, "Show the minimap")
    w.act_minimap.setCheckable(True)
    w.act_minimap.setIconVisibleInMenu(False)
    w.act_minimap.setChecked(True)
    w.act_minimap.setToolTip("Show the minimap when part of the graph is out of view")
    w.act_minimap.toggled.connect(w.view.set_minimap_enabled)
    w.act_collapse = action(w, "Collapse / E&xpand", "collapse", "Ctrl+E", w.edit.toggle_collapse, local=True)
    w.act_add_note = action(
        w, "Add Sticky &Note", None, None, lambda: w.edit.add_node_at_centre("@note"), "A Markdown note on the canvas"
    )
    w.act_add_note.setIcon(note_icon())
    w.act_group = action(
        w,
        "&Group Nodes",
        None,
        "Ctrl+G",
        w.edit.group_selection,
        "A titled frame around the selected nodes (Ctrl+G)",
        local=True,
    )
    w.act_outputs = action(
        w, "Outputs &Under Cards", None, None, None, "After a run, each node's last output's first lines under its card"
    )
    w.act_outputs.setCheckable(True)
    w.act_outputs.setChecked(settings().value("canvas/outputs", True, type=bool))
    w.scene.set_show_outputs(w.act_outputs.isChecked())
    w.act_outputs.toggled.connect(w.scene.set_show_outputs)
    w.act_outputs.toggled.connect(lambda on: settings().setValue("canvas/outputs", on))
    w.act_run = action(w, "&Run", "run", [QKeySequence("F5"), QKeySequence("Ctrl+R")], w.runs.run, "Run the workflow")
    w.act_run.setEnabled(False)
    w.act_run_from = action(
        w,
        "Run from &Here",
        "run-from",
        "Ctrl+Alt+R",
        lambda: w.runs.run_from_node(),
        "Run from the selected node: the nodes before it reuse their outputs "
        "from the last run (from cache) when nothing they depend on changed",
    )
    w.act_run_from.setIconText("▶ From here")
    w.act_run_only = action(
        w,
        "Run &Only This Node",
        None,
        None,
        lambda: w.runs.run_from_node(only=True),
        "Run the selected node alone, its inputs from the last run",
    )
    w.act_max_console = action(
        w,
        "Ma&ximise Run Console",
        None,
        "Ctrl+Shift+M",
        None,
        "The run console takes the whole window, or goes back (Ctrl+Shift+M); its title bar's float button detaches it",
    )
    w.act_max_console.setCheckable(True)
    w.act_max_console.toggled.connect(w.set_console_maximised)
    for a in (
        w.act_undo,
        w.act_redo,
        w.act_find,
        w.act_zoom_100,
        w.act_zoom_in,
        w.act_zoom_out,
        w.act_layout,
        w.act_run,
        w.act_max_console,
    ):
        w.addAction(a)


def build_menus(w: MainWindow) -> None:
    mb = w.menuBar()
    f = mb.addMenu("&File")
    f.addActions([w.act_new, w.act_open])
    w.recent_menu = f.addMenu(QIcon(icon_path("recent")), "Open &Recent")
    w.recent_menu.aboutToShow.connect(lambda: w.files.fill_recent_menu(w.recent_menu))
    w.sample_menu = f.addMenu(QIcon(icon_path("sample")), "Open Sa&mple")
    for path, name, desc in sample_list():  # the names the welcome page shows
        a = w.sample_menu.addAction(name)
        a.setToolTip(desc or name)
        a.setStatusTip(desc)
        a.triggered.connect(lambda _=False, p=str(path): w.files.open_sample(p))
    w.sample_menu.setToolTipsVisible(True)
    f.addSeparator()
    f.addActions([w.act_save, w.act_save_as, w.act_revert])
    w.act_save_library = f.addAction(QIcon(icon_path("save")), "Save to &Library", w.library.save_to_library)
    w.act_save_library.setStatusTip("Save this workflow into the flow library (it gets a stable id)")
    f.addSeparator()
    f.addAction(w.act_export)
    f.addSeparator()
    f.addAction(w.act_quit)
    e = mb.addMenu("&Edit")
    e.addActions([w.act_undo, w.act_redo])
    e.addSeparator()
    e.addActions([w.act_cut, w.act_copy, w.act_paste, w.act_duplicate, w.act_delete])
    e.addSeparator()
    e.addActions([w.act_select_all, w.act_find, w.act_edit_node, w.act_group, w.act_add_note])
    add = e.addMenu(QIcon(icon_path("add")), "Add &Node")
    for kind in PALETTE_KINDS:
        a = add.addAction(entry_icon(kind), DESCRIPTIONS[kind][0])
        a.triggered.connect(lambda _=False, k=kind: w.edit.add_node_at_centre(k))
    v = mb.addMenu("&View")
    v.addActions([w.act_fit, w.act_zoom_100, w.act_zoom_in, w.act_zoom_out])
    v.addSeparator()
    v.addActions([w.act_layout, w.act_collapse, w.act_snap, w.act_minimap, w.act_outputs])
    v.addSeparator()
    docks = [w.palette_dock, w.inspector_dock, w.problems_dock, w.run_console_dock, w.history_dock, w.library_dock]
    docks.append(w.inbox_dock)
    for dock in docks:
        v.addAction(dock.toggleViewAction())
        # Shown from the menu, a dock comes to the front of the tabs it shares (the library
        # behind the palette, the history behind the console), rather than staying behind them.
        dock.toggleViewAction().triggered.connect(lambda on, d=dock: d.raise_() if on else None)
    v.addAction(w.act_max_console)
    r = mb.addMenu("&Run")
    r.addActions([w.act_run, w.act_run_from, w.act_run_only, w.run_console.cancel_action])
    r.addAction(w.act_command)
    r.addSeparator()
    w.provider_menu = r.addMenu("LLM &Provider")
    w.provider_menu.aboutToShow.connect(lambda: w.providers.fill_provider_menu(w.provider_menu))
    r.addAction("Provider &Settings…", w.providers.open_provider_settings)
    r.addAction("&MCP Servers…", lambda: _open_mcp_servers(w))
    w.run_on_menu = r.addMenu("Run &On")  # this computer, or a Temporal server (window/run_on.py)
    w.run_on_menu.aboutToShow.connect(lambda: w.providers.fill_run_on_menu(w.run_on_menu))
    # Browser steps run headed (a real window) while this is on: for seeing what a flow does
    w.act_show_browser = r.addAction("Show &Browser")
    w.act_show_browser.setObjectName("showBrowser")
    w.act_show_browser.setCheckable(True)
    w.act_show_browser.setToolTip("Run browser steps in a visible browser window instead of headless")
    w.act_show_browser.toggled.connect(_show_browser_toggled)
    w.act_show_browser.setChecked(show_browser() or settings().value("run/showBrowser", False, type=bool))
    r.addSeparator()
    r.addAction(w.history_dock.toggleViewAction())
    w.act_compare = action(
        w,
        "&Compare Runs…",
        None,
        None,
        w.history.compare_from_menu,
        "Compare the two runs selected in Run history, or the selected run (else the latest) with the run before it",
    )
    r.addAction(w.act_compare)

    tb = QToolBar("Main", w)
    tb.setObjectName("mainToolbar")
    tb.setMovable(False)
    tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
    tb.addActions([w.act_new, w.act_open, w.act_save])
    tb.addSeparator()
    tb.addActions([w.act_undo, w.act_redo])
    tb.addSeparator()
    tb.addActions([w.act_fit, w.act_zoom_100, w.act_layout, w.act_find])
    spacer = QWidget()
    spacer.setObjectName("toolbarSpacer")
    spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
    tb.addWidget(spacer)
    tb.addAction(w.act_run)
    tb.addAction(w.act_run_from)
    tb.addAction(w.run_console.cancel_action)
    run_button = tb.widgetForAction(w.act_run)
    if run_button is not None:
        run_button.setObjectName("runButton")
        tb.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)
    w.addToolBar(tb)
    w.toolbar = tb


def _show_browser_toggled(on: bool) -> None:
    """Run ▸ Show Browser: kept between sessions, applied to the browsers started from now on."""
    set_show_browser(on)
    settings().setValue("run/showBrowser", on)


def build_status_bar(w: MainWindow) -> None:
    sb = w.statusBar()
    w.validation_label.setObjectName("validationLabel")  # made with the window: validation shows its summary there
    w.zoom_label = QLabel("100%")
    w.zoom_label.setObjectName("hint")
    sb.addPermanentWidget(w.validation_label)
    sb.addPermanentWidget(w.zoom_label)


def context_menu(w: MainWindow, pos: QPointF, node_id: str | None) -> None:
    menu = QMenu(w)
    if node_id is not None:
        menu.addActions([w.act_collapse, w.act_duplicate, w.act_copy, w.act_delete])
        menu.addSeparator()
        run_from = menu.addAction(QIcon(icon_path("run-from")), "Run from Here")
        run_from.setToolTip(w.act_run_from.toolTip())
        run_from.triggered.connect(lambda _=False, n=node_id: w.runs.run_from_node(n))
        run_only = menu.addAction("Run Only This Node")
        run_only.triggered.connect(lambda _=False, n=node_id: w.runs.run_from_node(n, only=True))
        for a in (run_from, run_only):
            a.setEnabled(w.act_run.isEnabled())
        run_sample = menu.addAction("Run This Node with Sample Inputs…")
        run_sample.setToolTip("Run only this node, on values you type, in memory (nothing is saved)")
        run_sample.triggered.connect(lambda _=False, n=node_id: w.run_node.open(n))
        item = w.scene.node_items.get(node_id)
        if item is not None and item.run_state == "failed":
            repair = menu.addAction("Repair…")
            repair.setToolTip("Ask the model for a fix of this node's settings, shown before it is applied")
            repair.triggered.connect(lambda _=False, n=node_id: w.repair.repair_node(n))
        menu.addSeparator()
        menu.addActions([w.act_group, w.act_layout])
    else:
        add = menu.addMenu(QIcon(icon_path("add")), "Add node")
        for kind in PALETTE_KINDS:
            a = add.addAction(entry_icon(kind), DESCRIPTIONS[kind][0])
            a.triggered.connect(lambda _=False, k=kind: w.edit.add_node_at(k, pos))
        note = menu.addAction(note_icon(), "Add sticky note")
        note.triggered.connect(lambda _=False: w.edit.add_note_at(pos))
        menu.addActions([w.act_paste, w.act_select_all])
        menu.addSeparator()
        menu.addActions([w.act_layout, w.act_fit])
    menu.popup(w.view.mapToGlobal(w.view.mapFromScene(pos)))


def rename_group(w: MainWindow, group_id: str) -> None:
    group = w.document.annotation("group", group_id)
    if group is None:
        return
    title, ok = QInputDialog.getText(w, "Rename Group", "Title:", text=group.title)
    if ok:
        w.document.rename_group(group_id, title)


def annotation_menu(w: MainWindow, pos: QPointF, kind: str, ann_id: str) -> None:
    """The context menu of a sticky note or a group."""
    menu = QMenu(w)
    doc = w.document
    if kind == "note":
        menu.addAction("Edit Text", lambda: w.scene.edit_note(ann_id))
        colours = menu.addMenu("Colour")
        for name in NOTE_COLORS:
            colours.addAction(name.capitalize(), lambda n=name: doc.set_note_color(ann_id, n))
        menu.addSeparator()
        menu.addAction("Delete Note", lambda: doc.delete(note_ids=[ann_id]))
    else:
        group = doc.annotation("group", ann_id)
        if group is None:
            return
        menu.addAction("Rename…", lambda: rename_group(w, ann_id))
        menu.addAction(
            "Expand" if group.collapsed else "Collapse", lambda: doc.set_group_collapsed(ann_id, not group.collapsed)
        )
        run_from = menu.addAction(QIcon(icon_path("run-from")), "Run from Here")
        run_from.setToolTip("Run from the group's first node; the nodes before it reuse their last outputs")
        run_from.setEnabled(w.act_run.isEnabled())
        run_from.triggered.connect(lambda _=False: _run_group(w, ann_id))
        menu.addSeparator()
        menu.addAction("Ungroup", lambda: doc.ungroup(ann_id))
    menu.popup(w.view.mapToGlobal(w.view.mapFromScene(pos)))


def _run_group(w: MainWindow, group_id: str) -> None:
    first = w.edit.first_node_of_group(group_id)
    if first is not None:
        w.runs.run_from_node(first)


def build_help_menu(w: MainWindow) -> None:
    h = w.menuBar().addMenu("&Help")
    w.act_shortcuts = action(
        w,
        "&Keyboard Shortcuts…",
        None,
        QKeySequence.StandardKey.HelpContents,
        w.help.show_shortcuts,
        "Every key and mouse gesture, by menu",
    )
    w.addAction(w.act_shortcuts)
    h.addAction(w.act_shortcuts)
    h.addSeparator()
    w.act_about = h.addAction("&About Flowdesk", w.help.show_about)


def _open_mcp_servers(w: Any) -> None:
    """Run ▸ MCP Servers…: add, test and remove the servers of the settings; validation sees the change."""
    McpServersDialog(w).exec()
    validation = getattr(w, "validation", None)
    if validation is not None:
        validation.run_validation()
