"""The ``router`` node: a model picks the branch (docs/design.md, "Conditions, routing and
structured answers").

Data: ``routes: [{label, description}]``, and like an agent an optional ``model``,
``provider`` and ``systemPrompt`` (extra instructions). Handles: ``route-<i>`` per route, then
``false``, followed when the model's choice is none of the labels (no retry). One model
request per step, constrained to the labels: a JSON schema ``{label: enum of the labels,
reason: string}`` (the provider's structured-output mode, and in the instructions); the
previous output is the request's user content. The step logs ``route_choice`` with
``{label, reason, handle}`` and passes its input on unchanged along the chosen handle.

Offline providers choose deterministically: ``echo`` takes the route sharing the most words with
the input (the words of its label and description; the first route on a tie or when none shares
any), the embedded model answers under the schema's grammar with greedy sampling.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import Field, field_validator

from engine.llm.base import AgentInvocation, LLMError, LLMResult, NoToolsContext
from engine.llm.structured import openai_response_format, schema_instructions
from engine.nodes.base import NodeData, NodeError, NodeSpec, PolicyData, _Loose, as_text, is_none
from engine.run.events import EventType

ROUTE_CHOICE = EventType.ROUTE_CHOICE.value
_LLM_ERROR = "llm_error"
DEFAULT_INSTRUCTIONS = (
    "You route a message to exactly one of the routes below. Pick the route that fits the "
    "message best and say why in one short line."
)


class Route(_Loose):
    label: str = ""
    description: str = ""

    @field_validator("label", "description", mode="before")
    @classmethod
    def _text(cls, v: Any) -> Any:
        if v is None:
            return ""
        return str(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else v


class RouterData(PolicyData):
    routes: list[Route] = Field(default_factory=list)
    model: str = ""
    provider: str | None = Field(default=None, exclude_if=is_none)
    systemPrompt: str = ""

    @field_validator("model", "systemPrompt", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v

    @field_validator("routes", mode="before")
    @classmethod
    def _routes(cls, v: Any) -> Any:
        if v is None:
            return []
        if isinstance(v, list):  # a bare label stands for {label}
            return [{"label": r} if isinstance(r, str) else r for r in v]
        return v


def route_schema(routes: list[Route]) -> dict[str, Any]:
    """The JSON schema of a router's answer: a label among the routes' and a one-line reason.
    The label's description lists the routes as ``label: description`` lines."""
    labels = [r.label.strip() for r in routes]
    lines = "\n".join(f"{r.label.strip()}: {' '.join(r.description.split())}" for r in routes)
    return {
        "type": "object",
        "properties": {
            "label": {"type": "string", "enum": labels, "description": "The route chosen, one of:\n" + lines},
            "reason": {"type": "string", "description": "Why, in one short line."},
        },
        "required": ["label", "reason"],
        "additionalProperties": False,
    }


def read_choice(text: str) -> tuple[str, str]:
    """The label and the reason in a model's answer: its JSON ``{label, reason}``, else the
    whole text taken as the label."""
    body = (text or "").strip()
    if body.startswith("```"):
        body = body.strip("`").strip()
        if body.lower().startswith("json"):
            body = body[4:].strip()
    try:
        value = json.loads(body)
    except ValueError:
        return body.strip().strip("\"'.").strip(), ""
    if isinstance(value, dict):
        return as_text(value.get("label")).strip(), " ".join(as_text(value.get("reason")).split())
    return as_text(value).strip(), ""


def match_route(routes: list[Route], label: str) -> int | None:
    """The index of the route named ``label`` (exactly, else ignoring case), or None."""
    labels = [r.label.strip() for r in routes]
    if label in labels:
        return labels.index(label)
    folded = [lb.casefold() for lb in labels]
    return folded.index(label.casefold()) if label.casefold() in folded else None


