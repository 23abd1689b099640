"""The ``loop`` node: runs its ``body`` again and again until a condition or a bound.

Semantics (docs/design.md, "More node kinds"): the first arrival starts iteration 1 and follows
``body`` with the input. Each later arrival (the body leading back into the loop) ends an
iteration: when its output contains ``until`` (trimmed, case-insensitive; an empty ``until``
never matches) or the iteration was the ``maxIterations``-th, the loop follows ``done`` with
that output; otherwise the next iteration follows ``body`` with it. Each check logs
``loop_check`` with ``{iteration, matched}``. The loop's counter is its state in the run
(``RunContext.state``: the iteration, kept in snapshots under ``loops``); the branch's frame
lists the loops it is inside, and the ``iteration`` built-in of the steps inside the body is
the innermost loop's iteration. A bounded loop never trips the run's visit guard.

With ``over`` (a template resolving to a list, e.g. ``{{rows}}``; JSON text of a list is read
as the list) the loop walks the list: each round sends one item along ``body`` (``{{item}}`` and
``{{iteration}}`` in the body's templates), each arrival back ends the round (``loop_check`` with
``{iteration, matched: false, total}``) and collects what came back; after the last item the loop
follows ``done`` with the list of the rounds' results (``maxIterations`` still caps the rounds,
``until`` is ignored). An empty list follows ``done`` with ``[]`` at once. Its state is then
``{iteration, item, items, results}`` (JSON, so a pause inside a round resumes from a snapshot in
another process).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field, field_validator

from engine.nodes.base import BranchFrame, NodeData, NodeError, NodeSpec, as_text, is_none

DEFAULT_MAX_ITERATIONS = 10
LOOP_CHECK = "loop_check"


class LoopData(NodeData):
    maxIterations: int = Field(default=DEFAULT_MAX_ITERATIONS, ge=1)
    until: str = Field(
        default="", description="Stops when an iteration's output contains this (any case); empty: runs all iterations."
    )
    over: str | None = Field(
        default=None,
        exclude_if=is_none,
        description="A list to walk (a template such as {{rows}}); each round's "
        "item is {{item}}. Empty: repeat until a word or the limit.",
    )

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

    @field_validator("over", mode="before")
    @classmethod
    def _over(cls, v: Any) -> Any:
        return (v.strip() or None) if isinstance(v, str) else v


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
        over = " ".join((getattr(data, "over", None) or "").split())
        if over:
            return [(f"each item of {over}, at most {getattr(data, 'maxIterations', DEFAULT_MAX_ITERATIONS)}", False)]
        until = " ".join(getattr(data, "until", "").split())
        bound = f"at most {getattr(data, 'maxIterations', DEFAULT_MAX_ITERATIONS)} times"
        return [(f"until “{until}”, {bound}" if until else bound, False)]

    def new_data(self) -> dict[str, Any]:
        return {"maxIterations": DEFAULT_MAX_ITERATIONS, "until": ""}

    def check(self, node: Any, checks: Any) -> None:
        handles = {h for h, _raw, _t in checks.index.exec_out_handles.get(node.id, ())}
        if "body" not in handles:
            checks.error("loop_no_body", f"{checks.label(node)} has no Body branch connected.")

    state_key = "loops"
    state_always = True

    async def execute(self, ctx: Any, node: Any, value: Any) -> tuple[Any, str]:
        """Start, go round again, or be done."""
        loop_id = node.id
        frame = ctx.frame or _EMPTY_FRAME
        if getattr(node.data, "over", None):
            return self._walk(ctx, node, value, frame)
        if loop_id in frame.loops:  # the body came back: one iteration ended
            iteration = ctx.state(loop_id, 1)
            data = node.data
            matched = until_matches(getattr(data, "until", ""), as_text(value))
            ctx.emit(
                loop_id,
                LOOP_CHECK,
                f"iteration {iteration}: {'matched' if matched else 'not matched'}",
                {"iteration": iteration, "matched": matched},
            )
            if matched or iteration >= (getattr(data, "maxIterations", None) or DEFAULT_MAX_ITERATIONS):
                _turn(ctx, loop_id, "done")
                return value, "done"
        _turn(ctx, loop_id, "body")
        return value, "body"

    def _walk(self, ctx: Any, node: Any, value: Any, frame: BranchFrame) -> tuple[Any, str]:
        """A loop over a list: start the walk, or collect a round's result and go on or be done."""
        loop_id = node.id
        state = ctx.state(loop_id)
        if loop_id in frame.loops and isinstance(state, dict):  # a round came back
            iteration = state["iteration"]
            results = [*state["results"], value]
            items = state["items"]
            ctx.emit(
                loop_id,
                LOOP_CHECK,
                f"item {iteration} of {len(items)} done",
                {"iteration": iteration, "matched": False, "total": len(items)},
            )
            if iteration >= len(items):
                ctx.drop_state(loop_id)
                ctx.set_frame(frame._replace(loops=frame.loops[: frame.loops.index(loop_id)]))
                return results, "done"
            ctx.set_state(loop_id, {**state, "iteration": iteration + 1, "item": items[iteration], "results": results})
            _fresh(ctx, loop_id)
            return items[iteration], "body"
        items = self._items(ctx, node, value)
        if not items:
            return [], "done"
        ctx.set_state(loop_id, {"iteration": 1, "item": items[0], "items": items, "results": []})
        if loop_id not in frame.loops:
            ctx.set_frame(frame._replace(loops=(*frame.loops, loop_id)))
        _fresh(ctx, loop_id)
        return items[0], "body"

    def _items(self, ctx: Any, node: Any, value: Any) -> list[Any]:
        """The list ``over`` resolves to (capped by ``maxIterations``); NodeError when it is not one."""
        resolved = ctx.resolve_data(node, value)
        found = resolved.value.get("over") if isinstance(resolved.value, dict) else None
        if isinstance(found, str):
            try:
                found = json.loads(found) if found.strip() else []
            except ValueError:
                pass
        if not isinstance(found, list):
            shown = as_text(found)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise NodeError(f"{self.describe(node)} walks '{node.data.over}', which is not a list (it is '{shown}').")
        limit = getattr(node.data, "maxIterations", None) or DEFAULT_MAX_ITERATIONS
        return found[:limit]

    def replayed(self, ctx: Any, node: Any, handle: Any) -> None:
        # a reused step (a run from a node after the loop): the iteration it was, counted, so a
        # run from a node after a loop whose steps are reused counts as the recorded run did
        _turn(ctx, node.id, handle)

    def state_from_json(self, ctx: Any, data: Any) -> Any:
        if isinstance(data, dict):  # a loop over a list (see the module docstring)
            return {
                "iteration": int(data.get("iteration", 1)),
                "item": data.get("item"),
                "items": list(data.get("items") or ()),
                "results": list(data.get("results") or ()),
            }
        return int(data)


