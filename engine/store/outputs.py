"""Recorded node executions (``engine/run/rerun.py``): each step's output stored once by its
content, each run's steps pointing at theirs in order, the least recently used evicted past a
size limit (settings.json's ``runCache.limitMB``, else :data:`DEFAULT_CACHE_LIMIT`).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from collections.abc import Iterable
from hashlib import blake2b
from typing import Any

from engine.llm.config import load_settings
from engine.run.rerun import STEP_DIGEST_MARK, RecordedExecution, node_digest, stored_key
from engine.store.errors import StoreError
from engine.store.queries import RunQueries
from engine.store.writer import insert_rows

__all__ = ["RecordedOutputs", "configured_cache_limit", "DEFAULT_CACHE_LIMIT"]

log = logging.getLogger(__name__)

# The recorded node executions' size limit (bytes of output kept); least recently used go first.
DEFAULT_CACHE_LIMIT = 64 * 1024 * 1024
# Outputs this process knows are stored (their content ids): recording them again writes only
# the step's link. Only a shortcut: forgotten when it grows past this, or when outputs go.
KNOWN_OUTPUTS_MAX = 200_000
# A recorded output's content id hashes its text, a zero byte and its handle: the usual handles' part
_HANDLE_TAILS = {None: b"\0", "output": b"\0output"}


def configured_cache_limit() -> int:
    """The recorded executions' size limit in bytes: settings.json's ``runCache.limitMB``, else the default."""
    try:
        mb = ((load_settings().model_extra or {}).get("runCache") or {}).get("limitMB")
        if isinstance(mb, (int, float)) and mb >= 0:
            return int(mb * 1024 * 1024)
    except Exception:  # unreadable settings: the default (the settings dialog says what is wrong)
        pass
    return DEFAULT_CACHE_LIMIT


class RecordedOutputs(RunQueries):
    """The run database's recorded executions (read and written inside the runs' own transactions)."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, timeout: float = 5.0) -> None:
        super().__init__(path, timeout=timeout)
        self.cache_limit = configured_cache_limit()
        self._cache_bytes: int | None = None  # the recorded outputs' size, once summed
        self._known_outputs: set[str] = set()

    def _put_executions(
        self, conn: sqlite3.Connection, run_id: str, executions: list[tuple[str, str, Any, Any]], *, new: bool = False
    ) -> list[str]:
        """Record steps' outputs: one ``run_outputs`` row per step, numbered after the run's last;
        an output's text once (by content)."""
        known = self._known_outputs
        base = (
            1
            if new
            else conn.execute("SELECT coalesce(max(n), 0) + 1 FROM run_outputs WHERE run_id = ?", (run_id,)).fetchone()[
                0
            ]
        )  # (a run made in this batch has none yet)
        rows: list[tuple[str, str, Any, int]] = []
        node_ids: list[str] = []  # each recorded step's node, key and output (columns: see insert_rows)
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
        insert_rows(conn, "run_outputs", run_id, base, [node_ids, keys, cids])
        self._evict(conn, added)
        return [r[0] for r in rows]  # known once the caller's transaction commits (see append_events)

    def _drop_orphans(self, conn: sqlite3.Connection, cids: Iterable[str]) -> None:
        """Forget outputs among ``cids`` that no run points at any more."""
        doomed = [(c,) for c in set(cids)]
        if not doomed:
            return
        conn.executemany(
            "DELETE FROM outputs WHERE cid = ? AND NOT EXISTS (SELECT 1 FROM run_outputs WHERE cid = outputs.cid)",
            doomed,
        )
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
                "ORDER BY coalesce(r.reused_at, r.started_at, 0), ro.run_id, ro.n"
            ):
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

    def recorded_executions(self, run_id: str) -> dict[str, Any]:
        """The executions recorded in run ``run_id`` still in the cache: node id -> RecordedExecution
        (the node's last step)."""
        return {node_id: steps[-1] for node_id, steps in self.recorded_steps(run_id).items()}

    def recorded_steps(self, run_id: str) -> dict[str, tuple[Any, ...]]:
        """Every step recorded in run ``run_id`` still in the cache, by node: node id -> its
        RecordedExecutions in the order they ran (a loop's node and body ran once an iteration;
        a later run reuses whichever step has its key)."""
        rows = self._exec(
            "SELECT ro.node_id, ro.key, o.output, o.handle FROM run_outputs ro "
            "JOIN outputs o ON o.cid = ro.cid WHERE ro.run_id = ? ORDER BY ro.n",
            (run_id,),
        ).fetchall()
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
        row = self._exec(
            "SELECT r.workflow_hash, w.node_digests FROM runs r LEFT JOIN workflows w "
            "ON w.hash = r.workflow_hash WHERE r.id = ?",
            (run_id,),
        ).fetchone()
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
