"""Validation and file speed on the 10,000-node graph (15,000 execution links, 500-agent
subagent forest).

    python -m tests.bench.bench_validate [--json] [--quick]

Prints milliseconds per ``validate`` (target < 100 ms), µs per ``check_connection``
during a drag (a GraphIndex built once at drag start; target < 1 ms), and load/save
of the file (target < 300 ms each). Baseline: ``json.loads``/``json.dumps`` of the same
text, measured in the same run, so the figures can be compared as ratios.
"""

from __future__ import annotations

import json
import random
import statistics
import tempfile
import time
from pathlib import Path

from engine import GraphIndex, check_connection, load_workflow, parse_workflow, save_workflow, validate
from tests.bench.common import median_time, parse_args, report
from tests.bench.graphs import big_graph_dict


def main() -> None:
    args = parse_args(__doc__ or "")
    repeat = 3 if args.quick else 7
    raw = big_graph_dict()
    wf = parse_workflow(raw)
    n_nodes, n_links = len(wf.nodes), len(wf.connections)
    issues = validate(wf)
    v = median_time(lambda: validate(wf), repeat)

    # A drag: index built once, then check_connection against many candidate targets.
    build = median_time(lambda: GraphIndex(wf), repeat)  # a median, like the other rows (one build was noise)
    index = GraphIndex(wf)
    rnd = random.Random(1)
    ids = [n.id for n in wf.nodes]
    pairs = [(rnd.choice(ids), rnd.choice(ids)) for _ in range(2000)]
    per_check = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for s, t in pairs:
            check_connection(index, s, "output", t, "input")
        per_check.append((time.perf_counter() - t0) / len(pairs))
    sub_checks = []
    subs = [n.id for n in wf.nodes if n.id.startswith("sub")]
    for _ in range(repeat):
        t0 = time.perf_counter()
        for s in subs[:200]:
            check_connection(index, s, "subagent", rnd.choice(subs), "input")
        sub_checks.append((time.perf_counter() - t0) / 200)

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "big.flow.json"
        text = json.dumps(raw, indent=2)
        path.write_text(text)
        load = median_time(lambda: load_workflow(path), repeat)
        save = median_time(lambda: save_workflow(wf, path), repeat)
        json_load = median_time(lambda: json.loads(path.read_text()), repeat)
        json_dump = median_time(lambda: json.dumps(raw, indent=2), repeat)
        size_kb = path.stat().st_size / 1024

    rows = [
        {"what": f"validate ({n_nodes} nodes, {n_links} links, {len(issues)} issues)", "ms": v * 1e3, "target ms": 100},
        {"what": "GraphIndex build (once per drag)", "ms": build * 1e3, "target ms": None},
        {"what": "check_connection, execution link", "ms": statistics.median(per_check) * 1e3, "target ms": 1},
        {"what": "check_connection, subagent link", "ms": statistics.median(sub_checks) * 1e3, "target ms": 1},
        {"what": f"load file ({size_kb:.0f} KB)", "ms": load * 1e3, "target ms": 300},
        {"what": "  baseline: json.loads of the same file", "ms": json_load * 1e3, "target ms": None},
        {"what": "save file (atomic)", "ms": save * 1e3, "target ms": 300},
        {"what": "  baseline: json.dumps of the same data", "ms": json_dump * 1e3, "target ms": None},
    ]
    report("Validation and files on the 10,000-node graph", rows, args.json)


if __name__ == "__main__":
    main()
