"""Shared helpers for the benchmark scripts: medians, tables, --json output.

Absolute times on shared machines are noise; every figure is printed next to an
in-process baseline measured in the same run, and compared as a ratio.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any


def median_time(fn: Callable[[], Any], repeat: int = 5, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def parse_args(description: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--json", action="store_true", help="print machine-readable figures")
    p.add_argument("--quick", action="store_true", help="fewer repeats and smaller sizes")
    return p.parse_args()


def report(title: str, rows: list[dict[str, Any]], as_json: bool) -> None:
    if as_json:
        print(json.dumps({"benchmark": title, "rows": rows}, indent=2))
        return
    print(f"\n{title}")
    if not rows:
        return
    cols = list(rows[0])
    widths = {c: max(len(c), *(len(_fmt(r.get(c))) for r in rows)) for c in cols}
    print("  ".join(c.ljust(widths[c]) for c in cols))
    print("  ".join("-" * widths[c] for c in cols))
    for r in rows:
        print("  ".join(_fmt(r.get(c)).ljust(widths[c]) for c in cols))


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}" if v < 100 else f"{v:.1f}"
    return "" if v is None else str(v)
