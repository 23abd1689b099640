"""Engine overhead: nodes doing no work, events emitted and collected as in a real run.

    python -m tests.bench.bench_engine [--json] [--quick]

The runs are validated once beforehand, as the CLI and the editor do before they start a
run (``Run(check=False)``); validation has its own figures in ``bench_validate``.

* chain of N agents (N = 100, 1,000, 10,000): µs per node, and the ratio to one
  ``asyncio.Task`` per node awaited in sequence (targets: ≤ 1.5×; per-node cost at
  10,000 within 1.3× of 100);
* the same chain with the run store recording every event, each event shown once committed
  (the recorder's ``on_commit``, as the CLI prints and the window paints) (target ≤ 4× the baseline);
* fan-out from start to N agents: µs per branch, ratio to ``asyncio.gather`` of N
  coroutines (target ≤ 3×);
* approval pause → snapshot → restore → resume, repeated: µs per cycle (target < 100 µs).
"""

from __future__ import annotations

import asyncio
import gc
import statistics
import time
from typing import Any

from engine import EchoProvider, Run, parse_workflow
from tests.bench.common import parse_args, report


def chain_workflow(n: int):
    nodes: list[dict[str, Any]] = [{"id": "s", "type": "start", "data": {"initialInput": "x"}}]
    nodes += [{"id": f"a{i}", "type": "agent", "data": {"agentName": f"A{i}", "model": "m"}} for i in range(n)]
    conns = [{"source": "s", "target": "a0"}] + [{"source": f"a{i}", "target": f"a{i + 1}"} for i in range(n - 1)]
    return parse_workflow({"nodes": nodes, "connections": conns})


def fanout_workflow(n: int):
    nodes: list[dict[str, Any]] = [{"id": "s", "type": "start", "data": {"initialInput": "x"}}]
    nodes += [{"id": f"a{i}", "type": "agent", "data": {"agentName": f"A{i}", "model": "m"}} for i in range(n)]
    conns = [{"source": "s", "target": f"a{i}"} for i in range(n)]
    return parse_workflow({"nodes": nodes, "connections": conns})


def approval_workflow():
    return parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "x"}},
                {"id": "ap", "type": "approval", "data": {"prompt": "ok?"}},
                {"id": "a", "type": "agent", "data": {"model": "m"}},
            ],
            "connections": [
                {"source": "s", "target": "ap"},
                {"source": "ap", "target": "a", "sourceHandle": "approve"},
            ],
        }
    )


async def _noop() -> None:
    return None


