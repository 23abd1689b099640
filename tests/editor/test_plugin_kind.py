"""A plug-in node kind (tests/plugins, registered through the flowdesk.nodes entry point) in the
editor: palette, generated inspector form with undo, canvas, validation, save and load."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QComboBox, QSpinBox

from editor.panels.inspector import PromptEdit
from engine import load_workflow

from .conftest import flow, open_flow, start, write_flow


def test_the_plugin_kind_in_palette_inspector_canvas_and_file(example_plugin, window, qtbot, tmp_path):
    # Palette: listed with its label and description, after the built-ins.
    palette = window.palette
    item = palette.item_for("template")
    assert item.text() == "Template" and "Fills a text template with the previous output." in item.toolTip()
    assert not item.icon().isNull()
    open_flow(window, write_flow(tmp_path, flow([start()], [])))
    doc = window.document
    nid = doc.add_node("template", 300, 0)
    node = doc.node(nid)
    assert node.type == "template" and node.data.template == "{{input}}" and node.data.repeat == 1
    doc.connect("start", "output", nid, "input")
    # Canvas: drawn in the kind's colour with its input and output.
    item = window.scene.node_items[nid]
    assert item.layout.label == "Template" and item.layout.input_pos is not None
    assert [h for h, _p, _l in item.layout.outputs] == ["output"]
    # Inspector: a form generated from the data model.
    window.scene.select_nodes([nid])
    insp = window.inspector
    form = insp.forms["template"]
    assert insp.stack.currentWidget() is form
    assert insp.header.text() == f"Template · {nid}"
    template, case, repeat, strip = (form.widgets[k] for k in ("template", "case", "repeat", "strip"))
    assert isinstance(template, PromptEdit) and isinstance(case, QComboBox) and isinstance(repeat, QSpinBox)
    assert isinstance(strip, QCheckBox) and strip.text() == "Trim spaces" and strip.isChecked()
    assert [case.itemText(i) for i in range(case.count())] == ["keep", "upper", "lower"]
    assert (repeat.minimum(), repeat.maximum()) == (1, 10)
    assert "replaced by the previous output" in template.toolTip()
    steps = doc.undo_stack.count()
    template.setPlainText("Dear {{input}}")
    assert doc.node(nid).data.template == "Dear {{input}}"
    case.setCurrentIndex(1)
    assert doc.node(nid).data.case == "upper"
    assert doc.undo_stack.count() == steps + 2
    doc.undo_stack.undo()
    assert doc.node(nid).data.case == "keep" and case.currentText() == "keep"
    doc.undo_stack.undo()
    assert doc.node(nid).data.template == "{{input}}" and template.toPlainText() == "{{input}}"
    doc.undo_stack.redo()
    assert doc.node(nid).data.template == "Dear {{input}}"
    # Validation: its own rule shows in the problems, and clears when fixed.
    template.setPlainText("  ")
    qtbot.waitUntil(lambda: "template_empty" in [i.code for i in window.validation.issues], timeout=3000)
    template.setPlainText("ok {{input}}")
    qtbot.waitUntil(lambda: "template_empty" not in [i.code for i in window.validation.issues], timeout=3000)
    # Save and load: the same data, typed by the plug-in's model.
    path = tmp_path / "saved.flow.json"
    doc.save(str(path))
    loaded = load_workflow(path).node(nid)
    assert type(loaded.data).__name__ == "TemplateData" and loaded.data.template == "ok {{input}}"
