"""Run console responsiveness under a burst of events.

    python -m tests.bench.bench_console [--json] [--quick]

Two bursts go through the console's real path (engine listener → RunBridge buffer →
50 ms flush → log model, subagent trace and node states → QListView), on a qasync loop
with the console shown (offscreen unless a display is set):

* ``synthetic``: 20,000 events pushed into the bridge's listener from an asyncio task in
  chunks of 500, yielding between chunks, as a very fast engine would;
* ``paced``: the same, one chunk every 25 ms (about one second of sustained traffic, so
  the 50 ms flush runs about twenty times while events keep coming);
* ``engine``: a real run of 200 agents whose provider streams 100 deltas each with
  ``delta_interval=0`` (every delta is an event): about 20,800 events.

Printed per burst: events, seconds until the console showed them all, events/second
ingested, the number of flushes (view updates), and the longest event-loop stall while
doing it, measured by a QTimer ticking every 5 ms that records the largest gap between
two ticks (the GUI cannot repaint or take input for that long).
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from engine import AgentInvocation, LLMResult, ProviderContext, RunEvent, parse_workflow  # noqa: E402
from tests.bench.common import parse_args, report  # noqa: E402

N_EVENTS = 20_000


class StallMeter:
    """The largest gap between ticks of a 5 ms QTimer."""

    def __init__(self) -> None:
        from PySide6.QtCore import QTimer

        self.max_gap = 0.0
        self._last = time.perf_counter()
        self.timer = QTimer()
        self.timer.setInterval(5)
        self.timer.timeout.connect(self._tick)

    def _tick(self) -> None:
        now = time.perf_counter()
        self.max_gap = max(self.max_gap, now - self._last)
        self._last = now

    def start(self) -> None:
        self.max_gap = 0.0
        self._last = time.perf_counter()
        self.timer.start()

    def stop(self) -> float:
        self.timer.stop()
        self._tick()
        return self.max_gap


class Streamer:
    name = "bench-streamer"

    def __init__(self, deltas: int) -> None:
        self.deltas = deltas

    async def complete(self, inv: AgentInvocation, ctx: ProviderContext) -> LLMResult:
        for i in range(self.deltas):
            ctx.delta(f"w{i} ")
            if i % 25 == 24:
                await asyncio.sleep(0)
        return LLMResult(text="done", usage={"prompt_tokens": 1, "completion_tokens": self.deltas})


def chain(n: int):
    nodes: list[dict[str, Any]] = [{"id": "s", "type": "start", "data": {"initialInput": "x"}}]
    nodes += [{"id": f"a{i}", "type": "agent", "data": {"agentName": f"Agent {i}", "model": "m"}} for i in range(n)]
    conns = [{"source": "s", "target": "a0"}] + [{"source": f"a{i}", "target": f"a{i + 1}"} for i in range(n - 1)]
    return parse_workflow({"name": "bench", "nodes": nodes, "connections": conns})


def synthetic_events(n: int) -> list[RunEvent]:
    out = [RunEvent("system", "run_status", "running")]
    i = 0
    while len(out) < n - 1:
        nid = f"a{i % 200}"
        out.append(RunEvent(nid, "step_start", f"Agent {i % 200}"))
        out.append(RunEvent(nid, "start_prompt", f"prompt {i}\nsecond line"))
        out += [RunEvent(nid, "llm_delta", f"token{j} ") for j in range(40)]
        out.append(
            RunEvent(nid, "llm_response", f"answer {i}", extra={"usage": {"prompt_tokens": 3, "completion_tokens": 40}})
        )
        i += 1
    del out[n - 1 :]
    out.append(RunEvent("system", "run_status", "completed"))
    return out


def main() -> int:
    args = parse_args(__doc__ or "")
    import qasync
    from PySide6.QtWidgets import QApplication

    from editor.run.console import RunConsole

    app = QApplication.instance() or QApplication(sys.argv[:1])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    n = 5_000 if args.quick else N_EVENTS
    rows: list[dict[str, Any]] = []

    async def run_synthetic(label: str = "synthetic", pause: float = 0.0) -> None:
        console = RunConsole()
        console.resize(1100, 700)
        console.show()
        bridge = console.bridge
        wf = chain(200)
        console.set_workflow(wf)
        bridge.run_state.reset(wf)
        events = synthetic_events(n)
        flushes = 0

        def count(_batch: list) -> None:
            nonlocal flushes
            flushes += 1

        bridge.events_batched.connect(count)
        meter = StallMeter()
        await asyncio.sleep(0.2)
        meter.start()
        t0 = time.perf_counter()
        for i in range(0, len(events), 500):
            for ev in events[i : i + 500]:
                bridge._on_event(ev)  # the engine's listener callback
            await asyncio.sleep(pause)
        while len(console.model.raw_events) < len(events):
            await asyncio.sleep(0.001)
        elapsed = time.perf_counter() - t0
        stall = meter.stop()
        assert console.model.raw_events[-1].content == "completed"
        rows.append(
            {
                "burst": label,
                "events": len(events),
                "rows_shown": console.proxy.rowCount(),
                "seconds": elapsed,
                "events_per_s": len(events) / elapsed,
                "flushes": flushes,
                "max_stall_ms": stall * 1000,
            }
        )
        console.close()

    async def run_engine() -> None:
        console = RunConsole()
        console.resize(1100, 700)
        console.show()
        agents = max(10, n // 100)
        console.bridge.delta_interval = 0.0
        console.set_workflow(chain(agents))
        console.set_resolver_factory(lambda: Streamer(100))
        flushes = 0

        def count(_batch: list) -> None:
            nonlocal flushes
            flushes += 1

        console.bridge.events_batched.connect(count)
        finished = asyncio.get_running_loop().create_future()
        console.run_finished.connect(lambda s: finished.done() or finished.set_result(s))
        meter = StallMeter()
        await asyncio.sleep(0.2)
        meter.start()
        t0 = time.perf_counter()
        console.start_run()
        status = await finished
        elapsed = time.perf_counter() - t0
        stall = meter.stop()
        assert status == "completed", status
        total = len(console.model.raw_events)
        rows.append(
            {
                "burst": "engine",
                "events": total,
                "rows_shown": console.proxy.rowCount(),
                "seconds": elapsed,
                "events_per_s": total / elapsed,
                "flushes": flushes,
                "max_stall_ms": stall * 1000,
            }
        )
        console.close()

    async def body() -> None:
        await run_synthetic()
        await run_synthetic("paced (500 per 25 ms)", 0.025)
        await run_engine()

    with loop:
        loop.run_until_complete(body())
    report("Run console: burst of events through the bridge's 50 ms batching", rows, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
