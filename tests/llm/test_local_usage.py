"""Issue 30, item 27: ``local`` runs report the prompt's tokens too (llama.cpp's last chunk
carries the usage when asked with ``include_usage``; its ``timings`` otherwise)."""

from __future__ import annotations

import pytest

import engine.llm.local as local_mod
from engine import Run, RunStatus
from engine.llm.registry import make_resolver

from .conftest import agent, flow
from .test_local import FakeServer


class UsageServer(FakeServer):
    def __init__(self, last: dict) -> None:
        super().__init__(["Hi", " there."])
        self.last = last

    def handle_chat_completions(self, request, callback):
        super().handle_chat_completions(request, callback)
        callback({"choices": [], **self.last})


@pytest.fixture
def serve(monkeypatch, tmp_path):
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"GGUF")
    monkeypatch.setenv("FLOWDESK_LOCAL_MODEL", str(gguf))
    monkeypatch.setattr(local_mod, "_runtime_installed", lambda: True)

    def use(last: dict) -> UsageServer:
        server = UsageServer(last)
        monkeypatch.setattr(local_mod, "_load", lambda path, n_ctx: server)
        return server

    return use


async def _usage(server) -> dict:
    run = Run(flow(agent("a", "A")), make_resolver("local"), delta_interval=0.0)
    assert await run.start() == RunStatus.COMPLETED, run.error
    return next(e for e in run.events if e.type == "llm_response").to_wire()["usage"]


async def test_local_run_reports_input_tokens_from_the_usage_chunk(serve):
    server = serve({"usage": {"prompt_tokens": 17, "completion_tokens": 2, "total_tokens": 19}})
    assert await _usage(server) == {"prompt_tokens": 17, "completion_tokens": 2}
    assert server.requests[0]["stream_options"] == {"include_usage": True}


async def test_local_run_reports_input_tokens_from_timings(serve):
    server = serve({"timings": {"prompt_n": 11, "predicted_n": 2}})
    assert await _usage(server) == {"prompt_tokens": 11, "completion_tokens": 2}


async def test_local_run_without_usage_counts_the_answer(serve):
    server = serve({})
    assert await _usage(server) == {"completion_tokens": 2}
