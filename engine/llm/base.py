"""The provider seam: what an agent node asks of an LLM, and what it gets back.

A provider receives an :class:`AgentInvocation` (system prompt, user content, model,
reasoning effort, tools, the subagent tree) and a :class:`ProviderContext`, and
returns an :class:`LLMResult`. Through the context it can

* emit streamed text (``ctx.delta(text)``; the engine coalesces and logs it), and
* run a subagent child as a tool (``await ctx.call_subagent(child, argument)``); the
  engine emits ``subagent_call_start``/``end``/``error`` with the right
  ``callId``/``parentCallId``/``depth`` and runs the child on the same provider
  registry, so providers never build those payloads themselves.

Failures are raised as :class:`LLMError` with a message a user understands.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from engine.errors import FlowdeskError

__all__ = [
    "DirectOutput",
    "NODE_RETRIES_ONLY",
    "AgentInvocation",
    "SubagentSpec",
    "LLMResult",
    "LLMError",
    "ProviderConfigError",
    "ProviderUnavailable",
    "ModelNotFound",
    "LLMProvider",
    "ProviderContext",
    "tool_name_for",
    "describe_subagent",
    "FlowToolSpec",
    "flow_tool_arguments",
    "NoToolsContext",
    "McpToolSpec",
    "APPROVE_MODES",
]

#: ``approve`` of a tool in an agent's tool list: ``always`` (no question, the default) or
#: ``ask`` (the run pauses before the call: docs/design.md, "Approving tool calls").
APPROVE_MODES = ("always", "ask")


class LLMError(FlowdeskError):
    """An LLM call failed; the message is shown to the user as the ``llm_error`` content."""

    def __init__(self, message: str, *, retryable: bool = False, status: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.status = status


class DirectOutput(FlowdeskError):  # noqa: N818 (a signal, not an error)
    """A tool's result that is the agent's answer (a flow with ``directOutput: true``): the tool
    loop stops and the model takes no further turn (seed 004's ``directOutput``)."""

    def __init__(self, text: str) -> None:
        super().__init__("direct output")
        self.text = text


class ProviderUnavailable(LLMError):
    """The provider's server could not be reached: the connection was refused, the host is
    unreachable, or connecting timed out. Starting the server, or choosing another provider,
    is the way out: the step's ``llm_error`` event says so (``providerUnavailable``)."""


class ModelNotFound(LLMError):
    """The provider's server answered that it has no model ``model`` (HTTP 404): a flow written
    for one provider's models, run on a local server that has others. Choosing one of the
    server's models for the run (``--model``; in the editor, Run ▸ LLM Provider ▸ Model for
    Every Agent) is the way out: the step's ``llm_error`` event says so (``modelUnavailable``)."""

    def __init__(self, message: str, *, model: str, status: int | None = None):
        super().__init__(message, status=status)
        self.model = model


class ProviderConfigError(LLMError, ValueError):
    """No usable provider for a call; the message names what is missing and how to fix it.

    An :class:`LLMError` too, so a run shows it as a clean ``llm_error`` message.
    """


@dataclass(slots=True)
class SubagentSpec:
    """An agent offered to its parent as a tool (with its own children, recursively)."""

    node_id: str
    name: str
    system_prompt: str
    user_prompt: str
    model: str
    reasoning_effort: str
    tools: dict[str, bool]
    provider: str | None
    children: list[SubagentSpec] = field(default_factory=list)
    approve: str = "always"  # "ask": a call waits for a person (the child's data ``approve``)

    @property
    def tool_name(self) -> str:
        return tool_name_for(self.name, self.node_id)

    @property
    def description(self) -> str:
        return describe_subagent(self)


@dataclass(slots=True)
class FlowToolSpec:
    """A library flow offered to a model as a tool (an agent's ``tools.flows``).

    ``parameters`` is the JSON schema of the flow's Start variables (types from ``type``,
    ``required`` listed); ``description`` the flow's description. Calling it goes through
    ``ctx.call_flow(spec, arguments)``, which runs the flow nested and logs ``flow_call_*``.
    """

    flow_id: str
    name: str
    description: str
    parameters: dict[str, Any]
    approve: str = "always"  # "ask": a call waits for a person

    @property
    def tool_name(self) -> str:
        return tool_name_for(self.name or "flow", "flow_" + self.flow_id)

    @property
    def tool_description(self) -> str:
        text = " ".join((self.description or "").split()) or f"Runs the flow '{self.name}'."
        return f"Run the Flowdesk flow '{self.name}': {text}"[:1000]


@dataclass(slots=True)
class McpToolSpec:
    """A tool of an MCP server offered to a model (an agent's ``tools.mcp``).

    ``tool`` is the tool's own name on ``server``; ``parameters`` its input schema as the server
    lists it; ``name`` the function name the model sees (the tool's own name when it is a valid
    function name not taken by another offered tool, else ``server_tool``). Calling it goes
    through ``ctx.call_mcp(spec, arguments)``, which logs ``tool_call_*``.
    """

    server: str
    tool: str
    description: str
    parameters: dict[str, Any]
    approve: str = "always"
    name: str = ""

    @property
    def tool_name(self) -> str:
        return self.name or mcp_function_name(self.server, self.tool)

    @property
    def tool_description(self) -> str:
        text = (
            " ".join((self.description or "").split()) or f"The tool '{self.tool}' of the MCP server '{self.server}'."
        )
        return text[:1000]


_FUNCTION_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def mcp_function_name(server: str, tool: str, taken: set[str] | None = None) -> str:
    """The function name a model sees for ``tool`` of ``server``: the tool's own name when it is a
    valid function name and not in ``taken``, else ``server_tool`` made valid."""
    if _FUNCTION_NAME.match(tool) and (taken is None or tool not in taken):
        return tool
    base = _TOOL_CHARS.sub("_", f"{server}_{tool}").strip("_") or "tool"
    return base[:64]


def flow_tool_arguments(spec: FlowToolSpec, text: str) -> dict[str, Any]:
    """Arguments for a flow called without function calling (echo, local): ``text`` for each
    string parameter (the required ones, or all when none is required)."""
    props = spec.parameters.get("properties") or {}
    required = set(spec.parameters.get("required") or ())
    names = [n for n in props if not required or n in required]
    return {n: text for n in names if props[n].get("type", "string") == "string"}


@dataclass(slots=True)
class AgentInvocation:
    node_id: str
    name: str
    system_prompt: str
    user_content: str
    model: str
    reasoning_effort: str
    tools: dict[str, bool]
    subagents: list[SubagentSpec]
    provider: str | None = None
    depth: int = 0  # 0 for a workflow step, n for a subagent n levels down
    flows: list[FlowToolSpec] = field(default_factory=list)  # library flows offered as tools
    mcp_tools: list[McpToolSpec] = field(default_factory=list)  # MCP servers' tools offered (tools.mcp)
    #: A structured answer wanted (OpenAI's ``response_format``, e.g. ``{"type": "json_schema", ...}``);
    #: sent by providers that support it (OpenAI-compatible servers), ignored by the others.
    response_format: dict[str, Any] | None = None
    #: Images for the model to look at with ``user_content`` (data URLs, ``data:image/png;base64,…``:
    #: strings, so an invocation stays JSON). Sent by providers whose model accepts images
    #: (engine.llm.vision); the others get the text alone.
    images: list[str] = field(default_factory=list)


#: Set by the step policy while a node with its own retry policy (``errorMode: retry``) runs:
#: then that policy is the only retry layer, and an HTTP provider answers a 429/5xx with an
#: error at once instead of trying again itself (docs/design.md, "Step policies").
NODE_RETRIES_ONLY: ContextVar[bool] = ContextVar("flowdesk_node_retries_only", default=False)


@dataclass(slots=True)
class LLMResult:
    text: str
    usage: dict[str, int] | None = None  # {"prompt_tokens", "completion_tokens"}
    model: str | None = None


class ProviderContext(Protocol):
    node_id: str

    def delta(self, text: str) -> None:
        """Report streamed text as it arrives (coalesced by the engine)."""

    async def call_subagent(self, child: SubagentSpec, argument: str) -> str:
        """Run ``child`` as an agent on ``argument`` and return its answer (raises LLMError on failure)."""

    async def call_flow(self, flow: FlowToolSpec, arguments: dict[str, Any]) -> str:
        """Run a library flow with ``arguments`` as its variables; its result as text (LLMError on failure)."""

    async def call_mcp(self, tool: McpToolSpec, arguments: dict[str, Any]) -> str:
        """Call an MCP server's tool; its result as text for the model (an error result too)."""


@runtime_checkable
class LLMProvider(Protocol):
    name: str

    async def complete(self, invocation: AgentInvocation, ctx: ProviderContext) -> LLMResult: ...


ProviderResolver = Callable[[AgentInvocation], LLMProvider]


class NoToolsContext:
    """The context of a one-off request that offers the model no tools (the command bar's flow
    router, Provider Settings' connection test): streamed text is not shown, and a tool call,
    which nothing offered, is refused."""

    def __init__(self, node_id: str) -> None:
        self.node_id = node_id

    def delta(self, text: str) -> None:
        pass

    async def call_subagent(self, child: SubagentSpec, argument: str) -> str:  # pragma: no cover - none offered
        raise LLMError(f"{self.node_id}: no subagents are offered")

    async def call_flow(self, flow: FlowToolSpec, arguments: dict[str, Any]) -> str:  # pragma: no cover - none
        raise LLMError(f"{self.node_id}: no flows are offered")

    async def call_mcp(self, tool: McpToolSpec, arguments: dict[str, Any]) -> str:  # pragma: no cover - none
        raise LLMError(f"{self.node_id}: no MCP tools are offered")


_TOOL_CHARS = re.compile(r"[^a-zA-Z0-9_]+")


def tool_name_for(name: str, node_id: str) -> str:
    """A function-tool name (``^[a-zA-Z0-9_-]{1,64}$``) derived from a name and a node id."""
    base = _TOOL_CHARS.sub("_", name.strip().lower()).strip("_") or "agent"
    suffix = _TOOL_CHARS.sub("_", node_id).strip("_")[-12:] or "x"
    return f"{base[:40]}_{suffix}"[:64]


def describe_subagent(spec: SubagentSpec) -> str:
    parts = [f"Delegate a task to the subagent '{spec.name or 'Agent'}'."]
    prompt = " ".join((spec.system_prompt or "You are a helpful assistant.").split())
    if len(prompt) > 300:
        prompt = prompt[:297] + "..."
    parts.append(f"Its instructions: {prompt}")
    tools = [k for k, v in spec.tools.items() if v and k != "subagents"]
    if tools:
        parts.append("It can use: " + ", ".join(tools) + ".")
    if spec.children:
        parts.append("It can delegate to: " + ", ".join(c.name or c.node_id for c in spec.children) + ".")
    parts.append("Pass the full task as the 'input' argument; it answers with text.")
    return " ".join(parts)


def tool_schema(spec: SubagentSpec) -> dict[str, Any]:
    """JSON schema of a subagent tool's parameters (same for every provider)."""
    return {
        "type": "object",
        "properties": {"input": {"type": "string", "description": "The task or question for this subagent."}},
        "required": ["input"],
    }


SubagentCaller = Callable[[SubagentSpec, str], Awaitable[str]]
