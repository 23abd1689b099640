"""``RunStore.holder_of``: who holds a run and how far it got, the one cheap read a window makes
every second while it shows a run paused, to notice that another process answered it."""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

from engine import EchoProvider, Run, RunStatus
from engine.store import RunHolder, RunRecorder, RunStore

from .flows import agent, approval, flow, link, start


def test_holder_follows_a_claim_by_another_process_and_the_end(tmp_path: Path) -> None:
    wf = flow([start(), approval("ap"), agent("a")], [link("s", "ap"), link("ap", "a", "approve")])
    store = RunStore(tmp_path / "runs.db")
    assert store.holder_of("no-such-run") is None

    async def go() -> None:
        run = Run(wf, EchoProvider())
        rec = RunRecorder(store, run)
        await run.start()
        rec.settled()
        rec.close()
        paused = store.holder_of(run.run_id)
        assert paused == RunHolder("paused", os.getpid(), socket.gethostname(), len(run.events))
        assert paused.owner == f"process {os.getpid()} on {socket.gethostname()}"
        # another process (its own RunStore on the same file) claims it, then carries it on
        other = RunStore(tmp_path / "runs.db")
        other.claim_for_resume(run.run_id)
        other.update_run(run.run_id, owner_pid=4242, owner_host="elsewhere")
        claimed = store.holder_of(run.run_id)
        assert (claimed.status, claimed.owner, claimed.events) == (
            "running",
            "process 4242 on elsewhere",
            paused.events,
        )
        restored = Run.restore(other.snapshot_of(run.run_id), EchoProvider(), workflow=other.workflow_of(run.run_id))
        rec2 = RunRecorder(other, restored, new=False)
        assert await restored.resume("approve") == RunStatus.COMPLETED
        rec2.settled()
        rec2.close()
        ended = store.holder_of(run.run_id)
        assert ended.status == "completed" and ended.events == paused.events + len(restored.events)
        store.update_run(run.run_id, owner_pid=None, owner_host=None)
        assert store.holder_of(run.run_id).owner == "an unknown process"

    asyncio.run(go())
