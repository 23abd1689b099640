"""The ``start`` node: where a run begins; its output is the run's initial input."""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from .base import NodeData, NodeSpec


class StartData(NodeData):
    initialInput: str = ""

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
        return [(_one_line(getattr(data, "initialInput", "")) or "(run input)", False)]

    def new_data(self) -> dict[str, Any]:
        return {"initialInput": ""}

    async def execute(self, ctx: Any, node: Any, value: Any) -> tuple[Any, str]:
        run = ctx.run
        output = run.initial_input if run.initial_input is not None else node.data.initialInput
        run.last_text_output = output
        return output, "output"


SPEC = StartSpec()
