"""Writing batches fast: the multi-row INSERTs a batch of events or recorded steps goes in, and
the store's one writer thread, which commits the queued work of every live recorder.

This is the hot path of recording a run (``tests/bench/bench_engine.py``, "with store"; and
``tests/bench/bench_rerun.py``): the idioms below (rows given as columns, parameters laid in by
slice, a few prepared statements) are measured, each comment says what it saves.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from functools import lru_cache
from typing import Any, Protocol

from engine.store.connection import Database
from engine.store.errors import StoreError

__all__ = ["Writer", "insert_rows", "COMMIT_INTERVAL"]

log = logging.getLogger(__name__)

COMMIT_INTERVAL = 0.1
# Events per INSERT statement, largest first (7 parameters each; SQLite allows 32,766). A
# batch is cut into these sizes so that only these few statements are ever prepared (once
# per connection): preparing a many-row INSERT costs more than running it.
_INSERT_CHUNKS = (500, 200, 100, 50, 20, 10, 5, 2, 1)
_WRITER_IDLE_EXIT = 30.0  # seconds a writer thread with no live recorder waits before it ends
_CHECKPOINT_EVENTS = 120_000


@lru_cache(maxsize=32)
def _insert_sql(rows: int, table: str, free: int) -> str:
    """A ``rows``-row INSERT whose rows share their first column (``?1``) and number their second
    from ``?2`` (``?2 + k`` in row k); each row's other ``free`` columns are its own parameters."""
    rest = ",?" * free
    return f"INSERT INTO {table} VALUES " + ",".join(
        [f"(?1,?2{rest})"] + [f"(?1,?2+{k}{rest})" for k in range(1, rows)]
    )


def insert_rows(conn: sqlite3.Connection, table: str, key: Any, first: int, columns: list[Any]) -> None:
    """Insert rows into ``table`` as ``(key, first + i, columns[0][i], columns[1][i], ...)``.

    Multi-row INSERTs in the fixed chunk sizes: one SQLite step (and one release of the GIL) per
    chunk instead of per row, measured ~30% faster than executemany; only these few statements
    are ever prepared. The key and the numbers are bound once a chunk, not once a row (a bound
    parameter costs about as much as SQLite storing it). The rows are given as columns and laid
    into each chunk's parameters by slice, so a batch makes no tuple per row: 40,000 of them
    (a 10,000-step run's events) triggered enough collections to set off a full one."""
    free = len(columns)
    pos, end = 0, len(columns[0]) if columns else 0
    for size in _INSERT_CHUNKS:
        while end - pos >= size:
            params: list[Any] = [None] * (2 + free * size)
            params[0] = key
            params[1] = first + pos
            for j, column in enumerate(columns):
                params[2 + j :: free] = column[pos : pos + size]
            conn.execute(_insert_sql(size, table, free), params)
            pos += size


class Drained(Protocol):
    """What the writer asks of a recorder (:class:`engine.store.RunRecorder`): its lock, its
    drain (True once it is closed) and whether it is closed."""

    _drain_lock: threading.Lock
    _closed: threading.Event

    def _drain_safely(self) -> bool: ...


class Writer:
    """The one writer thread of a :class:`engine.store.RunStore`: commits the queued work of every live recorder.

    One thread (and so one SQLite connection, with its prepared INSERT statements) per
    store rather than per run: a short run does not pay for a new thread, a new
    connection and re-preparing its statements, and concurrent runs of one process do not
    compete for SQLite's write lock. The thread commits every ``COMMIT_INTERVAL``, or at
    once when a recorder asks (a pause, an end, a flush), and ends after
    ``_WRITER_IDLE_EXIT`` seconds without recorders (the next recorder starts a new one).
    """

    def __init__(self, store: Database) -> None:
        self.store = store
        self.wake = threading.Event()
        self._lock = threading.Lock()
        self._recorders: list[Drained] = []
        self._thread: threading.Thread | None = None
        self.unchecked = 0  # events written since the last checkpoint (writer thread only)
        self.wrote = False  # whether this round wrote anything

    def attach(self, recorder: Drained) -> None:
        with self._lock:
            self._recorders.append(recorder)
            if self._thread is None:
                self._thread = threading.Thread(target=self._loop, name="run-store-writer", daemon=True)
                self._thread.start()

    def alive(self) -> bool:
        thread = self._thread
        return thread is not None and thread.is_alive()

    def _checkpoint(self) -> None:
        try:
            self.store._connect().execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
        except (sqlite3.Error, StoreError) as err:  # a reader in the way: the next one will do
            log.debug("checkpoint skipped: %s", err)
        self.unchecked = 0

    def _loop(self) -> None:
        idle_since = time.monotonic()
        try:
            # This connection copies the WAL into the database itself, on quiet ticks (see
            # below), rather than inside the commit of a batch.
            try:
                self.store._connect().execute("PRAGMA wal_autocheckpoint=0")
            except (sqlite3.Error, StoreError):
                pass
            while True:
                # Woken by a recorder (a run's start, a pause, an end, a flush the caller could
                # not do itself), or every COMMIT_INTERVAL.
                asked = self.wake.wait(COMMIT_INTERVAL)
                self.wake.clear()
                with self._lock:
                    recorders = list(self._recorders)
                    if recorders:
                        idle_since = time.monotonic()
                    elif time.monotonic() - idle_since >= _WRITER_IDLE_EXIT:
                        self._thread = None
                        return
                for rec in recorders:
                    with rec._drain_lock:
                        finished = rec._drain_safely() or rec._closed.is_set()
                    if finished:
                        with self._lock:
                            self._recorders.remove(rec)
                # Checkpoint on a quiet tick (nobody asked for a commit, nothing new was written),
                # so no flush() or close() waits for it; or once the WAL has grown by about
                # 16 MB (120,000 events) during a long busy run.
                if self.unchecked and ((not asked and not self.wrote) or self.unchecked >= _CHECKPOINT_EVENTS):
                    self._checkpoint()
                self.wrote = False
        finally:
            self.store.close()  # this thread's own connection
