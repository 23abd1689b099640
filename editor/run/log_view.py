"""The run log's list view: how one entry is painted (two lines: time, type chip and node;
then a one-line summary) and the summary text of each entry type.

Structured entries are summarised from their typed fields (a subagent call's name, depth
and message; an approval's decision), never by parsing their content.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, QModelIndex, QPersistentModelIndex, QRect, QSize, Qt
from PySide6.QtGui import QAccessible, QBrush, QColor, QFont, QFontMetrics, QMouseEvent, QPainter, QPen
from PySide6.QtWidgets import QListView, QStyle, QStyledItemDelegate, QStyleOptionViewItem

from engine import SUBAGENT_CALL_TYPES, SYSTEM_NODE, EventType, format_duration

from .details import format_usage
from .log_model import FLOW_CALL_TYPES, STREAMING, EntryRole, LogEntry, format_time

__all__ = [
    "LogDelegate",
    "LogListView",
    "TYPE_COLOURS",
    "summary_for",
    "subagent_line",
    "flow_call_line",
    "code_log_fields",
]

STDERR = "code_log:stderr"  # the colour key of a code_log line written to stderr

# The entries that report a model call's tokens (shown on their row's right)
_ANSWER_TYPES = frozenset({EventType.LLM_RESPONSE.value, EventType.SUBAGENT_CALL_END.value})

TYPE_COLOURS: dict[str, str] = {
    EventType.STEP_START: "#64748b",
    EventType.START_PROMPT: "#2563eb",
    STREAMING: "#0891b2",
    EventType.LLM_RESPONSE: "#15803d",
    EventType.NODE_OUTPUT: "#15803d",
    EventType.LLM_ERROR: "#dc2626",
    EventType.ERROR: "#dc2626",
    EventType.LOGIC_CHECK: "#7c3aed",
    EventType.WAIT_INPUT: "#d97706",
    EventType.APPROVAL_QUEUED: "#ca8a04",
    EventType.INPUT_RECEIVED: "#b45309",
    EventType.SUBAGENT_CALL_START: "#0e7490",
    EventType.SUBAGENT_CALL_END: "#0e7490",
    EventType.SUBAGENT_CALL_ERROR: "#dc2626",
    EventType.RUN_STATUS: "#475569",
    "step_retry": "#d97706",
    "step_skipped": "#8b5cf6",
    "step_end": "#64748b",
    "loop_check": "#7c3aed",
    "join_wait": "#0f766e",
    "flow_call_start": "#9333ea",
    "flow_call_end": "#9333ea",
    "flow_call_error": "#dc2626",
    "http_request": "#0369a1",
    "http_response": "#0369a1",
    "code_log": "#0f766e",
    STDERR: "#ea580c",  # a code_log line on stderr (its own chip colour)
    "api_call_start": "#7c3aed",
    "api_call_end": "#7c3aed",
    "permission_denied": "#dc2626",
    "script_blocked": "#dc2626",
    "browser_action": "#1f883d",
    "browser_screenshot": "#1f883d",
    "browser_blocked": "#b45309",
}
INDENT = 18  # pixels per nesting level of a subflow's entries


class LogListView(QListView):
    """The log's list: a row whose data changed is repainted alone.

    A streamed answer changes one row (its text, its "streaming… N chars") for every piece
    that arrives; QListView's own ``dataChanged`` repaints the whole viewport for it (every
    visible row through the delegate: most of the console's time per token). The rows all
    have one height (``uniformItemSizes``), so only that row's rectangle needs painting."""

    def dataChanged(  # noqa: N802 (Qt override)
        self,
        top_left: QModelIndex | QPersistentModelIndex,
        bottom_right: QModelIndex | QPersistentModelIndex,
        roles: Any = (),
    ) -> None:
        if (
            top_left == bottom_right
            and top_left.isValid()
            and self.uniformItemSizes()
            and not QAccessible.isActive()  # (a screen reader is told of the change by Qt's own)
            and not self.isPersistentEditorOpen(top_left)
        ):
            rect = self.visualRect(top_left)
            if rect.intersects(self.viewport().rect()):
                self.viewport().update(rect)
            return
        super().dataChanged(top_left, bottom_right, roles)


