"""A run's timeline (Gantt view): one span per node execution, derived from its events (no Qt).

:class:`Timeline` is fed events in order (live, a batch at a time, or a stored log at once)
and keeps :class:`Span` rows: node id, start, end (None while it runs), the state it ended
in (the reducer's words: done, failed, cached, waiting, cancelled...), and the time it waited
for a person (an approval's ``wait_input`` → ``input_received``). A node that runs again (a
loop, a retry) gets a row per execution, so retries and concurrency show as they happened.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from engine.graph.model import Workflow
from engine.run.events import SYSTEM_NODE, EventType, RunEvent
from engine.run.state import _is_entry

__all__ = ["Span", "Timeline"]

_END_DONE = {
    EventType.LLM_RESPONSE.value,
    EventType.NODE_OUTPUT.value,
    EventType.LOGIC_CHECK.value,
    EventType.INPUT_RECEIVED.value,
    EventType.STEP_PINNED.value,
}
_END_FAILED = {EventType.LLM_ERROR.value, EventType.ERROR.value}


@dataclass(slots=True)
class Span:
    node_id: str
    start: float
    end: float | None = None
    state: str = "running"
    wait_start: float | None = None  # when it began waiting for a decision
    wait_end: float | None = None
    visit: int = 1

    @property
    def duration(self) -> float | None:
        return None if self.end is None else max(0.0, self.end - self.start)


class Timeline:
    """Spans of node executions, in start order; ``t0``/``t1``: the run's first and last event time."""

    def __init__(self, workflow: Workflow | None = None) -> None:
        self.clear(workflow)

    def clear(self, workflow: Workflow | None = None) -> None:
        """Forget every span (and take ``workflow``'s entry nodes)."""
        self.workflow = workflow
        # entry nodes (the start node) log nothing after step_start: they are done at once
        self._entries = {n.id for n in workflow.nodes if _is_entry(n.type)} if workflow is not None else set()
        self.spans: list[Span] = []
        self._open: dict[str, Span] = {}
        self._visits: dict[str, int] = {}
        self.t0: float | None = None
        self.t1: float | None = None
        self.final: bool = False

    def add_events(self, events: Iterable[RunEvent]) -> None:
        for ev in events:
            self.apply(ev)

    def apply(self, ev: RunEvent) -> None:
        t, nid, ts = ev.type, ev.node_id, ev.timestamp
        if t == EventType.LLM_DELTA.value or ev.path:
            return
        if self.t0 is None:
            self.t0 = ts
        self.t1 = ts if self.t1 is None else max(self.t1, ts)
        if t == EventType.STEP_START.value:
            n = self._visits[nid] = self._visits.get(nid, 0) + 1
            started = Span(nid, ts, visit=n)
            self.spans.append(started)
            if nid in self._entries:
                started.end, started.state = ts, "done"
            else:
                self._open[nid] = started
            return
        if t == EventType.RUN_STATUS.value:
            if ev.content in ("completed", "failed", "cancelled"):
                self.final = True
                for open_span in self._open.values():
                    if open_span.end is None:
                        open_span.end = ts
                        open_span.state = "cancelled" if ev.content == "cancelled" else "failed"
                    if open_span.wait_start is not None and open_span.wait_end is None:
                        open_span.wait_end = ts
                self._open.clear()
            return
        span = self._open.get(nid)
        if span is None and t == EventType.CACHE_HIT.value and nid in self._entries:
            last = next((s for s in reversed(self.spans) if s.node_id == nid), None)
            if last is not None:  # an entry node closes at its step_start: reused, it is from cache
                last.state = "cached"
            return
        if span is None or nid == SYSTEM_NODE:
            return
        if t == EventType.WAIT_INPUT.value or t == EventType.APPROVAL_QUEUED.value:
            span.state = "waiting"
            if span.wait_start is None:
                span.wait_start = ts
        elif t == EventType.CACHE_HIT.value:
            span.end, span.state = ts, "cached"
            del self._open[nid]
        elif t in _END_DONE:
            if span.wait_start is not None:
                span.wait_end = ts
            span.end, span.state = ts, "done"
            del self._open[nid]
        elif t in _END_FAILED:
            span.end, span.state = ts, "failed"
            del self._open[nid]
