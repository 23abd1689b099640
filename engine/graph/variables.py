"""A run's variables: declared on the Start node, given as run arguments, coerced by type.

docs/design.md, "Data flow": a run has one variable map shared by its branches (the last write
wins). It starts from the Start node's ``variables: [{name, value, description, type,
required}]`` and is overridden by the run's arguments (``Run(..., variables={...})``, the CLI's
``--var NAME=VALUE``). Values are coerced to the declared type (``string``, ``number``,
``boolean``, ``json``); a value that does not coerce, or a required variable left without a
value, refuses the run before it starts (:class:`VariableError`, naming the variable; the CLI
exits 2). Names no Start variable declares are kept as given (strings from the CLI).

* :func:`coerce_variable` ``(value, type) -> value`` (raises ``ValueError``);
* :func:`run_variables` ``(workflow, arguments) -> dict`` (raises :class:`VariableError`);
* :func:`parse_var_argument` ``("NAME=VALUE") -> (name, value)`` for the CLI;
* :func:`rule_problem` ``(variable, value) -> (field, message) | None``: the rules a value must
  keep (``pattern`` a regular expression the whole value matches, ``enum`` the allowed values,
  ``min``/``max`` inclusive bounds of a number, ``pathMustExist`` a file or folder that exists,
  a relative path resolved from the current working directory). The run form checks them as
  the user types; :func:`run_variables` refuses a run that breaks one, naming the variable and
  the rule's field (:attr:`VariableError.rule`).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Mapping
from typing import Any

from engine.errors import FlowdeskError

__all__ = [
    "VariableError",
    "coerce_variable",
    "run_variables",
    "parse_var_argument",
    "declared_variables",
    "rule_problem",
    "json_safe",
    "has_no_value",
]

_TRUE = {"true", "yes", "y", "1", "on"}
_FALSE = {"false", "no", "n", "0", "off"}


class VariableError(FlowdeskError, ValueError):
    """A run refused before it starts because of a variable; ``name`` is the variable."""

    def __init__(self, name: str, message: str, rule: str | None = None) -> None:
        self.name = name
        self.rule = rule  # the rule's field (pattern, enum, min, max, pathMustExist) when one was broken
        super().__init__(message)


def has_no_value(value: Any) -> bool:
    """None or "": what a required variable may not be (a default that is one does not count)."""
    return value is None or (isinstance(value, str) and value == "")


def _quoted(value: Any) -> str:
    """A value as the user wrote it, for a message: text in quotes, anything else as JSON
    (``true``, ``{"a": 1}``), never a Python repr."""
    if isinstance(value, str):
        return f"'{value}'"
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def coerce_variable(value: Any, type_: str) -> Any:
    """``value`` as the declared ``type_``; None (or "" for a non-string) stays None. Raises ValueError."""
    if value is None:
        return None
    if type_ == "number":
        if isinstance(value, bool):
            raise ValueError(f"{_quoted(value)} is not a number")
        if isinstance(value, (int, float)):
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{_quoted(value)} is not a finite number")
            return value
        if isinstance(value, str):
            text = value.strip()
            if not text:
                return None
            try:
                return int(text)
            except ValueError:
                pass
            try:
                number = float(text)
            except ValueError:
                raise ValueError(f"'{value}' is not a number") from None
            if not math.isfinite(number):
                raise ValueError(f"'{value}' is not a finite number")
            return number
        raise ValueError(f"{json.dumps(value)} is not a number")
    if type_ == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, (int, float)) and value in (0, 1):
            return bool(value)
        if isinstance(value, str):
            text = value.strip().lower()
            if not text:
                return None
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
        raise ValueError(f"{_quoted(value)} is not true or false")
    if type_ == "json":
        if isinstance(value, str):
            if not value.strip():
                return None
            try:
                return json.loads(value)
            except json.JSONDecodeError as err:
                raise ValueError(f"'{value}' is not valid JSON ({err.msg} at character {err.pos})") from None
        return value
    # string
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def declared_variables(workflow: Any) -> list[Any]:
    """The Start node's declared variables (``Variable`` models), in order; [] without a Start."""
    start = workflow.start_node()
    if start is None:
        return []
    return list(getattr(start.data, "variables", None) or ())


