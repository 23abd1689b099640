"""A small MCP server for the tests, written with the official SDK (``MCPServer``).

Run as ``python server_script.py`` it speaks MCP over stdio; ``python server_script.py http
PORT_FILE`` serves Streamable HTTP on 127.0.0.1 at a free port and writes the port to
PORT_FILE. With ``MCP_PID_FILE`` set it writes its process id there on start (a test then
checks the process is gone after a run ends or is cancelled).
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer
from pydantic import BaseModel

server = MCPServer("flowdesk-test")


class Sum(BaseModel):
    total: int


@server.tool()
def echo(text: str) -> str:
    """Echo the text back, prefixed."""
    return "echo: " + text


@server.tool()
def add(a: int, b: int) -> Sum:
    """Add two whole numbers."""
    return Sum(total=a + b)


@server.tool()
def fail(reason: str = "bad") -> str:
    """Always fails (the result is flagged as an error)."""
    raise ValueError("it failed: " + reason)


@server.tool()
def die() -> str:
    """Ends the server's process in the middle of the call."""
    os._exit(3)


@server.tool()
async def slow(seconds: float) -> str:
    """Waits, then answers."""
    await asyncio.sleep(seconds)
    return "slept"


@server.tool()
def env(name: str) -> str:
    """The value of an environment variable of the server's process."""
    return os.environ.get(name, "(unset)")


if __name__ == "__main__":
    pid_file = os.environ.get("MCP_PID_FILE")
    if pid_file:
        with open(pid_file, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        import socket

        import uvicorn

        sock = socket.socket()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        app = server.streamable_http_app(host="127.0.0.1")
        with open(sys.argv[2], "w", encoding="utf-8") as f:
            f.write(str(port))
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
    else:
        server.run()
