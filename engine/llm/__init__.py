"""LLM providers behind one seam (see :mod:`engine.llm.base`).

This package's own names are the seam's types (``engine.llm.base``), the echo provider and
``web_search_available``: importing it (which any ``engine.llm.*`` import does) stays cheap.
The providers over HTTP (OpenAI-compatible, Anthropic), the embedded local model and the
resolver that picks one are in :mod:`engine.llm.registry`, imported by what runs a model.
"""

from engine.llm.base import (
    AgentInvocation,
    LLMError,
    LLMProvider,
    LLMResult,
    ProviderConfigError,
    ProviderContext,
    ProviderUnavailable,
    SubagentSpec,
    describe_subagent,
    tool_name_for,
)
from engine.llm.config import web_search_available
from engine.llm.echo import EchoProvider

__all__ = [
    "AgentInvocation",
    "LLMError",
    "LLMProvider",
    "LLMResult",
    "ProviderConfigError",
    "ProviderContext",
    "ProviderUnavailable",
    "SubagentSpec",
    "describe_subagent",
    "tool_name_for",
    "EchoProvider",
    "web_search_available",
]