def _pairs(n: int, repeat: int) -> int:
    """How many pairs to time: ``repeat``, or more for small graphs, whose runs take a
    millisecond or less and so are at the mercy of the machine's hiccups."""
    return max(repeat, 3_000 // n)


def _paired(baseline_fn, engine_fn, repeat: int) -> tuple[float, float, float]:
    """Median seconds of the baseline and of the engine, and the median of their per-pair ratios.

    The two are measured in alternation in one event loop (baseline, engine, baseline, ...),
    so a slow spell of the shared machine weighs on both sides of a ratio alike. The first
    pair warms caches and is dropped.
    """

    async def body() -> list[tuple[float, float]]:
        out = []
        for _ in range(repeat + 1):
            pair = []
            for fn in (baseline_fn, engine_fn):
                gc.collect()
                t0 = time.perf_counter()
                await fn()
                pair.append(time.perf_counter() - t0)
            out.append((pair[0], pair[1]))
        return out[1:]

    pairs = asyncio.run(body())
    return (
        statistics.median(b for b, _ in pairs),
        statistics.median(e for _, e in pairs),
        statistics.median(e / b for b, e in pairs),
    )


def bench_chain(n: int, repeat: int, store_factory=None) -> dict[str, Any]:
    wf = chain_workflow(n)
    provider = EchoProvider()

    async def baseline() -> None:
        loop = asyncio.get_running_loop()
        for _ in range(n):
            await loop.create_task(_noop())

    async def engine_run() -> None:
        events: list = []
        if store_factory:  # shown once committed, as the CLI prints and the window paints
            run = Run(wf, provider, keep_events=False, check=False)
            recorder = store_factory(run, events)
        else:
            run = Run(wf, provider, on_event=events.append, keep_events=False, check=False)
            recorder = None
        await run.start()
        assert run.status == "completed"
        if recorder is not None:
            recorder.settled()  # the last batch committed, as at the end of a real run
            recorder.close()

    base, eng, ratio = _paired(baseline, engine_run, _pairs(n, repeat))
    return {"N": n, "engine µs/node": eng / n * 1e6, "Task/node µs": base / n * 1e6, "ratio": ratio}


def bench_chain_with_store(n: int, repeat: int) -> dict[str, Any]:
    """The chain with every event recorded in a run store (a temporary database)."""
    import tempfile

    from engine.store import RunRecorder, RunStore

    with tempfile.TemporaryDirectory() as d:
        store = RunStore(f"{d}/runs.db")
        row = bench_chain(
            n,
            repeat,
            store_factory=lambda run, shown: RunRecorder(
                store, run, on_commit=lambda evs, _recorded: shown.extend(evs)
            ),
        )
        stored = store.count_runs()
        store.close()
    row["runs stored"] = stored
    return row


def bench_fanout(n: int, repeat: int) -> dict[str, Any]:
    wf = fanout_workflow(n)
    provider = EchoProvider()

    async def baseline() -> None:
        await asyncio.gather(*(_noop() for _ in range(n)))

    async def engine_run() -> None:
        events: list = []
        run = Run(wf, provider, on_event=events.append, keep_events=False, check=False)
        await run.start()

    base, eng, ratio = _paired(baseline, engine_run, _pairs(n, repeat))
    return {"N": n, "engine µs/branch": eng / n * 1e6, "gather µs/coro": base / n * 1e6, "ratio": ratio}


def bench_pause_cycle(cycles: int) -> dict[str, Any]:
    wf = approval_workflow()
    provider = EchoProvider()

    async def body() -> float:
        run = Run(wf, provider, keep_events=False, check=False)
        await run.start()
        t0 = time.perf_counter()
        for _ in range(cycles):
            snap = run.snapshot(include_workflow=False)
            restored = Run.restore(snap, provider, workflow=wf, keep_events=False, check=False)
            await restored.resume("approve")
            # back to a paused run for the next cycle
            run = Run(wf, provider, keep_events=False, check=False)
            await run.start()
        return (time.perf_counter() - t0) / cycles

    async def pause_only() -> float:
        t0 = time.perf_counter()
        for _ in range(cycles):
            run = Run(wf, provider, keep_events=False, check=False)
            await run.start()
        return (time.perf_counter() - t0) / cycles

    full = statistics.median(asyncio.run(body()) for _ in range(3))
    start_only = statistics.median(asyncio.run(pause_only()) for _ in range(3))
    return {"cycle µs (snapshot+restore+resume)": (full - start_only) * 1e6, "start-to-pause µs": start_only * 1e6}


def main() -> None:
    args = parse_args(__doc__ or "")
    repeat = 3 if args.quick else 5
    sizes = (100, 1_000) if args.quick else (100, 1_000, 10_000)
    chain = [bench_chain(n, repeat) for n in sizes]
    growth = chain[-1]["engine µs/node"] / chain[0]["engine µs/node"]
    stored = [bench_chain_with_store(n, repeat) for n in sizes]
    fan = [bench_fanout(n, repeat) for n in sizes]
    cycle = bench_pause_cycle(200 if args.quick else 1000)
    if args.json:
        import json

        print(
            json.dumps(
                {
                    "chain": chain,
                    f"chain_growth_{sizes[-1]}_vs_{sizes[0]}": growth,
                    "chain_with_store": stored,
                    "fanout": fan,
                    "pause_cycle": cycle,
                },
                indent=2,
            )
        )
        return
    report("Chain of N agents (instant provider), vs one asyncio.Task per node", chain, False)
    print(f"per-node cost at N={sizes[-1]} / N={sizes[0]}: {growth:.2f}× (target ≤ 1.3×)")
    report("Chain of N agents with the run store recording every event (target ≤ 4×)", stored, False)
    report("Fan-out from start to N agents, vs asyncio.gather of N coroutines", fan, False)
    report("Approval pause → snapshot → restore → resume", [cycle], False)


if __name__ == "__main__":
    main()
