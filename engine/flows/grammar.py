"""Trigger phrases: TypeAgent's pattern grammar and a matcher (docs/design.md, "Reusable flows").

A workflow's ``triggers`` are patterns such as
``create (a)? $(genre:wildcard) playlist (with)? $(quantity:number) (songs)?``; a sentence
that matches one runs the flow with the captures as its arguments, with no model call.

Pattern syntax
* words, matched ignoring case and surrounding punctuation (``playlist,`` is ``playlist``;
  a word that is only punctuation, like ``&``, is ignored on both sides);
* ``(a|b c)`` alternatives, each any sequence; ``|`` at the top level separates alternatives
  of the whole pattern;
* ``(…)?`` an optional group; ``?`` may also follow a capture;
* captures ``$(name:wildcard)`` (one or more words; ``$(name)`` and ``$(name:string)`` mean
  the same), ``$(name:word)`` (one word) and ``$(name:number)`` (an integer or a decimal,
  bound as ``int`` or ``float``). A name may be captured once per match (the same name in
  two alternatives is fine).

Matching semantics (deterministic)
* The whole sentence must be covered; a sentence with no words never matches.
* An optional group takes its words when it can; alternatives are tried in the order written;
  a wildcard takes the fewest words that let the rest match. The first match in that order is
  the match.
* A wildcard binds the sentence's own text from its first to its last word, a word capture its
  word, every character kept (``/srv/data``, ``@alice``, ``$100``, ``C++``, case too) but the
  punctuation that ends a sentence or a clause after it (``.?!…,;:``), ``¿¡`` before it, and
  quotes or brackets around it (``"Hello, Goodbye"`` binds ``Hello, Goodbye``).
* A pattern nests at most 50 groups inside one another (deeper is a pattern error).
* Among several patterns (of several flows), the match with the fewest wildcard words wins,
  then the order given (:func:`best_trigger_match`). Words bound by ``word`` captures count as
  wildcard words too (they accept any word), so ``play some music`` beats ``play some
  $(what:word)``; numbers do not count.

A pattern compiles to a small NFA whose states are tried in priority order; a failed
``(state, position)`` is remembered, so matching costs at most states × words steps, whatever
the sentence (no exponential backtracking), and it never recurses.

Parsing a pattern (tokeniser, parser, syntax tree) is :mod:`engine.flows.grammar_syntax`; this
module compiles the tree to the NFA, matches sentences and reads the captures' text.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TypeVar

from engine.flows.grammar_syntax import (
    Alt,
    Cap,
    Lit,
    Node,
    Opt,
    Seq,
    TriggerCaptureKind,
    TriggerPatternError,
    collect_captures,
    normalise_word,
    parse_pattern,
)

__all__ = [
    "TriggerPatternError",
    "TriggerPattern",
    "TriggerMatch",
    "TriggerCaptureKind",
    "compile_trigger",
    "best_trigger_match",
    "all_trigger_matches",
    "generate_trigger_example",
    "trigger_words",
    "trigger_text",
]

# A capture keeps its text as written but for what ends a sentence or clause after it, ``¿¡``
# before it, and the quotes or brackets around it (_capture_text).
_SENTENCE_END = frozenset(".?!,;:\u2026\u3002\uff01\uff1f")
_SENTENCE_START = frozenset("\u00bf\u00a1")
_PAIRS = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019", "\u00ab": "\u00bb", "(": ")", "[": "]", "{": "}"}
_CLOSERS = {close: open_ for open_, close in _PAIRS.items()}
_WORD = re.compile(r"\S+")
_NUMBER = re.compile(r"[^\w+\-.]*(?P<n>[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|[+-]?\.\d+)\W*")

K = TypeVar("K")


def trigger_text(item: object) -> str | None:
    """The pattern of one entry of a workflow's ``triggers``: a string, or an object with a
    ``pattern`` (learned triggers ``{"pattern", "learned": true}``, TypeAgent patterns with
    ``isAlias``/``examples``); None for anything else."""
    if isinstance(item, str):
        return item
    if isinstance(item, dict) and isinstance(item.get("pattern"), str):
        return item["pattern"]
    return None


def _unpaired(text: str, ch: str) -> bool:
    """Whether the quote or bracket ``ch`` has no partner in ``text``."""
    partner = _PAIRS.get(ch) or _CLOSERS[ch]
    if partner == ch:
        return text.count(ch) % 2 == 1
    opener, closer = (ch, partner) if ch in _PAIRS else (partner, ch)
    return text.count(opener) != text.count(closer)


def _encloses(text: str) -> bool:
    """Whether ``text`` is one quoted or bracketed whole: ``"a b"``, ``(a b)`` (not ``"a" "b"``)."""
    if len(text) < 2 or _PAIRS.get(text[0]) != text[-1]:
        return False
    opener, closer = text[0], text[-1]
    if opener == closer:
        return text.find(closer, 1) == len(text) - 1
    depth = 0
    for k, c in enumerate(text):
        if c == opener:
            depth += 1
        elif c == closer:
            depth -= 1
            if depth == 0:
                return k == len(text) - 1
    return False


def _rstrip_end(text: str) -> str:
    j = len(text)
    while j and text[j - 1] in _SENTENCE_END:
        j -= 1
    return text[:j]


def _capture_text(text: str) -> str:
    """A wildcard's or word capture's value: the sentence's text from its first to its last word,
    every character kept (``/srv/data``, ``@alice``, ``$100``, ``C++``) but what ends a sentence or
    a clause after it (``.?!…,;:``), ``¿¡`` before it, and the quotes or brackets around it
    (``"Hello, Goodbye"``, or one left unpaired: ``(notes``). A constant number of linear passes,
    whatever the punctuation."""
    text = _rstrip_end(text)
    if text and text[-1] in _CLOSERS and _unpaired(text, text[-1]):
        text = _rstrip_end(text[:-1])
    text = text.lstrip("".join(_SENTENCE_START))
    if text and text[0] in _PAIRS and _unpaired(text, text[0]):
        text = text[1:]
    if _encloses(text):
        text = _rstrip_end(text[1:-1])
    return text.strip()


# -- the NFA --------------------------------------------------------------------------------------

# state kinds
_EPS, _LIT, _ANY, _ONE, _NUM, _OPEN, _CLOSE, _ACCEPT = range(8)


@dataclass(slots=True)
class _State:
    kind: int
    arg: str = ""  # the literal word, or the capture's name
    nexts: list[int] = field(default_factory=list)
    cap: str = ""  # a capture's kind, on its closing state


class _Builder:
    def __init__(self) -> None:
        self.states: list[_State] = []

    def add(self, kind: int, arg: str = "", nexts: list[int] | None = None, cap: str = "") -> int:
        self.states.append(_State(kind, arg, nexts or [], cap))
        return len(self.states) - 1

    def build(self, node: Node, nxt: int) -> int:
        """The entry state of ``node`` followed by state ``nxt`` (built right to left)."""
        if isinstance(node, Lit):
            return self.add(_LIT, node.word, [nxt])
        if isinstance(node, Seq):
            for item in reversed(node.items):
                nxt = self.build(item, nxt)
            return nxt
        if isinstance(node, Alt):
            return self.add(_EPS, "", [self.build(b, nxt) for b in node.branches])
        if isinstance(node, Opt):
            return self.add(_EPS, "", [self.build(node.inner, nxt), nxt])  # take it when it can
        close = self.add(_CLOSE, node.name, [nxt], node.kind)
        if node.kind == "wildcard":
            any_state = self.add(_ANY, node.name)
            self.states[any_state].nexts = [close, any_state]  # fewest words first
            return self.add(_OPEN, node.name, [any_state])
        return self.add(_OPEN, node.name, [self.add(_ONE if node.kind == "word" else _NUM, node.name, [close])])


# -- sentences --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Word:
    raw: str
    norm: str
    start: int
    end: int


def _words(sentence: str) -> list[_Word]:
    out = []
    for m in _WORD.finditer(sentence):
        raw = m.group(0)
        norm = normalise_word(raw)
        if norm:
            out.append(_Word(raw, norm, m.start(), m.end()))
    return out


def trigger_words(sentence: str) -> list[str]:
    """The sentence's words as the matcher sees them (case folded, surrounding punctuation dropped)."""
    return [w.norm for w in _words(sentence)]


def _number(raw: str) -> int | float | None:
    m = _NUMBER.fullmatch(raw)
    if m is None:
        return None
    text = m.group("n").replace(",", "")
    return float(text) if "." in text else int(text)


# -- public API -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TriggerMatch:
    """A sentence matched by a pattern.

    ``captures``: name → ``str`` (wildcard, word) or ``int``/``float`` (number), only the
    captures the match went through; ``spans``: name → ``(start, end)`` character offsets in
    the sentence; ``wildcard_words``: how many words the wildcard and word captures took, the
    captures that accept any word (lower is a better match; numbers do not count).
    """

    pattern: TriggerPattern
    captures: dict[str, str | int | float]
    spans: dict[str, tuple[int, int]]
    wildcard_words: int


@dataclass(frozen=True, slots=True, eq=False)
class TriggerPattern:
    """A compiled trigger pattern (make one with :func:`compile_trigger`)."""

    text: str
    #: every capture the pattern can bind, in the order written (a name captured with different
    #: kinds in different alternatives shows its first kind here; its match holds the right type)
    captures: dict[str, TriggerCaptureKind]
    _tree: Node = field(repr=False)
    _states: tuple[_State, ...] = field(repr=False)
    _start: int = field(repr=False)

    def match(self, sentence: str) -> TriggerMatch | None:
        """The match of the whole ``sentence``, or None."""
        return self._match(sentence, _words(sentence))

    def _match(self, sentence: str, words: list[_Word]) -> TriggerMatch | None:
        if not words:
            return None
        path = _search(self._states, self._start, words)
        if path is None:
            return None
        captures: dict[str, str | int | float] = {}
        spans: dict[str, tuple[int, int]] = {}
        opened: dict[str, int] = {}
        wild = 0
        for state_index, pos in path:
            st = self._states[state_index]
            if st.kind == _OPEN:
                opened[st.arg] = pos
            elif st.kind == _CLOSE:
                first, last = words[opened[st.arg]], words[pos - 1]
                kind = st.cap
                if kind == "number":
                    value: str | int | float | None = _number(first.raw)
                    assert value is not None
                else:  # wildcard or word: any words, so they count against the match
                    value = _capture_text(sentence[first.start : last.end])
                    wild += pos - opened[st.arg]
                captures[st.arg] = value
                spans[st.arg] = (first.start, last.end)
        return TriggerMatch(self, captures, spans, wild)


def _search(states: tuple[_State, ...], start: int, words: list[_Word]) -> list[tuple[int, int]] | None:
    """The first accepting path in priority order, as ``(state, position)`` pairs, or None.

    Iterative depth-first search; ``failed`` remembers every ``(state, position)`` from which
    no path accepts (that depends on nothing else), so each pair is expanded at most once.
    """
    n = len(words)
    failed: set[tuple[int, int]] = set()
    # frames: [state, position, successors, next successor index]
    stack: list[list] = []

    def successors(s: int, pos: int) -> list[tuple[int, int]] | None:
        st = states[s]
        kind = st.kind
        if kind in (_EPS, _OPEN, _CLOSE):
            return [(t, pos) for t in st.nexts]
        if kind == _ACCEPT:
            return None
        if pos >= n:
            return []
        w = words[pos]
        if kind == _LIT and w.norm != st.arg:
            return []
        if kind == _NUM and _number(w.raw) is None:
            return []
        return [(t, pos + 1) for t in st.nexts]

    def push(s: int, pos: int) -> bool:
        """Push a frame; True when it is an accepting one."""
        succ = successors(s, pos)
        if succ is None:
            if pos == n:
                stack.append([s, pos, [], 0])
                return True
            failed.add((s, pos))
            return False
        stack.append([s, pos, succ, 0])
        return False

    if push(start, 0):
        return [(start, 0)]
    while stack:
        frame = stack[-1]
        succ, k = frame[2], frame[3]
        while k < len(succ) and succ[k] in failed:
            k += 1
        if k == len(succ):
            failed.add((frame[0], frame[1]))
            stack.pop()
            continue
        frame[3] = k + 1
        if push(*succ[k]):
            return [(f[0], f[1]) for f in stack]
    return None


@lru_cache(maxsize=2048)
def compile_trigger(text: str) -> TriggerPattern:
    """Parse and compile a trigger pattern; raises :class:`TriggerPatternError` when malformed.

    Compiled patterns are cached by text (they are immutable)."""
    tree = parse_pattern(text)
    builder = _Builder()
    accept = builder.add(_ACCEPT)
    start = builder.build(tree, accept)
    captures: dict[str, TriggerCaptureKind] = {}
    collect_captures(tree, captures)
    return TriggerPattern(text, captures, tree, tuple(builder.states), start)


def all_trigger_matches(sentence: str, candidates: Iterable[tuple[K, TriggerPattern]]) -> list[tuple[K, TriggerMatch]]:
    """Every candidate that matches, best first: fewest wildcard words, then the order given."""
    words = _words(sentence)
    if not words:
        return []
    found: list[tuple[int, int, K, TriggerMatch]] = []
    for order, (key, pattern) in enumerate(candidates):
        m = pattern._match(sentence, words)
        if m is not None:
            found.append((m.wildcard_words, order, key, m))
    found.sort(key=lambda t: (t[0], t[1]))
    return [(key, m) for _, _, key, m in found]


def best_trigger_match(sentence: str, candidates: Iterable[tuple[K, TriggerPattern]]) -> tuple[K, TriggerMatch] | None:
    """The winning ``(key, match)`` among the candidates, or None when none matches."""
    ranked = all_trigger_matches(sentence, candidates)
    return ranked[0] if ranked else None


def generate_trigger_example(
    pattern: TriggerPattern, rng: random.Random | None = None, values: dict[str, str | int | float] | None = None
) -> str:
    """A sentence the pattern can match: alternatives and optionals chosen by ``rng`` (the
    first alternative and every optional without one), captures filled from ``values`` or
    with their name (wildcard, word) or 3 (number). For placeholders and tests."""
    out: list[str] = []
    values = values or {}

    def walk(node: Node) -> None:
        if isinstance(node, Lit):
            out.append(node.word)
        elif isinstance(node, Cap):
            out.append(str(values.get(node.name, 3 if node.kind == "number" else node.name)))
        elif isinstance(node, Seq):
            for item in node.items:
                walk(item)
        elif isinstance(node, Alt):
            walk(rng.choice(node.branches) if rng else node.branches[0])
        elif rng is None or rng.random() < 0.5:
            walk(node.inner)

    walk(pattern._tree)
    return " ".join(out)
