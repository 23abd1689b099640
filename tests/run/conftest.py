"""Fixtures for the run console tests: asyncio on the Qt event loop (qasync), the review
and research samples, and a console with the echo provider.

The qasync loop is installed as the running loop of the main thread for the duration of
a test (as ``QEventLoop.run_forever`` would while the app runs), and removed after, so
pytest-asyncio's own loops in other test folders are not disturbed. Tests drive it with
``qtbot.waitUntil`` / ``waitSignal``: every Qt event processed runs the due asyncio work.
"""

from __future__ import annotations

import asyncio
import gc
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine import EchoProvider, Workflow, load_workflow, parse_workflow
from engine.llm.registry import make_resolver

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


@pytest.fixture
def qloop(qapp) -> Iterator[asyncio.AbstractEventLoop]:
    import qasync

    old_hooks = sys.get_asyncgen_hooks()
    loop = qasync.QEventLoop(qapp, already_running=True)
    asyncio.set_event_loop(loop)
    try:
        yield loop
    finally:
        # cancel what is left, and close async generators (HTTP streams) on the loop
        pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in pending:
            t.cancel()
        closing = loop.create_task(loop.shutdown_asyncgens())
        deadline = time.monotonic() + 2
        while not (closing.done() and all(t.done() for t in pending)) and time.monotonic() < deadline:
            qapp.processEvents()
        sys.set_asyncgen_hooks(*old_hooks)
        # Not loop.stop(): with no QApplication.exec() running it would call app.exit(), which
        # makes every later QEventLoop.exec() (qtbot.waitSignal) return at once.
        loop._QEventLoop__is_running = False  # type: ignore[attr-defined]
        asyncio.events._set_running_loop(None)
        loop.close()
        asyncio.set_event_loop(None)
        # qasync's timer object (its asyncio.sleep timers) goes now, with the loop, not whenever the
        # cyclic GC next runs: that could be inside a later test's event processing, during one
        # of its own timer events (a segfault in QApplication::notify, seen after the F5 test
        # when tests/editor ran next).
        timer = loop._timer  # type: ignore[attr-defined]
        del loop
        gc.collect()
        timer.deleteLater()
        del timer
        qapp.processEvents()


@pytest.fixture
def review() -> Workflow:
    return load_workflow(SAMPLES / "review.flow.json")


@pytest.fixture
def research() -> Workflow:
    return load_workflow(SAMPLES / "research.flow.json")


@pytest.fixture
def console(qtbot, qloop):
    from editor.run.console import RunConsole

    c = RunConsole()
    c.set_resolver_factory(lambda: make_resolver("echo"))
    qtbot.addWidget(c)
    c.resize(1100, 700)
    c.show()
    yield c
    if c.bridge.is_active:
        c.cancel_run()
        qtbot.waitUntil(lambda: not c.bridge.is_busy, timeout=3000)


def parallel_approvals() -> Workflow:
    """start → draft → (ap1 → done1) and (ap2 → done2): both approvals are reached by parallel
    branches before anyone answers, so the second one is queued behind the first."""

    def agent(i: str) -> dict[str, Any]:
        return {
            "id": i,
            "type": "agent",
            "data": {"agentName": i.capitalize(), "userPrompt": f"{i}: {{{{PREVIOUS_OUTPUT}}}}", "model": "m"},
        }

    nodes = [
        {"id": "s", "type": "start", "data": {"initialInput": "go"}},
        agent("draft"),
        {"id": "ap1", "type": "approval", "data": {"prompt": "Legal sign-off?"}},
        {"id": "ap2", "type": "approval", "data": {"prompt": "Tone sign-off?"}},
        agent("done1"),
        agent("done2"),
    ]
    links = [
        ("s", "draft", "output"),
        ("draft", "ap1", "output"),
        ("draft", "ap2", "output"),
        ("ap1", "done1", "approve"),
        ("ap2", "done2", "approve"),
    ]
    return parse_workflow(
        {
            "name": "Two approvals",
            "nodes": nodes,
            "connections": [
                {"source": s, "target": t, "sourceHandle": h, "targetHandle": "input"} for s, t, h in links
            ],
        }
    )


def slow_echo(delay: float = 30.0):
    provider = EchoProvider(delay=delay)
    return lambda: provider
