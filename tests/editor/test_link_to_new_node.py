"""A new link let go on empty canvas opens the quick-add menu there, offering only the kinds that
can take that link; the one picked is added with its input at the drop point and linked, as one
undo step. Let go again (Esc), nothing changes; a picked-up link let go there is still deleted."""

from __future__ import annotations

from PySide6.QtCore import QPointF, Qt

from .conftest import agent, flow, link, mouse_drag, open_flow, start, write_flow


def _menu_kinds(window) -> list[str]:
    return [a.text() for a in window.edit.quick_add_menu.actions()[1:] if a.isVisible()]


def test_a_link_dropped_on_the_canvas_adds_a_linked_node(window, qtbot, tmp_path):
    open_flow(window, write_flow(tmp_path, flow([start("s", 0, 0)])))
    scene, doc = window.scene, window.document
    port = scene.node_items["s"].port_scene_pos("output")
    drop = port + QPointF(260, 40)
    mouse_drag(qtbot, window.view, port, drop)
    menu = window.edit.quick_add_menu
    assert menu.isVisible()
    # the link stays drawn, from the port to where it was let go, while the menu asks
    pending = scene.pending_link
    assert pending is not None and pending.scene() is scene
    assert pending.boundingRect().contains(drop) and pending.boundingRect().contains(port)
    offered = _menu_kinds(window)
    assert "Agent" in offered and "Approval" in offered and "Join" in offered
    assert "Start" not in offered  # a Start node takes no input
    search = menu.actions()[0].defaultWidget()
    assert search.placeholderText() == "Add a linked node…"
    qtbot.keyClicks(search, "agent")
    qtbot.keyClick(search, Qt.Key.Key_Return)
    new = doc.workflow.nodes[-1]
    assert new.type == "agent" and new.id != "s"
    assert scene.pending_link is None and pending.scene() is None  # replaced by the real link
    assert [c.key() for c in doc.workflow.connections] == [("s", "output", new.id, "input")]
    item = scene.node_items[new.id]
    assert (item.port_scene_pos("input") - drop).manhattanLength() < 2  # its input where the link was let go
    assert [i.node_id for i in scene.selectedItems() if hasattr(i, "node_id")] == [new.id]
    assert doc.undo_stack.count() == 1  # node and link: one step
    doc.undo_stack.undo()
    assert [n.id for n in doc.workflow.nodes] == ["s"] and doc.workflow.connections == []


def test_only_kinds_that_take_the_link_are_offered(window, qtbot, tmp_path):
    open_flow(
        window,
        write_flow(tmp_path, flow([start("s", 0, 0), agent("lead", 400, 0, subagents=True)], [link("s", "lead")])),
    )
    scene = window.scene
    port = scene.node_items["lead"].port_scene_pos("subagent")
    mouse_drag(qtbot, window.view, port, port + QPointF(0, 220))
    offered = _menu_kinds(window)
    assert offered == ["Agent", "Subagent"], offered  # a subagent link: agents only
    drop = port + QPointF(0, 220)
    window.edit.quick_add_menu.actions()[1].trigger()  # Agent
    new = window.document.workflow.nodes[-1]
    assert window.document.workflow.connections[-1].key() == ("lead", "subagent", new.id, "input")
    assert (scene.node_items[new.id].port_scene_pos("input") - drop).manhattanLength() < 2


def test_dismissing_the_menu_changes_nothing_and_a_picked_up_link_is_still_deleted(window, qtbot, tmp_path):
    open_flow(window, write_flow(tmp_path, flow([start("s", 0, 0), agent("a", 400, 0)], [link("s", "a")])))
    scene, doc = window.scene, window.document
    port = scene.node_items["a"].port_scene_pos("output")
    mouse_drag(qtbot, window.view, port, port + QPointF(200, 200))
    menu = window.edit.quick_add_menu
    assert menu.isVisible()
    menu.close()
    assert scene.pending_link is None
    assert [n.id for n in doc.workflow.nodes] == ["s", "a"] and doc.undo_stack.count() == 0
    window.edit.quick_add_menu = None
    # a link picked up by its arrow end and let go on the canvas is deleted (no menu)
    end = scene.node_items["a"].port_scene_pos("input")
    mouse_drag(qtbot, window.view, end + QPointF(-3, 0), end + QPointF(-150, 250))
    assert doc.workflow.connections == []
    assert window.edit.quick_add_menu is None
