"""The compare view: two stored runs side by side (history ▸ Compare).

Top: the two workflows as they ran, read-only, each with its run's node states; nodes whose
data changed between them (or that were added or removed) are outlined. Middle: a table, one
row per node, with each run's status, duration and tokens and whether the output changed.
Bottom: the selected node's output difference, word by word (deletions struck through in
red, insertions in green), or, when both outputs are JSON, key by key (:func:`json_changes`).
Everything comes from :func:`engine.diff_states` over the two runs' events (the reducer
every view reads), so it agrees with ``flowdesk diff``.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QHeaderView,
    QLabel,
    QMainWindow,
    QSplitter,
    QTextBrowser,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from engine import RunState, Workflow, diff_states, format_duration

from ..canvas.view import CanvasView
from ..editing import WorkflowDocument
from ..run.approvals import diff_html
from ..run_view import ReadOnlyScene
from ..screen_fit import fit_resize

__all__ = ["CompareWindow"]

COLS = ("Node", "Status A", "Status B", "Duration A", "Duration B", "Tokens A", "Tokens B", "Output")


def _dur(v: Any) -> str:
    return format_duration(v if isinstance(v, (int, float)) else None, "—")


def _status(side: dict[str, Any]) -> str:
    """A node's status as the table shows it: one the run never reached (so it has no step,
    no output) reads "not reached", not the reducer's "skipped" (which a skip policy also gives)."""
    status = side["status"]
    if status == "skipped" and side.get("duration") is None and side.get("output") is None:
        return "not reached"
    return "from cache" if status == "cached" else status


def _tok(t: dict[str, int] | None) -> str:
    return "—" if not t else f"{t['prompt'] + t['completion']}"


class _Side(QWidget):
    def __init__(self, label: str, workflow: Workflow, state: RunState, changed: set[str]) -> None:
        super().__init__()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        self.label = QLabel(label)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setStyleSheet("padding: 4px 8px")
        lay.addWidget(self.label)
        self.document = WorkflowDocument(workflow.model_copy(deep=True), None, parent=self)
        self.scene = ReadOnlyScene(self.document, self)
        self.view = CanvasView(self.scene)
        self.view.setAcceptDrops(False)
        lay.addWidget(self.view, 1)
        self.scene.show_run(state)  # the words of the main canvas, from the engine's reducer
        for nid in changed:  # changed between the runs: outlined
            item = self.scene.node_items.get(nid)
            if item is not None:
                item.set_found(True)


class CompareWindow(QMainWindow):
    """Two runs compared; ``result`` is the comparison (``engine.diff_states``)."""

    def __init__(
        self,
        run_a: str,
        wf_a: Workflow,
        events_a: list,
        run_b: str,
        wf_b: Workflow,
        events_b: list,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setObjectName("compareWindow")
        self.run_a, self.run_b = run_a, run_b
        self.setWindowTitle(f"Compare runs {run_a[:8]} and {run_b[:8]} — Flowdesk")
        sa, sb = RunState.of(wf_a, events_a), RunState.of(wf_b, events_b)
        self.result = diff_states(wf_a, sa, wf_b, sb)
        wf = self.result["workflow"]
        changed = set(wf["changed"]) | set(wf["added"]) | set(wf["removed"])
        ta, tb = self.result["totals"]["a"], self.result["totals"]["b"]
        self.side_a = _Side(
            f"<b>A · run {run_a[:8]}</b> · {ta['status']} · {ta['tokens']['total']} tokens", wf_a, sa, changed
        )
        self.side_b = _Side(
            f"<b>B · run {run_b[:8]}</b> · {tb['status']} · {tb['tokens']['total']} tokens", wf_b, sb, changed
        )
        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.side_a)
        top.addWidget(self.side_b)

        parts = []
        if wf["changed"]:
            parts.append("changed: " + ", ".join(f"{n} ({', '.join(f)})" for n, f in wf["changed"].items()))
        if wf["added"]:
            parts.append("added: " + ", ".join(wf["added"]))
        if wf["removed"]:
            parts.append("removed: " + ", ".join(wf["removed"]))
        if wf["linksAdded"] or wf["linksRemoved"]:
            parts.append(f"links: +{len(wf['linksAdded'])} −{len(wf['linksRemoved'])}")
        self.summary = QLabel(
            "Workflow "
            + ("; ".join(parts) if parts else "unchanged between the two runs")
            + ("  ·  those nodes are outlined in blue on the canvases" if changed else "")
        )
        self.summary.setWordWrap(True)
        self.summary.setStyleSheet("padding: 6px 8px; font-weight: bold")

        self.table = QTreeWidget()
        self.table.setObjectName("compareTable")
        self.table.setRootIsDecorated(False)
        self.table.setHeaderLabels(list(COLS))
        self.table.header().setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        amber = QBrush(QColor("#ffb454"))
        blue = QBrush(QColor("#58a6ff"))
        for n in self.result["nodes"]:
            a, b = n["a"], n["b"]
            out = "changed" if n["outputChanged"] else "same"
            item = QTreeWidgetItem(
                [
                    n["title"] + ("  ✎" if n["changed"] else ""),
                    _status(a),
                    _status(b),
                    _dur(a["duration"]),
                    _dur(b["duration"]),
                    _tok(a["tokens"]),
                    _tok(b["tokens"]),
                    out,
                ]
            )
            item.setData(0, Qt.ItemDataRole.UserRole, n["nodeId"])
            if n["changed"]:
                item.setForeground(0, blue)
            if n["outputChanged"]:
                item.setForeground(7, amber)
            self.table.addTopLevelItem(item)
        for c in range(1, len(COLS)):
            self.table.resizeColumnToContents(c)
        self.diff_view = QTextBrowser()
        self.diff_view.setObjectName("compareDiff")
        self.table.currentItemChanged.connect(self._show_node)

        bottom = QSplitter(Qt.Orientation.Horizontal)
        bottom.addWidget(self.table)
        bottom.addWidget(self.diff_view)
        bottom.setSizes([720, 560])
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(bottom)
        split.setSizes([430, 330])
        central = QWidget()
        col = QVBoxLayout(central)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(0)
        col.addWidget(self.summary)
        col.addWidget(split, 1)
        self.setCentralWidget(central)
        fit_resize(self, 1380, 840)
        first = next((i for i in range(self.table.topLevelItemCount()) if self.result["nodes"][i]["outputChanged"]), 0)
        if self.table.topLevelItemCount():
            self.table.setCurrentItem(self.table.topLevelItem(first))

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        self.side_a.view.fit_all()
        self.side_b.view.fit_all()

    def node_row(self, node_id: str) -> dict[str, Any] | None:
        return next((n for n in self.result["nodes"] if n["nodeId"] == node_id), None)

    def select_node(self, node_id: str) -> None:
        for i in range(self.table.topLevelItemCount()):
            item = self.table.topLevelItem(i)
            if item.data(0, Qt.ItemDataRole.UserRole) == node_id:
                self.table.setCurrentItem(item)
                return

    def _show_node(self, item: QTreeWidgetItem | None, _prev: Any = None) -> None:
        if item is None:
            self.diff_view.clear()
            return
        node_id = item.data(0, Qt.ItemDataRole.UserRole)
        n = self.node_row(node_id)
        if n is None:
            return
        for side in (self.side_a, self.side_b):
            if node_id in side.scene.node_items:
                side.scene.select_nodes([node_id])
        a, b = n["a"]["output"], n["b"]["output"]
        head = f"<p><b>{n['title']}</b> — output {'changed' if n['outputChanged'] else 'the same'}</p>"
        if not n["outputChanged"]:
            body = f"<div style='white-space:pre-wrap'>{_esc(_text(a) or '(no output)')}</div>"
        else:
            structured = json_diff_html(a, b)
            body = structured if structured is not None else diff_html(_text(a), _text(b))
        self.diff_view.setHtml(head + body)


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, indent=2)


