"""MCP servers as tool sources, against real servers written with the SDK (stdio and HTTP)."""

from __future__ import annotations

import asyncio

from engine.llm.echo import EchoProvider
from engine.mcp.config import McpServerConfig
from engine.mcp.pool import McpPool, list_server_tools
from engine.run.events import RunStatus
from engine.run.scheduler import Run

from .conftest import pids, stdio_server, wait_gone
from .helpers import agent, mcp_node, tool_events, workflow


async def test_list_tools_over_stdio_and_http(http_server):
    over_stdio = await list_server_tools("t", McpServerConfig.model_validate(stdio_server()))
    over_http = await list_server_tools("h", McpServerConfig(url=http_server))
    for listing in (over_stdio, over_http):
        by_name = {t.name: t for t in listing}
        assert {"echo", "add", "fail", "die", "slow", "env"} <= set(by_name)
        assert by_name["add"].description == "Add two whole numbers."
        assert by_name["add"].input_schema["required"] == ["a", "b"]


async def test_the_mcp_kind_calls_a_tool_with_templated_arguments(pid_file):
    wf = workflow(
        mcp_node("sum", "calc", "add", {"a": "{{x}}", "b": 2}, outputVar="total"),
        mcp_node("say", "calc", "echo", {"text": "total {{total.total}}"}),
        servers={"calc": stdio_server(pid_file)},
    )
    run = Run(wf, EchoProvider(), variables={"x": 40}, delta_interval=0)
    assert await run.start() == RunStatus.COMPLETED, run.error
    assert run.outputs["sum"] == {"total": 42}
    assert run.outputs["say"] == {"result": "echo: total 42"}
    events = tool_events(run)
    assert [t for t, _ in events] == ["tool_call_start", "tool_call_end"] * 2
    start = events[0][1]
    assert start["tool"] == "add" and start["server"] == "calc" and start["arguments"] == {"a": 40, "b": 2}
    assert events[1][1]["result"] == {"total": 42} and events[1][1]["callId"] == start["callId"]
    # one connection for both steps, closed when the run ended
    (pid,) = pids(pid_file)
    assert wait_gone(pid)


async def test_the_mcp_kind_over_http(http_server):
    wf = workflow(mcp_node("e", "web", "echo", {"text": "{{PREVIOUS_OUTPUT}}"}), servers={"web": {"url": http_server}})
    run = Run(wf, EchoProvider(), delta_interval=0)
    assert await run.start() == RunStatus.COMPLETED, run.error
    assert run.outputs["e"] == {"result": "echo: hello"}


async def test_a_failing_tool_fails_the_step_naming_it():
    wf = workflow(mcp_node("f", "calc", "fail", {"reason": "nope"}), servers={"calc": stdio_server()})
    run = Run(wf, EchoProvider(), delta_interval=0)
    assert await run.start() == RunStatus.FAILED
    (err,) = [x for t, x in tool_events(run) if t == "tool_call_error"]
    assert err["tool"] == "fail" and err["server"] == "calc" and "Error executing tool fail" in err["error"]
    assert "Error executing tool fail" in run.error


async def test_arguments_that_break_the_schema_fail_before_the_call():
    wf = workflow(mcp_node("f", "calc", "add", {"a": "x"}), servers={"calc": stdio_server()})
    run = Run(wf, EchoProvider(), delta_interval=0)
    assert await run.start() == RunStatus.FAILED
    assert "do not fit its input schema" in run.error and "calc/add" in run.error


async def test_a_server_that_does_not_start_is_a_step_error_naming_it(tmp_path):
    wf = workflow(
        mcp_node("f", "broken", "add", {}),
        servers={"broken": {"command": str(tmp_path / "no-such-command"), "args": []}},
    )
    run = Run(wf, EchoProvider(), delta_interval=0)
    assert await run.start() == RunStatus.FAILED
    assert "MCP server 'broken'" in run.error and "not found" in run.error


async def test_a_server_that_dies_mid_call_is_a_step_error_and_the_next_use_reconnects(pid_file):
    wf = workflow(
        mcp_node("d", "calc", "die", {}, errorMode="skip"),
        mcp_node("e", "calc", "echo", {"text": "again"}),
        servers={"calc": stdio_server(pid_file)},
    )
    run = Run(wf, EchoProvider(), delta_interval=0)
    assert await run.start() == RunStatus.COMPLETED, run.error
    (err,) = [x for t, x in tool_events(run) if t == "tool_call_error"]
    assert err["tool"] == "die" and "calc" in err["error"]
    assert run.outputs["e"] == {"result": "echo: again"}
    assert len(pids(pid_file)) == 2  # started again for the next call


