"""AgentFlow-style run records (``run_<id>.json``: ``{workflow, logs, status, ...}``): a stored
run written as one, and one read back as a workflow, the run's fields and its events.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from typing import Any

from engine.graph.model import Workflow, parse_workflow
from engine.run.events import RunEvent, format_timestamp, parse_timestamp
from engine.store.queries import RunInfo

__all__ = ["agentflow_record", "run_from_agentflow_record"]


def agentflow_record(
    info: RunInfo, workflow_json: str, events: Iterable[RunEvent], outputs: dict[str, Any] | None = None
) -> dict[str, Any]:
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
    started = record.get("startedAt")
    ended = record.get("endedAt")
    status = str(record.get("status") or ("paused" if record.get("waitingForInput") else "completed"))
    info = {
        "id": str(record.get("runId") or record.get("id") or f"imported-{int(time.time() * 1000)}"),
        "status": status,
        "initialInput": record.get("initialInput"),
        "currentNodeId": record.get("currentNodeId"),
        "waitingForInput": bool(record.get("waitingForInput")),
        "startedAt": parse_timestamp(started)
        if isinstance(started, str)
        else (events[0].timestamp if events else time.time()),
        "endedAt": parse_timestamp(ended) if isinstance(ended, str) else (events[-1].timestamp if events else None),
        "error": record.get("error"),
    }
    return workflow, info, events
