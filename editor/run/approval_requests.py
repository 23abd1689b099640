"""What the approval cards show: one :class:`ApprovalRequest` per approval a run waits for.

Split from :mod:`editor.run.bridge` (which re-exports :class:`ApprovalRequest`): the bridge
owns the run, this module only reads it. :func:`approval_requests` lists the pending
approval (active) then the queued ones, in the order the run will ask them, with what the
card needs: the prompt (the node's, else the last ``wait_input`` prompt of a subflow's
approval), the output under review as text, a tool call waiting for approval, the
decisions besides approve/reject, and the deadline of a timed approval.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine import as_text, option_labels

__all__ = ["ApprovalRequest", "approval_requests"]


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """One approval waiting for a decision: the first in ``approvals()`` is the active one."""

    node_id: str
    title: str
    prompt: str
    input_text: str  # the output under review
    active: bool
    #: A tool call waiting for approval: ``{kind: "tool_call", tool, server?, arguments, schema, ...}``.
    tool_call: dict | None = None
    options: tuple[str, ...] = ()  # decisions besides approve/reject (an approval's option labels)
    deadline: float | None = None  # when the approval takes on_timeout (epoch seconds; active card only)
    on_timeout: str | None = None


def approval_requests(run: Any, wait_prompts: Mapping[str, str]) -> list[ApprovalRequest]:
    """The pending approval of ``run`` (active) then the queued ones, in the order they will be
    asked; ``wait_prompts``: node id -> the prompt of its last ``wait_input`` (subflows)."""
    if run is None or run.pending_approval is None:
        return []
    items = [(run.pending_approval, run.pending_input())]
    items += run.queued_approval_inputs()
    out = []
    for i, (node_id, value) in enumerate(items):
        node = run.workflow.node(node_id)
        prompt = (
            (getattr(node.data, "prompt", "") if node is not None else "")
            or wait_prompts.get(node_id)
            or "Approve or reject to continue."
        )
        call = None
        if i == 0:
            extra = getattr(run, "waiting_extra", lambda: None)()
            if isinstance(extra, dict) and extra.get("kind") == "tool_call":
                call = extra
                prompt = run.waiting_prompt() or prompt
        timeout = run.pause_timeout() if i == 0 and hasattr(run, "pause_timeout") else None
        if i == 0 and hasattr(run, "decisions"):
            options = tuple(d for d in run.decisions() if d not in ("approve", "reject"))
        else:
            options = tuple(option_labels(node.data)) if node is not None and node.type == "approval" else ()
        out.append(
            ApprovalRequest(
                node_id,
                node.title if node is not None else node_id,
                prompt,
                as_text(value),
                i == 0,
                tool_call=call,
                options=options,
                deadline=timeout[0] if timeout else None,
                on_timeout=timeout[1] if timeout else None,
            )
        )
    return out
