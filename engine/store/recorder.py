"""Recording a run: :class:`RunRecorder` listens to a :class:`engine.Run` and hands its events
to the store's writer thread (:mod:`engine.store.writer`) in batches; the run never waits on
the disk, and a crash loses at most the last batch.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from engine.run.events import EventType, RunEvent, RunStatus
from engine.store.errors import StoreError
from engine.store.queries import NOT_FULLY_RECORDED
from engine.store.runs import RunStore

__all__ = ["RunRecorder"]

log = logging.getLogger(__name__)

_STOP = object()
_BACKLOG = 1024  # events waiting that the writer is woken for while a run runs
_BACKLOG_LOOK = 0.003  # seconds between looks


class RunRecorder:
    """Records one run's events into a :class:`RunStore`.

    Create it before ``run.start()`` (or, with ``new=False``, after restoring a paused run
    and claiming it). The event listener only appends to a deque (thread-safe, no lock,
    no disk); the store's writer thread commits what has gathered every
    ``COMMIT_INTERVAL`` seconds, or at once on a pause or an end, in one transaction.
    ``settled()`` stores a paused run's snapshot; ``flush()`` and ``close()`` commit what
    is left on the calling thread (which would only wait otherwise), so the end of a run
    costs no round trip to the writer thread and back.
    """

    def __init__(
        self,
        store: RunStore,
        run: Any,
        *,
        workflow_path: str | None = None,
        new: bool = True,
        on_commit: Callable[[list[RunEvent], bool], None] | None = None,
        record_executions: bool = True,
    ) -> None:
        self.store = store
        self.run = run
        self.error: StoreError | None = None
        # Called with each batch of events once it is committed (True), or once it could not be
        # written (False), in order, on the thread that wrote it: whoever shows events (the
        # CLI's printer, the GUI's log) shows only what a kill can no longer take away.
        self.on_commit = on_commit
        self.lost = 0  # events that could not be written
        self.row_written = not new  # whether the run has a row in the store
        self._checkpoint_due = False
        self._watching = False  # whether _watch_backlog is scheduled
        # The run's events, as they come (appended on the event loop, taken by the drain).
        self._events: deque[RunEvent] = deque()
        # Everything else: (fields: dict | None, done: threading.Event | None) or _STOP. The drain
        # takes these before the events, so an item queued after an event (a status's fields, a
        # flush) never goes without it.
        self._items: deque[Any] = deque()
        # The recorded executions (node id, key, output, handle), as the steps end.
        self._recorded: deque[tuple[str, str, Any, Any]] = deque()
        self._create: dict[str, Any] | None = None
        self._create_row: tuple[tuple, tuple[str, str]] | None = None
        if new:
            initial = run.initial_input
            if initial is None:  # the start node's own input is the run's input
                start = run.workflow.start_node()
                initial = getattr(start.data, "initialInput", None) if start else None
            # The run row is written with the first batch, not here (the workflow JSON of a
            # big graph takes milliseconds to make); events are only written after it.
            self._create = {
                "workflow_path": workflow_path,
                "initial_input": initial,
                "status": "running",
                "started_at": run.started_at or time.time(),
                # as they are now: the row is written later, after steps may have set some
                "arguments": dict(getattr(run, "variables", None) or {}),
            }
            self._seq = 0
        else:
            self._seq = store.next_seq(run.run_id)
        # The drain state of this recorder (touched only under _drain_lock).
        self._pending: list[RunEvent] = []
        self._fields: dict[str, Any] = {}
        self._waiters: list[threading.Event] = []  # flush() callers, released once their items are written
        self._failures = 0
        self._closed = threading.Event()
        self._drain_lock = threading.Lock()  # held by whichever thread drains this recorder
        self._writer = store.writer
        self._wake = self._writer.wake
        self._writer.attach(self)
        # An event is only queued (the listener is the deque's own append: no Python call per
        # event); a status change is handled by a status listener; while the run is paused, a
        # listener that also keeps the stored state up to date (see _on_event_while_paused).
        add_status_listener = getattr(run, "add_status_listener", None)
        if add_status_listener is None:  # a run without status listeners: one listener does both
            self._listener: Callable[[RunEvent], None] = self._on_event
        else:
            self._listener = self._on_event_while_paused if run.status is RunStatus.PAUSED else self._events.append
            add_status_listener(self._on_status)
        run.add_listener(self._listener)
        self._executions: list[tuple[str, str, Any, Any]] = []
        if hasattr(run, "record_executions") and record_executions:
            run.record_executions(self._on_execution)

    def _on_execution(self, node_id: str, key: str, output: Any, handle: Any) -> None:
        self._recorded.append((node_id, key, output, handle))

    def _on_event(self, ev: RunEvent) -> None:
        # Called on the event loop: only queue work, never touch the disk here.
        if ev.type == EventType.RUN_STATUS:  # its fields queued first (see _publish_status in engine/run/emitter.py)
            self._on_status(ev)
            self._events.append(ev)
        elif self.run.status is RunStatus.PAUSED:
            self._on_event_while_paused(ev)
        else:
            self._events.append(ev)

    def _on_event_while_paused(self, ev: RunEvent) -> None:
        self._events.append(ev)
        if not self._checkpoint_due and ev.type != EventType.LLM_DELTA and ev.type != EventType.RUN_STATUS:
            self._schedule_checkpoint()  # a sibling branch moved on while the run is paused

    def _use_listener(self, listener: Callable[[RunEvent], None]) -> None:
        if self._listener is not listener and getattr(self.run, "add_status_listener", None) is not None:
            self.run.remove_listener(self._listener)
            self.run.add_listener(listener)
            self._listener = listener

    def _on_status(self, ev: RunEvent) -> None:
        """A status change (called on the event loop right after its ``run_status`` event)."""
        run = self.run
        if ev.content == RunStatus.RUNNING:
            fields: dict[str, Any] = {"status": "running", "waiting": 0, "current_node": None}
            self._use_listener(self._events.append)
            if not self._watching:
                self._watch_backlog()
        else:
            fields = {
                "status": ev.content,
                "current_node": run.current_node_id,
                "waiting": int(run.waiting_for_input),
                "error": run.error,
            }
            if RunStatus(ev.content).is_final:
                fields["ended_at"] = ev.timestamp
                fields["snapshot"] = None
                self._use_listener(self._events.append)
            elif ev.content == RunStatus.PAUSED:
                # The state goes in the same commit as the pause, even while a sibling branch
                # still runs (start() has not returned): a kill from now on leaves it resumable.
                fields["snapshot"] = self._checkpoint_json()
                self._use_listener(self._on_event_while_paused)
        self._items.append((fields, None))
        # Commit a pause or an end at once: the writer is woken when the event loop next turns,
        # unless the caller has committed it by then (``settled()`` right after ``start()``
        # returns, as the CLI and the window do). A start (the run's row) or a resume goes with
        # the writer's next tick, within COMMIT_INTERVAL: a run that ends sooner is written
        # once, by its caller, and the writer thread does not wake to compete with the run's
        # own thread for the interpreter.
        if ev.content != RunStatus.RUNNING:
            try:
                asyncio.get_running_loop().call_soon(self._wake_if_waiting)
            except RuntimeError:  # not on an event loop (a test driving the run by hand)
                self._wake.set()

    def _watch_backlog(self) -> None:
        """While the run runs, look every few milliseconds (on the event loop) whether a batch
        has gathered: the writer then commits it beside the run (SQLite writes with the
        interpreter lock released) instead of all at the end or at its next tick."""
        self._watching = False
        if self._closed.is_set() or self.run.status is not RunStatus.RUNNING:
            return
        if len(self._events) >= _BACKLOG:
            self._wake.set()
        try:
            asyncio.get_running_loop().call_later(_BACKLOG_LOOK, self._watch_backlog)
        except RuntimeError:  # not on an event loop: the writer's tick does
            return
        self._watching = True

    def _wake_if_waiting(self) -> None:
        if (self._items or self._events or self._recorded) and not self._closed.is_set():
            self._wake.set()

    def _checkpoint_json(self) -> str | None:
        try:
            snap = self.run.checkpoint()
            return None if snap is None else json.dumps(snap, ensure_ascii=False)
        except (TypeError, ValueError, AttributeError) as err:  # an output that is not JSON
            log.warning("run %s: snapshot not stored: %s", self.run.run_id, err)
            return None

    def _schedule_checkpoint(self) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._checkpoint_due = True
        loop.call_soon(self._store_checkpoint)  # between steps, when every branch is at a known place

    def _store_checkpoint(self) -> None:
        self._checkpoint_due = False
        if self.run.status is not RunStatus.PAUSED or self._closed.is_set():
            return
        snap = self._checkpoint_json()
        if snap is not None:
            self._items.append(({"snapshot": snap}, None))
            self._wake.set()

    def commit_soon(self) -> None:
        """Ask the writer to commit what has gathered now rather than at its next tick: a viewer
        holds streamed text behind an event not committed yet (any thread; the writer commits
        beside the run)."""
        if not self._closed.is_set():
            self._wake.set()

    def settled(self) -> None:
        """Call when start()/resume() returned: stores the snapshot of a paused run and commits."""
        run = self.run
        if run.status == RunStatus.PAUSED:
            try:
                snap = json.dumps(run.snapshot(include_workflow=False), ensure_ascii=False)
            except (TypeError, ValueError) as err:  # an output that is not JSON: still keep the run listed
                log.warning("run %s: snapshot not stored: %s", run.run_id, err)
                snap = None
            self._items.append(
                ({"snapshot": snap, "status": "paused", "waiting": 1, "current_node": run.current_node_id}, None)
            )
        self.flush()

    def flush(self, timeout: float = 10.0) -> None:
        if self._closed.is_set():
            return
        # Commit on the calling thread, which would only wait otherwise: no round trip to
        # the writer thread and back. The lock keeps the writer off this recorder meanwhile.
        if self._drain_lock.acquire(timeout=timeout):
            try:
                self._drain_safely()
            finally:
                self._drain_lock.release()
            if not self._pending and not self._fields:
                return
        done = threading.Event()
        self._items.append((None, done))
        self._wake.set()
        done.wait(timeout)

    def close(self, timeout: float = 10.0) -> None:
        self.run.remove_listener(self._listener)
        remove_status_listener = getattr(self.run, "remove_status_listener", None)
        if remove_status_listener is not None:
            remove_status_listener(self._on_status)
        if self._closed.is_set():
            return
        self._items.append(_STOP)
        if self._drain_lock.acquire(timeout=timeout):  # written here, as in flush()
            try:
                self._drain_safely()
            finally:
                self._drain_lock.release()
        if not self._closed.is_set() and self._writer.alive():  # still busy (a locked database): the writer retries
            self._wake.set()
            self._closed.wait(timeout)

    def _notify(self, events: list[RunEvent], committed: bool) -> None:
        try:
            self.on_commit(list(events), committed)  # type: ignore[misc]
        except Exception:  # a closed pipe or a bug in a viewer must not stop the recording
            log.debug("run %s: on_commit failed", self.run.run_id, exc_info=True)

    def _lost_note(self) -> str:
        return (
            f"{NOT_FULLY_RECORDED}: {self.lost} event{'s' if self.lost != 1 else ''} could not be written "
            f"({self.error})."
        )

    def _mark_not_fully_recorded(self, fields: dict[str, Any], new_run: tuple[tuple, tuple[str, str]] | None) -> None:
        """Best effort: the run's row says that events are missing, with the batch's own run
        fields (its end, say): a one-row update may still fit where the events did not."""
        update = {k: v for k, v in fields.items() if k != "snapshot"}
        if not update.get("error"):
            update["error"] = self._lost_note()
        try:
            if new_run is not None:  # the run's row was in the batch: without its events it may fit
                self.store.append_events(self.run.run_id, self._seq, [], update, new_run=new_run)
                self.row_written = True
            else:
                self.store.update_run(self.run.run_id, **update)
        except StoreError:
            pass

    def _drain_safely(self) -> bool:
        try:
            return self._drain()
        except Exception as exc:  # a bug in one recording must not stop the others', nor the run
            log.exception("run %s: recording stopped", self.run.run_id)
            self._give_up(StoreError(f"Recording this run failed: {exc!r}"))
            return True

    def _give_up(self, err: StoreError) -> None:
        self.error = self.error or err
        for w in self._waiters:
            w.set()
        self._waiters.clear()
        self._closed.set()

    def _drain(self) -> bool:
        """Commit what has gathered (under ``_drain_lock``); True once the recorder is closed."""
        items = self._items
        stop = False
        pending, fields, waiters = self._pending, self._fields, self._waiters
        while items:
            item = items.popleft()
            if item is _STOP:
                stop = True
            else:
                more, done = item
                if more:
                    fields.update(more)
                if done is not None:
                    waiters.append(done)
        recorded = self._recorded
        if recorded:
            take = recorded.popleft
            self._executions += [take() for _ in range(len(recorded))]
        events = self._events  # after the items: every event queued before them is here
        if events:
            popleft = events.popleft
            pending += [popleft() for _ in range(len(events))]
        try:
            new_run = None
            if self._create is not None:  # the run's row goes in the same transaction as its first events
                new_run = self._create_row or RunStore.run_row(self.run.run_id, self.run.workflow, **self._create)
                self._create_row = new_run  # kept for a retry when the database is busy
            executions = self._executions
            if pending or fields or new_run or executions:
                self.store._leave_checkpoints_to_writer()
                if self.lost and fields.get("status") and not fields.get("error"):
                    fields["error"] = self._lost_note()
                try:
                    self.store.append_events(
                        self.run.run_id, self._seq, pending, fields or None, new_run=new_run, executions=executions
                    )
                except UnicodeEncodeError:  # a lone surrogate from a server: written escaped, not lost
                    pending[:] = [_utf8_safe_event(e) for e in pending]
                    for k, v in fields.items():
                        if isinstance(v, str):
                            fields[k] = _utf8_safe(v)
                    self.store.append_events(
                        self.run.run_id, self._seq, pending, fields or None, new_run=new_run, executions=executions
                    )
                self._seq += len(pending)
                executions.clear()
                self.row_written = True
                if self.on_commit is not None and pending:
                    self._notify(pending, True)
                self._writer.unchecked += len(pending) + 1
                self._writer.wrote = True
                self._create = self._create_row = None
            pending.clear()
            fields.clear()
            self._failures = 0
        except StoreError as err:
            # A busy database (another process holding the write lock past the timeout)
            # is retried with the next batch: events wait in memory, none is dropped.
            # Anything else, or a lock that lasts, is reported and the batch given up.
            self._failures += 1
            if "locked" not in str(err) or self._failures >= 20 or stop:
                if self.error is None:
                    log.error("%s", err)
                self.error = err
                self.lost += len(pending)
                if self.on_commit is not None and pending:
                    self._notify(pending, False)
                self._mark_not_fully_recorded(fields, new_run)
                pending.clear()
                fields.clear()
                self._executions.clear()
                self._failures = 0
                self._create = self._create_row = None
        if stop or (not pending and not fields):
            for w in waiters:
                w.set()
            waiters.clear()
        if stop:
            self._closed.set()
        return stop


def _utf8_safe(text: str) -> str:
    """``text`` with each lone surrogate as its ``\\udXXX`` escape (UTF-8 cannot hold it)."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _utf8_safe_event(ev: RunEvent) -> RunEvent:
    x = ev.extra_json
    return RunEvent(
        _utf8_safe(ev.node_id),
        _utf8_safe(ev.type),
        _utf8_safe(ev.content),
        timestamp=ev.timestamp,
        extra_json=_utf8_safe(x) if x else x,
    )
