"""Learning and routing in the window: the run form checks each variable's rules as the user
types (pattern, enum as a drop-down, min/max, pathMustExist) and refuses to start a run the
engine would refuse; Save as flow… on a run whose agent called tools; Repair… on a failed
node, then Run from here."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from PySide6.QtWidgets import QComboBox

from editor.run.arguments import RunArguments
from engine.llm.base import tool_name_for
from engine.llm.registry import make_resolver
from tests.fakes.openai_server import FakeLLMServer, error_reply, openai_plain, openai_text, openai_tool_calls

from .conftest import choose_provider, states
from .test_dataflow_ui import _agent, _flow, _open

DECLARED = [
    {"name": "code", "pattern": "[A-Z]{3}", "required": True},
    {"name": "colour", "enum": ["red", "green"], "value": "red"},
    {"name": "n", "type": "number", "min": 1, "max": 5, "value": 3},
    {"name": "file", "pathMustExist": True},
]


def test_fields_are_checked_as_you_type(qtbot, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here.txt").write_text("x")
    form = RunArguments()
    qtbot.addWidget(form)
    form.set_variables(DECLARED)
    assert isinstance(form.fields["colour"], QComboBox)
    assert [form.fields["colour"].itemText(i) for i in range(form.fields["colour"].count())] == ["", "red", "green"]
    assert set(form.problems) == {"code"} and "required" in form.problems["code"]  # empty required
    with qtbot.waitSignal(form.validity_changed) as sig:
        form.fields["code"].setText("ABC")
    assert sig.args == [True] and form.valid
    form.fields["code"].setText("abc")
    assert "(pattern)" in form.problems["code"] and "code" in form.fields["code"].toolTip()
    assert "d1242f" in form.fields["code"].styleSheet()
    form.fields["code"].setText("XYZ")
    form.fields["n"].setText("6")
    assert "(max)" in form.problems["n"]
    form.fields["n"].setText("1")  # inclusive
    assert "n" not in form.problems
    form.fields["n"].setText("lots")
    assert "not a number" in form.problems["n"]
    form.fields["n"].setText("5")
    form.fields["file"].setText("nope.txt")
    assert "(pathMustExist)" in form.problems["file"]
    form.fields["file"].setText("here.txt")
    assert form.valid
    form.fields["colour"].setCurrentText("green")
    assert form.values()["colour"] == "green"


def test_the_console_refuses_a_run_the_form_marks(qtbot, window, tmp_path) -> None:
    _open(
        window,
        tmp_path,
        _flow(
            [
                {"id": "start", "type": "start", "x": 0, "y": 0,
                 "data": {"initialInput": "go", "variables": [{"name": "code", "pattern": "[A-Z]{3}", "value": "ABC"}]}},
                _agent("writer", 320, 0, "Code {{code}}"),
            ],
            [("start", "output", "writer")],
        ),
    )  # fmt: skip
    choose_provider(window, "echo")
    console = window.run_console
    console.arguments.fields["code"].setText("abcd")
    assert console.start_run() is None and not console.bridge.is_active
    assert "code" in console.header.status_text and "pattern" in console.header.status_text
    console.arguments.fields["code"].setText("ab")  # the refusal follows the field as it is edited
    assert console.header.status_text.startswith("Cannot start the run") and "got 'ab'" in console.header.status_text
    console.arguments.fields["code"].setText("XYZ")
    assert console.header.status_text == "Ready"  # what it said before: not a stale refusal beside a fine form
    console.arguments.fields["code"].setText("lower")
    assert console.header.status_text == "Ready"  # typing alone says nothing until Run is pressed again
    console.arguments.fields["code"].setText("XYZ")
    with qtbot.waitSignal(console.run_finished, timeout=10000) as finished:
        console.start_run()
    assert finished.args == ["completed"]
    console.arguments.fields["code"].setText("bad")  # after a run: its status comes back once fixed
    assert console.start_run() is None
    console.arguments.fields["code"].setText("QRS")
    assert console.header.status_text == "● Completed"


# ---------------------------------------------------------------------------- Save as flow…
@pytest.fixture
def server(monkeypatch) -> Iterator[FakeLLMServer]:
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    with FakeLLMServer() as s:
        yield s


def _use_server(window, server: FakeLLMServer) -> None:
    choose_provider(window, "echo")
    window.run_console.set_resolver_factory(lambda: make_resolver("openai", base_url=server.base_url))


def test_save_as_flow_opens_the_learned_flow_with_its_reasons(qtbot, window, tmp_path, server) -> None:
    hotels = tool_name_for("Hotels", "hotels")

    def handler(rec):
        system = rec.system_prompt or ""
        if system.startswith("You turn a recorded agent run"):
            proposal = {
                "variables": [{"name": "city", "type": "string", "description": "Where", "from": "Lisbon"}],
                "triggers": ["hotels in $(city:wildcard)"],
                "reasons": "The city comes from the request.",
            }
            return openai_plain(json.dumps(proposal))
        if system == "You are Hotels.":
            return openai_text("Hotel Azul")
        if "tools" in rec.json and not rec.tool_results:
            return openai_tool_calls([(hotels, {"input": "hotels in Lisbon"})])
        return openai_text("Stay at Hotel Azul.")

    server.handler = handler
    _open(
        window,
        tmp_path,
        _flow(
            [
                {"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "Find hotels in Lisbon"}},
                _agent(
                    "plan", 320, 0, "", systemPrompt="You are Planner.", tools={"web_search": False, "subagents": True}
                ),
                _agent("hotels", 320, 200, "{{PREVIOUS_OUTPUT}}", agentName="Hotels", systemPrompt="You are Hotels."),
            ],
            [("start", "output", "plan"), ("plan", "subagent", "hotels")],
        ),
    )
    _use_server(window, server)
    console = window.run_console
    assert not console.header.learn_button.isVisible()
    with qtbot.waitSignal(console.run_finished, timeout=10000) as finished:
        console.start_run()
    assert finished.args == ["completed"]
    qtbot.waitUntil(lambda: console.header.learn_button.isVisible(), timeout=3000)
    assert not console.header.repair_button.isVisible()
    window.document.undo_stack.resetClean()  # nothing to save: the learned flow replaces it
    with qtbot.waitSignal(window.learn.learned, timeout=10000) as learned:
        console.header.learn_button.click()
    wf, proposal = learned.args
    assert window.document.workflow.name == wf.name
    kinds = [n.type for n in window.document.workflow.nodes]
    assert kinds == ["start", "agent", "agent"]
    assert window.document.workflow.node("call1").data.userPrompt == "hotels in {{city}}"
    box = window.learn.reasons_box
    assert box is not None and "The city comes from the request." in box.text() and "hotels in $(city" in box.text()
    box.close()


# ---------------------------------------------------------------------------- Repair… then Run from here
def test_repair_from_the_console_then_run_from_here(qtbot, window, tmp_path, server) -> None:
    counts = {"prep": 0}

    def handler(rec):
        system = rec.system_prompt or ""
        if "repair one failing node" in system:
            return openai_plain(json.dumps({"patch": {"model": "good-model"}, "reason": "that model does not exist"}))
        if rec.json.get("model") == "bad-model":
            return error_reply(404, "The model `bad-model` does not exist")
        if system == "You are Prep.":
            counts["prep"] += 1
        return openai_text("ok " + rec.json["messages"][-1]["content"])

    server.handler = handler
    _open(
        window,
        tmp_path,
        _flow(
            [
                {"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "go"}},
                _agent("prep", 320, 0, "", systemPrompt="You are Prep."),
                _agent("use", 640, 0, "", model="bad-model"),
            ],
            [("start", "output", "prep"), ("prep", "output", "use")],
        ),
    )
    _use_server(window, server)
    console = window.run_console
    with qtbot.waitSignal(console.run_finished, timeout=10000) as finished:
        console.start_run()
    assert finished.args == ["failed"]
    qtbot.waitUntil(lambda: console.header.repair_button.isVisible(), timeout=3000)
    assert not console.header.learn_button.isVisible()
    console.header.repair_button.click()
    dialog = window.repair.repair_dialog
    qtbot.waitUntil(lambda: dialog.accept_button.isEnabled(), timeout=5000)
    assert "good-model" in dialog.diff_view.toPlainText()
    steps = window.document.undo_stack.count()
    dialog.accept_button.click()
    assert window.document.node("use").data.model == "good-model"
    assert window.document.undo_stack.count() == steps + 1  # one undoable edit
    box = window.repair.repair_question
    with qtbot.waitSignal(console.run_finished, timeout=10000) as finished:
        box.button(box.StandardButton.Yes).click()
    assert finished.args == ["completed"]
    assert states(window.scene)["prep"] == "cached" and states(window.scene)["use"] == "done"
    assert counts["prep"] == 1  # upstream reused


def test_a_stored_run_shown_from_the_history_offers_save_as_flow(qtbot, window, tmp_path, server) -> None:
    hotels = tool_name_for("Hotels", "hotels")
    server.handler = lambda rec: (
        openai_text("Hotel Azul")
        if rec.system_prompt == "You are Hotels."
        else openai_tool_calls([(hotels, {"input": "hotels in Lisbon"})])
        if "tools" in rec.json and not rec.tool_results
        else openai_text("Stay at Hotel Azul.")
    )
    _open(
        window,
        tmp_path,
        _flow(
            [
                {"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "Find hotels in Lisbon"}},
                _agent("plan", 320, 0, "", tools={"web_search": False, "subagents": True}),
                _agent("hotels", 320, 200, "{{PREVIOUS_OUTPUT}}", agentName="Hotels", systemPrompt="You are Hotels."),
            ],
            [("start", "output", "plan"), ("plan", "subagent", "hotels")],
        ),
    )
    _use_server(window, server)
    console = window.run_console
    with qtbot.waitSignal(console.run_finished, timeout=10000):
        console.start_run()
    run_id = console.run_id
    console.clear()
    assert not console.header.learn_button.isVisible()
    wf = window.store.workflow_of(run_id)
    qtbot.waitUntil(lambda: len(list(window.store.iter_events(run_id))) > 5, timeout=5000)
    assert console.replay(wf, window.store.iter_events(run_id), run_id=run_id, status="completed")
    assert console.header.learn_button.isVisible() and not console.header.repair_button.isVisible()
