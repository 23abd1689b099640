"""The command line's cost per node, whole process, against the engine's own (issue 32).

    python -m tests.bench.bench_cli [--json] [--quick]

* ``flowdesk run --jsonl --no-store --provider echo`` of a chain of 2,000 and of 10,000
  agents, a separate process each time (stdout read through a pipe, as a reader of the
  lines would): microseconds per extra node, ``(t(10,000) - t(2,000)) / 8,000``, so the
  start-up (interpreter, imports, argument parsing) cancels out and what is left is what
  each node costs: loading and validating it, running it, printing its four lines, and
  the process's exit. In wall time and in the process's CPU time (user + system: on a
  shared machine the wall time also holds other work).
* The engine alone, the same chains in this process (``Run`` with the echo provider, its
  events appended to a list, as ``bench_engine`` runs it): the same slope.

The two are measured in alternation (CLI, engine, CLI, engine, ...) and the medians of
each compared, so a slow spell of the machine weighs on both. Target: the CLI <= 20 µs per
extra node on a quiet machine, where the engine pays about 5: a ratio of about 4.
``Task µs/node`` is the machine's yardstick, measured in the same alternation: one bare
``asyncio`` Task awaited per node (``bench_engine``'s floor); ``cli in Tasks`` is the CLI's
slope in those units, comparable between machines whose speed differs. (Where the target
was set, the engine paid ~5 µs a node; its chain costs 1.3-1.5 Tasks a node on any machine
here, so a Task cost ~3.5 µs there and 20 µs was ~5.5 Tasks: an estimate, not a target.)
``phases`` says where the CLI's time goes, in this process (CPU time per extra node):
loading the file, validating it, the run with the printer writing ``--jsonl`` lines to
/dev/null, and that run's printing alone (the run with the printer minus without).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from engine import EchoProvider, Run, make_resolver, validate
from engine.cli.files import load_any
from engine.cli.printer import FRAME, Printer
from tests.bench.bench_engine import chain_workflow
from tests.bench.common import parse_args, report

ROOT = Path(__file__).resolve().parents[2]
SMALL, BIG = 2_000, 10_000


def chain_file(folder: str, n: int) -> str:
    """A chain of ``n`` agents after a start, as a workflow file in ``folder``."""
    nodes: list[dict[str, Any]] = [{"id": "s", "type": "start", "data": {"initialInput": "x"}}]
    nodes += [{"id": f"a{i}", "type": "agent", "data": {"agentName": f"Agent {i}", "model": "m"}} for i in range(n)]
    conns = [{"source": "s", "target": "a0"}] + [{"source": f"a{i}", "target": f"a{i + 1}"} for i in range(n - 1)]
    path = os.path.join(folder, f"chain{n}.flow.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"name": f"chain {n}", "nodes": nodes, "connections": conns}, f)
    return path


def _children_cpu() -> float:
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def cli_once(path: str, data: str) -> tuple[float, float]:
    """Wall and CPU seconds of one ``flowdesk run --jsonl --no-store`` of ``path``."""
    env = {**os.environ, "FLOWDESK_DATA_DIR": data, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "engine.cli", "run", path, "--provider", "echo", "--jsonl", "--no-store"]
    t0, c0 = time.perf_counter(), _children_cpu()
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - c0
    if proc.returncode != 0:
        raise SystemExit(f"flowdesk run failed: {proc.stderr.decode(errors='replace')[-500:]}")
    return wall, cpu


def engine_once(wf: Any) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``wf`` in this process (the echo provider, events kept in a list)."""
    events: list[Any] = []
    run = Run(wf, EchoProvider(), on_event=events.append, keep_events=False, check=False)
    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    asyncio.run(run.start())
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert run.status == "completed", run.status
    return wall, cpu


async def _noop() -> None:
    return None


def task_once(n: int) -> tuple[float, float]:
    """Wall and CPU seconds of ``n`` bare asyncio Tasks awaited one after the other: the floor
    ``bench_engine`` compares the engine's chain with, measured here as the machine's yardstick."""

    async def tasks() -> None:
        loop = asyncio.get_running_loop()
        for _ in range(n):
            await loop.create_task(_noop())

    gc.collect()
    t0, c0 = time.perf_counter(), time.process_time()
    asyncio.run(tasks())
    return time.perf_counter() - t0, time.process_time() - c0


