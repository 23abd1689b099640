"""Shared set-up of the code sandbox tests: they need the ``code`` extra (pydantic-monty and
Deno) and skip with that reason when it is absent."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Any

import pytest

from engine import EchoProvider, Run, parse_workflow
from engine.code.deno import deno_available
from engine.code.monty import monty_available
from engine.flows.library import FlowLibrary

needs_monty = pytest.mark.skipif(
    not monty_available(), reason="the `code` extra is not installed (pip install 'flowdesk[code]'): no pydantic-monty"
)
needs_deno = pytest.mark.skipif(
    not deno_available(), reason="the `code` extra is not installed (pip install 'flowdesk[code]'): no Deno"
)


def code_node(code: str, language: str = "python", id: str = "c", **data: Any) -> dict[str, Any]:
    return {"id": id, "type": "code", "data": {"language": language, "code": code, **data}}


def workflow(*nodes: dict[str, Any], variables: list[dict[str, Any]] | None = None, **top: Any) -> Any:
    """Start → each node in turn; ``variables``: the Start node's."""
    start = {"id": "s", "type": "start", "data": {"initialInput": "hello", "variables": variables or []}}
    ids = ["s"] + [n["id"] for n in nodes]
    links = [
        {"source": a, "target": b, "sourceHandle": "output", "targetHandle": "input"} for a, b in zip(ids, ids[1:])
    ]
    return parse_workflow({"name": "test", "nodes": [start, *nodes], "connections": links, **top})


def run(wf: Any, *, library: Any = None, check: bool = True) -> Run:
    r = Run(wf, EchoProvider(), library=library or FlowLibrary([], seed=False), check=check)
    asyncio.run(r.start())
    return r


def events(r: Run, kind: str) -> list[Any]:
    return [e for e in r.events if e.type == kind]


def extra(e: Any) -> dict[str, Any]:
    return e.extra or {}


def process_gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists() or "zombie" in Path(f"/proc/{pid}/status").read_text().lower()


def children_left(before: set[int], within: float = 3.0) -> set[int]:
    """The children beyond ``before`` still alive after ``within`` seconds at most: a worker the
    step killed as it ended may take a moment to be gone on a busy machine (seen under xdist)."""
    deadline = time.monotonic() + within
    while True:
        left = children_of_tests() - before
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def children_of_tests() -> set[int]:
    """The process ids of this test process's live children (Deno or monty workers left behind)."""
    me = str(os.getpid())
    out = set()
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            text = status.read_text()
        except OSError:
            continue
        fields = dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)
        if fields.get("PPid", "").strip() == me and "Z" not in fields.get("State", ""):
            out.add(int(status.parent.name))
    return out


@pytest.fixture
def library(tmp_path: Path) -> FlowLibrary:
    """A library with two flows: ``shout`` (id) / "createPlaylist" (name), an agent that echoes
    ``Playlist {{name}}: {{songs}}``; and ``upper``, whose result is its ``text`` in an agent."""
    folder = tmp_path / "lib"
    folder.mkdir()
    lib = FlowLibrary([folder], seed=False)
    for name, fid, prompt, variables in (
        ("createPlaylist", "shout", "Playlist {{name}}: {{songs}}", ["name", "songs"]),
        ("upper", "upper", "UP {{text}}", ["text"]),
        ("createList", "makelist", "List {{listName}}: {{items}}", ["listName", "items"]),
    ):
        doc = {
            "id": fid,
            "name": name,
            "nodes": [
                {
                    "id": "s",
                    "type": "start",
                    "data": {"variables": [{"name": v, "value": "", "type": "string"} for v in variables]},
                },
                {
                    "id": "a",
                    "type": "agent",
                    "data": {"agentName": "a", "userPrompt": prompt, "model": "m", "tools": {}},
                },
            ],
            "connections": [{"source": "s", "target": "a", "sourceHandle": "output", "targetHandle": "input"}],
        }
        lib.save(parse_workflow(doc))
    return lib
