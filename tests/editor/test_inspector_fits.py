"""Every kind's inspector page fits the inspector at its default width: no sideways scrolling,
nothing cut at the right edge (a Flow node's long "Inputs (…)" title made the whole page wider)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLabel

from editor.document import PALETTE_KINDS

from .conftest import SAMPLES, flow, open_flow, start, write_flow


@pytest.mark.parametrize("kind", list(PALETTE_KINDS))
def test_the_inspector_page_of_each_kind_fits_without_scrolling_sideways(window, qtbot, tmp_path, kind):
    open_flow(window, write_flow(tmp_path, flow([start("s", 0, 0)])))
    window.edit.add_node_at(kind, window.view.mapToScene(window.view.viewport().rect().center()))
    QApplication.processEvents()
    scroll = window.inspector.scroll
    qtbot.waitUntil(lambda: scroll.widget() is not None and scroll.widget().isVisible(), timeout=2000)
    QApplication.processEvents()
    bar = scroll.horizontalScrollBar()
    assert bar.maximum() == 0, (kind, scroll.widget().minimumSizeHint().width(), scroll.viewport().width())


def _labels_of_a_new(window, tmp_path, kind: str) -> set[str]:
    """The visible labels of the inspector page of a ``kind`` node just added."""
    open_flow(window, write_flow(tmp_path, flow([start("s", 0, 0)])))
    window.edit.add_node_at(kind, window.view.mapToScene(window.view.viewport().rect().center()))
    QApplication.processEvents()
    page = window.inspector.stack.currentWidget()
    return {label.text() for label in page.findChildren(QLabel) if label.isVisible()}


def test_web_page_fields_read_as_words(window, qtbot, tmp_path):
    shown = _labels_of_a_new(window, tmp_path, "fetch")
    assert {"URL", "CSS selector", "Max characters"} <= shown
    assert not {"Url", "Selector", "Max chars"} & shown


def test_a_loops_until_field_says_what_it_does(window, qtbot, tmp_path):
    shown = _labels_of_a_new(window, tmp_path, "loop")
    assert "Stops when an iteration's output contains this (any case); empty: runs all iterations." in shown


def test_the_workflow_page_shown_first_fits_too(window, qtbot):
    # A file opened in a new window, nothing selected: the workflow's page. The stack was not yet
    # fitted to it (no page change), so the Start page it was not showing made it scroll sideways.
    open_flow(window, SAMPLES / "web-brief.flow.json")
    QApplication.processEvents()
    scroll = window.inspector.scroll
    qtbot.waitUntil(lambda: scroll.widget().isVisible(), timeout=2000)
    assert window.inspector.stack.currentWidget() is window.inspector.pages["workflow"]
    window.resizeDocks([window.inspector_dock], [330], Qt.Orientation.Horizontal)
    QApplication.processEvents()
    assert scroll.horizontalScrollBar().maximum() == 0, (
        scroll.widget().minimumSizeHint().width(),
        scroll.viewport().width(),
    )
