"""The ``approval`` node: pauses the run until a person approves, rejects or picks an option.

Its step returns a :class:`PauseRequest`; the run pauses (or queues the approval behind a
pending one). The decision comes back through ``answered``: the answer
(``{"decision", "note", ...}``) is the node's output and its ``outputVar``, the step ends, and
the branch goes on along the decision's handle with the output under review (the reviewer's
edit when given), in a frame that carries the decision and note (``APPROVAL_DECISION``,
``APPROVAL_NOTE``).

Richer approvals (docs/design.md, "Serving, inbox and schedules"):

* ``options: [label, ...]`` adds one output handle per label besides ``approve`` and
  ``reject``; the handle *is* the label (as ``approve``/``reject`` are the decisions' words),
  so a decision ``LABEL`` follows the links whose ``sourceHandle`` is ``LABEL``. Labels are
  matched case-insensitively when a decision is given (``--decide later`` picks ``Later``).
* ``timeoutMs`` with ``onTimeout`` (``approve`` | ``reject``, or one of the options; default
  ``reject``): the pause has a deadline (:meth:`ApprovalSpec.pause_deadline`, kept in the
  run's snapshot); at the deadline the run takes ``onTimeout`` and ``input_received`` records
  ``timedOut: true``. Who waits for the deadline is the run's owner (``Run.expire``).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from engine.nodes.base import BranchFrame, NodeData, NodeSpec, PauseRequest, is_none

_OUTPUTS = ("approve", "reject")
#: The decisions every approval takes (before its options).
DECISIONS = _OUTPUTS
DEFAULT_ON_TIMEOUT = "reject"


class ApprovalData(NodeData):
    prompt: str = ""
    #: More outcomes than approve/reject: one output handle per label (the handle is the label).
    options: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)
    #: How long the approval waits before it takes ``onTimeout`` (absent or 0: for ever).
    timeoutMs: int | None = Field(default=None, exclude_if=is_none)
    #: The decision taken at the deadline: approve, reject (default) or one of the options.
    onTimeout: str | None = Field(default=None, exclude_if=is_none)

    @field_validator("prompt", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v

    @field_validator("options", mode="before")
    @classmethod
    def _labels(cls, v: Any) -> Any:
        if v is None:
            return []
        if isinstance(v, str):
            return [v]
        if isinstance(v, list):
            return [str(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else x for x in v]
        return v

    @field_validator("timeoutMs", mode="before")
    @classmethod
    def _whole(cls, v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, str):
            v = v.strip()
            return int(v) if v.isdigit() else (None if not v else v)
        return v

    @field_validator("onTimeout", mode="before")
    @classmethod
    def _on_timeout(cls, v: Any) -> Any:
        if isinstance(v, str):
            return v.strip() or None
        return v


def option_labels(data: Any) -> list[str]:
    """The approval's option labels as written (stripped; empty ones left out)."""
    return [str(o).strip() for o in (getattr(data, "options", None) or ()) if str(o).strip()]


