"""The kinds' part of one run: each node's state as its kind keeps it, and the nodes holding arrivals.

docs/design.md, "Run model (runtime semantics)". The scheduler (engine/run/scheduler.py) knows
no kind; what it asks of a node's kind goes through :class:`KindStates`:

* ``states``: node id -> the state the node's kind keeps in this run (``RunContext.state``; a
  join's buffer, a loop's round, a flow step's nested run: the child-run bookkeeping), written
  to a snapshot under the kind's ``state_key`` and read back by the kind;
* ``gathering``: node id -> the spec of a gathering kind (a join) whose node holds arrivals; it
  is asked again (``release``) whenever work ends somewhere, and fires or keeps waiting;
* a node's spec as the run's steps look it up (``specs``: the run's mapping, a durable engine's
  included, else the registry).

Invariants: a node is in ``gathering`` only while its kind holds arrivals for it; nothing here
emits an event, runs a step or changes the run's status (the scheduler does, with what
:meth:`KindStates.fired` returns).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from engine.nodes import spec_for
from engine.run import snapshot as snapshot_format
from engine.run.context import BranchFrame

__all__ = ["KindStates"]


class KindStates:
    """Per-node kind state and the gathering nodes of one run (see the module docstring)."""

    __slots__ = ("states", "gathering", "_specs", "_nodes")

    def __init__(self, specs: Mapping[str, Any], nodes: dict[str, Any]) -> None:
        self.states: dict[str, Any] = {}
        self.gathering: dict[str, Any] = {}
        self._specs = specs
        self._nodes = nodes

    def spec_of(self, node: Any) -> Any:
        """The spec of ``node``'s kind (None for no node or an unknown type)."""
        if node is None:
            return None
        kind = node.type
        return self._specs.get(kind) or spec_for(kind)

    def spec_at(self, node_id: str) -> Any:
        """The spec of the kind of the node with that id (None when there is none)."""
        return self.spec_of(self._nodes.get(node_id))

    def gathers(self, node_id: str) -> bool:
        spec = self.spec_at(node_id)
        return bool(spec is not None and spec.gathers)

    def fired(self, ctx: Any, live: set[str]) -> Iterator[tuple[str, Any, BranchFrame | None]]:
        """Each node holding arrivals that fires now (``NodeSpec.release``, ``live``: where work is
        still in flight or waiting), as (node id, the value its step gets, the branch's frame);
        a node that fires no longer gathers."""
        for node_id, spec in list(self.gathering.items()):
            fired = spec.release(ctx, node_id, live)
            if fired is not None:
                del self.gathering[node_id]
                yield node_id, fired[0], fired[1]

    def cancelled(self, ctx: Any, reason: str) -> None:
        """Tell each kind holding state that the run was cancelled (a flow step's nested run is
        cancelled too)."""
        for node_id, state in list(self.states.items()):
            spec = self.spec_at(node_id)
            if spec is not None:
                spec.cancelled(ctx, node_id, state, reason)

    def waiting_prompt(self, ctx: Any, node_id: str) -> str:
        """What a run paused at ``node_id`` asks, as its kind says ("" when it says nothing)."""
        node = self._nodes.get(node_id)
        spec = self.spec_of(node)
        return spec.waiting_prompt(ctx, node) if spec is not None else ""

    # ---------------------------------------------------------------- snapshot parts
    def to_json(self) -> dict[str, Any]:
        """The kinds' states as snapshot keys (each kind's under its ``state_key``)."""
        return snapshot_format.kind_states(self.states, self._nodes)

    def read(self, snapshot: dict[str, Any], ctx: Any) -> None:
        """Take the kinds' states back from ``snapshot``, each read by its kind (``ctx``: the
        restored run's context; a flow step's nested run is restored with it)."""
        for node_id, (spec, state) in snapshot_format.read_kind_states(snapshot, self.spec_at, ctx).items():
            self.states[node_id] = state
            if spec.gathers:
                self.gathering[node_id] = spec
