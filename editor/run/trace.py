"""The subagent trace: subagent calls as a tree nested by ``callId`` / ``parentCallId``.

Concepts and invariants
* The calls are the run-state reducer's (:attr:`engine.RunState.calls`, built from the
  ``subagent_call_*`` events' typed fields): this widget only shows them. A call without
  ``parentCallId`` hangs under a top-level item for the workflow step (``parentNodeId``)
  that made it; a call with one hangs under that call.
* Each call has a state (running, done, failed), its input (the start message), its
  output or error (the end/error message) and a duration once it ended.
* ``add_events(events, state)`` shows the calls those events touched, as ``state`` has them
  after the events; a call whose parent is not known yet is shown under its parent step,
  then moved when the parent call shows up, so the tree never loses a call.
* Flows called as an agent's tools (``flow_call_start``/``_end``/``_error``) are shown next to
  the subagent calls, under the same step (or the subagent call that made them, by
  ``parentCallId``), read from their events' typed fields (``callId``, ``flowId``,
  ``flowName``; ``content`` the arguments, the result or the error). MCP tools
  (``tool_call_*``: ``tool``, ``server``, ``callId``) are shown the same way.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QHeaderView, QSplitter, QTextBrowser, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from engine import SUBAGENT_CALL_TYPES, RunEvent, RunState, SubagentCall, format_duration

from .details import format_usage

__all__ = ["SubagentTrace", "FLOW_CALL_TYPES"]

FLOW_CALL_TYPES = frozenset({"flow_call_start", "flow_call_end", "flow_call_error"})
# MCP tools called by a model or an mcp step (fields tool, server, callId): shown as flow calls are.
TOOL_CALL_TYPES = frozenset({"tool_call_start", "tool_call_end", "tool_call_error"})

_STATUS_COLOURS = {"running": QColor("#2563eb"), "done": QColor("#15803d"), "failed": QColor("#b91c1c")}
CallRole = Qt.ItemDataRole.UserRole + 1


class SubagentTrace(QWidget):
    """A tree of subagent calls plus a pane showing the selected call's input and output."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.calls: dict[str, SubagentCall] = {}  # the calls shown, by call id
        self._items: dict[str, QTreeWidgetItem] = {}
        self._step_items: dict[str, QTreeWidgetItem] = {}
        self._names: dict[str, str] = {}
        self.flow_calls: dict[str, dict[str, Any]] = {}  # flow calls shown, by call id
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        split = QSplitter(Qt.Orientation.Vertical)
        self.tree = QTreeWidget()
        self.tree.setObjectName("subagentTree")
        self.tree.setHeaderLabels(["Call", "Status", "Duration", "Input", "Output"])
        self.tree.setUniformRowHeights(True)
        self.tree.setAlternatingRowColors(True)
        # Status and Duration as wide as their header and values; Call, Input and Output
        # share the rest (resizeEvent), so a narrow pane elides them instead of cutting
        # "Duration" and pushing Input out of view.
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setMinimumSectionSize(48)
        fm = self.tree.fontMetrics()
        for col, sample in ((1, "running"), (2, "9 min 59 s")):  # (format_duration under 10 min)
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Fixed)
            width = (
                max(
                    fm.horizontalAdvance(sample),
                    header.fontMetrics().horizontalAdvance(self.tree.headerItem().text(col)),
                )
                + 28
            )
            self.tree.setColumnWidth(col, width)
        for col in (0, 3, 4):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Interactive)
        self.tree.setColumnWidth(0, 220)
        self.tree.setColumnWidth(3, 200)
        self.tree.viewport().installEventFilter(self)
        self.tree.currentItemChanged.connect(self._show_current)
        self.detail = QTextBrowser()
        self.detail.setObjectName("subagentDetail")
        self.detail.setPlaceholderText("Select a subagent call to see its input and output.")
        split.addWidget(self.tree)
        split.addWidget(self.detail)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        lay.addWidget(split)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 - Qt override
        if event.type() == QEvent.Type.Resize and watched is self.tree.viewport():
            self._fit_columns()
        return False

    def _fit_columns(self) -> None:
        free = self.tree.viewport().width() - self.tree.columnWidth(1) - self.tree.columnWidth(2)
        if free <= 0:
            return
        call, given = max(60, int(free * 0.45)), max(48, int(free * 0.28))
        self.tree.setColumnWidth(0, call)
        self.tree.setColumnWidth(3, given)
        self.tree.setColumnWidth(4, max(48, free - call - given))

    def set_node_names(self, names: dict[str, str]) -> None:
        self._names = dict(names)

    def clear(self) -> None:
        self.calls.clear()
        self.flow_calls.clear()
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
    def add_events(self, events: Iterable[RunEvent], state: RunState) -> None:
        """Show the calls ``events`` touched, as ``state`` (fed with them already) has them."""
        touched: dict[str, None] = {}
        for ev in events:
            if ev.type in FLOW_CALL_TYPES or ev.type in TOOL_CALL_TYPES:
                self._flow_call(ev)
                continue
            if ev.type in SUBAGENT_CALL_TYPES and ev.extra_json:
                call_id = (ev.extra or {}).get("callId")
                if isinstance(call_id, str):
                    touched[call_id] = None
        for call_id in touched:
            call = state.calls.get(call_id)
            if call is not None:
                self._show(call, state)

    def _flow_call(self, ev: RunEvent) -> None:
        x = ev.extra or {}
        tool = ev.type in TOOL_CALL_TYPES
        call_id = str(x.get("callId") or f"{ev.node_id}:{x.get('flowId', '')}")
        call = self.flow_calls.get(call_id)
        item = self._items.get(call_id)
        if call is None or item is None:
            if tool:
                name = f"{x.get('server') or '?'}/{x.get('tool') or 'tool'}"
            else:
                name = str(x.get("flowName") or x.get("flowId") or "flow")
            call = self.flow_calls[call_id] = {
                "kind": "tool" if tool else "flow",
                "name": name,
                "flowId": x.get("server") if tool else x.get("flowId"),
                "state": "running",
                "input": "",
                "output": "",
                "started": ev.timestamp,
                "ended": None,
            }
            parent_call = x.get("parentCallId")
            parent_item = (self._items.get(parent_call) if isinstance(parent_call, str) else None) or self._step_item(
                str(x.get("parentNodeId") or ev.node_id)
            )
            item = QTreeWidgetItem([f"⇢ {call['kind']} {name}", "", "", "", ""])
            item.setData(0, CallRole, call_id)
            if tool:
                item.setToolTip(0, f"MCP tool {name} · call {call_id}")
            else:
                item.setToolTip(0, f"Library flow {name} ({x.get('flowId', '?')}) called as a tool · call {call_id}")
            parent_item.addChild(item)
            parent_item.setExpanded(True)
            self._items[call_id] = item
        if ev.type.endswith("_start"):
            call["input"], call["started"] = ev.content, ev.timestamp
        else:
            call["state"] = "done" if ev.type.endswith("_end") else "failed"
            call["output"], call["ended"] = ev.content, ev.timestamp
        item.setText(1, call["state"])
        item.setForeground(1, _STATUS_COLOURS.get(call["state"], QColor("#6b7280")))
        dur = None if call["ended"] is None else max(0.0, call["ended"] - call["started"])
        item.setText(2, format_duration(dur))
        item.setText(3, _one_line(call["input"]))
        item.setText(4, _one_line(call["output"]))
        if self.tree.currentItem() is item:
            self._show_current(item, None)

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

    def _show(self, call: SubagentCall, state: RunState) -> None:
        item = self._items.get(call.call_id)
        if item is None:
            self.calls[call.call_id] = call
            parent = self.calls.get(call.parent_call_id) if call.parent_call_id else None
            parent_item = self._items[parent.call_id] if parent is not None else self._step_item(call.parent_node_id)
            name = call.name if call.name != call.node_id else self._names.get(call.node_id, call.node_id)
            item = QTreeWidgetItem([name, "", "", "", ""])
            item.setData(0, CallRole, call.call_id)
            item.setToolTip(0, f"{name} ({call.node_id}) · call {call.call_id} · depth {call.depth}")
            parent_item.addChild(item)
            parent_item.setExpanded(True)
            self._items[call.call_id] = item
            # calls shown before this one that name it as their parent move under it
            for child_id in call.children:
                moving = self._items.get(child_id)
                if moving is not None and moving.parent() is not item:
                    old = moving.parent()
                    if old is not None:
                        old.removeChild(moving)
                    item.addChild(moving)
            item.setExpanded(True)
        self._refresh(call)

    def _refresh(self, call: SubagentCall) -> None:
        item = self._items[call.call_id]
        item.setText(1, call.state)
        item.setForeground(1, _STATUS_COLOURS.get(call.state, QColor("#6b7280")))
        item.setText(2, format_duration(call.duration))
        item.setText(3, _one_line(call.input))
        item.setText(4, _one_line(call.error if call.state == "failed" else (call.output or "")))
        if self.tree.currentItem() is item:
            self._show_current(item, None)

    def _show_current(self, item: QTreeWidgetItem | None, _prev: Any) -> None:
        call_id = item.data(0, CallRole) if item is not None else None
        flow = self.flow_calls.get(call_id) if call_id else None
        if flow is not None:
            failed = flow["state"] == "failed"
            self.detail.setMarkdown(
                f"### {'Tool' if flow.get('kind') == 'tool' else 'Flow'} {flow['name']}\n\n"
                f"`{flow.get('flowId') or ''}` · {flow['state']}\n\n"
                f"**Arguments**\n\n{_quote(flow['input'])}\n\n**{'Error' if failed else 'Result'}**"
                f"\n\n{_quote(flow['output'] or '(none yet)')}\n"
            )
            return
        call = self.calls.get(call_id) if call_id else None
        if call is None:
            self.detail.clear()
            return
        dur = format_duration(call.duration, "running")
        result = call.error if call.state == "failed" else (call.output or "")
        tokens = f" · {format_usage(call.usage)} tokens" if call.usage else ""
        md = (
            f"### {call.name}\n\n`{call.node_id}` · {call.state} · {dur}{tokens} · depth {call.depth}\n\n"
            f"**Input**\n\n{_quote(call.input)}\n\n**{'Error' if call.state == 'failed' else 'Output'}**\n\n"
            f"{_quote(result or '(none yet)')}\n"
        )
        self.detail.setMarkdown(md)


def _one_line(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if len(text) < 120 else text[:117] + "…"


def _quote(text: str) -> str:
    return "\n".join("> " + line for line in (text or "").splitlines()) or "> "
