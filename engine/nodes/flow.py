"""The ``flow`` node (a subflow) and the ``action`` node (a named action bound to a library flow).

``flow``: data ``flow`` (a library id, or a path relative to this workflow's file),
``inputs`` (``{variable: template}``; a whole-field reference keeps its type) and
``outputVar``. The child runs as a nested run (:func:`run_subflow`, through
``RunContext.child_run``; the running child is the node's state, kept in snapshots under
``subflows``): its events carry
the run path (``<flow node id>:<child run id>``, nested paths joined with ``/``), its approvals
pause the parent (answered from the parent: ``resume`` routes the decision to the child), and
the step's output is the child's result: the output of the last node to complete that has no
outgoing execution link.

``action``: data ``schema`` (where the action comes from, e.g. ``calendar``), ``action`` (its
name) and ``parameters`` (``{name: value}``, templates allowed). It runs the library flow
whose name (or id) is the action's name with ``parameters`` as its inputs; no such flow is a
validation error naming the action (:func:`new_flow_for_action` makes one to start from).

Validation (both kinds): the flow must exist (an error names it) and a flow that reaches
itself, directly or through others, is an error.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, field_validator

from engine.errors import FlowdeskError
from engine.flows.library import default_library, known_flow_name
from engine.graph.model import Connection, Node, Workflow
from engine.graph.permissions import PermissionDenied, access_for
from engine.llm.base import DirectOutput, LLMError
from engine.nodes.base import NodeData, NodeError, NodeSpec, PauseRequest, PolicyData, as_text, resolve_for_step
from engine.run.events import EventType, RunStatus

__all__ = [
    "FlowData",
    "ActionData",
    "FlowNodeSpec",
    "ActionSpec",
    "new_flow_for_action",
    "flow_cycle",
    "run_subflow",
    "call_flow",
    "Subflow",
]


class FlowData(PolicyData):
    flow: str = ""
    inputs: dict[str, Any] = Field(default_factory=dict)

    @field_validator("flow", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v

    @field_validator("inputs", mode="before")
    @classmethod
    def _inputs(cls, v: Any) -> Any:
        return {} if v is None else v


class ActionData(PolicyData):
    model_config = ConfigDict(extra="allow", validate_assignment=False, populate_by_name=True, serialize_by_alias=True)

    schema_: str = Field(default="", alias="schema")
    action: str = ""
    parameters: dict[str, Any] = Field(default_factory=dict)

    @field_validator("schema_", "action", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v

    @field_validator("parameters", mode="before")
    @classmethod
    def _params(cls, v: Any) -> Any:
        return {} if v is None else v


def _library(checks_or_run: Any) -> Any:
    lib = getattr(checks_or_run, "library", None)
    if lib is not None:
        return lib

    return default_library()


def _base(checks_or_run: Any) -> Any:
    return getattr(checks_or_run, "path", None)


def flow_cycle(
    library: Any, start_path: Path | None, ref: str, *, by_name: bool, base: Any, limit: int = 64
) -> list[str] | None:
    """The chain of flow names when following ``ref`` leads back to ``start_path`` (or loops), else None."""
    seen: list[str] = []
    seen_paths: set[str] = set()
    start = str(Path(start_path).resolve()) if start_path else None
    todo: list[tuple[str, bool, Any, list[str]]] = [(ref, by_name, base, [])]
    while todo and limit > 0:
        limit -= 1
        r, named, b, chain = todo.pop()
        entry = library.resolve(r, base=b, by_name=named)
        if entry is None or entry.error:
            continue
        p = str(entry.path.resolve())
        chain = chain + [entry.name]
        if start is not None and p == start:
            return chain
        if p in seen_paths:
            continue
        seen_paths.add(p)
        try:
            wf = library.load_path(entry.path)
        except Exception:
            continue
        for node in wf.nodes:
            if node.type == "flow" and getattr(node.data, "flow", ""):
                todo.append((node.data.flow, False, entry.path, chain))
            elif node.type == "action" and getattr(node.data, "action", ""):
                todo.append((node.data.action, True, entry.path, chain))
    del seen
    return None


def _check_ref(spec: NodeSpec, node: Any, checks: Any, ref: str, *, by_name: bool, what: str) -> None:
    library = _library(checks)
    base = _base(checks)
    entry = library.resolve(ref, base=base, by_name=by_name)
    if entry is None:
        if by_name:
            checks.error(
                "action_unbound",
                f"{checks.label(node)}: there is no flow for the action '{ref}' in the "
                "library; create a flow with that name.",
            )
        else:
            checks.error(
                "flow_missing",
                f"{checks.label(node)}: the flow '{ref}' is not in the library (nor a file next to this one).",
            )
        return
    if not entry.enabled:
        checks.warning("flow_disabled", f"{checks.label(node)}: the flow '{entry.name}' is turned off in the library.")
    own_id = getattr(checks, "workflow_id", None)
    if base is None and own_id and entry.id == own_id:
        checks.error("flow_recursive", f"{checks.label(node)} runs the flow '{entry.name}' it is part of.")
        return
    start = Path(base) if base else None
    if start is None and own_id:  # not saved where it is being edited: its library copy stands for it
        own = library.resolve(own_id, by_name=False)
        start = own.path if own is not None else None
    chain = flow_cycle(library, start, ref, by_name=by_name, base=base) if start is not None else None
    if chain:
        checks.error(
            "flow_recursive",
            f"{checks.label(node)}: the {what} '{ref}' reaches this flow again "
            f"({' → '.join(chain)}); a flow cannot run itself.",
        )


class NestedFlowKind(NodeSpec):
    """What the flow kinds share as a run sees them: the nested run in flight is the node's
    state (a paused child, kept in snapshots under ``subflows``), an answer to its approval is
    handed to it by taking the step again, and a cancelled run cancels it."""

    state_key = "subflows"

    def answered(
        self, ctx: Any, node: Any, arrived: Any, flowing: Any, answer: dict[str, Any], now: float, waited_ms: int
    ) -> None:
        held = ctx.state(node.id)
        if held is not None:
            held.answer = answer
        return None  # the step is taken again, and hands the decision to the child

    def waiting_prompt(self, ctx: Any, node: Any) -> str:
        held = ctx.state(node.id)
        return held.child.waiting_prompt() if held is not None else self.pause_prompt(node.data)

    def pause_extra(self, ctx: Any, node: Any) -> Any:
        held = ctx.state(node.id)
        ask = getattr(held.child, "waiting_extra", None) if held is not None else None  # (a Temporal child: none)
        return ask() if ask is not None else None

    def answer_problem(self, ctx: Any, node: Any, answer: dict[str, Any]) -> str | None:
        held = ctx.state(node.id)
        check = getattr(held.child, "answer_problem", None) if held is not None else None
        return check(answer) if check is not None else super().answer_problem(ctx, node, answer)

    def decisions(self, ctx: Any, node: Any) -> tuple[str, ...]:
        ask = getattr(getattr(ctx.state(node.id), "child", None), "decisions", None)
        return ask() if callable(ask) else super().decisions(ctx, node)

    def pause_deadline(self, ctx: Any, node: Any, since: float) -> tuple[float, str] | None:
        """The nested run's own deadline (its approval times out, the parent with it). A durable
        engine's child (a Temporal child workflow) has none here."""
        ask = getattr(getattr(ctx.state(node.id), "child", None), "pause_timeout", None)
        return ask() if callable(ask) else None

    def cancelled(self, ctx: Any, node_id: str, state: Any, reason: str) -> None:
        ctx.drop_state(node_id)
        state.child.cancel(reason)

    def state_to_json(self, state: Any) -> Any:
        return state.child.nested_state()

    def state_from_json(self, ctx: Any, data: Any) -> Any:
        return Subflow(ctx.restore_child(data))


