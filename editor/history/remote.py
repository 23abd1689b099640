"""Runs on a Temporal server in the history (the ``temporal`` extra; docs/design.md "Scale-out").

Concept: when a Temporal server is configured (Run ▸ Run On ▸ Temporal Server…), the history
lists that server's runs beside the local ones, each marked with a "Temporal" badge. The list
comes from Temporal's visibility API (:meth:`engine.RemoteRun.list_server_runs`) and a run's
log from its ``events`` query (:meth:`engine.RemoteRun.fetch`); opening one shows it through
the same ``run_opened`` signal, read-only view and :class:`engine.RunState` as a stored run.

:class:`RemoteRuns` does the talking, as tasks on the GUI's asyncio loop (qasync): every
result comes back as a Qt signal emitted on the GUI thread, and no task outlives the object
(``close()`` cancels them; the panel closes it with itself). Nothing blocks the GUI; a server
that cannot be reached is a line under the table, never an error dialog on every refresh.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Signal

from engine import RemoteRun, RunInfo

__all__ = ["RemoteRunInfo", "RemoteRuns", "remote_info"]

log = logging.getLogger(__name__)


@dataclass(slots=True)
class RemoteRunInfo(RunInfo):
    """A run of a Temporal server, as the history lists it (``server``: HOST:PORT)."""

    server: str = ""
    namespace: str = "default"


def remote_info(row: dict[str, Any], server: str, namespace: str = "default") -> RemoteRunInfo:
    """A history row from one of :meth:`engine.RemoteRun.list_server_runs`'s entries."""
    started = float(row.get("startedAt") or 0.0)
    duration = row.get("duration")
    status = str(row.get("status") or "running")
    return RemoteRunInfo(
        id=str(row["id"]),
        workflow_name=str(row.get("workflowName") or ""),
        workflow_path=None,
        initial_input=row.get("initialInput") or None,
        status=status,
        started_at=started,
        ended_at=started + float(duration) if duration is not None else None,
        current_node=row.get("pending"),
        waiting=status == "paused",
        error=None,
        server=server,
        namespace=namespace,
    )


class RemoteRuns(QObject):
    """The runs of one Temporal server, listed and opened without blocking the GUI."""

    #: the server's runs (``RemoteRunInfo``, newest first)
    listed = Signal(list)
    #: why the server's runs could not be listed
    unavailable = Signal(str)
    #: ``(run_id, workflow, events, info)``: a run's log, read (as ``HistoryPanel.run_opened``)
    opened = Signal(str, object, list, object)
    #: ``(run_id, message)``: a run could not be read
    open_failed = Signal(str, str)

    def __init__(
        self, address: str, namespace: str = "default", *, limit: int = 50, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.address = address
        self.namespace = namespace or "default"
        self.limit = limit
        self._tasks: set[asyncio.Task] = set()
        self._listing: asyncio.Task | None = None
        self.destroyed.connect(self._cancel_all)

    @property
    def busy(self) -> bool:
        return bool(self._tasks)

    def _spawn(self, coro: Any) -> asyncio.Task | None:
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            loop = None
        if loop is None or loop.is_closed():  # no GUI loop (a bare QApplication): nothing to talk with
            coro.close()
            return None
        task = loop.create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def refresh(self) -> None:
        """List the server's runs (``listed`` or ``unavailable`` follows)."""
        if self._listing is not None and not self._listing.done():
            return
        self._listing = self._spawn(self._list())

    def open(self, run_id: str) -> None:
        """Read a run's log (``opened`` or ``open_failed`` follows)."""
        self._spawn(self._open(run_id))

    def close(self) -> None:
        self._cancel_all()

    def _cancel_all(self, *_: Any) -> None:
        for task in list(self._tasks):
            task.cancel()
        self._tasks.clear()

    async def _list(self) -> None:
        try:
            rows = await RemoteRun.list_server_runs(self.address, namespace=self.namespace, limit=self.limit)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # TemporalUnavailable, an RPC error: said under the table
            log.info("remote runs of %s: %s", self.address, err)
            self._emit(
                self.unavailable,
                f"Runs on the Temporal server at {self.address} cannot be listed: "
                f"{getattr(err, 'message', None) or err}",
            )
            return
        self._emit(self.listed, [remote_info(r, self.address, self.namespace) for r in rows])

    async def _open(self, run_id: str) -> None:
        try:
            run = await RemoteRun.fetch(run_id, address=self.address, namespace=self.namespace)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self._emit(self.open_failed, run_id, f"{getattr(err, 'message', None) or err}")
            return
        info = remote_info(
            {
                "id": run_id,
                "status": str(run.status),
                "workflowName": run.workflow.name or "",
                "pending": run.pending_approval,
            },
            self.address,
            self.namespace,
        )
        events = list(run.events or ())
        if events:
            info.started_at = events[0].timestamp
            info.event_count = len(events)
            if run.status.is_final:
                info.ended_at = events[-1].timestamp
        info.error = run.error
        self._emit(self.opened, run_id, run.workflow, events, info)

    def _emit(self, signal: Any, *args: Any) -> None:
        # The tasks run on the GUI thread's loop; an object deleted meanwhile gets nothing.
        try:
            signal.emit(*args)
        except RuntimeError:  # the C++ object is gone (the panel closed)
            pass
