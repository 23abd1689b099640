"""Runs on a real Temporal dev server: same events as locally, approvals from another process,
a worker killed mid-call, cancel closing the in-flight request."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
import time

import pytest

from engine import EchoProvider, Run, RunStatus, load_workflow, parse_workflow, sample_paths
from tests.fakes.openai_server import FakeLLMServer, Reply, openai_text

from .conftest import ROOT, WorkerProcess, needs_temporal

pytestmark = needs_temporal

_CALL_ID = re.compile(r"call_\d+_[0-9a-f]{8}")
_DURATION = re.compile(r'"durationMs": \d+')
_DURATION_TEXT = re.compile(r" · \d+ ms$")  # http_response's content: "HTTP 200 · 446 bytes · 6 ms"


def _comparable(events):
    """Events without timestamps and durations (also in the text of ``http_response``), the random part of subagent call ids masked."""
    return [
        (
            e.node_id,
            e.type,
            _DURATION_TEXT.sub(" · * ms", e.content),
            _DURATION.sub('"durationMs": *', _CALL_ID.sub("call_*", e.extra_json or "")),
            e.path,
        )
        for e in events
    ]


async def _local(wf, decisions, *, variables=None, path=None):
    run = Run(wf, EchoProvider(), variables=variables, path=path)
    status = await run.start()
    while status == RunStatus.PAUSED:
        status = await run.resume(decisions.pop(0))
    return run.events, status


def replayer():
    """A replayer of ``FlowdeskRun`` histories that runs the workflow as the worker does."""
    from temporalio.worker import Replayer

    from engine.temporal.converter import DATA_CONVERTER
    from engine.temporal.worker import workflow_runner
    from engine.temporal.workflow import FlowdeskRunWorkflow

    return Replayer(workflows=[FlowdeskRunWorkflow], data_converter=DATA_CONVERTER, workflow_runner=workflow_runner())


async def _remote(
    address, wf, decisions, *, task_queue="shared", meta=None, options=None, variables=None, path=None, replay=False
):
    """The run's events and status on the worker; with ``replay``, its finished history is then
    replayed with the worker's code (a step that is not deterministic fails the replay)."""
    from engine.temporal.client import answer, connect, follow, submit

    client = await connect(address)
    handle = await submit(
        client,
        wf,
        meta=meta or {"provider": "echo"},
        task_queue=task_queue,
        options=options,
        variables=variables,
        path=path,
    )
    events = []
    state = await follow(client, handle.id, events.append)
    while state.status == "paused":
        await answer(client, handle.id, decisions.pop(0), node_id=state.pending)
        state = await follow(client, handle.id, events.append, after=state.next, state=state)
    if replay:
        history = await handle.fetch_history()
        result = await replayer().replay_workflow(history, raise_on_replay_failure=False)
        assert result.replay_failure is None, result.replay_failure
    return events, state.status


def _history_text(history) -> str:
    """A workflow's history with every payload decoded (the JSON form keeps them in base64)."""
    import base64

    text = history.to_json()
    decoded = [
        base64.b64decode(m).decode("utf-8", "replace") for m in re.findall(r'"data":\s*"([A-Za-z0-9+/=]+)"', text)
    ]
    return text + "\n".join(decoded)


def _same_events(remote, local):
    """The same events: each node's in the same order, and the run's; concurrent branches may
    interleave differently (remote model calls finish in any order, as real ones do locally)."""
    a, b = _comparable(remote), _comparable(local)
    assert sorted(a) == sorted(b)
    for node_id in {e[0] for e in b}:
        assert [e for e in a if e[0] == node_id] == [e for e in b if e[0] == node_id], node_id


FIXTURES = ROOT / "tests" / "fixtures"


