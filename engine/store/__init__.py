"""The run store: every run and every event, durable in SQLite (WAL).

Concepts and invariants
* One database file (``runs.db``) in the user data folder (``FLOWDESK_DATA_DIR``
  overrides it). Schema versioned with ``PRAGMA user_version``; :data:`MIGRATIONS`
  bring any older file up to :data:`SCHEMA_VERSION` on open.
* A :class:`RunRecorder` attaches to a :class:`engine.Run` as an event listener. The
  listener only appends to an in-memory list; the store's one writer thread commits
  batches at least every 100 ms and at every pause or end, so the run never waits on the
  disk and a crash loses at most the last batch. Event sequence numbers are per run and
  gapless.
* A workflow's JSON is stored once (``workflows``, by a hash of the JSON), however many
  runs it had; it is deleted with its last run.
* A run row knows the process that owns it (pid and host). On start-up
  :meth:`RunStore.recover` marks ``running`` runs whose process is gone ``interrupted``;
  their events stay.
* Resuming a paused run first *claims* it with one conditional UPDATE
  (``status='paused'`` → ``running``), so two resumes at once cannot both win.
* Every failure to open or use the database raises :class:`StoreError` whose message
  names the file and what is wrong (corrupt, locked, not writable).
"""

from __future__ import annotations

import asyncio
import hashlib
from hashlib import blake2b
import json
import logging
import os
import shutil
import socket
import sqlite3
import threading
import time
from collections import deque
from operator import itemgetter
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping

from engine.errors import FlowdeskError
from engine.run.events import SUBAGENT_CALL_TYPES as _WIRE_TYPES
from engine.run.events import EventType, RunEvent, RunStatus, format_timestamp
from engine.graph.model import Workflow, dumps_workflow, parse_workflow