def slopes(repeat: int) -> list[dict[str, Any]]:
    cli: dict[int, list[tuple[float, float]]] = {SMALL: [], BIG: []}
    eng: dict[int, list[tuple[float, float]]] = {SMALL: [], BIG: []}
    task: dict[int, list[tuple[float, float]]] = {SMALL: [], BIG: []}
    workflows = {n: chain_workflow(n) for n in cli}
    with tempfile.TemporaryDirectory() as tmp:
        files = {n: chain_file(tmp, n) for n in cli}
        cli_once(files[SMALL], tmp)  # warm: compiled modules, the file cache
        engine_once(workflows[SMALL])
        for _ in range(repeat):
            for n in (SMALL, BIG):
                cli[n].append(cli_once(files[n], tmp))
                eng[n].append(engine_once(workflows[n]))
                task[n].append(task_once(n))
    rows = []
    for i, what in enumerate(("wall", "cpu")):

        def per_node(times: dict[int, list[tuple[float, float]]], i: int = i) -> float:
            small = statistics.median(t[i] for t in times[SMALL])
            big = statistics.median(t[i] for t in times[BIG])
            return (big - small) / (BIG - SMALL) * 1e6

        c, e, t = per_node(cli), per_node(eng), per_node(task)
        rows.append(
            {
                "time": what,
                f"cli n={SMALL} s": statistics.median(t[i] for t in cli[SMALL]),
                f"cli n={BIG} s": statistics.median(t[i] for t in cli[BIG]),
                "cli µs/extra node": c,
                "engine µs/extra node": e,
                "ratio cli/engine": c / e if e > 0 else None,
                "Task µs/node": t,
                "cli in Tasks": c / t if t > 0 else None,
            }
        )
    return rows


def phases(repeat: int) -> list[dict[str, Any]]:
    """CPU µs per extra node of the CLI's parts, in this process (medians)."""
    parts: dict[str, dict[int, list[float]]] = {}

    def timed(name: str, n: int, fn: Any) -> Any:
        gc.collect()
        c0 = time.process_time()
        out = fn()
        parts.setdefault(name, {SMALL: [], BIG: []})[n].append(time.process_time() - c0)
        return out

    with tempfile.TemporaryDirectory() as tmp, open(os.devnull, "w", encoding="utf-8") as devnull:
        files = {n: chain_file(tmp, n) for n in (SMALL, BIG)}
        for _ in range(repeat):
            for n, path in files.items():
                wf = timed("load", n, lambda path=path: load_any(path))
                # as `flowdesk run` validates: the errors alone
                timed("validate", n, lambda wf=wf, path=path: validate(wf, path=os.path.abspath(path), warnings=False))
                resolver = make_resolver("echo")

                def run_printed(wf: Any = wf, resolver: Any = resolver, printed: bool = True) -> None:
                    run = Run(wf, resolver, keep_events=False, check=False, delta_interval=FRAME)
                    printer = Printer(devnull, wf, jsonl=True)
                    if printed:
                        printer.follow(run)
                    asyncio.run(run.start())
                    printer.finish()

                timed("run, printed", n, run_printed)
                timed("run, not printed", n, lambda f=run_printed: f(printed=False))
    row = {}
    for name, times in parts.items():
        row[name] = (statistics.median(times[BIG]) - statistics.median(times[SMALL])) / (BIG - SMALL) * 1e6
    row["printing"] = row["run, printed"] - row["run, not printed"]
    return [row]


def main() -> int:
    args = parse_args(__doc__ or "")
    repeat = 3 if args.quick else 7
    report(
        f"flowdesk run --jsonl --no-store, chain of agents: per extra node ({SMALL:,} -> {BIG:,}), "
        f"whole process, vs the engine in this process (target: cli <= 20 µs, about 4x the engine)",
        slopes(repeat),
        args.json,
    )
    report("Where the CLI's time goes (CPU µs per extra node, in this process)", phases(max(2, repeat // 2)), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
