"""What the run-state reducer (engine/run/state.py) keeps per node: the state words a node can be
in (:data:`NODE_STATES`), a followed link (:data:`Link`) and a node's details (:class:`NodeDetails`).

The reducer writes these as events come; every view of a run reads them (the console, the
canvas, the run history, the CLI's printer, the exports). Importable from ``engine.run.state``
as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "NodeDetails",
    "NODE_STATES",
    "Link",
    "count_usage",
    "IDLE",
    "RUNNING",
    "DONE",
    "FAILED",
    "WAITING",
    "QUEUED",
    "CANCELLED",
    "SKIPPED",
    "RETRYING",
    "CACHED",
]

IDLE, RUNNING, DONE, FAILED, WAITING, QUEUED, CANCELLED, SKIPPED, RETRYING, CACHED = (
    "idle",
    "running",
    "done",
    "failed",
    "waiting",
    "queued",
    "cancelled",
    "skipped",
    "retrying",
    "cached",
)
# retrying: a working node between attempts (``details[n].attempt`` of ``.max_attempts``)
# cached: a run from a node reused the node's recorded output (``cache_hit``); not run again.
NODE_STATES = (IDLE, RUNNING, DONE, FAILED, WAITING, QUEUED, CANCELLED, SKIPPED, RETRYING, CACHED)

Link = tuple[str, str, str]  # (source, sourceHandle as written, target)


@dataclass(slots=True)
class NodeDetails:
    node_id: str
    input: str | None = None
    output: str | None = None
    started: float | None = None
    ended: float | None = None
    usage: dict[str, int] | None = None
    #: The model that answered its last call (its ``llm_response``'s ``model``), when the provider said.
    model: str | None = None
    #: Every token its calls used in this run: each of its responses (a node in a loop answers
    #: once an iteration) and each call made to it as a subagent. What totals and costs count.
    total_usage: dict[str, int] | None = None
    error: str | None = None
    visits: int = 0
    cached_from: str | None = None  # the run whose recorded output was reused (cache_hit)
    pinned: bool = False  # the node's pinned output flowed on (step_pinned)
    # An approval whose reviewer edited the output: {decision, note, output, original}
    review: dict[str, Any] | None = None
    #: Step policies: the attempt running now (2 after the first ``step_retry``) of how many; 0: no retry.
    attempt: int = 0
    max_attempts: int = 0
    #: The step's last ``step_end``: ``done``, ``skipped`` or ``failed`` (None before one).
    outcome: str | None = None
    #: A loop: the iteration its body is on (from 1); a join: arrivals so far and expected.
    iteration: int = 0
    #: A loop walking a list (``over``): how many items it has (``loop_check``'s ``total``); 0: not known.
    total: int = 0
    delivered: int = 0
    expected: int = 0

    @property
    def duration(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return max(0.0, self.ended - self.started)

    @property
    def tokens(self) -> int | None:
        """Total tokens the node's last response reported (None when it reported none)."""
        if not self.usage:
            return None
        total = self.usage.get("total_tokens")
        if isinstance(total, int):
            return total
        return sum(v for k, v in self.usage.items() if isinstance(v, int) and k.endswith("_tokens")) or None

    def to_dict(self) -> dict[str, Any]:
        return {
            "nodeId": self.node_id,
            "input": self.input,
            "output": self.output,
            "started": self.started,
            "ended": self.ended,
            "duration": self.duration,
            "usage": self.usage,
            "totalUsage": self.total_usage,
            "model": self.model,
            "error": self.error,
            "visits": self.visits,
            "attempt": self.attempt,
            "maxAttempts": self.max_attempts,
            "outcome": self.outcome,
            "iteration": self.iteration,
            "cachedFrom": self.cached_from,
            "pinned": self.pinned,
            "review": self.review,
        }


def count_usage(d: NodeDetails, usage: dict[str, Any] | None) -> None:
    """Add a response's token counts to the node's total for the run."""
    if not usage:
        return
    total = d.total_usage = dict(d.total_usage or {})
    for k, v in usage.items():
        if isinstance(v, int) and not isinstance(v, bool) and k.endswith("_tokens"):
            total[k] = total.get(k, 0) + v
