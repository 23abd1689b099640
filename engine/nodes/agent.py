"""The ``agent`` node kind as declared: calls an LLM with its prompts; linked agents, library
flows and MCP tools are offered to it as tools.

This module is what an agent node *is*: its data (:class:`AgentData`, :class:`AgentTools`), its
defaults, ports, labels and palette entries, its checks, the entries of ``tools.flows``
(:func:`flow_refs`, :func:`approve_mode`) and its state while a tool call waits for approval
(:class:`ToolPause`). The model, validation, the editor and import/export read these; they
import nothing of the run layer.

What it *does* in a run is elsewhere, named (as the registry names the kinds) rather than
imported, so that validating, importing or exporting a workflow never loads asyncio, the
providers, MCP or the flow library: the step in :mod:`engine.nodes.agent_step` (loaded by the
first step, which then calls it directly) and the tools' checks that read the library and the
MCP settings, the answer check and the pause in :mod:`engine.nodes.agent_tools` (loaded when a
node offers such tools, or a call waits). The step's names stay readable from here
(``engine.nodes.agent.ProviderCall``) through the module's ``__getattr__``.
"""

from __future__ import annotations

from importlib import import_module
from types import ModuleType
from typing import Any

from pydantic import Field, model_validator

from engine.llm.base import APPROVE_MODES
from engine.llm.structured import schema_of
from engine.nodes.base import ERROR_HANDLE, NodeData, NodeSpec, PaletteEntry, PauseRequest, PolicyData, _Loose, is_none

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "DEFAULT_REASONING_EFFORT",
    "MAX_SUBAGENT_DEPTH",
    "AgentTools",
    "AgentData",
    "AgentSpec",
    "SPEC",
    "ToolPause",
    "flow_refs",
    "approve_mode",
]

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."
DEFAULT_REASONING_EFFORT = "low"
MAX_SUBAGENT_DEPTH = 16

#: The kind's run-time part and its tools' checks, named here and imported on first use.
STEP_MODULE = "engine.nodes.agent_step"
TOOLS_MODULE = "engine.nodes.agent_tools"
#: Names defined in this module before the step moved out, read from the step's module.
_STEP_NAMES = frozenset(
    {"ProviderCall", "call_subagent", "flow_tools_of", "subagents_of", "templated", "resolved_prompt"}
)


def _part(module: str) -> ModuleType:
    """:data:`STEP_MODULE` or :data:`TOOLS_MODULE`, imported the first time it is asked for."""
    return import_module(module)


