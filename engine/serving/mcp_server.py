"""``flowdesk mcp serve``: the enabled library flows as MCP tools (the ``mcp`` extra).

Built on the SDK's low-level ``Server`` (``mcp`` 2.x): the tool list is computed from the
library on every ``tools/list`` (:mod:`engine.serving.catalog`), so a flow added, changed,
turned off or removed shows in the next listing; :class:`~engine.serving.catalog.LibraryWatch`
tells connected clients so (``notifications/tools/list_changed`` on handshake-era connections,
a ``ToolsListChanged`` event on 2026-07-28 ``subscriptions/listen`` streams).

A call validates its arguments against the tool's schema (the SDK does not: ``jsonschema``),
starts the flow through the shared :class:`~engine.serving.service.RunService` (so it is
recorded in the run history like any run) and waits for it to pause or end. Its result: the
output as text, and ``{runId, status, output, ...}`` as structured content. A run that pauses
returns a text result naming the run id and the ``flowdesk resume`` command; the
``flowdesk_resume`` tool answers it. A failed run is an error result naming the error.

Transports: stdio (the default) or Streamable HTTP (``--http HOST:PORT``) served by uvicorn,
where every request must carry ``Authorization: Bearer TOKEN`` when a token is set.
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import jsonschema
import mcp_types as types
import uvicorn
from mcp.server import Server
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from engine.resources import flowdesk_version
from engine.serving.auth import token_ok
from engine.serving.catalog import RESUME_TOOL, FlowTool, LibraryWatch, flow_tools, resume_tool_schema
from engine.serving.service import RunService, RunView, ServiceError, resume_command

__all__ = ["FlowToolServer", "serve_stdio", "serve_http"]

log = logging.getLogger(__name__)

_MAX_CONNECTIONS = 256  # handshake-era connections told of list changes


def _text(view: RunView) -> str:
    out = view.output
    if out is None:
        return ""
    return out if isinstance(out, str) else json.dumps(out, ensure_ascii=False)


def _result(view: RunView) -> types.CallToolResult:
    """A run that paused or ended, as a tool's result."""
    structured = {
        "runId": view.run_id,
        "status": view.status,
        "output": view.output,
        "waitingForInput": view.waiting_for_input,
        "currentNodeId": view.current_node_id,
    }
    if view.status == "paused":
        prompt = f": {view.prompt}" if view.prompt else ""
        text = (
            f"Run {view.run_id} is paused at approval '{view.current_node_id}'{prompt}\n"
            f"Answer it with the tool {RESUME_TOOL} (runId: {view.run_id}, decision: approve or reject, "
            f"note), or on the command line: {resume_command(view.run_id)}"
        )
        structured["prompt"] = view.prompt
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=structured)
    if view.status == "completed":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=_text(view))], structured_content=structured
        )
    structured["error"] = view.error
    text = f"Run {view.run_id} {view.status}: {view.error or 'no reason given'}"
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured, is_error=True
    )


def _error(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=message)], is_error=True)


def _schema_problem(err: jsonschema.ValidationError) -> str:
    where = ".".join(str(p) for p in err.absolute_path)
    return f"argument '{where}': {err.message}" if where else err.message