class FlowNodeSpec(NestedFlowKind):
    kind = "flow"
    data_model = FlowData
    label = "Flow"
    description = "Runs a flow from the library as one step."
    icon = "flow"
    color = "#6e40c9"
    width = 232.0
    category = "Flows"
    reports_output = False
    works = True
    through_run = True

    def describe(self, node: Any) -> str:
        return f"Flow '{node.id}'"

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        ref = getattr(data, "flow", "") or ""
        inputs = getattr(data, "inputs", {}) or {}
        return [(known_flow_name(ref) or ref or "(no flow chosen)", False)] + (
            [(", ".join(inputs), True)] if inputs else []
        )

    def new_data(self) -> dict[str, Any]:
        return {"flow": "", "inputs": {}}

    def check(self, node: Any, checks: Any) -> None:
        ref = node.data.flow.strip()
        if not ref:
            checks.error("flow_not_chosen", f"{checks.label(node)} has no flow chosen.")
            return
        _check_ref(self, node, checks, ref, by_name=False, what="flow")

    def subflow_target(self, node: Any) -> tuple[str, str, bool]:
        """What the step runs: (library reference, the data field of its inputs, by name?)."""
        return node.data.flow.strip(), "inputs", False

    async def execute(self, ctx: Any, node: Any, value: Any) -> Any:
        return await run_subflow(ctx, node, *self.subflow_target(node), value=value)


