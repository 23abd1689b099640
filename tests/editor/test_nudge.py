"""Arrow keys move the selected nodes (10 px; a grid step when snapping; Shift: five steps), a
run of presses on the same nodes is one undo step; with nothing selected they scroll the view."""

from __future__ import annotations

from PySide6.QtCore import Qt

from editor.canvas.style import GRID
from editor.canvas.view import NUDGE_STEP

from .conftest import agent, flow, open_flow, start, write_flow


def _pos(window, nid: str) -> tuple[float, float]:
    node = window.document.node(nid)
    return node.x, node.y


def test_arrow_keys_nudge_the_selection_as_one_undo_step(window, qtbot, tmp_path):
    open_flow(window, write_flow(tmp_path, flow([start("s", 0, 0), agent("a", 400, 0), agent("b", 400, 300)])))
    view, doc = window.view, window.document
    window.scene.select_nodes(["a", "b"])
    view.setFocus()
    stack = doc.undo_stack
    n0 = stack.count()
    for key in (Qt.Key.Key_Right, Qt.Key.Key_Right, Qt.Key.Key_Down):
        qtbot.keyClick(view, key)
    assert _pos(window, "a") == (400 + 2 * NUDGE_STEP, NUDGE_STEP)
    assert _pos(window, "b") == (400 + 2 * NUDGE_STEP, 300 + NUDGE_STEP)
    assert _pos(window, "s") == (0, 0)
    assert stack.count() == n0 + 1  # three presses, one step
    item = window.scene.node_items["a"]
    assert (item.pos().x(), item.pos().y()) == _pos(window, "a")  # the card moved with its node
    qtbot.keyClick(view, Qt.Key.Key_Left, Qt.KeyboardModifier.ShiftModifier)
    assert _pos(window, "a") == (400 + 2 * NUDGE_STEP - 5 * NUDGE_STEP, NUDGE_STEP)
    stack.undo()
    assert _pos(window, "a") == (400, 0) and _pos(window, "b") == (400, 300)
    # another selection is another step; with snapping a step is the grid's
    window.act_snap.setChecked(True)
    window.scene.select_nodes(["s"])
    qtbot.keyClick(view, Qt.Key.Key_Up)
    assert _pos(window, "s") == (0, -GRID) and stack.count() == n0 + 1
    window.act_snap.setChecked(False)


def test_without_a_selection_arrow_keys_scroll_the_view(window, qtbot, tmp_path):
    open_flow(window, write_flow(tmp_path, flow([start("s", 0, 0), agent("a", 3000, 2000)])))
    view = window.view
    window.scene.clearSelection()
    view.setFocus()
    bar = view.horizontalScrollBar()
    before = bar.value()
    qtbot.keyClick(view, Qt.Key.Key_Right)
    assert bar.value() > before
    assert _pos(window, "s") == (0, 0) and _pos(window, "a") == (3000, 2000)
    assert window.document.undo_stack.count() == 0
