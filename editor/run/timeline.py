"""The run timeline: a Gantt view of a run, one row per node execution (live and stored).

Rows come from :class:`engine.Timeline` (fed the same events as the log). Each bar starts
and ends where the execution did, coloured by how it ended (the canvas's run colours: done
green, failed red, from cache cyan, running blue); the time an approval waited for a
person is drawn hatched in amber, so waits and concurrency (overlapping bars) read at a
glance. A node that ran again (a loop, a retry) has a row per execution (``×2``...).
Clicking a bar emits ``node_clicked(node_id)``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable

from PySide6.QtCore import QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QBrush, QColor, QFont, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QScrollArea, QVBoxLayout, QWidget

from engine import RunEvent, Timeline, Workflow, format_duration

__all__ = ["TimelineView", "TimelineCanvas", "axis_ticks"]

ROW_H = 22
LABEL_W = 170
AXIS_H = 22
COLORS = {
    "running": "#58a6ff",
    "done": "#3fb950",
    "failed": "#f85149",
    "waiting": "#ffb454",
    "cached": "#39c5cf",
    "cancelled": "#8b949e",
    "skipped": "#8b949e",
}
BG = QColor("#0f1115")
GRID = QColor("#2a2f3a")
TEXT = QColor("#c9d1d9")
MUTED = QColor("#8b93a1")


# Tick steps in seconds past ten seconds (below them, 1-2-5 steps): as a clock counts.
_LONG_STEPS = (15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0, 14400.0, 28800.0, 86400.0)


def axis_ticks(total: float, most: int = 6) -> list[tuple[float, str]]:
    """The time axis of a run lasting ``total`` seconds: ``(seconds, label)`` at round steps
    (1, 2 or 5 times a power of ten; 15 s, 30 s, whole minutes and hours past ten seconds), at most ``most`` + 1
    of them from 0, all labelled in one unit (ms, s, min or h) with the decimals the step needs."""
    total = max(total, 1e-6)
    raw = total / most
    if raw > 10:
        step = next((s for s in _LONG_STEPS if s >= raw), math.ceil(raw / 86400) * 86400)
    else:
        power = 10.0 ** math.floor(math.log10(raw))
        step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw * (1 - 1e-9))
    if total < 1:  # milliseconds
        decimals = max(0, -math.floor(math.log10(step * 1000) + 1e-9))

        def label(t: float) -> str:
            return f"{t * 1000:.{decimals}f} ms"
    elif total < 180:  # seconds
        decimals = 0 if step >= 1 else 1

        def label(t: float) -> str:
            return f"{t:.{decimals}f} s"
    elif total < 3 * 3600:  # minutes

        def label(t: float) -> str:
            return f"{round(t / 60)} min"
    else:  # hours

        def label(t: float) -> str:
            return f"{t / 3600:g} h"

    count = int(total / step + 1e-9)
    return [(i * step, label(i * step)) for i in range(count + 1)]


class TimelineCanvas(QWidget):
    """Paints the bars; its height grows with the rows (the view scrolls it)."""

    node_clicked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("timelineCanvas")
        self.timeline = Timeline()
        self.titles: dict[str, str] = {}
        self.selected: str | None = None
        self.live = False
        self.setMouseTracking(True)

    def sizeHint(self) -> QSize:  # noqa: N802 - Qt override
        return QSize(600, AXIS_H + ROW_H * max(1, len(self.timeline.spans)) + 8)

    def _span_end(self) -> float:
        tl = self.timeline
        end = tl.t1 or 0.0
        if self.live and not tl.final:
            end = max(end, time.time())
        return end

    def bar_rect(self, index: int) -> QRectF:
        tl = self.timeline
        span = tl.spans[index]
        t0 = tl.t0 or span.start
        total = max(self._span_end() - t0, 1e-3)
        width = max(self.width() - LABEL_W - 16, 40)
        x0 = LABEL_W + (span.start - t0) / total * width
        end = span.end if span.end is not None else self._span_end()
        x1 = LABEL_W + (end - t0) / total * width
        y = AXIS_H + index * ROW_H + 4
        return QRectF(x0, y, max(x1 - x0, 3.0), ROW_H - 8)

    def paintEvent(self, event: QPaintEvent) -> None:  # noqa: N802 - Qt override
        p = QPainter(self)
        p.fillRect(self.rect(), BG)
        tl = self.timeline
        small = QFont(self.font())
        small.setPointSizeF(max(7.0, small.pointSizeF() - 1))
        p.setFont(small)
        if not tl.spans:
            p.setPen(MUTED)
            p.drawText(
                self.rect().adjusted(10, 0, 0, 0),
                Qt.AlignmentFlag.AlignVCenter,
                "The run's timeline appears here: one bar per node execution.",
            )
            return
        t0 = tl.t0 or 0.0
        total = max(self._span_end() - t0, 1e-3)
        width = max(self.width() - LABEL_W - 16, 40)
        # the axis: a grid line and a label at each round step (as many as the width has room for)
        p.setPen(QPen(GRID, 1))
        room = max(2, min(8, int(width // 60)))
        for at, text in axis_ticks(total, room):
            x = LABEL_W + width * at / total
            p.drawLine(int(x), AXIS_H - 4, int(x), self.height())
            p.setPen(MUTED)
            p.drawText(QRectF(x - 40, 2, 80, AXIS_H - 6), Qt.AlignmentFlag.AlignCenter, text)
            p.setPen(QPen(GRID, 1))
        p.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        for i, span in enumerate(tl.spans):
            y = AXIS_H + i * ROW_H
            if span.node_id == self.selected:
                p.fillRect(QRectF(0, y, self.width(), ROW_H), QColor(88, 166, 255, 40))
            title = self.titles.get(span.node_id, span.node_id)
            label = title + (f"  ×{span.visit}" if span.visit > 1 else "")
            p.setPen(TEXT)
            p.drawText(
                QRectF(8, y, LABEL_W - 14, ROW_H),
                Qt.AlignmentFlag.AlignVCenter,
                p.fontMetrics().elidedText(label, Qt.TextElideMode.ElideRight, LABEL_W - 14),
            )
            r = self.bar_rect(i)
            color = QColor(COLORS.get(span.state, "#58a6ff"))
            p.setPen(Qt.PenStyle.NoPen)
            p.setBrush(QBrush(color))
            p.drawRoundedRect(r, 3, 3)
            if span.wait_start is not None:  # the time it waited for a person, hatched
                w_end = span.wait_end if span.wait_end is not None else (span.end or self._span_end())
                wx0 = LABEL_W + (span.wait_start - t0) / total * width
                wx1 = LABEL_W + (w_end - t0) / total * width
                wr = QRectF(wx0, r.top(), max(wx1 - wx0, 3.0), r.height())
                p.setBrush(QBrush(QColor("#ffb454")))
                p.drawRoundedRect(wr, 3, 3)
                p.setBrush(QBrush(QColor("#7a4a00"), Qt.BrushStyle.BDiagPattern))
                p.drawRoundedRect(wr, 3, 3)
            text = "from cache" if span.state == "cached" else format_duration(span.duration, "running…")
            if span.wait_start is not None and span.wait_end is not None:
                text += f" (waited {format_duration(span.wait_end - span.wait_start)})"
            advance = p.fontMetrics().horizontalAdvance(text)
            if r.right() + 6 + advance <= self.width() - 4:  # after the bar
                p.setPen(TEXT)
                p.drawText(QRectF(r.right() + 6, y, advance + 4, ROW_H), Qt.AlignmentFlag.AlignVCenter, text)
            elif r.width() >= advance + 12:  # inside a long bar, on a dark plate
                plate = QRectF(r.right() - advance - 10, r.top() + 1, advance + 8, r.height() - 2)
                p.setPen(Qt.PenStyle.NoPen)
                p.setBrush(QBrush(QColor(15, 17, 21, 200)))
                p.drawRoundedRect(plate, 2, 2)
                p.setPen(TEXT)
                p.drawText(plate, Qt.AlignmentFlag.AlignCenter, text)
            else:  # before the bar
                p.setPen(TEXT)
                p.drawText(
                    QRectF(max(LABEL_W + 2, r.left() - 6 - advance), y, advance + 4, ROW_H),
                    Qt.AlignmentFlag.AlignVCenter,
                    text,
                )
        p.end()

    def span_at(self, x: float, y: float) -> int | None:
        index = int((y - AXIS_H) // ROW_H)
        if 0 <= index < len(self.timeline.spans) and y >= AXIS_H:
            return index
        return None

    def mousePressEvent(self, event: QMouseEvent) -> None:  # noqa: N802 - Qt override
        index = self.span_at(event.position().x(), event.position().y())
        if index is not None:
            node_id = self.timeline.spans[index].node_id
            self.selected = node_id
            self.update()
            self.node_clicked.emit(node_id)


class TimelineView(QWidget):
    """The timeline tab: a scrolling :class:`TimelineCanvas`, repainted while a run is live."""

    node_clicked = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("timelineView")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.canvas = TimelineCanvas()
        self.canvas.node_clicked.connect(self.node_clicked)
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setWidget(self.canvas)
        lay.addWidget(self.scroll)
        self._tick = QTimer(self)
        self._tick.setInterval(250)
        self._tick.timeout.connect(self._live_tick)

    @property
    def timeline(self) -> Timeline:
        return self.canvas.timeline

    def reset(self, workflow: Workflow | None, *, live: bool = False) -> None:
        self.canvas.timeline = Timeline(workflow)
        self.canvas.titles = {n.id: n.title for n in workflow.nodes} if workflow is not None else {}
        self.canvas.selected = None
        self.canvas.live = live
        self._tick.stop()
        self._resize()

    def add_events(self, events: Iterable[RunEvent]) -> None:
        self.canvas.timeline.add_events(events)
        if self.canvas.live and not self.canvas.timeline.final:
            if not self._tick.isActive():
                self._tick.start()
        else:
            self._tick.stop()
        self._resize()

    def select(self, node_id: str | None) -> None:
        self.canvas.selected = node_id
        self.canvas.update()

    def _live_tick(self) -> None:
        if self.canvas.timeline.final or not self.isVisible():
            if self.canvas.timeline.final:
                self._tick.stop()
            return
        self.canvas.update()

    def _resize(self) -> None:
        self.canvas.setMinimumHeight(self.canvas.sizeHint().height())
        self.canvas.update()