class ActionSpec(NestedFlowKind):
    kind = "action"
    data_model = ActionData
    label = "Action"
    description = "A named action, run by the library flow of the same name."
    icon = "action"
    color = "#a2445f"
    width = 232.0
    category = "Flows"
    reports_output = False
    works = True
    through_run = True

    def title(self, data: NodeData) -> str:
        schema = getattr(data, "schema_", "")
        action = getattr(data, "action", "")
        return (f"{schema}.{action}" if schema else action) or "Action"

    def describe(self, node: Any) -> str:
        return f"Action '{self.title(node.data)}'"

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        params = getattr(data, "parameters", {}) or {}
        return [(", ".join(f"{k}={v}" for k, v in params.items())[:80] or "(no parameters)", True)]

    def new_data(self) -> dict[str, Any]:
        return {"schema": "", "action": "", "parameters": {}}

    def check(self, node: Any, checks: Any) -> None:
        name = node.data.action.strip()
        if not name:
            checks.error("action_no_name", f"{checks.label(node)} has no action name.")
            return
        _check_ref(self, node, checks, name, by_name=True, what="action")

    def subflow_target(self, node: Any) -> tuple[str, str, bool]:
        return node.data.action.strip(), "parameters", True

    async def execute(self, ctx: Any, node: Any, value: Any) -> Any:
        return await run_subflow(ctx, node, *self.subflow_target(node), value=value)


def new_flow_for_action(action: str, parameters: dict[str, Any] | None = None, *, schema: str = "") -> Any:
    """A new workflow to bind an action to (the quick fix "create a flow for it"): named after the
    action, one Start variable per parameter, and an agent that does the work from them."""
    params = list((parameters or {}).keys())
    variables = [{"name": p, "value": "", "description": "", "type": "string", "required": True} for p in params]
    listing = "\n".join(f"{p}: {{{{{p}}}}}" for p in params)
    prompt = (
        f"Carry out the action '{action}'"
        + (f" ({schema})" if schema else "")
        + "."
        + (f"\n\n{listing}" if listing else "")
    )
    return Workflow(
        name=action,
        description=f"Runs the action '{action}'.",
        version=1,
        nodes=[
            Node(id="start", type="start", x=80, y=160, data={"initialInput": "", "variables": variables}),
            Node(
                id="do",
                type="agent",
                x=380,
                y=140,
                data={
                    "agentName": action,
                    "systemPrompt": "",
                    "userPrompt": prompt,
                    "model": "",
                    "reasoningEffort": "low",
                    "tools": {"web_search": False, "subagents": False},
                },
            ),
        ],
        connections=[Connection(source="start", target="do", sourceHandle="output", targetHandle="input")],
    )


class Subflow:
    """A flow step's nested run while it is paused (its child), and the answer to hand it."""

    __slots__ = ("child", "answer")

    def __init__(self, child: Any, answer: dict[str, Any] | None = None) -> None:
        self.child = child
        self.answer = answer


def describe(node: Any) -> str:
    """How messages name a flow step."""
    spec = ACTION_SPEC if node.type == ACTION_SPEC.kind else FLOW_SPEC
    return spec.describe(node)


def check_flow_permission(ctx: Any, node: Any, ref: str, entry: Any) -> None:
    """A workflow that declares ``permissions`` runs only the flows ``permissions.flows`` lists
    (by the reference written, the flow's id or its name); else ``permission_denied``."""
    access = access_for(getattr(ctx, "workflow", None), open_by_default=True)
    if any(access.allows_flow(name) for name in {ref, entry.id, entry.name}):
        return
    err = PermissionDenied(f"the flow {entry.id!r}", "flows")
    ctx.emit(node.id, "permission_denied", str(err), {"what": err.what, "field": err.field})
    raise err


