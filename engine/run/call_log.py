"""The calls a run's models made, as the run-state reducer (engine/run/state.py) keeps them: a
subagent called as a tool, a library flow called as a tool, an MCP tool (:class:`SubagentCall`
each, by call id, in ``RunState.calls``), as a tree (``RunState.call_roots``: the calls made by
no other call; each call's ``children``).

The reducer takes subagent calls itself (they change the called node's details too); the
others are taken here (:func:`on_listed_call`). :func:`call_tree` walks the tree in order.
``SubagentCall`` is importable from ``engine.run.state`` as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from engine.run.events import RunEvent
from engine.run.node_details import DONE, FAILED, RUNNING

__all__ = ["SubagentCall", "hang", "on_listed_call", "call_tree"]


@dataclass(slots=True)
class SubagentCall:
    """One subagent call: who called whom, with what, and how it ended."""

    call_id: str
    parent_call_id: str | None
    parent_node_id: str
    node_id: str
    name: str
    depth: int
    input: str = ""
    output: str | None = None
    error: str | None = None
    state: str = RUNNING  # running, done or failed
    started: float | None = None
    ended: float | None = None
    children: list[str] = field(default_factory=list)  # call ids, in start order
    usage: dict[str, int] | None = None  # the tokens the call reported (its subagent_call_end's)
    #: "subagent", or "flow" for a library flow called as a tool (``node_id`` is then the flow's id,
    #: ``name`` its name, ``input`` the arguments as JSON; its events are in ``RunState.children``),
    #: or "tool" for an MCP tool (``node_id``: its server, ``name``: the tool).
    kind: str = "subagent"

    @property
    def duration(self) -> float | None:
        if self.started is None or self.ended is None:
            return None
        return max(0.0, self.ended - self.started)


def hang(calls: dict[str, SubagentCall], roots: list[str], call: SubagentCall) -> None:
    """Put a new ``call`` in the tree: under the call that made it, or among the roots."""
    up = calls.get(call.parent_call_id) if call.parent_call_id else None
    (up.children if up is not None else roots).append(call.call_id)


def on_listed_call(
    calls: dict[str, SubagentCall], roots: list[str], ev: RunEvent, start: str, end: str, kind: str
) -> None:
    """A call a model (or an ``mcp`` step) made, kept in ``calls`` beside subagent calls (``roots``:
    the calls made by no other call): a library flow (kind "flow": ``target`` the flow id) or an MCP tool (kind "tool": ``node_id``
    the calling node, ``target`` the server, ``name`` the tool, ``input`` the arguments as JSON)."""
    fields = ev.extra or {}
    call_id = fields.get("callId")
    if not isinstance(call_id, str):
        return
    t, message = ev.type, ev.content
    call = calls.get(call_id)
    if t == start:
        parent_call = fields.get("parentCallId")
        depth = fields.get("depth")
        if kind == "flow":
            owner = str(fields.get("parentNodeId") or ev.node_id)
            target, name = (
                str(fields.get("flowId") or ""),
                str(fields.get("flowName") or fields.get("flowId") or "flow"),
            )
            given = message
        else:
            owner = ev.node_id
            target, name = str(fields.get("server") or ""), str(fields.get("tool") or "tool")
            given = json.dumps(fields.get("arguments"), ensure_ascii=False)
        call = calls[call_id] = SubagentCall(
            call_id,
            parent_call if isinstance(parent_call, str) else None,
            owner,
            target,
            name,
            depth if isinstance(depth, int) else 1,
            input=given,
            started=ev.timestamp,
            kind=kind,
        )
        hang(calls, roots, call)
    elif call is not None and t == end:
        call.output, call.ended, call.state = message, ev.timestamp, DONE
    elif call is not None:
        call.error, call.ended, call.state = message, ev.timestamp, FAILED


def call_tree(calls: dict[str, SubagentCall], roots: list[str]) -> list[tuple[SubagentCall, int]]:
    """Every call in tree order (depth-first, calls in start order), with its level."""
    out: list[tuple[SubagentCall, int]] = []
    stack = [(cid, 0) for cid in reversed(roots)]
    while stack:
        cid, level = stack.pop()
        call = calls[cid]
        out.append((call, level))
        stack.extend((c, level + 1) for c in reversed(call.children))
    return out
