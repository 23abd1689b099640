"""The Help menu: Keyboard Shortcuts (F1), listed from the window's own actions so the list
never names a key that does not work, and About Flowdesk (the versions, and the folders where
Flowdesk keeps settings, run history and the flow library)."""

from __future__ import annotations

import html
import platform
import re
import sys
from pathlib import Path

import PySide6
from PySide6.QtCore import Qt, QUrl, qVersion
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QDockWidget,
    QLabel,
    QLineEdit,
    QMenu,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine import config_dir, data_dir, flowdesk_version, library_dir, settings_path

from ..screen_fit import fit_resize
from .settings import GUI_SETTINGS_FILE

# What the mouse (and the keys that only work while dragging or typing) does; no QAction holds these.
CANVAS_GESTURES: tuple[tuple[str, str], ...] = (
    ("Double-click the canvas", "Add a node there"),
    ("Drag from a handle to a node", "Link them (Esc cancels the drag)"),
    ("Drag from a handle to empty canvas", "Add a node there, linked"),
    ("Drag the background, the middle button, or Space + drag", "Pan"),
    ("Shift + drag, Ctrl + drag", "Select with a rectangle"),
    ("Wheel · Shift + wheel", "Zoom towards the cursor · pan sideways"),
    ("Double-click a node's title", "Collapse or expand it"),
    ("Arrow keys · Shift + arrow keys", "Move the selected nodes a step (10 px, or the grid's) · five steps"),
    ("Right-click a node or the canvas", "Its menu (Run from here, Pin, Repair…)"),
    ("Ctrl+Space in a prompt or template field", "Complete a variable or template name"),
)


def _label(action: QAction) -> str:
    """The action's name as its menu shows it, without the mnemonic's ``&``, a trailing "…" or
    a leading glyph ("■ Cancel")."""
    text = action.text().replace("&&", "\0").replace("&", "").replace("\0", "&")
    return re.sub(r"^\W+", "", text).rstrip("…").strip()


def _keys(action: QAction) -> str:
    native = QKeySequence.SequenceFormat.NativeText
    return " or ".join(s.toString(native) for s in action.shortcuts() if not s.isEmpty())


def shortcut_sections(window: QWidget) -> list[tuple[str, list[tuple[str, str]]]]:
    """(section, [(action, keys)]): each menu of the menu bar (its submenus' actions under it),
    then each panel's own keyed actions (the approval card's Approve, the history's Resume…)
    under the panel's title, then the canvas gestures."""
    sections: list[tuple[str, list[tuple[str, str]]]] = []
    listed: set[int] = set()

    def walk(menu: QMenu, rows: list[tuple[str, str]]) -> None:
        for a in menu.actions():
            if a.menu() is not None:
                walk(a.menu(), rows)
            elif not a.isSeparator() and _keys(a) and id(a) not in listed:
                listed.add(id(a))
                rows.append((_label(a), _keys(a)))

    for top in window.menuBar().actions():  # type: ignore[attr-defined]
        if top.menu() is not None:
            rows: list[tuple[str, str]] = []
            walk(top.menu(), rows)
            if rows:
                sections.append((_label(top), rows))
    in_menus = {(label, keys) for _s, rows in sections for label, keys in rows}
    panels: dict[str, list[tuple[str, str]]] = {}
    for a in window.findChildren(QAction):
        keys = _keys(a)
        if not keys or id(a) in listed or not a.text() or (_label(a), keys) in in_menus:
            continue
        owner = a.parent()
        while owner is not None and not isinstance(owner, QDockWidget):
            owner = owner.parent()
        if owner is None:
            continue  # a window-wide action outside the menus: a second key of one listed there
        rows = panels.setdefault(owner.windowTitle(), [])
        if (_label(a), keys) not in rows:
            rows.append((_label(a), keys))
    sections += sorted(panels.items())
    sections.append(("Canvas and prompt fields", list(CANVAS_GESTURES)))
    return sections


