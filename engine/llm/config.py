"""Provider configuration: the catalogue, the user's overrides, API keys and web search.

* The catalogue is ``resources/providers.json`` (providers with their kind, base URL, the
  environment variable holding their key, and models with the reasoning efforts they
  accept).
* The user's overrides live in ``settings.json`` in the user config folder
  (``platformdirs.user_config_dir("flowdesk")``, or ``$FLOWDESK_CONFIG_DIR``). They may
  change a provider's fields, add models (merged by id) or add providers, and set
  ``defaultProvider``, ``webSearch.searxngUrl`` and ``http`` limits.
* API keys come from the provider's environment variable, else the OS keyring (service
  ``flowdesk``, user = provider id). Any keyring failure, or no backend, means "no key".
  Keys are held in memory only: this module never writes them, and they are kept out of
  every ``repr``, log line and error message (see :func:`redact`).
"""

from __future__ import annotations

import json
import logging
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from engine.files import atomic_write_text
from engine.keys import KEYRING_SERVICE
from engine.keys import keyring_lookup as _keyring_lookup
from engine.llm.base import ProviderConfigError
from engine.resources import read_resource_text, resource

__all__ = [
    "ModelInfo",
    "ProviderInfo",
    "HttpSettings",
    "Settings",
    "config_dir",
    "settings_path",
    "load_catalogue",
    "load_settings",
    "providers",
    "provider_info",
    "api_key_for",
    "searxng_url",
    "web_search_available",
    "is_local_url",
    "redact",
    "store_api_key",
    "KEYRING_SERVICE",
    "save_settings",
    "key_source",
    "model_choices",
    "reasoning_efforts",
    "DEFAULT_EFFORTS",
]

log = logging.getLogger("flowdesk.llm")


class ModelInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    name: str = ""
    reasoningEfforts: list[str] = Field(default_factory=list)
    supportsReasoningEffort: bool = False
    #: Whether the model reads images; None: decided by its name (engine.llm.vision).
    supportsImages: bool | None = None


class ProviderInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    name: str = ""
    kind: Literal["openai", "anthropic", "local", "echo"]
    base_url: str | None = None
    base_url_env: str | None = None
    api_key_env: str | None = None
    models: list[ModelInfo] = Field(default_factory=list)
    #: Whether this provider's models read images, for those whose entry does not say
    #: (a vision server added in settings.json); None: each model's name decides.
    supportsImages: bool | None = None

    def model(self, model_id: str) -> ModelInfo | None:
        return next((m for m in self.models if m.id == model_id), None)

    @property
    def default_model(self) -> str:
        return self.models[0].id if self.models else ""


class HttpSettings(BaseModel):
    """Timeouts (seconds) and retry limits for HTTP providers."""

    connectTimeout: float = 10.0
    readTimeout: float = 120.0
    writeTimeout: float = 30.0
    maxRetries: int = 3
    retryBaseDelay: float = 0.5
    retryMaxDelay: float = 30.0
    maxTurns: int = 20
    maxTokens: int = 4096  # Anthropic requires max_tokens


class WebRequestSettings(BaseModel):
    """The ``http`` and ``fetch`` nodes: ``deadline`` (seconds) bounds a whole request, redirects
    and body included, when the node sets no ``timeoutMs`` (a server dripping a byte a second
    ends there)."""

    deadline: float = Field(default=120.0, gt=0)


class WebSearchSettings(BaseModel):
    searxngUrl: str | None = None


class LibrarySettings(BaseModel):
    """The flow library (engine.flows.library): extra folders, flows turned off, samples already seeded."""

    model_config = ConfigDict(extra="allow")

    folders: list[str] = Field(default_factory=list)
    disabled: list[str] = Field(default_factory=list)  # flow ids
    seeded: list[str] = Field(default_factory=list)  # sample file names copied in once


