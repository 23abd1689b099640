"""Say it, run it: a sentence → a library flow and its arguments.

:func:`match_sentence` matches the library's trigger patterns (no model call): every match,
best first — the fewest words taken by wildcard/word captures, then library order (flow, then
the flow's trigger order). Captures are coerced to the flow's parameter types.

With no match, :func:`ask_model_for_flow` makes ONE request to the configured model whose
answer is constrained by :func:`routing_schema`: ``flow`` is an enum of the library's flow ids
(or null) and ``arguments`` follows each flow's parameters. OpenAI-compatible servers get it as
``response_format: {type: json_schema}``; the schema is in the prompt too. The answer is
validated with pydantic (:func:`parse_routing_answer`) before anything runs: a flow that does
not exist, arguments of the wrong type, unknown or missing required arguments, text that is
not JSON, or an empty answer are all "no flow matches" (:class:`NoFlowMatches`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, StrictBool, StrictFloat, StrictInt, StrictStr, ValidationError, create_model

from engine.errors import FlowdeskError
from engine.flows.grammar import TriggerPatternError, all_trigger_matches, compile_trigger
from engine.graph.permissions import permissions_of
from engine.llm.base import AgentInvocation, NoToolsContext

if TYPE_CHECKING:  # pragma: no cover
    from engine.flows.library import FlowLibrary, LibraryFlow

__all__ = [
    "FlowChoice",
    "NoFlowMatches",
    "match_sentence",
    "routing_schema",
    "parse_routing_answer",
    "ask_model_for_flow",
    "routable_flows",
    "apply_arguments",
    "permission_summary",
    "ROUTER_NODE",
]

ROUTER_NODE = "router"
_SYSTEM = (
    "You route a user's request to one saved flow of their library. Answer with one JSON object only: "
    '{"flow": <a flow id from the list, or null when none fits>, "arguments": {<the chosen flow\'s '
    'parameters, with values of the declared types>}, "reason": <one short sentence: why this flow>}. '
    "Use only ids and parameter names that are listed."
)


class NoFlowMatches(FlowdeskError):
    """Nothing in the library matches the sentence (or the model's answer was not usable)."""


@dataclass
class FlowChoice:
    """A flow picked for a sentence: by a ``trigger`` (``pattern``, ``wildcard_words``,
    capture ``spans``) or by the ``model``."""

    flow: LibraryFlow
    arguments: dict[str, Any]
    source: Literal["trigger", "model"]
    pattern: str = ""
    wildcard_words: int = 0
    spans: dict[str, tuple[int, int]] = field(default_factory=dict)
    reason: str = ""  # the model's reason for its choice
    learned: str = ""  # the trigger this choice was remembered as (routing memory), if any

    def match_json(self) -> dict[str, Any]:
        """How the sentence matched: ``{by: "trigger", pattern, captures}`` or ``{by: "model", reason}``."""
        if self.source == "trigger":
            learned = self.pattern in self.flow.learned
            return {"by": "trigger", "pattern": self.pattern, "captures": dict(self.arguments), "learned": learned}
        return {"by": "model", "reason": self.reason or "the model chose this flow"}

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "flow": self.flow.id,
            "name": self.flow.name,
            "arguments": self.arguments,
            "match": self.match_json(),
            "source": self.source,
            "path": str(self.flow.path),
        }
        if self.source == "trigger":
            out["pattern"] = self.pattern
            out["wildcardWords"] = self.wildcard_words
        if self.learned:
            out["learned"] = self.learned
        return out


def routable_flows(library: FlowLibrary) -> list[LibraryFlow]:
    """The flows a sentence may pick: readable and enabled, in library order."""
    return [f for f in library.flows() if f.enabled and not f.error]


def _coerce(value: Any, kind: str) -> Any:
    """A capture as the parameter's type (a number capture for a string parameter is its text)."""
    if kind == "number" and isinstance(value, str):
        try:
            number = float(value.replace(",", ""))
            return int(number) if number.is_integer() and "." not in value else number
        except ValueError:
            return value
    if kind == "boolean" and isinstance(value, str):
        low = value.strip().lower()
        return {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}.get(low, value)
    if kind == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return value


