"""The ``join`` node: waits for the branches that lead into it, then fires once.

Semantics (DESIGN.md, "More node kinds"): the node fires once every incoming link whose source
can still run in this run has delivered; an untaken branch, a skipped or failed source does not
hold it back, a branch paused at an approval does. Its output is the list of delivered outputs in
the order of the join's incoming links as they stand in the file's ``connections`` (``mode:
"list"``, the default), or their text joined with ``separator`` (default a blank line) with
``mode: "text"``; the list is also the ``__fanout`` built-in of later steps.

The waiting (the join's buffer of arrivals) is the runtime's (``Run._arrive_join``); ``execute``
only shapes the output once the buffer is complete (the delivered values, in link order).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from engine.nodes.base import NodeData, NodeSpec, as_text

DEFAULT_SEPARATOR = "\n\n"


class JoinData(NodeData):
    mode: Literal["list", "text"] = "list"
    separator: str = Field(default=DEFAULT_SEPARATOR, json_schema_extra={"multiline": True})

    @field_validator("mode", mode="before")
    @classmethod
    def _mode(cls, v: Any) -> Any:
        if v is None:
            return "list"
        return v.strip().lower() if isinstance(v, str) else v

    @field_validator("separator", mode="before")
    @classmethod
    def _separator(cls, v: Any) -> Any:
        return DEFAULT_SEPARATOR if v is None else v


def join_output(data: JoinData, values: list[Any]) -> Any:
    """What a join outputs for the delivered ``values`` (in link order)."""
    if getattr(data, "mode", "list") == "text":
        return data.separator.join(as_text(v) for v in values)
    return list(values)


class JoinSpec(NodeSpec):
    kind = "join"
    data_model = JoinData
    label = "Join"
    description = "Waits for its branches, then goes on once."
    icon = "join"
    color = "#1f8a8a"
    width = 200.0
    category = "Flow"
    handle_labels = {"output": "output"}
    gathers = True

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        if getattr(data, "mode", "list") == "text":
            sep = getattr(data, "separator", DEFAULT_SEPARATOR)
            shown = sep.replace("\n", "\\n") if sep else "(nothing)"
            return [(f"text, joined with {shown}", False)]
        return [("list of the branches' outputs", False)]

    def new_data(self) -> dict[str, Any]:
        return {"mode": "list", "separator": DEFAULT_SEPARATOR}

    async def execute(self, ctx: Any, node: Any, value: Any) -> tuple[Any, str]:
        # ``value`` is the list the runtime gathered (see the module docstring).
        values = value if isinstance(value, list) else [value]
        return join_output(node.data, values), "output"


SPEC = JoinSpec()
