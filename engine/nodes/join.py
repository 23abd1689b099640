"""The ``join`` node: waits for the branches that lead into it, then fires once.

Semantics (docs/design.md, "More node kinds"): the node fires once every incoming link whose source
can still run in this run has delivered; an untaken branch, a skipped or failed source does not
hold it back, a branch paused at an approval does. Its output is the list of delivered outputs in
the order of the join's incoming links as they stand in the file's ``connections`` (``mode:
"list"``, the default), or their text joined with ``separator`` (default a blank line) with
``mode: "text"``; the list is also the ``__fanout`` built-in of later steps.

The waiting is the join's own: ``arrive`` buffers each arrival (link index -> value, with the
last arrival's branch frame) in the join's state (``RunContext.state``, kept in snapshots under
``joins``) and fires when every link delivered; ``release`` fires it when no missing source
can still deliver. ``execute`` only shapes the output from the gathered values.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator

from engine.nodes.base import BranchFrame, NodeData, NodeSpec, as_text

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

    # ---------------------------------------------------------------- waiting for the branches
    state_key = "joins"
    state_always = True

    def arrive(self, ctx: Any, node: Any, src: str | None, value: Any) -> Any:
        join_id = node.id
        links = ctx.links_in(join_id)
        held = ctx.state(join_id)
        if held is None:
            held = _Held({}, None)
            ctx.set_state(join_id, held)
        buf = held.arrived
        index = next((i for i, s in enumerate(links) if s == src and i not in buf), None)
        if index is None:
            index = next((i for i in range(len(links)) if i not in buf), len(links) + len(buf))
        buf[index] = value
        held.frame = ctx.frame
        if len(buf) < len(links):
            ctx.emit(
                join_id,
                _JOIN_WAIT,
                f"{len(buf)} of {len(links)} arrived",
                {"delivered": len(buf), "expected": len(links)},
            )
            return ctx.WAITING
        values, frame = _gathered(ctx, join_id)
        ctx.set_frame(frame)
        return values

    def release(self, ctx: Any, node_id: str, live: set[str]) -> tuple[Any, BranchFrame | None] | None:
        """Fire the join when none of its missing sources can still run (an untaken branch, a
        skipped or failed source does not hold it back; a branch in flight or paused at an
        approval does)."""
        held = ctx.state(node_id)
        if held is None:
            return None
        for i, source in enumerate(ctx.links_in(node_id)):
            if i not in held.arrived and not live.isdisjoint(_feeders(ctx, source, node_id)):
                return None
        return _gathered(ctx, node_id)

    def state_to_json(self, state: Any) -> Any:
        out: dict[str, Any] = {"arrived": [[i, v] for i, v in sorted(state.arrived.items())]}
        if state.frame is not None and state.frame != _EMPTY_FRAME:
            out["frame"] = state.frame.to_json()
        return out

    def state_from_json(self, ctx: Any, data: Any) -> Any:
        return _Held({int(i): v for i, v in data.get("arrived", ())}, BranchFrame.from_json(data.get("frame")))


_JOIN_WAIT = "join_wait"
_EMPTY_FRAME = BranchFrame()


class _Held:
    """A join's arrivals so far (link index -> value) and the last arrival's branch frame."""

    __slots__ = ("arrived", "frame")

    def __init__(self, arrived: dict[int, Any], frame: BranchFrame | None) -> None:
        self.arrived = arrived
        self.frame = frame


def _gathered(ctx: Any, join_id: str) -> tuple[list[Any], BranchFrame]:
    """The join's values in link order, and the frame its step runs in (``__fanout`` set)."""
    held = ctx.drop_state(join_id)
    values = [held.arrived[i] for i in sorted(held.arrived)]
    return values, (held.frame or BranchFrame())._replace(fanout=values)


def _feeders(ctx: Any, source: str, join_id: str) -> frozenset[str]:
    """The nodes from which ``source`` can be reached without passing through the join (per run)."""
    key = ("join.feeders", source, join_id)
    found = ctx.memo.get(key)
    if found is None:
        into: dict[str, list[str]] | None = ctx.memo.get("join.into")
        if into is None:
            into = {}
            ctx.memo["join.into"] = into
            for s, edges in ctx.links_out_all().items():
                for _h, t in edges:
                    into.setdefault(t, []).append(s)
        seen = {source}
        stack = [source]
        while stack:
            cur = stack.pop()
            for s in into.get(cur, ()):
                if s != join_id and s not in seen:
                    seen.add(s)
                    stack.append(s)
        found = ctx.memo[key] = frozenset(seen)
    return found


SPEC = JoinSpec()
