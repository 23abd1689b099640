"""Schedules of library flows (engine/flows/schedules.py): next fire times, a runner that starts
due flows through a callback, missed runs skipped unless ``catchUp``; the clock is injected."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import datetime
from pathlib import Path

import pytest

pytest.importorskip("croniter", reason="schedules need croniter, from the 'serve' extra")

from engine.flows.library import FlowLibrary  # noqa: E402
from engine.flows.schedules import (  # noqa: E402
    ScheduleError,
    ScheduleRunner,
    ScheduleState,
    check_cron,
    flow_schedules,
    next_fire,
)
from engine.graph.issues import Severity  # noqa: E402
from engine.graph.validate import validate  # noqa: E402

# 2027-01-15 10:00:17, local time: 17 s past a minute and past the hour
T0 = datetime(2027, 1, 15, 10, 0, 17).timestamp()


def write_flow(folder: Path, flow_id: str, schedule: object, **extra: object) -> None:
    flow = {
        "id": flow_id,
        "name": flow_id.title(),
        "schedule": schedule,
        **extra,
        "nodes": [{"id": "s", "type": "start", "x": 0, "y": 0, "data": {}}],
        "connections": [],
    }
    (folder / f"{flow_id}.flow.json").write_text(json.dumps(flow))


@pytest.fixture
def library(tmp_path: Path) -> FlowLibrary:
    folder = tmp_path / "lib"
    folder.mkdir()
    write_flow(folder, "minutely", "* * * * *")
    write_flow(folder, "hourly", {"cron": "0 * * * *", "catchUp": True})
    write_flow(folder, "daily", "30 9 * * *")  # missed while closed: not replayed
    write_flow(folder, "broken", "not a cron")
    (folder / "plain.flow.json").write_text(json.dumps({"id": "plain", "nodes": [], "connections": []}))
    return FlowLibrary([folder], seed=False)


def test_next_fire_is_local_time_and_bad_cron_is_named() -> None:
    assert datetime.fromtimestamp(next_fire("30 9 * * *", T0)) == datetime(2027, 1, 16, 9, 30)
    assert datetime.fromtimestamp(next_fire("*/5 * * * *", T0)) == datetime(2027, 1, 15, 10, 5)
    assert "not a cron expression" in (check_cron("61 * * * *") or "")
    with pytest.raises(ScheduleError, match="not a cron expression"):
        next_fire("bogus", T0)


def test_the_library_s_schedules(library: FlowLibrary) -> None:
    found = {s.flow_id: (s.cron, s.catch_up) for s in flow_schedules(library)}
    assert found == {
        "minutely": ("* * * * *", False),
        "hourly": ("0 * * * *", True),
        "daily": ("30 9 * * *", False),
        "broken": ("not a cron", False),
    }


def test_a_bad_schedule_is_said_once_in_the_log_by_the_runner_and_by_validation(
    library: FlowLibrary, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    runner = ScheduleRunner(library, lambda s: None, now=lambda: T0, state=ScheduleState(tmp_path / "s.json"))
    assert list(runner.problems()) == ["broken"] and "not a cron expression" in runner.problems()["broken"]
    with caplog.at_level(logging.WARNING, logger="engine.flows.schedules"):
        for _ in range(3):
            asyncio.run(runner.tick())
    said = [r.getMessage() for r in caplog.records if "will not start on its own" in r.getMessage()]
    assert len(said) == 1 and "'Broken'" in said[0] and "'not a cron'" in said[0]
    issues = validate(library.load_path(library.folders[0] / "broken.flow.json"))
    bad = [i for i in issues if i.code == "schedule_invalid"]
    assert len(bad) == 1 and bad[0].severity == Severity.WARNING
    assert bad[0].message.startswith("This flow will not start on its own: the schedule 'not a cron' is not a")
    assert not bad[0].message.endswith("..")
    good = validate(library.load_path(library.folders[0] / "minutely.flow.json"))
    assert [i for i in good if i.code == "schedule_invalid"] == []


def test_a_minutely_schedule_fires_once_a_minute(library: FlowLibrary, tmp_path: Path) -> None:
    now = [T0]
    started: list[tuple[str, float]] = []

    async def start(schedule) -> None:  # an async callback works too
        started.append((schedule.flow_id, now[0]))

    runner = ScheduleRunner(library, start, now=lambda: now[0], state=ScheduleState(tmp_path / "s.json"))

    async def go() -> list[list[str]]:
        out = []
        for step in (0, 43, 1, 30, 30, 60):
            now[0] += step
            out.append(sorted(s.flow_id for s in await runner.tick()))
        return out

    assert asyncio.run(go()) == [[], ["minutely"], [], [], ["minutely"], ["minutely"]]
    assert "broken" in runner.errors
    assert set(runner.next_runs()) == {"minutely", "hourly", "daily"}


def test_missed_runs_are_replayed_once_only_with_catch_up(library: FlowLibrary, tmp_path: Path) -> None:
    state = ScheduleState(tmp_path / "s.json")
    now = [T0]
    first = ScheduleRunner(library, lambda s: None, now=lambda: now[0], state=state)
    asyncio.run(first.tick())
    now[0] += 60  # the runner fires once, then the app closes ...
    asyncio.run(first.tick())
    now[0] += 26 * 3600  # ... for a day and two hours: minutely, hourly and daily fire times missed
    started: list[str] = []
    again = ScheduleRunner(library, lambda s: started.append(s.flow_id), now=lambda: now[0], state=state)
    asyncio.run(again.tick())
    assert started == ["hourly"]  # catchUp: the latest missed one, once
    now[0] += 5
    asyncio.run(again.tick())
    assert started == ["hourly"]
    # a second process running schedules (the desktop and a server) does not start it again
    other = ScheduleRunner(library, lambda s: started.append("other:" + s.flow_id), now=lambda: now[0], state=state)
    now[0] += 60

    async def both() -> None:
        await asyncio.gather(again.tick(), other.tick())

    asyncio.run(both())
    assert sorted(started) == ["hourly", "minutely"] or sorted(started) == ["hourly", "other:minutely"]


def test_the_runner_task_starts_a_due_flow(library: FlowLibrary, tmp_path: Path) -> None:
    """run() as an asyncio task (as flowdesk serve and the desktop run it), with a clock that
    reaches the next minute at once."""
    real = [T0 + 40]
    started: list[str] = []

    async def go() -> None:
        runner = ScheduleRunner(library, lambda s: started.append(s.flow_id), now=lambda: real[0], poll=0.05)
        task = asyncio.ensure_future(runner.run())
        await asyncio.sleep(0.1)
        real[0] += 25  # past the minute
        runner.wake()
        for _ in range(100):
            if started:
                break
            await asyncio.sleep(0.02)
        task.cancel()

    asyncio.run(go())
    assert started == ["minutely"]
