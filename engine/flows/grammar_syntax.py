"""Trigger patterns' syntax: the tokeniser, the parser and the syntax tree it builds.

:func:`parse_pattern` reads a pattern (the syntax is in :mod:`engine.flows.grammar`'s docstring)
into a tree of :class:`Lit`, :class:`Cap`, :class:`Seq`, :class:`Alt` and :class:`Opt` nodes, or
raises :class:`TriggerPatternError` naming the position of what is wrong (unclosed groups,
empty alternatives, a capture bound twice in one match, nesting deeper than 50 groups).
:mod:`engine.flows.grammar` compiles the tree to the NFA that matches sentences; words here are
normalised the way the matcher reads a sentence's words (:func:`normalise_word`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from engine.errors import FlowdeskError

__all__ = [
    "TriggerPatternError",
    "TriggerCaptureKind",
    "Lit",
    "Cap",
    "Seq",
    "Alt",
    "Opt",
    "Node",
    "parse_pattern",
    "collect_captures",
    "normalise_word",
]

TriggerCaptureKind = Literal["wildcard", "word", "number"]
_KINDS: dict[str, TriggerCaptureKind] = {
    "wildcard": "wildcard",
    "string": "wildcard",
    "word": "word",
    "number": "number",
}
_CAPTURE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_WORD_CHAR = re.compile(r"\w")
_MAX_DEPTH = 50  # groups inside one another; deeper is refused (parsing and matching recurse on groups)


class TriggerPatternError(FlowdeskError, ValueError):
    """A malformed pattern; names the pattern and the (0-based) character position."""

    def __init__(self, pattern: str, position: int, reason: str) -> None:
        self.pattern = pattern
        self.position = position
        self.reason = reason
        shown = pattern if len(pattern) <= 120 else pattern[:117] + "..."
        super().__init__(f'{reason} at position {position} in pattern "{shown}"')


def _strip_nonword(text: str) -> str:
    """``text`` without the non-word characters at its two ends, in linear time (the regex
    ``^\\W+|\\W+$`` is quadratic on a long run of punctuation followed by a word)."""
    first = _WORD_CHAR.search(text)
    if first is None:
        return ""
    last = _WORD_CHAR.search(text[::-1])
    assert last is not None
    return text[first.start() : len(text) - last.start()]


def normalise_word(word: str) -> str:
    return _strip_nonword(word.replace("\u2019", "'")).casefold()


# -- pattern syntax tree ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Lit:
    word: str  # normalised


@dataclass(frozen=True, slots=True)
class Cap:
    name: str
    kind: TriggerCaptureKind


@dataclass(frozen=True, slots=True)
class Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True, slots=True)
class Alt:
    branches: tuple[Seq, ...]


@dataclass(frozen=True, slots=True)
class Opt:
    inner: Node


Node = Lit | Cap | Seq | Alt | Opt


# -- tokeniser and parser -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Tok:
    kind: Literal["word", "cap", "(", ")", "|", "?"]
    pos: int
    text: str = ""
    name: str = ""
    cap: TriggerCaptureKind = "wildcard"


def _tokenise(pattern: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n = 0, len(pattern)
    depth = 0
    while i < n:
        c = pattern[i]
        if c.isspace():
            i += 1
        elif c in "()|?":
            if c == "(":
                depth += 1
                if depth > _MAX_DEPTH:
                    raise TriggerPatternError(
                        pattern, i, f"pattern too deeply nested (more than {_MAX_DEPTH} groups inside one another)"
                    )
            elif c == ")":
                depth = max(0, depth - 1)
            toks.append(_Tok(c, i))  # type: ignore[arg-type]
            i += 1
        elif c == "$" and pattern.startswith("$(", i):
            close = pattern.find(")", i + 2)
            inner_open = pattern.find("(", i + 2)
            if close < 0 or 0 <= inner_open < close:
                raise TriggerPatternError(pattern, i, 'unclosed capture "$("')
            body = pattern[i + 2 : close]
            name, _, kind = body.partition(":")
            name, kind = name.strip(), kind.strip()
            if not name:
                raise TriggerPatternError(pattern, i, "capture without a name")
            if not _CAPTURE_NAME.match(name):
                raise TriggerPatternError(pattern, i + 2, f'invalid capture name "{name}" (letters, digits and _)')
            if ":" in body and kind not in _KINDS:
                where = i + 2 + body.index(":") + 1
                raise TriggerPatternError(
                    pattern, where, f'unknown capture type "{kind}" (expected wildcard, word or number)'
                )
            toks.append(_Tok("cap", i, body, name, _KINDS[kind] if kind else "wildcard"))
            i = close + 1
        else:
            start = i
            while i < n and not pattern[i].isspace() and pattern[i] not in "()|" and not pattern.startswith("$(", i):
                i += 1
            toks.append(_Tok("word", start, pattern[start:i]))
    return toks


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.toks = _tokenise(pattern)
        self.i = 0
        self._positions: dict[int, int] = {}  # id(capture node) -> its position, for errors

    def error(self, pos: int, reason: str) -> TriggerPatternError:
        return TriggerPatternError(self.pattern, pos, reason)

    def peek(self) -> _Tok | None:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def parse(self) -> Node:
        if not self.toks:
            raise self.error(0, "empty pattern")
        node = self.alternation(top=True)
        tok = self.peek()
        if tok is not None:  # only a stray ")" stops the top level
            raise self.error(tok.pos, 'unmatched ")"')
        if not _has_words(node):
            raise self.error(0, "the pattern has no words")
        _check_names(node, self)
        return node

    def alternation(self, top: bool, open_pos: int = 0) -> Node:
        branches = [self.sequence()]
        bar_positions: list[int] = []
        while (tok := self.peek()) is not None and tok.kind == "|":
            bar_positions.append(tok.pos)
            self.i += 1
            branches.append(self.sequence())
        for k, branch in enumerate(branches):
            if not branch.items:
                if len(branches) == 1:
                    raise self.error(open_pos, "empty pattern" if top else "empty group")
                pos = bar_positions[k - 1] if k else bar_positions[0]
                raise self.error(pos, "empty alternative")
        return branches[0] if len(branches) == 1 else Alt(tuple(branches))

    def sequence(self) -> Seq:
        items: list[Node] = []
        while (tok := self.peek()) is not None and tok.kind not in ("|", ")"):
            self.i += 1
            node: Node | None
            if tok.kind == "word":
                word = normalise_word(tok.text)
                node = Lit(word) if word else None
            elif tok.kind == "cap":
                node = Cap(tok.name, tok.cap)
                self._positions[id(node)] = tok.pos
            elif tok.kind == "(":
                inner = self.alternation(top=False, open_pos=tok.pos)
                close = self.peek()
                if close is None or close.kind != ")":
                    raise self.error(tok.pos, 'unclosed "("')
                self.i += 1
                if not _has_words(inner):
                    raise self.error(tok.pos, "a group needs at least one word or capture")
                node = inner
            else:  # "?"
                raise self.error(tok.pos, '"?" must follow a group or a capture, as in "(word)?"')
            nxt = self.peek()
            if nxt is not None and nxt.kind == "?":
                if tok.kind == "word":
                    raise self.error(nxt.pos, '"?" must follow a group or a capture, as in "(word)?"')
                self.i += 1
                node = Opt(node) if node is not None else None
            if node is not None:
                items.append(node)
        return Seq(tuple(items))


def _has_words(node: Node) -> bool:
    if isinstance(node, (Lit, Cap)):
        return True
    if isinstance(node, Seq):
        return any(_has_words(n) for n in node.items)
    if isinstance(node, Alt):
        return any(_has_words(b) for b in node.branches)
    return _has_words(node.inner)


def _check_names(node: Node, parser: _Parser) -> frozenset[str]:
    """The capture names a match can bind; a name bound twice in one match is an error."""
    if isinstance(node, Lit):
        return frozenset()
    if isinstance(node, Cap):
        return frozenset({node.name})
    if isinstance(node, Opt):
        return _check_names(node.inner, parser)
    if isinstance(node, Alt):
        names: frozenset[str] = frozenset()
        for b in node.branches:
            names |= _check_names(b, parser)
        return names
    seen: set[str] = set()
    for item in node.items:
        names = _check_names(item, parser)
        twice = names & seen
        if twice:
            name = sorted(twice)[0]
            raise parser.error(_first_capture_pos(item, name, parser), f'capture "{name}" appears twice')
        seen |= names
    return frozenset(seen)


def _first_capture_pos(node: Node, name: str, parser: _Parser) -> int:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, Cap) and n.name == name:
            return parser._positions.get(id(n), 0)
        if isinstance(n, Seq):
            stack.extend(reversed(n.items))
        elif isinstance(n, Alt):
            stack.extend(reversed(n.branches))
        elif isinstance(n, Opt):
            stack.append(n.inner)
    return 0


def parse_pattern(pattern: str) -> Node:
    """The syntax tree of ``pattern``; raises :class:`TriggerPatternError` when it is malformed."""
    return _Parser(pattern).parse()


def collect_captures(node: Node, out: dict[str, TriggerCaptureKind]) -> None:
    if isinstance(node, Cap):
        out.setdefault(node.name, node.kind)
    elif isinstance(node, Seq):
        for n in node.items:
            collect_captures(n, out)
    elif isinstance(node, Alt):
        for b in node.branches:
            collect_captures(b, out)
    elif isinstance(node, Opt):
        collect_captures(node.inner, out)
