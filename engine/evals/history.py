"""The eval history, kept in the run store beside the runs it groups.

Two small tables, made when first needed (``CREATE TABLE IF NOT EXISTS``: no schema version
of their own, so the run store's migrations stay as they are): ``evals`` (one row an eval:
its workflow, when, how many cases passed) and ``eval_cases`` (one row a case of an eval: its
name, the run it made, whether it passed, and its result as JSON). The desktop's Tests panel
reads the history of a workflow's evals and their pass rates from here; ``flowdesk eval``
finds the last eval's runs (whose recorded outputs it reuses) and a ``--baseline``.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from engine.store import RunStore

__all__ = ["EvalRecord", "EvalHistory"]

_TABLES = """
CREATE TABLE IF NOT EXISTS evals (
    id TEXT PRIMARY KEY, workflow_path TEXT, workflow_name TEXT NOT NULL DEFAULT '',
    started_at REAL NOT NULL, ended_at REAL, cases INTEGER NOT NULL DEFAULT 0,
    passed INTEGER NOT NULL DEFAULT 0, provider TEXT, model TEXT);
CREATE INDEX IF NOT EXISTS evals_path ON evals(workflow_path, started_at);
CREATE TABLE IF NOT EXISTS eval_cases (
    eval_id TEXT NOT NULL, n INTEGER NOT NULL, name TEXT NOT NULL, run_id TEXT,
    passed INTEGER NOT NULL, result TEXT NOT NULL, PRIMARY KEY (eval_id, n)) WITHOUT ROWID
"""


@dataclass
class EvalRecord:
    """One stored eval: its id, workflow, time, counts and (when asked for) its cases' results."""

    id: str
    workflow_path: str | None
    workflow_name: str
    started_at: float
    ended_at: float | None
    cases: int
    passed: int
    provider: str | None = None
    model: str | None = None
    results: list[dict[str, Any]] = field(default_factory=list)

    @property
    def pass_rate(self) -> float:
        return self.passed / self.cases if self.cases else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "evalId": self.id,
            "workflowPath": self.workflow_path,
            "workflow": self.workflow_name,
            "startedAt": self.started_at,
            "endedAt": self.ended_at,
            "cases": self.cases,
            "passed": self.passed,
            "passRate": round(self.pass_rate, 4),
        }


class EvalHistory:
    """The evals of a run store (the user's, unless another is given); every method raises
    :class:`engine.store.StoreError` (naming the file) when the store cannot be used."""

    def __init__(self, store: RunStore | None = None) -> None:
        self.store = store if store is not None else RunStore()
        try:
            conn = self.store._connect()
            conn.executescript(_TABLES)
        except sqlite3.Error as err:
            raise self.store._error(err) from None

    def _rows(self, sql: str, params: tuple = ()) -> list[tuple]:
        return self.store._exec(sql, params).fetchall()

    def begin(
        self,
        eval_id: str,
        *,
        workflow_path: str | None,
        workflow_name: str,
        started_at: float,
        provider: str | None = None,
        model: str | None = None,
    ) -> None:
        with self.store._transaction() as conn:
            conn.execute(
                "INSERT INTO evals (id, workflow_path, workflow_name, started_at, provider, model) VALUES (?,?,?,?,?,?)",
                (eval_id, workflow_path, workflow_name, started_at, provider, model),
            )

    def add_case(self, eval_id: str, n: int, result: dict[str, Any]) -> None:
        with self.store._transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO eval_cases (eval_id, n, name, run_id, passed, result) VALUES (?,?,?,?,?,?)",
                (
                    eval_id,
                    n,
                    result["name"],
                    result.get("runId"),
                    1 if result.get("passed") else 0,
                    json.dumps(result, ensure_ascii=False, default=str),
                ),
            )

    def finish(self, eval_id: str, *, ended_at: float, cases: int, passed: int) -> None:
        with self.store._transaction() as conn:
            conn.execute(
                "UPDATE evals SET ended_at = ?, cases = ?, passed = ? WHERE id = ?", (ended_at, cases, passed, eval_id)
            )

    def _record(self, row: tuple) -> EvalRecord:
        return EvalRecord(*row)

    _COLUMNS = "id, workflow_path, workflow_name, started_at, ended_at, cases, passed, provider, model"

    def get(self, eval_id: str, *, with_results: bool = True) -> EvalRecord | None:
        """An eval by id or unique id prefix (None when there is none, or several match)."""
        rows = self._rows(f"SELECT {self._COLUMNS} FROM evals WHERE id = ?", (eval_id,))
        if not rows:
            rows = self._rows(
                f"SELECT {self._COLUMNS} FROM evals WHERE substr(id, 1, ?) = ? LIMIT 2", (len(eval_id), eval_id)
            )
        if len(rows) != 1:
            return None
        rec = self._record(rows[0])
        if with_results:
            rec.results = self.results(rec.id)
        return rec

    def results(self, eval_id: str) -> list[dict[str, Any]]:
        """The cases' results of an eval, in the order of its cases."""
        out = []
        for (text,) in self._rows("SELECT result FROM eval_cases WHERE eval_id = ? ORDER BY n", (eval_id,)):
            try:
                out.append(json.loads(text))
            except ValueError:
                continue
        return out

    def list(self, *, workflow_path: str | None = None, limit: int = 50) -> list[EvalRecord]:
        """Evals, newest first (of the workflow at ``workflow_path`` when given); finished ones only."""
        if workflow_path is not None:
            rows = self._rows(
                f"SELECT {self._COLUMNS} FROM evals WHERE workflow_path = ? AND ended_at IS NOT NULL "
                "ORDER BY started_at DESC LIMIT ?",
                (workflow_path, limit),
            )
        else:
            rows = self._rows(
                f"SELECT {self._COLUMNS} FROM evals WHERE ended_at IS NOT NULL ORDER BY started_at DESC LIMIT ?",
                (limit,),
            )
        return [self._record(r) for r in rows]

    def last_results(self, workflow_path: str) -> dict[str, dict[str, Any]]:
        """``{case name: its result}`` of the workflow's last evals (a case's newest that made a
        run): whose runs' recorded outputs a new eval reuses, and whose figures it takes for them."""
        rows = self._rows(
            "SELECT c.name, c.result FROM eval_cases c JOIN evals e ON e.id = c.eval_id "
            "WHERE e.workflow_path = ? AND c.run_id IS NOT NULL ORDER BY e.started_at DESC, c.n LIMIT 5000",
            (workflow_path,),
        )
        out: dict[str, dict[str, Any]] = {}
        for name, text in rows:
            if name in out:
                continue
            try:
                result = json.loads(text)
            except ValueError:
                continue
            if isinstance(result, dict) and result.get("runId"):
                out[name] = result
        return out

    def delete(self, eval_id: str) -> None:
        """Forget an eval (its runs stay in the run history)."""
        with self.store._transaction() as conn:
            conn.execute("DELETE FROM eval_cases WHERE eval_id = ?", (eval_id,))
            conn.execute("DELETE FROM evals WHERE id = ?", (eval_id,))