@contextlib.contextmanager
def _sample_variables(path):
    """What a sample needs to run offline: web-brief reads the project's fixtures served on 127.0.0.1."""
    if "web-brief" not in path.name:
        yield None
        return
    from tests.fakes.web_server import WebServer, text_answer

    with WebServer() as web:
        web.route(
            "/pages/python-secrets.html",
            text_answer((FIXTURES / "pages" / "python-secrets.html").read_bytes(), content_type="text/html"),
        )
        web.route(
            "/api/releases.json",
            text_answer((FIXTURES / "api" / "releases.json").read_bytes(), content_type="application/json"),
        )
        yield {"base": web.url("")}


@pytest.mark.parametrize("path", sample_paths(), ids=lambda p: p.name)
async def test_samples_run_remotely_with_the_same_events(temporal_server, worker, path):
    wf = load_workflow(path)
    with _sample_variables(path) as variables:
        local, local_status = await _local(wf, ["approve", "approve", "approve"], variables=variables)
        remote, remote_status = await _remote(
            temporal_server, wf, ["approve", "approve", "approve"], variables=variables, replay=True
        )
    assert remote_status == str(local_status) == "completed"
    _same_events(remote, local)
    if "panel" not in path.name:  # one branch at a time: the very same sequence
        assert _comparable(remote) == _comparable(local)
    if "web-brief" in path.name:
        assert [e.type for e in remote if e.node_id == "api"][:4] == [
            "step_start",
            "http_request",
            "http_response",
            "node_output",
        ]


def _parallel_approvals():
    """Two approvals reached at once (the second queued) and a branch that goes on meanwhile
    (its successor deferred while the run is paused), ending in a subagent call."""
    from tests.engine.flows import agent, approval, flow, link, start

    return flow(
        [
            start(),
            approval("ap1", "first?"),
            approval("ap2", "second?"),
            agent("w", "work on {{PREVIOUS_OUTPUT}}"),
            agent("after1"),
            agent("after2"),
            agent("boss", subagents=True),
            agent("helper", name="Helper"),
        ],
        [
            link("s", "ap1"),
            link("s", "ap2"),
            link("s", "w"),
            link("ap1", "after1", "approve"),
            link("ap2", "after2", "reject"),
            link("w", "boss"),
            link("boss", "helper", "subagent"),
        ],
    )


async def test_queued_approvals_and_deferred_branches_as_locally(temporal_server, worker):
    wf = _parallel_approvals()
    local, local_status = await _local(wf, ["approve", "reject"])
    remote, remote_status = await _remote(temporal_server, wf, ["approve", "reject"], replay=True)
    assert remote_status == str(local_status) == "completed"
    kinds = [e.type for e in remote]
    assert "approval_queued" in kinds and kinds.count("wait_input") == 2 and "subagent_call_end" in kinds
    _same_events(remote, local)


def _cli(*args, timeout=60):
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def test_paused_run_is_approved_from_another_process(temporal_server, worker):
    review = next(p for p in sample_paths() if p.name.startswith("review"))
    first = _cli("run", str(review), "--temporal", temporal_server, "--task-queue", "shared", "--provider", "echo")
    assert first.returncode == 3, first.stderr
    assert "run_status  paused" in first.stdout
    run_id = re.search(r"run ([0-9a-f]{32}) is paused at approval 'signoff'", first.stderr).group(1)
    assert f"flowdesk resume {run_id} --temporal {temporal_server} --decide approve" in first.stderr
    second = _cli("resume", run_id, "--temporal", temporal_server, "--decide", "approve:looks right")
    assert second.returncode == 0, second.stderr
    assert '{"decision": "approve", "note": "looks right"}' in second.stdout
    assert "run_status  completed" in second.stdout and "nodes: 5 done · 2 skipped" in second.stdout
    again = _cli("resume", run_id, "--temporal", temporal_server, "--decide", "approve")
    assert again.returncode == 2 and "not waiting for input (status completed)" in again.stderr
    listed = _cli("runs", "--temporal", temporal_server, "--json")
    assert any(
        r["id"] == run_id and r["status"] == "completed" and r["workflowName"] == "Support reply review"
        for r in json.loads(listed.stdout)["runs"]
    )


