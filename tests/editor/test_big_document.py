"""Big documents on the canvas: items only for what is in view (issue 13, item 4).

Structure is asserted, not wall time: how many items an open makes, that what is scrolled
to gets items, that find reaches a card that had none, and that edits keep the lazy
projection in step with the model.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QApplication

from editor.canvas.items.edge import EdgeItem
from editor.canvas.items.node import NodeItem
from editor.canvas.scene import CanvasScene
from tests.bench.bench_open import many_nodes_doc
from tests.editor.conftest import write_flow


def _counts(scene: CanvasScene) -> tuple[int, int]:
    items = scene.items()
    return sum(isinstance(i, NodeItem) for i in items), sum(isinstance(i, EdgeItem) for i in items)


def test_a_20k_node_file_opens_with_items_only_for_what_is_in_view(window, qtbot, tmp_path):
    path = write_flow(tmp_path, many_nodes_doc(20_000), "big.flow.json")
    assert window.files.open_path(str(path), ask=False)
    QApplication.processEvents()
    scene, view = window.scene, window.view
    assert scene.lazy and len(window.document.workflow.nodes) == 20_000
    # Fitted to 20,000 cards: an overview painted from the model, no card items at all.
    assert scene.overview
    nodes, edges = _counts(scene)
    assert nodes <= CanvasScene.REALIZE_CAP and edges <= 2 * CanvasScene.REALIZE_CAP
    view.viewport().repaint()  # the overview paints without error

    # At 100 % on a card far into the graph: its neighbourhood gets items, and only that.
    target = window.document.node("a15000")
    view.set_zoom(1.0, QPointF(target.x + 100, target.y + 50))
    QApplication.processEvents()
    assert not scene.overview
    assert scene.node_items.has("a15000") and scene.node_items.has("a15001")
    assert scene.edge_items.has(("a15000", "output", "a15001", "input"))
    nodes, edges = _counts(scene)
    assert 0 < nodes <= CanvasScene.REALIZE_CAP and edges <= nodes + 2
    assert not scene.node_items.has("a10")
    view.viewport().repaint()

    # Find reaches a card that has no item yet, selects it and scrolls to it.
    window.act_find.trigger()
    qtbot.keyClicks(window.find_bar.edit, "Agent 42")  # also Agent 420..., Agent 4200...
    assert window.find_bar.count.text().endswith("found") and not scene.node_items.has("a42")
    window.find_bar.next_match()
    assert scene.selected_node_ids() == ["a42"]
    assert scene.node_items.peek("a42").found
    node = window.document.node("a42")
    assert view.visible_scene_rect().contains(QPointF(node.x + 50, node.y + 20))
    window.find_bar.close_bar()

    # Fit (F) frames all of it again from the model.
    view.fit_all()
    bounds = scene.items_bounds()
    assert bounds.width() > 80_000 and view.visible_scene_rect().adjusted(-1, -1, 1, 1).contains(bounds)


def test_lazy_projection_follows_edits_and_undo(window, tmp_path, monkeypatch):
    monkeypatch.setattr(CanvasScene, "LAZY_NODES", 50)
    monkeypatch.setattr(CanvasScene, "REALIZE_CAP", 40)
    path = write_flow(tmp_path, many_nodes_doc(400), "mid.flow.json")
    assert window.files.open_path(str(path), ask=False)
    scene, view, doc = window.scene, window.view, window.document
    assert scene.lazy
    a = doc.node("a5")
    view.set_zoom(1.0, QPointF(a.x + 100, a.y + 50))
    QApplication.processEvents()
    assert scene.node_items.has("a5") and not scene.node_items.has("a390")

    # Items made on demand keep the state pushed in before (issues, run states).
    scene.set_run_states({"a390": "done"})
    assert not scene.node_items.has("a390")
    assert scene.node_items["a390"].run_state == "done"
    assert "a391" in scene.node_items and "nope" not in scene.node_items
    # A card made on demand gets its links to cards that have items.
    assert scene.edge_items.has(("a389", "output", "a390", "input")) == scene.node_items.has("a389")

    # Moving a card without an item moves its rectangle in the grid; undo puts it back.
    far = doc.node("a200")
    before = scene.obstacles.rects["a200"]
    doc.move_nodes({"a200": (far.x, far.y)}, {"a200": (far.x + 40, far.y + 30)})
    after = scene.obstacles.rects["a200"]
    assert (after[0] - before[0], after[1] - before[1]) == (40, 30)
    doc.undo_stack.undo()
    assert scene.obstacles.rects["a200"] == before

    # Select all counts every node, items or not; any other selection ends it.
    window.edit.select_all()
    assert len(scene.selected_node_ids()) == 400 and scene.node_items.peek("a5").isSelected()
    assert scene.node_items["a395"].isSelected()  # made while all are selected
    scene.clearSelection()
    assert scene.selected_node_ids() == []
    window.edit.select_all()
    scene.select_nodes(["a5"])
    assert scene.selected_node_ids() == ["a5"]

    # Removing a node drops its rectangle and links; undo brings the item back when asked for.
    doc.delete(["a6"])
    assert "a6" not in scene.obstacles.rects and not scene.node_items.has("a6")
    assert not any("a6" in (k[0], k[2]) for k in scene.edge_items)
    doc.undo_stack.undo()
    QApplication.processEvents()
    assert "a6" in scene.obstacles.rects and scene.node_items["a6"].node_id == "a6"
    assert scene.edge_items.has(("a5", "output", "a6", "input"))


def test_cancelling_a_big_open_keeps_the_open_document(window, tmp_path):
    from PySide6.QtCore import QTimer

    from editor.controllers import files

    small = write_flow(tmp_path, many_nodes_doc(3), "small.flow.json")
    assert window.files.open_path(str(small), ask=False)
    before = window.document.workflow
    big = write_flow(tmp_path, many_nodes_doc(20_000), "big.flow.json")
    assert big.stat().st_size > files.BIG_FILE  # read under the progress dialog
    seen = []

    def cancel() -> None:
        dialog = getattr(window.files, "_open_progress", None)
        seen.append(dialog is not None and dialog.isVisible())
        if dialog is not None:
            dialog.cancel()

    QTimer.singleShot(0, cancel)  # runs inside the dialog's loop, long before 20k nodes are read
    assert not window.files.open_path(str(big), ask=False)
    assert seen == [True]
    assert window.document.workflow is before and len(window.scene.node_items) == 3
    assert window.document.path == str(small.resolve())
