"""The ``start`` node: where a run begins; its output is the run's initial input."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import Field, field_validator

from engine.graph.templates import resolve_templates
from engine.nodes.base import NodeData, NodeSpec, _Loose

VARIABLE_TYPES = ("string", "number", "boolean", "json")


class Variable(_Loose):
    """One of the run's variables, declared on the Start node.

    docs/design.md, "Data flow: variables and templates".

    ``value`` is the default (any JSON value; coerced to ``type`` when a run starts),
    ``type`` one of ``string`` (default), ``number``, ``boolean``, ``json``; a ``required``
    variable must have a value (a default or a run argument) or the run is refused.
    """

    name: str = ""
    value: Any = None
    description: str = ""
    type: Literal["string", "number", "boolean", "json"] = "string"
    required: bool = False
    # Rules a given value must keep (docs/flows.md, "Variables"); absent ones are left out of the
    # file. Checked by engine.graph.variables.check_rules before a run starts.
    pattern: str | None = Field(default=None, exclude_if=lambda v: v is None)
    enum: list[Any] | None = Field(default=None, exclude_if=lambda v: v is None)
    min: int | float | None = Field(default=None, exclude_if=lambda v: v is None)
    max: int | float | None = Field(default=None, exclude_if=lambda v: v is None)
    pathMustExist: bool | None = Field(default=None, exclude_if=lambda v: v is None)

    @field_validator("name", "description", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        return "" if v is None else v.strip() if isinstance(v, str) else v

    @field_validator("type", mode="before")
    @classmethod
    def _type(cls, v: Any) -> Any:
        if v is None or v == "":
            return "string"
        if isinstance(v, str):
            v = v.strip().lower()
            return {
                "str": "string",
                "text": "string",
                "int": "number",
                "integer": "number",
                "float": "number",
                "bool": "boolean",
                "object": "json",
                "array": "json",
                "list": "json",
            }.get(v, v)
        return v

    @field_validator("required", mode="before")
    @classmethod
    def _required(cls, v: Any) -> Any:
        return False if v is None else v


class StartData(NodeData):
    initialInput: str = ""
    # Left out of the file while empty: an AgentFlow file round-trips unchanged.
    variables: list[Variable] = Field(default_factory=list, exclude_if=lambda v: not v)

    @field_validator("variables", mode="before")
    @classmethod
    def _variables(cls, v: Any) -> Any:
        return [] if v is None else v

    @field_validator("initialInput", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v


def _one_line(text: str) -> str:
    return " ".join(text.split())


class StartSpec(NodeSpec):
    kind = "start"
    data_model = StartData
    reports_output = True
    label = "Start"
    description = "Where a run begins; holds the initial input."
    icon = "start"
    color = "#2ea043"
    width = 216.0
    category = "Flow"
    inputs = ()
    entry = True
    no_input_message = "Start has no input; it is where a run begins."

    def outputs(self, data: NodeData) -> tuple[str, ...]:
        return ("output",)

    def has_output(self, data: NodeData, handle: str) -> bool:
        return handle == "output"

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        lines = [(_one_line(getattr(data, "initialInput", "")) or "(run input)", False)]
        names = [f"{v.name}{'*' if v.required else ''}" for v in getattr(data, "variables", None) or [] if v.name]
        if names:  # the run's arguments: what the run console will ask for (* required)
            lines.append((", ".join(names), True))
        return lines

    def new_data(self) -> dict[str, Any]:
        return {"initialInput": ""}

    def check(self, node: Any, checks: Any) -> None:
        """A variable's ``pattern`` must be a regular expression (a run would be refused anyway)."""
        for var in getattr(node.data, "variables", None) or ():
            if var.pattern:
                try:
                    re.compile(var.pattern)
                except re.error as err:
                    checks.error(
                        "variable_rule_invalid",
                        f"The variable '{var.name}' has a pattern that is not a regular expression ({err}).",
                    )

    async def execute(self, ctx: Any, node: Any, value: Any) -> tuple[Any, str]:
        given = ctx.initial_input
        output = given if given is not None else node.data.initialInput
        if output.__class__ is str and "{" in output and given is None:
            # The Start node's own text is data like any other: its templates ({{topic}}, a
            # subflow's inputs as variables) are resolved when it runs. A run's given input is
            # taken as it is.

            output = resolve_templates(output, ctx.scope(node, value))
        ctx.last_text_output = output
        return output, "output"


SPEC = StartSpec()
