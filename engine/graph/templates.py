"""Templates: ``{{path}}`` and ``${path}`` references in node data (docs/design.md, "Data flow").

One module answers for the runtime (what a node's data becomes when it runs), the
validator (which references name nothing) and the editor's highlighter (where the
references are, what is being typed for completion).
Where a secret's value comes from and how secrets are masked is in
:mod:`engine.graph.secret_values` (its names are importable from here too).

Concepts and invariants
* A *reference* is ``{{path}}`` or ``${path}``; whitespace inside the braces is allowed.
  ``path`` is a name (a letter or ``_``, then letters, digits, ``_``) followed by any number of
  ``.key`` steps (letters, digits, ``_``, ``-``) and ``[index]`` steps (an integer, negative
  counts from the end): ``{{resp.items[0].name}}``, ``${ a.b[0] }``.
* In text, a resolved value is inserted as: a string as it is, a number or boolean as
  JSON, an object or list as compact JSON, null as "". A string that is exactly one
  reference (nothing else, not even spaces) becomes the value itself, keeping its type.
* A reference that does not resolve stays exactly as written.
* Names are looked up in this order: ``env.NAME`` (the scope's environment) and
  ``secrets.NAME`` (the scope's secret lookup: the environment, then the OS keyring) are
  always reserved; then the scope's built-ins (``PREVIOUS_OUTPUT``, ``input``,
  ``iteration``, ``item`` (a loop over a list), ``APPROVAL_NOTE``, ``APPROVAL_DECISION``, ``__fanout``, ``run``,
  ``workflow`` — whichever the caller provides); then the run's variables.
* A ``.key`` or ``[index]`` step into a string that holds a JSON object or list steps into
  the parsed JSON (model answers are text; ``{{review.verdict}}`` should still work).
* ``env.NAME`` is masked like a secret when ``NAME`` says it holds a credential (``KEY``,
  ``TOKEN``, ``SECRET``, ``PASSW``, ``AUTH``, ...), so ``{{env.OPENAI_API_KEY}}`` is never logged.
* Secret values never reach an event, a record or a log: :func:`resolve_templates_masked`
  returns the real value (to send) together with a rendering where each secret reads
  ``••••``, and :func:`mask_secrets` hides known secret values in any later text (a response
  that echoes one).
* Resolution is one pass: an inserted value (a secret, a model's output) is never searched
  for references again.
* Nothing here compiles a pattern per call; text without ``{`` is returned at once, and the
  parsed references of node data strings (the same at every step) are cached.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from engine.graph.secret_values import SECRET_MASK, mask_secrets, mask_url_passwords, secret_lookup

__all__ = [
    "TemplateReference",
    "TemplateScope",
    "ResolvedTemplate",
    "TemplateCompletion",
    "TEMPLATE_BUILTINS",
    "SECRET_MASK",
    "mask_url_passwords",
    "find_references",
    "walk_references",
    "reference_first_name",
    "unknown_references",
    "resolve_templates",
    "resolve_templates_masked",
    "render_template_value",
    "mask_secrets",
    "secret_lookup",
    "template_completion",
    "resolve_json_text",
]

log = logging.getLogger("flowdesk.templates")

#: First names the runtime provides; the validator never calls them unknown.
TEMPLATE_BUILTINS: frozenset[str] = frozenset(
    {
        "PREVIOUS_OUTPUT",
        "input",
        "iteration",
        "item",
        "APPROVAL_NOTE",
        "APPROVAL_DECISION",
        "__fanout",
        "run",
        "workflow",
        "env",
        "secrets",
    }
)

_NAME = r"[^\W\d]\w*"
_KEY = r"[\w\-]+"
_STEP = rf"(?:\.{_KEY}|\[\s*-?\d+\s*\])"
_PATH = rf"{_NAME}{_STEP}*"
_REFERENCE = re.compile(rf"\{{\{{\s*(?P<b>{_PATH})\s*\}}\}}|\$\{{\s*(?P<d>{_PATH})\s*\}}")
_STEPS = re.compile(rf"\.(?P<key>{_KEY})|\[\s*(?P<index>-?\d+)\s*\]")
_HEAD = re.compile(_NAME)
# Environment variables whose name says they hold a credential are masked like secrets.
_SECRET_ENV = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|SESSION|COOKIE|PRIVATE", re.IGNORECASE)
# An unfinished reference just before the cursor: "{{ resp.ite" or "${a[0].b"
_OPEN = re.compile(rf"(?:\{{\{{|\$\{{)\s*(?P<path>(?:{_NAME}(?:\.(?:{_KEY})?|\[\s*-?\d*\s*\]?)*)?)$")

Step = str | int
Escape = Callable[[str], str] | None
Form = Literal["braces", "dollar"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "<missing>"


_MISSING: Any = _Missing()


@dataclass(frozen=True, slots=True)
class TemplateReference:
    """One reference found in a text.

    ``text[start:end]`` of the searched text is ``raw``; ``name`` is the first name and
    ``path`` the steps after it (``str`` for ``.key``, ``int`` for ``[index]``).
    """

    raw: str
    name: str
    path: tuple[Step, ...]
    start: int
    end: int
    form: Form

    @property
    def dotted(self) -> str:
        """The path as written without braces or spaces: ``resp.items[0].name``."""
        return self.name + "".join(f"[{s}]" if isinstance(s, int) else f".{s}" for s in self.path)

    @property
    def is_secret(self) -> bool:
        return self.name == "secrets"


def _steps(text: str) -> tuple[Step, ...]:
    return tuple(
        int(m.group("index")) if m.group("index") is not None else m.group("key") for m in _STEPS.finditer(text)
    )


def _reference(m: re.Match[str], offset: int = 0) -> TemplateReference:
    body = m.group("b")
    form: Form = "braces"
    if body is None:
        body = m.group("d")
        form = "dollar"
    head = _HEAD.match(body)
    assert head is not None  # the reference pattern guarantees a name
    return TemplateReference(
        m.group(0), head.group(0), _steps(body[head.end() :]), m.start() + offset, m.end() + offset, form
    )


def _parse_text(text: str) -> tuple[tuple[TemplateReference, ...], bool]:
    """The references of a text, and whether the text is exactly one reference."""
    refs = tuple(_reference(m) for m in _REFERENCE.finditer(text))
    return refs, len(refs) == 1 and refs[0].start == 0 and refs[0].end == len(text)


_parse_cached = lru_cache(maxsize=1024)(_parse_text)
_CACHE_CHARS = 8192  # longer texts are parsed each time, so the cache stays under ~8 MB


def _parse(text: str) -> tuple[tuple[TemplateReference, ...], bool]:
    # node data holds the same template strings at every step of every run
    return _parse_cached(text) if len(text) <= _CACHE_CHARS else _parse_text(text)


def find_references(text: str) -> list[TemplateReference]:
    """Every reference in ``text``, in order, with its offsets (for the highlighter and the validator)."""
    if "{" not in text:
        return []
    return list(_parse_text(text)[0])


def walk_references(value: Any, where: tuple[Step, ...] = ()) -> Iterator[tuple[tuple[Step, ...], TemplateReference]]:
    """``(field path, reference)`` for every reference in every string of ``value`` (deep).

    The field path names where the string sits in the data (``("headers", 0, "value")``).
    Dict keys are field names, not templates, and are not searched.
    """
    if isinstance(value, str):
        for ref in find_references(value):
            yield where, ref
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from walk_references(v, (*where, k))
    elif isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            yield from walk_references(v, (*where, i))


def reference_first_name(ref: TemplateReference | str) -> str:
    """The name a reference starts with: ``resp`` for ``{{resp.items[0]}}``, ``${resp}`` or ``resp.items``."""
    if isinstance(ref, TemplateReference):
        return ref.name
    m = _REFERENCE.fullmatch(ref.strip())
    body = (m.group("b") or m.group("d")) if m else ref.strip()
    head = _HEAD.match(body)
    return head.group(0) if head else ""


def unknown_references(value: Any, known: Iterable[str]) -> list[tuple[tuple[Step, ...], TemplateReference]]:
    """The references in ``value`` whose first name is neither in ``known`` (declared variables
    and ``outputVar`` names) nor a built-in: the validator's "unknown reference" warnings."""
    names = set(known) | TEMPLATE_BUILTINS
    return [(where, ref) for where, ref in walk_references(value) if ref.name not in names]


