"""LLM providers behind one seam (see :mod:`engine.llm.base`).

This package's own names are the seam's types (``engine.llm.base``), the echo provider and
``web_search_available``. Each is loaded on first use (:data:`_LAZY`, read by the module's
``__getattr__``, as :mod:`engine` does), so importing an ``engine.llm.*`` module, which imports
this package first, costs nothing more: validating a workflow reads ``engine.llm.base`` and
``engine.llm.config`` without loading the echo provider's tool loop and its HTTP client.
The providers over HTTP (OpenAI-compatible, Anthropic), the embedded local model and the
resolver that picks one are in :mod:`engine.llm.registry`, imported by what runs a model.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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

# Public name -> the submodule that defines it (the seam's types: base), imported on first access.
_LAZY: dict[str, str] = {name: "base" for name in __all__} | {"web_search_available": "config", "EchoProvider": "echo"}


def __getattr__(name: str) -> Any:
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'engine.llm' has no attribute {name!r}") from None
    value = getattr(import_module(f"engine.llm.{module}"), name)
    globals()[name] = value  # later lookups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