__all__ = ["RunStore", "RunRecorder", "RunInfo", "StoreError", "AlreadyImported", "data_dir", "SCHEMA_VERSION", "agentflow_record",
           "run_from_agentflow_record"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 8
# The recorded node executions' size limit (bytes of output kept); least recently used go first.
DEFAULT_CACHE_LIMIT = 64 * 1024 * 1024
# Events per INSERT statement, largest first (7 parameters each; SQLite allows 32,766). A
# batch is cut into these sizes so that only these few statements are ever prepared (once
# per connection): preparing a many-row INSERT costs more than running it.
_INSERT_CHUNKS = (500, 200, 100, 50, 20, 10, 5, 2, 1)
# Outputs this process knows are stored (their content ids): recording them again writes only
# the step's link. Only a shortcut: forgotten when it grows past this, or when outputs go.
_KNOWN_OUTPUTS_MAX = 200_000
# An event's type, and its columns in the events table after the run's number and its own
# (timestamp, node id, type, content, extra JSON)
_event_type = itemgetter(1)
# A recorded output's content id hashes its text, a zero byte and its handle: the usual handles' part
_HANDLE_TAILS = {None: b"\0", "output": b"\0output"}
_EVENT_COLUMNS = tuple(map(itemgetter, (3, 0, 1, 2, 4)))


@lru_cache(maxsize=32)
def _insert_sql(rows: int, table: str, free: int) -> str:
    """A ``rows``-row INSERT whose rows share their first column (``?1``) and number their second
    from ``?2`` (``?2 + k`` in row k); each row's other ``free`` columns are its own parameters."""
    rest = ",?" * free
    return f"INSERT INTO {table} VALUES " + ",".join(
        [f"(?1,?2{rest})"] + [f"(?1,?2+{k}{rest})" for k in range(1, rows)])


def _insert_rows(conn: sqlite3.Connection, table: str, key: Any, first: int, columns: list[Any]) -> None:
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
                params[2 + j::free] = column[pos:pos + size]
            conn.execute(_insert_sql(size, table, free), params)
            pos += size


INTERRUPTED = "interrupted"
COMMIT_INTERVAL = 0.1


class StoreError(FlowdeskError, RuntimeError):
    """The run store cannot be used; the message says which file and why."""


class AlreadyImported(StoreError):
    """The run record being imported is in the history already (as ``run_id``); nothing was added."""

    def __init__(self, message: str, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id


def configured_cache_limit() -> int:
    """The recorded executions' size limit in bytes: settings.json's ``runCache.limitMB``, else the default."""
    try:
        from engine.llm.config import load_settings

        mb = ((load_settings().model_extra or {}).get("runCache") or {}).get("limitMB")
        if isinstance(mb, (int, float)) and mb >= 0:
            return int(mb * 1024 * 1024)
    except Exception:  # unreadable settings: the default (the settings dialog says what is wrong)
        pass
    return DEFAULT_CACHE_LIMIT


def data_dir() -> Path:
    env = os.environ.get("FLOWDESK_DATA_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("flowdesk", appauthor=False))


# Each entry upgrades the schema from version i to i + 1.
MIGRATIONS: list[str] = [
    # 0 -> 1: the first schema
    """
    CREATE TABLE runs (
        id TEXT PRIMARY KEY,
        workflow_name TEXT NOT NULL DEFAULT '',
        workflow_path TEXT,
        workflow_json TEXT NOT NULL,
        initial_input TEXT,
        status TEXT NOT NULL,
        started_at REAL NOT NULL,
        ended_at REAL,
        current_node TEXT,
        waiting INTEGER NOT NULL DEFAULT 0,
        snapshot TEXT,
        error TEXT
    );
    CREATE TABLE events (
        run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        timestamp REAL NOT NULL,
        node_id TEXT NOT NULL,
        type TEXT NOT NULL,
        content TEXT NOT NULL,
        extra TEXT,
        PRIMARY KEY (run_id, seq)
    ) WITHOUT ROWID;
    CREATE INDEX runs_started ON runs(started_at DESC);
    """,
    # 1 -> 2: the owning process, for crash recovery and safe resume
    """
    ALTER TABLE runs ADD COLUMN owner_pid INTEGER;
    ALTER TABLE runs ADD COLUMN owner_host TEXT;
    CREATE INDEX runs_workflow_status ON runs(workflow_name, status);
    """,
    # 2 -> 3: a workflow's JSON stored once however many runs it had (runs of older versions
    # keep theirs in runs.workflow_json; new runs leave it '' and name a workflows row)
    """
    CREATE TABLE workflows (hash TEXT PRIMARY KEY, json TEXT NOT NULL);
    ALTER TABLE runs ADD COLUMN workflow_hash TEXT;
    CREATE INDEX runs_workflow_hash ON runs(workflow_hash);
    """,
    # 3 -> 4: recorded node executions (engine/run/rerun.py), stored once by key however many runs
    # made them; run_executions says which run's node had which (its last step).
    """
    CREATE TABLE executions (key TEXT PRIMARY KEY, output TEXT NOT NULL, handle TEXT, size INTEGER NOT NULL,
                             used_at REAL NOT NULL) WITHOUT ROWID;
    CREATE INDEX executions_used ON executions(used_at);
    CREATE TABLE run_executions (run_id TEXT NOT NULL, node_id TEXT NOT NULL, key TEXT NOT NULL,
                                 PRIMARY KEY (run_id, node_id)) WITHOUT ROWID;
    CREATE INDEX run_executions_key ON run_executions(key);
    """,
    # 4 -> 5: outputs stored once by their content (not by execution key: two runs of one
    # unchanged node may answer differently, and reusing a run must give that run's output);
    # each run's node points at its output. Least recently used is counted per run (its start,
    # or when a later run last reused it), so recording a step writes one row, not three.
    """
    CREATE TABLE outputs (cid TEXT PRIMARY KEY, output TEXT NOT NULL, handle TEXT, size INTEGER NOT NULL)
        WITHOUT ROWID;
    CREATE TABLE run_outputs (run_id TEXT NOT NULL, node_id TEXT NOT NULL, key TEXT NOT NULL, cid TEXT NOT NULL,
                              n INTEGER NOT NULL, PRIMARY KEY (run_id, node_id)) WITHOUT ROWID;
    ALTER TABLE runs ADD COLUMN reused_at REAL;
    ALTER TABLE workflows ADD COLUMN node_digests TEXT;
    INSERT INTO outputs SELECT key, output, handle, size FROM executions;
    INSERT INTO run_outputs SELECT re.run_id, re.node_id, re.key, re.key,
        ROW_NUMBER() OVER (PARTITION BY re.run_id ORDER BY e.used_at, re.node_id)
        FROM run_executions re JOIN executions e ON e.key = re.key;
    DROP TABLE run_executions;
    DROP TABLE executions
    """,
    # 5 -> 6: events keyed by a run's number (``runs.num``, given in order) instead of its id:
    # a run's events are appended at the end of the table rather than at a random place in it
    # (fewer, fuller pages: a third smaller, and cheaper to write).
    """
    ALTER TABLE runs ADD COLUMN num INTEGER;
    UPDATE runs SET num = rowid;
    CREATE UNIQUE INDEX runs_num ON runs(num);
    CREATE TABLE events_by_num (
        run_num INTEGER NOT NULL,
        seq INTEGER NOT NULL,
        timestamp REAL NOT NULL,
        node_id TEXT NOT NULL,
        type TEXT NOT NULL,
        content TEXT NOT NULL,
        extra TEXT,
        PRIMARY KEY (run_num, seq)
    ) WITHOUT ROWID;
    INSERT INTO events_by_num SELECT r.num, e.seq, e.timestamp, e.node_id, e.type, e.content, e.extra
        FROM events e JOIN runs r ON r.id = e.run_id;
    DROP TABLE events;
    ALTER TABLE events_by_num RENAME TO events
    """,
    # 6 -> 7: a run's recorded steps keyed by their order in the run (``n``) and appended,
    # rather than placed by node id; a node recorded several times (a loop) keeps each, the
    # last one counting. (Columns named: a table of either earlier shape converts.)
    """
    CREATE TABLE run_outputs_in_order (run_id TEXT NOT NULL, n INTEGER NOT NULL, node_id TEXT NOT NULL,
                                       key TEXT NOT NULL, cid TEXT NOT NULL, PRIMARY KEY (run_id, n)) WITHOUT ROWID;
    INSERT INTO run_outputs_in_order (run_id, n, node_id, key, cid)
        SELECT run_id, ROW_NUMBER() OVER (PARTITION BY run_id ORDER BY n, node_id), node_id, key, cid FROM run_outputs;
    DROP TABLE run_outputs;
    ALTER TABLE run_outputs_in_order RENAME TO run_outputs
    """,
    # 7 -> 8: the variables a run started with (the Start node's, overridden by its arguments),
    # as a JSON object: the history shows what a run was called with
    """
    ALTER TABLE runs ADD COLUMN arguments TEXT
    """,
]
assert len(MIGRATIONS) == SCHEMA_VERSION


@dataclass(slots=True)
class RunInfo:
    id: str
    workflow_name: str
    workflow_path: str | None
    initial_input: str | None
    status: str
    started_at: float
    ended_at: float | None
    current_node: str | None
    waiting: bool
    error: str | None
    event_count: int = 0
    #: The variables the run started with (the Start node's, overridden by its arguments); None: none
    arguments: dict[str, Any] | None = None

    @property
    def arguments_text(self) -> str:
        """The arguments as ``topic=…, audience=…`` (values other than text as JSON), or ""."""
        return ", ".join(f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
                         for k, v in (self.arguments or {}).items())

    @property
    def input_summary(self) -> str:
        """What the run was given: its initial input, else its :attr:`arguments_text`."""
        return self.initial_input or self.arguments_text

    @property
    def duration(self) -> float | None:
        return None if self.ended_at is None else self.ended_at - self.started_at

    @property
    def fully_recorded(self) -> bool:
        """False when some of the run's events could not be written (a full disk, ...)."""
        return not (self.error or "").startswith(NOT_FULLY_RECORDED)

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "workflowName": self.workflow_name, "workflowPath": self.workflow_path,
                "initialInput": self.initial_input, "status": self.status,
                "startedAt": format_timestamp(self.started_at),
                "endedAt": format_timestamp(self.ended_at) if self.ended_at else None,
                "durationSeconds": self.duration, "currentNodeId": self.current_node, "waitingForInput": self.waiting,
                "error": self.error, "eventCount": self.event_count, "fullyRecorded": self.fully_recorded,
                "arguments": self.arguments}


def _arguments_json(arguments: Mapping[str, Any] | None) -> str | None:
    """A run's starting variables as stored (JSON, non-ASCII escaped: a lone surrogate in a value
    cannot break the row); a value that is not JSON is kept as its text."""
    if not arguments:
        return None
    try:
        return json.dumps(dict(arguments), default=str)
    except (TypeError, ValueError):  # a key that is not a string, a circular value
        return None


def _retry_while_busy(action: Any, timeout: float, error: type[BaseException] = sqlite3.OperationalError) -> Any:
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


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


def _disk_nearly_full(path: Path) -> bool:
    try:
        return shutil.disk_usage(path.parent).free < _FULL_BELOW
    except OSError:
        return False


_FULL_BELOW = 1 << 20  # bytes free under which a disk I/O error is taken for a full disk
NOT_FULLY_RECORDED = "Not fully recorded"

# The events that report a model call's tokens and model: a node's responses, and the calls made
# to a subagent (stored under the calling node: the subagent is named in the call's content).
_ANSWERS = "e.type IN ('llm_response', 'subagent_call_end') AND e.extra IS NOT NULL"
_ANSWERING_NODE = ("CASE WHEN e.type = 'llm_response' THEN e.node_id "
                   "ELSE json_extract(e.content, '$.subagentNodeId') END AS nid")


class RunStore:
    """The SQLite run database. Safe to use from several threads and processes."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, timeout: float = 5.0) -> None:
        self.path = Path(path) if path is not None else data_dir() / "runs.db"
        self.timeout = timeout
        self._local = threading.local()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise StoreError(f"The run history folder {self.path.parent} cannot be created: {err.strerror or err}") from None
        _retry_while_busy(self._migrate, self.timeout, StoreError)
        self.cache_limit = configured_cache_limit()
        self._cache_bytes: int | None = None  # the recorded outputs' size, once summed
        self._known_outputs: set[str] = set()
        self.writer = _Writer(self)  # its thread starts with the first recorder

    # ------------------------------------------------------------------ connection
    def _connect(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            try:
                conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False)
                # Switching to WAL takes a lock without waiting on SQLite's busy handler: when
                # two processes open a new database at once, one is told "locked" at once.
                # Retry for as long as the busy timeout would have waited.
                _retry_while_busy(lambda: conn.execute("PRAGMA journal_mode=WAL"), self.timeout)
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
                raise StoreError(f"The run history {self.path} was written by a newer Flowdesk (schema {version}); "
                                 "update Flowdesk to open it.")
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
        tick instead (see ``_Writer``); the last connection to close checkpoints too."""
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

    # ------------------------------------------------------------------ runs
    @staticmethod
    def run_row(run_id: str, workflow: Workflow, *, workflow_path: str | None = None,
                initial_input: str | None = None, status: str = "running", started_at: float | None = None,
                workflow_json: str | None = None, owner: bool = True,
                arguments: Mapping[str, Any] | None = None) -> tuple[tuple, tuple[str, str]]:
        """A new run's row and its workflow's (hash, JSON), made here, outside any transaction."""
        text = workflow_json or dumps_workflow(workflow, indent=None)
        digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        return ((run_id, workflow.display_name(), workflow_path, digest, initial_input, status,
                 started_at or time.time(), os.getpid() if owner else None, socket.gethostname() if owner else None,
                 _arguments_json(arguments)),
                (digest, text))

    @staticmethod
    def _insert_run(conn: sqlite3.Connection, new_run: tuple[tuple, tuple[str, str]],
                    fields: dict[str, Any] | None = None) -> None:
        """Insert a :meth:`run_row`, with ``fields`` (:meth:`update_run`'s) set in the same row:
        a run that starts and ends within one batch is written once, not inserted then updated."""
        row, workflow = new_run
        # A workflow that ran before is not stored again: rerunning a big graph adds rows,
        # not megabytes.
        conn.execute("INSERT OR IGNORE INTO workflows (hash, json) VALUES (?, ?)", workflow)
        cols = ("id, workflow_name, workflow_path, workflow_hash, initial_input, status, started_at, owner_pid, owner_host, "
                "arguments")
        values: tuple = row
        if fields:
            if "status" in fields:  # the row's own status column, replaced
                values = (*row[:5], fields["status"], *row[6:])
            extra = [k for k in fields if k != "status"]
            cols += "".join(f", {k}" for k in extra)
            values = (*values, *(fields[k] for k in extra))
        # Numbered in order (inside the write lock): the run's events are keyed by it.
        conn.execute(f"INSERT INTO runs (workflow_json, {cols}, num) VALUES ('', {','.join('?' * len(values))}, "
                     "(SELECT coalesce(max(num), 0) + 1 FROM runs))", values)

    def create_run(self, run_id: str, workflow: Workflow, **fields: Any) -> None:
        """Add a run (its fields as :meth:`run_row` takes them)."""
        new_run = self.run_row(run_id, workflow, **fields)
        with self._transaction() as conn:
            self._insert_run(conn, new_run)

    def update_run(self, run_id: str, **fields: Any) -> None:
        allowed = {"status", "ended_at", "current_node", "waiting", "snapshot", "error", "owner_pid", "owner_host"}
        bad = set(fields) - allowed
        if bad:
            raise ValueError(f"unknown run fields: {sorted(bad)}")
        cols = ", ".join(f"{k} = ?" for k in fields)
        self._exec(f"UPDATE runs SET {cols} WHERE id = ?", (*fields.values(), run_id))

    def claim_for_resume(self, run_id: str) -> None:
        """Mark a paused run as resumed by this process; refuse if it is not paused (any more)."""
        cur = self._exec("UPDATE runs SET status = 'running', waiting = 0, owner_pid = ?, owner_host = ? "
                         "WHERE id = ? AND status = 'paused'", (os.getpid(), socket.gethostname(), run_id))
        if cur.rowcount != 1:
            info = self.get_run(run_id)
            if info is None:
                raise StoreError(f"There is no run '{run_id}' in the run history.")
            if info.status == "running":
                raise StoreError(f"Run {run_id} is already running or being resumed (by process "
                                 f"{self._owner(run_id)}); it cannot be resumed twice at once.")
            raise StoreError(f"Run {run_id} is {info.status}, not paused; only a paused run can be resumed.")

    def _owner(self, run_id: str) -> str:
        row = self._exec("SELECT owner_pid, owner_host FROM runs WHERE id = ?", (run_id,)).fetchone()
        return f"{row[0]} on {row[1]}" if row else "?"

    def recover(self) -> list[str]:
        """Mark runs left ``running`` by a process that no longer exists as ``interrupted``."""
        host = socket.gethostname()
        rows = self._exec("SELECT id, owner_pid, owner_host FROM runs WHERE status = 'running'").fetchall()
        gone = [rid for rid, pid, h in rows
                if pid is None or (h == host and pid != os.getpid() and not _pid_alive(pid))]
        for rid in gone:
            self._exec("UPDATE runs SET status = ?, waiting = 0, ended_at = COALESCE(ended_at, ("
                       "SELECT MAX(timestamp) FROM events WHERE run_num = runs.num)), error = COALESCE(error, ?) "
                       "WHERE id = ? AND status = 'running'",
                       (INTERRUPTED, "The process running it stopped before the run ended.", rid))
        return gone + self._recover_unresumable(host)

    def _recover_unresumable(self, host: str) -> list[str]:
        """Mark ``paused`` runs that have no stored state and whose process is gone ``interrupted``:
        nothing can resume them (a run recorded before its pause stored a snapshot at once)."""
        rows = self._exec("SELECT id, owner_pid, owner_host FROM runs WHERE status = 'paused' AND snapshot IS NULL "
                          "AND owner_pid IS NOT NULL").fetchall()
        gone = [rid for rid, pid, h in rows if h == host and pid != os.getpid() and not _pid_alive(pid)]
        for rid in gone:
            self._exec("UPDATE runs SET status = ?, waiting = 0, error = COALESCE(error, ?) "
                       "WHERE id = ? AND status = 'paused' AND snapshot IS NULL",
                       (INTERRUPTED, "The process that paused it stopped before its state was saved; it cannot "
                                     "be resumed.", rid))
        return gone

    _INFO_COLS = ("id, workflow_name, workflow_path, initial_input, status, started_at, ended_at, current_node, "
                  "waiting, error, arguments")

    def _info(self, row: tuple) -> RunInfo:
        arguments = None
        if row[10]:
            try:
                arguments = json.loads(row[10])
            except ValueError:
                pass
        return RunInfo(*row[:8], bool(row[8]), row[9], row[11] if len(row) > 11 else 0,
                       arguments if isinstance(arguments, dict) else None)

    def get_run(self, run_id: str) -> RunInfo | None:
        row = self._exec(f"SELECT {self._INFO_COLS}, (SELECT count(*) FROM events e WHERE e.run_num = runs.num) "
                         "FROM runs WHERE id = ?", (run_id,)).fetchone()
        return self._info(row) if row else None

    def find_run(self, prefix: str) -> RunInfo | None:
        """A run by its id or a unique prefix of it (as shown in lists)."""
        exact = self.get_run(prefix)
        if exact or len(prefix) < 4:
            return exact
        ids = self.matching_run_ids(prefix, limit=2)
        return self.get_run(ids[0]) if len(ids) == 1 else None  # none, or ambiguous (see matching_run_ids)

    def matching_run_ids(self, prefix: str, limit: int = 10) -> list[str]:
        """The ids of the runs starting with ``prefix`` (at most ``limit``), in id order."""
        rows = self._exec("SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT ?",
                          (prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%", limit)).fetchall()
        return [r[0] for r in rows]

    def _where(self, workflow: str | None, status: str | None) -> tuple[str, list[Any]]:
        clauses, params = [], []
        if workflow:
            clauses.append("workflow_name = ?")
            params.append(workflow)
        if status:
            clauses.append("status = ?")
            params.append(status)
        return (" WHERE " + " AND ".join(clauses)) if clauses else "", params

    def list_runs(self, *, workflow: str | None = None, status: str | None = None, limit: int = 50,
                  offset: int = 0) -> list[RunInfo]:
        where, params = self._where(workflow, status)
        rows = self._exec(f"SELECT {self._INFO_COLS} FROM runs{where} ORDER BY started_at DESC, id LIMIT ? OFFSET ?",
                          (*params, limit, offset)).fetchall()
        return [self._info(r) for r in rows]

    def count_runs(self, *, workflow: str | None = None, status: str | None = None) -> int:
        where, params = self._where(workflow, status)
        return self._exec(f"SELECT count(*) FROM runs{where}", params).fetchone()[0]

    def event_counts(self, run_ids: Iterable[str]) -> dict[str, int]:
        """How many events each of these runs has (one query; for a page of a runs list)."""
        ids = list(dict.fromkeys(run_ids))
        counts = dict.fromkeys(ids, 0)
        for i in range(0, len(ids), 500):  # stay far below SQLite's host-parameter limit
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            for rid, n in self._exec(f"SELECT r.id, count(*) FROM runs r JOIN events e ON e.run_num = r.num "
                                     f"WHERE r.id IN ({marks}) GROUP BY r.id", chunk).fetchall():
                counts[rid] = n
        return counts

    def workflow_names(self) -> list[str]:
        return [r[0] for r in self._exec("SELECT DISTINCT workflow_name FROM runs ORDER BY workflow_name").fetchall()]

    def workflow_json(self, run_id: str) -> str | None:
        row = self._exec("SELECT coalesce(w.json, r.workflow_json) FROM runs r "
                         "LEFT JOIN workflows w ON w.hash = r.workflow_hash WHERE r.id = ?", (run_id,)).fetchone()
        return row[0] if row else None

    def workflow_of(self, run_id: str) -> Workflow:
        text = self.workflow_json(run_id)
        if text is None:
            raise StoreError(f"There is no run '{run_id}' in the run history.")
        return parse_workflow(json.loads(text))

    def snapshot_of(self, run_id: str) -> dict[str, Any] | None:
        row = self._exec("SELECT snapshot FROM runs WHERE id = ?", (run_id,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def delete_run(self, run_id: str) -> None:
        with self._transaction() as conn:
            row = conn.execute("SELECT workflow_hash FROM runs WHERE id = ?", (run_id,)).fetchone()
            conn.execute("DELETE FROM events WHERE run_num = (SELECT num FROM runs WHERE id = ?)", (run_id,))
            cids = [r[0] for r in conn.execute("SELECT cid FROM run_outputs WHERE run_id = ?", (run_id,))]
            conn.execute("DELETE FROM run_outputs WHERE run_id = ?", (run_id,))
            self._drop_orphans(conn, cids)
            conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
            if row and row[0]:  # the workflow goes with its last run
                conn.execute("DELETE FROM workflows WHERE hash = ? AND NOT EXISTS "
                             "(SELECT 1 FROM runs WHERE workflow_hash = ?)", (row[0], row[0]))

    # ------------------------------------------------------------------ events
    def append_events(self, run_id: str, first_seq: int, events: list[RunEvent], run_fields: dict[str, Any] | None = None,
                      *, new_run: tuple[tuple, tuple[str, str]] | None = None,
                      executions: list[tuple[str, str, Any, Any]] | None = None) -> None:
        """Write a batch of events (and optionally run fields) in one transaction, after the
        run's row when ``new_run`` (a :meth:`run_row`) is given."""
        with self._transaction() as conn:
            if new_run is not None:
                self._insert_run(conn, new_run, run_fields)
                run_fields = None
            if events:
                if _WIRE_TYPES.isdisjoint(map(_event_type, events)) and max(map(len, events)) == 5:
                    # the usual batch: each column taken as it is (no Python call, no tuple per event)
                    columns = [list(map(get, events)) for get in _EVENT_COLUMNS]
                else:  # some kept in their wire form (see RunEvent.stored)
                    columns = list(zip(*[(e[3], e[0], e[1], *e.stored()) for e in events]))
                _insert_rows(conn, "events", self._num(conn, run_id), first_seq, columns)
            if run_fields:
                cols = ", ".join(f"{k} = ?" for k in run_fields)
                conn.execute(f"UPDATE runs SET {cols} WHERE id = ?", (*run_fields.values(), run_id))
            stored = self._put_executions(conn, run_id, executions, new=new_run is not None) if executions else None
        if stored:  # committed: a later step with the same output writes only its link
            known = self._known_outputs
            if len(known) > _KNOWN_OUTPUTS_MAX:
                known.clear()
            known.update(stored)

    @staticmethod
    def _num(conn: sqlite3.Connection, run_id: str) -> int:
        """The number of run ``run_id`` (its events' key; one indexed lookup per batch)."""
        row = conn.execute("SELECT num FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None or row[0] is None:
            raise StoreError(f"There is no run '{run_id}' in the run history to add events to.")
        return row[0]

    # ------------------------------------------------------------------ recorded executions

    def _put_executions(self, conn: sqlite3.Connection, run_id: str,
                        executions: list[tuple[str, str, Any, Any]], *, new: bool = False) -> list[str]:
        """Record steps' outputs: one ``run_outputs`` row per step, numbered after the run's last;
        an output's text once (by content)."""
        known = self._known_outputs
        base = 1 if new else conn.execute("SELECT coalesce(max(n), 0) + 1 FROM run_outputs WHERE run_id = ?",
                                          (run_id,)).fetchone()[0]  # (a run made in this batch has none yet)
        rows: list[tuple[str, str, Any, int]] = []
        node_ids: list[str] = []  # each recorded step's node, key and output (columns: see _insert_rows)
        keys: list[str] = []
        cids: list[str] = []
        added = 0
        for node_id, key, output, handle in executions:
            # A text output is kept as it is ("s" + text), anything else as JSON ("j" + JSON).
            if output.__class__ is str:
                text = "s" + output
            else:
                try:
                    text = "j" + json.dumps(output, ensure_ascii=False)
                except (TypeError, ValueError):  # an output that is not JSON cannot be reused
                    continue
            try:
                data = text.encode()
            except UnicodeEncodeError:  # a lone surrogate: kept as its JSON escape
                text = "j" + json.dumps(output)
                data = text.encode()
            h = handle if handle is None or handle.__class__ is str else json.dumps(list(handle))
            tail = _HANDLE_TAILS.get(h) or b"\0" + (h or "").encode("utf-8", "backslashreplace")
            cid = blake2b(data + tail, digest_size=16).hexdigest()
            if cid not in known:
                rows.append((cid, text, h, len(text)))
                added += len(text)
            node_ids.append(node_id)
            keys.append(key)
            cids.append(cid)
        if rows:
            conn.executemany("INSERT OR IGNORE INTO outputs (cid, output, handle, size) VALUES (?,?,?,?)", rows)
        _insert_rows(conn, "run_outputs", run_id, base, [node_ids, keys, cids])
        self._evict(conn, added)
        return [r[0] for r in rows]  # known once the caller's transaction commits (see append_events)

    def _drop_orphans(self, conn: sqlite3.Connection, cids: Iterable[str]) -> None:
        """Forget outputs among ``cids`` that no run points at any more."""
        doomed = [(c,) for c in set(cids)]
        if not doomed:
            return
        conn.executemany("DELETE FROM outputs WHERE cid = ? AND NOT EXISTS "
                         "(SELECT 1 FROM run_outputs WHERE cid = outputs.cid)", doomed)
        self._known_outputs.difference_update(c for (c,) in doomed)
        self._cache_bytes = None

    def _evict(self, conn: sqlite3.Connection, added: int | None = None) -> None:
        # The cache's size is summed once, then counted up by what is added (an upper bound:
        # an output stored already adds nothing), and summed again only once it may be over.
        known = self._cache_bytes
        if added is not None and known is not None and known + added <= self.cache_limit:
            self._cache_bytes = known + added
            return
        total = conn.execute("SELECT coalesce(sum(size), 0) FROM outputs").fetchone()[0]
        self._cache_bytes = total
        if total <= self.cache_limit:
            return
        # Least recently used first: runs by their start or last reuse, a run's steps in order.
        # An output goes once no remaining step points at it.
        sizes = dict(conn.execute("SELECT cid, size FROM outputs"))
        refs: dict[str, int] = {}
        for (cid,) in conn.execute("SELECT cid FROM run_outputs"):
            refs[cid] = refs.get(cid, 0) + 1
        doomed_outputs = [cid for cid in sizes if cid not in refs]
        for cid in doomed_outputs:
            total -= sizes[cid]
        doomed_links = []
        if total > self.cache_limit:
            for run_id, n, cid in conn.execute(
                    "SELECT ro.run_id, ro.n, ro.cid FROM run_outputs ro LEFT JOIN runs r ON r.id = ro.run_id "
                    "ORDER BY coalesce(r.reused_at, r.started_at, 0), ro.run_id, ro.n"):
                doomed_links.append((run_id, n))
                refs[cid] -= 1
                if refs[cid] == 0 and cid in sizes:
                    doomed_outputs.append(cid)
                    total -= sizes[cid]
                    if total <= self.cache_limit:
                        break
        conn.executemany("DELETE FROM run_outputs WHERE run_id = ? AND n = ?", doomed_links)
        conn.executemany("DELETE FROM outputs WHERE cid = ?", [(c,) for c in doomed_outputs])
        self._known_outputs.difference_update(doomed_outputs)
        self._cache_bytes = total

    def usage_by_node(self, run_ids: Iterable[str]) -> dict[str, dict[str, tuple[int, int]]]:
        """Tokens each run's nodes reported: ``{run id: {node id: (prompt, completion)}}`` (see
        :meth:`answers_by_node`)."""
        return {rid: {nid: (p, c) for nid, (p, c, _model) in nodes.items()}
                for rid, nodes in self.answers_by_node(run_ids).items()}

    def answers_by_node(self, run_ids: Iterable[str]) -> dict[str, dict[str, tuple[int, int, str | None]]]:
        """What each run's nodes were answered with: ``{run id: {node id: (prompt tokens,
        completion tokens, model)}}``, summed over the node's responses and the calls made to it
        as a subagent; ``model`` is the one that answered (costs are priced by it,
        ``engine.run.costs.price_of``), None when the responses did not say. One query per 500 runs."""
        ids = list(dict.fromkeys(run_ids))
        out: dict[str, dict[str, tuple[int, int, str | None]]] = {rid: {} for rid in ids}
        for i in range(0, len(ids), 500):
            chunk = ids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._exec(f"SELECT r.id, {_ANSWERING_NODE}, "
                              "sum(coalesce(json_extract(e.extra, '$.usage.prompt_tokens'), 0)), "
                              "sum(coalesce(json_extract(e.extra, '$.usage.completion_tokens'), 0)), "
                              "max(json_extract(e.extra, '$.model')) "
                              "FROM runs r JOIN events e ON e.run_num = r.num "
                              f"WHERE r.id IN ({marks}) AND {_ANSWERS} GROUP BY r.id, nid", chunk).fetchall()
            for rid, nid, p, c, model in rows:
                out[rid][nid] = (int(p or 0), int(c or 0), model if isinstance(model, str) and model else None)
        return out

    def recorded_executions(self, run_id: str) -> dict[str, Any]:
        """The executions recorded in run ``run_id`` still in the cache: node id -> RecordedExecution
        (the node's last step)."""
        return {node_id: steps[-1] for node_id, steps in self.recorded_steps(run_id).items()}

    def recorded_steps(self, run_id: str) -> dict[str, tuple[Any, ...]]:
        """Every step recorded in run ``run_id`` still in the cache, by node: node id -> its
        RecordedExecutions in the order they ran (a loop's node and body ran once an iteration;
        a later run reuses whichever step has its key)."""
        from engine.run.rerun import STEP_DIGEST_MARK, RecordedExecution, stored_key

        rows = self._exec("SELECT ro.node_id, ro.key, o.output, o.handle FROM run_outputs ro "
                          "JOIN outputs o ON o.cid = ro.cid WHERE ro.run_id = ? ORDER BY ro.n", (run_id,)).fetchall()
        digests: dict[str, str] = {}
        if any(key.startswith(STEP_DIGEST_MARK) for _n, key, _o, _h in rows):
            try:
                digests = self._node_digests(run_id)
            except (StoreError, ValueError) as err:  # its workflow unreadable: nothing to reuse
                log.warning("run %s: its recorded outputs cannot be reused: %s", run_id, err)
                return {}
        out: dict[str, tuple[Any, ...]] = {}
        for node_id, key, output, handle in rows:
            if key.startswith(STEP_DIGEST_MARK):
                part = digests.get(node_id)
                if part is None:
                    continue
                key = stored_key(part, key)
            if handle and handle.startswith("["):
                handle = tuple(json.loads(handle))
            rec = RecordedExecution(key, output[1:] if output[:1] == "s" else json.loads(output[1:]), handle, run_id)
            earlier = out.get(node_id)
            out[node_id] = (rec,) if earlier is None else (*earlier, rec)
        if out:  # reused: kept longest
            self._exec("UPDATE runs SET reused_at = ? WHERE id = ?", (time.time(), run_id))
        return out

    def _node_digests(self, run_id: str) -> dict[str, str]:
        """The nodes' part of the execution keys (``engine.run.rerun.node_digest``) of the workflow
        run ``run_id`` had: made from that workflow the first time a run of it is reused, then
        kept beside it (a stored workflow never changes)."""
        from engine.run.rerun import node_digest

        row = self._exec("SELECT r.workflow_hash, w.node_digests FROM runs r LEFT JOIN workflows w "
                         "ON w.hash = r.workflow_hash WHERE r.id = ?", (run_id,)).fetchone()
        if row and row[1]:
            return json.loads(row[1])
        digests = {n.id: node_digest(n) for n in self.workflow_of(run_id).nodes}
        if row and row[0]:
            try:
                self._exec("UPDATE workflows SET node_digests = ? WHERE hash = ?", (json.dumps(digests), row[0]))
            except StoreError as err:  # made again next time
                log.debug("node digests not kept: %s", err)
        return digests

    def cache_stats(self) -> dict[str, int]:
        """The recorded executions: ``{"entries", "bytes", "limit"}``."""
        n, size = self._exec("SELECT count(*), coalesce(sum(size), 0) FROM outputs").fetchone()
        return {"entries": n, "bytes": size, "limit": self.cache_limit}

    def set_cache_limit(self, limit: int) -> None:
        """A new size limit (bytes); least recently used executions go at once if over it."""
        self.cache_limit = max(0, int(limit))
        with self._transaction() as conn:
            self._evict(conn)

    def clear_cache(self) -> int:
        """Forget every recorded execution (runs and their logs stay); returns how many went."""
        with self._transaction() as conn:
            n = conn.execute("SELECT count(*) FROM outputs").fetchone()[0]
            conn.execute("DELETE FROM outputs")
            conn.execute("DELETE FROM run_outputs")
            self._cache_bytes = 0
            self._known_outputs.clear()
        return n

    def last_run_of(self, *, workflow_path: str | None = None, workflow_name: str | None = None) -> str | None:
        """The newest run of a document (by its file path, else by the workflow's name)."""
        if workflow_path:
            row = self._exec("SELECT id FROM runs WHERE workflow_path = ? ORDER BY started_at DESC LIMIT 1",
                             (workflow_path,)).fetchone()
            if row:
                return row[0]
        if workflow_name:
            row = self._exec("SELECT id FROM runs WHERE workflow_name = ? ORDER BY started_at DESC LIMIT 1",
                             (workflow_name,)).fetchone()
            if row:
                return row[0]
        return None

    def next_seq(self, run_id: str) -> int:
        row = self._exec("SELECT MAX(seq) FROM events WHERE run_num = (SELECT num FROM runs WHERE id = ?)",
                         (run_id,)).fetchone()
        return 0 if row[0] is None else row[0] + 1

    def events(self, run_id: str, *, offset: int = 0, limit: int = -1) -> list[RunEvent]:
        rows = self._exec("SELECT timestamp, node_id, type, content, extra FROM events "
                          "WHERE run_num = (SELECT num FROM runs WHERE id = ?) "
                          "ORDER BY seq LIMIT ? OFFSET ?", (run_id, limit, offset)).fetchall()
        return [RunEvent.from_stored(n, t, c, ts, x) for ts, n, t, c, x in rows]

    def iter_events(self, run_id: str, batch: int = 2000) -> Iterator[RunEvent]:
        offset = 0
        while True:
            chunk = self.events(run_id, offset=offset, limit=batch)
            yield from chunk
            if len(chunk) < batch:
                return
            offset += batch

    # ------------------------------------------------------------------ import / export
    def export_jsonl(self, run_id: str) -> Iterator[str]:
        for e in self.iter_events(run_id):
            yield e.to_json()

    def import_agentflow(self, record: dict[str, Any]) -> str:
        """Store an AgentFlow-style run record; returns the run id (a fresh one if it exists already)."""
        workflow, info, events = run_from_agentflow_record(record)
        run_id = info["id"]
        same = self._same_run(run_id, info, len(events))
        if same is not None:
            raise AlreadyImported(f"This run record is in the run history already, as run {same[:12]}; it was not "
                                  "imported again.", same)
        if self.get_run(run_id) is not None:
            run_id = f"{run_id}-imported-{int(time.time())}"
        self.create_run(run_id, workflow, initial_input=info.get("initialInput"), status=info["status"],
                        started_at=info["startedAt"], owner=False)
        self.append_events(run_id, 0, events, {"ended_at": info.get("endedAt"), "current_node": info.get("currentNodeId"),
                                                "waiting": int(bool(info.get("waitingForInput"))),
                                                "error": info.get("error")})
        return run_id


    def _same_run(self, run_id: str, info: dict[str, Any], n_events: int) -> str | None:
        """A stored run that this record already is: the same id (or an import of it), the same
        start (to the millisecond a record keeps) and as many events."""
        for rid in [run_id, *self.matching_run_ids(f"{run_id}-imported-", limit=50)]:
            stored = self.get_run(rid)
            if (stored is not None and abs(stored.started_at - float(info["startedAt"])) < 0.0015
                    and stored.event_count == n_events):
                return rid
        return None


# ---------------------------------------------------------------------- AgentFlow records
def agentflow_record(info: RunInfo, workflow_json: str, events: Iterable[RunEvent],
                     outputs: dict[str, Any] | None = None) -> dict[str, Any]:
    """An AgentFlow-style ``run_<id>.json`` record of a stored run."""
    return {
        "runId": info.id,
        "workflowName": info.workflow_name,
        "status": info.status,
        "initialInput": info.initial_input,
        "currentNodeId": info.current_node,
        "waitingForInput": info.waiting,
        "startedAt": format_timestamp(info.started_at),
        "endedAt": format_timestamp(info.ended_at) if info.ended_at else None,
        "error": info.error,
        "workflow": json.loads(workflow_json),
        "logs": [e.to_wire() for e in events],
        "results": outputs or {},
    }


def run_from_agentflow_record(record: Any) -> tuple[Workflow, dict[str, Any], list[RunEvent]]:
    """Read an AgentFlow-style run record (``{workflow, logs, status, ...}``); ValueError if it is not one."""
    if not isinstance(record, dict) or not isinstance(record.get("logs"), list):
        raise ValueError("not a run record: it has no 'logs' list")
    wf_raw = record.get("workflow")
    if not isinstance(wf_raw, dict):
        wf_raw = {"nodes": record.get("nodes", []), "connections": record.get("connections", [])}
    workflow = parse_workflow(wf_raw)
    events = []
    for i, entry in enumerate(record["logs"]):
        if not isinstance(entry, dict):
            raise ValueError(f"logs[{i}] is not an object")
        events.append(RunEvent.from_wire(entry))
    from engine.run.events import parse_timestamp

    started = record.get("startedAt")
    ended = record.get("endedAt")
    status = str(record.get("status") or ("paused" if record.get("waitingForInput") else "completed"))
    info = {
        "id": str(record.get("runId") or record.get("id") or f"imported-{int(time.time() * 1000)}"),
        "status": status,
        "initialInput": record.get("initialInput"),
        "currentNodeId": record.get("currentNodeId"),
        "waitingForInput": bool(record.get("waitingForInput")),
        "startedAt": parse_timestamp(started) if isinstance(started, str) else (events[0].timestamp if events else time.time()),
        "endedAt": parse_timestamp(ended) if isinstance(ended, str) else (events[-1].timestamp if events else None),
        "error": record.get("error"),
    }
    return workflow, info, events


# ---------------------------------------------------------------------- recorder
_STOP = object()
_BACKLOG = 1024  # events waiting that the writer is woken for while a run runs
_BACKLOG_LOOK = 0.003  # seconds between looks
_WRITER_IDLE_EXIT = 30.0  # seconds a writer thread with no live recorder waits before it ends
_CHECKPOINT_EVENTS = 120_000


class _Writer:
    """The one writer thread of a :class:`RunStore`: commits the queued work of every live recorder.

    One thread (and so one SQLite connection, with its prepared INSERT statements) per
    store rather than per run: a short run does not pay for a new thread, a new
    connection and re-preparing its statements, and concurrent runs of one process do not
    compete for SQLite's write lock. The thread commits every ``COMMIT_INTERVAL``, or at
    once when a recorder asks (a pause, an end, a flush), and ends after
    ``_WRITER_IDLE_EXIT`` seconds without recorders (the next recorder starts a new one).
    """

    def __init__(self, store: "RunStore") -> None:
        self.store = store
        self.wake = threading.Event()
        self._lock = threading.Lock()
        self._recorders: list[RunRecorder] = []
        self._thread: threading.Thread | None = None
        self.unchecked = 0  # events written since the last checkpoint (writer thread only)
        self._wrote = False  # whether this round wrote anything

    def attach(self, recorder: "RunRecorder") -> None:
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
                if self.unchecked and ((not asked and not self._wrote) or self.unchecked >= _CHECKPOINT_EVENTS):
                    self._checkpoint()
                self._wrote = False
        finally:
            self.store.close()  # this thread's own connection


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

    def __init__(self, store: RunStore, run: Any, *, workflow_path: str | None = None, new: bool = True,
                 on_commit: Callable[[list[RunEvent], bool], None] | None = None,
                 record_executions: bool = True) -> None:
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
            self._create = {"workflow_path": workflow_path, "initial_input": initial, "status": "running",
                            "started_at": run.started_at or time.time(),
                            # as they are now: the row is written later, after steps may have set some
                            "arguments": dict(getattr(run, "variables", None) or {})}
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
        if ev.type == EventType.RUN_STATUS:
            self._events.append(ev)
            self._on_status(ev)
        elif self.run.status is RunStatus.PAUSED:
            self._on_event_while_paused(ev)
        else:
            self._events.append(ev)

    def _on_event_while_paused(self, ev: RunEvent) -> None:
        self._events.append(ev)
        if not self._checkpoint_due and ev.type != EventType.LLM_DELTA:
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
            fields = {"status": ev.content, "current_node": run.current_node_id,
                      "waiting": int(run.waiting_for_input), "error": run.error}
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

    def settled(self) -> None:
        """Call when start()/resume() returned: stores the snapshot of a paused run and commits."""
        run = self.run
        if run.status == RunStatus.PAUSED:
            try:
                snap = json.dumps(run.snapshot(include_workflow=False), ensure_ascii=False)
            except (TypeError, ValueError) as err:  # an output that is not JSON: still keep the run listed
                log.warning("run %s: snapshot not stored: %s", run.run_id, err)
                snap = None
            self._items.append(({"snapshot": snap, "status": "paused", "waiting": 1,
                                 "current_node": run.current_node_id}, None))
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
        return (f"{NOT_FULLY_RECORDED}: {self.lost} event{'s' if self.lost != 1 else ''} could not be written "
                f"({self.error}).")

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
            popleft = recorded.popleft
            self._executions += [popleft() for _ in range(len(recorded))]
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
                    self.store.append_events(self.run.run_id, self._seq, pending, fields or None, new_run=new_run,
                                             executions=executions)
                except UnicodeEncodeError:  # a lone surrogate from a server: written escaped, not lost
                    pending[:] = [_utf8_safe_event(e) for e in pending]
                    for k, v in fields.items():
                        if isinstance(v, str):
                            fields[k] = _utf8_safe(v)
                    self.store.append_events(self.run.run_id, self._seq, pending, fields or None, new_run=new_run,
                                             executions=executions)
                self._seq += len(pending)
                executions.clear()
                self.row_written = True
                if self.on_commit is not None and pending:
                    self._notify(pending, True)
                self._writer.unchecked += len(pending) + 1
                self._writer._wrote = True
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
    return RunEvent(_utf8_safe(ev.node_id), _utf8_safe(ev.type), _utf8_safe(ev.content), timestamp=ev.timestamp,
                    extra_json=_utf8_safe(x) if x else x)
