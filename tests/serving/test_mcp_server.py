"""``flowdesk mcp serve`` driven by the MCP SDK's own client, over stdio and Streamable HTTP.

The server is a real subprocess; the library a folder of small flows run by the echo provider.
Covered: the listing (names, descriptions, schemas), a call and its output (text and structured
content), arguments refused against the schema, a flow that pauses and ``flowdesk_resume``, a
flow added to the library seen in the next listing (with ``notifications/tools/list_changed``
on a handshake-era session, a ``subscriptions/listen`` event on a 2026-07-28 one), and HTTP
requests without the token refused.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serving.conftest import GREET, ROOT, Served, env_for, served, write_flow

pytest.importorskip("mcp", reason="flowdesk mcp serve needs the 'mcp' extra: pip install -e '.[mcp]'")
pytest.importorskip("jsonschema", reason="flowdesk mcp serve needs the 'mcp' extra (jsonschema)")
anyio = pytest.importorskip("anyio")
httpx = pytest.importorskip("httpx")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

TOKEN = "mcp-token-for-tests"


def stdio_params(library: Path, data: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "engine.cli", "mcp", "serve", "--library", str(library), "--provider", "echo"],
        env=env_for(data),
        cwd=str(ROOT),
    )


def text_of(result: Any) -> str:
    return "".join(getattr(part, "text", "") for part in result.content)


async def _listing(client: Client) -> dict[str, Any]:
    return {t.name: t for t in (await client.list_tools()).tools}


def test_stdio_list_call_pause_resume_and_a_library_change(served_dirs: tuple[Path, Path]) -> None:
    library, data = served_dirs
    notes: list[Any] = []

    async def on_message(message: Any) -> None:
        notes.append(message)

    async def main() -> None:
        async with Client(stdio_params(library, data), mode="legacy", message_handler=on_message) as client:
            tools = await _listing(client)
            assert set(tools) == {"greet", "review", "signed", "flowdesk_resume"}
            greet = tools["greet"]
            assert greet.description == "Greets someone by name."
            assert greet.input_schema["properties"]["who"] == {"type": "string", "description": "who to greet"}
            assert greet.input_schema["properties"]["times"] == {"type": "number", "description": "Default: 1."}
            assert greet.input_schema["required"] == ["who"]
            assert "flowdesk_resume" in tools["review"].description

            done = await client.call_tool("greet", {"who": "Mo", "times": 2})
            assert not done.is_error and text_of(done) == "Hello Mo x2"
            assert done.structured_content["status"] == "completed"
            assert done.structured_content["output"] == "Hello Mo x2"

            refused = await client.call_tool("greet", {"times": "many"})
            assert refused.is_error and "greet: " in text_of(refused)

            paused = await client.call_tool("review", {"topic": "owls"})
            run_id = paused.structured_content["runId"]
            assert not paused.is_error and paused.structured_content["status"] == "paused"
            assert run_id in text_of(paused) and f"flowdesk resume {run_id}" in text_of(paused)
            answered = await client.call_tool(
                "flowdesk_resume", {"runId": run_id, "decision": "approve", "note": "lovely"}
            )
            assert not answered.is_error
            assert text_of(answered) == "Sent with note [lovely]: Draft about owls"
            twice = await client.call_tool("flowdesk_resume", {"runId": run_id, "decision": "approve"})
            assert twice.is_error and "not waiting" in text_of(twice)
            bad = await client.call_tool("flowdesk_resume", {"runId": run_id, "decision": "approve", "x": 1})
            assert bad.is_error

            added = write_flow(library, {**GREET, "id": "wave hello!", "description": "Waves."}, stem="wave")
            try:
                with anyio.fail_after(15):
                    while not any("tools/list_changed" in str(getattr(n, "method", "")) for n in notes):
                        await anyio.sleep(0.1)
                assert "wave_hello_" in await _listing(client)
            finally:
                added.unlink()

    anyio.run(main)
    # the calls are runs in the history, as any run
    shown = subprocess.run(
        [sys.executable, "-m", "engine.cli", "runs", "--json", "--limit", "50"],
        cwd=ROOT,
        env=env_for(data),
        capture_output=True,
        text=True,
        timeout=60,
    )
    names = [r["workflowName"] for r in json.loads(shown.stdout)["runs"]]
    assert "Greet" in names and "Review" in names


@pytest.fixture(scope="module")
def mcp_http(served_dirs: tuple[Path, Path]) -> Iterator[Served]:
    library, data = served_dirs
    args = ["mcp", "serve", "--library", str(library), "--provider", "echo", "--http", "127.0.0.1:0"]
    with served(args, data, FLOWDESK_TOKEN=TOKEN) as server:
        yield server


def test_http_without_the_token_is_refused(mcp_http: Served) -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    headers = {"Accept": "application/json, text/event-stream"}
    assert httpx.post(mcp_http.url, json=request, headers=headers, timeout=30).status_code == 401
    wrong = httpx.post(mcp_http.url, json=request, headers={**headers, "Authorization": "Bearer no"}, timeout=30)
    assert wrong.status_code == 401


def test_http_list_call_pause_resume_and_a_change_event(mcp_http: Served, served_dirs: tuple[Path, Path]) -> None:
    library, _ = served_dirs

    async def main() -> None:
        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30)
        async with Client(streamable_http_client(mcp_http.url, http_client=http)) as client:
            assert "greet" in await _listing(client)
            done = await client.call_tool("greet", {"who": "Web"})
            assert text_of(done) == "Hello Web x1"
            paused = await client.call_tool("review", {})
            run_id = paused.structured_content["runId"]
            rejected = await client.call_tool(
                "flowdesk_resume", {"runId": run_id, "decision": "reject", "note": "shorter"}
            )
            assert text_of(rejected) == "Rejected with note [shorter]"
            async with client.listen(tools_list_changed=True) as events:
                added = write_flow(library, {**GREET, "id": "greet2"}, stem="greet2")
                try:
                    with anyio.fail_after(15):
                        async for _event in events:
                            break
                    assert "greet2" in await _listing(client)
                finally:
                    added.unlink()
            assert "greet2" not in await _listing(client)

    anyio.run(main)


def test_http_off_loopback_without_a_token_is_refused(served_dirs: tuple[Path, Path]) -> None:
    library, data = served_dirs
    env = env_for(data)
    env.pop("FLOWDESK_TOKEN", None)
    res = subprocess.run(
        [sys.executable, "-m", "engine.cli", "mcp", "serve", "--library", str(library), "--http", "0.0.0.0:0"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 2 and "refusing to listen on 0.0.0.0 without a token" in res.stderr
    assert os.path.exists(library / "greet.flow.json")