def _as_json(value: Any) -> Any:
    """``value`` as a JSON object or array (a text holding one is parsed); None otherwise."""
    if isinstance(value, str):
        text = value.strip()
        if not text or text[0] not in "{[":
            return None
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return None
    return value if isinstance(value, (dict, list)) else None


_MISSING = object()


def json_changes(a: Any, b: Any, path: str = "") -> list[tuple[str, str, Any, Any]]:
    """The differences between two JSON values key by key: ``[(path, op, a, b)]`` with op
    ``changed``, ``added`` or ``removed``; paths as ``items[0].name``. Objects are compared
    by key (their order ignored), arrays by position; equal parts are left out."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[tuple[str, str, Any, Any]] = []
        for key in list(a) + [k for k in b if k not in a]:
            sub = f"{path}.{key}" if path else str(key)
            out += json_changes(a.get(key, _MISSING), b.get(key, _MISSING), sub)
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = []
        for i in range(max(len(a), len(b))):
            out += json_changes(a[i] if i < len(a) else _MISSING, b[i] if i < len(b) else _MISSING, f"{path}[{i}]")
        return out
    if a is _MISSING:
        return [(path, "added", None, b)]
    if b is _MISSING:
        return [(path, "removed", a, None)]
    if a == b and type(a) is type(b):
        return []
    return [(path or "(whole value)", "changed", a, b)]


MAX_JSON_ROWS = 500


def json_diff_html(a: Any, b: Any) -> str | None:
    """Two JSON outputs compared key by key, as an HTML table (None when either is not JSON:
    the word diff is used then)."""
    ja, jb = _as_json(a), _as_json(b)
    if ja is None or jb is None:
        return None
    changes = json_changes(ja, jb)
    if not changes:
        return "<p>The same JSON (only its layout or key order differs).</p>"
    colours = {"changed": "#ffb454", "added": "#3fb950", "removed": "#f85149"}
    rows = []
    for path, op, va, vb in changes[:MAX_JSON_ROWS]:
        left = "" if op == "added" else _esc(json.dumps(va, ensure_ascii=False))
        right = "" if op == "removed" else _esc(json.dumps(vb, ensure_ascii=False))
        rows.append(
            f"<tr><td><code>{_esc(path)}</code></td><td style='color:{colours[op]}'>{op}</td>"
            f"<td>{left}</td><td>{right}</td></tr>"
        )
    more = len(changes) - MAX_JSON_ROWS
    tail = f"<p>… and {more} more differences.</p>" if more > 0 else ""
    return (
        f"<p>JSON compared key by key: {len(changes)} difference{'s' * (len(changes) != 1)}.</p>"
        "<table cellspacing='0' cellpadding='4' border='1'><tr><th>Key</th><th></th><th>A</th><th>B</th></tr>"
        + "".join(rows)
        + "</table>"
        + tail
    )


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
