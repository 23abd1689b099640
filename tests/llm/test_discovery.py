"""The first-run survey: keys, local servers probed on (injectable) ports, the embedded model,
the choice remembered in settings.json, and the CLI's one short message."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import engine.llm.local as local_mod
from engine.llm import discovery
from engine.llm.config import load_settings, providers
from engine.llm.registry import NoProviderConfigured, default_provider
from tests.fakes.openai_server import FakeLLMServer, error_reply, free_port, local_server_handler

ROOT = Path(__file__).resolve().parents[2]


def test_probe_ports_default_and_override(monkeypatch):
    monkeypatch.delenv(discovery.PROBE_PORTS_ENV, raising=False)
    assert discovery.probe_ports() == [("ollama", 11434), ("lmstudio", 1234), ("llamacpp", 8080)]
    monkeypatch.setenv(discovery.PROBE_PORTS_ENV, "ollama=4000, 4001, junk, x=99999")
    assert discovery.probe_ports() == [("ollama", 4000), ("local-4001", 4001)]


def test_survey_finds_a_server_and_a_key_and_not_a_closed_port(monkeypatch):
    monkeypatch.setattr(local_mod, "local_available", lambda: False)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-123456")
    closed = free_port()
    with FakeLLMServer() as srv:
        srv.handler = local_server_handler(("qwen2.5:0.5b", "llama3.2"))
        found = discovery.survey([("ollama", srv.port), ("lmstudio", closed)], timeout=2)
    assert found.servers == [
        discovery.FoundServer("ollama", "Ollama", f"http://127.0.0.1:{srv.port}/v1", ("qwen2.5:0.5b", "llama3.2"))
    ]
    assert [(k.provider_id, k.source, k.where) for k in found.keys] == [("anthropic", "env", "ANTHROPIC_API_KEY")]
    assert not found.local_model and found.found_anything
    assert [r.path for r in srv.requests] == ["/v1/models"]  # nothing but the probe was sent
    text = discovery.describe(found)
    assert "Anthropic in ANTHROPIC_API_KEY" in text and f"Ollama at http://127.0.0.1:{srv.port}/v1" in text
    assert "sk-ant-test" not in text
    # a server on another port than the catalogue's is reached with --base-url
    assert "--provider anthropic" in text and f"--base-url http://127.0.0.1:{srv.port}/v1" in text


def test_a_server_answering_badly_is_not_found():
    with FakeLLMServer() as srv:
        srv.handler = lambda rec: error_reply(404, "no such route")
        assert discovery.probe_servers([("ollama", srv.port)], timeout=2) == []


def test_choosing_a_server_makes_it_the_default_reached_where_it_was_found(isolated_config):
    server = discovery.FoundServer("ollama", "Ollama", "http://127.0.0.1:4321/v1", ("tiny",))
    discovery.remember_choice("ollama", server)
    settings = load_settings()
    assert settings.defaultProvider == "ollama" and default_provider() == "ollama"
    info = providers(settings)["ollama"]
    assert info.base_url == "http://127.0.0.1:4321/v1" and "tiny" in [m.id for m in info.models]
    assert discovery.default_provider_problem() is None
    # a server the catalogue does not know becomes an OpenAI-compatible provider of its own
    discovery.remember_choice(
        "local-4001", discovery.FoundServer("local-4001", "server on port 4001", "http://127.0.0.1:4001/v1")
    )
    info = providers()["local-4001"]
    assert (info.kind, info.base_url, load_settings().defaultProvider) == (
        "openai",
        "http://127.0.0.1:4001/v1",
        "local-4001",
    )


def test_nothing_configured_is_its_own_problem(monkeypatch, isolated_config):
    monkeypatch.setattr(local_mod, "local_available", lambda: False)
    assert isinstance(discovery.default_provider_problem(), NoProviderConfigured)
    discovery.remember_choice("echo")
    assert discovery.default_provider_problem() is None
    (isolated_config / "settings.json").write_text(json.dumps({"defaultProvider": "openai"}))
    problem = discovery.default_provider_problem()
    assert problem is not None and not isinstance(problem, NoProviderConfigured) and "OPENAI_API_KEY" in str(problem)


def test_cli_says_once_what_it_looked_for(isolated_config, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        FLOWDESK_CONFIG_DIR=str(isolated_config),
        FLOWDESK_DATA_DIR=str(tmp_path / "data"),
        NO_COLOR="1",
        FLOWDESK_PROBE_PORTS=f"ollama={free_port()}",
        FLOWDESK_LOCAL_MODEL=str(tmp_path / "none.gguf"),
    )
    res = subprocess.run(
        [sys.executable, "-m", "engine.cli", "run", str(ROOT / "samples" / "review.flow.json")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
    )
    if local_mod.local_available():  # the embedded model serves the run: nothing to say
        return
    assert res.returncode == 2 and res.stdout == ""
    lines = res.stderr.strip().splitlines()
    assert lines[0] == "flowdesk: No LLM provider is configured. Looked for:"
    assert len(lines) <= 7 and res.stderr.count("No LLM provider") == 1
    assert "--provider echo" in res.stderr and "pip install" in res.stderr and "none answering" in res.stderr
    # the run was not started, so nothing was recorded
    runs = subprocess.run(
        [sys.executable, "-m", "engine.cli", "runs", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        cwd=ROOT,
    )
    assert json.loads(runs.stdout)["total"] == 0
