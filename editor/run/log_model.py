"""The run log as a Qt model: one row per shown entry, appended in batches.

Concepts and invariants
* :class:`LogModel` is a flat, append-only ``QAbstractListModel`` of :class:`LogEntry`.
  :meth:`LogModel.add_events` takes a batch of engine events and inserts all new rows
  with one ``beginInsertRows``/``endInsertRows`` pair, plus one ``dataChanged`` for rows
  that changed in place, so a burst costs a handful of view updates, not one per event.
* Streamed text (``llm_delta``) is not a row of its own: the first delta of a node opens
  a *streaming* response entry for it, later deltas append to that entry, and the
  node's ``llm_response`` replaces its text with the final answer (type becomes
  ``llm_response``). An ``llm_error`` or the end of the run closes the entry as it is.
* ``raw_events`` keeps every event as received (deltas included), for export.
* :class:`LogFilterProxy` filters by node, by event type, by text (case-insensitive,
  over content, node name and type label) and hides collapsed nodes' entries except
  their ``step_start`` rows. With no filter it accepts rows without looking at them.
* Entries of a nested run (a subflow: events whose ``path`` is not empty) are grouped under
  the flow node that started it (:func:`flow_node_of_path`): ``entry.group`` is that node's
  id, ``entry.depth`` the nesting level; collapsing the flow node hides them all. Their node
  names come from the child workflow when ``LogModel.child_workflow`` can find it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from PySide6.QtCore import QAbstractListModel, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt

from engine import SUBAGENT_CALL_TYPES, SYSTEM_NODE, EventType, RunEvent, Workflow, spec_for

__all__ = [
    "display_name",
    "flow_node_of_path",
    "FLOW_CALL_TYPES",
    "LogEntry",
    "LogModel",
    "LogFilterProxy",
    "STREAMING",
    "TYPE_LABELS",
    "EntryRole",
    "NodeRole",
    "TypeRole",
    "type_label",
    "TYPE_GROUPS",
]

_STEP_END = "step_end"
STREAMING = "llm_stream"  # the type of a response entry while its text is still streaming

EntryRole = Qt.ItemDataRole.UserRole + 1
NodeRole = Qt.ItemDataRole.UserRole + 2
TypeRole = Qt.ItemDataRole.UserRole + 3

TYPE_LABELS: dict[str, str] = {
    EventType.STEP_START: "Step",
    EventType.START_PROMPT: "Prompt",
    STREAMING: "Streaming",
    EventType.LLM_RESPONSE: "Response",
    EventType.LLM_ERROR: "LLM error",
    EventType.ERROR: "Error",
    EventType.LOGIC_CHECK: "Check",
    EventType.WAIT_INPUT: "Approval",
    EventType.APPROVAL_QUEUED: "Queued",
    EventType.INPUT_RECEIVED: "Decision",
    EventType.SUBAGENT_CALL_START: "Subagent →",
    EventType.SUBAGENT_CALL_END: "Subagent ←",
    EventType.SUBAGENT_CALL_ERROR: "Subagent ✗",
    EventType.RUN_STATUS: "Run",
    EventType.NODE_OUTPUT: "Output",
    # step policies and loops (docs/design.md "Step policies", "More node kinds")
    "step_retry": "Retry",
    "step_skipped": "Skipped",
    "step_end": "Step end",
    "loop_check": "Loop",
    "join_wait": "Join",
    "flow_call_start": "Flow →",
    "flow_call_end": "Flow ←",
    "flow_call_error": "Flow ✗",
    "http_request": "Request",
    "http_response": "Response",
    # acting: code, scripts, permissions (docs/design.md, "Acting")
    "code_log": "Print",
    "api_call_start": "API →",
    "api_call_end": "API ←",
    "permission_denied": "Denied",
    "script_blocked": "Blocked",
    "browser_action": "Browser",
    "browser_screenshot": "Screenshot",
    "browser_blocked": "Blocked",
}
FLOW_CALL_TYPES = frozenset({"flow_call_start", "flow_call_end", "flow_call_error"})

# Filter groups shown in the type menu: label -> entry types
TYPE_GROUPS: dict[str, tuple[str, ...]] = {
    "Steps": (EventType.STEP_START, "step_end"),
    "Prompts": (EventType.START_PROMPT,),
    "Responses": (EventType.LLM_RESPONSE, STREAMING, EventType.NODE_OUTPUT),
    "Condition checks": (EventType.LOGIC_CHECK, "loop_check", "join_wait"),
    "Approvals": (EventType.WAIT_INPUT, EventType.APPROVAL_QUEUED, EventType.INPUT_RECEIVED),
    "Subagent calls": (EventType.SUBAGENT_CALL_START, EventType.SUBAGENT_CALL_END, EventType.SUBAGENT_CALL_ERROR),
    "Flow calls": tuple(sorted(FLOW_CALL_TYPES)),
    "HTTP": ("http_request", "http_response"),
    "Code output": ("code_log", "api_call_start", "api_call_end"),
    "Errors": (
        EventType.LLM_ERROR,
        EventType.ERROR,
        "step_retry",
        "step_skipped",
        "permission_denied",
        "script_blocked",
    ),
    "Run status": (EventType.RUN_STATUS,),
}


def display_name(node: Any, title: str | None = None) -> str:
    """A node's own name (an agent's); a title that is only the kind's generic label ("Approval")
    gets the id too, so two such nodes can be told apart. ``title``: ``node.title``, when the
    caller has read it already."""
    title = node.title if title is None else title
    spec = spec_for(node.type)
    generic = title.casefold() == ((spec.label if spec is not None else "") or node.type).casefold()
    if not generic or node.id.casefold() == title.casefold():
        return title
    return f"{title} ({node.id})"


class NodeNames:
    """A workflow's node names as the run console shows them: each node's display name, and
    the node filter's entries (labels and the node id of each). Plain Python: an open of a big
    file makes them on a worker thread (see ``RunConsole.use_names``)."""

    def __init__(self, workflow: Any, names: dict[str, str], labels: list[str], ids: list[str | None]) -> None:
        self.workflow = workflow
        self.names = names
        self.labels = labels
        self.ids = ids
        self.rows = {nid: i for i, nid in enumerate(ids) if nid is not None}  # node id -> its entry

    @classmethod
    def of(cls, workflow: Any) -> NodeNames:
        names: dict[str, str] = {}
        labels: list[str] = ["All nodes"]
        ids: list[str | None] = [None]
        if workflow is not None:
            for n in workflow.nodes:
                title = n.title  # read once
                names[n.id] = display_name(n, title)
                labels.append(f"{title} ({n.id})" if title != n.id else n.id)
                ids.append(n.id)
        labels.append("Run (status)")
        ids.append(SYSTEM_NODE)
        return cls(workflow, names, labels, ids)


def flow_node_of_path(path: str, known: Any = ()) -> str:
    """The top-level node a nested run's ``path`` hangs under (the flow node that started it).

    A path names the call that started each nested run, outermost first, joined with ``/``:
    ``<flow node id>:<child run id>`` for a subflow, ``<agent node id>.<call id>:<child run id>``
    for a flow called as an agent's tool. The first segment (split on ``/`` and ``:``; a
    segment's part before ``.`` too) that is one of the ``known`` node ids wins, else the
    first call's node id."""
    segments = [seg for part in path.split("/") for seg in part.split(":") if seg]
    for seg in segments:
        if seg in known:
            return seg
        head = seg.split(".", 1)[0]
        if head in known:
            return head
    return segments[0].split(".", 1)[0] if segments else path


