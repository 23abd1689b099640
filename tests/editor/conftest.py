"""Editor test fixtures: isolated settings and data folder, non-blocking dialogs, a window.

Dialogs never block: QMessageBox and QFileDialog statics are replaced by recorders whose
answers a test sets on the ``dialogs`` fixture.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QMouseEvent
from PySide6.QtWidgets import QApplication, QFileDialog, QMessageBox

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"


class Dialogs:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str]] = []
        self.question_answer = QMessageBox.StandardButton.Discard
        self.open_path = ""
        self.save_path = ""

    def _record(self, kind: str, title: str, text: str) -> None:
        self.calls.append((kind, title, text))

    def of(self, kind: str) -> list[tuple[str, str, str]]:
        return [c for c in self.calls if c[0] == kind]


@pytest.fixture(autouse=True)
def isolated(tmp_path, monkeypatch):
    """Settings (settings.json and the GUI's gui.ini) and the data folder live in tmp_path;
    nothing touches the user's real ones."""
    monkeypatch.setenv("FLOWDESK_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("FLOWDESK_DATA_DIR", str(tmp_path / "data"))
    yield tmp_path


@pytest.fixture(autouse=True)
def dialogs(monkeypatch) -> Dialogs:
    d = Dialogs()

    def question(parent, title, text, *args, **kwargs):
        d._record("question", title, text)
        return d.question_answer

    def critical(parent, title, text, *args, **kwargs):
        d._record("critical", title, text)
        return QMessageBox.StandardButton.Ok

    def information(parent, title, text, *args, **kwargs):
        d._record("information", title, text)
        return QMessageBox.StandardButton.Ok

    monkeypatch.setattr(QMessageBox, "question", staticmethod(question))
    monkeypatch.setattr(QMessageBox, "critical", staticmethod(critical))
    monkeypatch.setattr(QMessageBox, "warning", staticmethod(critical))
    monkeypatch.setattr(QMessageBox, "information", staticmethod(information))
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (d.open_path, "")))
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(lambda *a, **k: (d.save_path, "")))
    return d


@pytest.fixture
def app(qapp):
    from editor.app import configure_app

    configure_app(qapp)
    return qapp


@pytest.fixture
def window(app, qtbot, dialogs):
    from editor.main_window import MainWindow

    win = MainWindow()
    qtbot.addWidget(win)
    win.resize(1300, 850)
    win.show()
    qtbot.waitExposed(win)
    yield win
    dialogs.question_answer = QMessageBox.StandardButton.Discard
    win.close()


def copy_sample(tmp_path: Path, name: str) -> Path:
    dst = tmp_path / f"{name}.flow.json"
    shutil.copy(SAMPLES / f"{name}.flow.json", dst)
    return dst


def write_flow(tmp_path: Path, data: dict[str, Any], name: str = "test.flow.json") -> Path:
    p = tmp_path / name
    p.write_text(json.dumps(data), encoding="utf-8")
    return p


def open_flow(window, path: Path) -> None:
    assert window.files.open_path(str(path), ask=False)
    window.view.set_zoom(1.0)
    window.view.centerOn(window.scene.items_bounds().center())
    QApplication.processEvents()


def vp_point(view, scene_pos: QPointF) -> QPoint:
    return view.mapFromScene(scene_pos)


def mouse_drag(
    qtbot, view, start: QPointF, end: QPointF, steps: int = 6, modifier=Qt.KeyboardModifier.NoModifier
) -> None:
    """Press, move in steps, release on the viewport with qtbot (left button)."""
    vp = view.viewport()
    a, b = vp_point(view, start), vp_point(view, end)
    qtbot.mousePress(vp, Qt.MouseButton.LeftButton, modifier, a)
    for i in range(1, steps + 1):
        p = QPoint(round(a.x() + (b.x() - a.x()) * i / steps), round(a.y() + (b.y() - a.y()) * i / steps))
        _move(vp, p)
    qtbot.mouseRelease(vp, Qt.MouseButton.LeftButton, modifier, b)


def _move(widget, pos: QPoint) -> None:
    # QTest.mouseMove does not always carry the pressed button; send a real move with it.
    ev = QMouseEvent(
        QMouseEvent.Type.MouseMove,
        QPointF(pos),
        QPointF(widget.mapToGlobal(pos)),
        Qt.MouseButton.NoButton,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    QApplication.sendEvent(widget, ev)


def flow(nodes: list[dict], connections: list[dict] | None = None, **extra) -> dict:
    return {"name": "Test", "version": 1, "nodes": nodes, "connections": connections or [], **extra}


def agent(nid: str, x: float, y: float, name: str = "", subagents: bool = False) -> dict:
    return {
        "id": nid,
        "type": "agent",
        "x": x,
        "y": y,
        "data": {
            "agentName": name or nid,
            "systemPrompt": "",
            "userPrompt": "",
            "model": "gpt-4o-mini",
            "reasoningEffort": "low",
            "tools": {"web_search": False, "subagents": subagents},
        },
    }


def start(nid: str = "start", x: float = 0, y: float = 0) -> dict:
    return {"id": nid, "type": "start", "x": x, "y": y, "data": {"initialInput": "hi"}}


def link(s: str, t: str, sh: str = "output", th: str = "input") -> dict:
    return {"source": s, "target": t, "sourceHandle": sh, "targetHandle": th}
