"""The run store: :class:`RunStore`, the runs' rows and their writes (a run's creation, its
fields, its events in batches, crash recovery, a claim to resume, deletion, imports), over the
reading queries (:mod:`engine.store.queries`) and the recorded outputs
(:mod:`engine.store.outputs`). The package's docstring states the invariants.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import sqlite3
import time
from collections.abc import Mapping
from operator import itemgetter
from typing import Any

from engine.graph.model import Workflow, dumps_workflow
from engine.run.events import SUBAGENT_CALL_TYPES as _WIRE_TYPES
from engine.run.events import RunEvent
from engine.store.agentflow import run_from_agentflow_record
from engine.store.errors import AlreadyImported, StoreError
from engine.store.outputs import KNOWN_OUTPUTS_MAX, RecordedOutputs
from engine.store.queries import mask_url_passwords
from engine.store.writer import Writer, insert_rows

__all__ = ["RunStore", "INTERRUPTED"]

INTERRUPTED = "interrupted"
# An event's type, and its columns in the events table after the run's number and its own
# (timestamp, node id, type, content, extra JSON)
_event_type = itemgetter(1)
_EVENT_COLUMNS = tuple(map(itemgetter, (3, 0, 1, 2, 4)))
# Events that may carry a file (``extra.attachment.data``, base64): the bytes go to the
# attachments table, the stored event keeps ``attachment`` without ``data``.
ATTACHING_TYPES = frozenset({"browser_screenshot"})


def _put_attachments(conn: sqlite3.Connection, run_id: str, events: list[RunEvent]) -> list[RunEvent]:
    out = []
    for ev in events:
        extra = ev.extra if ev.type in ATTACHING_TYPES else None
        attachment = extra.get("attachment") if isinstance(extra, dict) else None
        if isinstance(attachment, dict) and isinstance(attachment.get("data"), str):
            data = attachment.pop("data")
            try:
                blob = base64.b64decode(data, validate=True)
            except ValueError:
                blob = b""
            conn.execute(
                "INSERT OR REPLACE INTO attachments VALUES (?, ?, ?, ?)",
                (run_id, str(attachment.get("id") or ""), str(attachment.get("mime") or ""), blob),
            )
            ev = RunEvent(ev.node_id, ev.type, ev.content, timestamp=ev.timestamp, extra=extra, path=ev.path)
        out.append(ev)
    return out


def _arguments_json(arguments: Mapping[str, Any] | None) -> str | None:
    """A run's starting variables as stored (JSON, non-ASCII escaped: a lone surrogate in a value
    cannot break the row); a value that is not JSON is kept as its text."""
    if not arguments:
        return None
    try:  # a URL's password in an argument (`--var URL=https://me:pw@host`) is masked, as in the events
        return json.dumps(mask_url_passwords(dict(arguments)), default=str)
    except (TypeError, ValueError):  # a key that is not a string, a circular value
        return None


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


class RunStore(RecordedOutputs):
    """The SQLite run database. Safe to use from several threads and processes."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, timeout: float = 5.0) -> None:
        super().__init__(path, timeout=timeout)
        self.writer = Writer(self)  # its thread starts with the first recorder

    # ------------------------------------------------------------------ runs
    @staticmethod
    def run_row(
        run_id: str,
        workflow: Workflow,
        *,
        workflow_path: str | None = None,
        initial_input: str | None = None,
        status: str = "running",
        started_at: float | None = None,
        workflow_json: str | None = None,
        owner: bool = True,
        arguments: Mapping[str, Any] | None = None,
    ) -> tuple[tuple, tuple[str, str]]:
        """A new run's row and its workflow's (hash, JSON), made here, outside any transaction."""
        text = workflow_json or dumps_workflow(workflow, indent=None)
        digest = hashlib.blake2b(text.encode(), digest_size=16).hexdigest()
        return (
            (
                run_id,
                workflow.display_name(),
                workflow_path,
                digest,
                initial_input,
                status,
                started_at or time.time(),
                os.getpid() if owner else None,
                socket.gethostname() if owner else None,
                _arguments_json(arguments),
            ),
            (digest, text),
        )

    @staticmethod
    def _insert_run(
        conn: sqlite3.Connection, new_run: tuple[tuple, tuple[str, str]], fields: dict[str, Any] | None = None
    ) -> None:
        """Insert a :meth:`run_row`, with ``fields`` (:meth:`update_run`'s) set in the same row:
        a run that starts and ends within one batch is written once, not inserted then updated."""
        row, workflow = new_run
        # A workflow that ran before is not stored again: rerunning a big graph adds rows,
        # not megabytes.
        conn.execute("INSERT OR IGNORE INTO workflows (hash, json) VALUES (?, ?)", workflow)
        cols = (
            "id, workflow_name, workflow_path, workflow_hash, initial_input, status, started_at, owner_pid, owner_host, "
            "arguments"
        )
        values: tuple = row
        if fields:
            if "status" in fields:  # the row's own status column, replaced
                values = (*row[:5], fields["status"], *row[6:])
            extra = [k for k in fields if k != "status"]
            cols += "".join(f", {k}" for k in extra)
            values = (*values, *(fields[k] for k in extra))
        # Numbered in order (inside the write lock): the run's events are keyed by it.
        conn.execute(
            f"INSERT INTO runs (workflow_json, {cols}, num) VALUES ('', {','.join('?' * len(values))}, "
            "(SELECT coalesce(max(num), 0) + 1 FROM runs))",
            values,
        )

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
        cur = self._exec(
            "UPDATE runs SET status = 'running', waiting = 0, owner_pid = ?, owner_host = ? "
            "WHERE id = ? AND status = 'paused'",
            (os.getpid(), socket.gethostname(), run_id),
        )
        if cur.rowcount != 1:
            info = self.get_run(run_id)
            if info is None:
                raise StoreError(f"There is no run '{run_id}' in the run history.")
            if info.status == "running":
                holder = self.holder_of(run_id)
                raise StoreError(
                    f"Run {run_id} is already running or being resumed (by "
                    f"{holder.owner if holder is not None else 'an unknown process'}); "
                    "it cannot be resumed twice at once."
                )
            raise StoreError(f"Run {run_id} is {info.status}, not paused; only a paused run can be resumed.")

    def owner_alive(self, run_id: str) -> bool:
        """Whether the process that owns the run (started, paused or last resumed it) is a live
        process of this computer other than this one (one on another computer counts as gone:
        nothing here can tell). A paused run's owner may still hold it (waiting for its deadline)."""
        row = self._exec("SELECT owner_pid, owner_host FROM runs WHERE id = ?", (run_id,)).fetchone()
        if not row or row[0] is None or row[1] != socket.gethostname() or row[0] == os.getpid():
            return False
        return _pid_alive(int(row[0]))

    def recover(self) -> list[str]:
        """Mark runs left ``running`` by a process that no longer exists as ``interrupted``."""
        host = socket.gethostname()
        rows = self._exec("SELECT id, owner_pid, owner_host FROM runs WHERE status = 'running'").fetchall()
        gone = [
            rid for rid, pid, h in rows if pid is None or (h == host and pid != os.getpid() and not _pid_alive(pid))
        ]
        for rid in gone:
            self._exec(
                "UPDATE runs SET status = ?, waiting = 0, ended_at = COALESCE(ended_at, ("
                "SELECT MAX(timestamp) FROM events WHERE run_num = runs.num)), error = COALESCE(error, ?) "
                "WHERE id = ? AND status = 'running'",
                (INTERRUPTED, "The process running it stopped before the run ended.", rid),
            )
        return gone + self._recover_unresumable(host)

    def _recover_unresumable(self, host: str) -> list[str]:
        """Mark ``paused`` runs that have no stored state and whose process is gone ``interrupted``:
        nothing can resume them (a run recorded before its pause stored a snapshot at once)."""
        rows = self._exec(
            "SELECT id, owner_pid, owner_host FROM runs WHERE status = 'paused' AND snapshot IS NULL "
            "AND owner_pid IS NOT NULL"
        ).fetchall()
        gone = [rid for rid, pid, h in rows if h == host and pid != os.getpid() and not _pid_alive(pid)]
        for rid in gone:
            self._exec(
                "UPDATE runs SET status = ?, waiting = 0, error = COALESCE(error, ?) "
                "WHERE id = ? AND status = 'paused' AND snapshot IS NULL",
                (
                    INTERRUPTED,
                    "The process that paused it stopped before its state was saved; it cannot be resumed.",
                    rid,
                ),
            )
        return gone

    def delete_run(self, run_id: str) -> None:
        with self._transaction() as conn:
            row = conn.execute("SELECT workflow_hash FROM runs WHERE id = ?", (run_id,)).fetchone()
            conn.execute("DELETE FROM events WHERE run_num = (SELECT num FROM runs WHERE id = ?)", (run_id,))
            cids = [r[0] for r in conn.execute("SELECT cid FROM run_outputs WHERE run_id = ?", (run_id,))]
            conn.execute("DELETE FROM run_outputs WHERE run_id = ?", (run_id,))
            conn.execute("DELETE FROM attachments WHERE run_id = ?", (run_id,))
            self._drop_orphans(conn, cids)
            conn.execute("DELETE FROM runs WHERE id = ?", (run_id,))
            if row and row[0]:  # the workflow goes with its last run
                conn.execute(
                    "DELETE FROM workflows WHERE hash = ? AND NOT EXISTS (SELECT 1 FROM runs WHERE workflow_hash = ?)",
                    (row[0], row[0]),
                )

    # ------------------------------------------------------------------ events
    def append_events(
        self,
        run_id: str,
        first_seq: int,
        events: list[RunEvent],
        run_fields: dict[str, Any] | None = None,
        *,
        new_run: tuple[tuple, tuple[str, str]] | None = None,
        executions: list[tuple[str, str, Any, Any]] | None = None,
    ) -> None:
        """Write a batch of events (and optionally run fields) in one transaction, after the
        run's row when ``new_run`` (a :meth:`run_row`) is given."""
        with self._transaction() as conn:
            if new_run is not None:
                self._insert_run(conn, new_run, run_fields)
                run_fields = None
            if events and not ATTACHING_TYPES.isdisjoint(map(_event_type, events)):
                events = _put_attachments(conn, run_id, events)
            if events:
                if _WIRE_TYPES.isdisjoint(map(_event_type, events)) and max(map(len, events)) == 5:
                    # the usual batch: each column taken as it is (no Python call, no tuple per event)
                    columns: list[Any] = [list(map(get, events)) for get in _EVENT_COLUMNS]
                else:  # some kept in their wire form (see RunEvent.stored)
                    columns = list(zip(*[(e.timestamp, e.node_id, e.type, *e.stored()) for e in events]))
                insert_rows(conn, "events", self._num(conn, run_id), first_seq, columns)
            if run_fields:
                cols = ", ".join(f"{k} = ?" for k in run_fields)
                conn.execute(f"UPDATE runs SET {cols} WHERE id = ?", (*run_fields.values(), run_id))
            stored = self._put_executions(conn, run_id, executions, new=new_run is not None) if executions else None
        if stored:  # committed: a later step with the same output writes only its link
            known = self._known_outputs
            if len(known) > KNOWN_OUTPUTS_MAX:
                known.clear()
            known.update(stored)

    @staticmethod
    def _num(conn: sqlite3.Connection, run_id: str) -> int:
        """The number of run ``run_id`` (its events' key; one indexed lookup per batch)."""
        row = conn.execute("SELECT num FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None or row[0] is None:
            raise StoreError(f"There is no run '{run_id}' in the run history to add events to.")
        return row[0]

    # ------------------------------------------------------------------ import / export
    def import_agentflow(self, record: dict[str, Any]) -> str:
        """Store an AgentFlow-style run record; returns the run id (a fresh one if it exists already)."""
        workflow, info, events = run_from_agentflow_record(record)
        run_id = info["id"]
        same = self._same_run(run_id, info, len(events))
        if same is not None:
            raise AlreadyImported(
                f"This run record is in the run history already, as run {same[:12]}; it was not imported again.", same
            )
        if self.get_run(run_id) is not None:
            run_id = f"{run_id}-imported-{int(time.time())}"
        self.create_run(
            run_id,
            workflow,
            initial_input=info.get("initialInput"),
            status=info["status"],
            started_at=info["startedAt"],
            owner=False,
        )
        self.append_events(
            run_id,
            0,
            events,
            {
                "ended_at": info.get("endedAt"),
                "current_node": info.get("currentNodeId"),
                "waiting": int(bool(info.get("waitingForInput"))),
                "error": info.get("error"),
            },
        )
        return run_id

    def _same_run(self, run_id: str, info: dict[str, Any], n_events: int) -> str | None:
        """A stored run that this record already is: the same id (or an import of it), the same
        start (to the millisecond a record keeps) and as many events."""
        for rid in [run_id, *self.matching_run_ids(f"{run_id}-imported-", limit=50)]:
            stored = self.get_run(rid)
            if (
                stored is not None
                and abs(stored.started_at - float(info["startedAt"])) < 0.0015
                and stored.event_count == n_events
            ):
                return rid
        return None
