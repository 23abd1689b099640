"""A run's MCP connections: opened on first use, shared by its steps, closed when it rests.

One :class:`McpPool` per run (kept in ``RunContext.memo``; :func:`pool_for`). A server is
connected the first time a step needs it (listing its tools for an agent, or calling one);
concurrent first uses wait for the same connection. The connections stay open while the run
runs and are closed when it comes to rest: paused, completed, failed or cancelled
(``RunContext.at_rest``), so a stdio server's process never outlives the run's activity; a
resumed run connects again. Tool listings are kept for the pool's life (the run), so a step
taken again after a pause offers the model the same tools.

A connection that died (its server stopped mid-call) is dropped: the call fails with a message
naming the server, and the next use connects afresh.
"""

from __future__ import annotations

import asyncio
from typing import Any

from engine.mcp.config import MCP_EXTRA_MESSAGE, McpError, McpServerConfig, resolved, servers_for
from engine.mcp.results import ToolInfo, ToolOutcome, outcome_of, tool_info

__all__ = ["McpPool", "pool_for", "list_server_tools"]

_MEMO_KEY = "mcp.pool"


def _session_module() -> Any:
    """The SDK-backed connection module, or :class:`McpError` naming the extra to install."""
    try:
        from engine.mcp import session
    except ImportError as err:
        if "mcp" in str(err) or "httpx2" in str(err):
            raise McpError(MCP_EXTRA_MESSAGE) from None
        raise
    return session


class McpPool:
    """The connections of one run to the servers it may use (``servers``: by name)."""

    def __init__(self, servers: dict[str, McpServerConfig]) -> None:
        self.servers = servers
        self._conns: dict[str, Any] = {}
        self._opening: dict[str, asyncio.Task] = {}
        self._listings: dict[str, list[ToolInfo]] = {}
        self.secrets: set[str] = set()  # the secret values the connections were opened with
        self.on_open: Any = None  # called once when the first connection opens (to close at rest)

    def config(self, name: str) -> McpServerConfig:
        server = self.servers.get(name)
        if server is None:
            known = ", ".join(sorted(self.servers)) or "none"
            raise McpError(
                f"There is no MCP server named '{name}' (declared in the settings or the workflow's "
                f"mcpServers: {known})."
            )
        problem = server.problem()
        if problem:
            raise McpError(f"The MCP server '{name}' {problem}.")
        return server

    async def connection(self, name: str) -> Any:
        conn = self._conns.get(name)
        if conn is not None and conn.alive:
            return conn
        if conn is not None:  # it died: forget it, connect again
            del self._conns[name]
            await conn.aclose()
        task = self._opening.get(name)
        if task is None:
            server, secrets = resolved(self.config(name))
            self.secrets |= secrets
            session = _session_module()
            task = self._opening[name] = asyncio.ensure_future(session.open_connection(name, server, secrets))
            if self.on_open is not None:
                self.on_open()
        try:
            conn = await asyncio.shield(task)
        finally:
            if task.done():
                self._opening.pop(name, None)
        self._conns[name] = conn
        return conn

    async def tools(self, name: str, *, fresh: bool = False) -> list[ToolInfo]:
        """The tools ``name`` lists (asked once per run unless ``fresh``)."""
        if not fresh and name in self._listings:
            return self._listings[name]
        conn = await self.connection(name)
        listing = [tool_info(t) for t in await conn.list_tools()]
        self._listings[name] = listing
        return listing

    async def tool(self, name: str, tool: str) -> ToolInfo:
        for info in await self.tools(name):
            if info.name == tool:
                return info
        for info in await self.tools(name, fresh=True):  # (a tool added since the listing)
            if info.name == tool:
                return info
        raise McpError(f"The MCP server '{name}' has no tool named '{tool}'.")

    async def call(self, name: str, tool: str, arguments: dict[str, Any]) -> ToolOutcome:
        conn = await self.connection(name)
        try:
            result = await conn.call_tool(tool, arguments)
        except McpError:
            # The request itself failed (the server stopped, did not answer, broke the protocol),
            # not the tool (that is a result flagged as an error): the next use connects afresh.
            if self._conns.get(name) is conn:
                del self._conns[name]
            await conn.aclose()
            raise
        return outcome_of(result)

    def open_servers(self) -> list[str]:
        return [n for n, c in self._conns.items() if c.alive]

    async def aclose(self) -> None:
        """Close every connection (and any still opening)."""
        for task in list(self._opening.values()):
            task.cancel()
        opening, self._opening = list(self._opening.values()), {}
        for task in opening:
            try:
                conn = await task
            except BaseException:  # noqa: BLE001 - it never opened
                continue
            await conn.aclose()
        conns, self._conns = list(self._conns.values()), {}
        for conn in conns:
            await conn.aclose()


def pool_for(ctx: Any) -> McpPool:
    """The run's pool (made on first use from the settings' and the workflow's servers); its
    connections are closed when the run comes to rest (``ctx.at_rest``)."""
    memo = ctx.memo
    pool = memo.get(_MEMO_KEY)
    if pool is None:
        pool = memo[_MEMO_KEY] = McpPool(servers_for(getattr(ctx, "workflow", None)))
    at_rest = getattr(ctx, "at_rest", None)
    if at_rest is not None:
        pool.on_open = lambda: at_rest(_MEMO_KEY, pool.aclose)
    return pool


async def list_server_tools(name: str, server: McpServerConfig | None = None, workflow: Any = None) -> list[ToolInfo]:
    """A server's tools, on a connection opened for the question and closed after (the settings
    page's *Test*, the inspector's tool picker). ``server``: a declaration not saved yet."""
    servers = servers_for(workflow)
    if server is not None:
        servers[name] = server
    pool = McpPool(servers)
    try:
        return await pool.tools(name)
    finally:
        await pool.aclose()
