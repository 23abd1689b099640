"""The history panel over a real store: paging through 250 runs, filters, open (log and
canvas states), delete, export and import, and the unavailable state of a corrupt store.
Dialogs are monkeypatched: nothing here ever blocks."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QMessageBox

from editor.history import store_open as store_open_mod
from editor.history.model import COL_DURATION, COL_INPUT, COL_STATUS, COL_WORKFLOW, RUN_ROLE
from editor.history.panel import HistoryPanel, open_store_for_gui
from engine import EchoProvider, Run, RunEvent, RunState, load_workflow
from engine.store import RunRecorder, RunStore

from ..engine.flows import agent, flow, link, start

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
STATUSES = ("completed", "failed", "paused", "cancelled", "interrupted")
BASE = 1_700_000_000.0


class Dialogs:
    """Records message boxes; answers questions with ``answer``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, answer=QMessageBox.StandardButton.Yes) -> None:
        self.warnings: list[str] = []
        self.infos: list[str] = []
        self.questions: list[str] = []
        self.answer = answer
        monkeypatch.setattr(QMessageBox, "warning", lambda _p, _t, text, *a, **k: self.warnings.append(text))
        monkeypatch.setattr(QMessageBox, "critical", lambda _p, _t, text, *a, **k: self.warnings.append(text))
        monkeypatch.setattr(QMessageBox, "information", lambda _p, _t, text, *a, **k: self.infos.append(text))
        monkeypatch.setattr(
            QMessageBox, "question", lambda _p, _t, text, *a, **k: (self.questions.append(text), self.answer)[1]
        )


@pytest.fixture()
def dialogs(monkeypatch: pytest.MonkeyPatch) -> Dialogs:
    return Dialogs(monkeypatch)


def fill(store: RunStore, n: int) -> list[str]:
    """n runs of three workflows with cycling statuses; run i started at BASE + 60 i. Returns ids oldest first."""
    wfs = []
    for name in ("Alpha", "Beta", "Gamma"):
        wf = flow([start(text="go"), agent("a")], [link("s", "a")])
        wf.name = name
        wfs.append(wf)
    ids = []
    for i in range(n):
        rid = f"run{i:04d}"
        t = BASE + 60 * i
        store.create_run(
            rid, wfs[i % 3], initial_input=f"input {i}\nsecond line", status=STATUSES[i % 5], started_at=t, owner=False
        )
        events = [
            RunEvent("system", "run_status", "running", timestamp=t),
            RunEvent("s", "step_start", "Start", timestamp=t + 0.1),
            RunEvent("a", "step_start", "a", timestamp=t + 0.2),
            RunEvent("a", "llm_response", f"answer {i}", timestamp=t + 1.5),
        ][: 1 + i % 4]
        store.append_events(rid, 0, events, {"ended_at": None if STATUSES[i % 5] == "paused" else t + 2.5})
        ids.append(rid)
    return ids


def make_panel(qtbot, store: RunStore | None, **kw) -> HistoryPanel:
    panel = HistoryPanel(store, **kw)
    panel.auto_refresh_interval = 0
    qtbot.addWidget(panel)
    panel.resize(1000, 600)
    panel.show()
    return panel


def page_ids(panel: HistoryPanel) -> list[str]:
    return [r.id for r in panel.model.runs]