def _one_agent(policy):
    return parse_workflow(
        {
            "name": "Slow",
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "hi"}},
                {
                    "id": "a",
                    "type": "agent",
                    "data": {
                        "agentName": "Writer",
                        "userPrompt": "{{PREVIOUS_OUTPUT}}",
                        "model": "fake-model",
                        **policy,
                    },
                },
            ],
            "connections": [{"id": "c", "source": "s", "target": "a", "sourceHandle": "output"}],
        }
    )


async def test_worker_killed_mid_call_then_a_new_worker_completes_the_run(temporal_server):
    wf = _one_agent({"errorMode": "retry", "maxRetries": 2, "retryDelayMs": 200})
    with FakeLLMServer() as fake:
        fake.handler = lambda rec: Reply(delay=60) if len(fake.requests) == 1 else openai_text("Hello there", pieces=1)
        meta = {"provider": "openai", "baseUrl": fake.base_url}
        with FakeLLMServer() as local_fake:  # the same flow run locally, for the expected events
            local_fake.handler = lambda rec: openai_text("Hello there", pieces=1)
            from engine import make_resolver

            local = Run(wf, make_resolver("openai", base_url=local_fake.base_url))
            await local.start()
        first = WorkerProcess(temporal_server, "kill")
        try:
            task = asyncio.ensure_future(
                _remote(temporal_server, wf, [], task_queue="kill", meta=meta, options={"heartbeatMs": 1500})
            )
            await asyncio.to_thread(fake.wait_for_requests, 1, 20)
            first.kill()
        finally:
            first.stop()
        assert await asyncio.to_thread(fake.requests[0].disconnected.wait, 10)  # the killed worker's request is gone
        second = WorkerProcess(temporal_server, "kill")
        try:
            events, status = await asyncio.wait_for(task, 60)
        finally:
            second.stop()
    assert status == "completed"
    assert len(fake.requests) == 2  # the step was tried again on the new worker
    assert _comparable(events) == _comparable(local.events)  # nothing lost, nothing twice


async def test_cancel_stops_the_in_flight_request(temporal_server, worker):
    from engine.temporal.client import cancel, connect, follow, submit

    wf = _one_agent({})
    with FakeLLMServer() as fake:
        fake.handler = lambda rec: Reply(delay=60)
        client = await connect(temporal_server)
        handle = await submit(client, wf, meta={"provider": "openai", "baseUrl": fake.base_url}, task_queue="shared")
        await asyncio.to_thread(fake.wait_for_requests, 1, 20)
        started = time.monotonic()
        await cancel(client, handle.id)
        events = []
        state = await asyncio.wait_for(follow(client, handle.id, events.append), 30)
        assert state.status == "cancelled"
        assert await asyncio.to_thread(fake.requests[0].disconnected.wait, 10)
        assert time.monotonic() - started < 10
    assert [(e.node_id, e.type) for e in events][-1] == ("system", "run_status")
    assert events[-1].content == "cancelled"
    assert not {"llm_response", "llm_error", "error"} & {e.type for e in events}


def _write(path, nodes, links, name):
    path.write_text(json.dumps({"name": name, "nodes": nodes, "connections": links}), encoding="utf-8")
    return path