async def run_subflow(ctx: Any, node: Any, ref: str, field: str, by_name: bool, value: Any = None) -> Any:
    """A ``flow``/``action`` step: run the library flow ``ref`` nested, with the node's ``field``
    (``inputs``/``parameters``, templates resolved) as its variables.

    Returns ``(result, "output")`` when the child completes, a :class:`PauseRequest` when it
    waits for an approval (the parent pauses at this node; the answer comes back through
    ``answered`` and the step is taken again), and raises :class:`NodeError` when it fails or
    cannot start.
    """
    held = ctx.state(node.id)
    child = held.child if held is not None else None
    answer = held.answer if held is not None else None
    if held is not None:
        held.answer = None
    try:
        if child is not None and answer is not None:
            status = await child.resume(answer)
        else:
            library = ctx.library()
            entry = library.resolve(ref, base=ctx.path, by_name=by_name)
            if entry is None:
                what = f"no flow for the action '{ref}'" if by_name else f"the flow '{ref}' is not in the library"
                raise NodeError(f"{describe(node)} cannot run: {what}.")
            check_flow_permission(ctx, node, ref, entry)
            try:
                workflow = library.load_path(entry.path)
            except FlowdeskError as err:
                raise NodeError(f"{describe(node)} cannot run: {err}") from None
            data, _secrets = resolve_for_step(ctx, node, value)
            inputs = data.get(field) or {}
            if not isinstance(inputs, dict):
                raise NodeError(f"{describe(node)}: '{field}' must be an object of variable names and values.")
            try:
                child = ctx.child_run(workflow, entry.path, node.id, inputs)
            except FlowdeskError as err:  # an input that does not fit the flow's variables
                raise NodeError(f"{describe(node)}: the flow '{entry.name}' cannot start: {err}") from None
            ctx.set_state(node.id, Subflow(child))
            status = await child.start()
    except asyncio.CancelledError:
        if child is not None:
            child.cancel()
            ctx.drop_state(node.id)
        raise
    if status == RunStatus.PAUSED:
        return PauseRequest(child.waiting_prompt(), child.waiting_extra())
    ctx.drop_state(node.id)
    if status == RunStatus.COMPLETED:
        return child.result, "output"
    raise NodeError(
        f"{describe(node)}: the flow '{child.workflow.display_name()}' {status}: {child.error or 'no reason given'}"
    )


async def call_flow(ctx: Any, parent: Any, tool: Any, arguments: dict[str, Any]) -> str:
    """A library flow called by a model as a tool (``parent``: the agent's ProviderCall): run
    nested, ``flow_call_*`` logged on the agent."""
    call_id = ctx.next_call_id()
    base = {
        "parentNodeId": parent.node_id,
        "flowId": tool.flow_id,
        "flowName": tool.name,
        "callId": call_id,
        "parentCallId": parent.call_id,
        "depth": parent.depth + 1,
    }
    args_text = json.dumps(arguments, ensure_ascii=False)

    def log(kind: str, message: str) -> None:
        ctx.emit(parent.node_id, kind, message, extra=base)

    log(EventType.FLOW_CALL_START, args_text)
    child = None
    try:
        library = ctx.library()
        entry = library.resolve(tool.flow_id, base=ctx.path, by_name=False)
        if entry is None:
            raise LLMError(f"the flow '{tool.flow_id}' is not in the library")
        workflow = library.load_path(entry.path)
        try:
            child = ctx.child_run(workflow, entry.path, f"{parent.node_id}.{call_id}", dict(arguments))
        except FlowdeskError as err:
            raise LLMError(f"the flow '{entry.name}' cannot start: {err}") from None
        status = await child.start()
        if status == RunStatus.PAUSED:
            child.cancel("A flow called as a tool cannot wait for an approval.")
            raise LLMError(f"the flow '{entry.name}' waited for an approval, which a tool call cannot do")
        if status != RunStatus.COMPLETED:
            raise LLMError(f"the flow '{entry.name}' {status}: {child.error or 'no reason given'}")
    except asyncio.CancelledError:
        if child is not None:
            child.cancel()
        log(EventType.FLOW_CALL_ERROR, "cancelled")
        raise
    except LLMError as err:
        log(EventType.FLOW_CALL_ERROR, str(err))
        raise
    except FlowdeskError as err:
        log(EventType.FLOW_CALL_ERROR, str(err))
        raise LLMError(str(err)) from err
    text = as_text(child.result)
    log(EventType.FLOW_CALL_END, text)
    if (workflow.model_extra or {}).get("directOutput") is True:
        raise DirectOutput(text)  # seed 004: the flow's output is the agent's answer
    return text


FLOW_SPEC = FlowNodeSpec()
ACTION_SPEC = ActionSpec()
SPECS = [FLOW_SPEC, ACTION_SPEC]
