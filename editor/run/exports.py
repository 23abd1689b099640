"""What the run console writes out: the log as JSON Lines and the AgentFlow-style run record.

Both are made from the events shown (in their wire form, see :meth:`engine.RunEvent.to_wire`)
and what the run-state reducer derived from them, so a live run and the same run replayed
from the history export the same record.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from engine import (
    RunEvent,
    RunInfo,
    RunState,
    RunStatus,
    RunStore,
    StoreError,
    Workflow,
    agentflow_record,
    dumps_workflow,
)

__all__ = ["write_jsonl", "run_record", "write_record", "record_input"]


def write_jsonl(events: Iterable[RunEvent], path: str | Path) -> None:
    """Every event (streamed deltas included), one JSON object per line."""
    with open(path, "w", encoding="utf-8") as f:
        for ev in events:
            f.write(ev.to_json())
            f.write("\n")


def run_record(
    state: RunState,
    events: list[RunEvent],
    *,
    run_id: str | None,
    workflow: Workflow | None,
    workflow_path: str | None = None,
    initial_input: str | None = None,
    error: str | None = None,
) -> dict[str, Any]:
    """The run as an AgentFlow-style record (the shape of :func:`engine.agentflow_record`)."""
    started = state.started_at or (events[0].timestamp if events else time.time())
    info = RunInfo(
        id=run_id or "unsaved",
        workflow_name=workflow.display_name() if workflow else "Untitled workflow",
        workflow_path=workflow_path,
        initial_input=initial_input if initial_input is not None else state.initial_input,
        status=str(state.status),
        started_at=started,
        ended_at=state.ended_at,
        current_node=state.waiting_for,
        waiting=state.status == RunStatus.PAUSED,
        error=error if error is not None else state.error,
    )
    wf_json = dumps_workflow(workflow, indent=None) if workflow is not None else '{"nodes": [], "connections": []}'
    return agentflow_record(info, wf_json, events, state.outputs)


def write_record(record: dict[str, Any], path: str | Path | None = None) -> Path:
    """Write ``record``; ``path`` may be a folder (the file is then ``run_<id>.json``)."""
    target = Path(path) if path is not None else Path.cwd()
    if target.is_dir():
        target = target / f"run_{record['runId']}.json"
    target.write_text(json.dumps(record, indent=2, ensure_ascii=False), encoding="utf-8")
    return target


def record_input(
    given: str | None, store: RunStore | None, run_id: str | None, workflow: Workflow | None
) -> str | None:
    """The run's input as recorded: the input given, else the stored run's, else the Start node's."""
    if given is not None:
        return given
    if store is not None and run_id:
        try:
            stored = store.get_run(run_id)
        except StoreError:
            stored = None
        if stored is not None and stored.initial_input is not None:
            return stored.initial_input
    start = next((n for n in workflow.nodes if n.type == "start"), None) if workflow is not None else None
    return getattr(start.data, "initialInput", None) if start is not None else None
