"""The flow library dock: the library's flows with search, open, reveal, enable/disable, folders.

The panel shows :meth:`engine.FlowLibrary.flows` (name, description, parameters, triggers; a
file that cannot be read is listed with its error) and filters them as the user types (name,
description, parameter names, triggers, file name). The check box of a flow turns it on or
off in the library (settings' ``library.disabled``). Folders: the data folder's ``library/``
(always, first) plus the folders added here (settings' ``library.folders``).

Flows are listed most used first (``FlowLibrary.by_use``: runs kept in the library's index,
then the last run, then library order), each used one saying how often and when it last ran.

What needs the window (opening a file, saving the current document) goes out as signals:
``open_requested(path)`` and ``save_requested()``. ``refresh()`` re-reads the library (cheap:
the library caches per file); the window calls it after a save and when the panel is shown.
"""

from __future__ import annotations

import time
from datetime import datetime
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QIcon
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from engine import FlowdeskError, FlowLibrary, LibraryFlow, default_library

from ..resources import icon_path

__all__ = ["LibraryPanel", "flow_summary", "matches"]

FlowRole = Qt.ItemDataRole.UserRole + 1


def flow_summary(flow: LibraryFlow) -> str:
    """The lines shown for a flow: name; description; parameters and triggers."""
    lines = [flow.name + ("" if flow.enabled else "  (off)")]
    if flow.error:
        lines.append(f"⚠ cannot be read: {flow.error}")
        return "\n".join(lines)
    if flow.description:
        desc = " ".join(flow.description.split())
        lines.append(desc if len(desc) <= 70 else desc[:67] + "…")
    meta = []
    if flow.parameters:
        meta.append("⚙ " + ", ".join(p.name + ("*" if p.required else "") for p in flow.parameters))
    if flow.triggers:
        meta.append("“" + flow.triggers[0] + "”" + (f" +{len(flow.triggers) - 1}" if len(flow.triggers) > 1 else ""))
    if meta:
        lines.append("   ".join(meta))
    usage = _usage_text(flow)
    if usage:
        lines.append(usage)
    return "\n".join(lines)


def _usage_text(flow: LibraryFlow) -> str:
    """ "▶ 3 runs · last 2026-11-26 14:02" for a flow that has run (from the library's index)."""
    usage = getattr(flow, "usage", None) or {}
    runs = int(usage.get("runs") or 0)
    if runs <= 0:
        return ""
    last = usage.get("lastRun")
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(last)) if isinstance(last, (int, float)) else ""
    return f"▶ {runs} run{'s' if runs != 1 else ''}" + (f" · last {when}" if when else "")


def matches(flow: LibraryFlow, text: str) -> bool:
    """Whether ``text`` (case-insensitive, every word) is in the flow's name, description,
    parameters, triggers, id or file name."""
    hay = " ".join(
        [
            flow.name,
            flow.description,
            flow.id,
            flow.path.name,
            *flow.triggers,
            *(p.name for p in flow.parameters),
            *(p.description for p in flow.parameters),
        ]
    ).casefold()
    return all(w in hay for w in text.casefold().split())


ROWS_HINT = "Checked flows are on: the command bar, triggers and agents can use them."


