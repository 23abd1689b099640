"""Run badges for the canvas: a node being retried ("attempt 2 of 4") and a loop's iteration.

Derived from the run's events one at a time (the live console applies each batch; a stored
run is replayed the same way). Display only: never part of the document, never undoable.

* ``step_retry {attempt, maxAttempts}`` announces attempt ``attempt`` (the one about to run):
  the node shows "attempt <attempt> of <maxAttempts>" until its step ends; a step that ends
  failed after retries keeps "failed after <n> attempts", one that succeeded drops the badge.
* ``join_wait {delivered, expected}``: a join still waiting shows "<delivered> of <expected> in"
  until it fires.
* a loop: its first step starts iteration 1; ``loop_check {iteration, matched}`` ends iteration
  ``iteration``: unmatched, iteration + 1 runs next; matched (or the last), the badge says how
  many iterations ran.
"""

from __future__ import annotations

from typing import Any, Iterable

from engine import RunEvent, spec_for

__all__ = ["RunBadges"]


class RunBadges:
    """``badges``: node id -> (text, kind) with kind "retry" or "loop"."""

    def __init__(self) -> None:
        self.badges: dict[str, tuple[str, str]] = {}
        self._attempts: dict[str, tuple[int, int]] = {}
        self._loops: set[str] = set()
        self._kinds: dict[str, str] = {}
        self._max: dict[str, Any] = {}

    def reset(self, workflow: Any = None) -> None:
        self.badges.clear()
        self._attempts.clear()
        self._loops = set()
        self._kinds = {n.id: n.type for n in workflow.nodes} if workflow is not None else {}
        self._max = {n.id: getattr(n.data, "maxIterations", None) for n in workflow.nodes} if workflow is not None else {}

    def _is_loop(self, node_id: str) -> bool:
        spec = spec_for(self._kinds.get(node_id, ""))
        return spec is not None and spec.kind == "loop"

    def apply(self, events: Iterable[RunEvent]) -> bool:
        """Take events in; True when a badge changed."""
        before = dict(self.badges)
        for ev in events:
            if getattr(ev, "path", None):
                continue  # a nested run's events: its nodes are not on this canvas
            nid, kind = ev.node_id, str(ev.type)
            extra = ev.extra or {}
            if kind == "step_retry":
                attempt, most = extra.get("attempt"), extra.get("maxAttempts")
                if isinstance(attempt, int) and isinstance(most, int):
                    self._attempts[nid] = (attempt, most)
                    self.badges[nid] = (f"attempt {attempt} of {most}", "retry")
            elif kind == "step_end":
                tried = self._attempts.pop(nid, None)
                if nid in self.badges and self.badges[nid][1] == "retry":
                    if extra.get("status") == "failed" and tried is not None:
                        self.badges[nid] = (f"failed after {tried[0]} attempts", "retry")
                    else:
                        del self.badges[nid]
            elif kind == "join_wait":
                got, want = extra.get("delivered"), extra.get("expected")
                if isinstance(got, int) and isinstance(want, int):
                    self.badges[nid] = (f"{got} of {want} in", "join")
            elif kind == "step_start":
                if nid in self.badges and self.badges[nid][1] == "join":
                    del self.badges[nid]  # the join fires
                if self._is_loop(nid) and nid not in self._loops:
                    self._loops.add(nid)
                    self.badges[nid] = ("iteration 1", "loop")
            elif kind == "loop_check":
                it = extra.get("iteration")
                if isinstance(it, int):
                    self._loops.add(nid)
                    if extra.get("matched") or it == self._max.get(nid):
                        self.badges[nid] = (f"done after {it} iteration{'s' if it != 1 else ''}", "loop")
                    else:
                        self.badges[nid] = (f"iteration {it + 1}", "loop")
        return self.badges != before
