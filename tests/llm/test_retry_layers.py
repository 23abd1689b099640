"""Issue 30 item 15: a node with a retry policy is the only retry layer. A node set to retry
twice sends at most 3 requests (it sent 12: each attempt ran the provider's four HTTP tries),
and its ``step_retry`` event says so. Requests are counted on the fake OpenAI server."""

from __future__ import annotations

from engine import Run, RunStatus, parse_workflow
from engine.llm.config import HttpSettings
from engine.llm.openai import OpenAIProvider
from tests.fakes.openai_server import FakeLLMServer, Recorded, Reply, error_reply, openai_text


def always_503(_rec: Recorded) -> Reply:
    return error_reply(503, "overloaded", retry_after="0")


def provider(server: FakeLLMServer) -> OpenAIProvider:
    return OpenAIProvider(
        base_url=server.base_url,
        api_key="k",
        http=HttpSettings(connectTimeout=1, readTimeout=5, maxRetries=3, retryBaseDelay=0.01, retryMaxDelay=0.02),
    )


def agent_flow(**policy: object) -> object:
    return parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "go"}},
                {"id": "a", "type": "agent", "data": {"agentName": "A", "userPrompt": "hi", "model": "m", **policy}},
            ],
            "connections": [{"source": "s", "target": "a"}],
        }
    )


async def test_node_retry_twice_sends_at_most_three_requests() -> None:
    with FakeLLMServer() as server:
        server.handler = always_503
        run = Run(agent_flow(errorMode="retry", maxRetries=2, retryDelayMs=1), provider(server))
        assert await run.start() == RunStatus.FAILED
        assert len(server.requests) == 3
    retries = [e for e in run.events if e.type == "step_retry"]
    assert [(e.extra["attempt"], e.extra["maxAttempts"]) for e in retries] == [(2, 3), (3, 3)]
    assert all("only retry" in e.content and "provider's own HTTP retries are off" in e.content for e in retries)


async def test_without_a_node_retry_the_provider_still_retries_itself() -> None:
    with FakeLLMServer() as server:
        server.push(error_reply(503, "overloaded", retry_after="0"), openai_text("ok"))
        run = Run(agent_flow(), provider(server))
        assert await run.start() == RunStatus.COMPLETED
        assert len(server.requests) == 2
    assert not [e for e in run.events if e.type == "step_retry"]
