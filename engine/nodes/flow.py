"""The ``flow`` node (a subflow) and the ``action`` node (a named action bound to a library flow).

``flow``: data ``flow`` (a library id, or a path relative to this workflow's file),
``inputs`` (``{variable: template}``; a whole-field reference keeps its type) and
``outputVar``. The child runs as a nested run (:meth:`engine.Run.run_subflow`): its events carry
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

from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field, field_validator

from engine.flows.library import default_library, known_flow_name
from engine.graph.model import Connection, Node, Workflow
from engine.nodes.base import NodeData, NodeSpec, PolicyData

__all__ = ["FlowData", "ActionData", "FlowNodeSpec", "ActionSpec", "new_flow_for_action", "flow_cycle"]


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


def flow_cycle(library: Any, start_path: Path | None, ref: str, *, by_name: bool, base: Any,
               limit: int = 64) -> list[str] | None:
    """The chain of flow names when following ``ref`` leads back to ``start_path`` (or loops), else None."""
    seen: list[str] = []
    seen_paths: set[str] = set()
    start = str(Path(start_path).resolve()) if start_path else None
    todo = [(ref, by_name, base, [])]
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
            checks.error("action_unbound", f"{checks.label(node)}: there is no flow for the action '{ref}' in the "
                                           "library; create a flow with that name.")
        else:
            checks.error("flow_missing", f"{checks.label(node)}: the flow '{ref}' is not in the library "
                                         "(nor a file next to this one).")
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
        checks.error("flow_recursive", f"{checks.label(node)}: the {what} '{ref}' reaches this flow again "
                                       f"({' → '.join(chain)}); a flow cannot run itself.")


class FlowNodeSpec(NodeSpec):
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
            [(", ".join(inputs), True)] if inputs else [])

    def new_data(self) -> dict[str, Any]:
        return {"flow": "", "inputs": {}}

    def check(self, node: Any, checks: Any) -> None:
        ref = node.data.flow.strip()
        if not ref:
            checks.error("flow_not_chosen", f"{checks.label(node)} has no flow chosen.")
            return
        _check_ref(self, node, checks, ref, by_name=False, what="flow")

    async def execute(self, ctx: Any, node: Any, value: Any) -> Any:
        return await ctx.run.run_subflow(node, node.data.flow.strip(), "inputs", by_name=False, value=value)


class ActionSpec(NodeSpec):
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

    async def execute(self, ctx: Any, node: Any, value: Any) -> Any:
        return await ctx.run.run_subflow(node, node.data.action.strip(), "parameters", by_name=True, value=value)


def new_flow_for_action(action: str, parameters: dict[str, Any] | None = None, *, schema: str = "") -> Any:
    """A new workflow to bind an action to (the quick fix "create a flow for it"): named after the
    action, one Start variable per parameter, and an agent that does the work from them."""
    params = list((parameters or {}).keys())
    variables = [{"name": p, "value": "", "description": "", "type": "string", "required": True} for p in params]
    listing = "\n".join(f"{p}: {{{{{p}}}}}" for p in params)
    prompt = f"Carry out the action '{action}'" + (f" ({schema})" if schema else "") + "." \
        + (f"\n\n{listing}" if listing else "")
    return Workflow(name=action, description=f"Runs the action '{action}'.", version=1, nodes=[
        Node(id="start", type="start", x=80, y=160, data={"initialInput": "", "variables": variables}),
        Node(id="do", type="agent", x=380, y=140, data={
            "agentName": action, "systemPrompt": "", "userPrompt": prompt, "model": "", "reasoningEffort": "low",
            "tools": {"web_search": False, "subagents": False}}),
    ], connections=[Connection(source="start", target="do", sourceHandle="output", targetHandle="input")])


FLOW_SPEC = FlowNodeSpec()
ACTION_SPEC = ActionSpec()
SPECS = [FLOW_SPEC, ACTION_SPEC]
