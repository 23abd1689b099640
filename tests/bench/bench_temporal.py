"""Flowdesk runs on Temporal: latency per node and throughput, steps as activities vs. local.

    python -m tests.bench.bench_temporal [--json] [--quick]

Needs the ``temporal`` extra; starts ``temporal server start-dev --headless`` (SQLite in
memory) on a free port and ``flowdesk worker`` subprocesses. A 10-agent echo chain, run three
ways, alternated round by round on the same server and worker (medians of the rounds, and
their ratio; the machine's load average is printed with them):

* ``activities``: the run's ``localSteps: false`` (``run --temporal --no-local-steps``; the
  default before quick steps), each agent step an activity (a task on the server);
* ``default``: no option: an echo agent is quick by nature, so a local activity;
* ``local steps``: the run's ``localSteps`` option (``run --temporal --local-steps``), each
  step a local activity inside the workflow task.

For each: one run at a time (latency per node; the overhead per node against the local
engine running the same chain in-process), and 200 runs submitted at once (``--quick``: 50)
with 1 worker, then with 2: runs per second (first submit to last result), p50/p95 latency.

``BENCH_TEMPORAL_EAGER=1`` starts the server with eager activity execution
(``--dynamic-config-value system.enableActivityEagerExecution=true``; the worker asks for it by
default): the activity is handed back with the workflow task's answer instead of through the
activity task queue. Measured here it makes no difference (the worker's poll already waits).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time

from engine import EchoProvider, Run, parse_workflow
from tests.bench.common import parse_args, report
from tests.temporal.conftest import MISSING, WorkerProcess, _ready, free_port, temporal_binary

NODES = 10
EAGER = os.environ.get("BENCH_TEMPORAL_EAGER") == "1"


def chain(n: int = NODES):
    nodes = [{"id": "s", "type": "start", "data": {"initialInput": "hello"}}]
    links = []
    prev = "s"
    for i in range(n):
        nodes.append(
            {
                "id": f"a{i}",
                "type": "agent",
                "data": {"agentName": f"A{i}", "userPrompt": "{{PREVIOUS_OUTPUT}}", "model": "echo"},
            }
        )
        links.append({"id": f"c{i}", "source": prev, "target": f"a{i}", "sourceHandle": "output"})
        prev = f"a{i}"
    return parse_workflow({"name": "Chain", "nodes": nodes, "connections": links})


MODES = {"activities": {"localSteps": False}, "default": {}, "local steps": {"localSteps": True}}


async def _one(client, wf, queue, options):
    from engine.temporal.client import submit

    t0 = time.perf_counter()
    handle = await submit(client, wf, meta={"provider": "echo"}, task_queue=queue, options=options)
    result = await handle.result()
    assert result["status"] == "completed", result
    return time.perf_counter() - t0


async def _batch(address, wf, queue, count, options):
    from engine.temporal.client import connect

    client = await connect(address)
    await _one(client, wf, queue, options)  # warm the workers
    t0 = time.perf_counter()
    latencies = await asyncio.gather(*(_one(client, wf, queue, options) for _ in range(count)))
    wall = time.perf_counter() - t0
    latencies.sort()
    return {
        "runs_per_s": count / wall,
        "p50_ms": statistics.median(latencies) * 1000,
        "p95_ms": latencies[int(0.95 * (count - 1))] * 1000,
    }


async def _sequential(address, wf, queue, count, options):
    from engine.temporal.client import connect

    client = await connect(address)
    await _one(client, wf, queue, options)
    return statistics.median([await _one(client, wf, queue, options) for _ in range(count)])


def _median(rounds, key):
    return round(statistics.median(r[key] for r in rounds), 1)


async def _local(wf, count):
    times = []
    for _ in range(count):
        t0 = time.perf_counter()
        run = Run(wf, EchoProvider(), check=False)
        await run.start()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    args = parse_args(__doc__.splitlines()[0])
    if MISSING:
        print(f"skipped: {MISSING}")
        return
    count = 50 if args.quick else 200
    wf = chain()
    port = free_port()
    address = f"127.0.0.1:{port}"
    server = subprocess.Popen(
        [
            temporal_binary(),
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--port",
            str(port),
            "--http-port",
            str(free_port()),
            "--metrics-port",
            str(free_port()),
            "--log-level",
            "error",
            *(["--dynamic-config-value", "system.enableActivityEagerExecution=true"] if EAGER else []),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rows, batches = [], []
    loads = []
    try:
        deadline = time.monotonic() + 40
        while True:
            try:
                asyncio.run(asyncio.wait_for(_ready(address), 5))
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.3)
        local = asyncio.run(_local(wf, 20))
        rounds = 1 if args.quick else 2
        for n_workers in (1, 2):
            queue = f"bench-{n_workers}"
            workers = [WorkerProcess(address, queue, concurrency=50) for _ in range(n_workers)]
            seen: dict[str, list[dict]] = {mode: [] for mode in MODES}
            try:
                for _ in range(rounds):  # A/B alternated: the machine's load drifts
                    for mode, options in MODES.items():
                        loads.append(os.getloadavg()[0])
                        m = {}
                        if n_workers == 1:
                            m["run"] = asyncio.run(_sequential(address, wf, queue, 5 if args.quick else 10, options))
                        m.update(asyncio.run(_batch(address, wf, queue, count, options)))
                        seen[mode].append(m)
            finally:
                for w in workers:
                    w.stop()
            for mode in MODES:
                got = seen[mode]
                if n_workers == 1:
                    single = statistics.median(r["run"] for r in got)
                    rows.append(
                        {
                            "case": f"one run at a time, 1 worker, {mode}",
                            "run_ms": round(single * 1000, 1),
                            "per_node_ms": round(single * 1000 / NODES, 2),
                            "local_run_ms": round(local * 1000, 3),
                            "overhead_per_node_ms": round((single - local) * 1000 / NODES, 2),
                            "ratio_vs_local": round(single / local),
                        }
                    )
                batches.append(
                    {
                        "case": f"{count} runs at once, {n_workers} worker{'s' if n_workers > 1 else ''}, {mode}",
                        "runs": count,
                        "runs_per_s": _median(got, "runs_per_s"),
                        "p50_ms": _median(got, "p50_ms"),
                        "p95_ms": _median(got, "p95_ms"),
                    }
                )
            group = batches[-len(MODES) :]
            for b in group:  # how many times the runs per second of steps as activities
                base = group[0]["runs_per_s"]
                b["x_activities"] = round(b["runs_per_s"] / base, 2) if base else None
        for r in rows:  # how many times faster than steps as activities
            r["x_activities"] = round(rows[0]["run_ms"] / r["run_ms"], 2)
    finally:
        server.terminate()
        server.wait(10)
    title = f"Flowdesk on Temporal ({NODES}-agent echo chain, dev server with SQLite, {sys.platform})"
    eager = ", eager activities on" if EAGER else ""
    load = f"load average {min(loads):.1f}-{max(loads):.1f} on {os.cpu_count()} cores{eager}" if loads else ""
    report(title + ": latency and overhead per node", rows, args.json)
    report(title + f": throughput ({load}, {rounds} alternated rounds, medians)", batches, args.json)


if __name__ == "__main__":
    main()