async def test_cancel_closes_the_connection(pid_file):
    wf = workflow(mcp_node("s", "calc", "slow", {"seconds": 30}), servers={"calc": stdio_server(pid_file)})
    run = Run(wf, EchoProvider(), delta_interval=0)
    task = asyncio.create_task(run.start())
    for _ in range(400):
        if pids(pid_file):
            break
        await asyncio.sleep(0.05)
    await asyncio.sleep(1.0)  # (the call is under way)
    run.cancel()
    assert await asyncio.wait_for(task, 10) == RunStatus.CANCELLED
    (pid,) = pids(pid_file)
    assert await asyncio.to_thread(wait_gone, pid)
    assert [t for t, _ in tool_events(run)] == ["tool_call_start", "tool_call_error"]


async def test_an_echo_agent_calls_each_offered_tool_once(pid_file):
    wf = workflow(
        agent("a", [{"server": "calc", "tools": ["echo", "add"]}]),
        servers={"calc": stdio_server(pid_file)},
    )
    run = Run(wf, EchoProvider(), delta_interval=0)
    assert await run.start() == RunStatus.COMPLETED, run.error
    out = run.outputs["a"]
    assert '[calc/echo] {"result": "echo: hello"}' in out
    assert '[calc/add] {"total": 0}' in out
    starts = [x for t, x in tool_events(run) if t == "tool_call_start"]
    assert sorted(x["tool"] for x in starts) == ["add", "echo"]
    assert all(x["server"] == "calc" for x in starts)


async def test_an_unknown_server_is_a_validation_error():
    from engine.graph.validate import validate

    wf = workflow(agent("a", [{"server": "nowhere", "tools": "*"}]), mcp_node("m", "nowhere", "x", {}), servers={})
    codes = [i.code for i in validate(wf) if i.is_error]
    assert codes.count("mcp_server_unknown") == 2


async def test_the_pool_reuses_one_connection(pid_file):
    pool = McpPool({"calc": McpServerConfig.model_validate(stdio_server(pid_file))})
    try:
        await asyncio.gather(*(pool.call("calc", "echo", {"text": str(i)}) for i in range(5)))
        assert len(pids(pid_file)) == 1
    finally:
        await pool.aclose()
    assert await asyncio.to_thread(wait_gone, pids(pid_file)[0])


async def test_permissions_bound_the_tools(pid_file):
    from engine.graph.validate import validate  # noqa: F401  (the workflow stays valid)

    denied = workflow(
        mcp_node("m", "calc", "add", {"a": 1, "b": 2}),
        servers={"calc": stdio_server()},
        permissions={"tools": ["calc/echo"]},
    )
    run = Run(denied, EchoProvider(), delta_interval=0)
    assert await run.start() == RunStatus.FAILED
    assert run.error.startswith("permission_denied:") and "calc/add" in run.error
    agent_denied = workflow(
        agent("a", [{"server": "calc", "tools": ["add"]}]),
        servers={"calc": stdio_server()},
        permissions={"tools": ["other/*"]},
    )
    run = Run(agent_denied, EchoProvider(), delta_interval=0)
    assert await run.start() == RunStatus.FAILED
    assert run.error.startswith("permission_denied:")
    allowed = workflow(
        agent("a", [{"server": "calc", "tools": "*"}]),
        servers={"calc": stdio_server(pid_file)},
        permissions={"tools": ["calc/echo"]},
    )
    run = Run(allowed, EchoProvider(), delta_interval=0)
    assert await run.start() == RunStatus.COMPLETED, run.error
    assert [x["tool"] for t, x in tool_events(run) if t == "tool_call_start"] == ["echo"]  # "*" offers only the granted


async def test_a_secret_in_env_reaches_the_server_but_no_event(monkeypatch):
    monkeypatch.setenv("MCP_TEST_SECRET", "s3cr3t-value-42")
    wf = workflow(
        mcp_node("m", "calc", "env", {"name": "TOKEN"}),
        servers={"calc": stdio_server(TOKEN="{{secrets.MCP_TEST_SECRET}}")},
    )
    run = Run(wf, EchoProvider(), delta_interval=0)
    assert await run.start() == RunStatus.COMPLETED, run.error
    assert run.outputs["m"] == {"result": "••••"}
    assert not any("s3cr3t-value-42" in (e.content + (e.extra_json or "")) for e in run.events)


async def test_a_subagent_uses_its_own_mcp_tools():
    from engine.graph.model import parse_workflow

    wf = parse_workflow(
        {
            "mcpServers": {"calc": stdio_server()},
            "nodes": [
                {"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "hi"}},
                agent("p", [], tools={"web_search": False, "subagents": True}, name="Lead"),
                agent("k", [{"server": "calc", "tools": ["echo"]}], name="Helper"),
            ],
            "connections": [
                {"source": "start", "target": "p", "sourceHandle": "output", "targetHandle": "input"},
                {"source": "p", "target": "k", "sourceHandle": "subagent", "targetHandle": "input"},
            ],
        }
    )
    run = Run(wf, EchoProvider(), delta_interval=0)
    assert await run.start() == RunStatus.COMPLETED, run.error
    assert '[Helper] hi\n\n[calc/echo] {"result": "echo: hi"}' in run.outputs["p"]
    (start,) = [x for t, x in tool_events(run) if t == "tool_call_start"]
    assert start["depth"] == 2 and start["parentCallId"]