class Settings(BaseModel):
    model_config = ConfigDict(extra="allow")

    defaultProvider: str | None = None
    providers: dict[str, dict[str, Any]] = Field(default_factory=dict)
    webSearch: WebSearchSettings = Field(default_factory=WebSearchSettings)
    http: HttpSettings = Field(default_factory=HttpSettings)
    webRequests: WebRequestSettings = Field(default_factory=WebRequestSettings)
    library: LibrarySettings = Field(default_factory=LibrarySettings)


def config_dir() -> Path:
    """The user config folder (``$FLOWDESK_CONFIG_DIR`` wins, so tests never touch the real one)."""
    env = os.environ.get("FLOWDESK_CONFIG_DIR")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_config_dir("flowdesk", appauthor=False))


def settings_path() -> Path:
    return config_dir() / "settings.json"


@lru_cache(maxsize=1)
def load_catalogue() -> tuple[list[ProviderInfo], WebSearchSettings]:
    try:
        raw = json.loads(read_resource_text("providers.json"))
        infos = [ProviderInfo.model_validate(p) for p in raw.get("providers", [])]
        return infos, WebSearchSettings.model_validate(raw.get("webSearch") or {})
    except (OSError, ValueError, ValidationError) as err:
        raise ProviderConfigError(f"The provider catalogue {resource('providers.json')} cannot be read: {err}") from err


def load_settings() -> Settings:
    """The user's settings (defaults when the file does not exist)."""
    path = settings_path()
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return Settings()
    except OSError as err:
        raise ProviderConfigError(f"The settings file {path} cannot be read: {err.strerror}") from err
    try:
        return Settings.model_validate_json(text)
    except ValidationError as err:
        raise ProviderConfigError(f"The settings file {path} is not valid: {err.errors()[0].get('msg')}") from err


def providers(settings: Settings | None = None) -> dict[str, ProviderInfo]:
    """The catalogue with the user's overrides applied, by provider id."""
    settings = settings or load_settings()
    base, _ = load_catalogue()
    out = {p.id: p for p in base}
    for pid, override in settings.providers.items():
        current = out.get(pid)
        data: dict[str, Any] = current.model_dump() if current else {"id": pid, "name": pid}
        models = {m["id"]: m for m in data.get("models", [])}
        for m in override.get("models", []) or []:
            if isinstance(m, dict) and "id" in m:
                models[m["id"]] = {**models.get(m["id"], {}), **m}
        data.update({k: v for k, v in override.items() if k not in ("models", "id")})
        data["models"] = list(models.values())
        data.setdefault("kind", "openai")
        try:
            out[pid] = ProviderInfo.model_validate(data)
        except ValidationError as err:
            raise ProviderConfigError(
                f"The settings for provider '{pid}' in {settings_path()} are not valid: {err.errors()[0].get('msg')}"
            ) from err
    return out


DEFAULT_EFFORTS = ("low", "medium", "high")  # offered for a model the catalogue does not describe


def _known_providers(settings: Settings | None = None) -> list[ProviderInfo]:
    """:func:`providers` for listing choices: unreadable settings fall back to the bare
    catalogue, an unreadable catalogue to no providers (the editor's model box stays free text)."""
    try:
        return list(providers(settings).values())
    except ProviderConfigError as err:
        log.warning("%s", err)
    try:
        return list(load_catalogue()[0])
    except ProviderConfigError as err:
        log.warning("%s", err)
        return []


def model_choices(settings: Settings | None = None) -> list[tuple[str, str, str]]:
    """``(model id, label, provider id)`` for every model of every provider, the user's own
    (``providers.<id>.models`` in settings.json) included; the list the editor offers."""
    out = []
    for p in _known_providers(settings):
        for m in p.models:
            out.append((m.id, f"{m.name or m.id}  ·  {p.name or p.id}", p.id))
    return out


def reasoning_efforts(model: str, settings: Settings | None = None) -> list[str]:
    """The reasoning efforts ``model`` accepts (:data:`DEFAULT_EFFORTS` when it lists none or is unknown)."""
    for p in _known_providers(settings):
        info = p.model(model)
        if info is not None:
            return [str(e) for e in info.reasoningEfforts] or list(DEFAULT_EFFORTS)
    return list(DEFAULT_EFFORTS)


