"""Execution cycles of a workflow: strongly connected components and the warnings about them.

:class:`Components` finds the execution cycles among the reachable nodes (once, lazily; the
data-flow checks ask which component a node is in), :func:`check_exec_cycles` warns about a
cycle that has no way out (no choice link leaving it: the run would stop at the visit limit).
Tarjan's algorithm, iterative (a chain of thousands of nodes is deeper than the recursion limit).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from engine.graph.index import GraphIndex
from engine.graph.issues import Issue, Severity, spec_of
from engine.graph.model import source_handles

__all__ = ["Components", "check_exec_cycles"]


class Components:
    """Node -> the number of its strongly connected component along execution links, for the
    nodes :func:`_strong_components` leaves after the acyclic peel; the nodes of one cycle
    share a number. Made on first use, from the components the execution-cycle check found
    among the nodes reachable from Start (``found``, with ``reachable``) and one more pass
    over the other nodes only: a cycle lies wholly inside or wholly outside what is reachable
    (everything a reachable node links to is reachable), so the two together are the
    components of the whole graph."""

    __slots__ = ("_index", "_found", "_reachable", "_comps")

    def __init__(
        self, index: GraphIndex, found: list[list[str]] | None = None, reachable: set[str] | None = None
    ) -> None:
        self._index = index
        self._found = found
        self._reachable = reachable
        self._comps: dict[str, int] | None = None

    @property
    def comps(self) -> dict[str, int]:
        comps = self._comps
        if comps is None:
            index = self._index
            comps = self._comps = {}
            groups: Iterable[list[str]]
            if self._found is None or self._reachable is None:
                groups = _strong_components(index, index.nodes)
            else:
                reachable = self._reachable
                rest = [nid for nid in index.nodes if nid not in reachable]
                groups = self._found if not rest else (*self._found, *_strong_components(index, rest))
            for i, members in enumerate(groups):
                for member in members:
                    comps[member] = i
        return comps

    def same(self, a: str, b: str) -> bool:
        """Whether ``b`` is reachable from ``a`` and back: one strongly connected component."""
        comps = self.comps
        ca = comps.get(a)
        return ca is not None and ca == comps.get(b)


def _strong_components(index: GraphIndex, among: Iterable[str]) -> Iterator[list[str]]:
    """The strongly connected components of the execution links between the nodes ``among``,
    once the acyclic part is peeled off; roots are taken in file order, so the components and
    their members come in the same order whatever the hash seed of the process."""
    out = index.exec_out
    # Peel off the acyclic part first (Kahn): a node no remaining node links to is on no
    # cycle. On the usual acyclic flow this settles everything in one cheap pass.
    indegree = dict.fromkeys(among, 0)
    for nid in indegree:
        for nxt in out.get(nid, ()):
            if nxt in indegree:
                indegree[nxt] += 1
    ready = [nid for nid, d in indegree.items() if d == 0]
    while ready:
        nid = ready.pop()
        del indegree[nid]
        for nxt in out.get(nid, ()):
            if nxt in indegree:
                left = indegree[nxt] - 1
                indegree[nxt] = left
                if not left:
                    ready.append(nxt)
    if not indegree:
        return
    rest = indegree  # what is left: nodes on a cycle or downstream of one
    # Iterative Tarjan on what is left (networkx would need a copy of the subgraph); the
    # node being visited, its link iterator and its low link are locals, and only the
    # frames of its ancestors are on ``work``.
    # A node whose component is done gets a number above every other, so a link to it never
    # lowers a low link: that stands in for an "on the stack" set.
    finished = len(rest)
    number: dict[str, int] = {}
    stack: list[str] = []
    counter = 0
    for root in [nid for nid in index.nodes if nid in rest]:
        if root in number:
            continue
        number[root] = low = counter
        counter += 1
        stack.append(root)
        node = root
        it = iter(out.get(root, ()))
        work: list[tuple[str, Iterator[str], int]] = []
        while True:
            for nxt in it:
                seen = number.get(nxt)
                if seen is None:
                    if nxt in rest:  # descend
                        work.append((node, it, low))
                        node = nxt
                        it = iter(out.get(nxt, ()))
                        number[nxt] = low = counter
                        counter += 1
                        stack.append(nxt)
                        break
                elif seen < low:
                    low = seen
            else:  # every link of node followed
                if low == number[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        number[w] = finished
                        comp.append(w)
                        if w == node:
                            break
                    yield comp
                if not work:
                    break
                child_low = low
                node, it, low = work.pop()
                if child_low < low:
                    low = child_low


def check_exec_cycles(
    index: GraphIndex, reachable: set[str], choice_links: dict[str, list[tuple[str, str]]], add
) -> list[list[str]]:
    """Warn about execution cycles (reachable from start) that no link leaves. Returns the
    components found (the data-flow checks reuse them)."""
    found = []
    for comp in _strong_components(index, reachable):
        found.append(comp)
        _maybe_warn_cycle(comp, index, choice_links, add)
    return found


def _maybe_warn_cycle(comp: list[str], index: GraphIndex, choice_links: dict[str, list[tuple[str, str]]], add) -> None:
    """Warn when a loop can never end by itself.

    An agent follows all of its links, so an agent's link out of the loop does not end it
    (the loop goes on beside the branch that left). Only a choice ends a loop: an if or
    approval in it with some branch (handle) that does not lead back into the loop, either
    because it leads elsewhere or because nothing is linked to it (the branch just ends).
    """
    if len(comp) == 1 and comp[0] not in index.exec_out.get(comp[0], ()):
        return  # not a cycle
    members = set(comp)
    for nid in comp:
        node = index.nodes[nid]
        spec = spec_of(node)
        if spec is None or not spec.chooses:
            continue
        loops_back: set[str] = set()
        for handle, target in choice_links.get(nid, ()):
            if target in members:
                loops_back.add(handle)
        if any(h not in loops_back for h in source_handles(node)):
            return
    names = " → ".join(index.nodes[n].title for n in comp[:6]) + (" …" if len(comp) > 6 else "")
    add(
        Issue(
            "execution_cycle_no_exit",
            Severity.WARNING,
            tuple(sorted(comp)),
            f"These steps form a loop with no way out: {names}. The run stops at the visit limit.",
        )
    )