_EMPTY_FRAME = BranchFrame()


def _turn(ctx: Any, loop_id: str, handle: str) -> None:
    """The loop's state after a step that followed ``handle``: ``done`` leaves the loop; ``body``
    starts iteration 1, or the next one when the body came back."""
    frame = ctx.frame or _EMPTY_FRAME
    if handle == "done":
        ctx.drop_state(loop_id)
        if loop_id in frame.loops:
            ctx.set_frame(frame._replace(loops=frame.loops[: frame.loops.index(loop_id)]))
        return
    if loop_id in frame.loops:
        state = ctx.state(loop_id, 1)
        if isinstance(state, dict):  # a reused round of a walk: its state moves on in _walk's way
            items = state.get("items") or []
            nxt = state.get("iteration", 1) + 1
            ctx.set_state(loop_id, {**state, "iteration": nxt, "item": items[nxt - 1] if nxt <= len(items) else None})
        else:
            ctx.set_state(loop_id, state + 1)
    else:  # the first arrival: iteration 1
        ctx.set_state(loop_id, 1)
        ctx.set_frame(frame._replace(loops=(*frame.loops, loop_id)))
    _fresh(ctx, loop_id)


def _fresh(ctx: Any, loop_id: str) -> None:
    """A bounded loop never trips the visit guard: each iteration counts its body afresh."""
    ctx.reset_visits(_body(ctx, loop_id))
    ctx.reset_visits((loop_id,))


def _body(ctx: Any, loop_id: str) -> frozenset[str]:
    """The nodes reachable from a loop's ``body`` links without passing through the loop (per run)."""
    key = ("loop.body", loop_id)
    found = ctx.memo.get(key)
    if found is None:
        seen: set[str] = set()
        stack = [t for h, t in ctx.links_out(loop_id) if h == "body"]
        while stack:
            cur = stack.pop()
            if cur == loop_id or cur in seen:
                continue
            seen.add(cur)
            stack.extend(t for _h, t in ctx.links_out(cur))
        found = ctx.memo[key] = frozenset(seen)
    return found


SPEC = LoopSpec()
