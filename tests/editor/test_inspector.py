"""Inspector forms per node type; edits show on the canvas at once."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from editor.panels.inspector import PREVIOUS_OUTPUT

from .conftest import copy_sample, open_flow


def test_forms_follow_selection(window, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    insp = window.inspector
    for nid, page in (("start", "start"), ("triage", "agent"), ("route", "if"), ("signoff", "approval")):
        window.scene.select_nodes([nid])
        assert insp.stack.currentWidget() is insp.pages[page]
    window.scene.select_nodes(["triage", "route"])
    assert insp.stack.currentWidget() is insp.pages["multi"]
    window.scene.clearSelection()
    assert insp.stack.currentWidget() is insp.pages["workflow"]
    assert insp.wf_name.text() == "Support reply review"


def test_prompt_highlight_and_insert_button(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "hello"))
    window.scene.select_nodes(["greeter"])
    insp = window.inspector
    edit = insp.page("agent").user
    assert edit.toPlainText() == ""
    qtbot.mouseClick(edit.insert_button, Qt.MouseButton.LeftButton)
    assert window.document.node("greeter").data.userPrompt == PREVIOUS_OUTPUT
    edit.setPlainText("Say: {{PREVIOUS_OUTPUT}} and {{other}}")
    ranges = edit.document().firstBlock().layout().formats()
    spans = {(r.start, r.length): r.format.foreground().color().name() for r in ranges}
    assert spans[(5, len(PREVIOUS_OUTPUT))] == "#ffb454"
    assert any(length == len("{{other}}") for (_s, length) in spans)


def test_model_and_effort_choices(window, tmp_path):
    open_flow(window, copy_sample(tmp_path, "hello"))
    window.scene.select_nodes(["greeter"])
    insp = window.inspector
    from engine import model_choices

    models = [insp.page("agent").model.itemText(i) for i in range(insp.page("agent").model.count())]
    assert models == [m for m, _label, _p in model_choices()] and models
    insp.page("agent").model.setEditText("my-local-model")  # free text is allowed
    assert window.document.node("greeter").data.model == "my-local-model"
    assert insp.page("agent").effort.count() >= 1
    insp.page("agent").effort.setEditText("high")
    assert window.document.node("greeter").data.reasoningEffort == "high"


def test_tools_and_subagent_handle(window, tmp_path):
    open_flow(window, copy_sample(tmp_path, "hello"))
    window.scene.select_nodes(["greeter"])
    insp = window.inspector
    item = window.scene.node_items["greeter"]
    assert "subagent" not in [h for h, _, _ in item.layout.outputs]
    insp.page("agent").subs.setChecked(True)
    assert window.document.node("greeter").data.tools.subagents
    assert "subagent" in [h for h, _, _ in item.layout.outputs]
    insp.page("agent").web.setChecked(True)
    assert window.document.node("greeter").data.tools.web_search


def test_condition_list_edits_handles(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    window.scene.select_nodes(["route"])
    insp = window.inspector
    item = window.scene.node_items["route"]
    insp.page("if").add_button.click()
    assert [h for h, _, _ in item.layout.outputs] == ["condition-0", "condition-1", "false"]
    row = insp.page("if").rows[1]
    op, value = row.operator, row.value
    value.setFocus()
    qtbot.keyClicks(value, "late")
    op.setCurrentIndex(1)
    cond = window.document.node("route").data.conditions[1]
    assert (cond.operator, cond.value) == ("equal", "late")
    assert item.layout.outputs[1][2] == "equal 'late'"
    insp.page("if").rows[0].remove.click()  # remove the first condition: its link goes too
    assert [c.value for c in window.document.node("route").data.conditions] == ["late"]
    assert window.document.connection(("route", "condition-0", "signoff", "input")) is None


def test_start_and_approval_forms(window, qtbot, tmp_path):
    open_flow(window, copy_sample(tmp_path, "review"))
    window.scene.select_nodes(["signoff"])
    window.inspector.page("approval").prompt.setPlainText("OK?")
    assert window.document.node("signoff").data.prompt == "OK?"
    window.scene.select_nodes(["start"])
    window.inspector.page("start").input.setPlainText("Hello")
    assert window.document.node("start").data.initialInput == "Hello"
    assert window.scene.node_items["start"].layout.lines[0][0] == "Hello"


def test_model_list_is_the_engines_catalogue_with_user_models(app, qtbot, dialogs, tmp_path, monkeypatch):
    """A model the user adds in settings.json (``providers.<id>.models``) is offered by the inspector."""
    import json

    from editor.main_window import MainWindow
    from engine import model_choices, reasoning_efforts

    monkeypatch.setenv("FLOWDESK_CONFIG_DIR", str(tmp_path / "cfg"))
    (tmp_path / "cfg").mkdir()
    (tmp_path / "cfg" / "settings.json").write_text(
        json.dumps(
            {
                "providers": {
                    "ollama": {
                        "models": [{"id": "my-finetune:7b", "name": "My finetune", "reasoningEfforts": ["low", "max"]}]
                    },
                    "gpu-box": {"base_url": "http://gpu-box:8000/v1", "models": [{"id": "big-model"}]},
                }
            }
        ),
        encoding="utf-8",
    )
    choices = model_choices()
    assert ("my-finetune:7b", "My finetune  ·  Ollama (local server)", "ollama") in choices
    assert ("big-model", "big-model  ·  gpu-box", "gpu-box") in choices
    assert ("gpt-4o-mini", "GPT-4o mini  ·  OpenAI", "openai") in choices  # the shipped catalogue too
    assert reasoning_efforts("my-finetune:7b") == ["low", "max"]
    assert reasoning_efforts("no-such-model") == ["low", "medium", "high"]

    win = MainWindow()
    qtbot.addWidget(win)
    open_flow(win, copy_sample(tmp_path, "hello"))
    win.scene.select_nodes(["greeter"])
    box = win.inspector.page("agent").model
    models = [box.itemText(i) for i in range(box.count())]
    assert models == [m for m, _label, _p in choices]
    assert "my-finetune:7b" in models and "big-model" in models
    box.setCurrentIndex(models.index("my-finetune:7b"))
    assert win.document.node("greeter").data.model == "my-finetune:7b"
    effort = win.inspector.page("agent").effort
    assert [effort.itemText(i) for i in range(effort.count())] == ["low", "max"]
    win.close()


def test_model_list_survives_bad_settings(tmp_path, monkeypatch):
    """Unreadable settings fall back to the shipped catalogue: the model box is never empty."""
    from engine import ProviderConfigError, load_settings, model_choices

    monkeypatch.setenv("FLOWDESK_CONFIG_DIR", str(tmp_path))
    (tmp_path / "settings.json").write_text("{", encoding="utf-8")
    try:
        load_settings()
    except ProviderConfigError:
        pass
    else:
        raise AssertionError("bad settings were accepted")
    models = [m for m, _l, _p in model_choices()]
    assert "gpt-4o-mini" in models and "echo" in models


def test_the_inspector_is_as_big_as_the_page_it_shows(window, tmp_path):
    """A page neither scrolls sideways nor scrolls on past its end because of a bigger page
    that is not shown (a stack is otherwise as big as its largest page)."""
    open_flow(window, copy_sample(tmp_path, "web-brief"))
    insp = window.inspector
    shown = []
    for node_id in ("api", "writer", "start", "api"):  # an HTTP request, an agent, the start, and back
        window.scene.select_nodes([node_id])
        QApplication.processEvents()
        page = insp.stack.currentWidget()
        shown.append(page)
        assert insp.stack.sizeHint() == page.sizeHint(), node_id
        assert insp.stack.minimumSizeHint() == page.minimumSizeHint(), node_id
    assert len(set(map(id, shown))) == 3
