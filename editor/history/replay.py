"""Node states and followed links of a stored run, computed from its log (no Qt).

Concept: the canvas shows a past run read-only. Its log (the events the store kept) is
replayed once, in order, through a small state machine per node:

* ``step_start`` → the node is ``running`` (start nodes are ``done`` at once: they
  cannot fail and log nothing else);
* ``llm_response`` → ``done``; ``llm_error`` or ``error`` on a node → ``failed``;
* ``logic_check`` with a match, or the "no condition matched" check → ``done``;
* ``wait_input`` → ``waiting``; ``approval_queued`` → ``queued``; ``input_received`` → ``done``;
* ``subagent_call_start/end/error`` (logged on the parent) → the child subagent node is
  ``running``/``done``/``failed``;
* a node that never appears is ``not_reached``.

Links followed are inferred the way the runtime follows them: when a node finishes
with an output handle (``output``; ``condition-<i>``/``false`` from the ``logic_check``
that matched; ``approve``/``reject`` from the ``input_received`` decision), each
execution connection leaving it on that handle *offers* its target; the target's next
``step_start`` takes the oldest offer, which marks that connection followed. A subagent
call marks its ``subagent`` connection followed. Links are keyed like
:meth:`engine.Connection.key` without the target handle: ``(source, sourceHandle or
"output", target)``.

Invariant: the result depends only on the workflow and the events, so replaying the
same stored run always gives the same picture. A node that started and never finished
stays ``running`` (for an ended run: it was in flight when the run stopped); read
:attr:`RunReplay.status` to tell a live run from an ended one.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from typing import Any

from engine import RunEvent, Workflow

__all__ = ["RunReplay", "NODE_STATES", "RUNNING", "DONE", "FAILED", "WAITING", "QUEUED", "NOT_REACHED"]

RUNNING, DONE, FAILED, WAITING, QUEUED, NOT_REACHED = "running", "done", "failed", "waiting", "queued", "not_reached"
NODE_STATES = (RUNNING, DONE, FAILED, WAITING, QUEUED, NOT_REACHED)

Link = tuple[str, str, str]


def _json(content: str) -> Any:
    try:
        return json.loads(content)
    except (TypeError, ValueError):
        return None


class RunReplay:
    """Final node states and followed links of a run, from its workflow and log.

    ``states``: node id → one of :data:`NODE_STATES`, for every node of the workflow.
    ``links``: the set of ``(source, sourceHandle, target)`` connections followed.
    ``visits``: node id → how often it started. ``outputs``: node id → its last
    ``llm_response`` text. ``errors``: node id → its last error message.
    ``status``: the last ``run_status`` in the log (``""`` when there is none).
    """

    def __init__(self, workflow: Workflow, events: Iterable[RunEvent]) -> None:
        self.workflow = workflow
        kinds = {n.id: n.type for n in workflow.nodes}
        self._kinds = kinds
        # Execution edges by (source, handle): the runtime's own index, built once.
        self._out: dict[tuple[str, str], list[Link]] = {}
        for c in workflow.connections:
            if c.sourceHandle == "subagent":
                continue
            handle = c.sourceHandle or "output"
            runtime_handle = "condition-0" if handle == "true" else handle
            self._out.setdefault((c.source, runtime_handle), []).append((c.source, handle, c.target))
        self._sub_links = {(c.source, c.target) for c in workflow.connections if c.sourceHandle == "subagent"}
        self.states: dict[str, str] = {nid: NOT_REACHED for nid in kinds}
        self.links: set[Link] = set()
        self.visits: dict[str, int] = {}
        self.outputs: dict[str, str] = {}
        self.errors: dict[str, str] = {}
        self.status = ""
        self._offers: dict[str, deque[Link]] = {}
        for ev in events:
            self._apply(ev)

    # ---------------------------------------------------------------- replay
    def _finish(self, node_id: str, handle: str) -> None:
        for link in self._out.get((node_id, handle), ()):
            self._offers.setdefault(link[2], deque()).append(link)

    def _set(self, node_id: str, state: str) -> None:
        if node_id in self.states:
            self.states[node_id] = state

    def _apply(self, ev: RunEvent) -> None:
        kind = str(ev.type)
        nid = ev.node_id
        if kind == "step_start":
            self.visits[nid] = self.visits.get(nid, 0) + 1
            offers = self._offers.get(nid)
            if offers:
                self.links.add(offers.popleft())
            if self._kinds.get(nid) == "start":
                self._set(nid, DONE)
                self._finish(nid, "output")
            else:
                self._set(nid, RUNNING)
        elif kind == "llm_response":
            self._set(nid, DONE)
            self.outputs[nid] = ev.content
            self._finish(nid, "output")
        elif kind in ("llm_error", "error"):
            self._set(nid, FAILED)
            self.errors[nid] = ev.content
        elif kind == "logic_check":
            extra = ev.extra or {}
            index = extra.get("conditionIndex", -1)
            if extra.get("matched") and isinstance(index, int):
                self._set(nid, DONE)
                self._finish(nid, f"condition-{index}")
            elif "conditionIndex" in extra and index is None:  # "No condition matched → Else branch"
                self._set(nid, DONE)
                self._finish(nid, "false")
        elif kind == "wait_input":
            self._set(nid, WAITING)
        elif kind == "approval_queued":
            self._set(nid, QUEUED)
        elif kind == "input_received":
            self._set(nid, DONE)
            answer = _json(ev.content)
            decision = answer.get("decision") if isinstance(answer, dict) else None
            if decision in ("approve", "reject"):
                self._finish(nid, decision)
        elif kind.startswith("subagent_call_"):
            data = _json(ev.content)
            child = data.get("subagentNodeId") if isinstance(data, dict) else None
            if not isinstance(child, str):
                return
            if kind == "subagent_call_start":
                self.visits[child] = self.visits.get(child, 0) + 1
                parent = data.get("parentNodeId") or nid
                if (parent, child) in self._sub_links:
                    self.links.add((parent, "subagent", child))
                self._set(child, RUNNING)
            elif kind == "subagent_call_end":
                self._set(child, DONE)
                self.outputs[child] = str(data.get("message", ""))
            else:
                self._set(child, FAILED)
                self.errors[child] = str(data.get("message", ""))
        elif kind == "run_status":
            self.status = ev.content

    # ---------------------------------------------------------------- queries
    def nodes_in(self, state: str) -> set[str]:
        return {nid for nid, s in self.states.items() if s == state}

    def __repr__(self) -> str:
        reached = sum(1 for s in self.states.values() if s != NOT_REACHED)
        return f"RunReplay({reached}/{len(self.states)} nodes reached, {len(self.links)} links, status={self.status!r})"
