"""Start-up and memory, as whole processes.

    python -m tests.bench.bench_startup [--json] [--quick]

* ``flowdesk validate`` on a small file, launch to exit (no Qt import); target 300 ms.
  Baseline: ``python -c pass`` in the same run.
* the GUI from launch to a painted window with a sample open (offscreen); target 1,500 ms.
* peak RSS of a 10,000-agent chain run (echo provider), and of the GUI holding the
  2,000-node canvas; baseline: peak RSS of ``python -c "import engine"``.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.bench.common import parse_args, report

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "review.flow.json"

GUI_CHILD = r"""
import os, sys, time
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QApplication
import editor.app as app_mod

class FirstPaint(QObject):
    def eventFilter(self, obj, ev):
        if ev.type() == QEvent.Type.Paint:
            QTimer.singleShot(0, lambda: (print("PAINTED", flush=True), os._exit(0)))
        return False

app = QApplication.instance() or QApplication(sys.argv[:1])
app_mod.configure_app(app)
win = app_mod.create_window(sys.argv[1:])
f = FirstPaint()
view = getattr(win, "canvas_view", None) or getattr(win, "view", None)
target = view.viewport() if view is not None else win
target.installEventFilter(f)
win.show()
app.exec()
"""

GUI_MEMORY_CHILD = GUI_CHILD.replace(
    'QTimer.singleShot(0, lambda: (print("PAINTED", flush=True), os._exit(0)))',
    'QTimer.singleShot(300, lambda: (print("PAINTED", flush=True), sys.stdout.flush(), app.quit()))',
)

CHAIN_CHILD = r"""
import asyncio, sys
from engine import EchoProvider, Run
from tests.bench.bench_engine import chain_workflow
wf = chain_workflow(10_000)
events = []
run = Run(wf, EchoProvider(), on_event=events.append)
asyncio.run(run.start())
assert run.status == "completed", run.status
print(len(events))
"""


def _wall(cmd: list[str], env: dict[str, str] | None = None, until: str | None = None) -> float:
    t0 = time.perf_counter()
    if until is None:
        subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, check=True)
        return time.perf_counter() - t0
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert proc.stdout is not None
    seen = False
    for line in proc.stdout:
        if until in line:
            seen = True
            break
    elapsed = time.perf_counter() - t0
    proc.kill()
    proc.wait()
    if not seen:
        raise RuntimeError(f"the child process ended without printing {until!r}")
    return elapsed


def _peak_rss_kb(cmd: list[str], env: dict[str, str] | None = None) -> int:
    """Peak RSS of a child process, read from /usr/bin/time-like rusage of a wrapper."""
    code = (
        "import resource, subprocess, sys; subprocess.run(sys.argv[1:], check=True, stdout=subprocess.DEVNULL); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, *cmd], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )  # a failing child raises CalledProcessError: reported as not measured
    return int(out.stdout.strip().splitlines()[-1])


def main() -> None:
    args = parse_args(__doc__ or "")
    n = 3 if args.quick else 7
    env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
    with tempfile.TemporaryDirectory() as d:
        env["FLOWDESK_DATA_DIR"] = str(Path(d) / "data")
        env["FLOWDESK_CONFIG_DIR"] = str(Path(d) / "config")
        # The window's own settings (geometry, dock layout, recent files) too: a benchmark
        # must not leave its offscreen window's layout and temporary files in the user's.
        env["XDG_CONFIG_HOME"] = str(Path(d) / "xdg-config")
        base = statistics.median(_wall([sys.executable, "-c", "pass"], env) for _ in range(n))
        cli = statistics.median(
            _wall([sys.executable, "-m", "editor.launcher", "validate", str(SAMPLE)], env) for _ in range(n)
        )
        rows = [
            {"what": "python -c pass (baseline)", "ms": base * 1e3, "target ms": None},
            {"what": "flowdesk validate small file", "ms": cli * 1e3, "target ms": 300},
        ]
        try:
            gui = statistics.median(
                _wall([sys.executable, "-c", GUI_CHILD, str(SAMPLE)], env, until="PAINTED") for _ in range(n)
            )
            rows.append({"what": "GUI launch to painted window (review sample)", "ms": gui * 1e3, "target ms": 1500})
        except Exception as err:  # the editor may not offer create_main_window yet
            rows.append({"what": f"GUI launch: not measured ({type(err).__name__})", "ms": None, "target ms": 1500})

        mem_rows = [
            {
                "what": "python -c 'import engine' (baseline)",
                "peak RSS MB": _peak_rss_kb([sys.executable, "-c", "import engine"], env) / 1024,
            }
        ]
        mem_rows.append(
            {
                "what": "10,000-agent chain run, events kept",
                "peak RSS MB": _peak_rss_kb([sys.executable, "-c", CHAIN_CHILD], env) / 1024,
            }
        )
        big = Path(d) / "canvas2000.flow.json"
        try:
            from tests.bench.graphs import big_graph_dict

            raw = big_graph_dict(n_exec=2_000, n_links=3_000, n_sub=0)
            big.write_text(json.dumps(raw))
            mem_rows.append(
                {
                    "what": "GUI holding the 2,000-node canvas",
                    "peak RSS MB": _peak_rss_kb([sys.executable, "-c", GUI_MEMORY_CHILD, str(big)], env) / 1024,
                }
            )
        except Exception as err:
            mem_rows.append(
                {"what": f"GUI 2,000-node canvas: not measured ({type(err).__name__})", "peak RSS MB": None}
            )
    if args.json:
        print(json.dumps({"startup": rows, "memory": mem_rows}, indent=2))
        return
    report("Start-up (whole processes, median)", rows, False)
    report("Peak memory", mem_rows, False)


if __name__ == "__main__":
    main()
