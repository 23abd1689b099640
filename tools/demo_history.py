"""Look at the history panel: ``python -m tools.demo_history [--runs N] [--screenshot PNG] [--db PATH]``.

Fills a throw-away run store with real runs of ``samples/*.flow.json`` (echo provider,
recorded by :class:`engine.store.RunRecorder`): completed, paused at an approval,
approved, rejected, failed, cancelled and interrupted ones, spread over the last days,
then shows the panel. The panel's signals are printed, as the main window would handle them.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

from engine import EchoProvider, LLMError, LLMResult, Run, RunRecorder, RunStore, load_workflow

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "samples"

INPUTS = [
    "Hello, I was charged twice for my order #1042. I would like a refund for the duplicate charge.",
    "Where is my parcel? The tracking page has said 'in transit' for nine days.",
    "Can I change the delivery address of order #2210 to my office?",
    "I want a refund: the headphones stopped working after two days.",
    "Summarise the state of small modular reactors in Europe for a policy brief.",
    "Compare heat pumps and gas boilers for a 1970s terraced house.",
    "Say hello to the new team members in three languages.",
    "Draft a polite reminder about the unpaid invoice INV-2291, due last Friday.",
    "",
]


class FlakyProvider:
    """Echo, but fails at one node: gives the demo some failed runs."""

    name = "flaky"

    def __init__(self, fail_at: str) -> None:
        self.fail_at = fail_at
        self.echo = EchoProvider()

    async def complete(self, inv, ctx) -> LLMResult:  # type: ignore[no-untyped-def]
        if inv.node_id == self.fail_at:
            raise LLMError("The model server answered 503 Service Unavailable after 3 retries.")
        return await self.echo.complete(inv, ctx)


async def _one(
    store: RunStore, path: Path, provider, initial: str | None, decisions: list[str], cancel_after: float | None = None
) -> str:
    wf = load_workflow(path)
    run = Run(wf, provider, initial_input=initial)
    rec = RunRecorder(store, run, workflow_path=str(path))
    try:
        if cancel_after is not None:
            task = asyncio.ensure_future(run.start())
            await asyncio.sleep(cancel_after)
            run.cancel()
            await task
        else:
            status = await run.start()
            rec.settled()
            for d in decisions:
                if status != "paused":
                    break
                status = await run.resume(d, "needs a softer tone" if d == "reject" else "")
                rec.settled()
        rec.settled()
    finally:
        rec.close()
    return run.run_id


def fill_demo_store(store: RunStore, n: int = 120, seed: int = 7) -> None:
    rng = random.Random(seed)
    flows = sorted(SAMPLES.glob("*.flow.json"))
    review = SAMPLES / "review.flow.json"
    now = time.time()

    async def go() -> list[str]:
        ids = []
        for _i in range(n):
            roll = rng.random()
            path = rng.choice(flows)
            initial = rng.choice(INPUTS) or None
            decisions: list[str] = []
            provider = EchoProvider()
            cancel_after = None
            if roll < 0.12:  # paused, waiting for approval
                path, initial = review, rng.choice(INPUTS[:4])
                if "refund" not in initial.lower():
                    initial = INPUTS[0]
            elif roll < 0.30:
                path = review
                decisions = [rng.choice(["approve", "reject"])]
            elif roll < 0.38:
                path = review if rng.random() < 0.5 else SAMPLES / "research.flow.json"
                provider = FlakyProvider("send" if path == review else "writer")
                decisions = ["approve"]
            elif roll < 0.43:
                provider = EchoProvider(delay=0.2)
                cancel_after = 0.01
            ids.append(await _one(store, path, provider, initial, decisions, cancel_after))
        return ids

    ids = asyncio.run(go())
    # Spread the runs over the last five days with plausible durations (the demo's own
    # database, so it may be rewritten directly).
    conn = sqlite3.connect(store.path)
    times = sorted(now - rng.uniform(60, 5 * 86400) for _ in ids)
    for rid, t0 in zip(ids, times):
        started = conn.execute("SELECT started_at FROM runs WHERE id = ?", (rid,)).fetchone()[0]
        last = conn.execute("SELECT MAX(timestamp) FROM events WHERE run_id = ?", (rid,)).fetchone()[0] or started
        span = max(last - started, 1e-6)
        length = rng.choice([rng.uniform(1.2, 9), rng.uniform(10, 55), rng.uniform(60, 400)])
        scale = length / span
        conn.execute(
            "UPDATE events SET timestamp = ? + (timestamp - ?) * ? WHERE run_id = ?", (t0, started, scale, rid)
        )
        conn.execute(
            "UPDATE runs SET started_at = ?, ended_at = CASE WHEN ended_at IS NULL THEN NULL ELSE ? END WHERE id = ?",
            (t0, t0 + length, rid),
        )
    # A few runs whose process died: recovery marks them interrupted.
    wf = load_workflow(SAMPLES / "research.flow.json")
    conn.commit()
    conn.close()
    for k in range(3):
        rid = f"crashed{k}{rng.randrange(16**6):06x}"
        t0 = now - rng.uniform(3600, 3 * 86400)
        store.create_run(rid, wf, initial_input=INPUTS[4 + k], status="running", started_at=t0, owner=False)
        from engine import RunEvent

        store.append_events(
            rid,
            0,
            [
                RunEvent("system", "run_status", "running", timestamp=t0),
                RunEvent("start", "step_start", "Start", timestamp=t0 + 0.01),
                RunEvent("lead", "step_start", "Lead researcher", timestamp=t0 + 0.02),
            ],
        )
    store.recover()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=120)
    ap.add_argument("--db", help="use (and fill, if empty) this database instead of a temporary one")
    ap.add_argument("--screenshot", help="save a picture of the window to this PNG and quit")
    ap.add_argument("--width", type=int, default=1200)
    ap.add_argument("--height", type=int, default=720)
    args = ap.parse_args(argv)

    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMainWindow

    from editor.history.panel import HistoryPanel, open_store_for_gui

    db = Path(args.db) if args.db else Path(tempfile.mkdtemp(prefix="flowdesk-history-demo-")) / "runs.db"
    store = RunStore(db)
    if store.count_runs() == 0:
        t = time.monotonic()
        fill_demo_store(store, args.runs)
        print(f"filled {db} with {store.count_runs()} runs in {time.monotonic() - t:.1f} s", file=sys.stderr)
    store.close()

    app = QApplication.instance() or QApplication(sys.argv[:1])
    win = QMainWindow()
    win.setWindowTitle("Flowdesk — run history (demo)")
    panel = HistoryPanel()
    open_store_for_gui(win, path=db, panel=panel)
    panel.run_opened.connect(
        lambda rid, wf, events, info: print(
            f"run_opened {rid} · {wf.display_name()} · {len(events)} events · {info.status}"
        )
    )
    panel.workflow_version_requested.connect(
        lambda wf, rid: print(f"workflow_version_requested {wf.display_name()} {rid}")
    )
    panel.resume_requested.connect(lambda rid: print(f"resume_requested {rid}"))
    win.setCentralWidget(panel)
    win.resize(args.width, args.height)
    win.show()
    if args.screenshot:

        def shoot() -> None:
            win.grab().save(args.screenshot)
            app.quit()

        QTimer.singleShot(600, shoot)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
