"""Choosing the provider for an agent call.

``make_resolver(provider=..., model=..., base_url=...)`` returns a function that maps
an :class:`AgentInvocation` to the provider that serves it: the forced provider when
one is named (CLI ``--provider``), else the node's own ``provider``, else the default.
``model`` overrides every node's model. Unknown names raise :class:`ProviderConfigError`
whose message says what is available and how to configure it.
"""

from __future__ import annotations

import dataclasses
from typing import Callable

from .base import AgentInvocation, LLMError, LLMProvider, LLMResult, ProviderContext
from .echo import EchoProvider

__all__ = ["ProviderConfigError", "make_resolver", "available_providers"]


class ProviderConfigError(LLMError, ValueError):
    """No usable provider for a call; the message names what is missing and how to fix it."""


class _ModelOverride:
    def __init__(self, inner: LLMProvider, model: str) -> None:
        self.inner = inner
        self.model = model
        self.name = inner.name

    async def complete(self, invocation: AgentInvocation, ctx: ProviderContext) -> LLMResult:
        return await self.inner.complete(dataclasses.replace(invocation, model=self.model), ctx)


_FACTORIES: dict[str, Callable[..., LLMProvider]] = {
    "echo": lambda **_: EchoProvider(),
}


def available_providers() -> list[str]:
    return sorted(_FACTORIES)


def _build(name: str, base_url: str | None) -> LLMProvider:
    factory = _FACTORIES.get(name)
    if factory is None:
        raise ProviderConfigError(
            f"Unknown LLM provider '{name}'. Available: {', '.join(available_providers())}.")
    return factory(base_url=base_url)


def make_resolver(provider: str | None = None, *, model: str | None = None,
                  base_url: str | None = None) -> Callable[[AgentInvocation], LLMProvider]:
    cache: dict[str, LLMProvider] = {}

    def get(name: str) -> LLMProvider:
        p = cache.get(name)
        if p is None:
            p = _build(name, base_url)
            if model:
                p = _ModelOverride(p, model)
            cache[name] = p
        return p

    if provider:
        get(provider)  # fail early on an unknown name

    def resolve(inv: AgentInvocation) -> LLMProvider:
        name = provider or inv.provider
        if not name:
            raise ProviderConfigError(
                "No LLM provider is configured for this agent. Run with --provider echo for an offline "
                "dry run, or set the agent's provider.")
        return get(name)

    return resolve
