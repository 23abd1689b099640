"""MCP test fixtures: real MCP servers written with the SDK (tests/mcp/server_script.py), over
stdio (a subprocess per connection) and Streamable HTTP (a subprocess serving 127.0.0.1 on a
free port). Every test here needs the ``mcp`` extra and is skipped, saying so, without it."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="the 'mcp' extra is not installed (pip install 'flowdesk[mcp]')")

SCRIPT = str(Path(__file__).with_name("server_script.py"))


def stdio_server(pid_file: Path | None = None, **env: str) -> dict:
    """A workflow's ``mcpServers`` entry starting the test server over stdio."""
    extra = dict(env)
    if pid_file is not None:
        extra["MCP_PID_FILE"] = str(pid_file)
    return {"command": sys.executable, "args": [SCRIPT], "env": extra}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purpose
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


def wait_gone(pid: int, timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture(scope="session")
def http_server(tmp_path_factory):
    """The test server over Streamable HTTP: its ``/mcp`` URL."""
    folder = tmp_path_factory.mktemp("mcp-http")
    port_file = folder / "port"
    proc = subprocess.Popen([sys.executable, SCRIPT, "http", str(port_file)], stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not (port_file.exists() and port_file.read_text().strip()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the MCP test server over HTTP did not start")
        time.sleep(0.05)
    url = f"http://127.0.0.1:{port_file.read_text().strip()}/mcp"
    yield url
    proc.terminate()
    try:
        proc.wait(5)
    except subprocess.TimeoutExpired:
        proc.kill()


@pytest.fixture
def pid_file(tmp_path) -> Path:
    return tmp_path / "pids"


def pids(pid_file: Path) -> list[int]:
    return [int(x) for x in pid_file.read_text().split()] if pid_file.exists() else []