@dataclass(slots=True)
class TemplateScope:
    """What references resolve against, built by the caller for one node's step.

    * ``variables``: the run's variable map (Start variables, arguments, ``outputVar``s).
    * ``builtins``: the built-in names the runtime knows at this step, for example
      ``{"PREVIOUS_OUTPUT": out, "input": out, "iteration": 2, "APPROVAL_NOTE": "...",
      "APPROVAL_DECISION": "reject", "__fanout": [...], "run": {"id": run_id},
      "workflow": {"name": name}}``. They shadow variables of the same name.
    * ``secrets``: ``name -> value or None`` for ``secrets.NAME`` (default: environment, then keyring).
    * ``env``: the mapping for ``env.NAME`` (default: ``os.environ``).

    ``secrets_used`` collects every secret value resolved through this scope, so the caller
    can :func:`mask_secrets` later text (an HTTP response, a model answer) that might echo one.
    """

    variables: Mapping[str, Any] = field(default_factory=dict)
    builtins: Mapping[str, Any] = field(default_factory=dict)
    secrets: Callable[[str], str | None] = secret_lookup
    env: Mapping[str, str] = field(default_factory=lambda: os.environ)
    secrets_used: set[str] = field(default_factory=set)

    def lookup(self, ref: TemplateReference | str) -> Any:
        """The value a reference (or a path such as ``resp.items[0]``) stands for, typed as
        it is; raises ``KeyError`` naming the path when it does not resolve. (For previews:
        a ``secrets.NAME`` path returns the real secret.)"""
        if isinstance(ref, str):
            refs = find_references("{{" + ref.strip() + "}}")
            if len(refs) != 1:
                raise KeyError(ref)
            ref = refs[0]
        value = self._lookup(ref.name, ref.path)[0]
        if value is _MISSING:
            raise KeyError(ref.dotted)
        return value

    def _lookup(self, name: str, path: tuple[Step, ...]) -> tuple[Any, bool]:
        """``(value or _MISSING, is_secret)``."""
        if name == "env" or name == "secrets":
            if len(path) != 1 or not isinstance(path[0], str):
                return _MISSING, False
            if name == "env":
                value = self.env.get(path[0])
                if value is None:
                    return _MISSING, False
                if value and _SECRET_ENV.search(path[0]):  # env.OPENAI_API_KEY is a secret too
                    self.secrets_used.add(value)
                    return value, True
                return value, False
            try:
                secret = self.secrets(path[0])
            except Exception as err:  # a broken lookup is "no secret", never a crash
                log.debug("secret %s could not be read (%s)", path[0], type(err).__name__)
                secret = None
            if secret is None:
                return _MISSING, True
            secret = str(secret)
            if secret:
                self.secrets_used.add(secret)
            return secret, True
        if name in self.builtins:
            value = self.builtins[name]
        elif name in self.variables:
            value = self.variables[name]
        else:
            return _MISSING, False
        for step in path:
            value = _step(value, step)
            if value is _MISSING:
                break
        return value, False


