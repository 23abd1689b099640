"""The editor side of data flow (issue 15): the Start node's variables table (edits, undo/redo,
saved), the run console's arguments form (defaults, required marked, values reach the run), a
retry shown on the canvas against the fake OpenAI server, and the error port linked and followed."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCharFormat
from PySide6.QtWidgets import QApplication

from engine.llm._http import RetryPolicy
from engine.llm.config import HttpSettings
from engine.llm.registry import make_resolver
from tests.fakes.openai_server import FakeLLMServer, error_reply, openai_text

from ..editor.conftest import mouse_drag
from .conftest import choose_provider, followed, press_run, states


def _flow(nodes: list[dict[str, Any]], links: list[tuple[str, str, str]]) -> dict[str, Any]:
    return {
        "name": "Data flow",
        "version": 1,
        "nodes": nodes,
        "connections": [{"source": s, "target": t, "sourceHandle": h, "targetHandle": "input"} for s, h, t in links],
    }


def _agent(nid: str, x: float, y: float, prompt: str = "", **data: Any) -> dict[str, Any]:
    return {
        "id": nid,
        "type": "agent",
        "x": x,
        "y": y,
        "data": {"agentName": nid.capitalize(), "userPrompt": prompt, "model": "gpt-4o-mini", **data},
    }


def _open(window, tmp_path, data: dict[str, Any], name: str = "flow.flow.json"):
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    assert window.files.open_path(str(path), ask=False)
    window.view.set_zoom(1.0)
    window.view.centerOn(window.scene.items_bounds().center())
    QApplication.processEvents()
    return path


def _variables(window, node_id: str = "start") -> list[dict[str, Any]]:
    return [v.model_dump() for v in window.document.node(node_id).data.variables]


# ---------------------------------------------------------------------------- variables table
def test_variables_table_edits_are_undoable_steps_and_saved(qtbot, window, tmp_path):
    path = _open(
        window,
        tmp_path,
        _flow(
            [
                {"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": ""}},
                _agent("writer", 320, 0, "About {{topic}}"),
            ],
            [("start", "output", "writer")],
        ),
    )
    window.scene.select_nodes(["start"])
    insp = window.inspector
    table = insp.page("start").variables_table
    assert table.isVisible() and table.count() == 0
    stack = window.document.undo_stack
    steps = stack.count()

    qtbot.mouseClick(table.add_button, Qt.MouseButton.LeftButton)
    assert _variables(window) == [
        {"name": "var1", "value": None, "description": "", "type": "string", "required": False}
    ]
    assert table.count() == 1
    name, value, kind, required, desc = table._cells(0)
    name.setFocus()
    name.selectAll()
    qtbot.keyClicks(name, "topic")  # five keystrokes: one undo step
    value.setFocus()
    qtbot.keyClicks(value, "otters")
    kind.setCurrentIndex(kind.findData("string"))
    required.click()
    desc.setFocus()
    qtbot.keyClicks(desc, "What to write about")
    want = {
        "name": "topic",
        "value": "otters",
        "description": "What to write about",
        "type": "string",
        "required": True,
    }
    assert _variables(window) == [want]
    assert stack.count() == steps + 5  # add, name, value, required, description
    # The agent's prompt now knows {{topic}}: the variable view lists it at the writer.
    window.scene.select_nodes(["writer"])
    names = dict(insp.available.names_with_origin())
    assert names["topic"].startswith("variable (string)")
    assert "PREVIOUS_OUTPUT" in names
    assert not insp.page("agent").user.highlighter.is_unknown(
        next(r for r in __import__("engine").find_references("{{topic}}"))
    )

    stack.undo()  # description
    stack.undo()  # required
    assert _variables(window)[0]["required"] is False and _variables(window)[0]["description"] == ""
    stack.undo()
    stack.undo()
    assert _variables(window)[0]["name"] == "var1"
    stack.undo()
    assert _variables(window) == []
    for _ in range(5):
        stack.redo()
    assert _variables(window) == [want]
    window.scene.select_nodes(["start"])
    assert table.count() == 1 and table._cells(0)[0].text() == "topic"

    # a second variable, moved to the top, then removed
    qtbot.mouseClick(table.add_button, Qt.MouseButton.LeftButton)
    table.select_variable(1)
    qtbot.mouseClick(table.up_button, Qt.MouseButton.LeftButton)
    assert [v["name"] for v in _variables(window)] == ["var1", "topic"]
    table.select_variable(0)
    qtbot.mouseClick(table.remove_button, Qt.MouseButton.LeftButton)
    assert [v["name"] for v in _variables(window)] == ["topic"]

    window.document.save(str(path))
    saved = json.loads(path.read_text(encoding="utf-8"))
    start = next(n for n in saved["nodes"] if n["id"] == "start")
    assert start["data"]["variables"] == [want]


def test_prompt_highlights_unknown_references_and_completes_names(qtbot, window, tmp_path):
    _open(
        window,
        tmp_path,
        _flow(
            [
                {
                    "id": "start",
                    "type": "start",
                    "x": 0,
                    "y": 0,
                    "data": {"initialInput": "", "variables": [{"name": "topic", "value": "otters"}]},
                },
                _agent("draft", 320, 0, "", outputVar="draft_text"),
                _agent("review", 640, 0, ""),
            ],
            [("start", "output", "draft"), ("draft", "output", "review")],
        ),
    )
    window.scene.select_nodes(["review"])
    insp = window.inspector
    edit = insp.page("agent").user
    edit.setFocus()
    edit.setPlainText("Check {{draft_text}} on {{topic}}; {{nope}} and {{PREVIOUS_OUTPUT}}")
    spans = {
        (r.start, r.length): (r.format.foreground().color().name(), r.format.underlineStyle())
        for r in edit.document().firstBlock().layout().formats()
    }
    text = edit.toPlainText()
    fmt = {name: spans[(text.index("{{" + name), len(name) + 4)] for name in ("draft_text", "topic", "nope")}
    assert fmt["draft_text"][0] == "#79c0ff" and fmt["topic"][0] == "#79c0ff"
    assert fmt["nope"][1] == QTextCharFormat.UnderlineStyle.WaveUnderline
    assert fmt["draft_text"][1] != QTextCharFormat.UnderlineStyle.WaveUnderline
    window.validation.run_validation()
    warning = edit.warning_at(text.index("{{nope}}") + 3)
    # the validator's own warning for this node and field
    assert warning.startswith("'Review' refers to '{{nope}}' in userPrompt") or "{{nope}}" in warning, warning
    assert any(i.code == "unknown_reference" and i.message == warning for i in window.validation.issues)
    assert edit.warning_at(text.index("{{topic}}") + 3) == ""
    # draft_text is an output upstream of review, not of draft itself
    window.scene.select_nodes(["draft"])
    assert "draft_text" not in dict(insp.available.names_with_origin())

    window.scene.select_nodes(["review"])
    edit.setFocus()
    edit.setPlainText("Say {{dra")
    cursor = edit.textCursor()
    cursor.movePosition(cursor.MoveOperation.End)
    edit.setTextCursor(cursor)
    qtbot.keyClick(edit, Qt.Key.Key_Space, Qt.KeyboardModifier.ControlModifier)
    popup = edit.completer.popup()
    qtbot.waitUntil(popup.isVisible, timeout=2000)
    assert edit.completer.currentCompletion() == "draft_text"
    # the popup says where each name comes from; the name alone is matched and inserted
    shown = popup.model().index(0, 0).data()
    assert shown.startswith("draft_text") and "output of" in shown, shown
    assert popup.objectName() == "completionPopup"  # framed by the style sheet
    edit.insert_completion(edit.completer.currentCompletion())
    assert edit.toPlainText() == "Say {{draft_text}}"
    assert window.document.node("review").data.userPrompt == "Say {{draft_text}}"


def test_policy_section_follows_the_spec(qtbot, window, tmp_path):
    _open(
        window,
        tmp_path,
        _flow(
            [
                {"id": "start", "type": "start", "x": 0, "y": 0, "data": {}},
                _agent("a", 320, 0),
                {"id": "lp", "type": "loop", "x": 640, "y": 0, "data": {}},
            ],
            [("start", "output", "a")],
        ),
    )
    insp = window.inspector
    window.scene.select_nodes(["a"])
    assert insp.policy.isVisible()
    insp.policy.error_mode.setCurrentIndex(insp.policy.error_mode.findData("retry"))
    assert window.document.node("a").data.errorMode == "retry"
    insp.policy.max_retries.setValue(2)
    assert window.document.node("a").data.maxRetries == 2
    window.document.undo_stack.undo()
    assert window.document.node("a").data.maxRetries is None
    window.scene.select_nodes(["lp"])
    assert not insp.policy.isVisible()  # a loop does no work: no policy
    form = insp.stack.currentWidget()
    assert set(form.widgets) >= {"maxIterations", "until"}
    window.scene.select_nodes(["start"])
    assert not insp.policy.isVisible()


# ---------------------------------------------------------------------------- run form
def test_run_form_prefills_marks_required_and_passes_values(qtbot, window, tmp_path):
    path = _open(
        window,
        tmp_path,
        _flow(
            [
                {
                    "id": "start",
                    "type": "start",
                    "x": 0,
                    "y": 0,
                    "data": {
                        "initialInput": "go",
                        "variables": [
                            {"name": "topic", "required": True, "description": "What to write about"},
                            {"name": "tone", "value": "calm"},
                            {"name": "words", "type": "number", "value": 50},
                        ],
                    },
                },
                _agent("writer", 320, 0, "Write {{words}} words about {{topic}} in a {{tone}} tone."),
            ],
            [("start", "output", "writer")],
        ),
    )
    choose_provider(window, "echo")
    console = window.run_console
    form = console.arguments
    assert form.isVisible()
    assert form.fields["tone"].text() == "calm" and form.fields["words"].text() == "50"
    assert form.fields["topic"].text() == ""
    assert form.labels["topic"].text() == "topic *" and form.labels["tone"].text() == "tone"
    assert form.required_names() == ["topic"]

    # A required variable left empty: the engine refuses the run and the console says why.
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    console.start_run()
    assert not console.bridge.is_active
    assert "topic" in console.header.status_text and "required" in console.header.status_text

    form.fields["topic"].setText("otters")
    with qtbot.waitSignal(console.run_finished, timeout=10000) as finished:
        press_run(qtbot, window)
    assert finished.args == ["completed"]
    prompts = [e.content for e in console.all_events() if e.type == "start_prompt"]
    assert prompts and "Write 50 words about otters in a calm tone." in prompts[0]

    # Remembered per document: a new window (or a reopen) offers the values last used.
    from editor.run.arguments import remembered_arguments

    assert remembered_arguments(str(path)) == {"topic": "otters", "tone": "calm", "words": "50"}
    form.fields["topic"].setText("")
    console.set_workflow(None)
    window.files.open_path(str(path), ask=False)
    assert console.arguments.fields["topic"].text() == "otters"


# ---------------------------------------------------------------------------- policies on the canvas
@pytest.fixture
def server(monkeypatch, tmp_path) -> Iterator[FakeLLMServer]:
    for name in (
        "OPENAI_API_KEY",
        "OPENAI_BASE_URL",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
    ):
        monkeypatch.delenv(name, raising=False)
    with FakeLLMServer() as s:
        yield s


def _use_server(window, server: FakeLLMServer) -> None:
    choose_provider(window, "echo")  # a provider is chosen (no set-up dialog); the runs below use the fake server
    fast: dict[str, Any] = {
        "http": HttpSettings(connectTimeout=1.0, readTimeout=20.0, maxRetries=0),
        "retry": RetryPolicy(max_retries=0, base_delay=0.01, max_delay=0.05),
    }
    window.run_console.set_resolver_factory(lambda: make_resolver("openai", base_url=server.base_url, **fast))


def test_a_retry_is_shown_on_the_canvas(qtbot, window, tmp_path, server):
    _open(
        window,
        tmp_path,
        _flow(
            [
                {"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "hi"}},
                _agent("flaky", 320, 0, errorMode="retry", maxRetries=3, retryDelayMs=400),
            ],
            [("start", "output", "flaky")],
        ),
    )
    _use_server(window, server)
    server.push(error_reply(500, "overloaded"), error_reply(500, "overloaded"), openai_text("fine at last"))
    console = window.run_console
    item = window.scene.node_items["flaky"]
    seen: set[str] = set()
    # the retry badges (a working card also names its model while it runs: another kind of badge)
    console.run_badges_changed.connect(lambda b: seen.update(t for t, k in b.values() if k == "retry"))
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    press_run(qtbot, window)
    qtbot.waitUntil(lambda: item.run_badge == "attempt 2 of 4", timeout=5000)
    assert item.run_badge_kind == "retry" and item.run_state == "retrying"
    assert "Attempt 2 of 4" in item.toolTip()
    qtbot.waitUntil(lambda: item.run_badge == "attempt 3 of 4", timeout=5000)
    qtbot.waitUntil(lambda: console.status == "completed", timeout=10000)
    assert seen == {"attempt 2 of 4", "attempt 3 of 4"}
    assert item.run_badge == "" and states(window.scene)["flaky"] == "done"
    retries = [e for e in console.visible_entries() if e.type == "step_retry"]
    assert [e.label for e in retries] == ["Retry", "Retry"]
    from editor.run.log_view import summary_for

    line = summary_for(retries[0])
    assert line.startswith("Attempt 2 of 4 in 400 ms — the last one failed:") and "overloaded" in line


def test_the_error_port_is_linked_and_followed(qtbot, window, tmp_path, server):
    _open(
        window,
        tmp_path,
        _flow(
            [
                {"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "hi"}},
                _agent("flaky", 320, 0),
                _agent("fallback", 700, 220, "Recover: {{PREVIOUS_OUTPUT}}"),
                _agent("next", 700, -60),
            ],
            [("start", "output", "flaky"), ("flaky", "output", "next")],
        ),
    )
    item = window.scene.node_items["flaky"]
    handles = [h for h, _p, _l in item.layout.outputs]
    assert handles == ["output", "error"]  # the error port, drawn apart below the output
    # Drag a link from the error port to the fallback agent's input.
    target = window.scene.node_items["fallback"]
    mouse_drag(qtbot, window.view, item.port_scene_pos("error"), target.port_scene_pos("input"))
    keys = [k for k in window.scene.edge_items if k[1] == "error"]
    assert keys == [("flaky", "error", "fallback", "input")]
    edge = window.scene.edge_items[keys[0]]
    assert edge.error_link

    _use_server(window, server)
    server.push(error_reply(400, "bad request: the model refused"), openai_text("recovered"))
    console = window.run_console
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    with qtbot.waitSignal(console.run_finished, timeout=10000) as finished:
        press_run(qtbot, window)
    assert finished.args == ["completed"]
    qtbot.waitUntil(lambda: states(window.scene)["fallback"] == "done", timeout=2000)
    s = states(window.scene)
    assert s["flaky"] == "failed" and s["next"] == "not_reached"
    assert ("flaky", "error", "fallback") in followed(window.scene)
    assert edge.followed
    prompts = [e.content for e in console.all_events() if e.type == "start_prompt" and e.node_id == "fallback"]
    assert prompts and "the model refused" in prompts[0]


def test_a_node_skipped_by_its_policy_is_shown_skipped_and_the_branch_goes_on(qtbot, window, tmp_path, server):
    _open(
        window,
        tmp_path,
        _flow(
            [
                {"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "hi"}},
                _agent("flaky", 320, 0, errorMode="skip"),
                _agent("next", 640, 0, "Go on"),
            ],
            [("start", "output", "flaky"), ("flaky", "output", "next")],
        ),
    )
    _use_server(window, server)
    server.push(error_reply(400, "bad request"), openai_text("went on"))
    console = window.run_console
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    with qtbot.waitSignal(console.run_finished, timeout=10000) as finished:
        press_run(qtbot, window)
    assert finished.args == ["completed"]
    qtbot.waitUntil(lambda: states(window.scene)["next"] == "done", timeout=2000)
    item = window.scene.node_items["flaky"]
    assert item.run_state == "skipped"
    assert "Skipped after an error" in item.toolTip() and "bad request" in item.toolTip()
    skipped = [e for e in console.visible_entries() if e.type == "step_skipped"]
    assert [e.label for e in skipped] == ["Skipped"]
