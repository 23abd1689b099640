"""Schedules: library flows that start on their own, at the times a cron expression names.

A library flow's top level may hold ``schedule``: a cron expression read in local time
(``"*/15 9-17 * * mon-fri"``), or an object ``{"cron": ..., "catchUp": bool}``; a top-level
``catchUp: true`` is read too. Disabled flows and flows whose file cannot be read never start.
Cron expressions are read by ``croniter`` (in the ``serve`` extra); without it
:class:`ScheduleError` names the extra.

:class:`ScheduleRunner` is what ``flowdesk serve`` and the desktop run while they are open:
``ScheduleRunner(library, start_run).run()`` as an asyncio task. ``start_run(schedule)`` (a
plain or async callable) starts one run of ``schedule.flow``; the runner does no running of
its own, so each host records and shows runs its own way.

Invariants
* A fire time is due once: the last one handled per flow is kept in a small state file in the
  data folder (``schedules.json``), updated under a file lock before the run starts, so two
  processes running schedules (the desktop and a server) do not both start it.
* Fire times that passed while no runner was running (the app was closed) are not replayed,
  unless the flow says ``catchUp: true``: then the latest one missed starts once, when the
  runner next starts (however many were missed).
* A flow seen for the first time starts at its next fire time, never for one before.
* ``now`` (a clock returning epoch seconds) is injectable, so tests need not wait a minute.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import logging
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from engine.errors import FlowdeskError
from engine.flows.cron import ScheduleError, check_cron, next_fire, previous_fire, schedule_of
from engine.paths import data_dir

__all__ = [
    "Schedule",
    "ScheduleError",
    "ScheduleRunner",
    "ScheduleState",
    "flow_schedules",
    "schedule_of",
    "next_fire",
    "previous_fire",
    "check_cron",
    "STATE_FILE",
]

log = logging.getLogger(__name__)

STATE_FILE = "schedules.json"
#: A fire time this close before the runner started counts as on time (not missed while closed).
GRACE_S = 5.0
#: The longest the runner sleeps between looks at the library (a flow added or edited meanwhile).
POLL_S = 30.0


@dataclass(frozen=True, slots=True)
class Schedule:
    """One scheduled library flow."""

    flow_id: str
    name: str
    path: Path
    cron: str
    catch_up: bool = False

    def next_fire(self, after: float) -> float:
        return next_fire(self.cron, after)

    def to_json(self, now: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {"flow": self.flow_id, "name": self.name, "cron": self.cron, "catchUp": self.catch_up}
        try:
            out["nextRun"] = datetime.fromtimestamp(next_fire(self.cron, now or time.time())).astimezone().isoformat()
        except ScheduleError as err:
            out["error"] = str(err)
        return out


def flow_schedules(library: Any) -> list[Schedule]:
    """The enabled, readable library flows that carry a schedule, in library order."""
    out = []
    for entry in library.flows():
        if entry.error or not entry.enabled:
            continue
        try:
            wf = library.load_path(entry.path)
        except FlowdeskError:
            continue
        found = schedule_of(wf)
        if found is not None:
            out.append(Schedule(entry.id, entry.name, entry.path, found[0], found[1]))
    return out


# ---------------------------------------------------------------------------------- the state file
class ScheduleState:
    """The last fire time handled per flow id, in ``schedules.json`` of the data folder."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else data_dir() / STATE_FILE

    def read(self) -> dict[str, float]:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        flows = raw.get("flows") if isinstance(raw, dict) else None
        out: dict[str, float] = {}
        for flow_id, item in (flows or {}).items():
            last = item.get("lastRun") if isinstance(item, dict) else None
            if isinstance(last, (int, float)):
                out[str(flow_id)] = float(last)
        return out

    def last_run(self, flow_id: str) -> float | None:
        return self.read().get(flow_id)

    def _write(self, state: dict[str, float]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(
            json.dumps({"flows": {k: {"lastRun": v} for k, v in sorted(state.items())}}, indent=2), encoding="utf-8"
        )
        os.replace(tmp, self.path)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The state file's lock (another process running schedules waits; none on Windows)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path.with_name(self.path.name + ".lock"), "a+b") as f:
            try:
                import fcntl  # (POSIX only)

                fcntl.flock(f.fileno(), fcntl.LOCK_EX)
            except (ImportError, OSError):
                pass
            yield

    def claim(self, flow_id: str, fire: float, since: float | None) -> bool:
        """Mark ``fire`` handled for ``flow_id`` unless it (or a later one) already is: True when
        this process claimed it. ``since``: what this process took as the last one handled
        when the file has none (a flow seen for the first time)."""
        with self._locked():
            state = self.read()
            last = state.get(flow_id, since)
            if last is not None and last >= fire:
                return False
            state[flow_id] = fire
            self._write(state)
            return True


# ---------------------------------------------------------------------------------- the runner
StartRun = Callable[[Schedule], Any]


class ScheduleRunner:
    """Starts the library's scheduled flows on time while it runs (see the module docstring).

    ``library``: a :class:`~engine.flows.library.FlowLibrary`; ``start_run(schedule)``: starts a
    run of the flow (may be async; an exception is logged, the runner goes on); ``now``: the
    clock (epoch seconds); ``state``: where the last fire times are kept.
    """

    def __init__(
        self,
        library: Any,
        start_run: StartRun,
        *,
        now: Callable[[], float] = time.time,
        state: ScheduleState | None = None,
        poll: float = POLL_S,
    ) -> None:
        self.library = library
        self.start_run = start_run
        self.now = now
        self.state = state or ScheduleState()
        self.poll = poll
        self.started_at: float | None = None
        self.errors: dict[str, str] = {}  # flow id -> why its schedule cannot be read
        self._wake = asyncio.Event()

    def schedules(self) -> list[Schedule]:
        return flow_schedules(self.library)

    def next_runs(self, now: float | None = None) -> dict[str, float]:
        """The next fire time of each scheduled flow, by flow id (flows with a bad schedule left out)."""
        at = self.now() if now is None else now
        out = {}
        for s in self.schedules():
            try:
                out[s.flow_id] = s.next_fire(at)
            except ScheduleError:
                continue
        return out

    def problems(self) -> dict[str, str]:
        """Why each scheduled flow left out of :meth:`next_runs` cannot start on its own, by flow id."""
        out = {}
        for s in self.schedules():
            problem = check_cron(s.cron)
            if problem is not None:
                out[s.flow_id] = problem
        return out

    def due(self, now: float | None = None) -> list[tuple[Schedule, float]]:
        """The schedules to start now, each with the fire time it is for (nothing is claimed)."""
        at = self.now() if now is None else now
        started = self.started_at if self.started_at is not None else at
        state = self.state.read()
        out = []
        said, self.errors = self.errors, {}
        for s in self.schedules():
            try:
                fire = previous_fire(s.cron, at)
            except ScheduleError as err:
                if s.flow_id not in said:  # said once (serve's log), not at every look
                    log.warning("the flow '%s' will not start on its own: %s", s.name, err)
                self.errors[s.flow_id] = str(err)
                continue
            last = state.get(s.flow_id, started - GRACE_S)
            if fire <= last:
                continue
            if fire < started - GRACE_S and not s.catch_up:
                continue  # missed while no runner ran, and not to be replayed (see tick)
            out.append((s, fire))
        return out

    async def tick(self, now: float | None = None) -> list[Schedule]:
        """Start every schedule due at ``now`` (default the clock); returns those started. Fire
        times missed while closed are marked handled without a run unless ``catchUp``."""
        at = self.now() if now is None else now
        if self.started_at is None:
            self.started_at = at
        started = self.started_at
        fired: list[Schedule] = []
        for s, fire in self.due(at):
            if not self.state.claim(s.flow_id, fire, started - GRACE_S):
                continue  # another process started it
            fired.append(s)
            try:
                result = self.start_run(s)
                if inspect.isawaitable(result):
                    await result
            except FlowdeskError as err:  # refused (a required variable without a default, ...): said plainly
                log.warning("the scheduled flow '%s' could not start: %s", s.name, err)
            except Exception:  # one flow's failure to start does not stop the others
                log.exception("the scheduled flow %s could not start", s.flow_id)
        self._skip_missed(at)
        return fired

    def _skip_missed(self, at: float) -> None:
        """Fire times missed while closed (not caught up) are marked handled, so they never run."""
        started = self.started_at or at
        state = self.state.read()
        for s in self.schedules():
            try:
                fire = previous_fire(s.cron, at)
            except ScheduleError:
                continue
            last = state.get(s.flow_id)
            if fire < started - GRACE_S and (last is None or last < fire):
                self.state.claim(s.flow_id, fire, last)

    def wake(self) -> None:
        """Look at the library again now (a flow was saved, enabled or disabled)."""
        self._wake.set()

    async def run(self) -> None:
        """Start due flows until cancelled: tick, sleep until the next fire time (at most
        ``poll`` seconds, so edits to the library are seen), again."""
        while True:
            try:
                await self.tick()
            except Exception:  # a library that cannot be read now: try again later
                log.exception("schedules: the library could not be read")
            at = self.now()
            upcoming = [t for t in self.next_runs(at).values() if t > at]
            delay = min([self.poll, *(t - at for t in upcoming)])
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), max(0.05, delay + 0.01))
