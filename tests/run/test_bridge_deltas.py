"""Issue 32 in the window: streamed text right after the committed events is painted without
waiting for its own commit; every other event still waits for the store."""

from __future__ import annotations

from editor.run.bridge import RunBridge
from engine import RunEvent


class _Recorder:
    error = None

    def __init__(self) -> None:
        self.asked = 0

    def commit_soon(self) -> None:
        self.asked += 1


def test_deltas_after_the_committed_events_are_delivered_at_once(qtbot) -> None:
    bridge = RunBridge()
    assert bridge.flush_interval_ms <= 16 and bridge.delta_interval <= 0.016
    recorder = _Recorder()
    bridge._recorder, bridge._gated = recorder, True  # as _new_recorder leaves them
    delivered: list[str] = []
    bridge.events_batched.connect(lambda batch: delivered.extend(e.type for e in batch))
    for ev in (RunEvent("a", "step_start", "A"), RunEvent("a", "llm_delta", "one")):
        bridge._on_event(ev)
    bridge.flush()
    assert delivered == [] and recorder.asked == 1  # held behind the uncommitted start: a commit is asked for
    bridge._committed_batch([None], True)  # the start is committed
    bridge.flush()
    assert delivered == ["step_start", "llm_delta"]
    bridge._on_event(RunEvent("a", "llm_delta", "two"))
    qtbot.waitUntil(lambda: len(delivered) == 3, timeout=1000)  # on the next turn of the loop
    bridge._on_event(RunEvent("a", "llm_response", "onetwo"))
    bridge.flush()
    assert len(delivered) == 3  # not committed: waits
    bridge._committed_batch([None, None, None], True)
    bridge.flush()
    assert delivered[3:] == ["llm_response"]
