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

import json
import math
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from engine import NODE_STATES, RunState

__all__ = [
    "NOT_REACHED",
    "CANVAS_STATES",
    "canvas_states",
    "node_errors",
    "output_previews",
    "RunOverlay",
    "PREVIEW_LINES",
    "preview_text",
]

PREVIEW_LINES = 3  # an output's first lines shown under its card
_PREVIEW_CHARS = 400  # at most this much of an output is read for them (outputs can be megabytes)
_JSON_PREVIEW_CHARS = 20_000  # a JSON object up to this long is shown as its fields

NOT_REACHED = "not_reached"
_FOLDED = ("cancelled", "skipped")  # engine words the canvas may show as not reached
#: The words a card can show: the engine's (but ``idle``, shown as no state) and ``not_reached``.
CANVAS_STATES = tuple(s for s in NODE_STATES if s not in ("idle", "cancelled")) + (NOT_REACHED,)

Link = tuple[str, str, str]


def node_errors(state: RunState) -> dict[str, str]:
    """The error of every failed node, and of every node cancelled or skipped after an error."""
    states = state.states
    return {nid: d.error for nid, d in state.details.items() if d.error and states.get(nid) in ("failed", *_FOLDED)}


def canvas_states(state: RunState) -> tuple[dict[str, str], dict[str, str]]:
    """``(words, tips)``: each touched node's word as a card shows it, and the error tooltips."""
    errors = node_errors(state)
    words = {
        nid: (NOT_REACHED if s == "cancelled" or (s == "skipped" and nid not in errors) else s)
        for nid, s in state.states.items()
    }
    return words, errors


def _duration(seconds: float) -> str:
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def output_previews(state: RunState) -> dict[str, tuple[str, str]]:
    """node id -> (stats, first lines): each node that ended a step, its duration and tokens
    ("1.2 s · 340 tokens") and its last output's first :data:`PREVIEW_LINES` lines."""
    out: dict[str, tuple[str, str]] = {}
    for nid, d in state.details.items():
        duration, tokens, output = d.duration, d.tokens, d.output
        if duration is None and output is None:
            continue
        parts = []
        if duration is not None:
            parts.append(_duration(duration))
        if tokens:
            parts.append(f"{tokens:,} tokens")
        out[nid] = (" · ".join(parts), preview_text(str(output)) if output is not None else "")
    return out


@lru_cache(maxsize=4096)
def preview_text(output: str) -> str:
    """An output's first :data:`PREVIEW_LINES` lines. A JSON object (a structured answer) is shown
    as its fields, ``name: value`` a line, rather than as one line of braces. Cached: the same
    outputs are previewed again at every refresh of a run."""
    if output.startswith("{") and len(output) <= _JSON_PREVIEW_CHARS:
        try:
            value = json.loads(output)
        except ValueError:
            value = None
        if isinstance(value, dict) and value:
            return "\n".join(
                f"{k}: {v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}"[:_PREVIEW_CHARS]
                for k, v in list(value.items())[:PREVIEW_LINES]
            )
    head = output[:_PREVIEW_CHARS]
    lines = [line.rstrip() for line in head.splitlines() if line.strip()]
    return "\n".join(lines[:PREVIEW_LINES])


class RunOverlay:
    """What the scene keeps of the run shown, for the items it has and those it makes later."""

    def __init__(self) -> None:
        self.states: dict[str, str] = {}
        self.links: set[Link] = set()
        self.tips: dict[str, str] = {}
        self.badges: dict[str, tuple[str, str]] = {}
        self.taken: dict[str, frozenset[str]] = {}  # node id -> the output handles the run followed
        #: node id -> (duration and tokens, the last output's first lines): see output_previews
        self.previews: dict[str, tuple[str, str]] = {}
        self.show_outputs = True  # the outputs' lines under the cards (the View menu's toggle)
        self.pulse_phase = 0.0  # the running cards' pulse (see pulse)

    def set(
        self,
        states: dict[str, str],
        links: Iterable[Link] | None,
        tips: dict[str, str] | None,
        badges: dict[str, tuple[str, str]] | None,
        previews: dict[str, tuple[str, str]] | None = None,
    ) -> None:
        self.states = dict(states)
        self.links = set(links or ())
        self.tips = dict(tips or {})
        self.badges = dict(badges or {})
        taken: dict[str, set[str]] = {}
        for source, handle, _target in self.links:
            taken.setdefault(source, set()).add(handle)  # (loading named an if's legacy ``true`` condition-0)
        self.taken = {nid: frozenset(hs) for nid, hs in taken.items()}
        self.previews = dict(previews or {})

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
        stats, text = self.previews.get(node_id, ("", ""))
        item.set_output_preview(stats, text if self.show_outputs else "")

    def followed(self, key: tuple[str, str, str, str]) -> bool:
        """Whether the run followed the link ``key`` (source, handle, target, target handle)."""
        return (key[0], key[1], key[2]) in self.links

    def show_on(self, node_items: Any, edge_items: Any) -> None:
        """Show the run on the items made so far (cards made later get it through ``apply``)."""
        for nid, item in node_items.items():
            self.apply(nid, item)
        for key, edge in edge_items.items():
            edge.set_followed(self.followed(key))

    def pulse(self, node_items: Any) -> None:
        """One step of the running cards' pulse (the scene's timer calls it while a run runs)."""
        self.pulse_phase = (self.pulse_phase + 0.12) % (2 * math.pi)
        value = 0.5 + 0.5 * math.sin(self.pulse_phase)
        for nid, state in self.states.items():
            if state == "running":
                item = node_items.peek(nid)
                if item is not None:
                    item.set_pulse(value)
