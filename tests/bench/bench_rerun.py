"""Benchmark: re-running without paying twice (issue 18).

* the chain of N instant agents with the run store recording every event, without and with
  the recorded node executions (the key hashed per step, the output stored once): µs per node
  and the ratio to one ``asyncio.Task`` per node (the README's store target: ≤ 4×);
* a run from the last node of a 1,000-node chain, every upstream node reused from the
  previous run (``cache_hit``), against a full run of the same chain, both recorded.

Run: ``python -m tests.bench.bench_rerun [--json] [--quick]``.
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from typing import Any

from engine import EchoProvider, Run
from engine.store import RunRecorder, RunStore
from tests.bench.bench_engine import _noop, _paired, _pairs, chain_workflow
from tests.bench.common import parse_args, report


def bench_recording(n: int, repeat: int) -> dict[str, Any]:
    wf = chain_workflow(n)
    provider = EchoProvider()
    row: dict[str, Any] = {"N": n}
    with tempfile.TemporaryDirectory() as d:
        store = RunStore(f"{d}/runs.db")
        for label, record in (("events only", False), ("events + executions", True)):

            async def baseline() -> None:
                loop = asyncio.get_running_loop()
                for _ in range(n):
                    await loop.create_task(_noop())

            async def engine_run(record: bool = record) -> None:
                run = Run(wf, provider, keep_events=False, check=False)
                rec = RunRecorder(store, run, record_executions=record)
                await run.start()
                rec.settled()
                rec.close()

            _base, eng, ratio = _paired(baseline, engine_run, _pairs(n, repeat))
            row[f"{label} µs/node"] = eng / n * 1e6
            row[f"{label} ratio"] = ratio
        row["recorded outputs"] = store.cache_stats()["entries"]
        store.close()
    row["recording cost"] = row["events + executions µs/node"] / row["events only µs/node"]
    return row


def bench_run_from_last(n: int, repeat: int) -> dict[str, Any]:
    wf = chain_workflow(n)
    provider = EchoProvider()
    last = f"a{n - 1}"
    with tempfile.TemporaryDirectory() as d:
        store = RunStore(f"{d}/runs.db")

        def full() -> Run:
            run = Run(wf, provider, keep_events=False, check=False)
            rec = RunRecorder(store, run)
            asyncio.run(run.start())
            rec.settled()
            rec.close()
            return run

        first = full()
        fulls, froms, hits = [], [], 0
        for _ in range(repeat):
            t0 = time.perf_counter()
            full()
            fulls.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            events: list = []
            run = Run(
                wf,
                provider,
                keep_events=False,
                check=False,
                reuse_from=first.run_id,
                start_at=last,
                store=store,
                on_event=events.append,
            )
            rec = RunRecorder(store, run)
            asyncio.run(run.start())
            rec.settled()
            rec.close()
            froms.append(time.perf_counter() - t0)
            hits = sum(1 for e in events if e.type == "cache_hit")
            assert run.status == "completed"
        store.close()
    fulls.sort()
    froms.sort()
    f, r = fulls[len(fulls) // 2], froms[len(froms) // 2]
    return {
        "N": n,
        "full run ms": f * 1e3,
        "run from last node ms": r * 1e3,
        "ratio": r / f,
        "cache hits": hits,
        "model calls saved": n - 1,
    }


def main() -> None:
    args = parse_args(__doc__ or "")
    sizes = [100, 1_000] if args.quick else [100, 1_000, 10_000]
    repeat = 3 if args.quick else 7
    rec = [bench_recording(n, repeat) for n in sizes]
    frm = [bench_run_from_last(1_000, repeat)]
    if args.json:
        import json

        print(json.dumps({"recording": rec, "run_from_last": frm}, indent=2))
        return
    report("Chain with the run store: events only vs events + recorded executions (store target ≤ 4×)", rec, False)
    report(
        "Run from the last node of a 1,000-node chain (all upstream reused) vs a full run (instant provider)",
        frm,
        False,
    )


if __name__ == "__main__":
    main()
