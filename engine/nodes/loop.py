"""The ``loop`` node: runs its ``body`` again and again until a condition or a bound.

Semantics (DESIGN.md, "More node kinds"): the first arrival starts iteration 1 and follows
``body`` with the input. Each later arrival (the body leading back into the loop) ends an
iteration: when its output contains ``until`` (trimmed, case-insensitive; an empty ``until``
never matches) or the iteration was the ``maxIterations``-th, the loop follows ``done`` with
that output; otherwise the next iteration follows ``body`` with it. Each check logs
``loop_check`` with ``{iteration, matched}``. The loop's counter is the runtime's
(``Run._loops``, kept in snapshots); the ``iteration`` built-in of the steps inside the body
is the innermost loop's iteration. A bounded loop never trips the run's visit guard.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from engine.nodes.base import NodeData, NodeSpec

DEFAULT_MAX_ITERATIONS = 10
LOOP_CHECK = "loop_check"


class LoopData(NodeData):
    maxIterations: int = Field(default=DEFAULT_MAX_ITERATIONS, ge=1)
    until: str = Field(default="", description="Stops when an iteration's output contains this (any case); "
                                               "empty: runs all iterations.")

    @field_validator("maxIterations", mode="before")
    @classmethod
    def _max(cls, v: Any) -> Any:
        if v is None or v == "":
            return DEFAULT_MAX_ITERATIONS
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, str) and v.strip().isdigit():
            return int(v.strip())
        return v

    @field_validator("until", mode="before")
    @classmethod
    def _until(cls, v: Any) -> Any:
        return "" if v is None else v


def until_matches(until: str, output_text: str) -> bool:
    """Whether an iteration's output ends the loop by ``until`` (substring, trimmed, any case)."""
    word = until.strip().lower()
    return bool(word) and word in output_text.lower()


class LoopSpec(NodeSpec):
    kind = "loop"
    data_model = LoopData
    reports_output = False  # node_output says which handle (body or done) was followed
    label = "Loop"
    description = "Repeats its body until a word or a limit."
    icon = "loop"
    color = "#b0417a"
    width = 216.0
    category = "Flow"
    chooses = True
    no_branch = ("loop_no_body", "{label} has no Body branch connected.")
    handle_labels = {"body": "Body", "done": "Done"}

    def outputs(self, data: NodeData) -> tuple[str, ...]:
        return ("body", "done")

    def has_output(self, data: NodeData, handle: str) -> bool:
        return handle == "body" or handle == "done"

    def plain_output(self) -> bool:
        return False

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        until = " ".join(getattr(data, "until", "").split())
        bound = f"at most {getattr(data, 'maxIterations', DEFAULT_MAX_ITERATIONS)} times"
        return [(f"until “{until}”, {bound}" if until else bound, False)]

    def new_data(self) -> dict[str, Any]:
        return {"maxIterations": DEFAULT_MAX_ITERATIONS, "until": ""}

    def check(self, node: Any, checks: Any) -> None:
        handles = {h for h, _raw, _t in checks.index.exec_out_handles.get(node.id, ())}
        if "body" not in handles:
            checks.error("loop_no_body", f"{checks.label(node)} has no Body branch connected.")

    async def execute(self, ctx: Any, node: Any, value: Any) -> tuple[Any, str]:
        # The runtime runs loops itself (``Run._loop_step``): the counter lives in the run.
        return await ctx.run._loop_step(node, value)

    def replayed(self, ctx: Any, node: Any, handle: Any) -> None:
        # a reused step (a run from a node after the loop): the iteration it was, counted
        ctx.run._loop_turn(node.id, handle)


SPEC = LoopSpec()
