"""The subagent trace: subagent calls as a tree nested by ``callId`` / ``parentCallId``.

Concepts and invariants
* Built from ``subagent_call_start`` / ``_end`` / ``_error`` events only (their JSON
  content: type, parentNodeId, subagentNodeId, subagentName, callId, parentCallId,
  depth, message). A call without ``parentCallId`` hangs under a top-level item for the
  workflow step (``parentNodeId``) that made it; a call with one hangs under that call.
* Each call has a status (running, done, failed), its input (the start message), its
  output or error (the end/error message) and a duration once it ended.
* Events are applied as they come (``add_events``); a call whose parent is not known yet
  is attached under its parent step, then moved when the parent call shows up, so the
  tree never loses a call whatever the order of events.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QSplitter, QTextBrowser, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from engine import EventType, RunEvent

__all__ = ["TraceCall", "SubagentTrace"]

_KINDS = (EventType.SUBAGENT_CALL_START, EventType.SUBAGENT_CALL_END, EventType.SUBAGENT_CALL_ERROR)
_STATUS_COLOURS = {"running": QColor("#2563eb"), "done": QColor("#15803d"), "failed": QColor("#b91c1c")}
CallRole = Qt.ItemDataRole.UserRole + 1


@dataclass
class TraceCall:
    call_id: str
    parent_call_id: str | None
    parent_node_id: str
    node_id: str
    name: str
    depth: int
    input: str = ""
    output: str | None = None
    error: str | None = None
    status: str = "running"
    started: float = 0.0
    ended: float | None = None
    children: list["TraceCall"] = field(default_factory=list)

    @property
    def duration(self) -> float | None:
        return None if self.ended is None else max(0.0, self.ended - self.started)


class SubagentTrace(QWidget):
    """A tree of subagent calls plus a pane showing the selected call's input and output."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.calls: dict[str, TraceCall] = {}
        self._items: dict[str, QTreeWidgetItem] = {}
        self._step_items: dict[str, QTreeWidgetItem] = {}
        self._names: dict[str, str] = {}
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        split = QSplitter(Qt.Orientation.Vertical)
        self.tree = QTreeWidget()
        self.tree.setObjectName("subagentTree")
        self.tree.setHeaderLabels(["Call", "Status", "Duration", "Input", "Output"])
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        self.tree.setColumnWidth(0, 220)
        self.tree.setColumnWidth(1, 70)
        self.tree.setColumnWidth(2, 70)
        self.tree.setColumnWidth(3, 200)
        self.tree.currentItemChanged.connect(self._show_current)
        self.detail = QTextBrowser()
        self.detail.setObjectName("subagentDetail")
        self.detail.setPlaceholderText("Select a subagent call to see its input and output.")
        split.addWidget(self.tree)
        split.addWidget(self.detail)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        lay.addWidget(split)

    def set_node_names(self, names: dict[str, str]) -> None:
        self._names = dict(names)

    def clear(self) -> None:
        self.calls.clear()
        self._items.clear()
        self._step_items.clear()
        self.tree.clear()
        self.detail.clear()

    def roots(self) -> list[QTreeWidgetItem]:
        """The top-level items: one per workflow step that called subagents."""
        items = (self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount()))
        return [it for it in items if it is not None]

    def select_call(self, call_id: str) -> bool:
        item = self._items.get(call_id)
        if item is None:
            return False
        self.tree.setCurrentItem(item)
        self.tree.scrollToItem(item)
        return True

    # ------------------------------------------------------------------ feeding
    def add_events(self, events: Iterable[RunEvent]) -> None:
        for ev in events:
            if ev.type in _KINDS:
                self._apply(ev)

    def _step_item(self, node_id: str) -> QTreeWidgetItem:
        item = self._step_items.get(node_id)
        if item is None:
            item = QTreeWidgetItem([f"{self._names.get(node_id, node_id)}", "", "", "", ""])
            font = item.font(0)
            font.setBold(True)
            item.setFont(0, font)
            item.setData(0, CallRole, None)
            self.tree.addTopLevelItem(item)
            item.setExpanded(True)
            self._step_items[node_id] = item
        return item

    def _apply(self, ev: RunEvent) -> None:
        p = ev.json_content()
        if not isinstance(p, dict) or not p.get("callId"):
            return
        call_id = str(p["callId"])
        message = p.get("message")
        message = message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)
        call = self.calls.get(call_id)
        if call is None:
            node_id = str(p.get("subagentNodeId") or "")
            call = TraceCall(call_id, p.get("parentCallId"), str(p.get("parentNodeId") or ev.node_id), node_id,
                             str(p.get("subagentName") or self._names.get(node_id, node_id)), int(p.get("depth") or 1),
                             started=ev.timestamp)
            self.calls[call_id] = call
            parent = self.calls.get(call.parent_call_id) if call.parent_call_id else None
            if parent is not None:
                parent.children.append(call)
                parent_item = self._items[parent.call_id]
            else:
                parent_item = self._step_item(call.parent_node_id)
            item = QTreeWidgetItem([call.name, "", "", "", ""])
            item.setData(0, CallRole, call_id)
            item.setToolTip(0, f"{call.name} ({call.node_id}) · call {call_id} · depth {call.depth}")
            parent_item.addChild(item)
            parent_item.setExpanded(True)
            self._items[call_id] = item
            # calls that arrived before this one and name it as their parent move under it
            for other in self.calls.values():
                if other.parent_call_id == call_id and other is not call and other not in call.children:
                    call.children.append(other)
                    moving = self._items[other.call_id]
                    old = moving.parent()
                    if old is not None:
                        old.removeChild(moving)
                    item.addChild(moving)
            item.setExpanded(True)
        if ev.type == EventType.SUBAGENT_CALL_START:
            call.input, call.started = message, ev.timestamp
        elif ev.type == EventType.SUBAGENT_CALL_END:
            call.output, call.status, call.ended = message, "done", ev.timestamp
        else:
            call.error, call.status, call.ended = message, "failed", ev.timestamp
        self._refresh(call)

    def _refresh(self, call: TraceCall) -> None:
        item = self._items[call.call_id]
        item.setText(1, call.status)
        item.setForeground(1, _STATUS_COLOURS.get(call.status, QColor("#6b7280")))
        item.setText(2, "" if call.duration is None else f"{call.duration:.2f} s")
        item.setText(3, _one_line(call.input))
        item.setText(4, _one_line(call.error if call.status == "failed" else (call.output or "")))
        if self.tree.currentItem() is item:
            self._show_current(item, None)

    def _show_current(self, item: QTreeWidgetItem | None, _prev: Any) -> None:
        call_id = item.data(0, CallRole) if item is not None else None
        call = self.calls.get(call_id) if call_id else None
        if call is None:
            self.detail.clear()
            return
        dur = "running" if call.duration is None else f"{call.duration:.2f} s"
        result = call.error if call.status == "failed" else (call.output or "")
        md = (f"### {call.name}\n\n`{call.node_id}` · {call.status} · {dur} · depth {call.depth}\n\n"
              f"**Input**\n\n{_quote(call.input)}\n\n**{'Error' if call.status == 'failed' else 'Output'}**\n\n"
              f"{_quote(result or '(none yet)')}\n")
        self.detail.setMarkdown(md)


def _one_line(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if len(text) < 120 else text[:117] + "…"


def _quote(text: str) -> str:
    return "\n".join("> " + line for line in (text or "").splitlines()) or "> "
