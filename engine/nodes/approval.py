"""The ``approval`` node: pauses the run until a person approves or rejects.

Its step returns a :class:`PauseRequest`; the run pauses (or queues the approval behind a
pending one). The decision comes back through ``answered``: the answer
(``{"decision", "note", ...}``) is the node's output and its ``outputVar``, the step ends, and
the branch goes on along the decision's handle with the output under review (the reviewer's
edit when given), in a frame that carries the decision and note (``APPROVAL_DECISION``,
``APPROVAL_NOTE``).
"""

from __future__ import annotations

from typing import Any

from pydantic import field_validator

from engine.nodes.base import BranchFrame, NodeData, NodeSpec, PauseRequest

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

    def answered(
        self, ctx: Any, node: Any, arrived: Any, flowing: Any, answer: dict[str, Any], now: float, waited_ms: int
    ) -> tuple[Any, str, BranchFrame]:
        node_id = node.id
        ctx.outputs[node_id] = answer
        out_var = node.data.outputVar
        if out_var:
            ctx.variables[out_var] = answer
        ctx.emit(node_id, "step_end", "done", None, now, f'{{"status": "done", "durationMs": {waited_ms}}}')
        ctx.step_recorded(node, arrived, flowing, answer["decision"])
        frame = ctx.frame or _EMPTY_FRAME
        return flowing, answer["decision"], BranchFrame(answer["decision"], answer["note"], frame.loops, frame.fanout)


_EMPTY_FRAME = BranchFrame()
_APPROVE = {"approve", "approved", "yes", "y", "true", "ok", "accept", "accepted"}
_REJECT = {"reject", "rejected", "no", "n", "false", "deny", "denied", "decline"}


def normalise_decision(decision: Any, note: str | None = None) -> dict[str, str]:
    """``{"decision": "approve"|"reject", "note": str}`` from a string, bool or dict."""
    if isinstance(decision, dict):
        note = decision.get("note", note)
        decision = decision.get("decision")
    if isinstance(decision, bool):
        word = "approve" if decision else "reject"
    elif isinstance(decision, str) and decision.strip().lower() in _APPROVE:
        word = "approve"
    elif isinstance(decision, str) and decision.strip().lower() in _REJECT:
        word = "reject"
    else:
        raise ValueError(f"a decision must be 'approve' or 'reject', not {decision!r}")
    return {"decision": word, "note": "" if note is None else str(note)}


SPEC = ApprovalSpec()
