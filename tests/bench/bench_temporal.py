"""Flowdesk runs on Temporal: throughput and latency with 1 and 2 workers, overhead per node.

    python -m tests.bench.bench_temporal [--json] [--quick]

Needs the ``temporal`` extra; starts ``temporal server start-dev --headless`` (SQLite in
memory) on a free port and ``flowdesk worker`` subprocesses. A 10-agent echo chain:

* 200 runs submitted at once (``--quick``: 50), with 1 and with 2 workers: runs per second
  (first submit to last result), p50/p95 run latency (submit to result);
* one run at a time (no load): latency per node, and the overhead per node against the local
  engine running the same chain in-process (what a step costs on Temporal: a workflow task,
  an activity task and their history events on the server).
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time

from engine import EchoProvider, Run, parse_workflow
from tests.bench.common import parse_args, report
from tests.temporal.conftest import MISSING, WorkerProcess, _ready, free_port, temporal_binary

NODES = 10


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


async def _one(client, wf, queue):
    from engine.temporal.client import submit

    t0 = time.perf_counter()
    handle = await submit(client, wf, meta={"provider": "echo"}, task_queue=queue)
    result = await handle.result()
    assert result["status"] == "completed", result
    return time.perf_counter() - t0


async def _batch(address, wf, queue, count):
    from engine.temporal.client import connect

    client = await connect(address)
    await _one(client, wf, queue)  # warm the workers
    t0 = time.perf_counter()
    latencies = await asyncio.gather(*(_one(client, wf, queue) for _ in range(count)))
    wall = time.perf_counter() - t0
    latencies.sort()
    return {
        "runs": count,
        "runs_per_s": round(count / wall, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 1),
        "p95_ms": round(latencies[int(0.95 * (count - 1))] * 1000, 1),
    }


async def _sequential(address, wf, queue, count):
    from engine.temporal.client import connect

    client = await connect(address)
    await _one(client, wf, queue)
    return statistics.median([await _one(client, wf, queue) for _ in range(count)])


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
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    rows, batches = [], []
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
        for n_workers in (1, 2):
            queue = f"bench-{n_workers}"
            workers = [WorkerProcess(address, queue, concurrency=50) for _ in range(n_workers)]
            try:
                if n_workers == 1:
                    single = asyncio.run(_sequential(address, wf, queue, 5 if args.quick else 10))
                    rows.append(
                        {
                            "case": "one run at a time, 1 worker",
                            "run_ms": round(single * 1000, 1),
                            "per_node_ms": round(single * 1000 / NODES, 2),
                            "local_run_ms": round(local * 1000, 3),
                            "overhead_per_node_ms": round((single - local) * 1000 / NODES, 2),
                            "ratio_vs_local": round(single / local),
                        }
                    )
                batches.append(
                    {
                        "case": f"{count} runs at once, {n_workers} worker{'s' if n_workers > 1 else ''}",
                        **asyncio.run(_batch(address, wf, queue, count)),
                    }
                )
            finally:
                for w in workers:
                    w.stop()
    finally:
        server.terminate()
        server.wait(10)
    title = f"Flowdesk on Temporal ({NODES}-agent echo chain, dev server with SQLite, {sys.platform})"
    report(title + ": latency and overhead per node", rows, args.json)
    report(title + ": throughput", batches, args.json)


if __name__ == "__main__":
    main()
