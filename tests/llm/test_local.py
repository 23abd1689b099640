"""The embedded local provider: a clear error without the extra, a real run with it.

The real-model tests run only where ``pip install -e '.[local]'`` was done (the test
extra does not include it: llama-cpp-python compiles for minutes).
"""

from __future__ import annotations

import asyncio

import pytest

from engine import RunStatus
from engine.llm import ProviderConfigError
from engine.llm import local as local_mod
from engine.llm.registry import default_provider, make_resolver

from .conftest import agent, flow

needs_local = pytest.mark.skipif(not local_mod.local_available(), reason="the 'local' extra is not installed")


def test_missing_extra_names_the_fix(monkeypatch):
    monkeypatch.setattr(local_mod, "local_model_path", lambda: None)
    monkeypatch.setattr(local_mod, "local_available", lambda: False)
    with pytest.raises(ProviderConfigError) as err:
        local_mod.LocalProvider()
    message = str(err.value)
    assert "pip install -e '.[local]'" in message and "--provider" in message and "OPENAI_API_KEY" in message
    with pytest.raises(ProviderConfigError, match=r"\.\[local\]"):
        default_provider()


async def test_run_without_any_provider_fails_cleanly(monkeypatch):
    from engine import Run

    monkeypatch.setattr(local_mod, "local_available", lambda: False)
    run = Run(flow(agent("a", "A")), make_resolver())
    assert await run.start() == RunStatus.FAILED
    error = next(e for e in run.events if e.type == "llm_error").content
    assert error.startswith("No LLM provider is configured") and "pip install -e '.[local]'" in error


def test_local_is_the_default_when_installed(monkeypatch):
    monkeypatch.setattr(local_mod, "local_available", lambda: True)
    assert default_provider() == "local"


def test_settings_default_provider_wins(isolated_config):
    (isolated_config / "settings.json").write_text('{"defaultProvider": "ollama"}')
    assert default_provider() == "ollama"


def test_model_path_from_env(tmp_path, monkeypatch):
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setenv("FLOWDESK_LOCAL_MODEL", str(gguf))
    assert local_mod.local_model_path() == gguf
    monkeypatch.setenv("FLOWDESK_LOCAL_MODEL", str(tmp_path / "missing.gguf"))
    assert local_mod.local_model_path() is None


@needs_local
async def test_local_model_streams_an_answer():
    from engine import Run

    run = Run(flow(agent("a", "A", system="Answer in one short sentence.")), make_resolver("local"),
              delta_interval=0.0)
    assert await asyncio.wait_for(run.start(), 120) == RunStatus.COMPLETED, run.error
    deltas = [e for e in run.events if e.type == "llm_delta"]
    response = next(e for e in run.events if e.type == "llm_response")
    assert deltas and response.content.strip()


@needs_local
async def test_local_model_cancel_is_prompt():
    import time

    from engine import Run

    run = Run(flow(agent("a", "A", system="Write a very long story."), initial="Tell me a long story."),
              make_resolver("local"), delta_interval=0.0)
    got = asyncio.Event()
    run.add_listener(lambda ev: got.set() if ev.type == "llm_delta" else None)
    task = asyncio.create_task(run.start())
    await asyncio.wait_for(got.wait(), 120)
    started = time.monotonic()
    run.cancel()
    assert await asyncio.wait_for(task, 5) == RunStatus.CANCELLED
    assert time.monotonic() - started < 1