def _step(value: Any, step: Step) -> Any:
    if isinstance(value, str):
        text = value.strip()
        if not text or text[0] not in "[{":
            return _MISSING
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, or nested too deep to read
            return _MISSING
    if isinstance(value, Mapping):
        key = step if isinstance(step, str) else str(step)
        return value[key] if key in value else _MISSING
    if isinstance(value, (list, tuple)):
        if isinstance(step, str):
            if not step.lstrip("-").isdigit():
                return _MISSING
            step = int(step)
        try:
            return value[step]
        except IndexError:
            return _MISSING
    return _MISSING


def render_template_value(value: Any) -> str:
    """A value as it is inserted into text: strings as they are, numbers and booleans as
    JSON, objects and lists as compact JSON, null as ""."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, (bool, int, float, dict, list, tuple)):
        try:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        except (TypeError, ValueError):
            return str(value)
    return str(value)


@dataclass(frozen=True, slots=True)
class ResolvedTemplate:
    """A resolution's two faces: ``value`` to use (what is sent), ``masked`` to show, log or
    record (each secret reference reads ``••••``), and ``secrets``, the secret values used."""

    value: Any
    masked: Any
    secrets: frozenset[str]


def _resolve_text(text: str, scope: TemplateScope, found: set[str], escape: Escape) -> tuple[Any, Any]:
    """``(real, masked)`` for one string; ``masked`` is ``real`` when no secret was used."""
    refs, whole = _parse(text)
    if not refs:
        return text, text
    if whole:
        value, secret = scope._lookup(refs[0].name, refs[0].path)
        if value is _MISSING:
            return text, text
        if secret:
            found.add(value)
            return value, SECRET_MASK
        return value, value
    real: list[str] = []
    shown: list[str] | None = None
    last = 0
    for ref in refs:
        value, secret = scope._lookup(ref.name, ref.path)
        if value is _MISSING:
            continue  # stays as written: it is part of the next literal slice
        literal = text[last : ref.start]
        rendered = SECRET_MASK if secret else render_template_value(value)
        if escape is not None and not secret:
            rendered = escape(rendered)
        if secret:
            found.add(value)
            if shown is None:
                shown = real.copy()
            shown += (literal, SECRET_MASK)
            real += (literal, value if escape is None else escape(value))
        else:
            real += (literal, rendered)
            if shown is not None:
                shown += (literal, rendered)
        last = ref.end
    if not real:
        return text, text
    tail = text[last:]
    real.append(tail)
    joined = "".join(real)
    if shown is None:
        return joined, joined
    shown.append(tail)
    return joined, "".join(shown)


_SCALARS = frozenset({int, float, bool, type(None)})
_PLAIN = frozenset({dict, list, tuple, int, float, bool, type(None)})


def _resolve_deep(value: Any, scope: TemplateScope, found: set[str], escape: Escape) -> tuple[Any, Any]:
    """``(real, masked)``; ``masked is real`` when the value holds no secret reference."""
    kind = type(value)
    if kind is str or (kind not in _PLAIN and isinstance(value, str)):
        if "{" not in value:
            return value, value
        return _resolve_text(value, scope, found, escape)
    if kind in _SCALARS:
        return value, value
    if kind is dict or (kind is not list and isinstance(value, Mapping)):
        real: dict[Any, Any] = {}
        masked: dict[Any, Any] | None = None
        for k, v in value.items():
            r, m = _resolve_deep(v, scope, found, escape)
            real[k] = r
            if m is not r and masked is None:
                masked = dict(real)
            if masked is not None:
                masked[k] = m
        return real, (real if masked is None else masked)
    if isinstance(value, (list, tuple)):
        pairs = [_resolve_deep(v, scope, found, escape) for v in value]
        kind = list if isinstance(value, list) else tuple
        items = kind(p[0] for p in pairs)
        if all(p[1] is p[0] for p in pairs):
            return items, items
        return items, kind(p[1] for p in pairs)
    return value, value


def resolve_templates(value: Any, scope: TemplateScope, *, escape: Escape = None) -> Any:
    """``value`` with every reference in every string resolved (deep over dicts, lists and
    tuples; dict keys untouched). The input is never mutated; containers are new.

    ``escape``, when given, is applied to each value inserted into text (not to a whole-field
    value, which keeps its type): ``urllib.parse.quote`` for a URL's query, or
    ``lambda s: json.dumps(s)[1:-1]`` for a JSON body written as text.
    Use :func:`resolve_templates_masked` instead whenever the result may be shown or recorded.
    """
    if isinstance(value, str) and "{" not in value:
        return value
    return _resolve_deep(value, scope, set(), escape)[0]


def resolve_templates_masked(value: Any, scope: TemplateScope, *, escape: Escape = None) -> ResolvedTemplate:
    """Like :func:`resolve_templates`, also returning the rendering for events and records, where
    each secret reads ``••••``, and the set of secret values used."""
    found: set[str] = set()
    real, masked = _resolve_deep(value, scope, found, escape)
    return ResolvedTemplate(real, masked, frozenset(found))


_JSON_QUOTE = re.compile(r'\\.|"', re.S)


def _json_scalar(value: Any) -> str:
    """A value as a JSON value: a string that is itself JSON text (a model's ``[1, 2]``) as
    it is, any other string quoted, everything else as compact JSON (null as ``null``)."""
    if isinstance(value, str):
        text = value.strip()
        if text:
            try:
                json.loads(text)
                return text
            except (ValueError, RecursionError):
                pass
        return json.dumps(value, ensure_ascii=False)
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except (TypeError, ValueError, RecursionError):
        return json.dumps(str(value), ensure_ascii=False)


def _json_escaped(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)[1:-1]


def resolve_json_text(text: str, scope: TemplateScope) -> ResolvedTemplate:
    """A JSON document written as text with references (an ``http`` node's JSON body, an
    imported AnythingLLM body), resolved so that it stays JSON (docs/design.md, "Data flow").

    * A reference that is a whole string value, quotes included (``"tags": "{{tags}}"``),
      becomes the value with its type: a list stays a list, a number a number, null ``null``.
    * A reference inside a longer string (``"say {{answer}}"``) is JSON-escaped: quotes,
      newlines and backslashes of a model's answer keep the document valid.
    * A reference outside any string (``"n": {{n}}``) is inserted as a JSON value: a string
      that is JSON text as it is, any other string quoted.
    * A reference that does not resolve stays as written; secrets read ``••••`` in ``masked``.
    """
    refs, _whole = _parse(text)
    if not refs:
        return ResolvedTemplate(text, text, frozenset())
    found: set[str] = set()
    real: list[str] = []
    shown: list[str] = []
    pos = 0  # text[:pos] is already copied
    scanned = 0  # string state is known up to here
    in_str = False
    opened = -1  # where the current string's opening quote is
    for ref in refs:
        if ref.start < scanned:
            continue  # consumed with a whole-string value before it
        for m in _JSON_QUOTE.finditer(text, scanned, ref.start):
            if m.group(0) == '"':
                in_str = not in_str
                opened = m.start() if in_str else -1
        scanned = ref.start
        value, secret = scope._lookup(ref.name, ref.path)
        if value is _MISSING:
            continue
        if secret:
            found.add(value)
        whole = in_str and opened == ref.start - 1 and text[ref.end : ref.end + 1] == '"'
        if whole:
            start, end = ref.start - 1, ref.end + 1
            # a string stays a string (even one holding JSON text), anything else keeps its type
            piece = json.dumps(value, ensure_ascii=False) if isinstance(value, str) else _json_scalar(value)
            masked = f'"{SECRET_MASK}"' if secret else piece
            in_str = False
            opened = -1
        elif in_str:
            start, end = ref.start, ref.end
            piece = _json_escaped(value if secret else render_template_value(value))
            masked = SECRET_MASK if secret else piece
        else:
            start, end = ref.start, ref.end
            piece = json.dumps(value, ensure_ascii=False) if secret else _json_scalar(value)
            masked = f'"{SECRET_MASK}"' if secret else piece
        literal = text[pos:start]
        real += (literal, piece)
        shown += (literal, masked)
        pos = scanned = end
    real.append(text[pos:])
    shown.append(text[pos:])
    return ResolvedTemplate("".join(real), "".join(shown), frozenset(found))


@dataclass(frozen=True, slots=True)
class TemplateCompletion:
    """An unfinished reference before the cursor: the path typed so far starts at ``start``."""

    start: int
    prefix: str
    form: Form


def template_completion(text: str, cursor: int) -> TemplateCompletion | None:
    """What the user is typing inside an open ``{{`` or ``${`` just before ``cursor``, if
    anything (for Ctrl+Space completion of names); None outside a reference."""
    before = text[:cursor]
    opened = max(before.rfind("{{"), before.rfind("${"))
    if opened < 0:
        return None
    m = _OPEN.search(before, opened)
    if m is None:
        return None
    return TemplateCompletion(m.start("path"), m.group("path"), "dollar" if before[m.start()] == "$" else "braces")
