"""Short steps as local activities: the same run as locally in fewer round trips, and what a
local activity must keep of a remote step (a worker killed mid-step, cancel, timeouts)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from engine import EchoProvider, Run, make_resolver, parse_workflow
from tests.fakes.openai_server import FakeLLMServer, Reply, openai_text

from .conftest import MISSING, WorkerProcess, needs_temporal

if MISSING is not None:  # engine.temporal.steps imports the SDK: skip before importing it
    pytest.skip(MISSING, allow_module_level=True)

from engine.temporal.steps import SHORT_STEP_MS, local_step_options, step_options  # noqa: E402

from .test_remote_runs import _comparable, _one_agent, _remote  # noqa: E402

pytestmark = needs_temporal


def _chain(n, data=None):
    nodes = [{"id": "s", "type": "start", "data": {"initialInput": "hello"}}]
    links, prev = [], "s"
    for i in range(n):
        nodes.append(
            {
                "id": f"a{i}",
                "type": "agent",
                "data": {"agentName": f"A{i}", "userPrompt": "{{PREVIOUS_OUTPUT}} {{NODE_ID}}", "model": "echo"}
                | (data or {}),
            }
        )
        links.append({"id": f"c{i}", "source": prev, "target": f"a{i}", "sourceHandle": "output"})
        prev = f"a{i}"
    return parse_workflow({"name": "Chain", "nodes": nodes, "connections": links})


def test_which_steps_are_short():
    class D:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    assert local_step_options(D()) is None  # no timeoutMs: an activity with heartbeats
    assert local_step_options(D(timeoutMs=SHORT_STEP_MS + 1)) is None
    short = local_step_options(D(timeoutMs=800))
    assert (
        short is not None and short["start_to_close_timeout"].total_seconds() == 2.8
    )  # the worker gives it up at 0.8 s
    assert short["retry_policy"].maximum_attempts == 1  # the node's own policy retries, as locally
    assert local_step_options(D(timeoutMs=800), short_step_ms=0) is None  # the run turned them off
    assert local_step_options(D(), every=True) is not None  # the run's localSteps
    assert "heartbeat_timeout" in step_options(D(), 20_000)


async def _types(address, run_id):
    from engine.temporal.client import connect

    client = await connect(address)
    history = await client.get_workflow_handle(run_id).fetch_history()
    return [e.event_type for e in history.events]


async def test_local_steps_give_the_local_events_in_one_workflow_task(temporal_server, worker):
    from temporalio.api.enums.v1 import EventType

    from engine.temporal.client import connect, follow, submit

    wf = _chain(5)
    local = Run(wf, EchoProvider())
    await local.start()
    client = await connect(temporal_server)
    # localSteps: every step local; by default an echo agent is quick by nature, so local too;
    # localSteps false (--no-local-steps): every step an activity
    for options, short in (({"localSteps": True}, True), ({}, True), ({"localSteps": False}, False)):
        handle = await submit(client, wf, meta={"provider": "echo"}, task_queue="shared", options=options)
        events = []
        state = await follow(client, handle.id, events.append)
        assert state.status == "completed"
        assert _comparable(events) == _comparable(local.events)
        types = await _types(temporal_server, handle.id)
        scheduled = types.count(EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
        markers = types.count(EventType.EVENT_TYPE_MARKER_RECORDED)
        tasks = types.count(EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)
        if short:  # no activity task on the server; the chain's steps share the workflow task
            assert (scheduled, markers) == (0, 5 + 1) and tasks <= 2, types  # (+ the patch marker)
        else:
            assert (scheduled, markers) == (5, 0) and tasks == 6, types


async def test_a_replay_catches_a_workflow_that_decides_differently(temporal_server, worker, monkeypatch):
    """The worker runs the workflow without Temporal's sandbox, so what guards determinism is the
    replay of real histories (``_remote(..., replay=True)`` in these tests): it must have teeth.
    A run whose echo steps were local activities, replayed by code that would make them
    activities, fails the replay."""
    from engine.temporal.client import connect, submit

    client = await connect(temporal_server)
    handle = await submit(client, _chain(3), meta={"provider": "echo"}, task_queue="shared")
    assert (await handle.result())["status"] == "completed"
    history = await handle.fetch_history()
    assert (await _replayer().replay_workflow(history, raise_on_replay_failure=False)).replay_failure is None
    monkeypatch.setattr("engine.temporal.workflow.is_quick", lambda *args, **kwargs: False)
    result = await _replayer().replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is not None and "nondetermin" in str(result.replay_failure).lower()


async def test_a_short_timeout_makes_a_step_local_and_its_timeout_is_kept(temporal_server, worker):
    wf = _one_agent({"timeoutMs": 1000, "errorMode": "retry", "maxRetries": 1, "retryDelayMs": 100})
    with FakeLLMServer() as fake:
        fake.handler = lambda rec: Reply(delay=20) if len(fake.requests) == 1 else openai_text("Hello there", pieces=1)
        meta = {"provider": "openai", "baseUrl": fake.base_url}
        started = time.monotonic()
        events, status = await asyncio.wait_for(_remote(temporal_server, wf, [], meta=meta, replay=True), 60)
        assert status == "completed"
        assert time.monotonic() - started < 15  # the first attempt was given up after its 1 s
        assert await asyncio.to_thread(fake.requests[0].disconnected.wait, 10)
    retries = [e for e in events if e.type == "step_retry"]
    assert len(retries) == 1 and "timed out after 1000 ms" in retries[0].content
    assert events[-1].content == "completed"


async def test_worker_killed_mid_local_step_then_a_new_worker_runs_it_again(temporal_server):
    wf = _one_agent({})
    with FakeLLMServer() as fake:
        fake.handler = lambda rec: Reply(delay=60) if len(fake.requests) == 1 else openai_text("Hello there", pieces=1)
        meta = {"provider": "openai", "baseUrl": fake.base_url}
        with FakeLLMServer() as local_fake:  # the same flow run locally, for the expected events
            local_fake.handler = lambda rec: openai_text("Hello there", pieces=1)
            local = Run(wf, make_resolver("openai", base_url=local_fake.base_url))
            await local.start()
        first = WorkerProcess(temporal_server, "kill-local")
        try:
            task = asyncio.ensure_future(
                _remote(temporal_server, wf, [], task_queue="kill-local", meta=meta, options={"localSteps": True})
            )
            await asyncio.to_thread(fake.wait_for_requests, 1, 20)
            first.kill()
        finally:
            first.stop()
        assert await asyncio.to_thread(fake.requests[0].disconnected.wait, 10)
        second = WorkerProcess(temporal_server, "kill-local")
        try:  # the workflow task times out (10 s), the next worker replays the run and runs the step
            events, status = await asyncio.wait_for(task, 90)
        finally:
            second.stop()
    assert status == "completed"
    assert len(fake.requests) == 2
    assert _comparable(events) == _comparable(local.events)


async def test_cancel_mid_local_step_closes_the_request(temporal_server, worker):
    from engine.temporal.client import cancel, connect, follow, submit

    wf = _one_agent({})
    with FakeLLMServer() as fake:
        fake.handler = lambda rec: Reply(delay=60)
        client = await connect(temporal_server)
        handle = await submit(
            client,
            wf,
            meta={"provider": "openai", "baseUrl": fake.base_url},
            task_queue="shared",
            options={"localSteps": True},
        )
        await asyncio.to_thread(fake.wait_for_requests, 1, 20)
        started = time.monotonic()
        await cancel(client, handle.id)
        events = []
        state = await asyncio.wait_for(follow(client, handle.id, events.append), 60)
        assert state.status == "cancelled"
        assert await asyncio.to_thread(fake.requests[0].disconnected.wait, 10)
        # heard when the open workflow task heartbeats (~8 s of its 10 s timeout)
        assert time.monotonic() - started < 30
    assert [(e.node_id, e.type) for e in events][-1] == ("system", "run_status")
    assert events[-1].content == "cancelled"
    assert not {"llm_response", "llm_error", "error"} & {e.type for e in events}


def test_run_local_steps_on_the_command_line_with_an_approval(temporal_server, worker, tmp_path):
    from temporalio.api.enums.v1 import EventType

    from tests.engine.flows import agent, approval, link, start

    from .test_remote_cli import _cli, _run_id, _write

    path = _write(
        tmp_path / "review.flow.json",
        [
            start(text="draft"),
            agent("w", "write {{PREVIOUS_OUTPUT}}"),
            approval("ap"),
            agent("after", "final: {{PREVIOUS_OUTPUT}}"),
        ],
        [link("s", "w"), link("w", "ap"), link("ap", "after", "approve")],
        "Local review",
    )
    args = ("run", str(path), "--temporal", temporal_server, "--task-queue", "shared", "--provider", "echo")
    done = _cli(*args, "--local-steps", "--decide", "approve", "--jsonl")
    assert done.returncode == 0, done.stderr
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    answer = next(e for e in events if e["type"] == "llm_response" and e["nodeId"] == "after")
    assert answer["content"] == "final: write draft"
    types = asyncio.run(_types(temporal_server, _run_id(done.stderr)))
    assert types.count(EventType.EVENT_TYPE_MARKER_RECORDED) == 2 + 1  # the steps' and the patch's
    assert EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED not in types


def _replayer():
    from .test_remote_runs import replayer

    return replayer()


async def test_a_run_from_before_quick_steps_replays_with_its_activities():
    """A run whose echo agents were activities by default (a worker from before quick steps made
    this history: a 3-agent echo chain, no timeoutMs, default options) replays on this worker
    without a nondeterminism error: the quick-steps patch marker keeps its steps activities."""
    from temporalio.client import WorkflowHistory

    text = (Path(__file__).parent / "data" / "echo-steps-as-activities.history.json").read_text(encoding="utf-8")
    result = await _replayer().replay_workflow(
        WorkflowHistory.from_json("old-echo-run", text), raise_on_replay_failure=False
    )
    assert result.replay_failure is None


def test_which_agent_calls_are_quick_by_nature():
    from types import SimpleNamespace

    from engine.llm.base import AgentInvocation
    from engine.temporal.steps import is_quick as _is_quick

    def owner(provider=None):
        return SimpleNamespace(started=SimpleNamespace(meta={"provider": provider} if provider else {}))

    def inv(**kw):
        base = dict(
            node_id="a",
            name="A",
            system_prompt="",
            user_content="hi",
            model="m",
            reasoning_effort="",
            tools={"web_search": False, "subagents": False},
            subagents=[],
        )
        return AgentInvocation(**{**base, **kw})

    assert _is_quick(owner("echo"), inv())  # the run's provider is the offline echo
    assert _is_quick(owner(), inv(provider="echo"))  # the node's own
    assert not _is_quick(owner("openai"), inv(provider="echo"))  # the run's forced provider wins
    assert not _is_quick(owner(), inv())  # the worker's default provider: not known here
    assert not _is_quick(owner("echo"), inv(tools={"web_search": True}))  # a tool that reaches out
    assert not _is_quick(owner("echo"), inv(flows=[object()]))
    assert not _is_quick(owner(), inv(provider="echo", subagents=[object()]))  # theirs may differ


async def test_a_run_from_before_local_steps_replays_with_its_activities():
    """A run whose short steps were activities (a worker from before local steps made this
    history: a 3-agent echo chain with timeoutMs 1000) replays on this worker without a
    nondeterminism error: the patch marker keeps its steps activities."""
    from temporalio.client import WorkflowHistory

    text = (Path(__file__).parent / "data" / "short-steps-as-activities.history.json").read_text(encoding="utf-8")
    history = WorkflowHistory.from_json("old-run", text)
    result = await _replayer().replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None


def test_local_steps_on_the_command_line_are_every_none_or_the_default():
    from engine.cli.parser import build_parser
    from engine.temporal.cli import _options

    parser = build_parser()
    for given, options in (
        ([], {}),
        (["--local-steps"], {"localSteps": True}),
        (["--no-local-steps"], {"localSteps": False}),
    ):
        args = parser.parse_args(["run", "x.flow.json", "--temporal", "127.0.0.1:7233", *given])
        assert {k: v for k, v in _options(args).items() if k == "localSteps"} == options
