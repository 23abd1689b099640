"""Benchmark: load and validate a chain of N nodes (start -> agent -> ... -> agent).

Run: ``python tests/bench/bench_load_validate.py [N]`` (default 10,000). Prints the best
wall-clock and CPU time of several runs; targets are load < 300 ms and validate < 100 ms.
Not a timed test: figures depend on the machine and its load.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine import load_workflow, validate  # noqa: E402


def chain_file(folder: Path, count: int) -> Path:
    nodes = [{"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "go"}}]
    connections = []
    previous = "start"
    for i in range(count - 1):
        node_id = f"agent_{i}"
        nodes.append({"id": node_id, "type": "agent", "x": 200 * (i + 1), "y": 0,
                      "data": {"agentName": f"Step {i}", "systemPrompt": "You help.",
                               "userPrompt": "{{PREVIOUS_OUTPUT}}", "model": "gpt-4o-mini", "reasoningEffort": "low",
                               "tools": {"web_search": False, "subagents": False}}})
        connections.append({"source": previous, "target": node_id, "sourceHandle": "output", "targetHandle": "input"})
        previous = node_id
    path = folder / f"chain_{count}.flow.json"
    path.write_text(json.dumps({"nodes": nodes, "connections": connections}), encoding="utf-8")
    return path


def best_of(runs: int, action: Callable[[], object]) -> tuple[float, float]:
    """Best wall-clock and best CPU time, in milliseconds."""
    wall, cpu = [], []
    for _ in range(runs):
        w0, c0 = time.perf_counter(), time.process_time()
        action()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return 1000 * min(wall), 1000 * min(cpu)


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    with tempfile.TemporaryDirectory() as folder:
        path = chain_file(Path(folder), count)
        workflow = load_workflow(path)
        issues = validate(workflow)
        load_wall, load_cpu = best_of(7, lambda: load_workflow(path))
        val_wall, val_cpu = best_of(7, lambda: validate(workflow))
    print(f"{count} nodes, {len(workflow.connections)} links, {len(issues)} issues")
    print(f"load:     {load_wall:7.1f} ms wall, {load_cpu:7.1f} ms cpu (target < 300 ms)")
    print(f"validate: {val_wall:7.1f} ms wall, {val_cpu:7.1f} ms cpu (target < 100 ms)")


if __name__ == "__main__":
    main()
