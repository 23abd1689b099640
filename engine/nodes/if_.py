"""The ``if`` node: routes by what the previous output says (conditions checked in order)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from engine.nodes.base import NodeData, NodeSpec, _Loose, as_text

_LOGIC_CHECK = "logic_check"


class Condition(_Loose):
    operator: Literal["equal", "contains"] = "contains"
    value: str = ""

    @field_validator("operator", mode="before")
    @classmethod
    def _operator(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = v.strip().lower()
            return {"equals": "equal", "eq": "equal", "==": "equal", "includes": "contains"}.get(v, v)
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
                return f"Condition {i + 1}: {cond.operator} '{cond.value}'"
            except (ValueError, IndexError, AttributeError):
                return handle
        return super().handle_label(data, handle)

    def new_data(self) -> dict[str, Any]:
        return {"conditions": [{"operator": "contains", "value": ""}]}

    def check(self, node: Any, checks: Any) -> None:
        for i, cond in enumerate(node.data.conditions):
            if not cond.value.strip():
                checks.warning("empty_condition_value",
                               f"Condition {i + 1} of {checks.label(node)} has an empty value; it never matches.")

    async def execute(self, ctx: Any, node: Any, value: Any) -> tuple[Any, str]:
        text = as_text(value).lower()
        emit = ctx.emit
        for i, cond in enumerate(node.data.conditions):
            want = cond.value.strip().lower()
            if not want:
                matched = False
            elif cond.operator == "equal":
                matched = text == want
            else:
                matched = want in text
            emit(node.id, _LOGIC_CHECK,
                 f"Condition {i + 1}: {cond.operator} '{cond.value.strip()}' → {'matched' if matched else 'no match'}",
                 {"conditionIndex": i, "matched": matched})
            if matched:
                return value, f"condition-{i}"
        emit(node.id, _LOGIC_CHECK, "No condition matched → Else branch", {"conditionIndex": None, "matched": False})
        return value, "false"


SPEC = IfSpec()