def path_depth(path: str) -> int:
    return len([p for p in path.split("/") if p]) if path else 0


def type_label(kind: str) -> str:
    return TYPE_LABELS.get(kind, kind.replace("_", " ").capitalize())


class LogEntry:
    """One row of the log: an event, or a response being streamed."""

    __slots__ = (
        "timestamp",
        "node_id",
        "node_name",
        "type",
        "content",
        "extra",
        "row",
        "ended",
        "visit",
        "end",
        "path",
        "group",
        "depth",
    )

    def __init__(
        self,
        timestamp: float,
        node_id: str,
        node_name: str,
        type: str,
        content: str,
        extra: dict[str, Any] | None,
        row: int,
        path: str = "",
        group: str | None = None,
    ) -> None:
        self.timestamp = timestamp
        self.node_id = node_id
        self.node_name = node_name
        self.type = type
        self.content = content
        self.extra = extra
        self.row = row
        self.ended: float | None = None  # when a streamed response got its final text
        self.visit = 0  # for step_start rows: which visit of the node this step is (1, 2, ...)
        self.end: dict[str, Any] | None = None  # for step_start rows: the step's step_end fields, once it ended
        self.path = path  # "" for the top-level run; a nested run's path otherwise
        self.group = node_id if group is None else group  # the top-level node this entry is shown under
        self.depth = path_depth(path)  # 0 top-level, 1 a subflow's entry, ...

    @property
    def label(self) -> str:
        return type_label(self.type)

    def to_event(self) -> RunEvent:
        kind = EventType.LLM_RESPONSE if self.type == STREAMING else self.type
        return RunEvent(self.node_id, kind, self.content, timestamp=self.timestamp, extra=self.extra, path=self.path)

    def summary(self) -> str:
        """The first lines of the content, on one line."""
        text = self.content
        if len(text) > 400:
            text = text[:400]
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        return "  ⏎ ".join(lines[:3])

    def __repr__(self) -> str:
        return f"LogEntry({self.node_id!r}, {self.type!r}, {self.content[:40]!r})"


