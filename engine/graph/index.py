"""A workflow's graph index: nodes by id, execution and subagent links, reverse links.

The one place a workflow's adjacency is built. :meth:`GraphIndex.of` builds it once and keeps
it on the workflow; validation, the run-state reducer, re-running and the runtime ask it
rather than walking ``workflow.connections`` themselves.

Invalidation: a kept index is used again while the workflow holds the same node and link
objects in the same order (checked by identity on every :meth:`GraphIndex.of`). Adding,
removing, reordering or replacing a node or a link is therefore seen at once; changing a
node's or a link's ids or handles in place is not (nothing does: the editor's document
replaces a link to change it, and node ids never change). Node *data* is not indexed.

Handles: loading renames the legacy ``true`` handle of an if node to ``condition-0``, so
readers of the index never translate it. The views by handle name a link's handle under its
current name (:func:`engine.graph.legacy.current_handle`: the same rule, for a workflow whose
links were set in code) and keep the handle as written beside it.
"""

from __future__ import annotations

import weakref
from collections import defaultdict, deque
from collections.abc import Iterable
from functools import cached_property
from operator import is_

from engine.graph.legacy import current_handle
from engine.graph.model import Connection, Node, Workflow, gc_paused

__all__ = ["GraphIndex"]


class GraphIndex:
    """Adjacency of a workflow built once: nodes by id, execution and subagent links.

    The one place a workflow's adjacency is built; the editor (auto-layout, the canvas's
    subagent test, drag checks) uses it through ``engine.GraphIndex`` rather than walking
    ``workflow.connections`` itself.
    Built in one pass over the nodes and one over the links; ``validate`` builds one and
    reuses its normalised link keys instead of reading every pydantic link again.
    ``exec_in`` and ``exec_links_from`` are built on first use: neither a drag nor
    validation needs them.
    """

    def __init__(self, workflow: Workflow) -> None:
        with gc_paused():
            self._build(workflow)

    @classmethod
    def of(cls, workflow: Workflow) -> GraphIndex:
        """The index of ``workflow``, built once and kept on it while its nodes and links stay
        the same objects in the same order (see the module's invalidation rule)."""
        index = workflow._graph_index
        if index is not None and index.describes(workflow):
            return index
        index = cls(workflow)
        workflow._graph_index = index
        return index

    def describes(self, workflow: Workflow) -> bool:
        """Whether this index is still that of ``workflow``: the same workflow, holding the same
        node and link objects in the same order (compared by identity: O(n), no allocation
        beyond two tuples; a rebuild allocates every list of the index)."""
        if self._workflow_ref() is not workflow:
            return False
        nodes, connections = workflow.nodes, workflow.connections
        seen_nodes, seen_links = self._nodes_seen, self._connections
        return (
            len(nodes) == len(seen_nodes)
            and len(connections) == len(seen_links)
            and all(map(is_, nodes, seen_nodes))
            and all(map(is_, connections, seen_links))
        )

    # A copied or pickled workflow starts without an index (it would describe the original).
    def __copy__(self) -> None:
        return None

    def __deepcopy__(self, memo: dict) -> None:
        return None

    def __reduce__(self) -> tuple:
        return (_no_index, ())

    @property
    def workflow(self) -> Workflow:
        workflow = self._workflow_ref()
        if workflow is None:  # pragma: no cover - the index outlived its workflow
            raise ReferenceError("the workflow of this GraphIndex is gone")
        return workflow

    def _build(self, workflow: Workflow) -> None:
        # A weak reference: the index is kept on its workflow, and a cycle between the two would
        # leave every dropped workflow to the cyclic collector instead of freeing it at once.
        self._workflow_ref = weakref.ref(workflow)
        self._nodes_seen = tuple(workflow.nodes)
        self.nodes: dict[str, Node] = {}
        self.duplicate_ids: list[str] = []
        nodes = self.nodes
        for n in workflow.nodes:
            nid = n.id
            if nid in nodes:
                self.duplicate_ids.append(nid)
            else:
                nodes[nid] = n
        self.exec_out: dict[str, list[str]] = defaultdict(list)
        self.sub_children: dict[str, list[str]] = defaultdict(list)
        self.sub_parents: dict[str, list[str]] = defaultdict(list)
        self._connections = tuple(workflow.connections)  # the links the lazy views below describe
        # (source, source handle, target, target handle) of every link in file order, defaults filled in.
        self._links = [
            (c.source, c.sourceHandle or "output", c.target, c.targetHandle or "input") for c in self._connections
        ]
        self.keys: set[tuple[str, str, str, str]] = set(self._links)
        self._exec_targets: set[str] = set()
        exec_targets_add = self._exec_targets.add
        exec_out, sub_children, sub_parents = self.exec_out, self.sub_children, self.sub_parents
        for source, handle, target, _th in self._links:
            if handle == "subagent":
                sub_children[source].append(target)
                sub_parents[target].append(source)
            else:
                exec_out[source].append(target)
                exec_targets_add(target)

    @cached_property
    def exec_in(self) -> dict[str, list[str]]:
        """Sources of the execution links into each node."""
        exec_in: dict[str, list[str]] = defaultdict(list)
        for source, handle, target, _th in self._links:
            if handle != "subagent":
                exec_in[target].append(source)
        return exec_in

    @cached_property
    def exec_links_from(self) -> dict[str, list[Connection]]:
        """The execution links leaving each node."""
        links: dict[str, list[Connection]] = defaultdict(list)
        for c, (source, handle, _t, _th) in zip(self._connections, self._links):
            if handle != "subagent":
                links[source].append(c)
        return links

    @cached_property
    def exec_out_handles(self) -> dict[str, tuple[tuple[str, str, str], ...]]:
        """``(handle, handle as written, target)`` of the execution links leaving each node, in
        file order. The two differ only for a legacy handle set in code after loading (loading
        renames them: :data:`engine.graph.legacy.LEGACY_HANDLES`).

        Tuples of strings, which the cyclic GC does not track, so keeping it costs nothing.
        """
        out: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
        for source, handle, target, _th in self._links:
            if handle != "subagent":
                out[source].append((current_handle(handle), handle, target))
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def steps_out(self) -> dict[str, tuple[tuple[str, str], ...]]:
        """``(handle, target)`` of the execution links leaving each node, in file order: what a
        run follows after a step (the scheduler's adjacency)."""
        return {k: tuple((h, t) for h, _w, t in v) for k, v in self.exec_out_handles.items()}

    @cached_property
    def links_by_handle(self) -> dict[tuple[str, str], tuple[tuple[str, str, str], ...]]:
        """``(source, handle) -> ((source, handle as written, target), ...)``: the execution links
        leaving a node's output, in file order (the run-state reducer's view)."""
        out: dict[tuple[str, str], list[tuple[str, str, str]]] = defaultdict(list)
        for source, links in self.exec_out_handles.items():
            for handle, written, target in links:
                out[source, handle].append((source, written, target))
        return {k: tuple(v) for k, v in out.items()}

    @cached_property
    def links_into(self) -> dict[str, tuple[tuple[str, str, str], ...]]:
        """``target -> ((source, handle as written, target), ...)``: the execution links into each
        node, in file order."""
        into: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
        for source, handle, target, _th in self._links:
            if handle != "subagent":
                into[target].append((source, handle, target))
        return {k: tuple(v) for k, v in into.items()}

    @cached_property
    def subagent_pairs(self) -> frozenset[tuple[str, str]]:
        """``(parent, child)`` of every subagent link."""
        return frozenset((source, target) for source, handle, target, _th in self._links if handle == "subagent")

    def downstream(self, node_ids: Iterable[str]) -> set[str]:
        """The nodes reachable from ``node_ids`` along execution links (themselves included)."""
        seen = set(node_ids)
        todo = deque(seen)
        exec_out = self.exec_out
        while todo:
            for target in exec_out.get(todo.popleft(), ()):
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen

    def in_execution(self, node_id: str) -> bool:
        return bool(self.exec_out.get(node_id)) or node_id in self._exec_targets

    def sub_reaches(self, start: str, goal: str) -> bool:
        """Whether ``goal`` is reachable from ``start`` along subagent links."""
        seen = {start}
        stack = [start]
        while stack:
            cur = stack.pop()
            if cur == goal:
                return True
            for nxt in self.sub_children.get(cur, ()):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return False


def _no_index() -> None:
    return None
