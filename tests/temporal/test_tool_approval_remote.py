"""Approving tool calls on a Temporal server: a subagent (or flow) that asks before each call
pauses the remote run as a local one pauses; the answer (with edited arguments, or a rejection
with a note) goes on from the kept conversation on a worker."""

from __future__ import annotations

import json

import pytest

from engine import EchoProvider, Run, RunStatus, parse_workflow

from .conftest import needs_temporal

pytestmark = needs_temporal


def _asking_subagent():
    return parse_workflow(
        {
            "name": "Ask before delegating",
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "draft a reply"}},
                {
                    "id": "p",
                    "type": "agent",
                    "data": {"agentName": "Lead", "userPrompt": "", "tools": {"subagents": True}},
                },
                {
                    "id": "k",
                    "type": "agent",
                    "data": {"agentName": "Helper", "userPrompt": "", "approve": "ask", "tools": {}},
                },
            ],
            "connections": [
                {"source": "s", "target": "p", "sourceHandle": "output"},
                {"source": "p", "target": "k", "sourceHandle": "subagent", "targetHandle": "input"},
            ],
        }
    )


async def _remote(address, wf, answers):
    from engine.temporal.client import answer, connect, follow, submit

    client = await connect(address)
    handle = await submit(client, wf, meta={"provider": "echo"}, task_queue="shared")
    events = []
    state = await follow(client, handle.id, events.append)
    while state.status == "paused":
        decision, note, arguments = answers.pop(0)
        await answer(client, handle.id, decision, note, node_id=state.pending, arguments=arguments)
        state = await follow(client, handle.id, events.append, after=state.next, state=state)
    return events, state.status


@pytest.mark.parametrize(
    "answer, expected",
    [
        (("approve", "", {"input": "edited task"}), "[Helper] edited task"),
        (("reject", "not now", None), "[Helper] The user declined this call. Note: not now"),
    ],
)
async def test_a_subagent_call_waits_for_approval_remotely_as_locally(temporal_server, worker, answer, expected):
    wf = _asking_subagent()
    local = Run(wf, EchoProvider(), delta_interval=0)
    assert await local.start() == RunStatus.PAUSED
    decision, note, arguments = answer
    assert await local.resume(decision, note, arguments=arguments) == RunStatus.COMPLETED
    assert expected in local.outputs["p"]

    events, status = await _remote(temporal_server, wf, [answer])
    assert status == "completed"
    (wait,) = [e for e in events if e.type == "wait_input"]
    extra = json.loads(wait.extra_json)
    assert (
        extra["kind"] == "tool_call" and extra["tool"] == "Helper" and extra["arguments"] == {"input": "draft a reply"}
    )
    (response,) = [e for e in events if e.type == "llm_response" and e.node_id == "p"]
    assert expected in response.content


async def test_arguments_that_break_the_schema_are_refused_remotely(temporal_server, worker):
    from engine.temporal.client import answer, connect, follow, submit

    client = await connect(temporal_server)
    handle = await submit(client, _asking_subagent(), meta={"provider": "echo"}, task_queue="shared")
    state = await follow(client, handle.id, lambda e: None)
    assert state.status == "paused"
    with pytest.raises(Exception) as refused:
        await answer(client, handle.id, "approve", node_id=state.pending, arguments={"input": 5})
    assert "input schema" in str(refused.value.cause)  # the validator's reason
    await answer(client, handle.id, "approve", node_id=state.pending)
    state = await follow(client, handle.id, lambda e: None, after=state.next, state=state)
    assert state.status == "completed"


def test_resume_with_arguments_from_another_process(temporal_server, worker, tmp_path):
    import re
    import subprocess
    import sys

    from .conftest import ROOT

    flow = tmp_path / "ask.flow.json"
    flow.write_text(_asking_subagent().model_dump_json())

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "engine.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=90
        )

    first = cli("run", str(flow), "--temporal", temporal_server, "--task-queue", "shared", "--provider", "echo")
    assert first.returncode == 3, first.stderr
    run_id = re.search(r"run ([0-9a-f]{32}) is paused", first.stderr).group(1)
    bad = cli("resume", run_id, "--temporal", temporal_server, "--decide", "approve", "--arguments", '{"input": 5}')
    assert bad.returncode == 2 and "input schema" in bad.stderr, bad.stderr
    good = cli(
        "resume", run_id, "--temporal", temporal_server, "--decide", "approve", "--arguments", '{"input": "edited"}'
    )
    assert good.returncode == 0, good.stderr
    assert "[Helper] edited" in good.stdout
