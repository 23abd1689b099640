"""Structured answers: a JSON schema asked of a model, its answer parsed and checked.

docs/design.md, "Conditions, routing and structured answers". An agent's ``responseFormat``
(``{"type": "json_schema", "schema": {...}}``) and the router's choice are requests for JSON
matching a schema. Each provider asks in its own way (OpenAI-compatible servers:
``response_format`` ``json_schema``; Anthropic: a forced tool whose input schema is the schema;
the embedded model: llama.cpp's JSON-schema grammar; echo: a value built from the schema), and
the model is told in its instructions too, for servers that ignore the mode. The answer is then
parsed (:func:`parse_json_answer`) and checked (:func:`schema_errors`) against the subset of
JSON Schema Flowdesk needs: ``type``, ``properties``, ``required``, ``enum``, ``items``,
``additionalProperties: false``; other keywords are ignored.
"""

from __future__ import annotations

import json
import re
from typing import Any

from engine.errors import FlowdeskError

__all__ = [
    "SchemaError",
    "schema_errors",
    "parse_json_answer",
    "openai_response_format",
    "schema_of",
    "schema_instructions",
    "example_for_schema",
]

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
    "null": (type(None),),
}


class SchemaError(FlowdeskError, ValueError):
    """An answer that is not JSON matching the schema; ``str()`` says where and why, for a person
    and for the model's second try."""


def schema_of(response_format: Any) -> dict[str, Any] | None:
    """The JSON schema of a ``responseFormat`` (``{"type": "json_schema", "schema": ...}``; an
    OpenAI-shaped ``{"json_schema": {"schema": ...}}`` is understood too), or None."""
    if not isinstance(response_format, dict):
        return None
    schema = response_format.get("schema")
    if schema is None and isinstance(response_format.get("json_schema"), dict):
        schema = response_format["json_schema"].get("schema")
    return schema if isinstance(schema, dict) else None


def openai_response_format(schema: dict[str, Any], name: str = "answer") -> dict[str, Any]:
    """OpenAI's ``response_format`` for ``schema`` (what ``AgentInvocation.response_format`` holds)."""
    safe = re.sub(r"[^a-zA-Z0-9_-]+", "_", name).strip("_")[:64] or "answer"
    return {"type": "json_schema", "json_schema": {"name": safe, "schema": schema}}


def schema_instructions(schema: dict[str, Any]) -> str:
    """What the model is told when JSON is wanted (for servers without a structured-output mode)."""
    return "Answer with JSON only (no prose, no code fence) matching this JSON schema:\n" + json.dumps(
        schema, ensure_ascii=False
    )


