"""One table maps a node kind to its inspector page (a generated form unless one is registered),
and the canvas takes its run words from the engine's reducer."""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from editor.canvas.run_overlay import CANVAS_STATES, canvas_states
from editor.canvas.style import RUN_COLOR, RUN_STATE_LABEL
from editor.editing import WorkflowDocument
from editor.panels.data_form import DataForm
from editor.panels.inspector import InspectorPanel
from editor.panels.inspector_pages import INSPECTOR_PAGES, register_inspector_page, unregister_inspector_page
from engine import NODE_STATES, RunEvent, RunState, parse_workflow

FLOW = {
    "nodes": [
        {"id": "start", "type": "start", "position": {"x": 0, "y": 0}, "data": {"initialInput": "hi"}},
        {"id": "page", "type": "fetch", "position": {"x": 300, "y": 0}, "data": {"url": "https://example.com"}},
    ],
    "connections": [{"source": "start", "target": "page", "sourceHandle": "output", "targetHandle": "input"}],
}


def test_the_built_in_pages_are_one_table():
    assert {"agent", "start", "if", "approval", "http", "flow", "action"} <= set(INSPECTOR_PAGES)
    assert "fetch" not in INSPECTOR_PAGES  # a generated form


class _Probe(QWidget):
    def __init__(self, host: Any) -> None:
        super().__init__()
        self.loaded: list[dict] = []
        self.label = QLabel()
        QVBoxLayout(self).addWidget(self.label)

    def heading(self, node: Any) -> str:
        return f"Probe · {node.id}"

    def load(self, data: dict) -> None:
        self.loaded.append(data)
        self.label.setText(data["url"])


def test_a_registered_page_replaces_the_generated_form(qtbot):
    doc = WorkflowDocument(parse_workflow(FLOW), None)
    insp = InspectorPanel(doc)
    qtbot.addWidget(insp)
    insp.show_node("page")
    assert isinstance(insp.stack.currentWidget(), DataForm)  # no page registered: generated
    register_inspector_page("fetch", _Probe)
    try:
        fresh = InspectorPanel(doc)
        qtbot.addWidget(fresh)
        fresh.show_node("page")
        page = fresh.stack.currentWidget()
        assert isinstance(page, _Probe) and fresh.pages["fetch"] is page
        assert page.loaded[-1]["url"] == "https://example.com" and fresh.header.text() == "Probe · page"
    finally:
        unregister_inspector_page("fetch")


def test_canvas_words_come_from_the_reducer():
    assert set(CANVAS_STATES) <= set(RUN_COLOR) | {"not_reached"}
    assert set(CANVAS_STATES) <= set(RUN_STATE_LABEL)
    assert set(CANVAS_STATES) - {"not_reached"} <= set(NODE_STATES)
    wf = parse_workflow(FLOW)
    events = [
        RunEvent("__run__", "run_status", "running", timestamp=1.0),
        RunEvent("start", "step_start", "", timestamp=1.1),
        RunEvent("start", "node_output", "hi", timestamp=1.2),
        RunEvent("page", "step_start", "", timestamp=1.3),
        RunEvent("page", "error", "no network", timestamp=1.4),
        RunEvent("__run__", "run_status", "failed", timestamp=1.5),
    ]
    state = RunState.of(wf, events)
    words, tips = canvas_states(state)
    assert words["page"] == state.states["page"] == "failed"
    assert tips["page"] == state.details["page"].error
