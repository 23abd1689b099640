"""Without the ``mcp`` extra: a clear message naming it (the SDK hidden from a subprocess)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

_PROBE = """
import asyncio, sys
sys.modules['mcp'] = None  # as if the extra were not installed
from engine.mcp.config import McpServerConfig, McpError
from engine.mcp.pool import list_server_tools
try:
    asyncio.run(list_server_tools('x', McpServerConfig(command='true')))
except McpError as err:
    print(err)
"""


def test_a_missing_sdk_names_the_extra():
    res = subprocess.run([sys.executable, "-c", _PROBE], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert "'mcp' extra" in res.stdout and "pip install 'flowdesk[mcp]'" in res.stdout, res.stderr