async def test_flow_steps_run_as_child_workflows_with_the_same_events(temporal_server, worker, tmp_path):
    """A flow step's nested run is a child workflow: its events (with their run path) reach the
    parent's log, its approval pauses the parent and is answered there, its result flows on."""
    from tests.engine.flows import agent, approval, link, start

    _write(
        tmp_path / "child.flow.json",
        [
            {
                "id": "s",
                "type": "start",
                "data": {
                    "initialInput": "",
                    "variables": [{"name": "topic", "value": "", "type": "string", "required": True}],
                },
            },
            agent("draft", "draft about {{topic}}"),
            approval("check", "ok to go on?"),
            agent("polish"),
        ],
        [link("s", "draft"), link("draft", "check"), link("check", "polish", "approve")],
        "Child",
    )
    parent_path = _write(
        tmp_path / "parent.flow.json",
        [
            start(text="cats"),
            {
                "id": "sub",
                "type": "flow",
                "data": {"flow": "child.flow.json", "inputs": {"topic": "{{PREVIOUS_OUTPUT}}"}},
            },
            agent("after", "result: {{PREVIOUS_OUTPUT}}"),
        ],
        [link("s", "sub"), link("sub", "after")],
        "Parent",
    )
    wf = load_workflow(parent_path)
    local, local_status = await _local(wf, ["approve"], path=str(parent_path))
    remote, remote_status = await _remote(temporal_server, wf, ["approve"], path=str(parent_path), replay=True)
    assert remote_status == str(local_status) == "completed"
    # The child run's id (in the run path) is the server's: compare the paths' shape.
    path_of = re.compile(r"^sub:[0-9a-f]{32}$")
    assert {e.path for e in remote if e.path} and all(path_of.match(e.path) for e in remote if e.path)

    def shape(events):
        return [(n, t, c, x, "sub:*" if p else "") for n, t, c, x, p in _comparable(events)]

    assert shape(remote) == shape(local)
    kinds = [(e.node_id, e.type) for e in remote]
    assert ("check", "wait_input") in kinds and ("sub", "input_received") in kinds
    assert remote[-1].content == "completed"


async def test_http_step_policy_and_secrets_from_the_worker(temporal_server, monkeypatch):
    """An http step retried per its policy on the worker, its token from the worker's environment:
    the server sees it, no event and nothing in the workflow's history holds it."""
    from engine.temporal.client import connect
    from tests.fakes.web_server import WebServer, json_answer, text_answer

    wf = parse_workflow(
        {
            "name": "Api",
            "nodes": [
                {
                    "id": "s",
                    "type": "start",
                    "data": {
                        "initialInput": "go",
                        "variables": [{"name": "base", "value": "", "type": "string", "required": True}],
                    },
                },
                {
                    "id": "api",
                    "type": "http",
                    "data": {
                        "url": "{{base}}/api",
                        "headers": [{"key": "Authorization", "value": "Bearer {{secrets.FD_TEST_TOKEN}}"}],
                        "errorMode": "retry",
                        "maxRetries": 2,
                        "retryDelayMs": 50,
                    },
                },
            ],
            "connections": [{"source": "s", "target": "api", "sourceHandle": "output"}],
        }
    )
    token = "tok-9f8e7d6c5b4a"
    with WebServer() as web:
        answers = iter([text_answer(b"busy", status=503), json_answer({"ok": True, "b": 1, "a": 2})] * 2)
        web.route("/api", lambda req: next(answers))
        variables = {"base": web.url("")}
        monkeypatch.setenv("FD_TEST_TOKEN", token)
        local, local_status = await _local(wf, [], variables=variables)
        monkeypatch.delenv("FD_TEST_TOKEN")
        w = WorkerProcess(temporal_server, "secrets", env={"FD_TEST_TOKEN": token})
        try:
            remote, remote_status = await _remote(temporal_server, wf, [], task_queue="secrets", variables=variables)
        finally:
            w.stop()
        seen = [{k.lower(): v for k, v in r.headers.items()}.get("authorization") for r in web.requests]
    assert remote_status == str(local_status) == "completed"
    assert seen == [f"Bearer {token}"] * 4
    assert _comparable(remote) == _comparable(local)
    assert [e.type for e in remote if e.node_id == "api"].count("step_retry") == 1
    assert ("api", "node_output") in [(e.node_id, e.type) for e in remote]
    assert json.loads([e for e in remote if e.type == "node_output"][0].content) == {"ok": True, "b": 1, "a": 2}
    client = await connect(temporal_server)
    run_id = next(iter(await _run_ids(client, "Api")))
    history = await client.get_workflow_handle(run_id).fetch_history()
    assert token not in _history_text(history)
    assert not any(token in (e.content + (e.extra_json or "")) for e in remote)


