"""What reached a node along the links a run followed: ``RunState.passed_input``.

A step that logs no input of its own (a condition, an approval, a join, a loop, an HTTP
request, ...) shows what reached it: the output of the step that reached it last, looking
through conditions and approvals, which pass their input on (an approval whose reviewer
edited the output: that output); for a join, its branches' outputs as a JSON list, in link
order. :class:`Passed` reads it from the run-state reducer's parts (engine/run/state.py): the
nodes' kinds, the workflow's links into each node, the links followed and the nodes' details.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet

from engine.run.node_details import Link, NodeDetails

__all__ = ["Passed"]


class Passed:
    """What reached each node of one run (see the module docstring); made for one question."""

    __slots__ = ("kinds", "links_into", "links", "details")

    def __init__(
        self,
        kinds: Mapping[str, str],
        links_into: Mapping[str, Sequence[Link]],
        links: AbstractSet[Link],
        details: Mapping[str, NodeDetails],
    ) -> None:
        self.kinds = kinds  # node id -> its type
        self.links_into = links_into  # node id -> the workflow's links into it, in order
        self.links = links  # the links the run followed
        self.details = details

    def input_of(self, node_id: str) -> str | None:
        """What reached ``node_id`` (see the module docstring); None when unknown."""
        if self.kinds.get(node_id) == "join":
            values = [
                v for v in (self._passed_by(src, {node_id}) for src in self._followed_into(node_id)) if v is not None
            ]
            return json.dumps(values, ensure_ascii=False) if values else None
        return self._reached(node_id, {node_id})

    def _followed_into(self, node_id: str) -> list[str]:
        """The sources of the followed links into ``node_id``, in the workflow's link order."""
        links = self.links
        return list(dict.fromkeys(link[0] for link in self.links_into.get(node_id, ()) if link in links))

    def _reached(self, node_id: str, seen: set[str]) -> str | None:
        sources = [s for s in self._followed_into(node_id) if s not in seen]
        if not sources:
            return None
        if len(sources) > 1:  # a loop's entry and its body's return: the one that ended last before it started
            details = self.details
            started = details[node_id].started if node_id in details else None

            def ended(src: str) -> float:
                e = details[src].ended if src in details else None
                return -1.0 if e is None or (started is not None and e > started) else e

            sources.sort(key=ended, reverse=True)
        seen.add(node_id)
        return self._passed_by(sources[0], seen)

    def _passed_by(self, src: str, seen: set[str]) -> str | None:
        """What ``src`` passed on: its output; a condition's or an approval's own input (an approval
        whose reviewer edited the output: that output)."""
        d = self.details.get(src)
        kind = self.kinds.get(src)
        if kind == "approval":
            if d is not None and d.review and isinstance(d.review.get("output"), str):
                return d.review["output"]
        elif kind != "if" or (d is not None and d.output):
            return d.output if d is not None else None
        return (d.input if d is not None and d.input is not None else None) or self._reached(src, seen)
