"""Acceptance: MCP tools, tool approval and `flowdesk mcp serve`, from DESIGN.md's names only.

The tools come from a small MCP server written here with the official SDK (`MCPServer`) and
run over stdio, declared in each workflow's `mcpServers`. Flowdesk is driven as a user does:
`flowdesk run/resume` as subprocesses, and `flowdesk mcp serve` through the SDK's client.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.support import FLOWDESK, Home, chain, cli, link, payload, start_node, var

pytest.importorskip("mcp", reason="the `mcp` extra is not installed (pip install -e '.[mcp]')")

SERVER_CODE = '''
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel

server = MCPServer("acc-kit")


class Total(BaseModel):
    total: int


@server.tool(structured_output=False)
def shout(text: str) -> str:
    """Upper-cases the text and adds an exclamation mark."""
    return text.upper() + "!"


@server.tool()
def add(a: int, b: int) -> Total:
    """Adds two whole numbers."""
    return Total(total=a + b)


@server.tool(structured_output=False)
def broken(text: str) -> str:
    """Always fails."""
    raise ToolError("kit is broken: " + text)


@server.tool(structured_output=False)
def die(text: str) -> str:
    """Ends the server's process in the middle of the call."""
    import os

    os._exit(3)


if __name__ == "__main__":
    server.run()
