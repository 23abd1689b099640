"""Benchmark: the code sandboxes (issue 33).

* Python in pydantic-monty: a fresh worker (the pool of one a ``code`` step opens, its first
  snippet, the pool closed: what a step pays) and a warm call (one more snippet in an open
  session: what monty itself costs), with the worker's resident memory;
* JavaScript/TypeScript in Deno: a whole ``run_deno`` call (process start, the harness, the
  script, the process reaped), JavaScript and TypeScript, plus one bridged api call's round
  trip inside a script;
* a ``code`` step in a run (Start → code), both languages, against a run of Start alone.

Run: ``python -m tests.bench.bench_code [--json] [--quick]``.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

from engine import EchoProvider, Run, parse_workflow
from engine.code.deno import run_deno
from engine.code.monty import run_python
from tests.bench.common import parse_args, report


def _median_ms(fn: Any, repeat: int) -> float:
    async def timed() -> float:
        t0 = time.perf_counter()
        await fn()
        return (time.perf_counter() - t0) * 1000

    asyncio.run(fn())  # warm-up (Deno's transpile cache, imports)
    return statistics.median(asyncio.run(timed()) for _ in range(repeat))


def _rss_mb(pid: int | None) -> float | None:
    if not pid:
        return None
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return None


def bench_monty(repeat: int) -> list[dict[str, Any]]:
    import pydantic_monty as pm

    fresh = _median_ms(lambda: run_python("sum(range(100))"), repeat)

    async def warm() -> tuple[float, float | None]:
        async with pm.AsyncMonty(min_processes=1, max_processes=1) as pool:
            async with pool.checkout() as session:
                await session.feed_run("1")
                times = []
                for _ in range(max(20, repeat * 10)):
                    t0 = time.perf_counter()
                    await session.feed_run("sum(range(100))")
                    times.append((time.perf_counter() - t0) * 1000)
                return statistics.median(times), _rss_mb(session.worker_pid)

    warm_ms, rss = asyncio.run(warm())
    return [
        {"sandbox": "monty", "what": "fresh worker + snippet (a step)", "ms": fresh, "rss MB": None},
        {"sandbox": "monty", "what": "warm call in a session", "ms": warm_ms, "rss MB": rss},
    ]


def bench_deno(repeat: int) -> list[dict[str, Any]]:
    source = "async function execute(api) { return 1 + 1; }"
    js = _median_ms(lambda: run_deno(source, typescript=False), repeat)
    ts = _median_ms(lambda: run_deno("async function execute(api: unknown): Promise<number> { return 2; }"), repeat)
    calls = 50

    async def ping() -> int:
        return 1

    looped = f"async function execute(api) {{ let n = 0; for (let i = 0; i < {calls}; i++) n += await api.ping(); return n; }}"
    with_calls = _median_ms(lambda: run_deno(looped, api_methods={"ping": ping}, typescript=False), repeat)
    return [
        {"sandbox": "deno", "what": "run_deno, JavaScript (process per call)", "ms": js, "rss MB": None},
        {"sandbox": "deno", "what": "run_deno, TypeScript", "ms": ts, "rss MB": None},
        {"sandbox": "deno", "what": "one api call round trip", "ms": (with_calls - js) / calls, "rss MB": None},
    ]


def bench_steps(repeat: int) -> list[dict[str, Any]]:
    def wf(extra: list[dict[str, Any]]) -> Any:
        nodes = [{"id": "s", "type": "start", "data": {}}] + extra
        links = [{"source": "s", "target": n["id"], "sourceHandle": "output", "targetHandle": "input"} for n in extra]
        return parse_workflow({"nodes": nodes, "connections": links})

    def timed(workflow: Any) -> float:
        async def go() -> None:
            await Run(workflow, EchoProvider(), keep_events=False).start()

        return _median_ms(go, repeat)

    base = timed(wf([]))
    rows = [{"sandbox": "-", "what": "run of Start alone", "ms": base, "rss MB": None}]
    for language, code in (("python", "1 + 1"), ("javascript", "return 1 + 1;")):
        ms = timed(wf([{"id": "c", "type": "code", "data": {"language": language, "code": code}}]))
        rows.append({"sandbox": language, "what": "run of Start → code", "ms": ms, "rss MB": None})
    return rows


def main() -> None:
    args = parse_args(__doc__ or "")
    repeat = 3 if args.quick else 9
    rows = bench_monty(repeat) + bench_deno(repeat) + bench_steps(repeat)
    report("Code sandboxes (median ms)", rows, args.json)


if __name__ == "__main__":
    main()
