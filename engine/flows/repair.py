"""Repair with the model: a failed node's data patched by an LLM, validated before it is shown (no Qt).

:func:`repair_prompt` tells the model the node's kind, its data schema (the kind's pydantic
model as JSON Schema), its data, its input and the error, and asks for ``{"patch": {...},
"reason": "one line"}``. :func:`parse_repair` checks the answer: JSON (a fenced block is
accepted), a patch naming only fields of the schema, and data that still validates once
patched; anything else is refused with :class:`RepairError` saying why. :func:`propose_repair`
does both with a provider; :func:`apply_repair` returns the workflow with the patch applied
(a copy). The editor applies it as one undo step; ``flowdesk repair RUN_ID [--apply]`` writes
the file atomically after confirmation.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from engine.errors import FlowdeskError
from engine.graph.model import Workflow
from engine.llm.base import AgentInvocation, LLMProvider, NoToolsContext
from engine.nodes import spec_for

__all__ = [
    "RepairError",
    "RepairProposal",
    "repair_prompt",
    "parse_repair",
    "propose_repair",
    "apply_repair",
    "failed_node",
]

REPAIR_SYSTEM_PROMPT = (
    "You repair one failing node of a Flowdesk workflow. You get the node's kind, the JSON Schema of its data, "
    "its current data, the input it got and the error it failed with. Answer with one JSON object only: "
    '{"patch": {<only the data fields to change, with their new values>}, "reason": "<one line: what was wrong>"}. '
    "Change as little as possible; never invent fields the schema does not have."
)


class RepairError(FlowdeskError, ValueError):
    """The model's proposed repair cannot be used; the message says why."""


@dataclass
class RepairProposal:
    node_id: str
    kind: str
    patch: dict[str, Any]
    reason: str
    before: dict[str, Any]
    after: dict[str, Any]
    changes: list[tuple[str, Any, Any]] = field(default_factory=list)  # (field, before, after)

    def to_json(self) -> dict[str, Any]:
        return {
            "nodeId": self.node_id,
            "kind": self.kind,
            "patch": self.patch,
            "reason": self.reason,
            "changes": [{"field": f, "before": b, "after": a} for f, b, a in self.changes],
        }


def _data(node: Any) -> dict[str, Any]:
    return {k: v for k, v in node.data.model_dump(mode="json").items() if k not in ("pinnedOutput", "collapsed")}


def repair_prompt(workflow: Workflow, node_id: str, input_text: str | None, error: str) -> str:
    node = workflow.node(node_id)
    if node is None:
        raise RepairError(f"the workflow has no node '{node_id}'")
    spec = spec_for(node.type)
    if spec is None:
        raise RepairError(f"node '{node_id}' has an unknown kind '{node.type}'")
    schema = spec.data_model.model_json_schema()
    return (
        f"Node kind: {node.type}\n\nData schema (JSON Schema):\n{json.dumps(schema, ensure_ascii=False)}\n\n"
        f"Current data:\n{json.dumps(_data(node), ensure_ascii=False)}\n\n"
        f"Input it got:\n{input_text or '(none)'}\n\nError:\n{error}\n"
    )


_FENCE = re.compile(r"```(?:json)?\s*(\{.*\})\s*```", re.S)


def parse_repair(workflow: Workflow, node_id: str, answer: str) -> RepairProposal:
    """The model's answer checked against the node's schema (RepairError with the reason otherwise)."""
    node = workflow.node(node_id)
    if node is None:
        raise RepairError(f"the workflow has no node '{node_id}'")
    spec = spec_for(node.type)
    if spec is None:
        raise RepairError(f"node '{node_id}' has an unknown kind '{node.type}'")
    text = answer.strip()
    m = _FENCE.search(text)
    if m:
        text = m.group(1)
    elif not text.startswith("{") and "{" in text:
        text = text[text.index("{") : text.rindex("}") + 1]
    try:
        obj = json.loads(text)
    except ValueError:
        raise RepairError("the model's answer is not JSON: " + (answer.strip()[:120] or "(empty)")) from None
    if not isinstance(obj, dict) or not isinstance(obj.get("patch"), dict):
        raise RepairError('the model\'s answer has no "patch" object of fields to change')
    patch = obj["patch"]
    reason = " ".join(str(obj.get("reason") or "").split()) or "(no reason given)"
    if not patch:
        raise RepairError(f"the model proposes no change ({reason})")
    known = set(spec.data_model.model_fields)
    unknown = sorted(k for k in patch if k not in known)
    if unknown:
        raise RepairError(f"the patch names fields that a {node.type} node does not have: {', '.join(unknown)}")
    before = _data(node)
    merged = {**node.data.model_dump(), **patch}
    try:
        validated = spec.data_model.model_validate(merged)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "data"
        raise RepairError(f"the patched data is not valid: {where}: {first.get('msg')}") from None
    after = {k: v for k, v in validated.model_dump(mode="json").items() if k not in ("pinnedOutput", "collapsed")}
    changes = [
        (k, before.get(k), after.get(k)) for k in sorted(set(before) | set(after)) if before.get(k) != after.get(k)
    ]
    if not changes:
        raise RepairError(f"the patch changes nothing ({reason})")
    return RepairProposal(node_id, node.type, patch, reason, before, after, changes)


async def propose_repair(
    provider: LLMProvider, workflow: Workflow, node_id: str, input_text: str | None, error: str, *, model: str = ""
) -> RepairProposal:
    """Ask ``provider`` for a repair of the failed node and check it (RepairError when unusable)."""
    prompt = repair_prompt(workflow, node_id, input_text, error)
    inv = AgentInvocation(
        node_id=f"repair:{node_id}",
        name="Repair",
        system_prompt=REPAIR_SYSTEM_PROMPT,
        user_content=prompt,
        model=model,
        reasoning_effort="low",
        tools={"web_search": False, "subagents": False},
        subagents=[],
    )

    result = await provider.complete(inv, NoToolsContext(inv.node_id))
    return parse_repair(workflow, node_id, result.text)


def apply_repair(workflow: Workflow, proposal: RepairProposal) -> Workflow:
    """A copy of ``workflow`` with the proposal's patch applied to its node."""
    wf = workflow.model_copy(deep=True)
    node = wf.node(proposal.node_id)
    if node is None:
        raise RepairError(f"the workflow has no node '{proposal.node_id}'")
    spec = spec_for(node.type)
    if spec is None:
        raise RepairError(f"node '{proposal.node_id}' is of an unknown kind '{node.type}'")
    node.data = spec.data_model.model_validate({**node.data.model_dump(), **proposal.patch})
    return wf


def failed_node(state: Any) -> tuple[str, str | None, str] | None:
    """(node id, input, error) of a run's failed node (from its RunState), None when none failed."""
    for nid, s in state.states.items():
        if s == "failed":
            d = state.details.get(nid)
            return nid, (d.input if d else None), (d.error if d and d.error else "failed")
    return None
