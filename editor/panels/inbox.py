"""The Inbox dock: every run waiting for a decision (``engine.InboxItem``), oldest first, answerable.

The panel only shows and asks: ``set_items(items)`` fills the table (flow, node, prompt, how
long it has waited, where: this computer or Temporal); the selected run's card below it shows
the prompt, a note field and one button per decision (Approve, Reject, and the approval's
options). A click emits ``answer_requested(run_id, decision, note)``; the buttons stay disabled
until the controller gives the items again, so a double click cannot answer twice. The
"Notify me" box is the tray notification's on/off setting (``notify_changed(bool)``).
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine import InboxItem, format_duration

__all__ = ["InboxPanel"]

_ITEM = Qt.ItemDataRole.UserRole + 1
COLUMNS = ("Waiting", "Flow", "Node", "Prompt", "Where")


class InboxPanel(QWidget):
    answer_requested = Signal(str, str, str)  # run id, decision, note
    open_requested = Signal(str)  # run id: show it (its console, or its window)
    refresh_requested = Signal()
    notify_changed = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("inboxPanel")
        self.items: list[InboxItem] = []
        self._answering: str | None = None  # the run whose answer is on its way
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        top = QHBoxLayout()
        self.summary = QLabel("Nothing is waiting for a decision.")
        self.summary.setObjectName("inboxSummary")
        top.addWidget(self.summary, 1)
        self.notify_box = QCheckBox("Notify me")
        self.notify_box.setObjectName("inboxNotify")
        self.notify_box.setToolTip("A notification from the system tray when a run starts waiting for a decision")
        self.notify_box.toggled.connect(self.notify_changed)
        top.addWidget(self.notify_box)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh_requested)
        top.addWidget(self.refresh_button)
        lay.addLayout(top)
        self.table = QTreeWidget()
        self.table.setObjectName("inboxTable")
        self.table.setColumnCount(len(COLUMNS))
        self.table.setHeaderLabels(list(COLUMNS))
        self.table.setRootIsDecorated(False)
        self.table.setUniformRowHeights(True)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        header = self.table.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(3, QHeaderView.ResizeMode.Stretch)
        for col in (0, 1, 2, 4):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        self.table.currentItemChanged.connect(lambda *_a: self._show_selected())
        self.table.itemDoubleClicked.connect(lambda item, _c: self.open_requested.emit(item.data(0, _ITEM).run_id))
        lay.addWidget(self.table, 1)
        # the selected run's card: prompt, note, decisions
        self.card = QWidget()
        self.card.setObjectName("inboxCard")
        card = QVBoxLayout(self.card)
        card.setContentsMargins(0, 4, 0, 0)
        self.prompt_label = QLabel()
        self.prompt_label.setObjectName("inboxPrompt")
        self.prompt_label.setWordWrap(True)
        self.prompt_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        card.addWidget(self.prompt_label)
        self.deadline_label = QLabel()
        self.deadline_label.setStyleSheet("color: #d97706")
        card.addWidget(self.deadline_label)
        row = QHBoxLayout()
        self.note_edit = QLineEdit()
        self.note_edit.setObjectName("inboxNote")
        self.note_edit.setPlaceholderText("Note for the next step (optional)")
        row.addWidget(self.note_edit, 1)
        self.buttons_row = QHBoxLayout()
        row.addLayout(self.buttons_row)
        self.open_button = QPushButton("Open")
        self.open_button.setToolTip("Show the run: its log, and the output under review")
        self.open_button.clicked.connect(self._open_selected)
        row.addWidget(self.open_button)
        card.addLayout(row)
        lay.addWidget(self.card)
        self.decision_buttons: list[QPushButton] = []
        self.card.setVisible(False)
        # ages tick on their own between refreshes
        self._ages = QTimer(self)
        self._ages.setInterval(1000)
        self._ages.timeout.connect(self._update_ages)
        self._ages.start()

    # ------------------------------------------------------------------ showing
    def set_notify(self, on: bool) -> None:
        self.notify_box.blockSignals(True)
        self.notify_box.setChecked(on)
        self.notify_box.blockSignals(False)

    def set_items(self, items: list[InboxItem]) -> None:
        """Show ``items`` (oldest first), keeping the selection when its run is still there."""
        selected = self.selected_item()
        keep = selected.run_id if selected is not None else None
        same = [i.run_id for i in items] == [i.run_id for i in self.items]
        self.items = list(items)
        self._answering = None
        if not same:
            self.table.clear()
            for item in items:
                row = QTreeWidgetItem(["", item.flow, item.node_id, " ".join(item.prompt.split()), _where(item)])
                row.setData(0, _ITEM, item)
                row.setToolTip(3, item.prompt)
                row.setToolTip(1, f"run {item.run_id}")
                self.table.addTopLevelItem(row)
                if item.run_id == keep:
                    self.table.setCurrentItem(row)
            if self.table.currentItem() is None and self.table.topLevelItemCount():
                self.table.setCurrentItem(self.table.topLevelItem(0))
        else:
            for i, item in enumerate(items):
                self.table.topLevelItem(i).setData(0, _ITEM, item)
        n = len(items)
        self.summary.setText(
            f"{n} run{'s' if n != 1 else ''} waiting for a decision." if n else "Nothing is waiting for a decision."
        )
        self._update_ages()
        self._show_selected(force=not same)

    def selected_item(self) -> InboxItem | None:
        row = self.table.currentItem()
        return row.data(0, _ITEM) if row is not None else None

    def select(self, run_id: str) -> bool:
        for i in range(self.table.topLevelItemCount()):
            row = self.table.topLevelItem(i)
            if row.data(0, _ITEM).run_id == run_id:
                self.table.setCurrentItem(row)
                return True
        return False

    def _update_ages(self) -> None:
        now = time.time()
        for i in range(self.table.topLevelItemCount()):
            row = self.table.topLevelItem(i)
            row.setText(0, format_duration(row.data(0, _ITEM).age(now)))

    def _show_selected(self, force: bool = True) -> None:
        item = self.selected_item()
        self.card.setVisible(item is not None)
        if item is None:
            return
        shown = getattr(self, "_shown", None)
        if not force and shown == (item.run_id, tuple(item.options)):
            self._enable(True)
            return
        self._shown = (item.run_id, tuple(item.options))
        self.prompt_label.setText(f"<b>{_esc(item.flow)}</b> · {_esc(item.node_id)} — {_esc(item.prompt)}")
        if item.deadline is not None:
            at = datetime.fromtimestamp(item.deadline).strftime("%H:%M:%S")
            self.deadline_label.setText(f"Times out at {at}: then it takes '{item.on_timeout}'")
        self.deadline_label.setVisible(item.deadline is not None)
        for b in self.decision_buttons:
            self.buttons_row.removeWidget(b)
            b.deleteLater()
        self.decision_buttons = []
        for decision in ("approve", "reject", *item.options):
            b = QPushButton(decision.capitalize() if decision in ("approve", "reject") else decision)
            b.setObjectName(f"inbox_{decision}" if decision in ("approve", "reject") else "inboxOption")
            b.setProperty("decision", decision)
            b.clicked.connect(lambda _=False, d=decision: self.decide(d))
            self.buttons_row.addWidget(b)
            self.decision_buttons.append(b)
        self._enable(self._answering is None)

    def _enable(self, on: bool) -> None:
        for b in self.decision_buttons:
            b.setEnabled(on)

    # ------------------------------------------------------------------ asking
    def decide(self, decision: str) -> None:
        item = self.selected_item()
        if item is None or self._answering is not None:
            return
        self._answering = item.run_id
        self._enable(False)
        note = self.note_edit.text()
        self.note_edit.clear()
        self.answer_requested.emit(item.run_id, decision, note)

    def answer_failed(self) -> None:
        """The answer did not go through (the reason was shown): the buttons work again."""
        self._answering = None
        self._enable(True)

    def _open_selected(self) -> None:
        item = self.selected_item()
        if item is not None:
            self.open_requested.emit(item.run_id)


def _where(item: Any) -> str:
    return "this computer" if item.where == "local" else f"Temporal {item.server or ''}".strip()


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