class LogModel(QAbstractListModel):
    """Append-only list of log entries, fed in batches."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.entries: list[LogEntry] = []
        self.raw_events: list[RunEvent] = []
        self._names: dict[str, str] = {SYSTEM_NODE: "Run"}
        self._streams: dict[str, LogEntry] = {}  # node id -> its open streaming entry
        self._by_node: dict[str, list[int]] = {}  # node id -> rows, in order
        self._visits: dict[str, int] = {}
        self._steps: dict[str, LogEntry] = {}  # the latest step_start row of each node (step_end lands there)
        self.latest_response: LogEntry | None = None  # the last response (or streaming) entry
        self.child_workflow: Any = None  # (flow node id) -> the child Workflow or None; the console sets it
        self._child_names: dict[str, dict[str, str]] = {}  # flow node id -> child node id -> name
        self._groups: dict[str, str] = {}  # nested run path -> the flow node it hangs under
        self._nested_changed: set[int] = set()  # rows of nested entries changed in place in this batch

    # ------------------------------------------------------------------ names
    def set_workflow(self, workflow: Workflow | None, names: dict[str, str] | None = None) -> None:
        """The nodes' names (``names``: their display names when the caller has them already)."""
        self._names = {SYSTEM_NODE: "Run"}
        if names is not None:
            self._names.update(names)
        elif workflow is not None:
            for n in workflow.nodes:
                self._names[n.id] = display_name(n)
        self._child_names.clear()
        for e in self.entries:
            e.node_name = self.child_node_name(e.group, e.node_id) if e.depth else self.node_name(e.node_id)
        if self.entries:
            self.dataChanged.emit(self.index(0), self.index(len(self.entries) - 1))

    def node_name(self, node_id: str) -> str:
        return self._names.get(node_id, node_id)

    def child_node_name(self, group: str, node_id: str) -> str:
        names = self._child_names.get(group)
        if names is None:
            names = {}
            wf = None
            if self.child_workflow is not None:
                try:
                    wf = self.child_workflow(group)
                except Exception:  # noqa: BLE001 - a missing or broken child file: ids are shown
                    wf = None
            if wf is not None:
                names = {n.id: display_name(n) for n in wf.nodes}
            names[SYSTEM_NODE] = "Subflow"
            self._child_names[group] = names
        return names.get(node_id, node_id)

    def node_ids(self) -> list[str]:
        """Nodes that have entries, in order of their first entry."""
        return list(self._by_node)

    def rows_of(self, node_id: str) -> list[int]:
        return self._by_node.get(node_id, [])

    # ------------------------------------------------------------------ Qt model
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008 (Qt's own default)
        return 0 if parent.isValid() else len(self.entries)

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        row = index.row()
        if not index.isValid() or row >= len(self.entries):
            return None
        e = self.entries[row]
        if role == EntryRole:
            return e
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{e.node_name} · {e.label} · {e.summary()}"
        if role == NodeRole:
            return e.node_id
        if role == TypeRole:
            return e.type
        if role == Qt.ItemDataRole.ToolTipRole:
            text = e.content if len(e.content) < 600 else e.content[:600] + "…"
            return f"{e.node_name} — {e.label}\n{text}"
        return None

    # ------------------------------------------------------------------ feeding
    def clear(self) -> None:
        self.beginResetModel()
        self.entries.clear()
        self.raw_events.clear()
        self._streams.clear()
        self._by_node.clear()
        self._visits.clear()
        self._steps.clear()
        self._child_names.clear()
        self._groups.clear()
        self.latest_response = None
        self.endResetModel()

    def add_events(self, events: Iterable[RunEvent]) -> None:
        """Append a batch: one row insertion for all new rows, one change signal for updated ones."""
        entries = self.entries
        first_new = len(entries)
        new: list[LogEntry] = []
        changed_lo, changed_hi = -1, -1
        streams = self._streams
        by_node = self._by_node
        names = self._names
        raw = self.raw_events
        for ev in events:
            raw.append(ev)
            if ev.path:  # a nested run's event: grouped under its flow node
                self._add_nested(ev, new, first_new)
                continue
            kind = ev.type
            nid = ev.node_id
            if kind == EventType.LLM_DELTA:
                entry = streams.get(nid)
                if entry is None:
                    entry = LogEntry(
                        ev.timestamp, nid, names.get(nid, nid), STREAMING, ev.content, None, first_new + len(new)
                    )
                    new.append(entry)
                    streams[nid] = entry
                    self.latest_response = entry
                    by_node.setdefault(nid, []).append(entry.row)
                else:
                    entry.content += ev.content
                    if entry.row < first_new:
                        changed_lo = entry.row if changed_lo < 0 else min(changed_lo, entry.row)
                        changed_hi = max(changed_hi, entry.row)
                continue
            if kind == EventType.LLM_RESPONSE:
                entry = streams.pop(nid, None)
                if entry is not None:
                    entry.type, entry.content, entry.extra, entry.ended = str(kind), ev.content, ev.extra, ev.timestamp
                    if entry.row < first_new:
                        changed_lo = entry.row if changed_lo < 0 else min(changed_lo, entry.row)
                        changed_hi = max(changed_hi, entry.row)
                    continue
            elif kind == _STEP_END:
                # Shown compactly: on its step's row ("Step · ✓ done in 1.2 s"), not as a row of its own.
                step = self._steps.get(nid)
                if step is not None:
                    step.end = {**(ev.extra or {}), "content": ev.content}
                    if step.row < first_new:
                        changed_lo = step.row if changed_lo < 0 else min(changed_lo, step.row)
                        changed_hi = max(changed_hi, step.row)
                continue
            elif kind == EventType.LLM_ERROR or kind == EventType.STEP_START:
                streams.pop(nid, None)
            elif kind == EventType.RUN_STATUS and ev.content in ("completed", "failed", "cancelled"):
                streams.clear()
            entry = LogEntry(
                ev.timestamp, nid, names.get(nid, nid), str(kind), ev.content, ev.extra, first_new + len(new)
            )
            if kind == EventType.STEP_START:
                entry.visit = self._visits[nid] = self._visits.get(nid, 0) + 1
                self._steps[nid] = entry
            elif kind == EventType.LLM_RESPONSE:
                self.latest_response = entry
            new.append(entry)
            by_node.setdefault(nid, []).append(entry.row)
        if new:
            self.beginInsertRows(QModelIndex(), first_new, first_new + len(new) - 1)
            entries.extend(new)
            self.endInsertRows()
        if self._nested_changed:
            rows = [r for r in self._nested_changed if r < first_new]
            self._nested_changed = set()
            if rows:
                changed_lo = min(rows) if changed_lo < 0 else min(changed_lo, min(rows))
                changed_hi = max(changed_hi, max(rows))
        if changed_lo >= 0:
            self.dataChanged.emit(self.index(changed_lo), self.index(changed_hi))

    def _add_nested(self, ev: RunEvent, new: list[LogEntry], first_new: int) -> None:
        """One event of a nested run: its own streams (keyed by path and node), shown under the flow node."""
        path, nid, kind = ev.path, ev.node_id, ev.type
        group = self._groups.get(path)
        if group is None:
            group = self._groups[path] = flow_node_of_path(path, self._names)
        key = f"{path}\x00{nid}"
        streams = self._streams
        if kind == EventType.LLM_DELTA:
            entry = streams.get(key)
            if entry is None:
                entry = LogEntry(
                    ev.timestamp,
                    nid,
                    self.child_node_name(group, nid),
                    STREAMING,
                    ev.content,
                    None,
                    first_new + len(new),
                    path,
                    group,
                )
                new.append(entry)
                streams[key] = entry
            else:
                entry.content += ev.content
                self._nested_changed.add(entry.row)
            return
        if kind == EventType.LLM_RESPONSE:
            entry = streams.pop(key, None)
            if entry is not None:
                entry.type, entry.content, entry.extra, entry.ended = str(kind), ev.content, ev.extra, ev.timestamp
                self._nested_changed.add(entry.row)
                return
        elif kind == _STEP_END:  # on its step's row, as for a top-level step
            step = self._steps.get(key)
            if step is not None:
                step.end = {**(ev.extra or {}), "content": ev.content}
                self._nested_changed.add(step.row)
            return
        elif kind == EventType.LLM_ERROR or kind == EventType.STEP_START:
            streams.pop(key, None)
        entry = LogEntry(
            ev.timestamp,
            nid,
            self.child_node_name(group, nid),
            str(kind),
            ev.content,
            ev.extra,
            first_new + len(new),
            path,
            group,
        )
        if kind == EventType.STEP_START:
            vkey = key
            entry.visit = self._visits[vkey] = self._visits.get(vkey, 0) + 1
            self._steps[key] = entry
        new.append(entry)

    def streaming_entry(self, node_id: str) -> LogEntry | None:
        return self._streams.get(node_id)


class LogFilterProxy(QSortFilterProxyModel):
    """Filters the log by node, type, text, and hides collapsed nodes' entries."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._nodes: frozenset[str] | None = None
        self._types: frozenset[str] | None = None
        self._text = ""
        self._collapsed: set[str] = set()
        self.setDynamicSortFilter(True)

    def _change(self, apply: Any) -> None:
        # invalidateFilter() is deprecated from Qt 6.10 on: wrap the change in begin/endFilterChange
        if hasattr(self, "beginFilterChange"):
            self.beginFilterChange()
            apply()
            self.endFilterChange()
        else:  # pragma: no cover - older Qt
            apply()
            self.invalidateFilter()

    def _active(self) -> bool:
        return bool(self._nodes is not None or self._types is not None or self._text or self._collapsed)

    # -------------------------------------------------------------- settings
    def set_node_filter(self, nodes: Iterable[str] | None) -> None:
        def apply() -> None:
            self._nodes = frozenset(nodes) if nodes is not None else None

        self._change(apply)

    def set_type_filter(self, types: Iterable[str] | None) -> None:
        def apply() -> None:
            self._types = frozenset(str(t) for t in types) if types is not None else None

        self._change(apply)

    def set_text_filter(self, text: str) -> None:
        def apply() -> None:
            self._text = text.strip().casefold()

        self._change(apply)

    def set_collapsed(self, node_id: str, collapsed: bool) -> None:
        if collapsed == (node_id in self._collapsed):
            return
        self._change(lambda: self._collapsed.add(node_id) if collapsed else self._collapsed.discard(node_id))

    def is_collapsed(self, node_id: str) -> bool:
        return node_id in self._collapsed

    def collapse_all(self, node_ids: Iterable[str]) -> None:
        def apply() -> None:
            self._collapsed = {n for n in node_ids if n != SYSTEM_NODE}

        self._change(apply)

    def expand_all(self) -> None:
        self._change(self._collapsed.clear)

    @property
    def node_filter(self) -> frozenset[str] | None:
        return self._nodes

    @property
    def type_filter(self) -> frozenset[str] | None:
        return self._types

    @property
    def text_filter(self) -> str:
        return self._text

    # -------------------------------------------------------------- filtering
    def filterAcceptsRow(self, source_row: int, source_parent: QModelIndex | QPersistentModelIndex) -> bool:
        if not self._active():
            return True
        model = self.sourceModel()
        entry: LogEntry = model.entries[source_row]  # type: ignore[attr-defined]
        if self._nodes is not None and entry.group not in self._nodes:
            return False
        if self._types is not None and entry.type not in self._types:
            return False
        if entry.group in self._collapsed and (entry.type != EventType.STEP_START or entry.depth):
            return False
        if self._text:
            t = self._text
            if (
                t not in entry.content.casefold()
                and t not in entry.node_name.casefold()
                and t not in entry.label.casefold()
                and not (
                    entry.type in SUBAGENT_CALL_TYPES
                    and entry.extra
                    and t in str(entry.extra.get("subagentName", "")).casefold()
                )
            ):
                return False
        return True


def format_time(ts: float) -> str:
    lt = time.localtime(ts)
    return time.strftime("%H:%M:%S", lt) + f".{int((ts % 1) * 1000):03d}"
