"""Where a run's events go: its log, its listeners, its status listeners and its streams.

:class:`EventSource` is the part of :class:`~engine.Run` that publishes events; the scheduler
makes them (``Run._emit``, built inline on the hot path) and hands each to ``_sinks``, one tuple
made again whenever a listener or a stream comes or goes (so an event's dispatch is one loop,
and a listener added or removed while an event is dispatched takes effect from the next one).
A nested run's events carry its run path (``RunEvent.path``): ``_path_item`` is that sixth item
of the event tuple, or nothing for a top-level run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

from engine.run.events import RunEvent

__all__ = ["EventSource", "EventCallback"]

EventCallback = Callable[[RunEvent], None]


class EventSource:
    """The event side of a run: log, listeners, status listeners, streams, run path."""

    __slots__ = ("_events", "_listeners", "_status_listeners", "_streams", "_sinks", "_run_path", "_path_item")

    def __init__(self, keep_events: bool, on_event: EventCallback | None) -> None:
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
