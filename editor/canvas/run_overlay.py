"""A run on the canvas: each card's state word, the links the run followed, badges.

A card also marks the output handles the run followed (``taken``, from the reducer's
``links``): the branch an ``if`` or a ``router`` chose (a ``route_choice``), an approval's
decision, whichever port a link left from.

Display only: run state lives apart from the document and is never undoable. The words come
from the engine's one reducer (:class:`engine.RunState`): its ``states`` (one of
:data:`engine.NODE_STATES` per node an event touched), its ``links`` and each node's
:class:`engine.NodeDetails` (``error``). :func:`canvas_states` turns them into what a card
shows; nothing here reads raw events.

The canvas's words are the engine's, except two it folds into ``not_reached`` (a dimmed
card): ``cancelled`` (the run stopped before the node ended), and ``skipped`` for a node the
run never reached. A node that its step policy skipped after an error stays ``skipped`` and
its error becomes the card's tooltip, as a failed node's does.
"""

from __future__ import annotations

from typing import Any, Iterable

from engine import NODE_STATES, RunState

__all__ = ["NOT_REACHED", "CANVAS_STATES", "canvas_states", "node_errors", "RunOverlay"]

NOT_REACHED = "not_reached"
_FOLDED = ("cancelled", "skipped")  # engine words the canvas may show as not reached
#: The words a card can show: the engine's (but ``idle``, shown as no state) and ``not_reached``.
CANVAS_STATES = tuple(s for s in NODE_STATES if s not in ("idle", "cancelled")) + (NOT_REACHED,)

Link = tuple[str, str, str]


def node_errors(state: RunState) -> dict[str, str]:
    """The error of every failed node, and of every node cancelled or skipped after an error."""
    states = state.states
    return {nid: d.error for nid, d in state.details.items()
            if d.error and states.get(nid) in ("failed", *_FOLDED)}


def canvas_states(state: RunState) -> tuple[dict[str, str], dict[str, str]]:
    """``(words, tips)``: each touched node's word as a card shows it, and the error tooltips."""
    errors = node_errors(state)
    words = {nid: (NOT_REACHED if s == "cancelled" or (s == "skipped" and nid not in errors) else s)
             for nid, s in state.states.items()}
    return words, errors


class RunOverlay:
    """What the scene keeps of the run shown, for the items it has and those it makes later."""

    def __init__(self) -> None:
        self.states: dict[str, str] = {}
        self.links: set[Link] = set()
        self.tips: dict[str, str] = {}
        self.badges: dict[str, tuple[str, str]] = {}
        self.taken: dict[str, frozenset[str]] = {}  # node id -> the output handles the run followed

    def set(self, states: dict[str, str], links: Iterable[Link] | None, tips: dict[str, str] | None,
            badges: dict[str, tuple[str, str]] | None) -> None:
        self.states = dict(states)
        self.links = set(links or ())
        self.tips = dict(tips or {})
        self.badges = dict(badges or {})
        taken: dict[str, set[str]] = {}
        for source, handle, _target in self.links:
            taken.setdefault(source, set()).add("condition-0" if handle == "true" else handle)
        self.taken = {nid: frozenset(hs) for nid, hs in taken.items()}

    def clear(self) -> None:
        self.set({}, None, None, None)

    @property
    def running(self) -> bool:
        return any(s == "running" for s in self.states.values())

    def apply(self, node_id: str, item: Any) -> None:
        """Show the node's state, tooltip and badge on its card."""
        item.set_run_state(self.states.get(node_id), self.tips.get(node_id, ""))
        item.set_run_badge(*self.badges.get(node_id, ("", "")))
        item.set_taken(self.taken.get(node_id, frozenset()))

    def followed(self, key: tuple[str, str, str, str]) -> bool:
        """Whether the run followed the link ``key`` (source, handle, target, target handle)."""
        source, handle, target = key[0], key[1], key[2]
        legacy = "condition-0" if handle == "true" else handle
        return (source, handle, target) in self.links or (source, legacy, target) in self.links
