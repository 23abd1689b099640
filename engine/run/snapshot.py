"""The run snapshot's format (``flowdesk.run/1``): its parts written and read back.

``Run.snapshot()`` is the whole state of a paused (or ended) run as a JSON value, and
``Run.restore()`` makes a run from one, in this process or another. The scheduler's own parts
(status, the pending approval and the queue behind it, deferred work, outputs, visits, outcomes)
are written here; each kind's per-node state (``RunContext.state``) goes under the kind's
``NodeSpec.state_key`` as the kind writes it (``state_to_json``), and is read back by the kind
(``state_from_json``), so a new stateful kind needs no change to the format's code. A branch's
frame (``BranchFrame``) is written only when it holds something. Snapshots written by earlier
versions (``joins``, ``loops``, ``subflows``) read back the same way: those are the built-in
kinds' keys. A *checkpoint* (``Run.checkpoint``) is a snapshot taken while sibling branches are
in flight: each is written as deferred work at its node, its visit uncounted
(:func:`in_flight_as_deferred`). ``Run``'s ``snapshot``/``checkpoint``/``restore``
(``Snapshots``, engine/run/checkpoint.py) hand their parts to these functions.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from engine.graph.model import Workflow, dumps_workflow, parse_workflow
from engine.nodes import NodeOutcome, load_builtins, spec_for
from engine.run.context import BranchFrame
from engine.run.events import RunStatus

__all__ = [
    "SNAPSHOT_FORMAT",
    "write",
    "read_run",
    "with_frame",
    "queue_items",
    "deferred_items",
    "kind_states",
    "read_pending",
    "read_queue",
    "read_deferred",
    "read_kind_states",
    "in_flight_as_deferred",
    "workflow_json",
    "restore_args",
    "read_outcomes",
]

SNAPSHOT_FORMAT = "flowdesk.run/1"
_EMPTY_FRAME = BranchFrame()
Deferred = tuple[str, Any, "str | None", "BranchFrame | None"]
_STATUSES = {str(s): s for s in RunStatus}  # a snapshot's status read back (RunStatus(text) costs 1 µs)


def write(
    run: Any,
    *,
    pauses: dict[str, Any],
    kind_states: dict[str, Any],
    visits: dict[str, int],
    outcomes: dict[str, str],
    include_workflow: bool,
) -> dict[str, Any]:
    """A run's snapshot: its public fields, with the parts the scheduler hands in (``pauses``:
    ``Pauses.to_json``; ``kind_states``: :func:`kind_states`; the visits and outcomes to write)."""
    snap: dict[str, Any] = {
        "format": SNAPSHOT_FORMAT,
        "runId": run.run_id,
        "status": str(run.status),
        "waitingForInput": run.waiting_for_input,
        "currentNodeId": run.current_node_id,
        "initialInput": run.initial_input,
        "maxVisits": run.max_visits,
        **pauses,
        "variables": dict(run.variables),
        **kind_states,
        "outputs": dict(run.outputs),
        "visits": dict(visits),
        "outcomes": outcomes,
        "lastTextOutput": run.last_text_output,
        "error": run.error,
        "startedAt": run.started_at,
        "meta": run.meta,
    }
    if run.result is not None:
        snap["result"] = run.result
    if run.run_path:
        snap["runPath"] = run.run_path
    if run.path:
        snap["path"] = run.path
    if include_workflow:
        snap["workflow"] = workflow_json(run.workflow)
    return snap


def workflow_json(workflow: Workflow) -> Any:
    """The workflow as a snapshot holds it (a JSON value, as its file would)."""
    return json.loads(dumps_workflow(workflow, indent=None))


def in_flight_as_deferred(
    deferred: Iterable[Deferred],
    visits: dict[str, int],
    in_flight: Iterable[tuple[str, Any, bool, str | None, BranchFrame | None]],
) -> tuple[list[Deferred], dict[str, int]]:
    """A checkpoint's deferred work and visits: each branch in flight (``Branches.in_flight``)
    kept as deferred work at the node it is on, its visit uncounted, so that, resumed from the
    checkpoint, that step runs again and the rest of the branch follows (copies: the run's own
    are left as they are)."""
    deferred = list(deferred)
    visits = dict(visits)
    for node_id, value, counted, src, frame in in_flight:
        deferred.append((node_id, value, src, frame))
        if counted and visits.get(node_id):
            visits[node_id] -= 1
    return deferred, visits


def restore_args(
    snapshot: Any, workflow: Workflow | None, kwargs: dict[str, Any], max_visits: int
) -> tuple[Workflow, dict[str, Any]]:
    """The workflow and the keyword arguments (besides its id and initial input) a run is restored
    from ``snapshot`` with (``kwargs``: the caller's, which win, completed from the snapshot;
    ``max_visits``: the default when the snapshot has none). ValueError
    when ``snapshot`` is not a run snapshot, or has no workflow and none is given."""
    if not isinstance(snapshot, dict) or snapshot.get("format") != SNAPSHOT_FORMAT:
        raise ValueError("not a Flowdesk run snapshot")
    if workflow is None:
        if "workflow" not in snapshot:
            raise ValueError("the snapshot has no workflow; pass the workflow that ran")
        workflow = parse_workflow(snapshot["workflow"])
    kwargs.setdefault("max_visits", snapshot.get("maxVisits", max_visits))
    kwargs.setdefault("meta", snapshot.get("meta"))
    kwargs.setdefault("variables", snapshot.get("variables") or {})
    return workflow, kwargs


def read_outcomes(snapshot: dict[str, Any]) -> dict[str, NodeOutcome]:
    """How nodes' last steps ended otherwise than done (done is a node with an output and no entry)."""
    return {k: NodeOutcome(v) for k, v in snapshot.get("outcomes", {}).items() if v != NodeOutcome.DONE}


