"""The runs table: one page of the run history as a QAbstractTableModel.

Concept: the store is the source of truth and is queried one page at a time (newest
first); the model holds only that page's :class:`engine.store.RunInfo` rows plus their
event counts, so the history can hold any number of runs. ``set_page()`` replaces the
rows with one model reset; selection is restored by the panel from run ids.

Invariants: row ``i`` is ``runs[i]``; :data:`RUN_ROLE` gives the RunInfo and
:data:`RUN_ID_ROLE` its id for every column; nothing here touches the database.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from typing import Any

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QColor, QFont

from engine import RunInfo, format_cost, format_duration

__all__ = [
    "RunHistoryModel",
    "RUN_ROLE",
    "RUN_ID_ROLE",
    "STATUS_ROLE",
    "SERVER_ROLE",
    "REMOTE_BADGE",
    "COLUMNS",
    "STATUS_LABELS",
    "STATUS_COLORS",
    "status_label",
    "format_duration",
    "format_started",
]

RUN_ROLE = Qt.ItemDataRole.UserRole + 1
RUN_ID_ROLE = Qt.ItemDataRole.UserRole + 2
STATUS_ROLE = Qt.ItemDataRole.UserRole + 3
#: HOST:PORT of the Temporal server a run is on ("" for a local run): the row's "Temporal" badge
SERVER_ROLE = Qt.ItemDataRole.UserRole + 4
REMOTE_BADGE = "Temporal"

COL_STATUS, COL_WORKFLOW, COL_STARTED, COL_DURATION, COL_INPUT, COL_EVENTS, COL_COST = range(7)
COLUMNS = ("Status", "Workflow", "Started", "Duration", "Input", "Events", "Tokens · cost")

STATUS_LABELS = {
    "paused": "Waiting for approval",
    "running": "Running",
    "completed": "Completed",
    "failed": "Failed",
    "cancelled": "Cancelled",
    "interrupted": "Interrupted",
    "pending": "Pending",
}
# Badge colours: readable with white text on light and dark palettes.
STATUS_COLORS = {
    "paused": QColor("#8957e5"),
    "running": QColor("#2f6fdb"),
    "completed": QColor("#2a8a3e"),
    "failed": QColor("#cf3b35"),
    "cancelled": QColor("#6e7681"),
    "interrupted": QColor("#b7791f"),
    "pending": QColor("#6e7681"),
}
MAX_INPUT_CHARS = 300
MAX_TOOLTIP_CHARS = 1200


def status_label(status: str) -> str:
    return STATUS_LABELS.get(status, status.capitalize() or "Unknown")


def format_started(ts: float, now: float | None = None) -> str:
    """Local time: "Today 14:03", "Yesterday 09:12", else "2026-11-20 14:03" (the tooltip has seconds)."""
    when = datetime.fromtimestamp(ts)
    today = datetime.fromtimestamp(now if now is not None else time.time()).date()
    days = (today - when.date()).days
    if days == 0:
        return f"Today {when:%H:%M}"
    if days == 1:
        return f"Yesterday {when:%H:%M}"
    return f"{when:%Y-%m-%d %H:%M}"


def _one_line(text: str | None, limit: int) -> str:
    if not text:
        return ""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


class RunHistoryModel(QAbstractTableModel):
    """One page of runs. Read-only; sorting is the store's (newest first)."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self._runs: list[RunInfo] = []
        self._counts: dict[str, int] = {}
        self._costs: dict[str, tuple[int, float | None]] = {}  # run id -> (tokens, cost)
        self._bold = QFont()
        self._bold.setBold(True)
        #: run id -> the variables it ended with (the store's final_variables), asked on hover
        self.final_vars: Any = None

    # ---------------------------------------------------------------- content
    def set_page(
        self,
        runs: list[RunInfo],
        event_counts: dict[str, int] | None = None,
        costs: dict[str, tuple[int, float | None]] | None = None,
    ) -> None:
        self.beginResetModel()
        self._runs = list(runs)
        self._counts = dict(event_counts or {})
        self._costs = dict(costs or {})
        for r in self._runs:
            if r.id in self._counts:
                r.event_count = self._counts[r.id]
        self.endResetModel()

    def _final_vars(self, run: RunInfo) -> str:
        """The run's final variables as ``a=…, b=…`` ("" when not known)."""
        if self.final_vars is None or run.status not in ("completed", "failed", "cancelled"):
            return ""
        try:
            found = self.final_vars(run.id) or {}
        except Exception:  # a store that cannot answer: the tooltip goes without
            return ""
        return ", ".join(
            f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}" for k, v in found.items()
        )

    @property
    def runs(self) -> list[RunInfo]:
        return list(self._runs)

    def run_at(self, row: int) -> RunInfo | None:
        return self._runs[row] if 0 <= row < len(self._runs) else None

    def row_of(self, run_id: str) -> int:
        for i, r in enumerate(self._runs):
            if r.id == run_id:
                return i
        return -1

    # ---------------------------------------------------------------- Qt model API
    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._runs)

    def columnCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(COLUMNS)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if (
            orientation == Qt.Orientation.Horizontal
            and role == Qt.ItemDataRole.DisplayRole
            and 0 <= section < len(COLUMNS)
        ):
            return COLUMNS[section]
        if orientation == Qt.Orientation.Horizontal and role == Qt.ItemDataRole.TextAlignmentRole:
            if section in (COL_DURATION, COL_EVENTS, COL_COST):
                return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            return int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        return None

    def flags(self, index: QModelIndex | QPersistentModelIndex) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable | Qt.ItemFlag.ItemNeverHasChildren

    def data(self, index: QModelIndex | QPersistentModelIndex, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._runs):
            return None
        run = self._runs[index.row()]
        col = index.column()
        if role == RUN_ROLE:
            return run
        if role == RUN_ID_ROLE:
            return run.id
        if role == STATUS_ROLE:
            return run.status
        if role == SERVER_ROLE:
            return getattr(run, "server", "") or ""
        if role == Qt.ItemDataRole.DisplayRole:
            return self._display(run, col)
        if role == Qt.ItemDataRole.ToolTipRole:
            return self._tooltip(run, col)
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (COL_DURATION, COL_EVENTS, COL_COST):
            return int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
        if role == Qt.ItemDataRole.FontRole and col == COL_STATUS and run.status == "paused":
            return self._bold
        if role == Qt.ItemDataRole.DecorationRole and col == COL_STATUS:
            return STATUS_COLORS.get(run.status, STATUS_COLORS["cancelled"])
        if role == Qt.ItemDataRole.AccessibleTextRole:
            text = self._display(run, col)
            if col == COL_WORKFLOW and getattr(run, "server", ""):
                text += f" ({REMOTE_BADGE} run on {run.server})"
            return text
        return None

    def _display(self, run: RunInfo, col: int) -> str:
        if col == COL_STATUS:
            return status_label(run.status)
        if col == COL_WORKFLOW:
            return run.workflow_name or "Untitled workflow"
        if col == COL_STARTED:
            return format_started(run.started_at)
        if col == COL_DURATION:
            if run.status == "paused":
                return "waiting"
            if run.status == "running" and run.ended_at is None:
                return "running"
            return format_duration(run.duration)
        if col == COL_INPUT:  # the initial input, else the arguments (topic=…, audience=…)
            return _one_line(run.input_summary, MAX_INPUT_CHARS)
        if col == COL_EVENTS:
            n = self._counts.get(run.id)
            return "" if n is None else f"{n:,}"
        if col == COL_COST:
            tokens, cost = self._costs.get(run.id, (0, None))
            if not tokens:
                return ""

            return f"{tokens:,}" + (f" · {format_cost(cost)}" if cost is not None else "")
        return ""

    def _tooltip(self, run: RunInfo, col: int) -> str:
        server = getattr(run, "server", "")
        if server and col in (COL_STATUS, COL_WORKFLOW):
            where = (
                f"Runs on the Temporal server at {server} (namespace {getattr(run, 'namespace', 'default')}); "
                "its workers run it. Open shows its log."
            )
            return (
                f"{run.workflow_name or 'Untitled workflow'}\n{where}"
                if col == COL_WORKFLOW
                else f"{status_label(run.status)}\n{where}"
            )
        if col == COL_STATUS:
            if run.status == "paused":
                where = f" at '{run.current_node}'" if run.current_node else ""
                return f"Paused{where}: waiting for an approval decision. Select it and choose Resume."
            text = status_label(run.status)
            if run.error:
                text += f": {run.error}"
            return text
        if col == COL_STARTED:
            return datetime.fromtimestamp(run.started_at).astimezone().isoformat(sep=" ", timespec="seconds")
        if col == COL_INPUT:
            text = run.initial_input or "(no initial input)"
            if run.arguments:
                text = f"{text}\nArguments: {run.arguments_text}"
            ended = self._final_vars(run)
            if ended:
                text = f"{text}\nVariables at the end: {ended}"
            return text if len(text) <= MAX_TOOLTIP_CHARS else text[:MAX_TOOLTIP_CHARS] + "…"
        if col == COL_WORKFLOW:
            return f"{run.workflow_name}\n{run.workflow_path}" if run.workflow_path else run.workflow_name
        return f"Run {run.id}"