class ShortcutsDialog(QDialog):
    """Every key the window answers to, by menu, with a filter."""

    def __init__(self, window: QWidget) -> None:
        super().__init__(window)
        self.setWindowTitle("Keyboard Shortcuts")
        fit_resize(self, 620, 640)
        lay = QVBoxLayout(self)
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter by action or key…")
        self.filter.setClearButtonEnabled(True)
        self.filter.textChanged.connect(self._apply_filter)
        lay.addWidget(self.filter)
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Action", "Keys"])
        self.tree.setRootIsDecorated(False)
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        for section, rows in shortcut_sections(window):
            head = QTreeWidgetItem(self.tree, [section])
            font = head.font(0)
            font.setBold(True)
            head.setFont(0, font)
            head.setFirstColumnSpanned(True)
            head.setFlags(Qt.ItemFlag.ItemIsEnabled)
            for label, keys in rows:
                QTreeWidgetItem(head, [label, keys])
        self.tree.expandAll()
        self.tree.setColumnWidth(0, 330)
        lay.addWidget(self.tree)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        self.filter.setFocus()

    def _apply_filter(self, text: str) -> None:
        needle = text.strip().lower()
        for i in range(self.tree.topLevelItemCount()):
            head = self.tree.topLevelItem(i)
            shown = 0
            for j in range(head.childCount()):
                row = head.child(j)
                hit = not needle or needle in row.text(0).lower() or needle in row.text(1).lower()
                row.setHidden(not hit)
                shown += hit
            head.setHidden(shown == 0)

    def visible_rows(self) -> list[tuple[str, str, str]]:
        """(section, action, keys) of the rows the filter leaves."""
        out = []
        for i in range(self.tree.topLevelItemCount()):
            head = self.tree.topLevelItem(i)
            out += [
                (head.text(0), head.child(j).text(0), head.child(j).text(1))
                for j in range(head.childCount())
                if not head.isHidden() and not head.child(j).isHidden()
            ]
        return out


def about_html(store_path: Path | None) -> str:
    """The About box's text: versions, and each folder Flowdesk writes to as a link that opens it."""

    def place(title: str, path: Path, note: str = "") -> str:
        folder = path if path.suffix == "" else path.parent
        return (
            f"<tr><td style='padding-right:12px'>{html.escape(title)}</td>"
            f"<td><a href='{QUrl.fromLocalFile(str(folder)).toString()}'>{html.escape(str(path))}</a>"
            f"{html.escape(note)}</td></tr>"
        )

    runs = store_path if store_path is not None else data_dir() / "runs.db"
    rows = (
        place("Settings", config_dir(), f" ({settings_path().name}, {GUI_SETTINGS_FILE})")
        + place("Run history", runs, "" if store_path is not None else " (not open)")
        + place("Flow library", library_dir())
    )
    return (
        f"<h2>Flowdesk {html.escape(flowdesk_version())}</h2>"
        "<p>Draw agentic LLM workflows as graphs, run them locally, approve and inspect their runs.</p>"
        f"<p>Python {html.escape(platform.python_version())} · Qt {html.escape(qVersion())} · "
        f"PySide6 {html.escape(PySide6.__version__)}"
        f" · {html.escape(sys.platform)}</p>"
        f"<table>{rows}</table>"
        "<p>API keys are read from the environment or the OS keyring; none is written to these folders.</p>"
    )


class AboutDialog(QDialog):
    def __init__(self, window: QWidget, store_path: Path | None) -> None:
        super().__init__(window)
        self.setWindowTitle("About Flowdesk")
        lay = QVBoxLayout(self)
        self.text = QLabel(about_html(store_path))
        self.text.setTextFormat(Qt.TextFormat.RichText)
        self.text.setOpenExternalLinks(True)  # a folder link opens it in the file manager
        self.text.setTextInteractionFlags(Qt.TextInteractionFlag.TextBrowserInteraction)
        self.text.setWordWrap(True)
        self.text.setMinimumWidth(520)
        lay.addWidget(self.text)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
