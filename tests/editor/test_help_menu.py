"""Help menu: Keyboard Shortcuts lists the keys the window really answers to (its own actions,
by menu and panel) with a filter; About names the version and the folders Flowdesk writes to."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QKeySequence, QPalette

from editor.window.help import ShortcutsDialog

from .conftest import SAMPLES, open_flow


def _menu_titles(window) -> list[str]:
    return [a.text().replace("&", "") for a in window.menuBar().actions()]


def test_help_menu_and_f1_opens_the_shortcuts(qtbot, window):
    assert _menu_titles(window)[-1] == "Help"
    assert window.act_shortcuts.shortcut() == QKeySequence(QKeySequence.StandardKey.HelpContents)
    window.act_shortcuts.trigger()
    dialog = window.findChild(ShortcutsDialog)
    assert dialog is not None and dialog.isVisible() and dialog.windowTitle() == "Keyboard Shortcuts"
    window.act_shortcuts.trigger()  # again: the open one comes forward, no second window
    assert [d for d in window.findChildren(ShortcutsDialog) if d.isVisible()] == [dialog]
    assert window.help.show_about() is window.help.show_about()


def test_shortcuts_come_from_the_real_actions(qtbot, window):
    dialog = window.help.show_shortcuts()
    rows = dialog.visible_rows()
    sections = [s for s, _a, _k in rows]
    assert sections.index("File") < sections.index("Edit") < sections.index("Run")
    native = QKeySequence.SequenceFormat.NativeText
    assert ("File", "Save", QKeySequence(QKeySequence.StandardKey.Save).toString(native)) in rows
    assert ("Run", "Run", "F5 or Ctrl+R") in rows
    assert ("Run", "Command Bar", "Ctrl+K") in rows and ("Run", "Cancel", "Shift+F5") in rows
    assert ("View", "Fit to View", "F or Ctrl+0") in rows
    # a panel's own keys, under the panel's title: the approval card and the run history
    assert ("Run console", "Approve", "Ctrl+Return") in rows
    assert ("Run console", "Reject", "Ctrl+Shift+Return") in rows
    assert ("Run history", "Resume", "Ctrl+Shift+R") in rows
    assert any(s == "Canvas and prompt fields" and k == "Complete a variable or template name" for s, _a, k in rows)
    # every listed key is the key of an action of that name (nothing made up, nothing stale)
    by_name: dict[str, set[str]] = {}
    for a in window.findChildren(type(window.act_run)):
        label = a.text().replace("&", "").lstrip("■ ").rstrip("…").strip()
        keys = " or ".join(s.toString(native) for s in a.shortcuts() if not s.isEmpty())
        by_name.setdefault(label, set()).add(keys)
    for section, action, keys in rows:
        if section != "Canvas and prompt fields":
            assert keys in by_name.get(action, set()), (section, action, keys)
    # no action is listed twice
    listed = [(a, k) for s, a, k in rows if s != "Canvas and prompt fields"]
    assert len(listed) == len(set(listed))


def test_shortcut_filter_matches_actions_and_keys(qtbot, window):
    dialog = window.help.show_shortcuts()
    qtbot.keyClicks(dialog.filter, "ctrl+shift+return")
    assert [(a, k) for _s, a, k in dialog.visible_rows()] == [("Reject", "Ctrl+Shift+Return")]
    dialog.filter.clear()
    qtbot.keyClicks(dialog.filter, "undo")
    assert {a for _s, a, _k in dialog.visible_rows()} == {"Undo"}
    dialog.filter.setText("no such thing")
    assert dialog.visible_rows() == []


def test_about_names_the_version_and_the_folders(qtbot, window, isolated):
    open_flow(window, SAMPLES / "hello.flow.json")
    dialog = window.help.show_about()
    text = dialog.text.text()
    from importlib import metadata

    assert f"Flowdesk {metadata.version('flowdesk')}" in text
    config, data = isolated / "config", isolated / "data"
    assert str(config) in text and str(data / "runs.db") in text and str(data / "library") in text
    assert "(settings.json, gui.ini)" in text
    assert QUrl.fromLocalFile(str(data)).toString() in text  # the run history's link opens its folder
    assert "(not open)" not in text
    assert dialog.text.openExternalLinks()
    assert dialog.text.textInteractionFlags() & Qt.TextInteractionFlag.LinksAccessibleByMouse
    assert Path(window.store.path) == data / "runs.db"
    # readable on the dark panels (the palette's default link blue was not)
    assert dialog.text.palette().color(QPalette.ColorRole.Link).lightness() > 150
