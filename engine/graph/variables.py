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
* :func:`parse_var_argument` ``("NAME=VALUE") -> (name, value)`` for the CLI.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from engine.errors import FlowdeskError

__all__ = ["VariableError", "coerce_variable", "run_variables", "parse_var_argument", "declared_variables"]

_TRUE = {"true", "yes", "y", "1", "on"}
_FALSE = {"false", "no", "n", "0", "off"}


class VariableError(FlowdeskError, ValueError):
    """A run refused before it starts because of a variable; ``name`` is the variable."""

    def __init__(self, name: str, message: str) -> None:
        self.name = name
        super().__init__(message)


def _empty(value: Any) -> bool:
    return value is None or (isinstance(value, str) and value == "")


def coerce_variable(value: Any, type_: str) -> Any:
    """``value`` as the declared ``type_``; None (or "" for a non-string) stays None. Raises ValueError."""
    if value is None:
        return None
    if type_ == "number":
        if isinstance(value, bool):
            raise ValueError(f"{value!r} is not a number")
        if isinstance(value, (int, float)):
            if isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{value!r} is not a finite number")
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
        raise ValueError(f"{value!r} is not true or false")
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


def run_variables(workflow: Any, arguments: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The run's variable map at its start: defaults, overridden by ``arguments``, coerced.

    Raises :class:`VariableError` naming the first variable that does not coerce or is
    required and has no value.
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
        if var.required and _empty(value):
            raise VariableError(
                name,
                f"The variable '{name}' is required and has no value "
                f"(give it with --var {name}=VALUE or a default on the Start node).",
            )
        result[name] = value
    for name, value in arguments.items():  # undeclared arguments are kept as given
        result[name] = value
    return result


def parse_var_argument(text: str) -> tuple[str, str]:
    """``NAME=VALUE`` (the CLI's ``--var``) as ``(name, value)``; raises ValueError when malformed."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise ValueError(f"--var expects NAME=VALUE, not '{text}'")
    return name, value