async def _run_ids(client, name):
    from engine.temporal.client import list_runs

    return [r["id"] for r in await list_runs(client, limit=50) if r["workflowName"] == name]


async def test_plugin_kinds_run_on_a_worker_that_has_them(temporal_server, example_plugin):
    """A plug-in's node kind runs remotely on a worker where the plug-in is installed (its entry
    point found at the worker's start), with the same events as locally."""
    from tests.conftest import PLUGINS_DIR

    wf = parse_workflow(
        {
            "name": "Plugged",
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "hi there"}},
                {"id": "t", "type": "template", "data": {"template": "<< {{input}} >>", "case": "upper", "repeat": 2}},
                {"id": "a", "type": "agent", "data": {"agentName": "Echo", "userPrompt": "{{PREVIOUS_OUTPUT}}"}},
            ],
            "connections": [
                {"source": "s", "target": "t", "sourceHandle": "output"},
                {"source": "t", "target": "a", "sourceHandle": "output"},
            ],
        }
    )
    local, local_status = await _local(wf, [])
    w = WorkerProcess(temporal_server, "plugins", env={"PYTHONPATH": str(PLUGINS_DIR)})
    try:
        remote, remote_status = await _remote(temporal_server, wf, [], task_queue="plugins")
    finally:
        w.stop()
    assert remote_status == str(local_status) == "completed"
    assert _comparable(remote) == _comparable(local)
    assert ("t", "node_output", "<< HI THERE >><< HI THERE >>") in [(e.node_id, e.type, e.content) for e in remote]


async def test_http_step_timeout_from_its_policy_closes_the_request_on_the_worker(temporal_server, worker):
    """``timeoutMs`` bounds the remote step as locally (the same events: skipped after the
    timeout), and the worker's request is closed when the step is given up."""
    from tests.fakes.web_server import Answer, WebServer

    wf = parse_workflow(
        {
            "name": "Slow api",
            "nodes": [
                {
                    "id": "s",
                    "type": "start",
                    "data": {
                        "initialInput": "go",
                        "variables": [{"name": "base", "value": "", "type": "string", "required": True}],
                    },
                },
                {"id": "api", "type": "http", "data": {"url": "{{base}}/slow", "timeoutMs": 800, "errorMode": "skip"}},
                {
                    "id": "a",
                    "type": "agent",
                    "data": {"agentName": "After", "userPrompt": "after: {{PREVIOUS_OUTPUT}}"},
                },
            ],
            "connections": [
                {"source": "s", "target": "api", "sourceHandle": "output"},
                {"source": "api", "target": "a", "sourceHandle": "output"},
            ],
        }
    )
    with WebServer() as web:
        web.route("/slow", lambda req: Answer(200, {"Content-Type": "text/plain"}, chunks=[b"x"] * 120, pause=0.5))
        variables = {"base": web.url("")}
        local, local_status = await _local(wf, [], variables=variables)
        started = time.monotonic()
        remote, remote_status = await _remote(temporal_server, wf, [], variables=variables)
        took = time.monotonic() - started
        assert await asyncio.to_thread(web.requests[-1].disconnected.wait, 10)  # the worker's request is gone
    assert remote_status == str(local_status) == "completed"
    assert _comparable(remote) == _comparable(local)
    skipped = [e for e in remote if e.type == "step_skipped"]
    assert [(e.node_id, e.content) for e in skipped] == [("api", "HTTP request 'api' timed out after 800 ms")]
    assert took < 15