#: How a variable is given on the command line, as a missing required one's message says it.
GIVE_WITH_VAR = "with --var {name}=VALUE"


def run_variables(
    workflow: Any, arguments: Mapping[str, Any] | None = None, *, give: str | None = GIVE_WITH_VAR
) -> dict[str, Any]:
    """The run's variable map at its start: defaults, overridden by ``arguments``, coerced.

    Raises :class:`VariableError` naming the first variable that does not coerce or is
    required and has no value. ``give`` says, for that message, how the caller gives a
    variable (``{name}`` stands for the variable's name; None: the caller cannot give one,
    as a schedule, so only a default can help).
    """
    arguments = dict(arguments or {})
    result: dict[str, Any] = {}
    for var in declared_variables(workflow):
        name = var.name
        if not name:
            continue
        given = name in arguments
        raw = arguments.pop(name) if given else var.value
        try:
            value = coerce_variable(raw, var.type)
        except ValueError as err:
            where = "the value given" if given else "its default value"
            raise VariableError(name, f"The variable '{name}' ({var.type}) cannot take {where}: {err}.") from None
        if var.required and has_no_value(value):
            how = "a default on the Start node"
            if give is not None:
                how = f"{give.replace('{name}', name)} or {how}"
            raise VariableError(name, f"The variable '{name}' is required and has no value (give it {how}).")
        if not has_no_value(value):
            broken = rule_problem(var, value)
            if broken is not None:
                raise VariableError(name, broken[1], broken[0])
        result[name] = value
    for name, value in arguments.items():  # undeclared arguments are kept as given
        result[name] = value
    return result


def json_safe(variables: Mapping[str, Any]) -> dict[str, Any]:
    """The variable map as plain JSON values (what is not JSON becomes its text), for a run record."""
    try:
        return json.loads(json.dumps(dict(variables), ensure_ascii=False, default=str))
    except (TypeError, ValueError):
        return {str(k): str(v) for k, v in variables.items()}


def _shown(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def rule_problem(var: Any, value: Any) -> tuple[str, str] | None:
    """The first rule of ``var`` that the (coerced, non-empty) ``value`` breaks, as ``(field,
    message)``; None when it keeps them all. A malformed ``pattern`` is itself a problem."""
    name = getattr(var, "name", "")
    pattern = getattr(var, "pattern", None)
    if pattern:
        try:
            ok = re.fullmatch(pattern, _shown(value)) is not None
        except re.error as err:
            return "pattern", f"The variable '{name}' has a pattern that is not a regular expression ({err})."
        if not ok:
            return (
                "pattern",
                f"The variable '{name}' must match the pattern {pattern} (pattern); got '{_shown(value)}'.",
            )
    allowed = getattr(var, "enum", None)
    if allowed:
        if value not in allowed and _shown(value) not in [_shown(a) for a in allowed]:
            listed = ", ".join(_shown(a) for a in allowed)
            return "enum", f"The variable '{name}' must be one of: {listed} (enum); got '{_shown(value)}'."
    low, high = getattr(var, "min", None), getattr(var, "max", None)
    if low is not None or high is not None:
        number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if number is None:
            try:
                number = float(_shown(value))
            except ValueError:
                field = "min" if low is not None else "max"
                return field, f"The variable '{name}' must be a number ({field}); got '{_shown(value)}'."
        if low is not None and number < low:
            return "min", f"The variable '{name}' must be at least {_shown(low)} (min); got {_shown(value)}."
        if high is not None and number > high:
            return "max", f"The variable '{name}' must be at most {_shown(high)} (max); got {_shown(value)}."
    if getattr(var, "pathMustExist", None):
        path = os.path.expanduser(_shown(value))
        if not os.path.exists(os.path.abspath(path)):
            return (
                "pathMustExist",
                f"The variable '{name}' must name an existing file (pathMustExist); "
                f"'{_shown(value)}' does not exist (from {os.getcwd()}).",
            )
    return None


def parse_var_argument(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` (the CLI's ``--var``) as ``(name, value)``; raises ValueError when malformed."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise ValueError(f"--var expects NAME=VALUE, not '{text}'")
    return name, value
