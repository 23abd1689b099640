"""One open connection to an MCP server, through the official SDK (the ``mcp`` extra).

This module imports the SDK at its top, so it is imported only when a connection is opened
(:mod:`engine.mcp.pool` does, inside a function, and says which extra to install when it is
missing).

The SDK's transports are async context managers built on anyio task groups, which must be
left in the task that entered them. A run's steps are separate tasks, so each connection has
an *owner task* that enters the transport and the client, signals it is ready, and waits to
be told to close; any step may make requests through the client meanwhile (the SDK routes
answers by request id). Closing sets the event and waits for the owner to leave (which ends
a stdio server's process). A connection whose server died fails every later request at once.

A stdio server's standard error goes to a temporary file: its last lines are quoted when the
server fails to start or dies, so the error says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from engine.graph.templates import mask_secrets
from engine.mcp.config import McpError, McpServerConfig

__all__ = ["Connection", "open_connection", "DEFAULT_TIMEOUT"]

log = logging.getLogger("flowdesk.mcp")

#: Seconds to wait for a server to start and answer, and for one call, unless ``timeoutMs`` says.
DEFAULT_TIMEOUT = 60.0


class Connection:
    """An open connection to one server: :meth:`list_tools`, :meth:`call_tool`, :meth:`aclose`."""

    def __init__(self, name: str, server: McpServerConfig, secrets: frozenset[str]) -> None:
        self.name = name
        self.server = server
        self.secrets = secrets
        self.timeout = (server.timeoutMs / 1000) if server.timeoutMs else DEFAULT_TIMEOUT
        self.client: Any = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._failure: BaseException | None = None
        self._task: asyncio.Task | None = None
        self._errlog: Any = None

    # ------------------------------------------------------------------ the owner task
    def _transport(self) -> Any:
        s = self.server
        if s.url:
            client = httpx2.AsyncClient(headers=dict(s.headers), timeout=httpx2.Timeout(30.0, read=300.0))
            return streamable_http_client(s.url, http_client=client)
        self._errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        params = StdioServerParameters(command=s.command or "", args=list(s.args), env=dict(s.env) or None, cwd=s.cwd)
        return stdio_client(params, errlog=self._errlog)

    async def _own(self) -> None:
        try:
            async with Client(self._transport(), read_timeout_seconds=self.timeout) as client:
                self.client = client
                self._ready.set()
                await self._closing.wait()
        except BaseException as err:  # noqa: BLE001 - kept and reported by whoever waits
            self._failure = err
            if isinstance(err, asyncio.CancelledError):
                raise
        finally:
            self.client = None
            self._ready.set()

    async def open(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._own(), name=f"mcp:{self.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), self.timeout)
        except TimeoutError:
            await self.aclose()
            raise McpError(
                f"The MCP server '{self.name}' did not answer within {self.timeout:g} s "
                f"({self.describe()}){self._stderr_tail()}."
            ) from None
        if self.client is None:
            raise McpError(f"The MCP server '{self.name}' could not be started: {self.explain(self._failure)}")

    async def aclose(self) -> None:
        """Close the connection (a stdio server's process ends); idempotent."""
        self._closing.set()
        task = self._task
        if task is not None and not task.done():
            try:
                await asyncio.wait_for(asyncio.shield(task), 10.0)
            except (TimeoutError, Exception):  # noqa: BLE001 - closing goes on
                task.cancel()
                with contextlib.suppress(BaseException):
                    await task
        if self._errlog is not None:
            with contextlib.suppress(Exception):
                self._errlog.close()
            self._errlog = None

    @property
    def alive(self) -> bool:
        return self.client is not None and self._task is not None and not self._task.done()

    # ------------------------------------------------------------------ requests
    async def list_tools(self) -> list[Any]:
        """Every tool the server lists (all pages; the listing asked afresh)."""
        tools: list[Any] = []
        cursor = None
        for _ in range(100):
            page = await self._request(self._client().list_tools(cursor=cursor, cache_mode="refresh"), "list its tools")
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                break
        return tools

    async def call_tool(self, tool: str, arguments: dict[str, Any]) -> Any:
        """The SDK's ``CallToolResult`` of one call."""
        return await self._request(self._client().call_tool(tool, arguments), f"call the tool '{tool}'")

    def _client(self) -> Any:
        if not self.alive:
            raise McpError(f"The MCP server '{self.name}' is not connected (it stopped){self._stderr_tail()}.")
        return self.client

    async def _request(self, aw: Any, what: str) -> Any:
        try:
            return await asyncio.wait_for(aw, self.timeout * 2)
        except TimeoutError:
            raise McpError(
                f"The MCP server '{self.name}' did not answer within {self.timeout * 2:g} s when asked to {what}."
            ) from None
        except McpError:
            raise
        except asyncio.CancelledError:
            raise
        except Exception as err:
            raise McpError(f"The MCP server '{self.name}' failed when asked to {what}: {self.explain(err)}") from None

    # ------------------------------------------------------------------ messages
    def describe(self) -> str:
        return str(mask_secrets(self.server.describe(), self.secrets))

    def explain(self, err: BaseException | None) -> str:
        """An error as a sentence (the first leaf of an exception group), secrets masked."""
        while isinstance(err, BaseExceptionGroup) and err.exceptions:
            err = err.exceptions[0]
        if err is None:
            text = "it stopped"
        elif isinstance(err, FileNotFoundError):
            text = f"the command '{self.server.command}' was not found"
        elif isinstance(err, OSError) and err.strerror:
            text = err.strerror
        else:
            text = str(err) or type(err).__name__
            if "Connection closed" in text:
                text = "the connection closed (the server stopped)"
        return str(mask_secrets(f"{text} ({self.describe()}){self._stderr_tail()}", self.secrets))

    def _stderr_tail(self) -> str:
        f = self._errlog
        if f is None:
            return ""
        try:
            f.flush()
            f.seek(0)
            lines = [line.rstrip() for line in f.read()[-2000:].splitlines() if line.strip()]
            f.seek(0, os.SEEK_END)
        except (OSError, ValueError):
            return ""
        return f"; its last output: {' | '.join(lines[-3:])}" if lines else ""


async def open_connection(name: str, server: McpServerConfig, secrets: frozenset[str] = frozenset()) -> Connection:
    """A connection to ``server`` (already resolved: secrets in clear), open; :class:`McpError`
    naming the server when it cannot be started or does not answer."""
    conn = Connection(name, server, secrets)
    await conn.open()
    return conn
