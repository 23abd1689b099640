"""MCP tools on a Temporal server: an agent step's model call (an activity) lists and calls its
MCP tools on the worker, which starts the servers itself (a real MCP server over stdio, written
with the SDK: tests/mcp/server_script.py) from the workflow's ``mcpServers`` and within its
``permissions``, secrets from the worker's own environment; a tool that asks for approval
pauses the remote run, and the answer (edited arguments, a rejection with a note) goes on on a
worker, as locally. The ``mcp`` kind runs as a step activity the same way."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from engine import EchoProvider, Run, RunStatus, parse_workflow

from .conftest import ROOT, WorkerProcess, needs_temporal

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed (pip install 'flowdesk[mcp]')")

from tests.mcp.conftest import pids, stdio_server, wait_gone  # noqa: E402 - needs the mcp extra

pytestmark = needs_temporal


def _flow(tools, *, servers=None, **top):
    return parse_workflow(
        {
            "name": "MCP remotely",
            "mcpServers": servers or {"calc": stdio_server()},
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "hello"}},
                {
                    "id": "a",
                    "type": "agent",
                    "data": {"agentName": "Worker", "userPrompt": "", "tools": {"mcp": tools}},
                },
            ],
            "connections": [{"source": "s", "target": "a", "sourceHandle": "output"}],
            **top,
        }
    )


async def _remote(address, wf, answers=(), task_queue="shared"):
    from engine.temporal.client import answer, connect, follow, submit

    answers = list(answers)
    client = await connect(address)
    handle = await submit(client, wf, meta={"provider": "echo"}, task_queue=task_queue)
    events = []
    state = await follow(client, handle.id, events.append)
    while state.status == "paused" and answers:
        decision, note, arguments = answers.pop(0)
        await answer(client, handle.id, decision, note, node_id=state.pending, arguments=arguments)
        state = await follow(client, handle.id, events.append, after=state.next, state=state)
    return events, state


def _extra(event):
    return json.loads(event.extra_json) if event.extra_json else {}


async def test_an_agent_calls_an_mcp_tool_on_the_worker_which_closes_the_server(temporal_server, worker, tmp_path):
    pid_file = tmp_path / "pids"
    wf = _flow([{"server": "calc", "tools": ["echo"]}], servers={"calc": stdio_server(pid_file)})
    events, state = await _remote(temporal_server, wf)
    assert state.status == "completed", state.error
    calls = [(e.type, _extra(e)) for e in events if e.type.startswith("tool_call_")]
    assert [t for t, _ in calls] == ["tool_call_start", "tool_call_end"]
    assert calls[0][1]["server"] == "calc" and calls[0][1]["tool"] == "echo"
    assert calls[1][1]["result"] == {"result": "echo: hello"}
    (response,) = [e for e in events if e.type == "llm_response" and e.node_id == "a"]
    assert '[calc/echo] {"result": "echo: hello"}' in response.content
    (pid,) = pids(pid_file)  # started by the worker, and ended when its activity did
    assert wait_gone(pid)


@pytest.mark.parametrize(
    "answer, expected",
    [
        (("approve", "", {"text": "edited"}), '[calc/echo] {"result": "echo: edited"}'),
        (("reject", "not now", None), "[calc/echo] The user declined this call. Note: not now"),
    ],
)
async def test_an_mcp_call_waits_for_approval_remotely_as_locally(temporal_server, worker, answer, expected):
    wf = _flow([{"server": "calc", "tools": ["echo"], "approve": "ask"}])
    local = Run(wf, EchoProvider(), delta_interval=0)
    assert await local.start() == RunStatus.PAUSED
    decision, note, arguments = answer
    assert await local.resume(decision, note, arguments=arguments) == RunStatus.COMPLETED
    assert expected in local.outputs["a"]

    events, state = await _remote(temporal_server, wf, [answer])
    assert state.status == "completed", state.error
    (wait,) = [e for e in events if e.type == "wait_input"]
    extra = _extra(wait)
    assert {k: extra[k] for k in ("kind", "tool", "server", "arguments")} == {
        "kind": "tool_call",
        "tool": "echo",
        "server": "calc",
        "arguments": {"text": "hello"},
    }
    (response,) = [e for e in events if e.type == "llm_response" and e.node_id == "a"]
    assert expected in response.content
    ran = [e for e in events if e.type == "tool_call_end"]
    assert len(ran) == (1 if decision == "approve" else 0)


async def test_edited_arguments_that_break_the_tool_schema_are_refused_remotely(temporal_server, worker):
    from engine.temporal.client import answer, connect, follow, submit

    client = await connect(temporal_server)
    wf = _flow([{"server": "calc", "tools": ["add"], "approve": "ask"}])
    handle = await submit(client, wf, meta={"provider": "echo"}, task_queue="shared")
    state = await follow(client, handle.id, lambda e: None)
    assert state.status == "paused", state.error
    with pytest.raises(Exception) as refused:
        await answer(client, handle.id, "approve", node_id=state.pending, arguments={"a": "two", "b": 3})
    assert "input schema" in str(refused.value.cause)
    await answer(client, handle.id, "approve", node_id=state.pending, arguments={"a": 2, "b": 3})
    events = []
    state = await follow(client, handle.id, events.append, after=state.next, state=state)
    assert state.status == "completed", state.error
    (end,) = [e for e in events if e.type == "tool_call_end"]
    assert _extra(end)["result"] == {"total": 5}


async def test_a_tool_the_permissions_do_not_grant_fails_the_step(temporal_server, worker):
    wf = _flow([{"server": "calc", "tools": ["add"]}], permissions={"tools": ["calc/echo"]})
    _events, state = await _remote(temporal_server, wf)
    assert state.status == "failed"
    assert "permission_denied" in state.error and "calc/add" in state.error


async def test_a_server_that_cannot_start_is_a_clear_step_error(temporal_server, worker):
    wf = _flow([{"server": "gone", "tools": "*"}], servers={"gone": {"command": "/nonexistent/mcp-server"}})
    _events, state = await _remote(temporal_server, wf)
    assert state.status == "failed"
    assert "MCP tools" in state.error and "gone" in state.error


async def test_the_mcp_kind_runs_on_a_worker_with_its_secrets(temporal_server, monkeypatch):
    monkeypatch.delenv("MCP_REMOTE_TOKEN", raising=False)  # only the worker has it
    w = WorkerProcess(temporal_server, "mcp-secrets", env={"MCP_REMOTE_TOKEN": "s3cret-on-the-worker"})
    try:
        wf = parse_workflow(
            {
                "name": "MCP step remotely",
                "mcpServers": {"calc": stdio_server(TOKEN="{{secrets.MCP_REMOTE_TOKEN}}")},
                "nodes": [
                    {"id": "s", "type": "start", "data": {"initialInput": "hello"}},
                    {
                        "id": "sum",
                        "type": "mcp",
                        "data": {"server": "calc", "tool": "add", "arguments": {"a": 2, "b": 3}},
                    },
                    {
                        "id": "tok",
                        "type": "mcp",
                        "data": {"server": "calc", "tool": "env", "arguments": {"name": "TOKEN"}},
                    },
                ],
                "connections": [
                    {"source": "s", "target": "sum", "sourceHandle": "output"},
                    {"source": "sum", "target": "tok", "sourceHandle": "output"},
                ],
            }
        )
        events, state = await _remote(temporal_server, wf, task_queue="mcp-secrets")
    finally:
        w.stop()
    assert state.status == "completed", state.error
    ends = {e.node_id: _extra(e)["result"] for e in events if e.type == "tool_call_end"}
    assert ends["sum"] == {"total": 5}
    assert ends["tok"]["result"] not in ("(unset)", "{{secrets.MCP_REMOTE_TOKEN}}")  # the worker's secret reached it
    assert all("s3cret-on-the-worker" not in f"{e.content} {e.extra_json}" for e in events)  # and is masked


def test_run_and_resume_with_arguments_from_the_command_line(temporal_server, worker, tmp_path):
    flow = tmp_path / "mcp-ask.flow.json"
    flow.write_text(_flow([{"server": "calc", "tools": ["echo"], "approve": "ask"}]).model_dump_json())

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "engine.cli", *args], cwd=ROOT, capture_output=True, text=True, timeout=90
        )

    first = cli("run", str(flow), "--temporal", temporal_server, "--task-queue", "shared", "--provider", "echo")
    assert first.returncode == 3, first.stderr
    run_id = re.search(r"run ([0-9a-f]{32}) is paused", first.stderr).group(1)
    good = cli(
        "resume",
        run_id,
        "--temporal",
        temporal_server,
        "--decide",
        "approve",
        "--arguments",
        '{"text": "from the CLI"}',
    )
    assert good.returncode == 0, good.stderr
    assert '[calc/echo] {"result": "echo: from the CLI"}' in good.stdout


async def test_a_subagents_own_mcp_tools_run_on_the_worker(temporal_server, worker):
    wf = parse_workflow(
        {
            "name": "Subagent with MCP tools",
            "mcpServers": {"calc": stdio_server()},
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "hello"}},
                {"id": "p", "type": "agent", "data": {"agentName": "Lead", "tools": {"subagents": True}}},
                {
                    "id": "k",
                    "type": "agent",
                    "data": {"agentName": "Helper", "tools": {"mcp": [{"server": "calc", "tools": ["echo"]}]}},
                },
            ],
            "connections": [
                {"source": "s", "target": "p", "sourceHandle": "output"},
                {"source": "p", "target": "k", "sourceHandle": "subagent", "targetHandle": "input"},
            ],
        }
    )
    events, state = await _remote(temporal_server, wf)
    assert state.status == "completed", state.error
    (end,) = [e for e in events if e.type == "tool_call_end"]
    assert _extra(end)["result"] == {"result": "echo: hello"} and end.node_id == "k"
    (response,) = [e for e in events if e.type == "llm_response" and e.node_id == "p"]
    assert "echo: hello" in response.content


async def test_cancelling_the_run_ends_the_server_in_the_middle_of_a_call(temporal_server, worker, tmp_path):
    import asyncio

    from engine.temporal.client import cancel, connect, follow, submit

    pid_file = tmp_path / "pids"
    wf = parse_workflow(
        {
            "name": "Slow MCP step",
            "mcpServers": {"calc": stdio_server(pid_file)},
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "hello"}},
                {"id": "m", "type": "mcp", "data": {"server": "calc", "tool": "slow", "arguments": {"seconds": 60}}},
            ],
            "connections": [{"source": "s", "target": "m", "sourceHandle": "output"}],
        }
    )
    client = await connect(temporal_server)
    handle = await submit(client, wf, meta={"provider": "echo"}, task_queue="shared")
    for _ in range(200):  # the worker started the server and the call is in flight
        if pids(pid_file):
            break
        await asyncio.sleep(0.1)
    (pid,) = pids(pid_file)
    await asyncio.sleep(1.0)
    await cancel(client, handle.id)
    events = []
    state = await asyncio.wait_for(follow(client, handle.id, events.append), 30)
    assert state.status == "cancelled"
    assert await asyncio.to_thread(wait_gone, pid, 10)  # the worker closed the connection
