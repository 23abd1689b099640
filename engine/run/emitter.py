"""Where a run's events go: its log, its listeners, its status listeners and its streams.

:class:`EventSource` is the part of :class:`~engine.Run` that makes and publishes events: it
makes them (``_emit``, built inline: it runs on the hot path) and hands each to ``_sinks``, one tuple
made again whenever a listener or a stream comes or goes (so an event's dispatch is one loop,
and a listener added or removed while an event is dispatched takes effect from the next one).
A nested run's events carry its run path (``RunEvent.path``): ``_path_item`` is that sixth item
of the event tuple, or nothing for a top-level run. A ``run_status`` event (:func:`status_event`)
goes to the status listeners before the sinks (:meth:`EventSource._publish_status`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from engine.graph.templates import mask_url_passwords
from engine.graph.variables import json_safe
from engine.run.events import SYSTEM_NODE, EventType, RunEvent, RunStatus
from engine.run.events import _encode as _encode_extra

__all__ = ["EventSource", "EventCallback", "status_event"]

EventCallback = Callable[[RunEvent], None]
_tuple_new = tuple.__new__
_RUN_STATUS = EventType.RUN_STATUS.value


class EventSource:
    """The event side of a run: log, listeners, status listeners, streams, run path."""

    __slots__ = (
        "_events",
        "_listeners",
        "_status_listeners",
        "_streams",
        "_sinks",
        "_run_path",
        "_path_item",
        "_clock",
    )

    def __init__(self, keep_events: bool, on_event: EventCallback | None, clock: Callable[[], float]) -> None:
        self._clock = clock  # (the run's: what its events are stamped with)
        self._events: list[RunEvent] | None = [] if keep_events else None
        self._listeners: list[EventCallback] = [on_event] if on_event else []
        self._status_listeners: list[EventCallback] = []
        self._streams: list[asyncio.Queue] = []
        self._sinks: tuple[Callable[[RunEvent], Any], ...] = ()

    def _routes_changed(self) -> None:
        """The sinks or the run path changed (the run passes them on to its context)."""

    def add_listener(self, callback: EventCallback) -> None:
        self._listeners.append(callback)
        self._update_sinks()

    def remove_listener(self, callback: EventCallback) -> None:
        try:
            self._listeners.remove(callback)
        except ValueError:
            pass
        self._update_sinks()

    def _update_sinks(self) -> None:
        """Where each event goes, in order: the run's log, the listeners, the streams."""
        self._sinks = (
            (() if self._events is None else (self._events.append,))
            + tuple(self._listeners)
            + tuple(q.put_nowait for q in self._streams)
        )
        self._routes_changed()

    @property
    def events(self) -> list[RunEvent] | None:
        """The run's log (every event, in order), or None when made with ``keep_events=False``."""
        return self._events

    @events.setter
    def events(self, value: list[RunEvent] | None) -> None:
        self._events = value
        self._update_sinks()

    @property
    def run_path(self) -> str:
        """Where this run sits: "" for a top-level run; a nested run's events carry it (RunEvent.path)."""
        return self._run_path

    @run_path.setter
    def run_path(self, value: str) -> None:
        self._run_path = value
        self._path_item: tuple[str, ...] = (value,) if value else ()  # an event's sixth item, or none
        self._routes_changed()

    def add_status_listener(self, callback: EventCallback) -> None:
        """Call ``callback(event)`` with each ``run_status`` event, after every event listener
        has had it (a listener may be added or removed from there)."""
        self._status_listeners.append(callback)

    def remove_status_listener(self, callback: EventCallback) -> None:
        try:
            self._status_listeners.remove(callback)
        except ValueError:
            pass

    def _publish_status(self, ev: RunEvent) -> None:
        """Hand a ``run_status`` event out: the status listeners first (the run store queues the
        run's new status and, for a pause, its state), then the event's sinks. A commit of the
        store's writer thread therefore never holds a pause or an end without the state that goes
        with it, so a process killed as soon as "paused" is printed leaves a resumable run."""
        for cb in list(self._status_listeners):
            cb(ev)
        for sink in self._sinks:
            sink(ev)

    def _emit(
        self,
        node_id: str,
        type: str,
        content: str = "",
        extra: dict[str, Any] | None = None,
        ts: float | None = None,
        extra_json: str | None = None,
    ) -> RunEvent:
        """Make an event of this run (stamped with its clock, ``_clock``, unless ``ts`` is given)
        and hand it to the sinks."""
        # RunEvent's fields built inline (as RunEvent.__new__ would): this runs 3 times a step.
        ev = _tuple_new(
            RunEvent,
            (
                node_id,
                type if type.__class__ is str else str(type),
                content,
                ts or self._clock(),
                _encode_extra(extra) if extra else extra_json,
            )
            + self._path_item,
        )
        for sink in self._sinks:
            sink(ev)
        return ev

    def _relay(self, ev: RunEvent) -> None:
        """An event of a nested run (it carries its run path), logged in this run's log as it is."""
        for sink in self._sinks:
            sink(ev)

    async def iter_events(self) -> AsyncIterator[RunEvent]:
        """Events as they are emitted, until the run next settles (paused or ended)."""
        q: asyncio.Queue = asyncio.Queue()
        self._streams.append(q)
        self._update_sinks()
        try:
            while True:
                ev = await q.get()
                if ev is None:
                    return
                yield ev
        finally:
            self._streams.remove(q)
            self._update_sinks()

    def _end_streams(self) -> None:
        for q in self._streams:
            q.put_nowait(None)


def status_event(
    status: RunStatus, detail: str, final_vars: dict[str, Any] | None, ts: float, path_item: tuple[str, ...]
) -> RunEvent:
    """The ``run_status`` event of a run now ``status`` (``detail``: why, for an end;
    ``final_vars``: an ended run's variables, kept in its run record (seed 001's ``vars``), URL
    passwords masked as the run's stored arguments are (a ``--var URL=…`` password);
    ``path_item``: ``EventSource._path_item``)."""
    extra: dict[str, Any] | None = {"detail": detail} if detail else None
    if final_vars:
        extra = {**(extra or {}), "vars": mask_url_passwords(json_safe(final_vars))}
    # (built inline, as RunEvent.__new__ would: twice each time a run starts or resumes)
    return _tuple_new(
        RunEvent, (SYSTEM_NODE, _RUN_STATUS, str(status), ts, _encode_extra(extra) if extra else None) + path_item
    )