def __getattr__(name: str) -> Any:
    if name in _STEP_NAMES:
        return getattr(_part(STEP_MODULE), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class AgentTools(_Loose):
    web_search: bool = False
    subagents: bool = False
    #: Library flows offered to the model as tools (library ids, or ``{flow, approve}``); absent = none.
    flows: list[Any] | None = Field(default=None, exclude_if=is_none)
    #: MCP servers' tools offered to the model: ``[{server, tools: [names] | "*", approve?}]``.
    mcp: list[Any] | None = Field(default=None, exclude_if=is_none)


_TEXT_FIELDS = frozenset(("agentName", "systemPrompt", "userPrompt", "model", "reasoningEffort"))
_EMPTY_IF_NULL = _TEXT_FIELDS | {"tools"}


def _no_tools() -> Any:
    return {}


class AgentData(PolicyData):
    agentName: str = ""
    systemPrompt: str = ""
    userPrompt: str = ""
    model: str = ""
    reasoningEffort: str = ""
    # The default is validated from ``{}`` by pydantic-core: a factory making ``AgentTools()``
    # went through BaseModel.__init__ in Python, ~1.5 µs of every agent of a loaded file.
    tools: AgentTools = Field(default_factory=_no_tools, validate_default=True)
    provider: str | None = Field(default=None, exclude_if=is_none)
    #: A structured answer: ``{"type": "json_schema", "schema": {...}}`` (docs/design.md,
    #: "Conditions, routing and structured answers"); absent: free text.
    responseFormat: dict[str, Any] | None = Field(default=None, exclude_if=is_none)

    @model_validator(mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        # null text fields read as empty and null tools as none: one call an agent, and only a
        # data with a null in it is copied (a field validator was a call per field given).
        if v.__class__ is dict and None in v.values():
            v = {k: ("" if k in _TEXT_FIELDS else {}) if x is None and k in _EMPTY_IF_NULL else x for k, x in v.items()}
        return v


def flow_refs(refs: Any) -> list[tuple[str, str]]:
    """``tools.flows`` as ``(library reference, approve)`` pairs: an entry is an id, or
    ``{flow (or id), approve}``."""
    out = []
    for ref in refs or ():
        if isinstance(ref, dict):
            target = ref.get("flow") or ref.get("id")
            if target:
                out.append((str(target), approve_mode(ref.get("approve"))))
        elif ref is not None and str(ref):
            out.append((str(ref), "always"))
    return out


def approve_mode(value: Any) -> str:
    return "ask" if isinstance(value, str) and value.strip().lower() == "ask" else "always"


class ToolPause:
    """An agent step paused before a tool call (its node's state while the run waits): the
    conversation kept by the provider (None for a provider without one: echo, local, which make
    the same calls again), the decisions given so far by call id, and the call that waits
    (``pending``: ``{callId, tool, kind, server, arguments, schema}``; None once answered)."""

    __slots__ = ("conversation", "decisions", "pending", "prompt")

    def __init__(
        self,
        conversation: dict[str, Any] | None,
        decisions: dict[str, dict[str, Any]],
        pending: dict[str, Any] | None,
        prompt: str = "",
    ) -> None:
        self.conversation = conversation
        self.decisions = decisions
        self.pending = pending
        self.prompt = prompt

    def extra(self) -> dict[str, Any] | None:
        """The ``wait_input`` event's fields: ``{kind: "tool_call", tool, server?, arguments, ...}``."""
        p = self.pending
        if p is None:
            return None
        extra: dict[str, Any] = {"kind": "tool_call", "tool": p.get("tool"), "arguments": p.get("arguments")}
        if p.get("server"):
            extra["server"] = p["server"]
        extra.update({"toolKind": p.get("kind"), "callId": p.get("callId"), "schema": p.get("schema")})
        return extra

    def to_json(self) -> dict[str, Any]:
        return {
            "conversation": self.conversation,
            "decisions": self.decisions,
            "pending": self.pending,
            "prompt": self.prompt,
        }

    @classmethod
    def from_json(cls, data: Any) -> ToolPause:
        data = data if isinstance(data, dict) else {}
        return cls(
            data.get("conversation"), dict(data.get("decisions") or {}), data.get("pending"), data.get("prompt") or ""
        )


def _one_line(text: str) -> str:
    return " ".join(text.split())


class AgentSpec(NodeSpec):
    kind = "agent"
    data_model = AgentData
    reports_output = True
    label = "Agent"
    description = "Calls an LLM with your prompts."
    icon = "agent"
    color = "#3b6fd9"
    width = 248.0
    category = "Agents"
    tool_capable = True
    works = True
    through_run = True

    def outputs(self, data: NodeData) -> tuple[str, ...]:
        tools = getattr(data, "tools", None)
        return ("output", "subagent") if tools is not None and tools.subagents else ("output",)

    def has_output(self, data: NodeData, handle: str) -> bool:
        # The subagent handle counts even with the tool off: that is a rule of its own with a
        # clearer message.
        return handle == "output" or handle == "subagent" or handle == ERROR_HANDLE

    def plain_output(self) -> bool:
        return True

    def subagents_on(self, data: NodeData) -> bool:
        return bool(data.tools.subagents)  # type: ignore[attr-defined]

    def title(self, data: NodeData) -> str:
        return data.__dict__.get("agentName") or "Agent"  # (every step: see execute)

    def describe(self, node: Any) -> str:
        title = self.title(node.data)
        return f"'{title}'" if title != "Agent" else f"Agent '{node.id}'"

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        model = getattr(data, "model", "") or "default model"
        effort = getattr(data, "reasoningEffort", "")
        tools = getattr(data, "tools", None)
        extras = [t for t, on in (("web", tools and tools.web_search), ("subagents", tools and tools.subagents)) if on]
        prompt = _one_line(getattr(data, "userPrompt", "") or getattr(data, "systemPrompt", ""))
        return [
            (" · ".join([model] + ([effort] if effort else []) + extras), True),
            (prompt or "(previous output)", False),
        ]

    def new_data(self) -> dict[str, Any]:
        return {
            "agentName": "Agent",
            "systemPrompt": "",
            "userPrompt": "{{PREVIOUS_OUTPUT}}",
            "model": "",
            "reasoningEffort": "low",
            "tools": {"web_search": False, "subagents": False},
        }

    def palette_entries(self) -> list[PaletteEntry]:
        # A subagent is an agent; the extra ``subagent`` flag (kept by the format's extra-field
        # rule, ignored by AgentFlow) lets the canvas draw it with only its subagent input
        # before it is linked to a parent.
        sub = {
            "agentName": "Subagent",
            "systemPrompt": "",
            "userPrompt": "",
            "model": "",
            "reasoningEffort": "low",
            "tools": {"web_search": False, "subagents": False},
            "subagent": True,
        }
        return [
            PaletteEntry("agent", "agent", self.label, self.description, "agent", self.new_data()),
            PaletteEntry("subagent", "agent", "Subagent", "An agent another agent calls as a tool.", "subagent", sub),
        ]

    def check(self, node: Any, checks: Any) -> None:
        data = node.data
        if not data.model.strip():
            checks.warning("agent_no_model", f"{checks.label(node)} has no model set; the provider's default is used.")
        if data.tools.subagents and not checks.index.sub_children.get(node.id):
            checks.warning("subagents_unused", f"{checks.label(node)} has subagents turned on but none linked.")
        if data.tools.flows:
            _part(TOOLS_MODULE).check_flow_tools(node, checks, data.tools.flows)
        if data.tools.mcp:
            _part(TOOLS_MODULE).check_mcp_tools(node, checks, data.tools.mcp)
        # getattr(data, "approve", None) without pydantic's slow miss path (a Python __getattr__ an agent)
        approve = data.__dict__.get("approve")
        if approve is None and data.__pydantic_extra__:
            approve = data.__pydantic_extra__.get("approve")
        if approve is not None and approve not in APPROVE_MODES:
            checks.error(
                "agent_bad_approve", f'{checks.label(node)}: approve must be "always" or "ask", not {approve!r}.'
            )
        if data.responseFormat is not None and schema_of(data.responseFormat) is None:
            checks.error(
                "agent_bad_response_format",
                f"{checks.label(node)} asks for a structured answer but gives no JSON schema "
                '(responseFormat needs {"type": "json_schema", "schema": {…}}).',
            )
        if checks.web_search_available is False and data.tools.web_search:
            checks.warning(
                "web_search_unconfigured",
                f"{checks.label(node)} uses web search, but no search backend is configured "
                "(set FLOWDESK_SEARXNG_URL or the search URL in settings).",
            )

    # ---------------------------------------------------------------- a tool call waiting for approval
    state_key = "toolCalls"

    def state_to_json(self, state: Any) -> Any:
        return state.to_json()

    def state_from_json(self, ctx: Any, data: Any) -> Any:
        return ToolPause.from_json(data)

    def waiting_prompt(self, ctx: Any, node: Any) -> str:
        held = ctx.state(node.id)
        return held.prompt if isinstance(held, ToolPause) else self.pause_prompt(node.data)

    def pause_extra(self, ctx: Any, node: Any) -> dict[str, Any] | None:
        held = ctx.state(node.id)
        return held.extra() if isinstance(held, ToolPause) else None

    def answer_problem(self, ctx: Any, node: Any, answer: dict[str, Any]) -> str | None:
        held = ctx.state(node.id)
        if "arguments" not in answer:
            return None
        if not isinstance(held, ToolPause) or held.pending is None:
            return "only a tool call's approval takes arguments"
        return _part(TOOLS_MODULE).arguments_problem(held.pending.get("schema"), answer["arguments"])

    def answered(
        self, ctx: Any, node: Any, arrived: Any, flowing: Any, answer: dict[str, Any], now: float, waited_ms: int
    ) -> None:
        held = ctx.state(node.id)
        if isinstance(held, ToolPause) and held.pending is not None:
            decision = {"decision": answer.get("decision"), "note": answer.get("note", "")}
            if answer.get("decision") == "approve" and isinstance(answer.get("arguments"), dict):
                decision["arguments"] = answer["arguments"]
            held.decisions[str(held.pending["callId"])] = decision
            held.pending = None
        return None  # the step is taken again: the provider goes on from the kept conversation

    def cancelled(self, ctx: Any, node_id: str, state: Any, reason: str) -> None:
        ctx.drop_state(node_id)

    async def execute(self, ctx: Any, node: Any, value: Any) -> tuple[Any, str] | PauseRequest:
        """One LLM call: :func:`engine.nodes.agent_step.execute`. The first step imports that
        module and puts its function in this method's place on the spec, so every later step
        calls it directly (a step of an agent is the run's hot path: no frame is added)."""
        step = _part(STEP_MODULE).execute
        self.execute = step  # type: ignore[method-assign]
        return await step(ctx, node, value)


SPEC = AgentSpec()
