"""Run badges for the canvas, read from the run-state reducer (``engine.RunState``): a node
being retried ("attempt 2 of 4"), a loop's iteration ("item 3 of 12" over a list), a join still
waiting ("1 of 3 in").

Display only: never part of the document, never undoable. ``details[n].attempt`` /
``max_attempts`` (set by ``step_retry``, cleared by the next ``step_start``), ``iteration`` (a
loop's current iteration), ``total`` (how many items a loop walking a list has) and
``delivered`` / ``expected`` (a join's arrivals) are the reducer's; this module only words them.
"""

from __future__ import annotations

from typing import Any

__all__ = ["run_badges"]

# A join in one of these states waits for nothing: done, reused from a recorded run ("2 of 3
# in" stayed on a join taken from the cache), failed, or never fired before the run ended.
_SETTLED = frozenset({"done", "failed", "cached", "skipped", "cancelled"})


def run_badges(state: Any) -> dict[str, tuple[str, str]]:
    """node id -> (text, kind) with kind "retry", "loop" or "join"."""
    out: dict[str, tuple[str, str]] = {}
    states = state.states
    for nid, d in state.details.items():
        now = states.get(nid)
        attempt, most = getattr(d, "attempt", 0), getattr(d, "max_attempts", 0)
        if attempt and most:
            if now in ("retrying", "running"):
                out[nid] = (f"attempt {attempt} of {most}", "retry")
            elif now == "failed":
                out[nid] = (f"failed after {attempt} attempts", "retry")
            continue
        # only a loop has an iteration, only a join expects arrivals (the reducer's fields say which)
        iteration, total = getattr(d, "iteration", 0), getattr(d, "total", 0)
        if iteration:  # a loop over a list knows how many items it has: "item 3 of 12"
            out[nid] = (f"item {iteration} of {total}" if total else f"iteration {iteration}", "loop")
        expected = getattr(d, "expected", 0)
        if expected and now not in _SETTLED:
            out[nid] = (f"{getattr(d, 'delivered', 0)} of {expected} in", "join")
    return out
