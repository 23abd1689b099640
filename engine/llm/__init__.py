"""LLM providers behind one seam (see :mod:`engine.llm.base`)."""

from .base import (AgentInvocation, LLMError, LLMProvider, LLMResult, ProviderContext, SubagentSpec,
                   describe_subagent, tool_name_for)
from .echo import EchoProvider

__all__ = ["AgentInvocation", "LLMError", "LLMProvider", "LLMResult", "ProviderContext", "SubagentSpec",
           "describe_subagent", "tool_name_for", "EchoProvider"]
