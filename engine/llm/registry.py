"""Choosing the provider for an agent call.

``make_resolver(provider=..., model=..., base_url=...)`` returns a function that maps
an :class:`AgentInvocation` to the provider that serves it: the forced provider when
one is named (CLI ``--provider``), else the node's own ``provider``, else the default.

Invariants
* Provider ids come from the catalogue plus the user's settings (``engine.llm.config``):
  ``openai``, ``anthropic``, ``local``, ``echo``, and the OpenAI-compatible aliases
  ``ollama``, ``lmstudio``, ``openrouter`` (kind ``openai`` with their own base URL).
* The default, when nothing names a provider: ``--base-url`` alone means an
  OpenAI-compatible server; else the settings' ``defaultProvider``; else ``local`` when
  its extra is installed; else a :class:`ProviderConfigError` saying how to configure one.
* ``model`` overrides every node's model; ``base_url`` overrides the base URL of the
  forced (or default) HTTP provider. A node's empty model means the provider's default.
* A remote HTTP provider without an API key is a :class:`ProviderConfigError` naming the
  environment variable and the keyring entry; servers on this machine need no key.
* ``echo`` behaves exactly as before: no configuration is read for it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Callable
from typing import Any

import httpx

from engine.llm import local  # read through the module: tests replace local.local_available
from engine.llm.anthropic import AnthropicProvider
from engine.llm.base import (
    AgentInvocation,
    LLMProvider,
    LLMResult,
    NoToolsContext,
    ProviderConfigError,
    ProviderContext,
)
from engine.llm.config import (
    KEYRING_SERVICE,
    ProviderInfo,
    api_key_for,
    is_local_url,
    load_settings,
    providers,
    redact,
    searxng_url,
    web_search_available,
)
from engine.llm.echo import EchoProvider
from engine.llm.openai import OpenAIProvider
from engine.llm.vision import provider_accepts_images

__all__ = [
    "ProviderConfigError",
    "NoProviderConfigured",
    "make_resolver",
    "available_providers",
    "build_provider",
    "default_provider",
    "web_search_available",
    "check_provider",
    "provider_models",
]


class _ModelOverride:
    def __init__(self, inner: LLMProvider, model: str) -> None:
        self.inner = inner
        self.model = model
        self.name = inner.name
        self.provider_id = getattr(inner, "provider_id", inner.name)

    async def complete(self, invocation: AgentInvocation, ctx: ProviderContext) -> LLMResult:
        return await self.inner.complete(dataclasses.replace(invocation, model=self.model), ctx)

    def accepts_images(self, model: str) -> bool:
        """Whether the model every call is sent to (not the node's) takes images."""
        return provider_accepts_images(self.inner, self.model)


# Providers built in code rather than from the catalogue, checked first (tests and embedders
# may add or replace entries). ``echo`` lives here so it never reads any configuration.
_FACTORIES: dict[str, Callable[..., LLMProvider]] = {
    "echo": lambda **_: EchoProvider(),
}


def available_providers() -> list[str]:
    try:
        return sorted(set(providers()) | set(_FACTORIES))
    except ProviderConfigError:
        return sorted(_FACTORIES)


def default_provider(base_url: str | None = None) -> str:
    """The provider used when neither the run nor the node names one."""
    if base_url:
        return "openai"
    settings = load_settings()
    if settings.defaultProvider:
        return settings.defaultProvider

    if local.local_available():
        return "local"
    raise NoProviderConfigured(local.LOCAL_MISSING_MESSAGE)


class NoProviderConfigured(ProviderConfigError):
    """Nothing names a provider and the embedded model is not installed (see ``engine.llm.discovery``)."""


def _base_url_for(info: ProviderInfo, override: str | None) -> str:
    if override:
        return override
    if info.base_url_env:
        env = os.environ.get(info.base_url_env, "").strip()
        if env:
            return env
    if not info.base_url:
        raise ProviderConfigError(
            f"Provider '{info.id}' has no base URL; set one with --base-url or in the Flowdesk settings file."
        )
    return info.base_url


def build_provider(name: str, *, base_url: str | None = None, **kwargs: object) -> LLMProvider:
    """A provider instance for the id ``name`` (``kwargs`` go to HTTP providers, for tests)."""
    factory = _FACTORIES.get(name)
    if factory is not None:
        return factory(base_url=base_url)
    settings = load_settings()
    table = providers(settings)
    info = table.get(name)
    if info is None:
        raise ProviderConfigError(
            f"Unknown LLM provider '{name}'. Available: {', '.join(sorted(table))}. Other OpenAI-compatible "
            "servers can be used with --base-url URL, or added under 'providers' in the Flowdesk settings file."
        )
    if info.kind == "echo":
        return _FACTORIES["echo"](base_url=base_url)
    if info.kind == "local":
        return local.LocalProvider()
    url = _base_url_for(info, base_url)
    key = api_key_for(info)
    if key is None and info.api_key_env and not is_local_url(url):
        raise ProviderConfigError(
            f"Provider '{info.id}' needs an API key for {redact(url)}: set the environment variable {info.api_key_env}, "
            f"or store it in the OS keyring (`keyring set {KEYRING_SERVICE} {info.id}`)."
        )
    common: dict[str, object] = dict(
        base_url=url,
        api_key=key,
        provider_id=info.id,
        models={m.id: m for m in info.models},
        default_model=info.default_model,
        http=settings.http,
        searxng_url=searxng_url(settings),
        supports_images=info.supportsImages,
    )
    common.update(kwargs)
    if info.kind == "anthropic":
        return AnthropicProvider(**common)  # type: ignore[arg-type]

    return OpenAIProvider(**common)  # type: ignore[arg-type]


def make_resolver(
    provider: str | None = None, *, model: str | None = None, base_url: str | None = None, **provider_kwargs: object
) -> Callable[[AgentInvocation], LLMProvider]:
    """Map each agent call to its provider; fails early when a forced provider cannot be built."""
    cache: dict[str, LLMProvider] = {}
    forced = provider or None

    def get(name: str, url: str | None) -> LLMProvider:
        key = f"{name}\0{url or ''}"
        p = cache.get(key)
        if p is None:
            p = build_provider(name, base_url=url, **provider_kwargs)
            if model:
                p = _ModelOverride(p, model)
            cache[key] = p
        return p

    if forced:
        get(forced, base_url)  # fail early on an unknown name or a missing key

    def resolve(inv: AgentInvocation) -> LLMProvider:
        if forced:
            return get(forced, base_url)
        if inv.provider:
            return get(inv.provider, None)
        return get(default_provider(base_url), base_url)

    return resolve


def provider_models(name: str, *, timeout: float = 2.0) -> list[str]:
    """The models provider ``name`` can answer with: what its server lists (``GET /models``) when
    it is on this machine (Ollama, LM Studio, ... have the models pulled there), else the
    provider catalogue's. An unknown provider, or a server that does not answer, gives what the
    catalogue knows (maybe nothing)."""
    settings = load_settings()
    info = providers(settings).get(name)
    if info is None:
        return []
    listed = [m.id for m in info.models]
    try:
        url = _base_url_for(info, None)
    except ProviderConfigError:
        return listed
    if info.kind not in ("openai", "anthropic") or not is_local_url(url):
        return listed

    with httpx.Client(timeout=timeout, trust_env=False) as client:
        found = models_at(client, url)
    return list(found) if found else listed


def models_at(client: Any, base_url: str) -> tuple[str, ...] | None:
    """The models an OpenAI-compatible server at ``base_url`` lists (``GET /models``), or None
    when nothing answers there as such a server does."""
    try:
        resp = client.get(f"{base_url.rstrip('/')}/models", headers={"Accept": "application/json"})
        if resp.status_code != 200:
            return None
        data = resp.json()
    except (httpx.HTTPError, ValueError):
        return None
    items = data.get("data") if isinstance(data, dict) else None
    return tuple(str(m["id"]) for m in items or [] if isinstance(m, dict) and m.get("id"))


async def check_provider(name: str, *, base_url: str | None = None, timeout: float = 30.0) -> str:
    """One short request to provider ``name`` (Provider Settings' Test button, before saving a
    base URL): what answered, and how fast, as one line (``gpt-4o-mini answered in 0.4 s: "OK"``).
    Raises ProviderConfigError (no key, unknown provider), LLMError (the server's reason) or
    TimeoutError, each with a message for the user."""
    provider = build_provider(name, base_url=base_url or None)
    inv = AgentInvocation(
        node_id="connection-test",
        name="Connection test",
        system_prompt="You are testing a connection. Reply with the single word OK.",
        user_content="Reply with OK.",
        model="",
        reasoning_effort="low",
        tools={"web_search": False, "subagents": False},
        subagents=[],
    )
    started = time.monotonic()
    try:
        result = await asyncio.wait_for(provider.complete(inv, NoToolsContext(inv.node_id)), timeout)
    except TimeoutError:
        raise TimeoutError(f"no answer within {timeout:g} s") from None
    took = time.monotonic() - started
    answer = " ".join((result.text or "").split())
    if len(answer) > 60:
        answer = answer[:57] + "..."
    return f"{result.model or name} answered in {took:.1f} s: \u201c{answer}\u201d"
