"""EventDelivery: the run bridge's buffer of engine events, and when they may be shown.

Split from :mod:`editor.run.bridge`, which owns one and hands it what to do with a batch
(feed the run state, emit the signals). This object owns the buffer, the flush timer and
the store gate; the invariants it keeps are the bridge's (see its docstring):

* :meth:`on_event` only appends and arms the timer: a frame (``flush_interval_ms``) for
  ordinary events, the next turn of the loop for streamed text (``llm_delta``, already
  gathered in frames by the run).
* A timed flush delivers at most ``max_batch`` events; a larger backlog follows on the next
  turns of the loop, so one flush never freezes the window for long.
* While a recorder records the run (``gated``), an event is delivered only once the store
  has committed it (``committed``, counted on the writer thread by :meth:`committed_batch`),
  so what the window painted survives a kill of the app. Streamed text right after the
  committed events goes with them; a delta held behind an uncommitted event asks the store
  to commit now (``RunRecorder.commit_soon``). A failing store holds nothing back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QTimer

from engine import RunEvent, RunRecorder

__all__ = ["EventDelivery"]


class EventDelivery(QObject):
    """Buffers engine events and hands them, in order and in batches, to ``deliver``."""

    def __init__(
        self, deliver: Callable[[list[RunEvent]], None], parent: QObject | None = None, *, flush_interval_ms: int = 16
    ) -> None:
        super().__init__(parent)
        self._deliver = deliver
        self.flush_interval_ms = flush_interval_ms
        self.max_batch = 5000  # events per timed flush; the rest follows on the next turn of the loop
        self.buffer: list[RunEvent] = []
        self.armed = False
        # Delivery waits for the store: events committed (counted on the writer thread) and
        # delivered, since the recorder was made; gated while a recorder records this run.
        self.recorder: RunRecorder | None = None
        self.committed = 0
        self.delivered = 0
        self.gated = False
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(flush_interval_ms)
        self.timer.timeout.connect(self._flush_some)

    # ------------------------------------------------------------------ the store gate
    def reset(self) -> None:
        """A new run is followed: nothing buffered, nothing held back."""
        self.buffer.clear()
        self.gated = False

    def gate(self, recorder: RunRecorder) -> None:
        """From now on deliver only what ``recorder`` has committed (the counts were zeroed
        before it was made: it may commit at once)."""
        self.recorder = recorder
        self.gated = True

    def committed_batch(self, events: list[Any], recorded: bool) -> None:
        # On the store's writer thread (or the one closing it): only a count, read by flush().
        # Events that could not be written are released too (the error is reported).
        self.committed += len(events)

    def ungate(self) -> None:
        """The recorder is closed (or failed): whatever is buffered is shown."""
        self.gated = False

    def release(self) -> None:
        """The run is let go of: nothing is buffered, held back or counted any more."""
        self.recorder = None
        self.buffer.clear()
        self.gated = False
        self.committed = self.delivered = 0

    # ------------------------------------------------------------------ engine side
    def on_event(self, ev: RunEvent) -> None:
        self.buffer.append(ev)
        if not self.armed:
            self.armed = True
            # Streamed text comes already gathered in frames (the run's delta_interval): it is
            # shown on the next turn of the loop rather than a frame later again.
            self.timer.start(0 if ev.type == "llm_delta" else self.flush_interval_ms)

    # ------------------------------------------------------------------ flushing
    def _flush_some(self) -> None:
        # A huge backlog is delivered in slices, with the event loop turning in between, so
        # one flush never freezes the window for long.
        self.flush(self.max_batch)
        if self.buffer and not self.armed:
            self.armed = True
            # Waiting for the store's next commit, or a backlog sliced: the next turn of the loop.
            self.timer.start(self.flush_interval_ms if self.ready() == 0 else 0)

    def ready(self) -> int | None:
        """How many buffered events may be delivered (None: all): the committed ones, and the
        streamed text right after them (deltas delivered before their commit make the count
        of committed ones fall below the delivered ones for a while)."""
        recorder = self.recorder
        if not self.gated or (recorder is not None and recorder.error is not None):  # a failing store holds nothing
            return None
        buffer = self.buffer
        ready = min(len(buffer), max(0, self.committed - self.delivered))
        while ready < len(buffer) and buffer[ready].type == "llm_delta":
            ready += 1
        return ready

    def flush(self, limit: int | None = None) -> None:
        """Deliver the buffered events now (at most ``limit`` of them; all when None)."""
        self.timer.stop()
        self.armed = False
        if not self.buffer:
            return
        ready = self.ready()
        if ready is not None:
            limit = ready if limit is None else min(limit, ready)
            recorder = self.recorder
            if recorder is not None and ready < len(self.buffer) and self.buffer[-1].type == "llm_delta":
                recorder.commit_soon()  # streamed text waits behind an event not committed yet
            if limit == 0:
                if not self.armed:  # the writer commits within its interval: look again then
                    self.armed = True
                    self.timer.start(self.flush_interval_ms)
                return
        if limit is not None and len(self.buffer) > limit:
            batch, self.buffer = self.buffer[:limit], self.buffer[limit:]
        else:
            batch, self.buffer = self.buffer, []
        self.delivered += len(batch)
        self._deliver(batch)
