"""Streamed text repaints only its row of the run log (issue 32: a token on screen at once)."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QRect

from editor.run import entry_pane
from editor.run.entry_pane import EntryPane
from editor.run.log_model import LogFilterProxy, LogModel
from editor.run.log_view import LogDelegate, LogListView
from engine import RunEvent


class _Paints(QObject):
    def __init__(self) -> None:
        super().__init__()
        self.rects: list[QRect] = []

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt override)
        if event.type() == QEvent.Type.Paint:
            self.rects.append(event.rect())
        return False


def test_a_growing_streamed_answer_repaints_its_row_alone(qtbot) -> None:
    model = LogModel()
    proxy = LogFilterProxy()
    proxy.setSourceModel(model)
    view = LogListView()
    view.setUniformItemSizes(True)
    view.setModel(proxy)
    view.setItemDelegate(LogDelegate(proxy.is_collapsed, view))
    qtbot.addWidget(view)
    view.resize(600, 500)
    view.show()
    qtbot.waitExposed(view)
    model.add_events([RunEvent("s", "run_status", "running"), RunEvent("a", "step_start", "A")])
    model.add_events([RunEvent("a", "llm_delta", "one ")])
    paints = _Paints()
    view.viewport().installEventFilter(paints)
    qtbot.wait(50)
    paints.rects.clear()
    model.add_events([RunEvent("a", "llm_delta", "two ")])
    qtbot.waitUntil(lambda: bool(paints.rects), timeout=2000)
    row = view.visualRect(proxy.index(2, 0))
    assert model.entries[2].content == "one two "
    assert all(rect == row for rect in paints.rects), (paints.rects, row)


def test_the_entry_pane_shows_a_streamed_answer_in_frames_and_its_last_piece(qtbot, monkeypatch) -> None:
    monkeypatch.setattr(entry_pane, "STREAM_REFRESH", 1.0)  # (wide: a loaded machine may stall for a while)
    model = LogModel()
    pane = EntryPane()
    qtbot.addWidget(pane)
    model.add_events([RunEvent("a", "step_start", "A"), RunEvent("a", "llm_delta", "one ")])
    entry = model.streaming_entry("a")
    assert entry is not None
    pane.show_entry(entry)
    assert "one" in pane.view.toPlainText()
    model.add_events([RunEvent("a", "llm_delta", "two ")])
    pane.show_entry(entry)  # within the interval: not rendered again yet
    model.add_events([RunEvent("a", "llm_delta", "three")])
    pane.show_entry(entry)
    assert "three" not in pane.view.toPlainText()
    qtbot.waitUntil(lambda: "one two three" in pane.view.toPlainText(), timeout=4000)
