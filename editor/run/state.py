"""Run state per node, derived from a run's events only (no Qt, no runtime internals).

The same derivation serves a live run (fed by :class:`editor.run.bridge.RunBridge`) and a
stored run being replayed, so the canvas and the inspector show the same thing in both.

Invariants
* ``states`` maps a node id to one of :data:`NODE_STATES`; a node that no event has
  touched has no entry while the run is live. When the run ends (completed, failed,
  cancelled), every node never reached becomes ``skipped`` and every node still
  ``running`` becomes ``cancelled`` (run cancelled) or ``failed`` (run failed).
* A link ``(source, sourceHandle, target)`` is *followed* when its source produced
  output on that handle and its target then started. Links deferred while the run was
  paused count only once their target really starts. Handles are reported as the
  workflow model has them (a missing handle is ``"output"``), so the canvas can match
  them to its connections.
* ``details[node_id]`` holds what the inspector's run tab shows: the last input, output,
  start/end times, duration, token usage, error and visit count.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable

from engine import SYSTEM_NODE, EventType, RunEvent, RunStatus, Workflow

__all__ = ["NODE_STATES", "NodeDetails", "RunStateTracker", "Link"]

NODE_STATES = ("running", "done", "failed", "waiting", "queued", "skipped", "cancelled")

Link = tuple[str, str, str]  # (source, sourceHandle, target)


@dataclass(slots=True)
class NodeDetails:
    node_id: str
    input: str | None = None
    output: str | None = None
    started: float | None = None
    ended: float | None = None
    usage: dict[str, int] | None = None
    error: str | None = None
    visits: int = 0

    @property
    def duration(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return max(0.0, self.ended - self.started)

    def to_dict(self) -> dict[str, Any]:
        return {"nodeId": self.node_id, "input": self.input, "output": self.output, "started": self.started,
                "ended": self.ended, "duration": self.duration, "usage": self.usage, "error": self.error,
                "visits": self.visits}


@dataclass
class RunStateTracker:
    """Feed it events in order; read ``states``, ``links``, ``details``, ``status``."""

    workflow: Workflow | None = None
    initial_input: str | None = None
    states: dict[str, str] = field(default_factory=dict)
    links: set[Link] = field(default_factory=set)
    details: dict[str, NodeDetails] = field(default_factory=dict)
    status: str = RunStatus.PENDING
    final_output: str | None = None
    error: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    # set by feed(): whether states/links changed since the caller last cleared them
    states_dirty: bool = False
    links_dirty: bool = False

    def __post_init__(self) -> None:
        self._types: dict[str, str] = {}
        # source -> [(normalised handle, handle as written, target)]
        self._out: dict[str, list[tuple[str, str, str]]] = {}
        self._offered: dict[str, set[Link]] = {}  # target -> links whose source produced output for it
        self._sub_links: set[tuple[str, str]] = set()  # (parent, subagent) of every subagent link
        if self.workflow is not None:
            self._index(self.workflow)

    def _index(self, workflow: Workflow) -> None:
        self._types = {n.id: n.type for n in workflow.nodes}
        out: dict[str, list[tuple[str, str, str]]] = {}
        self._sub_links = {(c.source, c.target) for c in workflow.connections if c.sourceHandle == "subagent"}
        for c in workflow.connections:
            if c.sourceHandle == "subagent":
                continue
            written = c.sourceHandle or "output"
            norm = "condition-0" if written == "true" else written
            out.setdefault(c.source, []).append((norm, written, c.target))
        self._out = out

    def reset(self, workflow: Workflow | None, initial_input: str | None = None) -> None:
        self.workflow = workflow
        self.initial_input = initial_input
        self.states.clear()
        self.links.clear()
        self.details.clear()
        self._offered = {}
        self.status = RunStatus.PENDING
        self.final_output = self.error = None
        self.started_at = self.ended_at = None
        self._types, self._out, self._sub_links = {}, {}, set()
        if workflow is not None:
            self._index(workflow)
        self.states_dirty = self.links_dirty = True

    # ------------------------------------------------------------------ feeding
    def feed_all(self, events: Iterable[RunEvent]) -> None:
        for ev in events:
            self.feed(ev)

    def _set(self, node_id: str, state: str) -> None:
        if self.states.get(node_id) != state:
            self.states[node_id] = state
            self.states_dirty = True

    def _detail(self, node_id: str) -> NodeDetails:
        d = self.details.get(node_id)
        if d is None:
            d = self.details[node_id] = NodeDetails(node_id)
        return d

    def _produced(self, node_id: str, handle: str) -> None:
        for norm, written, target in self._out.get(node_id, ()):
            if norm == handle:
                self._offered.setdefault(target, set()).add((node_id, written, target))

    def feed(self, ev: RunEvent) -> None:
        t = ev.type
        nid = ev.node_id
        if t == EventType.LLM_DELTA:
            return  # the hot path of a stream: nothing changes state
        if t == EventType.RUN_STATUS:
            self._on_status(ev)
            return
        if t == EventType.STEP_START:
            offered = self._offered.pop(nid, None)
            if offered:
                self.links |= offered
                self.links_dirty = True
            d = self._detail(nid)
            d.visits += 1
            d.started, d.ended, d.error = ev.timestamp, None, None
            kind = self._types.get(nid)
            if kind == "start":
                out = self.initial_input
                if out is None and self.workflow is not None:
                    node = self.workflow.node(nid)
                    out = getattr(node.data, "initialInput", "") if node is not None else ""
                d.output, d.ended = out or "", ev.timestamp
                self._set(nid, "done")
                self._produced(nid, "output")
            else:
                self._set(nid, "running")
            return
        if t == EventType.START_PROMPT:
            self._detail(nid).input = ev.content
            return
        if t == EventType.LLM_RESPONSE:
            d = self._detail(nid)
            d.output, d.ended = ev.content, ev.timestamp
            usage = (ev.extra or {}).get("usage")
            d.usage = usage if isinstance(usage, dict) else None
            self.final_output = ev.content
            self._set(nid, "done")
            self._produced(nid, "output")
            return
        if t in (EventType.LLM_ERROR, EventType.ERROR):
            if nid != SYSTEM_NODE:
                d = self._detail(nid)
                if t == EventType.LLM_ERROR or not d.error:  # the model's own message, not the run's summary
                    d.error = ev.content
                d.ended = d.ended or ev.timestamp
                self._set(nid, "failed")
            return
        if t == EventType.LOGIC_CHECK:
            extra = ev.extra or {}
            if "matched" in extra:
                matched, index = bool(extra.get("matched")), extra.get("conditionIndex")
            else:  # an AgentFlow log without Flowdesk's extra fields: read the text
                matched = "→ matched" in ev.content or "-> matched" in ev.content
                index = _condition_index(ev.content)
                if "Else" in ev.content or "No condition" in ev.content:
                    index = None
            d = self._detail(nid)
            if matched or index is None:
                handle = f"condition-{index}" if matched and index is not None else "false"
                d.output, d.ended = handle, ev.timestamp
                self._set(nid, "done")
                self._produced(nid, handle)
            return
        if t == EventType.WAIT_INPUT:
            self._set(nid, "waiting")
            return
        if t == EventType.APPROVAL_QUEUED:
            self._set(nid, "queued")
            return
        if t == EventType.INPUT_RECEIVED:
            decision = ev.json_content()
            word = decision.get("decision") if isinstance(decision, dict) else None
            d = self._detail(nid)
            d.output, d.ended = ev.content, ev.timestamp
            self._set(nid, "done")
            if word in ("approve", "reject"):
                self._produced(nid, word)
            return
        if t in (EventType.SUBAGENT_CALL_START, EventType.SUBAGENT_CALL_END, EventType.SUBAGENT_CALL_ERROR):
            payload = ev.json_content()
            if not isinstance(payload, dict):
                return
            child = payload.get("subagentNodeId")
            if not isinstance(child, str):
                return
            d = self._detail(child)
            message = payload.get("message")
            message = message if isinstance(message, str) else json.dumps(message)
            if t == EventType.SUBAGENT_CALL_START:
                # the subagent link was followed (as the stored run's replay shows it)
                parent = payload.get("parentNodeId") or ev.node_id
                if (parent, child) in self._sub_links and (parent, "subagent", child) not in self.links:
                    self.links.add((parent, "subagent", child))
                    self.links_dirty = True
                d.visits += 1
                d.started, d.ended, d.input, d.error = ev.timestamp, None, message, None
                self._set(child, "running")
            elif t == EventType.SUBAGENT_CALL_END:
                d.output, d.ended = message, ev.timestamp
                self._set(child, "done")
            else:
                d.error, d.ended = message, ev.timestamp
                self._set(child, "failed")

    def _on_status(self, ev: RunEvent) -> None:
        try:
            status = RunStatus(ev.content)
        except ValueError:
            return
        self.status = status
        if status == RunStatus.RUNNING and self.started_at is None:
            self.started_at = ev.timestamp
        if not status.is_final:
            return
        self.ended_at = ev.timestamp
        detail = (ev.extra or {}).get("detail")
        if status != RunStatus.COMPLETED:
            self.error = detail if isinstance(detail, str) else self.error
        interrupted = "cancelled" if status == RunStatus.CANCELLED else "failed"
        for nid, state in list(self.states.items()):
            if state == "running":
                self._set(nid, interrupted)
                d = self._detail(nid)
                d.error = d.error or ("Cancelled." if interrupted == "cancelled" else "Not finished.")
                d.ended = d.ended or ev.timestamp
            elif state in ("waiting", "queued"):
                self._set(nid, interrupted if status == RunStatus.CANCELLED else "skipped")
        for nid in self._types:
            if nid not in self.states:
                self._set(nid, "skipped")

    # ------------------------------------------------------------------ reading
    def node_details(self, node_id: str) -> dict[str, Any]:
        d = self.details.get(node_id)
        out = (d or NodeDetails(node_id)).to_dict()
        out["state"] = self.states.get(node_id)
        return out


def _condition_index(text: str) -> int | None:
    # "Condition 2: contains 'x' → matched" -> 1
    if text.startswith("Condition "):
        num = text[len("Condition "):].split(":", 1)[0]
        if num.isdigit():
            return int(num) - 1
    return None