def test_pages_through_250_runs_newest_first(qtbot, tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    ids = fill(store, 250)
    newest_first = ids[::-1]
    panel = make_panel(qtbot, store)
    assert panel.total == 250
    assert page_ids(panel) == newest_first[:50]
    assert panel.range_label.text() == "1–50 of 250 runs"
    assert not panel.prev_action.isEnabled() and panel.next_action.isEnabled()

    seen = list(page_ids(panel))
    for page in range(1, 5):
        qtbot.mouseClick(panel.next_button, Qt.MouseButton.LeftButton)
        assert page_ids(panel) == newest_first[page * 50 : (page + 1) * 50]
        assert panel.range_label.text() == f"{page * 50 + 1}–{(page + 1) * 50} of 250 runs"
        seen += page_ids(panel)
    assert seen == newest_first  # every run once, in order
    assert not panel.next_action.isEnabled()
    panel.next_page()  # no page after the last
    assert panel.range_label.text() == "201–250 of 250 runs"
    panel.previous_page()
    assert panel.range_label.text() == "151–200 of 250 runs"
    assert page_ids(panel) == newest_first[150:200]

    # what a row shows
    model = panel.model
    first = model.index(0, 0)
    run = model.data(first, RUN_ROLE)
    assert model.data(model.index(0, COL_WORKFLOW)) == run.workflow_name
    assert "\n" not in model.data(model.index(0, COL_INPUT)) and model.data(model.index(0, COL_INPUT)).startswith(
        "input"
    )
    paused_row = next(i for i, r in enumerate(model.runs) if r.status == "paused")
    assert model.data(model.index(paused_row, COL_STATUS)) == "Waiting for approval"
    assert model.data(model.index(paused_row, COL_DURATION)) == "waiting"
    done_row = next(i for i, r in enumerate(model.runs) if r.status == "completed")
    assert model.data(model.index(done_row, COL_DURATION)) == "2.5 s"
    assert panel.paused_banner.isVisible() and "50 runs are waiting for approval" in panel.paused_banner.text()


def test_filters_by_workflow_and_status(qtbot, tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    ids = fill(store, 250)
    panel = make_panel(qtbot, store)
    combo = panel.workflow_combo
    assert [combo.itemText(i) for i in range(combo.count())] == ["All workflows", "Alpha", "Beta", "Gamma"]

    combo.setCurrentIndex(combo.findText("Beta"))  # as the user does
    beta = [rid for i, rid in enumerate(ids) if i % 3 == 1][::-1]
    assert panel.total == len(beta) == 83
    assert page_ids(panel) == beta[:50]
    assert panel.range_label.text() == "1–50 of 83 runs"
    panel.next_page()
    assert page_ids(panel) == beta[50:] and panel.range_label.text() == "51–83 of 83 runs"

    panel.status_combo.setCurrentIndex(panel.status_combo.findData("failed"))  # back to the first page
    beta_failed = [rid for i, rid in enumerate(ids) if i % 3 == 1 and STATUSES[i % 5] == "failed"][::-1]
    assert panel.page_offset == 0 and page_ids(panel) == beta_failed
    assert panel.range_label.text() == f"1–{len(beta_failed)} of {len(beta_failed)} runs"
    assert all(r.status == "failed" and r.workflow_name == "Beta" for r in panel.model.runs)

    panel.set_filters(workflow=None, status="paused")
    assert panel.total == 50 and all(r.status == "paused" for r in panel.model.runs)
    assert not panel.paused_banner.isVisible()  # the filter already shows them

    panel.set_filters(workflow="Nope", status=None)
    assert panel.total == 0 and panel.range_label.text() == "No runs"
    assert panel.stack.currentWidget() is panel.empty_label and "match" in panel.empty_label.text()

    panel.set_filters()
    panel.paused_banner.linkActivated.emit("#paused")  # "Show them"
    assert panel.status_filter == "paused" and panel.total == 50


def record_review_run(store: RunStore) -> tuple[str, list[RunEvent]]:
    wf = load_workflow(SAMPLES / "review.flow.json")

    async def go() -> Run:
        run = Run(wf, EchoProvider())
        rec = RunRecorder(store, run)
        await run.start()
        rec.settled()
        rec.close()
        return run

    run = asyncio.run(go())
    assert run.status == "paused"
    return run.run_id, list(run.events or [])


def test_open_emits_log_and_replay_states(qtbot, tmp_path: Path, dialogs: Dialogs) -> None:
    store = RunStore(tmp_path / "runs.db")
    fill(store, 60)
    run_id, emitted = record_review_run(store)  # the newest run: first row
    panel = make_panel(qtbot, store)
    assert page_ids(panel)[0] == run_id
    panel.table.setFocus()
    panel.select_run(run_id)
    assert panel.resume_action.isEnabled()

    with qtbot.waitSignal(panel.run_opened, timeout=2000) as blocker:
        qtbot.keyClick(panel.table, Qt.Key.Key_Return)  # Enter opens
    rid, workflow, events, info = blocker.args
    opened: list[str] = []
    panel.run_opened.connect(lambda rid, *_: opened.append(rid))
    qtbot.keyClick(panel.table, Qt.Key.Key_Enter)
    assert opened == [run_id]  # exactly once: the shortcut and the table's own Enter do not both fire
    assert rid == run_id and info.id == run_id and info.status == "paused" and info.waiting
    assert workflow.display_name() == "Support reply review"
    assert events == store.events(run_id) == emitted  # the log exactly as it was emitted and stored
    assert len(events) == info.event_count

    replay = RunState.of(workflow, events)
    assert replay.node_states() == {
        "start": "done",
        "triage": "done",
        "route": "done",
        "signoff": "waiting",
        "send": "idle",
        "revise": "idle",
        "general": "idle",
    }
    assert replay.links == {
        ("start", "output", "triage"),
        ("triage", "output", "route"),
        ("route", "condition-0", "signoff"),
    }

    # double-click opens too
    rect = panel.table.visualRect(panel.model.index(0, 1))
    qtbot.mouseClick(panel.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())  # QTest's double
    with qtbot.waitSignal(panel.run_opened, timeout=2000):  # click needs a press first
        qtbot.mouseDClick(panel.table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())

    with qtbot.waitSignal(panel.workflow_version_requested, timeout=2000) as blocker:
        panel.open_version_action.trigger()
    assert blocker.args[1] == run_id and [n.id for n in blocker.args[0].nodes] == [n.id for n in workflow.nodes]

    with qtbot.waitSignal(panel.resume_requested, timeout=2000) as blocker:
        panel.resume_action.trigger()
    assert blocker.args == [run_id]

    # a paused run without a saved state (fill() writes none) is not offered for resume
    panel.select_run(next(r.id for r in panel.model.runs if r.status == "paused" and r.id != run_id))
    with qtbot.assertNotEmitted(panel.resume_requested):
        panel.resume_run()
    assert "not saved" in dialogs.warnings[-1]
    panel.select_run(next(r.id for r in panel.model.runs if r.status == "completed"))
    assert not panel.resume_action.isEnabled()


def test_delete_with_confirmation_updates_count(qtbot, tmp_path: Path, dialogs: Dialogs) -> None:
    store = RunStore(tmp_path / "runs.db")
    ids = fill(store, 120)
    panel = make_panel(qtbot, store)
    victims = page_ids(panel)[:3]
    for rid in victims:
        row = panel.model.row_of(rid)
        panel.table.selectionModel().select(
            panel.model.index(row, 0),
            panel.table.selectionModel().SelectionFlag.Select | panel.table.selectionModel().SelectionFlag.Rows,
        )
    assert panel.selected_run_ids() == victims

    dialogs.answer = QMessageBox.StandardButton.Cancel  # "Cancel" changes nothing
    panel.delete_action.trigger()
    assert dialogs.questions and "these 3 runs" in dialogs.questions[-1]
    assert store.count_runs() == 120

    dialogs.answer = QMessageBox.StandardButton.Yes
    panel.table.setFocus()
    qtbot.keyClick(panel.table, Qt.Key.Key_Delete)
    assert store.count_runs() == 117 and all(store.get_run(r) is None for r in victims)
    assert store.events(victims[0]) == []
    assert panel.total == 117 and panel.range_label.text() == "1–50 of 117 runs"
    assert page_ids(panel) == ids[::-1][3:53]
    assert "Deleted 3 runs" in panel.message

    # a running run is never deleted (its recorder still writes to it)
    wf = flow([start()], [])
    store.create_run("live", wf, status="running", started_at=BASE + 10**6)
    panel.refresh()
    panel.select_run("live")
    assert not panel.delete_action.isEnabled()
    assert panel.delete_runs(["live"]) == 0 and store.get_run("live") is not None
    assert "still running" in dialogs.warnings[-1]


def test_export_jsonl_and_agentflow_then_import(
    qtbot, tmp_path: Path, dialogs: Dialogs, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RunStore(tmp_path / "runs.db")
    fill(store, 5)
    run_id, events = record_review_run(store)
    panel = make_panel(qtbot, store)
    panel.select_run(run_id)

    jsonl_path = tmp_path / "out" / "log.jsonl"
    jsonl_path.parent.mkdir()
    asked: list[str] = []

    def save(_parent, _title, suggested, _filters, *a, **k):
        asked.append(suggested)
        return str(target), ""

    monkeypatch.setattr(QFileDialog, "getSaveFileName", save)
    target = jsonl_path
    panel.export_jsonl_action.trigger()
    assert Path(asked[-1]).name == f"run_{run_id}.jsonl"
    lines = jsonl_path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == [e.to_wire() for e in events]

    target = tmp_path / "out" / f"run_{run_id}.json"
    panel.export_agentflow_action.trigger()
    assert Path(asked[-1]).name == f"run_{run_id}.json"
    record = json.loads(target.read_text(encoding="utf-8"))
    assert record["runId"] == run_id and record["status"] == "paused" and len(record["logs"]) == len(events)

    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(target), ""))
    before = store.count_runs()
    # the run is in the history already: importing its record again adds no duplicate, and says so
    panel.import_action.trigger()
    assert store.count_runs() == before and not dialogs.warnings
    assert f"already, as run {run_id[:12]}" in dialogs.infos[-1] and panel.selected_run_ids() == [run_id]
    # once it is gone, the record brings it back
    assert panel.delete_runs([run_id]) == 1
    panel.import_action.trigger()
    assert store.count_runs() == before and not dialogs.warnings
    new_id = run_id
    assert store.events(new_id) == events  # same events
    assert [e.to_wire() for e in store.events(new_id)] == record["logs"]
    assert store.get_run(new_id).status == "paused"
    assert panel.total == before and new_id in page_ids(panel) and panel.selected_run_ids() == [new_id]
    assert "Imported" in panel.message
    panel.import_action.trigger()  # twice: refused
    assert store.count_runs() == before and len(dialogs.infos) == 2


@pytest.mark.parametrize(
    "content, says",
    [
        (b"\x00\xff\xfe garbage", "not a text file"),
        (b"{ not json", "not valid JSON"),
        (b'{"nodes": []}', "not an AgentFlow run record"),
        (b'{"logs": [1, 2]}', "not an AgentFlow run record"),
        (b'{"logs": [], "workflow": {"nodes": "x"}}', "not an AgentFlow run record"),
    ],
)
def test_import_of_a_bad_file_explains_and_changes_nothing(
    qtbot, tmp_path: Path, dialogs: Dialogs, monkeypatch: pytest.MonkeyPatch, content: bytes, says: str
) -> None:
    store = RunStore(tmp_path / "runs.db")
    fill(store, 3)
    panel = make_panel(qtbot, store)
    bad = tmp_path / "run_bad.json"
    bad.write_bytes(content)
    monkeypatch.setattr(QFileDialog, "getOpenFileName", lambda *a, **k: (str(bad), ""))
    panel.import_action.trigger()
    assert len(dialogs.warnings) == 1 and says in dialogs.warnings[0] and "run_bad.json" in dialogs.warnings[0]
    assert store.count_runs() == 3 and panel.total == 3


def test_corrupt_database_shows_unavailable_state(qtbot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "runs.db"
    db.write_bytes(b"this is not an sqlite database at all \x00\x01\x02" * 200)
    shown: list[str] = []
    monkeypatch.setattr(store_open_mod, "_show_store_error", lambda _parent, text: shown.append(text))
    panel = make_panel(qtbot, None)
    store = open_store_for_gui(panel, path=db)
    assert store is None
    assert shown and "damaged" in shown[0] and str(db) in shown[0]
    assert not panel.is_available
    assert panel.stack.currentIndex() == 2 and panel.unavailable_label.isVisible()
    assert panel.unavailable_label.text().startswith("<b>Run history unavailable:</b>")
    assert "damaged" in panel.unavailable_reason
    for a in (panel.open_action, panel.delete_action, panel.import_action, panel.next_action):
        assert not a.isEnabled()
    assert not panel.toolbar.isVisible() and not panel.filter_bar.isVisible() and not panel.pager.isVisible()
    panel.refresh()  # still no crash
    assert not panel.is_available

    # the user moves the damaged file away and tries again
    db.rename(tmp_path / "runs.db.bad")
    qtbot.mouseClick(panel.retry_button, Qt.MouseButton.LeftButton)
    assert panel.is_available and panel.total == 0 and panel.range_label.text() == "No runs"
    assert panel.toolbar.isVisible() and "No runs yet" in panel.empty_label.text()


def test_open_store_for_gui_recovers_interrupted_runs_and_the_message_box_does_not_block(qtbot, tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    store = RunStore(db)
    store.create_run("orphan", flow([start()], []), status="running", owner=False)
    store.close()
    panel = make_panel(qtbot, None)
    store = open_store_for_gui(panel, path=db)
    assert store is not None and panel.is_available
    assert store.get_run("orphan").status == "interrupted"
    assert "marked interrupted" in panel.message
    assert panel.model.data(panel.model.index(0, COL_STATUS)) == "Interrupted"

    # the real (non-blocking) message box: shown, not modal, returns at once
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"garbage" * 100)
    assert open_store_for_gui(None, path=bad) is None
    boxes = list(store_open_mod._open_boxes)
    assert boxes and all(b.isVisible() and not b.isModal() for b in boxes)
    for b in boxes:
        b.close()


def test_refresh_keeps_page_and_selection_and_follows_other_processes(qtbot, tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    ids = fill(store, 120)
    panel = make_panel(qtbot, store)
    panel.next_page()
    chosen = page_ids(panel)[7]
    panel.select_run(chosen)
    wf = flow([start()], [])
    store.create_run("newest", wf, status="completed", started_at=BASE + 10**6, owner=False)
    panel.refresh()
    assert panel.total == 121 and panel.page_offset == 50 and panel.selected_run_ids() == [chosen]
    assert panel.range_label.text() == "51–100 of 121 runs"

    # deleting everything after page 1 from elsewhere clamps the page
    for rid in ids[:80]:
        store.delete_run(rid)
    panel.next_page()
    panel.next_page()
    panel.refresh()
    assert panel.total == 41 and panel.page_offset == 0 and panel.range_label.text() == "1–41 of 41 runs"

    # a run of another process (the CLI) that is running is followed until it ends, and one
    # whose process died becomes interrupted
    store.create_run("cli-live", wf, status="running", started_at=BASE + 2 * 10**6)
    store.create_run("cli-dead", wf, status="running", started_at=BASE + 3 * 10**6, owner=False)
    panel.auto_refresh_interval = 50
    panel.set_filters()
    assert {r.id: r.status for r in panel.model.runs}["cli-live"] == "running"
    store.update_run("cli-live", status="completed", ended_at=BASE + 2 * 10**6 + 3)
    qtbot.waitUntil(lambda: {r.id: r.status for r in panel.model.runs}.get("cli-live") == "completed", timeout=3000)
    assert {r.id: r.status for r in panel.model.runs}["cli-dead"] == "interrupted"


def test_model_formatting() -> None:
    from editor.history.model import format_duration, format_started

    assert [format_duration(x) for x in (None, 0.0004, 0.04, 0.9996, 9.94, 42, 61, 3725, 200000)] == [
        "",
        "0 ms",
        "40 ms",
        "1.0 s",
        "9.9 s",
        "42 s",
        "1 min 01 s",
        "1 h 02 min",
        "2 d 7 h",
    ]
    now = 1_700_000_000.0
    assert format_started(now - 5, now).startswith("Today ")
    assert format_started(now - 86400, now).startswith("Yesterday ")
    assert format_started(now - 10 * 86400, now)[:4].isdigit()


def test_events_column_hides_when_docked_narrow(qtbot, tmp_path: Path) -> None:
    from editor.history.model import COL_EVENTS

    store = RunStore(tmp_path / "runs.db")
    fill(store, 3)
    panel = make_panel(qtbot, store)
    assert not panel.table.isColumnHidden(COL_EVENTS)
    assert panel.model.data(panel.model.index(0, COL_EVENTS)) == "3"  # run0002: 3 events
    panel.resize(500, 600)
    qtbot.waitUntil(lambda: panel.table.isColumnHidden(COL_EVENTS), timeout=2000)
    panel.resize(1100, 600)
    qtbot.waitUntil(lambda: not panel.table.isColumnHidden(COL_EVENTS), timeout=2000)


def test_input_column_shows_the_arguments_of_a_run_without_an_initial_input(qtbot, tmp_path: Path) -> None:
    store = RunStore(tmp_path / "runs.db")
    wf = flow([start(text=""), agent("a")], [link("s", "a")])
    store.create_run(
        "args", wf, initial_input=None, started_at=BASE, owner=False, arguments={"topic": "dark mode", "rounds": 3}
    )
    store.create_run("both", wf, initial_input="hello", started_at=BASE + 1, owner=False, arguments={"tone": "dry"})
    store.create_run("none", wf, initial_input=None, started_at=BASE + 2, owner=False)
    panel = make_panel(qtbot, store)
    model = panel.model
    assert model.headerData(COL_INPUT, Qt.Orientation.Horizontal) == "Input"
    rows = {r.id: i for i, r in enumerate(model.runs)}
    text = {rid: model.data(model.index(i, COL_INPUT)) for rid, i in rows.items()}
    tips = {rid: model.data(model.index(i, COL_INPUT), Qt.ItemDataRole.ToolTipRole) for rid, i in rows.items()}
    assert text == {"args": "topic=dark mode, rounds=3", "both": "hello", "none": ""}
    assert tips["args"] == "(no initial input)\nArguments: topic=dark mode, rounds=3"
    assert tips["both"] == "hello\nArguments: tone=dry"
    assert tips["none"] == "(no initial input)"
    store.close()