async def test_action_steps_run_the_workers_library_flow(temporal_server, tmp_path, monkeypatch):
    """An ``action`` step runs the flow of its name from the worker's library, as a child
    workflow, with the local events; a missing one refuses the run as locally."""
    from engine.flows.library import set_default_library
    from tests.engine.flows import agent, link

    monkeypatch.setenv("FLOWDESK_DATA_DIR", str(tmp_path / "data"))
    set_default_library(None)
    (tmp_path / "data" / "library").mkdir(parents=True)
    _write(
        tmp_path / "data" / "library" / "summarize.flow.json",
        [
            {
                "id": "s",
                "type": "start",
                "data": {
                    "initialInput": "",
                    "variables": [{"name": "text", "value": "", "type": "string", "required": True}],
                },
            },
            agent("sum", "summarize: {{text}}"),
        ],
        [link("s", "sum")],
        "Summarize",
    )

    def parent(action):
        return parse_workflow(
            {
                "name": "Acting",
                "nodes": [
                    {"id": "s", "type": "start", "data": {"initialInput": "a long text"}},
                    {
                        "id": "act",
                        "type": "action",
                        "data": {"schema": "docs", "action": action, "parameters": {"text": "{{PREVIOUS_OUTPUT}}"}},
                    },
                ],
                "connections": [{"source": "s", "target": "act", "sourceHandle": "output"}],
            }
        )

    w = WorkerProcess(temporal_server, "actions")
    try:
        for action, expected in (("Summarize", "completed"), ("Translate", "failed")):
            wf = parent(action)
            run = Run(wf, EchoProvider())
            local_status = await run.start()
            remote, remote_status = await _remote(temporal_server, wf, [], task_queue="actions")
            assert remote_status == str(local_status) == expected
            shape = [(n, t, c, x, "act:*" if p else "") for n, t, c, x, p in _comparable(remote)]
            assert shape == [(n, t, c, x, "act:*" if p else "") for n, t, c, x, p in _comparable(run.events)]
            if expected == "completed":
                assert ("sum", "llm_response", "summarize: a long text") in [
                    (e.node_id, e.type, e.content) for e in remote
                ]
            else:  # refused by the worker's validation, as locally
                assert remote[0].type == "error" and "no flow for the action 'Translate'" in remote[0].content
    finally:
        w.stop()
        set_default_library(None)


async def test_an_agents_secret_is_refused_remotely_and_never_reaches_the_history(temporal_server, monkeypatch):
    """{{secrets.NAME}} in an agent's prompt would be resolved in the workflow and kept, in the
    prompt sent, in the server's history: the step fails with the reason instead (an http step's
    secret is resolved by the worker, see above), and nothing on the server holds the value."""
    from engine.temporal.client import connect

    wf = parse_workflow(
        {
            "name": "AgentSecret",
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "hi"}},
                {
                    "id": "a",
                    "type": "agent",
                    "data": {
                        "agentName": "A",
                        "model": "m",
                        "userPrompt": "key={{secrets.FD_TEST_AGENT_KEY}} {{PREVIOUS_OUTPUT}}",
                    },
                },
            ],
            "connections": [{"source": "s", "target": "a", "sourceHandle": "output"}],
        }
    )
    key = "agentkey-5a4b3c2d1e"
    monkeypatch.setenv("FD_TEST_AGENT_KEY", key)  # (the client's environment too: nothing may carry it)
    w = WorkerProcess(temporal_server, "agent-secrets", env={"FD_TEST_AGENT_KEY": key})
    try:
        remote, remote_status = await _remote(temporal_server, wf, [], task_queue="agent-secrets")
    finally:
        w.stop()
    assert remote_status == "failed"
    errors = [e.content for e in remote if e.type == "llm_error"]
    assert len(errors) == 1 and "Temporal server" in errors[0] and "http step" in errors[0]
    assert not any(key in (e.content + (e.extra_json or "")) for e in remote)
    client = await connect(temporal_server)
    run_id = next(iter(await _run_ids(client, "AgentSecret")))
    history = await client.get_workflow_handle(run_id).fetch_history()
    assert key not in _history_text(history)