'''


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Home:
    root = tmp_path_factory.mktemp("mcp-acc")
    home = Home(root)
    (root / "kit_server.py").write_text(SERVER_CODE, encoding="utf-8")
    return home


def servers(home: Home) -> dict[str, Any]:
    return {"kit": {"command": sys.executable, "args": [str(home.root / "kit_server.py")], "env": {}}}


def mcp_node(node_id: str, tool: str, arguments: dict[str, Any], **data: Any) -> dict[str, Any]:
    return {"id": node_id, "type": "mcp", "data": {"server": "kit", "tool": tool, "arguments": arguments, **data}}


def agent(node_id: str, mcp: list[dict[str, Any]], user: str = "") -> dict[str, Any]:
    return {
        "id": node_id,
        "type": "agent",
        "data": {
            "agentName": "Helper",
            "systemPrompt": "Use the tools.",
            "userPrompt": user,
            "model": "echo",
            "tools": {"web_search": False, "subagents": False, "mcp": mcp},
        },
    }


def as_value(output: Any) -> Any:
    if isinstance(output, str):
        try:
            return json.loads(output)
        except ValueError:
            return output
    return output


def run_id_in(text: str) -> str:
    found = re.search(r"resume\s+([0-9A-Za-z_-]{6,})", text)
    assert found, f"no `resume RUN_ID` printed: {text[-2000:]}"
    return found.group(1)


# ----------------------------------------------------------------------------- the mcp kind
def test_mcp_kind_templated_arguments_structured_output(world: Home) -> None:
    flow = chain(
        "sum",
        [start_node([var("x", 3, "number")]), mcp_node("sum", "add", {"a": "{{x}}", "b": 2}, outputVar="total")],
        mcpServers=servers(world),
    )
    res, doc = world.run_json(world.write("sum.flow.json", flow), "--var", "x=40")
    assert res.rc == 0, res.combined
    assert doc["status"] == "completed"
    assert as_value(doc["output"]) == {"total": 42}


def test_mcp_kind_text_output_and_tool_events(world: Home) -> None:
    flow = chain(
        "shout",
        [start_node(initial="hello"), mcp_node("loud", "shout", {"text": "{{input}} there"})],
        mcpServers=servers(world),
    )
    events = world.run(world.write("shout.flow.json", flow))
    assert events.rc == 0, events.combined
    assert [e["content"] for e in events.of_type("node_output", "loud")] == ["HELLO THERE!"]
    starts = events.of_type("tool_call_start")
    assert starts, events.combined
    start = payload(starts[0])
    assert start["tool"] == "shout" and start["server"] == "kit"
    assert start["arguments"] == {"text": "hello there"}


# ----------------------------------------------------------------------------- agents
def test_agent_calls_an_mcp_tool_with_the_echo_provider(world: Home) -> None:
    flow = chain(
        "agent-tool",
        [start_node(initial="quiet words"), agent("helper", [{"server": "kit", "tools": ["shout"]}])],
        mcpServers=servers(world),
    )
    res = world.run(world.write("agent.flow.json", flow))
    assert res.rc == 0, res.combined
    start = [payload(e) for e in res.of_type("tool_call_start", "helper")]
    end = [payload(e) for e in res.of_type("tool_call_end", "helper")]
    assert len(start) == 1 and len(end) == 1, res.combined
    for key in ("tool", "server", "callId", "arguments"):
        assert key in start[0] and key in end[0], (key, start, end)
    assert start[0]["tool"] == "shout" and start[0]["server"] == "kit"
    assert start[0]["callId"] == end[0]["callId"]
    assert "QUIET WORDS!" in json.dumps(end[0].get("result"))


def test_an_mcp_error_result_is_logged_and_the_run_goes_on(world: Home) -> None:
    flow = chain(
        "agent-broken",
        [start_node(initial="x"), agent("helper", [{"server": "kit", "tools": ["broken"]}])],
        mcpServers=servers(world),
    )
    res = world.run(world.write("broken.flow.json", flow))
    assert res.rc == 0, res.combined
    errors = [payload(e) for e in res.of_type("tool_call_error", "helper")]
    assert len(errors) == 1, res.combined
    assert errors[0]["tool"] == "broken" and errors[0]["server"] == "kit"
    assert "kit is broken" in json.dumps(errors[0].get("error"))
    assert res.of_type("run_end") or "completed" in res.combined


def test_permissions_tools_refuse_a_tool_not_granted(world: Home) -> None:
    flow = chain(
        "denied",
        [start_node(initial="hi"), mcp_node("loud", "shout", {"text": "{{input}}"})],
        mcpServers=servers(world),
        permissions={"tools": ["kit/add"]},
    )
    res = world.run(world.write("denied.flow.json", flow))
    assert res.rc == 1, res.combined
    text = res.text_of("loud")
    assert "permission_denied" in text and "shout" in text
    assert not res.of_type("tool_call_end")


# ----------------------------------------------------------------------------- approving tool calls
def ask_flow(world: Home, name: str) -> Path:
    flow = chain(
        name,
        [
            start_node(initial="original text"),
            agent("helper", [{"server": "kit", "tools": ["shout"], "approve": "ask"}]),
        ],
        mcpServers=servers(world),
    )
    return world.write(f"{name}.flow.json", flow)


def test_ask_pauses_then_resume_with_edited_arguments(world: Home) -> None:
    res = world.run(ask_flow(world, "ask-approve"))
    assert res.rc == 3, res.combined
    waits = [payload(e) for e in res.of_type("wait_input")]
    assert waits, res.combined
    wait = waits[-1]
    assert wait["kind"] == "tool_call" and wait["tool"] == "shout"
    assert wait["arguments"] == {"text": "original text"}
    assert not res.of_type("tool_call_end")
    run_id = run_id_in(res.combined)
    resumed = cli(
        "resume",
        run_id,
        "--decide",
        "approve",
        "--arguments",
        '{"text": "edited"}',
        "--jsonl",
        env=world.env,
        cwd=world.root,
    )
    assert resumed.rc == 0, resumed.combined
    ends = [payload(e) for e in resumed.of_type("tool_call_end")]
    assert len(ends) == 1, resumed.combined
    assert "EDITED!" in json.dumps(ends[0].get("result"))
    assert "ORIGINAL TEXT!" not in resumed.stdout


def test_ask_rejected_with_a_note_reaches_the_model(world: Home) -> None:
    res = world.run(ask_flow(world, "ask-reject"))
    assert res.rc == 3, res.combined
    run_id = run_id_in(res.combined)
    resumed = cli("resume", run_id, "--decide", "reject:not today", "--jsonl", env=world.env, cwd=world.root)
    assert resumed.rc == 0, resumed.combined
    assert not resumed.of_type("tool_call_end"), "the declined tool was called anyway"
    assert "SHOUT" not in resumed.stdout and "ORIGINAL TEXT!" not in resumed.stdout
    # The echo model answers with what it was given: the declined result and the note.
    assert "The user declined this call." in resumed.stdout, resumed.stdout[-3000:]
    assert "not today" in resumed.stdout


# ----------------------------------------------------------------------------- flowdesk mcp serve
def library_for_mcp_serve(world: Home) -> None:
    world.add_library_flow(
        "greet",
        chain(
            "greet",
            [
                start_node([var("name", "", "string", required=True)]),
                {
                    "id": "say",
                    "type": "code",
                    "data": {"language": "python", "code": "'Hello ' + name", "inputs": {"name": "{{name}}"}},
                },
            ],
            description="Greets someone.",
        ),
    )
    gate = chain(
        "gate",
        [
            start_node(initial="draft"),
            {"id": "ok", "type": "approval", "data": {"prompt": "Publish the draft?"}},
            {
                "id": "after",
                "type": "code",
                "data": {"language": "python", "code": "'decided ' + d", "inputs": {"d": "{{APPROVAL_DECISION}}"}},
            },
        ],
        description="Waits for a person.",
    )
    gate["connections"] = [link("start", "ok"), link("ok", "after", "approve")]
    world.add_library_flow("gate", gate)


def text_of(result: Any) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def drive_mcp_serve(world: Home) -> dict[str, Any]:
    from mcp.client.client import Client
    from mcp.client.stdio import StdioServerParameters

    params = StdioServerParameters(
        command=FLOWDESK, args=["mcp", "serve", "--provider", "echo"], env=world.env, cwd=str(world.root)
    )
    seen: dict[str, Any] = {}
    async with Client(params, read_timeout_seconds=60) as client:
        listed = await client.list_tools()
        seen["tools"] = {t.name: t for t in listed.tools}
        seen["greet"] = await client.call_tool("greet", {"name": "Ann"})
        seen["gate"] = await client.call_tool("gate", {})
        match = re.search(r"[0-9a-f]{8,}", text_of(seen["gate"]))
        seen["gate_run"] = match.group(0) if match else None
        world.add_library_flow("fresh", {**chain("fresh", [start_node(initial="new")]), "description": "Added later."})
        seen["relisted"] = {t.name for t in (await client.list_tools()).tools}
        if seen["gate_run"]:
            seen["resumed"] = await client.call_tool(
                "flowdesk_resume", {"runId": seen["gate_run"], "decision": "approve", "note": "fine"}
            )
    return seen


@pytest.fixture(scope="module")
def mcp_session(world: Home) -> dict[str, Any]:
    library_for_mcp_serve(world)
    return asyncio.run(asyncio.wait_for(drive_mcp_serve(world), 120))


def test_mcp_serve_lists_library_flows_as_tools(mcp_session: dict[str, Any]) -> None:
    tools = mcp_session["tools"]
    assert {"greet", "gate", "flowdesk_resume"} <= set(tools), list(tools)
    greet = tools["greet"]
    assert "Greets someone." in (greet.description or "")
    schema = greet.input_schema if hasattr(greet, "input_schema") else greet.inputSchema
    assert schema["properties"]["name"]["type"] == "string"
    assert "name" in schema.get("required", [])


def test_mcp_serve_call_runs_the_flow(mcp_session: dict[str, Any]) -> None:
    result = mcp_session["greet"]
    assert not result.is_error if hasattr(result, "is_error") else not result.isError
    assert "Hello Ann" in text_of(result)


def test_mcp_serve_pause_then_flowdesk_resume(mcp_session: dict[str, Any], world: Home) -> None:
    paused = text_of(mcp_session["gate"])
    run_id = mcp_session["gate_run"]
    assert run_id, paused
    assert "resume" in paused and "Publish the draft?" in paused
    resumed = mcp_session["resumed"]
    assert "decided approve" in text_of(resumed), text_of(resumed)


def test_edited_arguments_that_do_not_fit_the_schema_leave_the_run_paused(world: Home) -> None:
    res = world.run(ask_flow(world, "ask-bad-args"))
    assert res.rc == 3, res.combined
    run_id = run_id_in(res.combined)
    bad = cli("resume", run_id, "--decide", "approve", "--arguments", '{"text": 5}', "--jsonl", env=world.env)
    assert bad.rc != 0, bad.combined
    assert not bad.of_type("tool_call_end")
    assert "Traceback" not in bad.combined
    good = cli("resume", run_id, "--decide", "approve", "--jsonl", env=world.env, cwd=world.root)
    assert good.rc == 0, good.combined
    assert "ORIGINAL TEXT!" in json.dumps([payload(e) for e in good.of_type("tool_call_end")])


def test_mcp_kind_error_result_fails_the_step_naming_the_server(world: Home) -> None:
    flow = chain(
        "mcp-broken",
        [start_node(initial="x"), mcp_node("bad", "broken", {"text": "oops"})],
        mcpServers=servers(world),
    )
    res = world.run(world.write("mcp-broken.flow.json", flow))
    assert res.rc == 1, res.combined
    text = res.text_of("bad")
    assert "kit" in text and "kit is broken: oops" in text
    assert "Traceback" not in res.combined


def test_mcp_serve_sees_a_library_change_in_the_next_listing(mcp_session: dict[str, Any]) -> None:
    assert "fresh" not in mcp_session["tools"]
    assert "fresh" in mcp_session["relisted"]


def test_mcp_serve_over_http_requires_the_token(world: Home) -> None:
    import socket

    import httpx
    from mcp.client.client import Client

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [FLOWDESK, "mcp", "serve", "--http", f"127.0.0.1:{port}", "--token", "tok-123", "--provider", "echo"],
        env=world.env,
        cwd=world.root,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}/mcp"
    try:
        deadline = time.monotonic() + 30
        refused = None
        while time.monotonic() < deadline:
            try:
                refused = httpx.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, timeout=5)
                break
            except httpx.TransportError:
                time.sleep(0.3)
        assert refused is not None and refused.status_code == 401, refused

        async def listing() -> set[str]:
            import httpx2

            auth = httpx2.AsyncClient(headers={"Authorization": "Bearer tok-123"})
            from mcp.client.streamable_http import streamable_http_client

            async with auth, Client(streamable_http_client(url, http_client=auth)) as client:
                return {t.name for t in (await client.list_tools()).tools}

        names = asyncio.run(asyncio.wait_for(listing(), 60))
        assert {"greet", "flowdesk_resume"} <= names
    finally:
        proc.terminate()
        proc.wait(15)


def test_a_server_that_dies_mid_call_is_a_tool_error_and_the_run_goes_on(world: Home) -> None:
    flow = chain(
        "agent-dies",
        [start_node(initial="x"), agent("helper", [{"server": "kit", "tools": ["die"]}])],
        mcpServers=servers(world),
    )
    res = world.run(world.write("dies.flow.json", flow), timeout=90)
    assert res.rc == 0, res.combined
    errors = [payload(e) for e in res.of_type("tool_call_error", "helper")]
    assert len(errors) == 1 and errors[0]["tool"] == "die", res.combined
    assert "Traceback" not in res.combined


def test_permissions_tools_bound_what_an_agent_is_offered(world: Home) -> None:
    star = chain(
        "agent-star",
        [start_node(initial="calm"), agent("helper", [{"server": "kit", "tools": "*"}])],
        mcpServers=servers(world),
        permissions={"tools": ["kit/shout"]},
    )
    res = world.run(world.write("star.flow.json", star))
    assert res.rc == 0, res.combined
    called = {payload(e)["tool"] for e in res.of_type("tool_call_start")}
    assert called == {"shout"}, res.combined
    listed = chain(
        "agent-listed",
        [start_node(initial="calm"), agent("helper", [{"server": "kit", "tools": ["add"]}])],
        mcpServers=servers(world),
        permissions={"tools": ["kit/shout"]},
    )
    refused = world.run(world.write("listed.flow.json", listed))
    assert refused.rc == 1, refused.combined
    assert "permission_denied" in refused.text_of("helper") and "add" in refused.text_of("helper")
    assert not refused.of_type("tool_call_end")
