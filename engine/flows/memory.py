"""Routing that remembers, and help when nothing matches (seed 002's construction cache).

docs/flows.md, "Routing memory". When a sentence was routed by the model and the user
confirmed the choice, :func:`generalise` turns it into a trigger pattern of that flow: each
argument's value, found in the sentence as words, becomes a typed capture (``number`` for a
number, ``wildcard`` otherwise), the other words stay literal. The pattern is kept only when
it matches the sentence again and binds the same arguments (so the next sentence of that shape
runs the flow with no model request); :func:`remember` stores it in the flow's file as
``{"pattern": "…", "learned": true}``.

:func:`suggestions` ranks flows by the words they share with a sentence (name, description,
trigger words) for "did you mean"; :func:`split_requests` cuts "X and then Y" / "X then Y" /
"X; Y" into its parts.
"""

from __future__ import annotations

import re
from typing import Any

from engine.flows.grammar import TriggerPatternError, compile_trigger, trigger_text, trigger_words
from engine.flows.library import FlowLibrary, LibraryError, LibraryFlow
from engine.graph.model import save_workflow

__all__ = ["generalise", "remember", "suggestions", "split_requests", "forget", "learned_patterns"]

_UNSAFE = re.compile(r"[()|?$]")  # pattern syntax: a word holding one cannot be a literal
_SPLIT = re.compile(r"\s*;\s*|\s*,?\s+and then\s+|\s*,?\s+then\s+", re.I)
_STOP = frozenset(
    "a an the to of in on for and or with my me please is are be it this that what how do can you i".split()
)


def _same(captured: Any, given: Any, kind: str) -> bool:
    if kind == "number" or (isinstance(given, (int, float)) and not isinstance(given, bool)):
        try:
            return float(str(captured).replace(",", "")) == float(given)
        except (TypeError, ValueError):
            return False
    return str(captured).casefold() == str(given).casefold()  # the sentence's own spelling is kept


def generalise(sentence: str, arguments: dict[str, Any], flow: LibraryFlow) -> str | None:
    """A trigger pattern for ``sentence`` whose captures bind ``arguments``, or None when the
    sentence cannot be generalised safely (an argument not found in it as words, a word that is
    pattern syntax, nothing literal left, or the pattern not binding the same values back)."""
    words = trigger_words(sentence)
    if not words:
        return None
    kinds = {p.name: p.type for p in flow.parameters}
    slots: list[str | None] = list(words)  # None: a word taken by a capture
    captures: dict[int, str] = {}  # first word index -> the capture written there
    for name, value in arguments.items():
        if value is None or isinstance(value, bool) or isinstance(value, (dict, list)):
            return None
        needle = trigger_words(str(value))
        if not needle:
            return None
        at = next(
            (
                i
                for i in range(len(words) - len(needle) + 1)
                if words[i : i + len(needle)] == needle and all(s is not None for s in slots[i : i + len(needle)])
            ),
            None,
        )
        if at is None:
            return None
        numeric = kinds.get(name) == "number" or (isinstance(value, (int, float)) and len(needle) == 1)
        kind = "number" if numeric else "wildcard"
        for i in range(at, at + len(needle)):
            slots[i] = None
        captures[at] = f"$({name}:{kind})"
    literal = [w for w in slots if w is not None]
    if not literal or any(_UNSAFE.search(w) for w in literal):
        return None
    parts: list[str] = []
    for i, word in enumerate(slots):
        if i in captures:
            parts.append(captures[i])
        elif word is not None:
            parts.append(word)
    pattern = " ".join(parts)
    try:
        match = compile_trigger(pattern).match(sentence)
    except TriggerPatternError:
        return None
    if match is None or set(match.captures) != set(arguments):
        return None
    if not all(_same(match.captures[n], v, kinds.get(n, "string")) for n, v in arguments.items()):
        return None
    return pattern


def learned_patterns(raw_triggers: Any) -> list[str]:
    """The learned patterns among a workflow's raw ``triggers``."""
    return [t["pattern"] for t in raw_triggers or () if isinstance(t, dict) and t.get("learned") and trigger_text(t)]


def remember(library: FlowLibrary, flow: LibraryFlow, pattern: str) -> bool:
    """Store ``pattern`` as a learned trigger of ``flow`` (in its file); False when it is there already."""
    wf = library.load_path(flow.path)
    raw = list(getattr(wf, "triggers", None) or [])
    if any(trigger_text(t) == pattern for t in raw):
        return False
    raw.append({"pattern": pattern, "learned": True})
    wf.triggers = raw
    try:
        save_workflow(wf, flow.path)
    except OSError as err:
        raise LibraryError(f"The learned trigger could not be saved to {flow.path}: {err.strerror or err}") from None
    return True


def forget(triggers: list[Any], pattern: str) -> list[Any]:
    """``triggers`` without the learned trigger ``pattern`` (the trigger editor's Remove)."""
    return [t for t in triggers if not (isinstance(t, dict) and t.get("learned") and t.get("pattern") == pattern)]


def _vocabulary(flow: LibraryFlow) -> set[str]:
    text = " ".join([flow.name, flow.id.replace("-", " "), flow.description, *flow.triggers])
    text = re.sub(r"\$\([^)]*\)", " ", text)
    return {w for w in trigger_words(re.sub(r"[()|?]", " ", text)) if w not in _STOP}


def suggestions(sentence: str, flows: list[LibraryFlow], limit: int = 3) -> list[LibraryFlow]:
    """Up to ``limit`` flows nearest to ``sentence`` by shared words (name, description,
    trigger words; a word sharing its first five letters counts half), best first; none
    that share nothing."""
    said = {w for w in trigger_words(sentence) if w not in _STOP}
    scored = []
    for order, flow in enumerate(flows):
        vocab = _vocabulary(flow)
        score = 0.0
        for w in said:
            if w in vocab:
                score += 1
            elif len(w) >= 5 and any(v[:5] == w[:5] for v in vocab if len(v) >= 5):
                score += 0.5
        if score > 0:
            scored.append((-score, order, flow))
    scored.sort(key=lambda t: (t[0], t[1]))
    return [f for _, _, f in scored[:limit]]


def split_requests(sentence: str) -> list[str]:
    """The requests of a sentence joined by "and then", "then" or ";" (one part when none)."""
    parts = [p.strip(" ,.") for p in _SPLIT.split(sentence)]
    return [p for p in parts if p]
