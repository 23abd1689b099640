"""Regression: a run given another initial input must not reuse the Start node's recorded
output (the Start node receives nothing, so its key once ignored the run's input: an eval case
whose input was edited, or `run --from NODE --input X`, silently gave the old answer)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from engine import Run, RunRecorder, RunStatus, RunStore, make_resolver, parse_workflow
from tests.engine.flows import agent, link, start
from tests.fakes.openai_server import FakeLLMServer, Recorded, openai_plain


def echo(rec: Recorded):
    messages = (rec.json or {}).get("messages") or [{}]
    return openai_plain(f"[{messages[-1].get('content', '')}]", usage=(4, 2))


def recorded_run(store: RunStore, base_url: str, **kwargs) -> Run:
    wf = parse_workflow(
        {"name": "two", "nodes": [start("s", "topic"), agent("a1", "")], "connections": [link("s", "a1")]}
    )
    run = Run(wf, make_resolver("openai", base_url=base_url), store=store, **kwargs)
    rec = RunRecorder(store, run, workflow_path="/flows/two.flow.json")
    asyncio.run(run.start())
    rec.settled()
    rec.close()
    return run


def test_another_initial_input_is_not_served_from_the_recording(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    store = RunStore(tmp_path / "runs.db")
    with FakeLLMServer() as server:
        server.handler = echo
        first = recorded_run(store, server.base_url, initial_input="one")
        assert first.status == RunStatus.COMPLETED and first.outputs["a1"] == "[one]"
        again = recorded_run(store, server.base_url, initial_input="two", reuse_from=first.run_id)
        assert again.outputs["a1"] == "[two]"
        assert [e.node_id for e in again.events if e.type == "cache_hit"] == []
        assert len(server.requests) == 2
        # The same input still reuses everything.
        same = recorded_run(store, server.base_url, initial_input="two", reuse_from=again.run_id)
        assert [e.node_id for e in same.events if e.type == "cache_hit"] == ["s", "a1"]
        assert len(server.requests) == 2
