"""Issue 30 item 9: a model server that echoes the API key inside a successful streamed answer:
the key is masked in the streamed deltas, the stored output and the printed run, as
``{{secrets.*}}`` are. Real sockets: the fake OpenAI server in tests/fakes."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from engine import SECRET_MASK, Run, RunRecorder, RunStore, parse_workflow
from engine.llm.config import HttpSettings
from engine.llm.openai import OpenAIProvider
from engine.run.events import RunEvent
from tests.fakes.openai_server import FakeLLMServer, Recorded, Reply, openai_text

KEY = "sk-test-" + "Zq9" * 12  # made here, never in a fixture


def echo_key(rec: Recorded) -> Reply:
    key = rec.headers.get("authorization", "").removeprefix("Bearer ")
    # the key split over several deltas, and whole in one
    return openai_text(f"Your key is {key}. Again: {key}!", pieces=7)


async def test_streamed_answer_echoing_the_api_key_is_masked_in_events_output_and_store(tmp_path: Path) -> None:
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "hi"}},
                {"id": "a", "type": "agent", "data": {"agentName": "A", "userPrompt": "hi", "model": "gpt-4o-mini"}},
            ],
            "connections": [{"source": "s", "target": "a"}],
        }
    )
    store = RunStore(tmp_path / "runs.db")
    with FakeLLMServer() as server:
        server.handler = echo_key
        provider = OpenAIProvider(base_url=server.base_url, api_key=KEY, http=HttpSettings(readTimeout=5))
        run = Run(wf, provider, delta_interval=0.0)
        rec = RunRecorder(store, run)
        await run.start()
        rec.settled()
        rec.close()
        assert run.status == "completed", run.error
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"  # it was sent
    assert run.status == "completed", run.error
    assert run.outputs["a"] == f"Your key is {SECRET_MASK}. Again: {SECRET_MASK}!"
    deltas = "".join(e.content for e in run.events if e.type == "llm_delta")
    assert deltas == run.outputs["a"]
    for ev in run.events:
        assert KEY not in ev.content and KEY not in (ev.extra_json or ""), ev
        assert KEY[:12] not in ev.content  # no half of it either
    stored: list[RunEvent] = list(store.iter_events(run.run_id))
    assert stored and all(KEY not in e.content and KEY not in (e.extra_json or "") for e in stored)
    assert all(KEY not in line for line in store.export_jsonl(run.run_id))
    store.close()
    db = sqlite3.connect(tmp_path / "runs.db")
    dump = "\n".join(db.iterdump())
    db.close()
    assert KEY not in dump and KEY not in json.dumps(run.outputs)