class LogDelegate(QStyledItemDelegate):
    """Paints one log entry on two lines: time, type chip, node; then the first lines of content."""

    ARROW_W = 16

    def __init__(self, is_collapsed: Callable[[str], bool], parent: Any = None) -> None:
        super().__init__(parent)
        self._is_collapsed = is_collapsed
        self._fonts_key: Any = None
        self._colours = {k: QColor(v) for k, v in TYPE_COLOURS.items()}
        self._chip_bg = {k: QColor(c.red(), c.green(), c.blue(), 34) for k, c in self._colours.items()}
        self._default = QColor("#475569")
        self._dim = QColor("#8b93a1")  # readable on light and dark backgrounds

    def _fonts(self, base: QFont) -> None:
        key = (base.family(), base.pointSizeF(), base.pixelSize())
        if key == self._fonts_key:
            return
        self._fonts_key = key
        self.font = QFont(base)
        self.bold = QFont(base)
        self.bold.setBold(True)
        self.chip = QFont(base)
        self.chip.setBold(True)
        self.chip.setPointSizeF(max(6.5, base.pointSizeF() * 0.8) if base.pointSizeF() > 0 else 8)
        self.mono = QFont(base)
        self.mono.setStyleHint(QFont.StyleHint.Monospace)
        self.mono.setFamily("monospace")
        self.fm = QFontMetrics(self.font)
        self.bfm = QFontMetrics(self.bold)
        self.cfm = QFontMetrics(self.chip)
        self.mfm = QFontMetrics(self.mono)
        self.time_w = self.mfm.horizontalAdvance("00:00:00.000")
        self.chip_w = (
            max(
                self.cfm.horizontalAdvance(t)
                for t in ("SUBAGENT ←", "STREAMING", "LLM ERROR", "APPROVAL", "RESPONSE", "DECISION")
            )
            + 12
        )
        self.row_h = self.fm.height() * 2 + 10

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        self._fonts(option.font)
        return QSize(200, self.row_h)

    def arrow_rect(self, rect: QRect) -> QRect:
        return QRect(rect.left() + 4, rect.top() + 3, self.ARROW_W, self.fm.height() + 2)

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        entry: LogEntry | None = index.data(EntryRole)
        if entry is None:
            return
        self._fonts(option.font)
        painter.save()
        r = option.rect
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        pal = option.palette
        if selected:
            painter.fillRect(r, pal.highlight())
        elif index.row() % 2:
            # a faint wash of the text colour: visible on light and dark themes alike (a style
            # sheet may set the text colour while the palette's alternateBase stays light)
            wash = QColor(pal.text().color())
            wash.setAlpha(14)
            painter.fillRect(r, wash)
        if entry.depth:  # a subflow's entry: indented under its flow node, with a guide line
            indent = INDENT * entry.depth
            painter.fillRect(QRect(r.left() + 3, r.top(), indent - 6, r.height()), QColor(147, 51, 234, 22))
            painter.fillRect(QRect(r.left() + indent - 5, r.top(), 2, r.height()), QColor(147, 51, 234, 110))
            r = QRect(r.left() + indent, r.top(), r.width() - indent, r.height())
        kind = entry.type
        label = entry.label.upper()
        if kind == "code_log":  # stdout and stderr lines told apart by chip and colour
            stream = code_log_fields(entry)[0]
            label = stream.upper()
            kind = STDERR if stream == "stderr" else kind
        colour = self._colours.get(kind, self._default)
        painter.fillRect(QRect(r.left(), r.top() + 2, 3, r.height() - 4), colour)
        text_colour = pal.highlightedText().color() if selected else pal.text().color()
        if pal.text().color().lightness() > 140:  # light text: a dark theme, so lighter type colours
            colour = colour.lighter(165)
        dim = pal.highlightedText().color() if selected else self._dim
        fh = self.fm.height()
        y1 = r.top() + 4
        x = r.left() + 4
        # disclosure arrow on a step's first row (collapse / expand the node's entries)
        if entry.type == EventType.STEP_START and entry.node_id != SYSTEM_NODE and not entry.depth:
            painter.setPen(dim)
            painter.setFont(self.font)
            arrow = "▸" if self._is_collapsed(entry.node_id) else "▾"
            painter.drawText(self.arrow_rect(r), Qt.AlignmentFlag.AlignCenter, arrow)
        x += self.ARROW_W + 2
        painter.setFont(self.mono)
        painter.setPen(dim)
        painter.drawText(QRect(x, y1, self.time_w + 2, fh), Qt.AlignmentFlag.AlignVCenter, format_time(entry.timestamp))
        x += self.time_w + 10
        # type chip
        chip = QRect(x, y1, self.chip_w, fh)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QBrush(self._chip_bg.get(kind, QColor(71, 85, 105, 34))))
        painter.drawRoundedRect(chip, 4, 4)
        painter.setFont(self.chip)
        painter.setPen(QPen(colour if not selected else text_colour))
        painter.drawText(chip, Qt.AlignmentFlag.AlignCenter, label)
        x += self.chip_w + 8
        # node name, then a hint on the right (tokens, streaming)
        hint = ""
        if entry.type == STREAMING:
            hint = f"streaming… {len(entry.content)} chars"
        elif entry.type in _ANSWER_TYPES and entry.extra and isinstance(entry.extra.get("usage"), dict):
            hint = format_usage(entry.extra["usage"]) + " tokens"
        right = r.right() - 6
        if hint:
            painter.setFont(self.font)
            painter.setPen(dim)
            hw = self.fm.horizontalAdvance(hint)
            painter.drawText(QRect(right - hw, y1, hw + 1, fh), Qt.AlignmentFlag.AlignVCenter, hint)
            right -= hw + 10
        painter.setFont(self.bold)
        painter.setPen(text_colour)
        name = entry.node_name if entry.node_id != SYSTEM_NODE else ("Run" if not entry.depth else "Subflow run")
        if entry.depth:
            name = "↳ " + name
        painter.drawText(
            QRect(x, y1, max(0, right - x), fh),
            Qt.AlignmentFlag.AlignVCenter,
            self.bfm.elidedText(name, Qt.TextElideMode.ElideRight, max(0, right - x)),
        )
        # second line: the first lines of the content
        y2 = y1 + fh + 2
        x2 = r.left() + 4 + self.ARROW_W + 2
        painter.setFont(self.font)
        summary = summary_for(entry)
        painter.setPen(text_colour if entry.type not in (EventType.STEP_START, EventType.RUN_STATUS) else dim)
        if kind in _ERROR_LINES and not selected:
            painter.setPen(colour)
        if entry.type == "code_log":  # program output reads as such
            painter.setFont(self.mono)
        w = max(0, r.right() - 6 - x2)
        painter.drawText(
            QRect(x2, y2, w, fh),
            Qt.AlignmentFlag.AlignVCenter,
            self.fm.elidedText(summary, Qt.TextElideMode.ElideRight, w),
        )
        painter.restore()

    def editorEvent(
        self, event: QEvent, model: Any, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> bool:
        if isinstance(event, QMouseEvent) and event.type() == QEvent.Type.MouseButtonRelease:
            entry: LogEntry | None = index.data(EntryRole)
            if (
                entry is not None
                and entry.type == EventType.STEP_START
                and entry.node_id != SYSTEM_NODE
                and not entry.depth
                and self.arrow_rect(option.rect).adjusted(-4, -3, 2, 3).contains(event.position().toPoint())
            ):
                self.toggle_requested(entry.node_id)
                return True
        return super().editorEvent(event, model, option, index)

    def toggle_requested(self, node_id: str) -> None:  # replaced by the console
        pass


def summary_for(entry: LogEntry) -> str:
    kind = entry.type
    if kind == EventType.STEP_START:
        text = "Step started" + (f" (visit {entry.visit})" if entry.visit > 1 else "")
        if entry.end is not None:  # its step_end, shown on this row
            text += " · " + end_line(entry.end, str(entry.end.get("content") or ""))
        return text
    if kind == EventType.RUN_STATUS:
        detail = (entry.extra or {}).get("detail") if entry.extra else None
        return f"Status → {entry.content}" + (f": {detail}" if detail else "")
    if kind in SUBAGENT_CALL_TYPES:
        return subagent_line(kind, entry.extra or {}, entry.content)
    if kind in _POLICY_LINES:
        return _POLICY_LINES[kind](entry.extra or {}, entry.content)
    if kind in FLOW_CALL_TYPES:
        return flow_call_line(kind, entry.extra or {}, entry.content)
    if kind == "http_request" and entry.extra:
        return f"{entry.extra.get('method', '')} {entry.extra.get('url', '')}".strip() or entry.summary()
    if kind == "http_response" and entry.extra and "status" in entry.extra:
        x = entry.extra
        return f"{x.get('status')} · {x.get('bytes', '?')} bytes · {x.get('durationMs', '?')} ms"
    if kind == "code_log":
        return code_log_fields(entry)[1].rstrip("\n") or "(empty line)"
    if kind in ("api_call_start", "api_call_end") and entry.extra:
        return _api_call_line(kind, entry.extra, entry.content)
    if kind == EventType.INPUT_RECEIVED:
        fields = entry.extra or {}
        if fields.get("handle"):
            note = fields.get("note")
            return (
                str(fields["handle"]).capitalize()
                + (" — with the output edited" if fields.get("edited") else "")
                + (f" — note: {note}" if note else "")
            )
    return entry.summary() or "(empty)"


_ERROR_LINES = frozenset(
    {
        EventType.LLM_ERROR.value,
        EventType.ERROR.value,
        EventType.SUBAGENT_CALL_ERROR.value,
        STDERR,
        "permission_denied",
        "script_blocked",
    }
)


def code_log_fields(entry: LogEntry) -> tuple[str, str]:
    """(stream, text) of a ``code_log`` entry: its typed fields ``{stream, text}``, else its content
    as the text of stdout."""
    extra = entry.extra or {}
    stream = str(extra.get("stream") or "stdout").lower()
    text = extra.get("text")
    return stream, str(entry.content if text is None else text)


def _api_call_line(kind: str, fields: dict[str, Any], content: str) -> str:
    """``→ queryLLM("…")`` / ``← queryLLM: …`` for a script's API call (``{method, args}``)."""
    method = fields.get("method") or "?"
    if kind == "api_call_start":
        args = fields.get("args")
        shown = ", ".join(_short(a) for a in args) if isinstance(args, list) else _short(args) if args else ""
        return f"→ {method}({shown})"
    result = fields.get("error") or fields.get("result") or fields.get("text") or content
    return f"← {method}: {' '.join(str(result or '').split())}" if result else f"← {method}"


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return (
        json.dumps(text[:60] + "…" if len(text) > 60 else text, ensure_ascii=False)
        if isinstance(value, str)
        else text[:60]
    )


def _ms(value: Any) -> str:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "?"
    return format_duration(value / 1000)


def _one_line(text: Any) -> str:
    return " ".join(str(text or "").split())


def _retry_line(f: dict[str, Any], content: str) -> str:
    # ``attempt`` is the attempt about to run; the one before it failed with ``error``
    attempt, most = f.get("attempt"), f.get("maxAttempts")
    error = _one_line(f.get("error") or content)
    return f"Attempt {attempt} of {most} in {_ms(f.get('delayMs'))}" + (
        f" — the last one failed: {error}" if error else ""
    )


def _skipped_line(f: dict[str, Any], content: str) -> str:
    error = _one_line(f.get("error") or content)
    return "Skipped after an error" + (f": {error}" if error else "") + " — going on with an empty output"


def end_line(f: dict[str, Any], content: str) -> str:
    """How a step ended, from its ``step_end`` fields: ``✓ done in 1.2 s``."""
    status = str(f.get("status") or content or "done")
    mark = {"done": "✓", "failed": "✗", "skipped": "↷"}.get(status, "·")
    return f"{mark} {status} in {_ms(f.get('durationMs'))}"


def _loop_line(f: dict[str, Any], content: str) -> str:
    it = f.get("iteration")
    if f.get("matched"):
        return f"Iteration {it}: 'until' matched → done"
    return f"Iteration {it}: 'until' not matched"


def _join_line(f: dict[str, Any], content: str) -> str:
    return f"Waiting: {f.get('delivered')} of {f.get('expected')} branches in"


_POLICY_LINES: dict[str, Callable[[dict[str, Any], str], str]] = {
    "step_retry": _retry_line,
    "step_skipped": _skipped_line,
    "step_end": end_line,
    "loop_check": _loop_line,
    "join_wait": _join_line,
}

_ARROWS = {
    "subagent_call_start": "→",
    "subagent_call_end": "←",
    "subagent_call_error": "✗",
    "flow_call_start": "→",
    "flow_call_end": "←",
    "flow_call_error": "✗",
}


def flow_call_line(kind: str, fields: dict[str, Any], message: str) -> str:
    """``→ flow Name: message`` for a ``flow_call_*`` event's fields (a flow called as an agent's tool)."""
    name = fields.get("flowName") or fields.get("flowId") or fields.get("name") or "?"
    return f"{_ARROWS.get(kind, '·')} flow {name}: {' '.join(message.split())}"


def subagent_line(kind: str, fields: dict[str, Any], message: str) -> str:
    """``→ Name: message`` (indented by depth) for a ``subagent_call_*`` event's fields."""
    depth = fields.get("depth")
    indent = "  " * max(0, (depth if isinstance(depth, int) else 1) - 1)
    return f"{indent}{_ARROWS.get(kind, '·')} {fields.get('subagentName') or '?'}: {' '.join(message.split())}"