class RouterSpec(NodeSpec):
    kind = "router"
    data_model = RouterData
    reports_output = False  # node_output says which handle was followed
    label = "Router"
    description = "A model picks the branch among your routes."
    icon = "router"
    color = "#8a5cd0"
    category = "Flow"
    chooses = True
    works = True
    through_run = True
    no_branch = ("router_no_branch", "{label} has no route connected.")

    def outputs(self, data: NodeData) -> tuple[str, ...]:
        routes = getattr(data, "routes", ())
        return tuple(f"route-{i}" for i in range(len(routes))) + ("false",)

    def has_output(self, data: NodeData, handle: str) -> bool:
        return handle == "false" or handle == "error" or handle in self.outputs(data)

    def plain_output(self) -> bool:
        return False

    def handle_label(self, data: NodeData, handle: str) -> str:
        if handle.startswith("route-"):
            try:
                route = data.routes[int(handle.split("-", 1)[1])]  # type: ignore[attr-defined]
            except (ValueError, IndexError, AttributeError):
                return handle
            return route.label.strip() or handle
        if handle == "false":
            return "None of them"
        return super().handle_label(data, handle)

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        routes = getattr(data, "routes", ())
        labels = ", ".join(r.label.strip() for r in routes if r.label.strip())
        model = getattr(data, "model", "") or "default model"
        return [
            (model, True),
            (f"{len(routes)} route{'s' if len(routes) != 1 else ''}: {labels}" if routes else "no routes yet", False),
        ]

    def new_data(self) -> dict[str, Any]:
        return {
            "routes": [
                {"label": "question", "description": "The user asks something."},
                {"label": "request", "description": "The user wants something done."},
            ],
            "model": "",
        }

    def check(self, node: Any, checks: Any) -> None:
        routes = node.data.routes
        if not routes:
            checks.error("router_no_routes", f"{checks.label(node)} has no routes; add at least one.")
        seen: set[str] = set()
        for i, route in enumerate(routes):
            label = route.label.strip()
            if not label:
                checks.error("router_empty_label", f"Route {i + 1} of {checks.label(node)} has no label.")
            elif label.casefold() in seen:
                checks.error(
                    "router_duplicate_label", f"{checks.label(node)} has the label '{label}' twice; labels must differ."
                )
            seen.add(label.casefold())

    async def execute(self, ctx: Any, node: Any, value: Any) -> tuple[Any, str]:
        data = node.data
        routes: list[Route] = data.routes
        if not routes:
            raise NodeError(f"{self.describe(node)} has no routes.")
        schema = route_schema(routes)
        text = as_text(value)
        system = "\n\n".join(
            part
            for part in (
                data.systemPrompt.strip(),
                DEFAULT_INSTRUCTIONS,
                "Routes:\n" + "\n".join(f"- {r.label.strip()}: {' '.join(r.description.split())}" for r in routes),
                schema_instructions(schema),
            )
            if part
        )
        inv = AgentInvocation(
            node.id,
            self.title(data),
            system,
            text,
            data.model,
            "low",
            {"web_search": False, "subagents": False},
            [],
            data.provider,
            response_format=openai_response_format(schema, "route"),
        )
        try:
            provider = ctx.resolve(inv)
            result = await provider.complete(inv, NoToolsContext(node.id))
            if not isinstance(result, LLMResult):
                raise LLMError(f"the provider returned {type(result).__name__}, not an answer")
        except LLMError as err:
            ctx.emit(node.id, _LLM_ERROR, str(err))
            raise NodeError(f"{self.describe(node)} could not choose a route: {err}") from None
        label, reason = read_choice(result.text)
        index = match_route(routes, label)
        handle = f"route-{index}" if index is not None else "false"
        extra: dict[str, Any] = {
            "label": routes[index].label.strip() if index is not None else label,
            "reason": reason,
            "handle": handle,
        }
        if result.usage:  # counted in the node's and the run's tokens and cost, like a response's
            extra["usage"] = result.usage
        if result.model:
            extra["model"] = result.model
        shown = extra["label"] if index is not None else f"'{label[:80]}' is none of the routes → None of them"
        ctx.emit(node.id, ROUTE_CHOICE, f"{shown}: {reason}" if reason else shown, extra)
        return value, handle


SPEC = RouterSpec()
