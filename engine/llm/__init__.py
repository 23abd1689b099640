"""LLM providers behind one seam (see :mod:`engine.llm.base`).

HTTP providers (OpenAI-compatible, Anthropic) and the embedded local model are imported
lazily by :mod:`engine.llm.registry`, so importing the engine stays cheap.
"""

from engine.llm.base import (AgentInvocation, LLMError, LLMProvider, LLMResult, ProviderConfigError, ProviderContext,
                   ProviderUnavailable, SubagentSpec, describe_subagent, tool_name_for)
from engine.llm.config import web_search_available
from engine.llm.echo import EchoProvider
from engine.llm.registry import available_providers, check_provider, make_resolver

__all__ = ["AgentInvocation", "LLMError", "LLMProvider", "LLMResult", "ProviderConfigError", "ProviderContext",
           "ProviderUnavailable", "SubagentSpec", "describe_subagent", "tool_name_for", "EchoProvider", "make_resolver",
           "available_providers", "web_search_available", "check_provider"]
