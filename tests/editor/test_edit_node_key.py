"""F2 (Edit ▸ Edit Node): the selected node's first field in the inspector, focused with its text
selected, so typing replaces it (an agent's name); with no single node selected, it says so."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication, QLineEdit

from .conftest import agent, flow, open_flow, start, write_flow


def test_f2_types_over_the_selected_agents_name(window, qtbot, tmp_path):
    open_flow(window, write_flow(tmp_path, flow([start("s", 0, 0), agent("a", 400, 0, "Writer")])))
    window.scene.select_nodes(["a"])
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_F2)
    focused = QApplication.focusWidget()
    assert isinstance(focused, QLineEdit) and window.inspector.isAncestorOf(focused)
    assert focused.text() == focused.selectedText() == "Writer"
    qtbot.keyClicks(focused, "Editor")
    assert window.document.node("a").data.agentName == "Editor"


def test_f2_without_one_node_selected_says_so(window, qtbot, tmp_path):
    open_flow(window, write_flow(tmp_path, flow([start("s", 0, 0), agent("a", 400, 0)])))
    window.scene.select_nodes(["s", "a"])
    assert window.edit.edit_selected_node() is False
    assert window.statusBar().currentMessage() == "Select one node to edit it."