def timeout_of(data: Any) -> tuple[int, str] | None:
    """``(timeoutMs, onTimeout)`` of an approval that times out (None when it waits for ever)."""
    ms = getattr(data, "timeoutMs", None)
    if not isinstance(ms, int) or isinstance(ms, bool) or ms <= 0:
        return None
    word = getattr(data, "onTimeout", None) or DEFAULT_ON_TIMEOUT
    try:
        decision = normalise_decision(word, options=option_labels(data))["decision"]
    except ValueError:
        decision = DEFAULT_ON_TIMEOUT  # (validation reports it; a run never takes an unknown handle)
    return ms, decision


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
        labels = option_labels(data)
        if not labels:
            return _OUTPUTS
        return _OUTPUTS + tuple(dict.fromkeys(lab for lab in labels if lab.lower() not in _OUTPUTS))

    def has_output(self, data: NodeData, handle: str) -> bool:
        return handle == "approve" or handle == "reject" or handle in option_labels(data)

    def handle_label(self, data: NodeData, handle: str) -> str:
        return handle if handle in option_labels(data) else super().handle_label(data, handle)

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        lines = [(" ".join(getattr(data, "prompt", "").split()) or "(no message)", False)]
        timeout = timeout_of(data)
        if timeout is not None:
            lines.append((f"times out after {_duration(timeout[0])}: {timeout[1]}", True))
        return lines

    def new_data(self) -> dict[str, Any]:
        return {"prompt": "Please review and approve."}

    def pause_prompt(self, data: NodeData) -> str:
        return getattr(data, "prompt", "") or "Approve or reject to continue."

    def decisions(self, ctx: Any, node: Any) -> tuple[str, ...]:
        return _OUTPUTS + tuple(option_labels(node.data))

    def pause_deadline(self, ctx: Any, node: Any, since: float) -> tuple[float, str] | None:
        timeout = timeout_of(node.data)
        return None if timeout is None else (since + timeout[0] / 1000, timeout[1])

    def check(self, node: Any, checks: Any) -> None:
        data = node.data
        label = checks.label(node)
        seen: set[str] = set()
        for i, raw in enumerate(getattr(data, "options", None) or ()):
            text = str(raw).strip()
            if not text:
                checks.error("approval_option_empty", f"Option {i + 1} of {label} has no label.")
                continue
            low = text.lower()
            if low in _OUTPUTS:
                checks.error(
                    "approval_option_reserved",
                    f"{label} has the option '{text}', which is already one of its decisions (approve, reject).",
                )
            elif low in seen:
                checks.error(
                    "approval_option_duplicate", f"{label} has the option '{text}' twice; options must differ."
                )
            elif ":" in text:
                checks.warning(
                    "approval_option_colon",
                    f"The option '{text}' of {label} holds ':', which `flowdesk resume --decide LABEL:NOTE` "
                    "reads as the start of the note.",
                )
            seen.add(low)
        linked = {h for h, _t in checks.index.steps_out.get(node.id, ())}
        for text in option_labels(data):
            if text.lower() not in _OUTPUTS and text not in linked:
                checks.warning(
                    "approval_option_unlinked",
                    f"The option '{text}' of {label} has no branch connected: choosing it ends that branch.",
                )
        ms = getattr(data, "timeoutMs", None)
        if ms is not None and (not isinstance(ms, int) or ms < 0):
            checks.error(
                "approval_bad_timeout", f"{label}: timeoutMs must be a whole number of milliseconds, 0 or more."
            )
        word = getattr(data, "onTimeout", None)
        if word:
            try:
                normalise_decision(word, options=option_labels(data))
            except ValueError:
                choices = ", ".join(["approve", "reject", *option_labels(data)])
                checks.error(
                    "approval_bad_on_timeout",
                    f"{label}: onTimeout '{word}' is not one of its decisions ({choices}).",
                )
            if not ms:
                checks.warning(
                    "approval_on_timeout_unused", f"{label} has onTimeout but no timeoutMs, so it never times out."
                )

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


def normalise_decision(decision: Any, note: str | None = None, *, options: Any = ()) -> dict[str, Any]:
    """``{"decision": "approve"|"reject"|LABEL, "note": str}`` from a string, bool or dict.

    ``options``: the approval's option labels; a decision naming one (case-insensitively) is that
    label as written. A dict's ``timedOut: true`` is kept (the decision was taken at a deadline)."""
    timed_out = False
    if isinstance(decision, dict):
        note = decision.get("note", note)
        timed_out = decision.get("timedOut") is True
        decision = decision.get("decision")
    word: str | None = None
    if isinstance(decision, bool):
        word = "approve" if decision else "reject"
    elif isinstance(decision, str):
        low = decision.strip().lower()
        word = next((o for o in options if o.strip().lower() == low), None) if low else None
        if word is None and low in _APPROVE:
            word = "approve"
        elif word is None and low in _REJECT:
            word = "reject"
    if word is None:
        choices = ", ".join(f"'{c}'" for c in dict.fromkeys(("approve", "reject", *options)))
        raise ValueError(f"a decision must be one of {choices}, not {decision!r}")
    answer: dict[str, Any] = {"decision": word, "note": "" if note is None else str(note)}
    if timed_out:
        answer["timedOut"] = True
    return answer


def _duration(ms: int) -> str:
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:g} s"
    if seconds < 3600:
        return f"{seconds / 60:g} min"
    if seconds < 86400:
        return f"{seconds / 3600:.3g} h"
    return f"{seconds / 86400:.3g} d"


SPEC = ApprovalSpec()