class LibraryPanel(QWidget):
    open_requested = Signal(str)  # a flow's file
    save_requested = Signal()  # "Save to library" (the current document)
    changed = Signal()  # the library's content changed (a flow saved, turned on/off, a folder added)

    def __init__(self, library: FlowLibrary | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("libraryPanel")
        self.setMinimumWidth(290)  # room for the search field and a flow's lines (only while the dock is shown)
        self._library = library
        self._loading = False
        self.next_runs: dict[str, Any] = {}  # scheduled flows' next runs, by flow id (set_next_runs)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.setSpacing(4)
        self.search = QLineEdit()
        self.search.setObjectName("librarySearch")
        self.search.setPlaceholderText("Search flows…")
        self.search.setToolTip("Search the library: name, description, parameters, triggers")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._filter)
        top = QHBoxLayout()  # search and the actions on one row: the dock can be short
        top.setSpacing(2)
        top.addWidget(self.search, 1)
        lay.addLayout(top)
        self.list = QListWidget()
        self.list.setObjectName("libraryList")
        self.list.setWordWrap(True)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)  # long lines wrap
        self.list.setResizeMode(QListWidget.ResizeMode.Adjust)
        self.list.setSpacing(1)
        self.list.itemDoubleClicked.connect(lambda it: self._open_item(it))
        self.list.itemChanged.connect(self._item_changed)
        self.list.currentItemChanged.connect(lambda *_: self._update_buttons())
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._context_menu)
        self.list.setMinimumHeight(24)  # the dock can shrink (the console may take most of the window)
        lay.addWidget(self.list, 1)
        self.empty = QLabel()
        self.empty.setObjectName("hint")
        self.empty.setWordWrap(True)
        lay.addWidget(self.empty)
        self.save_button = self._button(
            "save", "Save the current workflow to the library", self.save_requested.emit, "Save to library"
        )
        self.open_button = self._button("open", "Open the selected flow", self.open_selected, "Open")
        self.reveal_button = self._button(
            "find", "Show the selected flow's file in its folder", self.reveal_selected, "Reveal"
        )
        self.folders_button = self._button("recent", "Library folders", None, "Folders")
        self.folders_menu = QMenu(self)
        self.folders_menu.aboutToShow.connect(self._fill_folders_menu)
        self.folders_button.setMenu(self.folders_menu)
        self.folders_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        for b in (self.save_button, self.open_button, self.reveal_button, self.folders_button):
            b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonIconOnly)  # a narrow dock: icons, tips say what
            b.setToolTip(f"{b.text()}: {b.toolTip()}")
            b.setAutoRaise(True)
            top.addWidget(b)
        self.refresh()

    def _button(self, icon: str, tip: str, slot: Any, text: str) -> QToolButton:
        b = QToolButton()
        b.setIcon(QIcon(icon_path(icon)))
        b.setText(text)
        b.setToolTip(tip)
        b.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        if slot is not None:
            b.clicked.connect(slot)
        return b

    @property
    def library(self) -> FlowLibrary:
        if self._library is None:
            self._library = default_library()
        return self._library

    # ------------------------------------------------------------------ listing
    def flows(self) -> list[LibraryFlow]:
        try:
            return self.library.by_use()  # most used first
        except (OSError, FlowdeskError):
            return []

    def set_next_runs(self, next_runs: dict[str, Any]) -> None:
        """Each scheduled flow's next run (epoch seconds), or why its schedule cannot run (text),
        by flow id: shown under the flow (the schedules controller keeps it up to date)."""
        if next_runs != self.next_runs:
            self.next_runs = dict(next_runs)
            self.refresh()

    def _schedule_line(self, flow: LibraryFlow) -> str:
        when = self.next_runs.get(flow.id)
        if when is None:
            return ""
        if isinstance(when, str):
            return f"\n◷ schedule not running: {when}"
        at = datetime.fromtimestamp(when)
        shown = at.strftime("%H:%M" if at.date() == datetime.now().date() else "%a %d %b %H:%M")
        return f"\n◷ next run {shown}"

    def refresh(self) -> None:
        current = self.selected_flow()
        keep = current.path if current is not None else None
        self._loading = True
        try:
            self.list.clear()
            for flow in self.flows():
                item = QListWidgetItem(flow_summary(flow) + self._schedule_line(flow))
                item.setData(FlowRole, flow)
                item.setToolTip(self._tooltip(flow))
                flags = item.flags() | Qt.ItemFlag.ItemIsUserCheckable
                item.setFlags(flags)
                item.setCheckState(Qt.CheckState.Checked if flow.enabled else Qt.CheckState.Unchecked)
                if flow.error:
                    item.setForeground(Qt.GlobalColor.darkRed)
                elif not flow.enabled:
                    item.setForeground(Qt.GlobalColor.gray)
                self.list.addItem(item)
                if keep is not None and flow.path == keep:
                    self.list.setCurrentItem(item)
        finally:
            self._loading = False
        self._filter(self.search.text())

    def _tooltip(self, flow: LibraryFlow) -> str:
        parts = [f"{flow.name}  ({flow.id})", str(flow.path)]
        if flow.description:
            parts.append(flow.description)
        for p in flow.parameters:
            parts.append(
                f"• {p.name}: {p.type}{' (required)' if p.required else ''}"
                + (f" — {p.description}" if p.description else "")
            )
        for t in flow.triggers:
            parts.append(f"“{t}”")
        if flow.can_pause:
            parts.append("Waits for an approval: cannot be offered as an agent's tool.")
        parts.append("Check to turn the flow on; double-click to open it.")
        return "\n".join(parts)

    def _filter(self, text: str) -> None:
        shown = 0
        for i in range(self.list.count()):
            item = self.list.item(i)
            hide = bool(text.strip()) and not matches(item.data(FlowRole), text)
            item.setHidden(hide)
            shown += not hide
        if self.list.count() == 0:
            self.empty.setText(
                f"No flows yet. Save a workflow to the library, or add a folder of .flow.json files "
                f"(the library folder is {self.library.primary})."
            )
        elif shown == 0:
            self.empty.setText(f"No flow matches “{text.strip()}”.")
        else:  # what a row's check box means (it has no label of its own)
            self.empty.setText(ROWS_HINT)
        self.empty.setVisible(True)
        self._update_buttons()

    def visible_flows(self) -> list[LibraryFlow]:
        return [self.list.item(i).data(FlowRole) for i in range(self.list.count()) if not self.list.item(i).isHidden()]

    def selected_flow(self) -> LibraryFlow | None:
        item = self.list.currentItem()
        return item.data(FlowRole) if item is not None and not item.isHidden() else None

    def select(self, flow_id: str) -> bool:
        for i in range(self.list.count()):
            if self.list.item(i).data(FlowRole).id == flow_id:
                self.list.setCurrentRow(i)
                return True
        return False

    def _update_buttons(self) -> None:
        flow = self.selected_flow()
        self.open_button.setEnabled(flow is not None and not flow.error)
        self.reveal_button.setEnabled(flow is not None)

    # ------------------------------------------------------------------ actions
    def _open_item(self, item: QListWidgetItem) -> None:
        flow: LibraryFlow = item.data(FlowRole)
        if not flow.error:
            self.open_requested.emit(str(flow.path))

    def open_selected(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self._open_item(item)

    def reveal_selected(self) -> None:
        flow = self.selected_flow()
        if flow is not None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(flow.folder)))

    def set_enabled(self, flow_id: str, enabled: bool) -> None:
        try:
            self.library.set_enabled(flow_id, enabled)
        except (OSError, FlowdeskError) as err:
            QMessageBox.warning(self, "Flow library", f"Could not turn the flow {'on' if enabled else 'off'}: {err}")
        self.refresh()
        self.changed.emit()

    def _item_changed(self, item: QListWidgetItem) -> None:
        if self._loading:
            return
        flow: LibraryFlow = item.data(FlowRole)
        on = item.checkState() == Qt.CheckState.Checked
        if on != flow.enabled:
            self.set_enabled(flow.id, on)

    def _context_menu(self, pos: Any) -> None:
        item = self.list.itemAt(pos)
        menu = QMenu(self)
        if item is not None:
            flow: LibraryFlow = item.data(FlowRole)
            self.list.setCurrentItem(item)
            if not flow.error:
                menu.addAction("Open", self.open_selected)
            menu.addAction("Reveal in folder", self.reveal_selected)
            menu.addAction(
                "Turn off" if flow.enabled else "Turn on", lambda: self.set_enabled(flow.id, not flow.enabled)
            )
            menu.addSeparator()
        menu.addAction("Save current workflow to library", self.save_requested.emit)
        menu.addAction("Refresh", self.refresh)
        menu.exec(self.list.viewport().mapToGlobal(pos))

    # ------------------------------------------------------------------ folders
    def _fill_folders_menu(self) -> None:
        m = self.folders_menu
        m.clear()
        folders = self.library.folders
        for i, folder in enumerate(folders):
            sub = m.addMenu(str(folder) + ("  (new flows are saved here)" if i == 0 else ""))
            sub.addAction("Reveal", lambda f=folder: QDesktopServices.openUrl(QUrl.fromLocalFile(str(f))))
            if i > 0:
                sub.addAction("Remove from the library", lambda f=folder: self.remove_folder(str(f)))
        m.addSeparator()
        m.addAction(QIcon(icon_path("add")), "Add folder…", self._ask_add_folder)

    def _ask_add_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Add a library folder", str(Path.home()))
        if path:
            self.add_folder(path)

    def add_folder(self, path: str) -> None:
        try:
            self.library.add_folder(path)
        except (OSError, FlowdeskError) as err:
            QMessageBox.warning(self, "Flow library", f"Could not add the folder {path}: {err}")
            return
        self.refresh()
        self.changed.emit()

    def remove_folder(self, path: str) -> None:
        try:
            self.library.remove_folder(path)
        except (OSError, FlowdeskError) as err:
            QMessageBox.warning(self, "Flow library", f"Could not remove the folder {path}: {err}")
            return
        self.refresh()
        self.changed.emit()
