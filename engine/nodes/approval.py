"""The ``approval`` node: pauses the run until a person approves or rejects."""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from engine.nodes.base import NodeData, NodeSpec, PauseRequest

_OUTPUTS = ("approve", "reject")


class ApprovalData(NodeData):
    prompt: str = ""

    @field_validator("prompt", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v


class ApprovalSpec(NodeSpec):
    kind = "approval"
    data_model = ApprovalData
    reports_output = True
    label = "Approval"
    description = "Pauses until a person approves or rejects."
    icon = "approval"
    color = "#8957e5"
    width = 224.0
    category = "Flow"
    chooses = True
    no_branch = ("approval_no_branch", "{label} has neither an Approve nor a Reject branch connected.")

    def outputs(self, data: NodeData) -> tuple[str, ...]:
        return _OUTPUTS

    def has_output(self, data: NodeData, handle: str) -> bool:
        return handle == "approve" or handle == "reject"

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        return [(" ".join(getattr(data, "prompt", "").split()) or "(no message)", False)]

    def new_data(self) -> dict[str, Any]:
        return {"prompt": "Please review and approve."}

    def pause_prompt(self, data: NodeData) -> str:
        return getattr(data, "prompt", "") or "Approve or reject to continue."

    async def execute(self, ctx: Any, node: Any, value: Any) -> PauseRequest:
        return PauseRequest(self.pause_prompt(node.data))


SPEC = ApprovalSpec()
