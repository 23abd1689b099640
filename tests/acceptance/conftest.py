"""Acceptance suite set-up: the product as an outside user drives it.

Every test gets its own data and config folders; the `flowdesk` command is run as a real
subprocess (``fd(...)``), and the fake OpenAI-compatible server scripts the model's answers
and counts its requests. Nothing here imports the engine's internals.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import FakeLLMServer, Recorded, Reply, openai_plain, openai_text

ROOT = Path(__file__).resolve().parents[2]
_EXE = Path(sys.executable).with_name("flowdesk")
FLOWDESK = [str(_EXE)] if _EXE.exists() else [sys.executable, "-m", "engine.cli"]


class Done:
    """What one `flowdesk` command did: exit code, stdout, stderr."""

    def __init__(self, code: int, out: str, err: str) -> None:
        self.code, self.out, self.err = code, out, err

    def json(self) -> Any:
        """The first JSON value printed on stdout (a command may print a log after it)."""
        text = self.out.lstrip()
        value, _ = json.JSONDecoder().raw_decode(text)
        return value

    def __repr__(self) -> str:
        return f"exit {self.code}\n--- stdout\n{self.out[-4000:]}\n--- stderr\n{self.err[-4000:]}"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    (tmp_path / "work").mkdir()
    return tmp_path


@pytest.fixture
def fd(home: Path) -> Callable[..., Done]:
    env = {k: v for k, v in os.environ.items() if not k.upper().endswith("_PROXY")}
    env.pop("OPENAI_API_KEY", None)
    env.pop("OPENAI_BASE_URL", None)
    env.update(
        FLOWDESK_DATA_DIR=str(home / "data"),
        FLOWDESK_CONFIG_DIR=str(home / "config"),
        PYTHONPATH=str(ROOT),
    )

    def run(
        *args: str, stdin: str | None = None, timeout: float = 120, cwd: Path | None = None, typed: str | None = None
    ) -> Done:
        """``typed``: the command's stdin is a terminal on which the user types this (a
        confirmation); else ``stdin`` is piped in (empty by default)."""
        if typed is not None:
            return on_a_terminal(args, typed, cwd or home / "work", timeout)
        res = subprocess.run(
            [*FLOWDESK, *args],
            cwd=cwd or home / "work",
            env=env,
            input=stdin if stdin is not None else "",
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return Done(res.returncode, res.stdout, res.stderr)

    def on_a_terminal(args: tuple[str, ...], typed: str, cwd: Path, timeout: float) -> Done:
        master, slave = pty.openpty()
        try:
            proc = subprocess.Popen(
                [*FLOWDESK, *args],
                cwd=cwd,
                env=env,
                stdin=slave,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            os.write(master, typed.encode())
            out, err = proc.communicate(timeout=timeout)
        finally:
            os.close(slave)
            os.close(master)
        return Done(proc.returncode, out, err)

    return run


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:
        yield s


def answer(rec: Recorded, text: str, *, usage: tuple[int, int] = (11, 7), delay: float = 0.0) -> Reply:
    """``text`` as the request asked for it (streamed or whole)."""
    body = rec.json or {}
    name = str(body.get("model") or "fake-model")  # a real server names the model that answered
    reply = (
        openai_text(text, usage=usage, model=name)
        if body.get("stream")
        else openai_plain(text, usage=usage, model=name)
    )
    reply.delay = delay
    return reply


def chats(server: FakeLLMServer) -> list[Recorded]:
    """The chat-completion requests the server received (model listings aside)."""
    return [r for r in server.requests if r.method == "POST" and r.path.endswith("/chat/completions")]


def model_args(server: FakeLLMServer) -> list[str]:
    return ["--provider", "openai", "--base-url", server.base_url]


def user_text(rec: Recorded) -> str:
    return "\n".join(m.get("content") or "" for m in (rec.json or {}).get("messages", []) if m.get("role") == "user")


# ----------------------------------------------------------------------------- flow builders
def link(source: str, target: str, handle: str = "output") -> dict[str, str]:
    return {"source": source, "target": target, "sourceHandle": handle, "targetHandle": "input"}


def start(variables: list[dict[str, Any]] | None = None, initial: str = "") -> dict[str, Any]:
    data: dict[str, Any] = {"initialInput": initial}
    if variables is not None:
        data["variables"] = variables
    return {"id": "start", "type": "start", "x": 0, "y": 0, "data": data}


def code_node(node_id: str, code: str, inputs: dict[str, str]) -> dict[str, Any]:
    return {
        "id": node_id,
        "type": "code",
        "x": 250,
        "y": 0,
        "data": {"language": "python", "code": code, "inputs": inputs},
    }


def agent_node(node_id: str, system: str, user: str = "", **tools: Any) -> dict[str, Any]:
    return {
        "id": node_id,
        "type": "agent",
        "x": 500,
        "y": 0,
        "data": {
            "agentName": node_id.capitalize(),
            "systemPrompt": system,
            "userPrompt": user,
            "model": "gpt-4o-mini",
            "tools": {"web_search": False, "subagents": False, **tools},
        },
    }


def code_flow(
    flow_id: str,
    code: str,
    variables: list[dict[str, Any]],
    *,
    name: str | None = None,
    description: str = "",
    triggers: list[Any] | None = None,
    **top: Any,
) -> dict[str, Any]:
    """A deterministic library flow: Start, then one Python code node (no model at all)."""
    flow: dict[str, Any] = {
        "id": flow_id,
        "name": name or flow_id.capitalize(),
        "description": description,
        "nodes": [
            start(variables),
            code_node("say", code, {v["name"]: "{{" + v["name"] + "}}" for v in variables} or {"text": "{{input}}"}),
        ],
        "connections": [link("start", "say")],
    }
    if triggers is not None:
        flow["triggers"] = triggers
    flow.update(top)
    return flow


def write(path: Path, value: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value, indent=2), encoding="utf-8")
    return path