def _type_ok(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    if kind == "integer" and isinstance(value, float):
        return value.is_integer()
    types = _TYPES.get(kind)
    return True if types is None else isinstance(value, types)


def schema_errors(value: Any, schema: Any, where: str = "the answer") -> list[str]:
    """What is wrong with ``value`` for ``schema`` (empty: it matches)."""
    if not isinstance(schema, dict):
        return []
    errors: list[str] = []
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind] if isinstance(kind, str) else []
    if kinds and not any(_type_ok(value, k) for k in kinds):
        shown = json.dumps(value, ensure_ascii=False)
        return [f"{where} should be {' or '.join(kinds)}, not {shown[:60]}"]
    enum = schema.get("enum")
    if isinstance(enum, list) and value not in enum:
        errors.append(
            f"{where} should be one of {json.dumps(enum, ensure_ascii=False)}, "
            f"not {json.dumps(value, ensure_ascii=False)[:60]}"
        )
    if isinstance(value, dict):
        raw = schema.get("properties")
        props: dict[str, Any] = raw if isinstance(raw, dict) else {}
        for name in schema.get("required") or ():
            if isinstance(name, str) and name not in value:
                errors.append(f"{where} lacks the required field '{name}'")
        for name, sub in props.items():
            if name in value:
                errors.extend(schema_errors(value[name], sub, f"{where}.{name}" if where != "the answer" else name))
        if schema.get("additionalProperties") is False:
            extra = [k for k in value if k not in props]
            if extra:
                errors.append(f"{where} has fields the schema does not allow: {', '.join(extra)}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            errors.extend(schema_errors(item, schema["items"], f"{where}[{i}]"))
    return errors


_FENCE = re.compile(r"^```[a-zA-Z]*\s*\n?(.*?)\n?```$", re.DOTALL)


def parse_json_answer(text: str, schema: dict[str, Any]) -> Any:
    """The model's answer parsed and checked against ``schema``; :class:`SchemaError` when it is
    not JSON or does not match (a code fence around the JSON is tolerated)."""
    body = (text or "").strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    try:
        value = json.loads(body)
    except json.JSONDecodeError as err:
        shown = " ".join(body.split())[:80]
        raise SchemaError(f"the answer is not JSON ({err.msg} at character {err.pos}): '{shown}'") from None
    errors = schema_errors(value, schema)
    if errors:
        raise SchemaError("; ".join(errors[:5]))
    return value


_WORD = re.compile(r"[^\W_]{3,}", re.UNICODE)
_COMMON = frozenset(
    {
        "the",
        "and",
        "for",
        "with",
        "about",
        "that",
        "this",
        "from",
        "are",
        "you",
        "your",
        "any",
        "all",
        "not",
        "but",
        "has",
        "have",
        "was",
        "can",
        "into",
        "its",
    }
)


def _words(text: str) -> set[str]:
    """The words of ``text`` that count for :func:`choose_enum`: lower-cased, a plural ``s`` dropped."""
    return {
        w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w
        for w in _WORD.findall(text.lower())
        if w not in _COMMON
    }


def enum_descriptions(schema: dict[str, Any]) -> dict[str, str]:
    """Descriptions of an enum's values written as ``value: text`` lines of the field's description."""
    found: dict[str, str] = {}
    values = {str(v) for v in schema.get("enum") or ()}
    for line in str(schema.get("description") or "").splitlines():
        name, sep, text = line.lstrip("-• ").partition(":")
        if sep and name.strip() in values:
            found[name.strip()] = text.strip()
    return found


def choose_enum(schema: dict[str, Any], text: str) -> Any:
    """Echo's deterministic pick among an enum's values: the value sharing the most words (of three
    letters or more, common ones left out, a plural ``s`` ignored) with ``text``, counting the words of the value and of
    its description (:func:`enum_descriptions`); the first value on a tie or when none shares any."""
    return _pick_enum(schema, text)[0]


def _pick_enum(schema: dict[str, Any], text: str) -> tuple[Any, list[str]]:
    """:func:`choose_enum`'s value and the words it shares with ``text`` (sorted; none: a default)."""
    enum = list(schema.get("enum") or ())
    if not enum:
        return None, []
    seen = _words(text)
    described = enum_descriptions(schema)
    best, shared = enum[0], set[str]()
    for value in enum:
        common = seen & (_words(str(value)) | _words(described.get(str(value), "")))
        if len(common) > len(shared):
            best, shared = value, common
    return best, sorted(shared)


def _echo_reason(props: dict[str, Any], text: str) -> str | None:
    """Why echo chose as it did, for an object with an enum field and a string ``reason`` (a
    router's answer): the words the choice shares with the input, or that none did."""
    enum_field = next((sub for sub in props.values() if isinstance(sub, dict) and sub.get("enum")), None)
    reason = props.get("reason")
    if enum_field is None or not isinstance(reason, dict) or reason.get("type", "string") != "string":
        return None
    value, shared = _pick_enum(enum_field, text)
    if not shared:
        return f"echo: no choice shares a word with the input, so the first one ({value})"
    return "echo: the input shares " + ", ".join(f"'{w}'" for w in shared[:5]) + f" with {value}"


def example_for_schema(schema: Any, text: str) -> Any:
    """A value matching ``schema`` built from ``text`` (the echo provider's structured answer):
    strings are ``text``, an enum's value chosen by :func:`choose_enum`, numbers 0, booleans
    false, arrays empty (one item when ``minItems``), objects every property; an object with an
    enum field and a string ``reason`` (a router's answer) says in ``reason`` why that value."""
    if not isinstance(schema, dict):
        return text
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return choose_enum(schema, text)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind == "object" or (kind is None and isinstance(schema.get("properties"), dict)):
        raw = schema.get("properties")
        props: dict[str, Any] = raw if isinstance(raw, dict) else {}
        value = {name: example_for_schema(sub, text) for name, sub in props.items()}
        why = _echo_reason(props, text)
        if why is not None:
            value["reason"] = why
        return value
    if kind == "array":
        return [example_for_schema(schema.get("items"), text)] if schema.get("minItems") else []
    if kind in ("number", "integer"):
        return 0
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return text
