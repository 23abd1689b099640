"""Issue 13, item 2 in the window: an event is painted (delivered by the bridge) only once the
run store has committed it, so a kill of the app never takes back what was shown."""

from __future__ import annotations

from pathlib import Path

from editor.run.bridge import RunBridge
from engine import RunEvent, parse_workflow
from engine.store import RunStore
from tests.engine.flows import Recorder


def test_every_batch_is_in_the_store_when_delivered(qtbot, qloop, tmp_path: Path) -> None:
    n = 40
    wf = parse_workflow(
        {
            "nodes": [{"id": "s", "type": "start", "data": {"initialInput": "go"}}]
            + [{"id": f"a{i}", "type": "agent", "data": {"agentName": f"A{i}", "model": "m"}} for i in range(n)],
            "connections": [{"source": "s", "target": "a0"}]
            + [{"source": f"a{i}", "target": f"a{i + 1}"} for i in range(n - 1)],
        }
    )
    store = RunStore(tmp_path / "runs.db")
    reader = RunStore(tmp_path / "runs.db")  # another connection, as a process started after a kill
    bridge = RunBridge(flush_interval_ms=10)
    shown: list[RunEvent] = []
    behind: list[tuple[int, int]] = []

    def painted(batch: list[RunEvent]) -> None:
        shown.extend(batch)
        stored = len(reader.events(bridge.run.run_id))
        if stored < len(shown):
            behind.append((len(shown), stored))

    bridge.events_batched.connect(painted)
    with qtbot.waitSignal(bridge.run_finished, timeout=20000):
        bridge.start(wf, None, Recorder(delays={f"a{i}": 0.005 for i in range(n)}), store)
    assert behind == []
    assert shown == reader.events(bridge.run.run_id)
    assert len(shown) > 3 * n
    reader.close()
