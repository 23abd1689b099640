"""Provider choice and configuration: catalogue, settings overrides, aliases, keys, keyring."""

from __future__ import annotations

import json
import sys
import types as pytypes

import pytest

from engine import EchoProvider, Run, RunStatus
from engine.llm import ProviderConfigError
from engine.llm.config import api_key_for, is_local_url, load_catalogue, provider_info, redact
from engine.llm.registry import build_provider, make_resolver
from tests.fakes.openai_server import openai_text

from .conftest import agent, flow


def test_catalogue_lists_the_providers_with_their_models():
    infos, _ = load_catalogue()
    by_id = {p.id: p for p in infos}
    assert {"openai", "anthropic", "ollama", "lmstudio", "openrouter", "local", "echo"} <= set(by_id)
    assert by_id["ollama"].kind == "openai" and by_id["ollama"].base_url == "http://localhost:11434/v1"
    assert by_id["lmstudio"].base_url == "http://localhost:1234/v1"
    assert by_id["openai"].api_key_env == "OPENAI_API_KEY" and by_id["anthropic"].kind == "anthropic"
    for p in infos:
        assert p.name and p.models
        for m in p.models:
            assert m.id and m.name
            assert m.supportsReasoningEffort == bool(m.reasoningEfforts)


def test_echo_is_unchanged():
    resolver = make_resolver("echo")
    inv = pytypes.SimpleNamespace(provider=None)
    assert isinstance(resolver(inv), EchoProvider)


async def test_echo_run_needs_no_configuration(isolated_config):
    (isolated_config / "settings.json").write_text("{ not json")  # echo never reads settings
    run = Run(flow(agent("a", "A")), make_resolver("echo"))
    assert await run.start() == RunStatus.COMPLETED
    assert next(e for e in run.events if e.type == "llm_response").content == "Question?"


def test_aliases_are_openai_compatible_with_their_base_url(monkeypatch):
    assert build_provider("ollama").base_url == "http://localhost:11434/v1"
    assert build_provider("lmstudio").base_url == "http://localhost:1234/v1"
    with pytest.raises(ProviderConfigError, match="OPENROUTER_API_KEY"):
        build_provider("openrouter")
    monkeypatch.setenv("OPENROUTER_API_KEY", "or-key")
    p = build_provider("openrouter")
    assert p.kind == "openai" and p.base_url == "https://openrouter.ai/api/v1"
    assert "or-key" not in repr(p)


def test_remote_openai_needs_a_key_local_does_not(monkeypatch):
    with pytest.raises(ProviderConfigError) as err:
        make_resolver("openai")
    assert "OPENAI_API_KEY" in str(err.value) and "keyring" in str(err.value)
    make_resolver("openai", base_url="http://localhost:8080/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-abc")
    make_resolver("openai")


def test_unknown_provider_lists_the_known_ones():
    with pytest.raises(ProviderConfigError) as err:
        make_resolver("nonesuch")
    assert "Unknown LLM provider 'nonesuch'" in str(err.value) and "ollama" in str(err.value)