class FlowToolServer:
    """The MCP server over one :class:`RunService` (its library and run store)."""

    def __init__(self, service: RunService) -> None:
        self.service = service
        self.bus = InMemorySubscriptionBus()
        # Handshake-era connections seen, told when the tool list changes (by identity: a
        # request's ``ctx.session`` is a per-request proxy over its connection).
        self._connections: dict[int, Any] = {}
        self.server: Server[Any] = Server(
            "flowdesk",
            version=flowdesk_version(),
            instructions=(
                "Flowdesk library flows as tools. A flow that pauses for a human decision returns its run id; "
                f"answer it with {RESUME_TOOL}."
            ),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_subscriptions_listen=ListenHandler(self.bus),
        )

    def init_options(self) -> Any:
        return self.server.create_initialization_options(NotificationOptions(tools_changed=True))

    # ------------------------------------------------------------------ tools
    def tools(self) -> dict[str, FlowTool]:
        return flow_tools(self.service.flows())

    def _seen(self, ctx: Any) -> None:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return
        session = ctx.session
        connection = getattr(session, "_connection", session)
        self._connections.pop(id(connection), None)
        self._connections[id(connection)] = session  # (most recent last)
        while len(self._connections) > _MAX_CONNECTIONS:  # clients long gone are forgotten first
            self._connections.pop(next(iter(self._connections)))

    async def _list_tools(self, ctx: Any, _params: Any) -> types.ListToolsResult:
        self._seen(ctx)
        tools = [
            types.Tool(name=t.name, description=t.description, input_schema=t.input_schema)
            for t in (await asyncio.to_thread(self.tools)).values()
        ]
        tools.append(
            types.Tool(
                name=RESUME_TOOL,
                description=(
                    "Answer a paused Flowdesk run (one a flow tool returned as paused): approve or reject, with an "
                    "optional note the next step sees. Returns the run's result, or its next pause."
                ),
                input_schema=resume_tool_schema(),
            )
        )
        return types.ListToolsResult(tools=tools)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        self._seen(ctx)
        arguments = dict(params.arguments or {})
        if params.name == RESUME_TOOL:
            problem = self._invalid(resume_tool_schema(), arguments)
            if problem:
                return _error(f"{RESUME_TOOL}: {problem}")
            return await self._resume(arguments)
        tool = (await asyncio.to_thread(self.tools)).get(params.name)
        if tool is None:
            return _error(f"There is no tool '{params.name}' (the library may have changed: list the tools again).")
        problem = self._invalid(tool.input_schema, arguments)
        if problem:
            return _error(f"{tool.name}: {problem}")
        declared = {p.name for p in tool.flow.parameters}
        initial = arguments.pop("input", None) if "input" not in declared else None
        try:
            run_id = await self.service.start(
                tool.flow.id, input=initial, variables=arguments, given_as="an argument of the tool"
            )
        except ServiceError as err:
            return _error(f"{tool.name}: {err}")
        return await self._outcome(run_id)

    async def _outcome(self, run_id: str) -> types.CallToolResult:
        """The run's result once it pauses or ends; a call the client cancels cancels its run."""
        try:
            return _result(await self.service.wait(run_id))
        except asyncio.CancelledError:
            self.service.abandon(run_id, "The MCP client cancelled the tool call.")
            raise
        except ServiceError as err:
            return _error(str(err))

    @staticmethod
    def _invalid(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
        error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(arguments))
        return _schema_problem(error) if error is not None else None

    async def _resume(self, arguments: dict[str, Any]) -> types.CallToolResult:
        try:
            run_id = await self.service.decide(arguments["runId"], arguments["decision"], arguments.get("note"))
        except ServiceError as err:
            return _error(f"{RESUME_TOOL}: {err}")
        return await self._outcome(run_id)

    # ------------------------------------------------------------------ the list changed
    async def tools_changed(self) -> None:
        """Tell every client the tool list changed (each era its own way)."""
        await self.bus.publish(ToolsListChanged())
        for key, session in list(self._connections.items()):
            try:
                await session.send_tool_list_changed()
            except Exception:  # a client gone: forget it
                self._connections.pop(key, None)

    async def watch(self, interval: float = 1.0) -> None:
        await LibraryWatch(self.service.library, self.tools_changed, interval=interval).run()


async def _with_watch(server: FlowToolServer, main: Callable[[], Awaitable[None]]) -> None:
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.watch)
        tg.start_soon(server.service.expire_forever)
        try:
            await main()
        finally:
            tg.cancel_scope.cancel()
    await server.service.close()


async def serve_stdio(service: RunService) -> None:
    """Serve over stdin/stdout until the client closes them."""
    server = FlowToolServer(service)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.server.run(read, write, server.init_options())

    await _with_watch(server, main)


class _TokenGate:
    """ASGI: refuse (401) every HTTP request without ``Authorization: Bearer TOKEN``."""

    def __init__(self, app: Any, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.token:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", ())}
            if not token_ok(headers.get("authorization"), self.token):
                body = json.dumps({"detail": "A bearer token is required (Authorization: Bearer TOKEN)."}).encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [
                            (b"content-type", b"application/json"),
                            (b"www-authenticate", b'Bearer realm="flowdesk"'),
                            (b"content-length", str(len(body)).encode()),
                        ],
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


async def serve_http(service: RunService, sock: socket.socket, host: str, token: str | None) -> None:
    """Serve Streamable HTTP at ``/mcp`` on the bound socket ``sock`` until stopped."""
    server = FlowToolServer(service)
    app = _TokenGate(server.server.streamable_http_app(host=host), token)
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    web = uvicorn.Server(config)
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    sys.stderr.write(f"flowdesk: MCP server listening on http://{shown}:{port}/mcp\n")
    sys.stderr.flush()
    await _with_watch(server, lambda: web.serve(sockets=[sock]))
