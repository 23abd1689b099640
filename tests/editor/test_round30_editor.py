"""Issue 30, items 21-27: what a new user met in the editor."""

from __future__ import annotations

import json

import pytest
from PySide6.QtWidgets import QMessageBox

from engine import loads_workflow

from ..run.conftest import qloop  # noqa: F401 - fixture
from .conftest import SAMPLES, copy_sample, open_flow, write_flow


def _position_flow(count: int, columns: int = 50) -> dict:
    nodes = [{"id": "start", "type": "start", "position": {"x": 0, "y": 0}, "data": {}}]
    for i in range(1, count):
        nodes.append(
            {
                "id": f"n{i}",
                "type": "agent",
                "position": {"x": 300 * (i % columns), "y": 200 * (i // columns)},
                "data": {"agentName": f"A{i}", "systemPrompt": "", "userPrompt": "", "model": "gpt-4o-mini"},
            }
        )
    conns = [
        {"source": nodes[i]["id"], "target": nodes[i + 1]["id"], "sourceHandle": "output", "targetHandle": "input"}
        for i in range(count - 1)
    ]
    return {"name": "React Flow positions", "version": 1, "nodes": nodes, "connections": conns}


def test_react_flow_position_is_read_when_x_and_y_are_absent():
    wf = loads_workflow(json.dumps(_position_flow(3)))
    assert [(n.x, n.y) for n in wf.nodes] == [(0, 0), (300, 0), (600, 0)]
    # x/y win over position when both are written; a save writes x/y, not position.
    raw = {"nodes": [{"id": "s", "type": "start", "x": 5, "y": 6, "position": {"x": 90, "y": 90}}], "connections": []}
    assert (loads_workflow(json.dumps(raw)).nodes[0].x, loads_workflow(json.dumps(raw)).nodes[0].y) == (5, 6)
    from engine import workflow_to_dict

    saved = workflow_to_dict(wf)["nodes"][1]
    assert (saved["x"], saved["y"]) == (300, 0) and "position" not in saved


def test_react_flow_position_with_a_bad_coordinate_is_named():
    from engine import WorkflowLoadError

    raw = {"nodes": [{"id": "s", "type": "start", "position": {"x": "left", "y": 0}}], "connections": []}
    with pytest.raises(WorkflowLoadError) as err:
        loads_workflow(json.dumps(raw))
    assert "nodes[0].x" in str(err.value)


def test_two_thousand_nodes_written_with_position_open_laid_out(window, tmp_path):
    path = write_flow(tmp_path, _position_flow(2000), "positions.flow.json")
    assert window.files.open_path(str(path), ask=False)
    spots = {(n.x, n.y) for n in window.document.workflow.nodes}
    assert len(spots) == 2000  # not stacked on one spot
    bounds = window.scene.items_bounds()
    assert bounds.width() > 10_000 and bounds.height() > 7_000


def _loop_without_branches() -> dict:
    return {
        "name": "Loop",
        "version": 1,
        "nodes": [
            {"id": "start", "type": "start", "x": 0, "y": 0, "data": {}},
            {"id": "loop", "type": "loop", "x": 300, "y": 0, "data": {"maxIterations": 3, "until": ""}},
        ],
        "connections": [{"source": "start", "target": "loop", "sourceHandle": "output", "targetHandle": "input"}],
    }


def test_loop_with_no_body_branch_is_listed_and_counted_once(window, tmp_path):
    from engine import validate

    issues = [i for i in validate(loads_workflow(json.dumps(_loop_without_branches()))) if i.code == "loop_no_body"]
    assert len(issues) == 1
    open_flow(window, write_flow(tmp_path, _loop_without_branches(), "loop.flow.json"))
    window.validation.run_validation()
    listed = [window.problems.list.item(i).text() for i in range(window.problems.list.count())]
    assert len([t for t in listed if "Body branch" in t]) == 1, listed
    assert window.validation.label.text().startswith("1 error"), window.validation.label.text()


def test_file_open_shows_the_dialog_before_the_unsaved_changes_prompt(window, tmp_path, dialogs, monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    open_flow(window, copy_sample(tmp_path, "review"))
    window.document.add_node("approval", 100, 500)
    order: list[str] = []
    monkeypatch.setattr(
        QFileDialog,
        "getOpenFileName",
        staticmethod(lambda *a, **k: (order.append("dialog"), (dialogs.open_path, ""))[1]),
    )
    dialogs.open_path = ""  # cancelled: nothing is asked, nothing changes
    window.files.open_dialog()
    assert order == ["dialog"] and not dialogs.of("question") and window.document.is_modified()
    dialogs.open_path = str(copy_sample(tmp_path, "hello"))
    dialogs.question_answer = QMessageBox.StandardButton.Discard
    window.files.open_dialog()
    questions = dialogs.of("question")
    assert order == ["dialog", "dialog"] and len(questions) == 1
    assert "review.flow.json" in questions[0][2]
    assert window.document.path.endswith("hello.flow.json")


def test_unsaved_changes_prompt_names_an_untitled_document_by_its_workflow(window, dialogs):
    window.files.open_sample(str(SAMPLES / "review.flow.json"))
    window.document.add_node("approval", 100, 500)
    dialogs.question_answer = QMessageBox.StandardButton.Cancel
    assert not window.files.maybe_save()
    text = dialogs.of("question")[-1][2]
    assert window.document.workflow.display_name() in text and "Untitled" not in text


def test_samples_open_as_copies_from_file_open_too(window, tmp_path, dialogs):
    sample = SAMPLES / "hello.flow.json"
    before = sample.read_bytes()
    dialogs.open_path = str(sample)
    window.files.open_dialog()
    assert window.document.path is None  # an untitled copy: Save asks where
    assert window.document.workflow.nodes
    window.document.add_node("approval", 100, 500)
    dialogs.save_path = ""  # Save As cancelled
    assert not window.files.save()
    assert sample.read_bytes() == before
    assert str(sample.resolve()) not in window.files.recent_files()


def test_quitting_closes_the_windows_it_opened_and_stops_their_runs(window, qtbot):
    from PySide6.QtWidgets import QMainWindow

    from editor.window.command_bar import CommandRunWindow

    compare = QMainWindow()  # stands for Compare / a run's view: any window the main one opened
    compare.show()
    qtbot.addWidget(compare)
    stopped: list[bool] = []

    class FakeConsole:  # only the run console's cancel is watched; the window is the real class's code
        class bridge:  # noqa: N801
            status = "running"

        def cancel_run(self):
            stopped.append(True)

    class CommandWindow(CommandRunWindow):
        def __init__(self):
            QMainWindow.__init__(self)
            self.console = FakeConsole()

    cmd = CommandWindow()
    cmd.show()
    qtbot.addWidget(cmd)
    with qtbot.waitSignal(window.closed, timeout=2000):
        window.act_quit.trigger()
    assert not window.isVisible() and not compare.isVisible() and not cmd.isVisible()
    assert stopped == [True]


def test_quit_cancels_pending_runs_and_stops_the_local_model():
    import asyncio

    from editor.app import finish

    loop = asyncio.new_event_loop()
    try:

        async def forever():
            await asyncio.sleep(3600)

        task = loop.create_task(forever())
        loop.run_until_complete(asyncio.sleep(0))
        finish(loop, timeout=1.0)
        assert task.cancelled()
    finally:
        loop.close()


QUIT_SCRIPT = r"""
import sys, time
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QMainWindow
import editor.app as app_mod

made = app_mod.create_window


def create(argv):
    win = made(argv)
    extra = QMainWindow()  # a Compare-like window left open
    extra.setWindowTitle("Compare")
    extra.show()
    win._extra = extra

    def quit_now():
        print("QUIT", time.monotonic(), flush=True)
        win.act_quit.trigger()

    QTimer.singleShot(300, quit_now)
    return win


app_mod.create_window = create
code = app_mod.main([])
print("RETURNED", flush=True)
sys.exit(code)
"""


def test_app_process_exits_within_three_seconds_of_quit(tmp_path):
    import os
    import subprocess
    import sys
    import time

    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "FLOWDESK_CONFIG_DIR": str(tmp_path / "config"),
        "FLOWDESK_DATA_DIR": str(tmp_path / "data"),
    }
    proc = subprocess.Popen(
        [sys.executable, "-c", QUIT_SCRIPT], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        out, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise AssertionError(f"the app did not exit after quit: {out} {err[-2000:]}") from None
    ended = time.monotonic()
    quit_at = float(next(line.split()[1] for line in out.splitlines() if line.startswith("QUIT")))
    assert proc.returncode == 0, err[-2000:]
    assert ended - quit_at < 3.0


def test_pinned_output_label_wraps_with_the_pin_icon_and_never_scrolls_sideways(app, qtbot):
    from PySide6.QtGui import QIcon

    from editor.resources import icon_path
    from editor.run.details import NodeRunDetails

    assert icon_path("pin").endswith("pin.svg") and not QIcon(icon_path("pin")).isNull()
    details = NodeRunDetails()
    qtbot.addWidget(details)
    details.resize(320, 600)
    details.show()
    qtbot.waitExposed(details)
    details.set_pin("agent", "a-very-long-pinned-value-without-spaces-" * 40 + " and more words " * 30)
    qtbot.wait(50)
    text = details.pin_label.text()
    assert "pin.svg" in text and "📌" not in text
    assert details.pin_label.wordWrap()
    assert details.scroll.horizontalScrollBar().maximum() == 0  # no sideways scroll
    for view in (details.input_view, details.output_view):
        assert view.width() <= details.scroll.viewport().width()  # Input/Output not clipped


def test_pinned_card_shows_the_pin_icon_not_a_dot(window, tmp_path, monkeypatch):
    from PySide6.QtGui import QImage, QPainter

    from editor.canvas.items import node as node_items

    data = {
        "name": "Pin",
        "version": 1,
        "nodes": [
            {"id": "start", "type": "start", "x": 0, "y": 0, "data": {}},
            {
                "id": "a",
                "type": "agent",
                "x": 300,
                "y": 0,
                "data": {
                    "agentName": "A",
                    "systemPrompt": "",
                    "userPrompt": "",
                    "model": "gpt-4o-mini",
                    "pinnedOutput": "kept",
                },
            },
        ],
        "connections": [],
    }
    open_flow(window, write_flow(tmp_path, data, "pin.flow.json"))
    item = window.scene.node_items["a"]
    assert item.pinned
    painted: list[object] = []
    real = node_items.pin_icon()
    monkeypatch.setattr(node_items, "pin_icon", lambda: (painted.append(True), real)[1])
    item.setCacheMode(item.CacheMode.NoCache)  # painted now, not from a pixmap made before
    image = QImage(600, 400, QImage.Format.Format_ARGB32)
    painter = QPainter(image)
    window.scene.render(painter, source=item.sceneBoundingRect().adjusted(-20, -20, 20, 20))
    painter.end()
    assert painted  # the card's mark is the pin icon


@pytest.mark.usefixtures("qloop")
def test_console_open_leaves_most_of_the_height_to_the_canvas(window, qtbot, tmp_path):
    from editor.window.settings import settings

    settings().setValue("run/provider", "echo")
    window.resize(1600, 1000)
    qtbot.wait(50)
    open_flow(window, copy_sample(tmp_path, "hello"))
    with qtbot.waitSignal(window.run_console.run_finished, timeout=5000):
        window.act_run.trigger()
    qtbot.wait(50)
    assert window.run_console_dock.isVisible()
    assert window.view.height() >= 0.55 * window.height(), (window.view.height(), window.height())


@pytest.mark.usefixtures("qloop")
def test_compare_runs_is_in_the_run_menu_and_compares_the_latest_two(window, qtbot, tmp_path, dialogs):
    from editor.window.settings import settings

    menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&Run")
    assert window.act_compare in menu.actions()
    window.act_compare.trigger()  # no runs yet: says so, opens nothing
    assert any("not two runs" in text for _k, _t, text in dialogs.of("critical"))
    settings().setValue("run/provider", "echo")
    open_flow(window, copy_sample(tmp_path, "hello"))
    for _ in range(2):
        with qtbot.waitSignal(window.run_console.run_finished, timeout=5000):
            window.act_run.trigger()
        qtbot.waitUntil(lambda: not window.run_console.bridge.is_busy, timeout=3000)
    window.history.refresh()
    window.history.table.clearSelection()
    qtbot.waitUntil(lambda: window.history.model.rowCount() >= 2, timeout=3000)
    window.act_compare.trigger()
    compare = window.history.compare_windows[-1]
    qtbot.addWidget(compare)
    assert compare.isVisible() and compare.run_b == window.run_console.run_id


def test_imported_typeagent_dollar_references_are_said_to_work_and_do(window, qtbot):
    from pathlib import Path

    from PySide6.QtWidgets import QLabel

    from editor.panels.variables import AvailableNames
    from engine import TemplateScope, resolve_templates

    fixture = Path(__file__).resolve().parents[1] / "fixtures" / "imports" / "typeagent_page_digest.recipe.json"
    assert window.files.open_path(str(fixture), ask=False)
    agent = window.document.node("n3")
    assert "${focus}" in agent.data.userPrompt  # kept as written (the engine reads both forms)
    window.scene.clearSelection()
    window.scene.node_items["n3"].setSelected(True)
    qtbot.wait(50)
    names = window.inspector.findChild(AvailableNames)
    texts = [label.text() for label in names.findChildren(QLabel)]
    assert any("{{name}}" in t and "${name}" in t and "both work" in t for t in texts), texts
    scope = TemplateScope(variables={"focus": "prices"})
    assert resolve_templates("${focus}", scope) == resolve_templates("{{focus}}", scope) == "prices"
