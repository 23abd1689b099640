"""Fixtures for provider tests: an isolated config folder, a fake LLM server, fast retries."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from engine import Run, parse_workflow
from engine.llm._http import RetryPolicy
from engine.llm.config import HttpSettings
from engine.llm.registry import make_resolver
from tests.fakes.openai_server import FakeLLMServer

_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENROUTER_API_KEY",
    "FLOWDESK_SEARXNG_URL",
    "FLOWDESK_LOCAL_MODEL",
    "FLOWDESK_KEYRING",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "ALL_PROXY",
    "http_proxy",
    "https_proxy",
    "all_proxy",
)


@pytest.fixture(autouse=True)
def isolated_config(tmp_path, monkeypatch) -> Any:
    """Every test gets an empty config folder and no provider keys from the real environment."""
    cfg = tmp_path / "config"
    cfg.mkdir()
    monkeypatch.setenv("FLOWDESK_CONFIG_DIR", str(cfg))
    monkeypatch.setenv("FLOWDESK_TESTING", "1")
    for name in _ENV:
        monkeypatch.delenv(name, raising=False)
    return cfg


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:
        yield s


class SleepRecorder:
    """Stands in for asyncio.sleep in retry policies: records delays, waits for nothing."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


@pytest.fixture
def fast(sleeps) -> dict[str, Any]:
    """Provider keyword arguments for quick tests: short timeouts, instant retries."""
    return {
        "http": HttpSettings(connectTimeout=1.0, readTimeout=2.0, maxRetries=3),
        "retry": RetryPolicy(max_retries=3, base_delay=0.01, max_delay=0.05, sleep=sleeps),
    }


def agent(
    node_id: str,
    name: str,
    *,
    system: str | None = None,
    user: str = "",
    model: str = "gpt-4o-mini",
    subagents: bool = False,
    web_search: bool = False,
    provider: str | None = None,
    effort: str = "low",
) -> dict[str, Any]:
    data: dict[str, Any] = {
        "agentName": name,
        "systemPrompt": system or f"You are {name}.",
        "userPrompt": user,
        "model": model,
        "reasoningEffort": effort,
        "tools": {"web_search": web_search, "subagents": subagents},
    }
    if provider:
        data["provider"] = provider
    return {"id": node_id, "type": "agent", "x": 0, "y": 0, "data": data}


def flow(
    *agents: dict[str, Any],
    chain: list[str] | None = None,
    links: list[tuple[str, str]] = (),
    initial: str = "Question?",
):
    """start → chain[0] → chain[1] ...; ``links`` are subagent links (parent, child)."""
    chain = chain or [agents[0]["id"]]
    nodes = [{"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": initial}}, *agents]
    conns = []
    prev = "start"
    for nid in chain:
        conns.append({"source": prev, "target": nid, "sourceHandle": "output", "targetHandle": "input"})
        prev = nid
    for parent, child in links:
        conns.append({"source": parent, "target": child, "sourceHandle": "subagent", "targetHandle": "input"})
    return parse_workflow({"name": "t", "nodes": nodes, "connections": conns})


def make_run(
    wf,
    server: FakeLLMServer | None,
    fast: dict[str, Any],
    *,
    provider: str = "openai",
    base_url: str | None = None,
    **kwargs: Any,
) -> Run:
    resolver = make_resolver(provider, base_url=base_url or (server.base_url if server else None), **fast)
    kwargs.setdefault("delta_interval", 0.0)
    return Run(wf, resolver, **kwargs)


def types(run: Run) -> list[str]:
    return [str(e.type) for e in run.events or []]
