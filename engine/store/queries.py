"""Reading the run history: runs (:class:`RunInfo`), their events, workflows and snapshots, and
the tokens their model calls reported. Nothing here writes: every query is a plain SELECT on
this thread's connection (see :mod:`engine.store.connection`).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from engine.graph.model import Workflow, parse_workflow
from engine.graph.templates import mask_url_passwords
from engine.run.events import RunEvent, format_timestamp
from engine.store.connection import Database
from engine.store.errors import StoreError

__all__ = ["RunInfo", "RunHolder", "RunQueries", "NOT_FULLY_RECORDED", "mask_url_passwords"]

NOT_FULLY_RECORDED = "Not fully recorded"

# The events that report a model call's tokens and model: a node's responses, a router's choice,
# and the calls made to a subagent (stored under the calling node: the subagent is named in the
# call's content).
_ANSWERS = "e.type IN ('llm_response', 'route_choice', 'subagent_call_end') AND e.extra IS NOT NULL"
_ANSWERING_NODE = (
    "CASE WHEN e.type IN ('llm_response', 'route_choice') THEN e.node_id "
    "ELSE json_extract(e.content, '$.subagentNodeId') END AS nid"
)


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
        return ", ".join(
            f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"
            for k, v in (self.arguments or {}).items()
        )

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
        return {
            "id": self.id,
            "workflowName": self.workflow_name,
            "workflowPath": self.workflow_path,
            "initialInput": self.initial_input,
            "status": self.status,
            "startedAt": format_timestamp(self.started_at),
            "endedAt": format_timestamp(self.ended_at) if self.ended_at else None,
            "durationSeconds": self.duration,
            "currentNodeId": self.current_node,
            "waitingForInput": self.waiting,
            "error": self.error,
            "eventCount": self.event_count,
            "fullyRecorded": self.fully_recorded,
            "arguments": self.arguments,
        }


@dataclass(frozen=True, slots=True)
class RunHolder:
    """Who holds a run now and how far it got (:meth:`RunQueries.holder_of`): what a window
    showing the run paused at an approval watches, to notice that another process (``flowdesk
    resume``, the HTTP API, an inbox) claimed it, or that it ended, and stop offering a decision."""

    status: str
    owner_pid: int | None
    owner_host: str | None
    #: how many events are stored (the next event's number): it grows as the holder goes on
    events: int

    @property
    def owner(self) -> str:
        """The owning process in words: ``process 4242 on myhost`` (``an unknown process``)."""
        if self.owner_pid is None:
            return "an unknown process"
        return f"process {self.owner_pid}" + (f" on {self.owner_host}" if self.owner_host else "")


class RunQueries(Database):
    """The run database's reading side."""

    _INFO_COLS = (
        "id, workflow_name, workflow_path, initial_input, status, started_at, ended_at, current_node, "
        "waiting, error, arguments"
    )

    def _info(self, row: tuple) -> RunInfo:
        arguments = None
        if row[10]:
            try:
                arguments = json.loads(row[10])
            except ValueError:
                pass
        run_id, name, path, initial, status, started, ended, current = row[:8]
        return RunInfo(
            run_id,
            name,
            path,
            initial,
            status,
            started,
            ended,
            current,
            bool(row[8]),
            row[9],
            row[11] if len(row) > 11 else 0,
            mask_url_passwords(arguments) if isinstance(arguments, dict) else None,
        )  # older rows too

    def get_run(self, run_id: str) -> RunInfo | None:
        row = self._exec(
            f"SELECT {self._INFO_COLS}, (SELECT count(*) FROM events e WHERE e.run_num = runs.num) "
            "FROM runs WHERE id = ?",
            (run_id,),
        ).fetchone()
        return self._info(row) if row else None

    def holder_of(self, run_id: str) -> RunHolder | None:
        """The run's status, owning process and number of stored events, in one indexed read
        (cheap enough to ask every second while a window shows the run paused); None when
        there is no such run (deleted)."""
        row = self._exec(
            "SELECT status, owner_pid, owner_host, (SELECT MAX(seq) FROM events e WHERE e.run_num = runs.num) "
            "FROM runs WHERE id = ?",
            (run_id,),
        ).fetchone()
        if row is None:
            return None
        return RunHolder(row[0], row[1], row[2], 0 if row[3] is None else row[3] + 1)

    def find_run(self, prefix: str) -> RunInfo | None:
        """A run by its id or a unique prefix of it (as shown in lists)."""
        exact = self.get_run(prefix)
        if exact or len(prefix) < 4:
            return exact
        ids = self.matching_run_ids(prefix, limit=2)
        return self.get_run(ids[0]) if len(ids) == 1 else None  # none, or ambiguous (see matching_run_ids)

    def matching_run_ids(self, prefix: str, limit: int = 10) -> list[str]:
        """The ids of the runs starting with ``prefix`` (at most ``limit``), in id order."""
        rows = self._exec(
            "SELECT id FROM runs WHERE id LIKE ? ESCAPE '\\' ORDER BY id LIMIT ?",
            (prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%", limit),
        ).fetchall()
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

    def list_runs(
        self, *, workflow: str | None = None, status: str | None = None, limit: int = 50, offset: int = 0
    ) -> list[RunInfo]:
        where, params = self._where(workflow, status)
        rows = self._exec(
            f"SELECT {self._INFO_COLS} FROM runs{where} ORDER BY started_at DESC, id LIMIT ? OFFSET ?",
            (*params, limit, offset),
        ).fetchall()
        return [self._info(r) for r in rows]

    def count_runs(self, *, workflow: str | None = None, status: str | None = None) -> int:
        where, params = self._where(workflow, status)
        return self._exec(f"SELECT count(*) FROM runs{where}", params).fetchone()[0]

    def event_counts(self, run_ids: Iterable[str]) -> dict[str, int]:
        """How many events each of these runs has (one query; for a page of a runs list)."""
        ids = list(dict.fromkeys(run_ids))
        counts = dict.fromkeys(ids, 0)
        for i in range(0, len(ids), 500):  # stay far below SQLite's host-parameter limit
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            for rid, n in self._exec(
                f"SELECT r.id, count(*) FROM runs r JOIN events e ON e.run_num = r.num "
                f"WHERE r.id IN ({marks}) GROUP BY r.id",
                chunk,
            ).fetchall():
                counts[rid] = n
        return counts

    def workflow_names(self) -> list[str]:
        return [r[0] for r in self._exec("SELECT DISTINCT workflow_name FROM runs ORDER BY workflow_name").fetchall()]

    def workflow_json(self, run_id: str) -> str | None:
        row = self._exec(
            "SELECT coalesce(w.json, r.workflow_json) FROM runs r "
            "LEFT JOIN workflows w ON w.hash = r.workflow_hash WHERE r.id = ?",
            (run_id,),
        ).fetchone()
        return row[0] if row else None

    def workflow_of(self, run_id: str) -> Workflow:
        text = self.workflow_json(run_id)
        if text is None:
            raise StoreError(f"There is no run '{run_id}' in the run history.")
        return parse_workflow(json.loads(text))

    def snapshot_of(self, run_id: str) -> dict[str, Any] | None:
        row = self._exec("SELECT snapshot FROM runs WHERE id = ?", (run_id,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def usage_by_node(self, run_ids: Iterable[str]) -> dict[str, dict[str, tuple[int, int]]]:
        """Tokens each run's nodes reported: ``{run id: {node id: (prompt, completion)}}`` (see
        :meth:`answers_by_node`)."""
        return {
            rid: {nid: (p, c) for nid, (p, c, _model) in nodes.items()}
            for rid, nodes in self.answers_by_node(run_ids).items()
        }

    def answers_by_node(self, run_ids: Iterable[str]) -> dict[str, dict[str, tuple[int, int, str | None]]]:
        """What each run's nodes were answered with: ``{run id: {node id: (prompt tokens,
        completion tokens, model)}}``, summed over the node's responses and the calls made to it
        as a subagent; ``model`` is the one that answered (costs are priced by it,
        ``engine.run.costs.price_of``), None when the responses did not say. One query per 500 runs."""
        ids = list(dict.fromkeys(run_ids))
        out: dict[str, dict[str, tuple[int, int, str | None]]] = {rid: {} for rid in ids}
        for i in range(0, len(ids), 500):
            chunk = ids[i : i + 500]
            marks = ",".join("?" * len(chunk))
            rows = self._exec(
                f"SELECT r.id, {_ANSWERING_NODE}, "
                "sum(coalesce(json_extract(e.extra, '$.usage.prompt_tokens'), 0)), "
                "sum(coalesce(json_extract(e.extra, '$.usage.completion_tokens'), 0)), "
                "max(json_extract(e.extra, '$.model')) "
                "FROM runs r JOIN events e ON e.run_num = r.num "
                f"WHERE r.id IN ({marks}) AND {_ANSWERS} GROUP BY r.id, nid",
                chunk,
            ).fetchall()
            for rid, nid, p, c, model in rows:
                out[rid][nid] = (int(p or 0), int(c or 0), model if isinstance(model, str) and model else None)
        return out

    def last_run_of(self, *, workflow_path: str | None = None, workflow_name: str | None = None) -> str | None:
        """The newest run of a document (by its file path, else by the workflow's name)."""
        if workflow_path:
            row = self._exec(
                "SELECT id FROM runs WHERE workflow_path = ? ORDER BY started_at DESC LIMIT 1", (workflow_path,)
            ).fetchone()
            if row:
                return row[0]
        if workflow_name:
            row = self._exec(
                "SELECT id FROM runs WHERE workflow_name = ? ORDER BY started_at DESC LIMIT 1", (workflow_name,)
            ).fetchone()
            if row:
                return row[0]
        return None

    def next_seq(self, run_id: str) -> int:
        row = self._exec(
            "SELECT MAX(seq) FROM events WHERE run_num = (SELECT num FROM runs WHERE id = ?)", (run_id,)
        ).fetchone()
        return 0 if row[0] is None else row[0] + 1

    def attachment(self, run_id: str, attachment_id: str) -> tuple[str, bytes] | None:
        """A file a run's event names (``extra.attachment.id``: a screenshot): ``(mime, bytes)``."""
        row = self._exec(
            "SELECT mime, data FROM attachments WHERE run_id = ? AND id = ?", (run_id, attachment_id)
        ).fetchone()
        return (row[0], bytes(row[1])) if row else None

    def events(self, run_id: str, *, offset: int = 0, limit: int = -1) -> list[RunEvent]:
        rows = self._exec(
            "SELECT timestamp, node_id, type, content, extra FROM events "
            "WHERE run_num = (SELECT num FROM runs WHERE id = ?) "
            "ORDER BY seq LIMIT ? OFFSET ?",
            (run_id, limit, offset),
        ).fetchall()
        return [RunEvent.from_stored(n, t, c, ts, x) for ts, n, t, c, x in rows]

    def final_variables(self, run_id: str) -> dict[str, Any] | None:
        """The variables a run ended with (its ending ``run_status`` event's ``vars``), None
        when it has not ended or had none. One indexed read: the history asks on hover."""
        row = self._exec(
            "SELECT extra FROM events WHERE run_num = (SELECT num FROM runs WHERE id = ?) "
            "AND type = 'run_status' AND extra LIKE '%\"vars\"%' ORDER BY seq DESC LIMIT 1",
            (run_id,),
        ).fetchone()
        if not row or not row[0]:
            return None
        try:
            found = json.loads(row[0]).get("vars")
        except (ValueError, AttributeError):
            return None
        return mask_url_passwords(found) if isinstance(found, dict) else None

    def iter_events(self, run_id: str, batch: int = 2000) -> Iterator[RunEvent]:
        offset = 0
        while True:
            chunk = self.events(run_id, offset=offset, limit=batch)
            yield from chunk
            if len(chunk) < batch:
                return
            offset += batch

    def last_event_of(self, run_id: str, type: str) -> RunEvent | None:
        """The run's latest event of ``type`` (None when it has none): the inbox reads a paused
        run's ``wait_input`` (its prompt, options and deadline) without reading its whole log."""
        row = self._exec(
            "SELECT timestamp, node_id, type, content, extra FROM events "
            "WHERE run_num = (SELECT num FROM runs WHERE id = ?) AND type = ? ORDER BY seq DESC LIMIT 1",
            (run_id, type),
        ).fetchone()
        return RunEvent.from_stored(row[1], row[2], row[3], row[0], row[4]) if row else None

    def export_jsonl(self, run_id: str) -> Iterator[str]:
        """The run's events as JSON lines; an event naming an attachment (a screenshot) carries
        its bytes again (``attachment.data``, base64), so the export stands on its own."""
        for e in self.iter_events(run_id):
            extra = e.extra if '"attachment"' in (e.extra_json or "") else None
            attachment = extra.get("attachment") if isinstance(extra, dict) else None
            if isinstance(attachment, dict) and "data" not in attachment and attachment.get("id"):
                found = self.attachment(run_id, str(attachment["id"]))
                if found is not None:
                    attachment["data"] = base64.b64encode(found[1]).decode("ascii")
                    e = RunEvent(e.node_id, e.type, e.content, timestamp=e.timestamp, extra=extra, path=e.path)
            yield e.to_json()