def read_run(run: Any, snapshot: dict[str, Any]) -> None:
    """Set a restored run's public fields from its snapshot (the scheduler reads back the rest)."""
    status = snapshot["status"]
    run.status = _STATUSES.get(status) or RunStatus(status)
    run.waiting_for_input = bool(snapshot.get("waitingForInput"))
    run.current_node_id = snapshot.get("currentNodeId")
    run.outputs = dict(snapshot.get("outputs", {}))
    run.visits = dict(snapshot.get("visits", {}))
    run.last_text_output = snapshot.get("lastTextOutput", "")
    run.error = snapshot.get("error")
    run.started_at = snapshot.get("startedAt")
    run.result = snapshot.get("result")
    if "runPath" in snapshot and not run.run_path:
        run.run_path = snapshot["runPath"]
    if run.path is None and isinstance(snapshot.get("path"), str):
        run.path = snapshot["path"]


def with_frame(item: dict[str, Any], frame: BranchFrame | None) -> dict[str, Any]:
    if frame is not None and frame != _EMPTY_FRAME:
        item["frame"] = frame.to_json()
    return item


def queue_items(queue: Iterable[tuple[str, Any]], frames: Iterable[BranchFrame | None]) -> list[dict[str, Any]]:
    """The approvals queued behind the pending one (a frame each; None for a missing one)."""
    items = list(queue)
    padded = list(frames) + [None] * len(items)
    return [with_frame({"nodeId": n, "input": v}, f) for (n, v), f in zip(items, padded)]


def deferred_items(deferred: Iterable[Deferred], gathers: Callable[[str], bool]) -> list[dict[str, Any]]:
    """Deferred work; ``from`` kept for a node whose kind gathers arrivals (it counts by source)."""
    return [
        with_frame({"nodeId": n, "input": v, **({"from": src} if src and gathers(n) else {})}, f)
        for n, v, src, f in deferred
    ]


def _state_keys() -> dict[str, Any]:
    """Each snapshot key the registered kinds keep their states under, with a kind that reads it.
    Every built-in kind counts, loaded or not (a lookup loads only its own): a snapshot keeps the
    same keys whichever kinds the workflow uses."""
    keys: dict[str, Any] = {}
    for spec in load_builtins().values():
        if spec.state_key is not None:
            keys.setdefault(spec.state_key, spec)
    return keys


def kind_states(states: dict[str, Any], nodes: dict[str, Any]) -> dict[str, Any]:
    """The kinds' states: ``{state_key: {node id: state_to_json(state)}}`` (a key a kind keeps
    ``state_always`` written even when empty)."""
    held: dict[str, Any] = {key: {} for key, spec in _state_keys().items() if spec.state_always}
    for node_id, state in states.items():
        node = nodes.get(node_id)
        spec = spec_for(node.type) if node is not None else None
        if spec is not None and spec.state_key is not None:
            held.setdefault(spec.state_key, {})[node_id] = spec.state_to_json(state)
    return held


def read_pending(snapshot: dict[str, Any]) -> tuple[tuple[str, Any] | None, BranchFrame | None]:
    pending = snapshot.get("pending")
    if not pending:
        return None, None
    return (pending["nodeId"], pending.get("input")), BranchFrame.from_json(pending.get("frame"))


def read_queue(snapshot: dict[str, Any]) -> tuple[deque, deque]:
    queue = list(snapshot.get("approvalQueue", ()))
    return (
        deque((q["nodeId"], q.get("input")) for q in queue),
        deque(BranchFrame.from_json(q.get("frame")) for q in queue),
    )


def read_deferred(snapshot: dict[str, Any]) -> list[Deferred]:
    return [
        (q["nodeId"], q.get("input"), q.get("from"), BranchFrame.from_json(q.get("frame")))
        for q in snapshot.get("deferred", ())
    ]


def read_kind_states(snapshot: dict[str, Any], spec_of: Callable[[str], Any], ctx: Any) -> dict[str, tuple[Any, Any]]:
    """Each node's state read back by its kind: ``{node id: (spec, state)}`` (``spec_of``: the
    spec of a node id as the run looks it up, None when unknown)."""
    found: dict[str, tuple[Any, Any]] = {}
    for key, keeper in _state_keys().items():
        for node_id, data in (snapshot.get(key) or {}).items():
            spec = spec_of(node_id)
            if spec is None or spec.state_key != key:
                spec = keeper
            found[node_id] = (spec, spec.state_from_json(ctx, data))
    return found
