"""A card quotes at most a line of its node's text (issue 13, item 4): a Start node whose input
is tens of megabytes opened at once, then its first paint measured and elided the whole text
(15.7 s for 50 MB). What a card lays out is capped, whatever a kind's summary returns."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from editor.canvas.style import node_layout
from engine import Node
from tests.editor.conftest import write_flow


def test_a_card_lays_out_a_capped_preview_of_long_text() -> None:
    start = Node.model_validate(
        {"id": "s", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "word " * 400_000}}
    )
    agent = Node.model_validate(
        {"id": "a", "type": "agent", "x": 0, "y": 0, "data": {"agentName": "N" * 100_000, "model": "m"}}
    )
    lines = node_layout(start).lines
    assert lines and lines[0][0].startswith("word word") and len(lines[0][0]) <= 400
    lay = node_layout(agent)
    assert lay.title.startswith("NNN") and len(lay.title) <= 400
    assert all(len(text) <= 400 for text, _ in lay.lines)


def test_a_huge_start_input_paints_at_once(window, tmp_path) -> None:
    doc = {
        "nodes": [{"id": "s", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "x " * 2_000_000}}],
        "connections": [],
    }
    assert window.files.open_path(str(write_flow(tmp_path, doc, "huge.flow.json")), ask=False)
    item = window.scene.node_items["s"]
    assert len(item.layout.lines[0][0]) <= 400
    window.view.viewport().repaint()  # the card paints (a preview of 400 characters, elided)
    QApplication.processEvents()
