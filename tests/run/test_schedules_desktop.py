"""Schedules while the desktop is open (editor/controllers/schedules.py): the library dock shows a
scheduled flow's next run, and a due flow starts headless and recorded (the runner's clock set)."""

from __future__ import annotations

import asyncio
import json
from datetime import datetime

import pytest
from PySide6.QtWidgets import QMainWindow

from engine import FlowLibrary, RunStore
from engine.llm.registry import make_resolver

pytest.importorskip("croniter", reason="schedules need croniter, from the 'serve' extra")

T0 = datetime(2027, 1, 15, 10, 0, 17).timestamp()


def test_a_due_flow_starts_and_the_dock_shows_its_next_run(qtbot, qloop, tmp_path, monkeypatch):
    from editor.controllers.schedules import SchedulesController
    from editor.panels.library import LibraryPanel

    monkeypatch.setenv("FLOWDESK_DATA_DIR", str(tmp_path / "data"))
    folder = tmp_path / "lib"
    folder.mkdir()
    flow = {
        "id": "tick",
        "name": "Tick",
        "schedule": "* * * * *",
        "nodes": [
            {"id": "s", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "tick"}},
            {"id": "a", "type": "agent", "x": 200, "y": 0, "data": {"userPrompt": "ran {{PREVIOUS_OUTPUT}}"}},
        ],
        "connections": [{"source": "s", "target": "a", "sourceHandle": "output", "targetHandle": "input"}],
    }
    (folder / "tick.flow.json").write_text(json.dumps(flow))
    (folder / "typo.flow.json").write_text(
        json.dumps({**flow, "id": "typo", "name": "Typo", "schedule": "every minute"})
    )
    panel = LibraryPanel(FlowLibrary([folder], seed=False))
    frame = QMainWindow()
    qtbot.addWidget(frame)
    frame.setCentralWidget(panel)
    store = RunStore(tmp_path / "runs.db")
    messages: list[str] = []
    controller = SchedulesController(
        frame, panel, store, lambda: make_resolver("echo"), lambda m, _t: messages.append(m)
    )
    controller.stop()  # the test drives the runner with its own clock
    controller.show_next_runs()
    shown = {panel.list.item(i).text().split("\n")[0]: panel.list.item(i).text() for i in range(panel.list.count())}
    assert "◷ next run" in shown["Tick"]
    assert "◷ schedule not running: the schedule 'every minute' is not a cron expression" in shown["Typo"]
    now = [T0]
    controller.runner.now = lambda: now[0]
    started: list[tuple[str, str]] = []
    controller.started.connect(lambda flow_id, run_id: started.append((flow_id, run_id)))
    asyncio.ensure_future(controller.runner.tick())
    qtbot.wait(50)
    assert started == []
    now[0] += 60
    asyncio.ensure_future(controller.runner.tick())
    qtbot.waitUntil(lambda: len(started) == 1, timeout=5000)
    run_id = started[0][1]
    qtbot.waitUntil(lambda: (store.get_run(run_id) or None) is not None and store.get_run(run_id).status == "completed")
    assert any(e.content == "ran tick" for e in store.events(run_id))
    assert any("Scheduled flow Tick started" in m for m in messages)
