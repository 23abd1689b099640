"""Schedules while the desktop is open: library flows with a ``schedule`` start on time.

The controller runs the engine's :class:`engine.ScheduleRunner` as an asyncio task on the
window's loop (qasync) and starts each due flow headless, recorded in the run history (so it is
listed there and, when it pauses, in the Inbox), with the Run menu's provider. The library dock
shows each scheduled flow's next run (refreshed every half minute and after each start). Fire
times missed while the app was closed are not replayed unless the flow says ``catchUp: true``
(the runner's rule). Without croniter (the ``serve`` extra) nothing starts and the library dock
says why.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QMainWindow

from engine import FlowdeskError, Run, RunRecorder, RunStore, Schedule, ScheduleError, ScheduleRunner

from ..panels.library import LibraryPanel

__all__ = ["SchedulesController"]

log = logging.getLogger(__name__)

Status = Callable[[str, int], None]
NEXT_RUNS_MS = 30_000


class SchedulesController(QObject):
    started = Signal(str, str)  # flow id, run id: a scheduled run started

    def __init__(
        self,
        frame: QMainWindow,
        panel: LibraryPanel,
        store: RunStore | None,
        resolver_factory: Callable[[], Any],
        status: Status,
    ) -> None:
        super().__init__(frame)
        self.panel = panel
        self.store = store
        self._resolver_factory = resolver_factory
        self._status = status
        self.runner = ScheduleRunner(panel.library, self.start_flow)
        self.task: asyncio.Task | None = None
        self.runs: list[asyncio.Task] = []
        self.timer = QTimer(self)
        self.timer.setInterval(NEXT_RUNS_MS)
        self.timer.timeout.connect(self.show_next_runs)
        self.timer.start()
        QTimer.singleShot(0, self, self.start)

    def start(self) -> None:
        """Run the schedules (once the window's loop runs)."""
        self.show_next_runs()
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return
        if self.task is None and loop.is_running():
            self.task = asyncio.ensure_future(self.runner.run())

    def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            self.task = None
        self.timer.stop()

    def show_next_runs(self) -> None:
        try:
            nexts: dict[str, Any] = dict(self.runner.next_runs())
            nexts.update(self.runner.problems())  # a bad cron: why, under the flow
        except ScheduleError as err:  # no croniter
            nexts = {s.flow_id: str(err) for s in self._scheduled()}
        except (OSError, FlowdeskError):
            return
        self.panel.set_next_runs(nexts)

    def _scheduled(self) -> list[Schedule]:
        try:
            return self.runner.schedules()
        except (OSError, FlowdeskError):
            return []

    def start_flow(self, schedule: Schedule) -> None:
        """The runner's callback: one run of ``schedule``'s flow, headless and recorded."""
        try:
            workflow = self.panel.library.load_path(schedule.path)
            run = Run(
                workflow,
                self._resolver_factory(),
                path=str(schedule.path),
                check=True,
                meta={"schedule": schedule.cron},
            )
        except FlowdeskError as err:  # a required variable without a default, a file gone
            self._status(f"The scheduled flow {schedule.name} could not start: {err}", 8000)
            return
        recorder = None
        if self.store is not None:
            try:
                recorder = RunRecorder(self.store, run, workflow_path=str(schedule.path))
            except FlowdeskError as err:
                log.warning("scheduled run not recorded: %s", err)
        task = asyncio.ensure_future(self._drive(run, recorder))
        self.runs.append(task)
        task.add_done_callback(lambda t: self.runs.remove(t) if t in self.runs else None)
        self._status(f"Scheduled flow {schedule.name} started (run {run.run_id[:8]}).", 5000)
        self.started.emit(schedule.flow_id, run.run_id)
        QTimer.singleShot(0, self, self.show_next_runs)

    async def _drive(self, run: Run, recorder: Any) -> None:
        try:
            await run.start()
        finally:
            if recorder is not None:
                try:
                    await asyncio.to_thread(recorder.settled)
                    await asyncio.to_thread(recorder.close)
                except Exception as err:  # StoreError: the run went on; its record is short
                    log.warning("run %s: %s", run.run_id, err)
        if shiboken6.isValid(self):
            self._status(f"Scheduled run {run.run_id[:8]} {run.status}.", 5000)
