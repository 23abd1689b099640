"""Run every benchmark, each in its own process, and print their tables.

    python -m tests.bench.run_all [--quick] [--json]

Figures are medians of repeated runs next to baselines measured in the same process;
compare ratios, not absolute times (these machines are shared and noisy).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHES = [
    "bench_engine",
    "bench_validate",
    "bench_startup",
    "bench_canvas",
    "bench_console",
    "bench_rerun",
    "bench_cli",
]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--json", action="store_true")
    args = p.parse_args()
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "PYTHONPATH": str(ROOT)}
    results: dict[str, object] = {}
    failed = 0
    if not args.json:
        print(
            f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, {platform.system()} {platform.release()}"
        )
    for name in BENCHES:
        cmd = [sys.executable, "-m", f"tests.bench.{name}"]
        if args.json:
            cmd.append("--json")
        if args.quick and name in ("bench_engine", "bench_validate", "bench_startup", "bench_cli"):
            cmd.append("--quick")
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            failed += 1
            print(f"{name} failed:\n{proc.stderr[-2000:]}", file=sys.stderr)
            continue
        if args.json:
            try:
                results[name] = json.loads(proc.stdout)
            except ValueError:
                results[name] = proc.stdout
        else:
            print(f"\n===== {name} =====")
            print(proc.stdout.rstrip())
    if args.json:
        print(json.dumps(results, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
