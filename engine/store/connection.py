"""The run database's connections: one SQLite connection a thread (WAL), write transactions,
the schema brought up to date on open, and every SQLite failure turned into a :class:`StoreError`
that names the file and what is wrong (corrupt, locked, not writable, a full disk).

:class:`Database` is the base of :class:`engine.store.RunStore`; the reading queries
(:mod:`engine.store.queries`), the recorded outputs (:mod:`engine.store.outputs`) and the runs'
writes (:mod:`engine.store.runs`) are built on it, one layer a module.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.paths import data_dir
from engine.store.errors import StoreError
from engine.store.schema import MIGRATIONS, SCHEMA_VERSION

__all__ = ["Database", "retry_while_busy"]


def retry_while_busy(action: Any, timeout: float, error: type[BaseException] = sqlite3.OperationalError) -> Any:
    """Run ``action``, retrying while SQLite says the database is locked or busy, up to ``timeout`` s."""
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        try:
            return action()
        except error as err:
            text = str(err)
            if ("locked" not in text and "busy" not in text) or time.monotonic() + delay > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


def _disk_nearly_full(path: Path) -> bool:
    try:
        return shutil.disk_usage(path.parent).free < _FULL_BELOW
    except OSError:
        return False


_FULL_BELOW = 1 << 20  # bytes free under which a disk I/O error is taken for a full disk


class Database:
    """One SQLite database file, usable from several threads (a connection each) and processes."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, timeout: float = 5.0) -> None:
        self.path = Path(path) if path is not None else data_dir() / "runs.db"
        self.timeout = timeout
        self._local = threading.local()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreError(
                f"The run history folder {self.path.parent} cannot be created: {err.strerror or err}"
            ) from None
        retry_while_busy(self._migrate, self.timeout, StoreError)

    # ------------------------------------------------------------------ connection
    def _connect(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
                # Switching to WAL takes a lock without waiting on SQLite's busy handler: when
                # two processes open a new database at once, one is told "locked" at once.
                # Retry for as long as the busy timeout would have waited.
                retry_while_busy(lambda: conn.execute("PRAGMA journal_mode=WAL"), self.timeout)
                conn.execute("PRAGMA synchronous=NORMAL")
                # No foreign-key checks: they cost ~20% of every event insert, and delete_run
                # removes a run's events itself.
            except sqlite3.Error as err:
                raise self._error(err) from None
            self._local.conn = conn
        return conn

    def _error(self, err: BaseException) -> StoreError:
        text = str(err)
        if "locked" in text or "busy" in text:
            why = "it is locked by another program (try again, or close the other Flowdesk)"
        elif "not a database" in text or "malformed" in text or "corrupt" in text:
            why = "it is damaged (not a readable SQLite database); move it away to start a fresh history"
        elif "readonly" in text or "unable to open" in text:
            why = "it cannot be opened for writing"
        elif ("disk" in text and "full" in text) or ("disk I/O error" in text and _disk_nearly_full(self.path)):
            # SQLite says "disk I/O error", not "full", when the disk fills while it grows the
            # WAL's shared memory or syncs: the free space tells which it was.
            why = "the disk is full"
        else:
            why = text
        return StoreError(f"The run history {self.path} cannot be used: {why}.")

    def _migrate(self) -> None:
        conn = self._connect()
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"The run history {self.path} was written by a newer Flowdesk (schema {version}); "
                    "update Flowdesk to open it."
                )
            while version < SCHEMA_VERSION:
                with self._transaction():
                    # user_version is re-read inside the write lock: another process may have migrated.
                    current = conn.execute("PRAGMA user_version").fetchone()[0]
                    if current == version:
                        for stmt in MIGRATIONS[version].split(";"):
                            if stmt.strip():
                                conn.execute(stmt)
                        conn.execute(f"PRAGMA user_version = {version + 1}")
                version = conn.execute("PRAGMA user_version").fetchone()[0]
            conn.execute("SELECT count(*) FROM runs").fetchone()
        except sqlite3.Error as err:
            raise self._error(err) from None

    def close(self) -> None:
        """Close this thread's connection (each thread has its own)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction (BEGIN IMMEDIATE ... COMMIT); rolled back and a StoreError on failure."""
        conn = self._connect()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as err:
            raise self._error(err) from None
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException as exc:  # anything, even an interrupt, leaves no transaction open
            try:
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            if isinstance(exc, sqlite3.Error):
                raise self._error(exc) from None
            raise

    def _leave_checkpoints_to_writer(self) -> None:
        """This thread's connection commits recorded batches without copying the WAL into the
        database inside the commit (SQLite's automatic checkpoint: a copy and an fsync every
        ~1,000 pages, on whichever commit crosses it). The writer thread checkpoints on a quiet
        tick instead (see ``engine.store.writer.Writer``); the last connection to close checkpoints too."""
        local = self._local
        if getattr(local, "manual_checkpoints", None) is getattr(local, "conn", None) is not None:
            return
        conn = self._connect()
        try:
            conn.execute("PRAGMA wal_autocheckpoint=0")
        except sqlite3.Error:
            return
        local.manual_checkpoints = conn

    def _exec(self, sql: str, params: Iterable[Any] = ()) -> sqlite3.Cursor:
        try:
            return self._connect().execute(sql, tuple(params))
        except sqlite3.Error as err:
            raise self._error(err) from None