def match_sentence(sentence: str, flows: Iterable[LibraryFlow], skipped: list[str] | None = None) -> list[FlowChoice]:
    """Every trigger match of ``sentence`` among ``flows``, best first. Malformed patterns are
    skipped (the validator reports them on their workflow); ``skipped`` receives a message for
    each, for the caller to show as a warning. One bad pattern never stops the others."""
    candidates = []
    for flow in flows:
        for i, text in enumerate(flow.triggers):
            try:
                candidates.append(((flow, text), compile_trigger(text)))
            except (TriggerPatternError, RecursionError) as err:
                if skipped is not None:
                    reason = err.reason if isinstance(err, TriggerPatternError) else "pattern too deeply nested"
                    skipped.append(f"flow '{flow.id}' ({flow.path}): trigger {i + 1} is skipped: {reason}")
    out = []
    for (flow, text), m in all_trigger_matches(sentence, candidates):
        kinds = {p.name: p.type for p in flow.parameters}
        args = {name: _coerce(value, kinds.get(name, "string")) for name, value in m.captures.items()}
        out.append(FlowChoice(flow, args, "trigger", text, m.wildcard_words, dict(m.spans)))
    return out


# ------------------------------------------------------------------------------- the model
def _param_schema(flow: LibraryFlow) -> dict[str, Any]:
    schema = flow.parameters_schema()
    schema["additionalProperties"] = False
    schema["title"] = f"arguments of {flow.id}"
    if flow.description:
        schema["description"] = f"{flow.name}: {flow.description}"
    return schema


def routing_schema(flows: list[LibraryFlow]) -> dict[str, Any]:
    """The answer's JSON schema: ``flow`` an enum of the flow ids (or null), ``arguments`` one
    of the flows' parameter schemas."""
    return {
        "type": "object",
        "properties": {
            "flow": {
                "type": ["string", "null"],
                "enum": [*(f.id for f in flows), None],
                "description": "the id of the flow to run, or null when none fits",
            },
            "arguments": {"anyOf": [_param_schema(f) for f in flows] or [{"type": "object"}]},
            "reason": {"type": "string", "description": "why this flow fits, in one short sentence"},
        },
        "required": ["flow", "arguments"],
        "additionalProperties": False,
    }


_TYPES: dict[str, Any] = {"string": StrictStr, "number": StrictInt | StrictFloat, "boolean": StrictBool, "json": Any}


def _arguments_model(flow: LibraryFlow) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for p in flow.parameters:
        kind = _TYPES.get(p.type, StrictStr)
        fields[p.name] = (kind, ...) if p.required and p.value in (None, "") else (kind | None, None)
    name = "Arguments_" + re.sub(r"\W", "_", flow.id)
    return create_model(name, __config__=ConfigDict(extra="forbid"), **fields)


def _json_text(text: str) -> str:
    text = text.strip()
    fence = re.match(r"^```(?:json)?\s*(.*?)\s*```$", text, re.S)
    return fence.group(1) if fence else text


def parse_routing_answer(text: str, flows: list[LibraryFlow]) -> FlowChoice:
    """The model's answer as a :class:`FlowChoice`; :class:`NoFlowMatches` saying why it is not usable."""
    if not text or not text.strip():
        raise NoFlowMatches("no flow matches: the model gave an empty answer")
    by_id = {f.id: f for f in flows}

    class Answer(BaseModel):
        model_config = ConfigDict(extra="forbid")
        flow: StrictStr | None
        arguments: dict[str, Any] = {}
        reason: StrictStr | None = None

    try:
        answer = Answer.model_validate_json(_json_text(text))
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        raise NoFlowMatches(f"no flow matches: the model's answer is not a flow choice ({first.get('msg')})") from None
    if answer.flow is None or answer.flow == "":
        raise NoFlowMatches("no flow matches: the model found no flow for it")
    flow = by_id.get(answer.flow)
    if flow is None:
        raise NoFlowMatches(f"no flow matches: the model named the flow '{answer.flow}', which is not in the library")
    try:
        args = _arguments_model(flow).model_validate(answer.arguments)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "arguments"
        raise NoFlowMatches(
            f"no flow matches: the model's arguments for '{flow.id}' are wrong ({where}: {first.get('msg')})"
        ) from None
    values = {k: v for k, v in args.model_dump().items() if k in answer.arguments}
    return FlowChoice(flow, values, "model", reason=answer.reason or "")