async def test_openai_base_url_env_is_honoured(server, fast, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    server.push(openai_text("via env"))
    run = Run(flow(agent("a", "A")), make_resolver("openai", **fast))
    assert await run.start() == RunStatus.COMPLETED, run.error
    assert len(server.requests) == 1


async def test_base_url_alone_means_openai_compatible(server, fast):
    server.push(openai_text("hi"))
    run = Run(flow(agent("a", "A")), make_resolver(None, base_url=server.base_url, **fast))
    assert await run.start() == RunStatus.COMPLETED, run.error


async def test_node_provider_with_settings_override(server, fast, isolated_config):
    (isolated_config / "settings.json").write_text(
        json.dumps(
            {
                "providers": {
                    "ollama": {"base_url": server.base_url},
                    "myvllm": {
                        "kind": "openai",
                        "base_url": server.base_url,
                        "models": [
                            {"id": "big", "name": "Big", "reasoningEfforts": ["low"], "supportsReasoningEffort": True}
                        ],
                    },
                }
            }
        )
    )
    server.push(openai_text("from ollama"), openai_text("from vllm"))
    wf = flow(
        agent("a", "A", provider="ollama", model=""), agent("b", "B", provider="myvllm", model="big"), chain=["a", "b"]
    )
    run = Run(wf, make_resolver(**fast))
    assert await run.start() == RunStatus.COMPLETED, run.error
    first, second = (r.json for r in server.requests)
    assert first["model"] == "llama3.2"  # an empty node model means the provider's default
    assert second["model"] == "big" and second["reasoning_effort"] == "low"
    assert provider_info("ollama").models[0].id == "llama3.2"


def test_invalid_settings_name_the_file(isolated_config):
    (isolated_config / "settings.json").write_text('{"defaultProvider": 3}')
    with pytest.raises(ProviderConfigError) as err:
        make_resolver("ollama")
    assert str(isolated_config / "settings.json") in str(err.value)


def _fake_keyring(monkeypatch, get_password):
    module = pytypes.ModuleType("keyring")
    module.get_password = get_password
    monkeypatch.setitem(sys.modules, "keyring", module)


async def test_key_from_the_os_keyring(server, fast, monkeypatch):
    asked = []

    def get_password(service, user):
        asked.append((service, user))
        return "sk-from-keyring-123456" if (service, user) == ("flowdesk", "openai") else None

    _fake_keyring(monkeypatch, get_password)
    info = provider_info("openai")
    assert api_key_for(info) is None and asked == []  # tests never touch a real keyring by default
    monkeypatch.setenv("FLOWDESK_KEYRING", "1")
    assert api_key_for(info) == "sk-from-keyring-123456"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-654321")
    assert api_key_for(info) == "sk-from-env-654321"  # the environment wins
    monkeypatch.delenv("OPENAI_API_KEY")

    server.push(openai_text("ok"))
    run = Run(flow(agent("a", "A")), make_resolver("openai", base_url=server.base_url, **fast))
    assert await run.start() == RunStatus.COMPLETED
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-keyring-123456"


def test_keyring_failure_means_no_key(monkeypatch):
    def broken(service, user):
        raise RuntimeError("No recommended backend was available")

    _fake_keyring(monkeypatch, broken)
    monkeypatch.setenv("FLOWDESK_KEYRING", "1")
    assert api_key_for(provider_info("openai")) is None
    with pytest.raises(ProviderConfigError, match="OPENAI_API_KEY"):
        make_resolver("openai")


def test_is_local_url_and_redact():
    assert is_local_url("http://localhost:11434/v1") and is_local_url("http://127.0.0.1:8/v1")
    assert is_local_url("http://[::1]:8/v1") and not is_local_url("https://api.openai.com/v1")
    assert not is_local_url(None)
    assert redact("key sk-proj-abcdef123456 and MYSECRET", "MYSECRET") == "key sk-*** and ***"


def test_store_api_key_goes_to_the_keyring_only(monkeypatch, isolated_config):
    from engine.llm.config import store_api_key

    saved = {}
    module = pytypes.ModuleType("keyring")
    module.set_password = lambda service, user, key: saved.__setitem__((service, user), key)
    module.get_password = lambda service, user: saved.get((service, user))
    monkeypatch.setitem(sys.modules, "keyring", module)
    monkeypatch.setenv("FLOWDESK_KEYRING", "1")
    store_api_key("anthropic", "sk-ant-stored-999999")
    assert saved == {("flowdesk", "anthropic"): "sk-ant-stored-999999"}
    assert api_key_for(provider_info("anthropic")) == "sk-ant-stored-999999"
    assert not any(isolated_config.iterdir())  # nothing written to the config folder

    def refuse(service, user, key):
        raise RuntimeError(f"backend refused {key}")

    module.set_password = refuse
    with pytest.raises(ProviderConfigError) as err:
        store_api_key("openai", "sk-never-shown-123456")
    assert "sk-never-shown" not in str(err.value) and err.value.__cause__ is None
