"""The ``if`` node: routes by what the previous output says (conditions checked in order).

Operators (docs/design.md, "Conditions, routing and structured answers"): AgentFlow's ``equal``
and ``contains`` keep their exact rules (the text lower-cased, the value trimmed and
lower-cased; an empty value never matches). ``notContains``, ``startsWith`` and ``endsWith``
compare the same trimmed, lower-cased text (an empty value never matches); ``regex`` searches
the original text case-insensitively (Python syntax); ``isEmpty`` matches blank text; ``gt`` and
``lt`` parse the text and the value as numbers (a value that is not a number never matches).
With ``path`` (``.key[0]`` steps) a condition looks into the previous output as JSON and tests
the value found there instead of the whole text (a missing step finds nothing: empty text).

A condition's ``value`` and ``path`` are templates like any string of a node's data
(``gt {{limit}}``): resolved when the step runs, so the validator checks a regex or a number
only when it is written out, not when it comes from a reference.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Literal

from pydantic import Field, field_validator

from engine.graph.templates import find_references, mask_secrets
from engine.nodes.base import NodeData, NodeSpec, _Loose, as_text, is_none, resolve_for_step

_LOGIC_CHECK = "logic_check"

OPERATORS: tuple[str, ...] = (
    "equal",
    "contains",
    "notContains",
    "startsWith",
    "endsWith",
    "regex",
    "isEmpty",
    "gt",
    "lt",
)
#: Operators that take no value.
NO_VALUE_OPERATORS = frozenset({"isEmpty"})
#: Operators whose value is a number.
NUMBER_OPERATORS = frozenset({"gt", "lt"})
_OPERATOR_NAMES = {
    **{op.lower(): op for op in OPERATORS},
    "equals": "equal",
    "eq": "equal",
    "==": "equal",
    "includes": "contains",
    "not_contains": "notContains",
    "starts_with": "startsWith",
    "ends_with": "endsWith",
    "is_empty": "isEmpty",
    "empty": "isEmpty",
    ">": "gt",
    "<": "lt",
    "matches": "regex",
}
#: The public name (engine.CONDITION_OPERATORS).
CONDITION_OPERATORS = OPERATORS
_PATH_STEP = re.compile(r"\.([^.\[\]]+)|\[(-?\d+)\]")


class Condition(_Loose):
    operator: Literal["equal", "contains", "notContains", "startsWith", "endsWith", "regex", "isEmpty", "gt", "lt"] = (
        "contains"
    )
    value: str = ""
    #: ``.key[0]`` steps into the previous output as JSON (absent: the whole text).
    path: str | None = Field(default=None, exclude_if=is_none)

    @field_validator("operator", mode="before")
    @classmethod
    def _operator(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = v.strip()
            return _OPERATOR_NAMES.get(v.lower(), v)
        return v

    @field_validator("value", mode="before")
    @classmethod
    def _value(cls, v: Any) -> Any:
        if v is None:
            return ""
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return str(v)
        return v

    @field_validator("path", mode="before")
    @classmethod
    def _path(cls, v: Any) -> Any:
        if isinstance(v, str):
            return v.strip() or None
        return v


def parse_path(path: str) -> list[str | int] | None:
    """The steps of a ``path`` (``.key[0].name``; a leading key may omit its dot), or None when
    it is not one."""
    text = path.strip()
    if text and text[0] not in ".[":
        text = "." + text
    steps: list[str | int] = []
    pos = 0
    while pos < len(text):
        m = _PATH_STEP.match(text, pos)
        if m is None:
            return None
        steps.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    return steps


_MISSING = object()


def value_at(value: Any, path: str) -> Any:
    """What ``path`` finds in ``value`` (JSON text is parsed first); ``_MISSING`` when nothing."""
    steps = parse_path(path)
    if steps is None:
        return _MISSING
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return _MISSING
    for step in steps:
        if isinstance(step, int) and isinstance(value, list) and -len(value) <= step < len(value):
            value = value[step]
        elif isinstance(value, dict) and str(step) in value:
            value = value[str(step)]
        else:
            return _MISSING
    return value


def as_number(text: Any) -> float | None:
    """``text`` (or a JSON number) as a finite number, else None."""
    if isinstance(text, bool):
        return None
    if isinstance(text, (int, float)):
        number = float(text)
    else:
        try:
            number = float(str(text).strip().replace(",", "") if isinstance(text, str) else as_text(text))
        except ValueError:
            return None
    return number if math.isfinite(number) else None


def condition_matches(cond: Condition, value: Any) -> bool:
    """Whether ``cond`` holds for the previous output ``value``."""
    op = cond.operator
    if cond.path:
        found = value_at(value, cond.path)
        subject: Any = "" if found is _MISSING or found is None else found
        if op in NUMBER_OPERATORS and isinstance(subject, (int, float)) and not isinstance(subject, bool):
            number = as_number(subject)
            want = as_number(cond.value)
            return number is not None and want is not None and (number > want if op == "gt" else number < want)
        original = subject if isinstance(subject, str) else as_text(subject)
    else:
        original = as_text(value)
    if op == "regex":
        if not cond.value.strip():
            return False
        try:
            return re.search(cond.value.strip(), original, re.IGNORECASE) is not None
        except re.error:
            return False
    if op == "isEmpty":
        return not original.strip()
    if op in NUMBER_OPERATORS:
        number, want = as_number(original), as_number(cond.value)
        return number is not None and want is not None and (number > want if op == "gt" else number < want)
    text = original.lower()
    want_text = cond.value.strip().lower()
    if not want_text:
        return False
    if op == "equal":  # AgentFlow's rule: the lower-cased text equals the trimmed value
        return text == want_text
    if op == "contains":  # AgentFlow's rule
        return want_text in text
    text = text.strip()
    if op == "notContains":
        return want_text not in text
    if op == "startsWith":
        return text.startswith(want_text)
    return text.endswith(want_text)  # endsWith


def describe_condition(cond: Condition) -> str:
    """A condition in words, for handle labels and ``logic_check`` (``contains 'x'``, ``gt 5``,
    ``isEmpty``, ``.total gt 5``)."""
    where = f"{cond.path} " if cond.path else ""
    if cond.operator in NO_VALUE_OPERATORS:
        return f"{where}{cond.operator}"
    if cond.operator in NUMBER_OPERATORS:
        return f"{where}{cond.operator} {cond.value.strip()}"
    return f"{where}{cond.operator} '{cond.value.strip()}'"


def condition_problem(cond: Condition) -> tuple[str, str] | None:
    """Why ``cond`` can never work as written, as ``(code, message)``: a bad path
    (``condition_bad_path``), a bad regex (``condition_bad_regex``), a value that is not a number
    for gt/lt (``condition_not_a_number``); None when it can."""
    if cond.path and not find_references(cond.path) and parse_path(cond.path) is None:
        return "condition_bad_path", f"the path '{cond.path}' is not a path like .key[0].name"
    if find_references(cond.value):  # known only when the step runs
        return None
    if cond.operator == "regex" and cond.value.strip():
        try:
            re.compile(cond.value.strip())
        except re.error as err:
            return "condition_bad_regex", f"the regular expression '{cond.value.strip()}' is not valid ({err})"
    if cond.operator in NUMBER_OPERATORS and as_number(cond.value) is None:
        shown = cond.value.strip()
        return "condition_not_a_number", (
            f"'{shown}' is not a number" if shown else "it needs a number to compare with"
        )
    return None


class IfData(NodeData):
    conditions: list[Condition] = Field(default_factory=list)


class IfSpec(NodeSpec):
    kind = "if"
    data_model = IfData
    reports_output = True
    label = "Condition"
    description = "Routes by what the previous output says."
    icon = "if"
    color = "#c98a12"
    category = "Flow"
    chooses = True
    no_branch = ("if_no_branch", "{label} has neither a condition branch nor an Else branch connected.")

    def outputs(self, data: NodeData) -> tuple[str, ...]:
        conds = getattr(data, "conditions", ())
        return tuple(f"condition-{i}" for i in range(len(conds))) + ("false",)

    def has_output(self, data: NodeData, handle: str) -> bool:
        if handle == "false":
            return True
        return handle in self.outputs(data)

    def plain_output(self) -> bool:
        return False

    def handle_label(self, data: NodeData, handle: str) -> str:
        if handle.startswith("condition-"):
            try:
                i = int(handle.split("-", 1)[1])
                cond = data.conditions[i]  # type: ignore[attr-defined]
                return f"Condition {i + 1}: {describe_condition(cond)}"
            except (ValueError, IndexError, AttributeError):
                return handle
        return super().handle_label(data, handle)

    def new_data(self) -> dict[str, Any]:
        return {"conditions": [{"operator": "contains", "value": ""}]}

    def check(self, node: Any, checks: Any) -> None:
        for i, cond in enumerate(node.data.conditions):
            problem = condition_problem(cond)
            if problem is not None:
                checks.error(problem[0], f"Condition {i + 1} of {checks.label(node)}: {problem[1]}.")
            elif not cond.value.strip() and cond.operator not in NO_VALUE_OPERATORS:
                checks.warning(
                    "empty_condition_value",
                    f"Condition {i + 1} of {checks.label(node)} has an empty value; it never matches.",
                )

    async def execute(self, ctx: Any, node: Any, value: Any) -> tuple[Any, str]:
        emit = ctx.emit
        conditions, secrets = _resolved_conditions(ctx, node, value)
        for i, cond in enumerate(conditions):
            matched = condition_matches(cond, value)
            said = f"Condition {i + 1}: {describe_condition(cond)} → {'matched' if matched else 'no match'}"
            emit(
                node.id,
                _LOGIC_CHECK,
                mask_secrets(said, secrets) if secrets else said,
                {"conditionIndex": i, "matched": matched},
            )
            if matched:
                return value, f"condition-{i}"
        emit(node.id, _LOGIC_CHECK, "No condition matched → Else branch", {"conditionIndex": None, "matched": False})
        return value, "false"


def _resolved_conditions(ctx: Any, node: Any, value: Any) -> tuple[list[Condition], list[str]]:
    """The node's conditions with templates in their value and path resolved for this step,
    and the secrets that went into them (masked in ``logic_check``). Conditions without a
    reference are used as they are (AgentFlow's files never resolve anything)."""
    conditions = list(node.data.conditions)
    if not any(find_references(c.value) or (c.path and find_references(c.path)) for c in conditions):
        return conditions, []
    data, secrets = resolve_for_step(ctx, node, value)
    resolved = data.get("conditions")
    if not isinstance(resolved, list) or len(resolved) != len(conditions):
        return conditions, secrets
    out = []
    for original, raw in zip(conditions, resolved, strict=True):
        try:
            fields = dict(raw)
            for key in ("value", "path"):
                if fields.get(key) is not None and not isinstance(fields[key], (str, int, float, bool)):
                    fields[key] = as_text(fields[key])
            out.append(Condition.model_validate(fields))
        except (TypeError, ValueError):
            out.append(original)
    return out, secrets


SPEC = IfSpec()