async def ask_model_for_flow(sentence: str, flows: list[LibraryFlow], resolver: Any, *, model: str = "") -> FlowChoice:
    """One request to the model (through ``resolver``, as runs use it) for a flow and its
    arguments; the answer is checked by :func:`parse_routing_answer`."""
    if not flows:
        raise NoFlowMatches("no flow matches: the library has no flows")
    schema = routing_schema(flows)
    listing = "\n".join(f"- {f.id}: {f.name}" + (f" — {f.description}" if f.description else "") for f in flows)
    inv = AgentInvocation(
        node_id=ROUTER_NODE,
        name="Flow router",
        system_prompt=f"{_SYSTEM}\n\nFlows:\n{listing}\n\nJSON schema of the answer:\n{json.dumps(schema)}",
        user_content=sentence,
        model=model,
        reasoning_effort="low",
        tools={"web_search": False, "subagents": False},
        subagents=[],
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "flow_choice", "schema": schema, "strict": False},
        },
    )
    provider = resolver(inv) if callable(resolver) and not hasattr(resolver, "complete") else resolver
    result = await provider.complete(inv, NoToolsContext(ROUTER_NODE))
    try:
        return parse_routing_answer(result.text, flows)
    except NoFlowMatches as err:
        if getattr(provider, "name", "") == "echo":  # it says the sentence back: it never chooses
            raise NoFlowMatches(
                f"{err}. The echo provider repeats the sentence rather than choosing a flow: "
                "say one of a flow's trigger phrases, or choose a model provider "
                "(the CLI's --provider, the editor's Run ▸ LLM Provider)."
            ) from None
        raise


def apply_arguments(workflow: Any, arguments: dict[str, Any]) -> Any:
    """A copy of ``workflow`` whose Start variables hold ``arguments`` as their values (the run's
    variables start from them; the run coerces and checks them as it does any value). An
    argument with no variable of that name is added as a string variable."""
    copy = workflow.model_copy(deep=True)
    start = copy.start_node()
    if start is None or not arguments:
        return copy
    raw = getattr(start.data, "variables", None)
    from_extra = raw is None
    if from_extra:
        raw = (start.data.model_extra or {}).get("variables") or []
    raw = raw or []
    rows = [
        v.model_dump(mode="json") if hasattr(v, "model_dump") else dict(v)
        for v in raw
        if hasattr(v, "model_dump") or isinstance(v, dict)
    ]
    left = dict(arguments)
    for row in rows:
        if row.get("name") in left:
            row["value"] = left.pop(row["name"])
    rows.extend({"name": k, "value": v, "type": "string"} for k, v in left.items())
    data = start.data.model_dump(mode="json")
    data["variables"] = rows
    start.data = type(start.data).model_validate(data)
    return copy


# The kinds that, in a workflow WITHOUT ``permissions``, reach what they name (docs/design.md,
# "Contract details": http, fetch, flow, browser and MCP behave as if allowed; code and scripts
# reach nothing). Only read to say so in words before a flow runs; access is decided by
# engine.graph.permissions.
_OPEN_WITHOUT_PERMISSIONS = {
    "http": "network",
    "fetch": "network",
    "browser": "network",
    "mcp": "tools",
    "flow": "flows",
    "action": "flows",
}


def permission_summary(workflow: Any) -> str:
    """What a flow's steps may reach, in words, for the confirmation before it runs (``flowdesk
    do``, the command bar): ``network api.example.com; files ~/data`` from its ``permissions``,
    ``no network, no files`` when they grant nothing (or when the flow declares none and holds no
    step that reaches out by default, e.g. code only), and, for a flow without ``permissions``
    whose http/fetch/browser/MCP/flow steps are unbounded, which of those it has."""
    perms = permissions_of(workflow)
    if perms is None:
        kinds = {_OPEN_WITHOUT_PERMISSIONS[n.type] for n in workflow.nodes if n.type in _OPEN_WITHOUT_PERMISSIONS}
        reach = [r for r in _OPEN_WORDS if r in kinds]
        if not reach:
            return "no network, no files"
        return "any " + ", any ".join(_OPEN_WORDS[r] for r in reach) + " its steps name (the flow sets no permissions)"
    network, files = perms.network or [], perms.files or []
    parts = [
        ("any network host" if "*" in network else "network " + ", ".join(network)) if network else "no network",
        ("files " + ", ".join(files)) if files else "no files",
    ]
    if perms.flows:
        parts.append("any flow" if "*" in perms.flows else "flows " + ", ".join(perms.flows))
    if perms.tools:
        parts.append("any tool" if "*" in perms.tools else "tools " + ", ".join(perms.tools))
    if not network and not files:
        return ", ".join(parts[:2]) + "".join("; " + p for p in parts[2:])
    return "; ".join(parts)


_OPEN_WORDS = {"network": "network host", "flows": "flow", "tools": "MCP tool"}
