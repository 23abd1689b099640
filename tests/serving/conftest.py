"""Helpers for the serving tests: a library folder of small flows, and ``flowdesk serve`` /
``flowdesk mcp serve`` started as real subprocesses on 127.0.0.1 (port 0: the address is read
from the line the server prints when it listens)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _start(variables: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "", "variables": variables}}


def _agent(node_id: str, prompt: str, x: int = 200, y: int = 0) -> dict[str, Any]:
    return {
        "id": node_id,
        "type": "agent",
        "x": x,
        "y": y,
        "data": {"agentName": node_id, "userPrompt": prompt, "model": "echo"},
    }


def _link(src: str, dst: str, handle: str = "output") -> dict[str, Any]:
    return {"source": src, "sourceHandle": handle, "target": dst, "targetHandle": "input"}


GREET = {
    "id": "greet",
    "name": "Greet",
    "description": "Greets someone by name.",
    "nodes": [
        _start(
            [
                {"name": "who", "type": "string", "required": True, "description": "who to greet"},
                {"name": "times", "type": "number", "value": 1},
            ]
        ),
        _agent("hello", "Hello {{who}} x{{times}}"),
    ],
    "connections": [_link("start", "hello")],
}

REVIEW = {
    "id": "review",
    "name": "Review",
    "description": "Drafts a text, waits for a sign-off, then sends it.",
    "nodes": [
        _start([{"name": "topic", "type": "string", "value": "tea"}]),
        _agent("draft", "Draft about {{topic}}"),
        {"id": "ok", "type": "approval", "x": 400, "y": 0, "data": {"prompt": "Send the draft?"}},
        _agent("send", "Sent with note [{{APPROVAL_NOTE}}]: {{PREVIOUS_OUTPUT}}", 600),
        _agent("redo", "Rejected with note [{{APPROVAL_NOTE}}]", 600, 200),
    ],
    "connections": [
        _link("start", "draft"),
        _link("draft", "ok"),
        _link("ok", "send", "approve"),
        _link("ok", "redo", "reject"),
    ],
}

SIGNED = {
    "id": "signed",
    "name": "Signed hook",
    "description": "Started by a signed webhook.",
    "webhook": {"secret": "FLOWDESK_TEST_HOOK_SECRET"},
    "nodes": [_start([{"name": "event", "type": "string", "required": True}]), _agent("log", "Got {{event}}")],
    "connections": [_link("start", "log")],
}

HOOK_SECRET = "hook-secret-for-tests"


def write_flow(folder: Path, flow: dict[str, Any], stem: str | None = None) -> Path:
    path = folder / f"{stem or flow['id']}.flow.json"
    path.write_text(json.dumps(flow), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def served_dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A library folder (greet, review, signed) and a data folder (the run history), per module."""
    root = tmp_path_factory.mktemp("serving")
    library, data = root / "library", root / "data"
    library.mkdir()
    data.mkdir()
    for flow in (GREET, REVIEW, SIGNED):
        write_flow(library, flow)
    return library, data


def env_for(data: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "FLOWDESK_DATA_DIR": str(data), "PYTHONPATH": str(ROOT), **extra}


class Served:
    """A server subprocess and the URL it printed."""

    def __init__(self, proc: subprocess.Popen[str], url: str) -> None:
        self.proc, self.url = proc, url

    def stop(self) -> str:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.stderr.read() if self.proc.stderr else ""


@contextmanager
def served(args: list[str], data: Path, **env: str) -> Iterator[Served]:
    """``flowdesk ARGS`` as a subprocess until its listening line is printed (30 s at most)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "engine.cli", *args],
        cwd=ROOT,
        env=env_for(data, **env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    server = None
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stderr.readline() if proc.stderr else ""
            found = re.search(r"http://[^\s)]+", line)
            if found and ("serving on" in line or "listening on" in line):
                server = Served(proc, found.group(0).rstrip("/"))
                break
            if not line and proc.poll() is not None:
                break
        if server is None:
            rest = proc.stderr.read() if proc.stderr and proc.poll() is not None else ""
            raise AssertionError(f"the server did not start (exit {proc.poll()}): {rest}")
        yield server
    finally:
        if server is not None:
            server.stop()
        elif proc.poll() is None:
            proc.kill()
            proc.wait()