def save_settings(settings: Settings) -> Path:
    """Write the user's settings file atomically. It never holds an API key: keys live in
    the environment or the OS keyring only (any ``api_key``-like entry is refused)."""
    for pid, override in settings.providers.items():
        if any("key" in k.lower() and k != "api_key_env" for k in override):
            raise ProviderConfigError(
                f"Provider '{pid}': API keys are not written to the settings file; "
                "store them in the OS keyring or the environment."
            )
    path = settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, settings.model_dump_json(indent=2, exclude_defaults=True) + "\n")
    return path


def key_source(info: ProviderInfo) -> str:
    """Where the provider's API key would come from: "env", "keyring" or "" (none)."""
    if info.api_key_env and os.environ.get(info.api_key_env, "").strip():
        return "env"
    return "keyring" if _keyring_lookup(info.id) else ""


def provider_info(pid: str, settings: Settings | None = None) -> ProviderInfo | None:
    return providers(settings).get(pid)


def store_api_key(provider_id: str, key: str) -> None:
    """Save a key in the OS keyring (the only place Flowdesk ever stores one).

    Raises :class:`ProviderConfigError` (without the key in its message) when no keyring
    backend can take it; the caller then tells the user to use the environment variable.
    """
    try:
        import keyring

        keyring.set_password(KEYRING_SERVICE, provider_id, key)
    except Exception as err:  # no backend, locked, denied
        raise ProviderConfigError(
            f"The OS keyring could not store the key for '{provider_id}' ({type(err).__name__}); set the "
            "provider's API key environment variable instead."
        ) from None


def api_key_for(info: ProviderInfo) -> str | None:
    """The provider's key from its environment variable, else the OS keyring, else None."""
    if info.api_key_env:
        value = os.environ.get(info.api_key_env, "").strip()
        if value:
            return value
    return _keyring_lookup(info.id)


def searxng_url(settings: Settings | None = None) -> str | None:
    env = os.environ.get("FLOWDESK_SEARXNG_URL", "").strip()
    if env:
        return env
    try:
        settings = settings or load_settings()
    except ProviderConfigError:
        return None
    return settings.webSearch.searxngUrl or load_catalogue()[1].searxngUrl or None


def web_search_available() -> bool:
    """Whether a web search backend is configured (for ``validate(web_search_available=...)``)."""
    return searxng_url() is not None


_LOOPBACK = {"localhost", "127.0.0.1", "::1", "[::1]", "0.0.0.0"}


def is_local_url(url: str | None) -> bool:
    """A server on this machine (no API key is needed for it)."""
    if not url:
        return False
    host = (urlsplit(url).hostname or "").lower()
    return host in _LOOPBACK or host.endswith(".localhost") or host.startswith("127.")


_KEYLIKE = re.compile(r"\b(sk|pk|rk|key|sess)-[A-Za-z0-9_\-*.]{6,}")


# The password part of credentials written into a URL (scheme://user:password@host).
_URL_PASSWORD = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@]*:)[^@\s/]*@")


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every given secret, URL passwords and anything that looks like an API key masked."""
    for s in secrets:
        if s and len(s) >= 4:
            text = text.replace(s, "***")
    text = _URL_PASSWORD.sub(r"\1***@", text)
    return _KEYLIKE.sub(lambda m: m.group(1) + "-***", text)


def split_url_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without its ``user:password@`` part, and that pair (None when there is none).

    Credentials in a base URL are sent as HTTP Basic auth; the URL shown in messages,
    logs, snapshots and the run store is the one without them.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return redact(url), None
    if "@" not in parts.netloc:
        return url, None
    userinfo, _, hostport = parts.netloc.rpartition("@")
    user, _, password = userinfo.partition(":")
    return urlunsplit(parts._replace(netloc=hostport)), (unquote(user), unquote(password))
