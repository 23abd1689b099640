"""The inbox: every run waiting for a decision, in one list, oldest first, and answers to them.

docs/design.md, "Serving, inbox and schedules". A run waits here when it is paused at an
approval (or a flow step whose nested run is): in the local run store (any process's runs:
``flowdesk run``, the desktop, ``flowdesk serve``) or on a Temporal server
(:func:`temporal_items`, when one is configured). Each is an :class:`InboxItem`; ``flowdesk
inbox --json`` prints ``[item.to_json()]`` (``{runId, flow, nodeId, prompt, waitingSince,
ageS, where}``, plus ``options``, ``deadline``, ``onTimeout`` and ``flowId`` when there are).

Approvals that time out: a stored paused run whose deadline has passed takes its
``onTimeout`` decision when it is listed (:func:`expire_overdue`), unless the process that owns
it is alive (it waits for the deadline itself, as ``flowdesk run`` and the desktop do).
:func:`answer_stored` answers a stored run from any process: it is claimed in the store (so
two answers cannot both win), restored from its snapshot, resumed and recorded until it
pauses again or ends, as ``flowdesk resume`` does.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from engine.errors import FlowdeskError
from engine.llm.registry import make_resolver
from engine.nodes.approval import normalise_decision
from engine.run.events import RunStatus, format_timestamp, parse_timestamp
from engine.run.scheduler import Run
from engine.store import RunRecorder, RunStore, StoreError
from engine.temporal.remote import on_temporal_server

__all__ = [
    "InboxItem",
    "local_items",
    "temporal_items",
    "inbox_items",
    "expire_overdue",
    "answer_stored",
    "stored_resolver",
]

log = logging.getLogger(__name__)

#: How many paused runs of the store are looked at, at most.
LIMIT = 1000


@dataclass(slots=True)
class InboxItem:
    """One run waiting for a decision."""

    run_id: str
    flow: str  # the workflow's name
    node_id: str
    prompt: str
    waiting_since: float  # epoch seconds
    where: str = "local"  # "local" | "temporal"
    options: list[str] = field(default_factory=list)  # decisions besides approve/reject
    deadline: float | None = None  # when it takes on_timeout
    on_timeout: str | None = None
    flow_id: str | None = None  # the library id of the workflow, when it has one
    server: str | None = None  # the Temporal server (HOST:PORT) of a run there

    def age(self, now: float | None = None) -> float:
        return max(0.0, (time.time() if now is None else now) - self.waiting_since)

    def to_json(self, now: float | None = None) -> dict[str, Any]:
        out: dict[str, Any] = {
            "runId": self.run_id,
            "flow": self.flow,
            "nodeId": self.node_id,
            "prompt": self.prompt,
            "waitingSince": format_timestamp(self.waiting_since),
            "ageS": round(self.age(now), 1),
            "where": self.where,
        }
        if self.options:
            out["options"] = list(self.options)
        if self.deadline is not None:
            out["deadline"] = format_timestamp(self.deadline)
            out["onTimeout"] = self.on_timeout
        if self.flow_id:
            out["flowId"] = self.flow_id
        if self.server:
            out["server"] = self.server
        return out


# ---------------------------------------------------------------------------------- listing
def local_items(store: RunStore) -> list[InboxItem]:
    """The runs of the store paused with a saved state, oldest wait first."""
    out = []
    for info in store.list_runs(status="paused", limit=LIMIT):
        try:
            snap = store.snapshot_of(info.id)
        except (StoreError, ValueError):
            continue
        if not snap:
            continue  # paused, but nothing can resume it
        pending: dict[str, Any] = snap["pending"] if isinstance(snap.get("pending"), dict) else {}
        node_id = str(pending.get("nodeId") or info.current_node or "")
        asked = store.last_event_of(info.id, "wait_input")
        extra = asked.extra if asked is not None else {}
        since = pending.get("since")
        if not isinstance(since, (int, float)):
            since = asked.timestamp if asked is not None else info.started_at
        deadline = pending.get("deadline")
        wf = snap.get("workflow") if isinstance(snap.get("workflow"), dict) else None
        out.append(
            InboxItem(
                run_id=info.id,
                flow=info.workflow_name,
                node_id=node_id,
                prompt=asked.content if asked is not None else "",
                waiting_since=float(since),
                options=[str(o) for o in (extra or {}).get("options") or ()],
                deadline=float(deadline) if isinstance(deadline, (int, float)) else None,
                on_timeout=pending.get("onTimeout") if isinstance(deadline, (int, float)) else None,
                flow_id=_flow_id(store, info.id, wf),
            )
        )
    out.sort(key=lambda i: i.waiting_since)
    return out


def _flow_id(store: RunStore, run_id: str, wf: dict[str, Any] | None) -> str | None:
    if wf is not None:
        return wf.get("id") if isinstance(wf.get("id"), str) else None
    try:
        return getattr(store.workflow_of(run_id), "id", None) or None
    except (StoreError, ValueError, FlowdeskError):
        return None


async def temporal_items(address: str, namespace: str = "default") -> list[InboxItem]:
    """The runs paused on a Temporal server, oldest wait first. Raises ``TemporalUnavailable``
    when the extra is missing or the server cannot be reached."""
    from engine.temporal.client import paused_runs  # (the temporal extra)

    # On the process's Temporal thread, with its one client per server: asked from the desktop's
    # loop, a client made here would have the SDK's threads call back into the window's loop.
    rows = await on_temporal_server(address, paused_runs, namespace)
    out = []
    for row in rows:
        since = row.get("waitingSince")
        out.append(
            InboxItem(
                run_id=row["id"],
                flow=row.get("workflowName") or "",
                node_id=row.get("pending") or "",
                prompt=row.get("prompt") or "",
                waiting_since=parse_timestamp(since) if isinstance(since, str) else float(row["startedAt"]),
                where="temporal",
                options=list(row.get("options") or ()),
                deadline=parse_timestamp(row["deadline"]) if isinstance(row.get("deadline"), str) else None,
                on_timeout=row.get("onTimeout"),
                server=address,
            )
        )
    out.sort(key=lambda i: i.waiting_since)
    return out


async def inbox_items(
    store: RunStore | None,
    *,
    temporal: str | None = None,
    namespace: str = "default",
    on_problem: Callable[[str], None] | None = None,
) -> list[InboxItem]:
    """Every waiting run, local and (when ``temporal`` names a server) on Temporal, oldest first;
    a Temporal server that cannot be reached is reported to ``on_problem`` and left out."""
    items = local_items(store) if store is not None else []
    if temporal:
        try:
            items += await temporal_items(temporal, namespace)
        except FlowdeskError as err:
            if on_problem is not None:
                on_problem(str(err))
    items.sort(key=lambda i: i.waiting_since)
    return items


# ---------------------------------------------------------------------------------- answering
def stored_resolver(snapshot: dict[str, Any] | None, resolver: Any = None) -> Any:
    """The provider resolver a stored run continues with: ``resolver``, else the one its run
    started with (the snapshot's ``meta``: provider, model, base URL)."""
    if resolver is not None:
        return resolver
    meta = (snapshot or {}).get("meta") or {}
    return make_resolver(meta.get("provider"), model=meta.get("model"), base_url=meta.get("baseUrl"))


async def answer_stored(
    store: RunStore,
    run_id: str,
    decision: Any,
    note: str = "",
    *,
    output: Any = None,
    resolver: Any = None,
    timed_out: bool = False,
    on_run: Callable[[Run], None] | None = None,
) -> RunStatus:
    """Answer the stored paused run ``run_id`` (claimed in the store first) and continue it here,
    recorded, until it pauses again or ends. ``timed_out``: take its ``onTimeout`` decision
    (``decision`` unused). ``on_run``: called with the restored run before it goes on (to follow
    its events). Raises :class:`StoreError` (not paused any more, claimed by another process)
    and ``ValueError`` (a decision the approval does not take; the run stays paused)."""
    snap = store.snapshot_of(run_id)
    if snap is None:
        raise StoreError(f"Run {run_id} has no saved state; it cannot be resumed.")
    workflow = store.workflow_of(run_id)
    run = Run.restore(snap, stored_resolver(snap, resolver), workflow=workflow, check=False)
    if not timed_out and not run.overdue():  # a decision it does not take is refused before the claim
        normalise_decision(decision, note, options=run.decisions())
    store.claim_for_resume(run_id)
    recorder = RunRecorder(store, run, new=False)
    try:
        if on_run is not None:
            on_run(run)
        if timed_out or run.overdue():
            status = await run.expire()
        else:
            status = await run.resume(decision, note, output=output)
        recorder.settled()
    finally:
        recorder.close()
    return status


async def expire_overdue(
    store: RunStore,
    *,
    live: Iterable[str] = (),
    resolver: Any = None,
    on_expired: Callable[[str, RunStatus], None] | None = None,
) -> list[str]:
    """Paused runs of the store whose approval's deadline has passed take their ``onTimeout``
    decision now and go on (recorded) until they pause again or end; returns their ids.
    Runs whose owning process is alive are left to it, as are ``live`` ones (held by this
    process, which times them out itself)."""
    at = time.time()
    done = []
    skip = set(live)
    for item in local_items(store):
        if item.deadline is None or item.deadline > at or item.run_id in skip:
            continue
        if store.owner_alive(item.run_id):
            continue
        try:
            status = await answer_stored(store, item.run_id, None, timed_out=True, resolver=resolver)
        except (StoreError, FlowdeskError, ValueError) as err:  # claimed meanwhile, a provider gone
            log.info("run %s did not time out here: %s", item.run_id, err)
            continue
        done.append(item.run_id)
        if on_expired is not None:
            on_expired(item.run_id, status)
    return done
