"""The run timeline's time axis: round steps, one unit, nothing repeated or uneven.

The axis used to split a run into five equal parts and round each label, so a 7 ms run
read "0 ms, 1 ms, 3 ms, 4 ms, 6 ms, 7 ms" (steps of 1.4 ms shown as 1 and 2)."""

from __future__ import annotations

import math
import re

import pytest

from editor.run.timeline import TimelineCanvas, axis_ticks
from engine import RunEvent

TOTALS = [0.0004, 0.0037, 0.007, 0.045, 0.25, 0.99, 1.3, 2.7, 14, 95, 179, 200, 1000, 5400, 10800, 100000]


def _round_step(step: float) -> bool:
    if step >= 15:
        return step in (15, 30) or step % 60 == 0
    mantissa = step / 10 ** math.floor(math.log10(step))
    return any(math.isclose(mantissa, m) for m in (1, 2, 5, 10))


@pytest.mark.parametrize("total", TOTALS)
def test_ticks_are_round_even_steps_in_one_unit(total):
    ticks = axis_ticks(total, 6)
    at = [t for t, _ in ticks]
    labels = [label for _, label in ticks]
    assert at[0] == 0 and 2 <= len(at) <= 7
    assert at[-1] <= total * (1 + 1e-9)
    steps = [b - a for a, b in zip(at, at[1:])]
    assert all(math.isclose(s, steps[0]) for s in steps)
    assert _round_step(steps[0]), steps[0]
    assert len(set(labels)) == len(labels), labels
    units = {label.split()[-1] for label in labels}
    assert len(units) == 1, labels
    # each label says its tick's time in that unit
    scale = {"ms": 1e-3, "s": 1, "min": 60, "h": 3600}[units.pop()]
    for t, label in ticks:
        number = float(re.match(r"[\d.]+", label).group())
        assert math.isclose(number * scale, t, rel_tol=1e-6, abs_tol=1e-12), (t, label)


def test_a_seven_millisecond_run_reads_0_2_4_6_ms():
    assert [label for _, label in axis_ticks(0.007, 6)] == ["0 ms", "2 ms", "4 ms", "6 ms"]


def test_a_narrow_timeline_gets_fewer_ticks(qtbot):
    canvas = TimelineCanvas()
    qtbot.addWidget(canvas)
    t0 = 1_000.0
    events = [
        RunEvent("SYSTEM", "run_status", "running", timestamp=t0),
        RunEvent("a", "step_start", "A", timestamp=t0 + 0.001),
        RunEvent("a", "step_end", "done", timestamp=t0 + 0.0065, extra={"status": "done", "durationMs": 5}),
        RunEvent("SYSTEM", "run_status", "completed", timestamp=t0 + 0.007),
    ]
    canvas.timeline.add_events(events)
    for width in (320, 900):
        canvas.resize(width, 120)
        canvas.grab()  # paints the axis without error at either width
    assert len(axis_ticks(0.007, 2)) < len(axis_ticks(0.007, 6))
