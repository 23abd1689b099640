"""Ctrl+K: the command bar lists trigger matches with their bound arguments, then library flows,
then "Ask the model…"; Enter runs the chosen flow in its own run window."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from engine import FlowLibrary, set_default_library
from tests.run.conftest import qloop  # noqa: F401  (asyncio on the Qt loop for the run)


def _flow(fid: str, name: str, variables: list, triggers: list, prompt: str) -> dict:
    return {
        "id": fid,
        "name": name,
        "description": f"{name} (test library)",
        "version": 1,
        "triggers": triggers,
        "nodes": [
            {"id": "start", "type": "start", "x": 80, "y": 120, "data": {"initialInput": "", "variables": variables}},
            {
                "id": "work",
                "type": "agent",
                "x": 400,
                "y": 120,
                "data": {
                    "agentName": name,
                    "userPrompt": prompt,
                    "provider": "echo",
                    "tools": {"web_search": False, "subagents": False},
                },
            },
        ],
        "connections": [{"source": "start", "target": "work", "sourceHandle": "output", "targetHandle": "input"}],
    }


@pytest.fixture
def library(tmp_path: Path):
    folder = tmp_path / "lib"
    folder.mkdir()
    flows = [
        _flow(
            "make-playlist",
            "Make playlist",
            [
                {"name": "genre", "type": "string", "required": True},
                {"name": "quantity", "type": "number", "value": 10},
            ],
            ["create (a)? $(genre:wildcard) playlist (with)? $(quantity:number) (songs)?"],
            "Make a playlist: {{genre}}, {{quantity}} songs",
        ),
        _flow(
            "weather",
            "Weather report",
            [{"name": "city", "type": "string", "required": True}],
            ["(what is the)? weather in $(city:wildcard)"],
            "Weather in {{city}}",
        ),
    ]
    for f in flows:
        (folder / f"{f['id']}.flow.json").write_text(json.dumps(f))
    lib = FlowLibrary([folder], seed=False)
    set_default_library(lib)
    yield lib
    set_default_library(None)


@contextmanager
def _library_of(folder: Path, flows: dict[str, dict]) -> Iterator[None]:
    """The default library, while the block runs: a folder holding ``flows`` (file name -> flow)."""
    folder.mkdir()
    for name, flow in flows.items():
        (folder / name).write_text(json.dumps(flow))
    set_default_library(FlowLibrary([folder], seed=False))
    try:
        yield
    finally:
        set_default_library(None)


def _typed(window, qtbot, text: str):
    """The command bar, opened and ``text`` typed in it."""
    window.act_command.trigger()
    bar = window.commands.bar
    qtbot.keyClicks(bar.edit, text)
    return bar


def test_command_bar_lists_matches_and_runs_a_flow(window, qtbot, qloop, library):  # noqa: F811
    window.act_command.trigger()
    bar = window.commands.bar
    assert bar.isVisible()
    qtbot.keyClicks(bar.edit, "create a blues playlist with 12 songs")
    kinds = [k for k, _ in bar.items()]
    assert kinds[0] == "trigger" and kinds[-1] == "ask"
    first = bar.items()[0][1]
    assert "Make playlist" in first and "genre = “blues”" in first and "quantity = 12" in first
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return)
    assert not bar.isVisible()
    assert len(window.commands.windows) == 1
    run_window = window.commands.windows[0]
    console = run_window.console
    qtbot.waitUntil(lambda: console.status == "completed", timeout=10000)
    assert run_window.choice.arguments == {"genre": "blues", "quantity": 12}
    variables = console.workflow.start_node().data.model_dump()["variables"]
    assert {v["name"]: v.get("value") for v in variables} == {"genre": "blues", "quantity": 12}
    assert console.final_output() == "Make a playlist: blues, 12 songs"
    run_window.close()
    # remembered: the empty box lists the recent command
    window.act_command.trigger()
    bar.edit.clear()
    assert bar.items()[0] == ("recent", "↺ create a blues playlist with 12 songs")


def test_command_bar_lists_flows_by_name_and_alt_enter_opens(window, qtbot, library):
    window.act_command.trigger()
    bar = window.commands.bar
    qtbot.keyClicks(bar.edit, "weather")
    kinds = [k for k, _ in bar.items()]
    assert kinds == ["flow", "ask"]
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.AltModifier)
    assert window.document.workflow.name == "Weather report"
    assert window.document.path and window.document.path.endswith("weather.flow.json")


def test_a_long_description_is_cut_to_the_bars_width_not_scrolled_sideways(window, qtbot, tmp_path):
    flow = _flow("brief", "Research brief", [], [], "{{PREVIOUS_OUTPUT}}")
    flow["description"] = "A lead researcher delegates to two subagents, " * 6 + "then a writer turns it into a brief."
    with _library_of(tmp_path / "long", {"brief.flow.json": flow}):
        bar = _typed(window, qtbot, "brief")
        row = bar.list.item(0)
        title, detail = row.text().split("\n")
        assert title == "Research brief" and detail.strip().endswith("…") and len(detail) < len(flow["description"])
        assert row.toolTip() == flow["description"]  # the whole of it
        room = bar.list.viewport().width()
        assert bar.list.fontMetrics().horizontalAdvance(detail) <= room
        assert not bar.list.horizontalScrollBar().isVisible()


def test_why_the_model_found_no_flow_is_shown_whole(window, qtbot, qloop, library):  # noqa: F811
    """Asked with the echo provider (it repeats the sentence), the bar says why nothing matched
    and what to do, on as many lines as it takes (the message used to be cut at the bar's edge)."""
    from editor.window.settings import settings

    settings().setValue("run/provider", "echo")
    window.act_command.trigger()
    bar = window.commands.bar
    qtbot.keyClicks(bar.edit, "write something about dark mode")
    bar.ask_model("write something about dark mode")
    qtbot.waitUntil(lambda: "No flow matches" in bar.hint.text(), timeout=5000)
    text = bar.hint.text()
    assert "The echo provider repeats the sentence" in text and "Run ▸ LLM Provider" in text
    assert bar.hint.wordWrap()
    qtbot.waitUntil(lambda: bar.hint.height() >= bar.hint.heightForWidth(bar.hint.width()), timeout=2000)
    assert bar.hint.height() > bar.hint.fontMetrics().height() * 2  # several lines, all shown
    assert bar.rect().contains(bar.hint.geometry())
    settings().setValue("run/provider", "")


def test_the_announcement_sample_runs_from_a_sentence_in_a_window_that_fits(window, qtbot, qloop, tmp_path):  # noqa: F811
    # The sample's trigger phrase: a sentence runs it with its arguments. The run window shows the
    # phrase's (long) pattern wrapped: on one line it made the window 1,585 px wide.
    sample = Path(__file__).resolve().parents[2] / "samples" / "panel.flow.json"
    wf = json.loads(sample.read_text())
    for node in wf["nodes"]:  # offline: every agent answers with its prompt
        if node["type"] == "agent":
            node["data"]["provider"] = "echo"
    with _library_of(tmp_path / "samples-lib", {"panel.flow.json": wf}):
        bar = _typed(window, qtbot, "announce the new sync feature to beta testers in 80 words")
        kind, text = bar.items()[0]
        assert kind == "trigger" and "Announcement panel" in text
        qtbot.keyClick(bar.edit, Qt.Key.Key_Return)
        run_window = window.commands.windows[0]
        assert run_window.choice.arguments == {
            "topic": "the new sync feature",
            "audience": "beta testers",
            "maxWords": 80,
        }
        qtbot.waitUntil(lambda: run_window.console.status == "completed", timeout=15000)
        assert "at most 80 words about the new sync feature for beta testers" in run_window.console.final_output()
        assert run_window.minimumSizeHint().width() <= 900 and run_window.width() <= 900
        run_window.close()


def test_a_flow_the_model_picks_shows_what_it_may_reach_before_it_runs(qtbot, qloop, tmp_path):  # noqa: F811
    from editor.window.command_bar import CommandBar
    from engine import make_resolver
    from tests.fakes.openai_server import FakeLLMServer, openai_plain

    fetcher = _flow("fetcher", "Fetch a page", [{"name": "url", "type": "string"}], [], "{{url}}")
    fetcher["permissions"] = {"network": ["api.example.com"], "files": ["~/data"]}
    with FakeLLMServer() as server, _library_of(tmp_path / "lib", {"fetcher.flow.json": fetcher}):
        server.push(openai_plain(json.dumps({"flow": "fetcher", "arguments": {"url": "https://api.example.com"}})))
        bar = CommandBar(resolver_factory=lambda: make_resolver("openai", model="fake-model", base_url=server.base_url))
        qtbot.addWidget(bar)
        bar.popup()
        bar.edit.setText("grab that page for me")
        bar.ask_model("grab that page for me")
        qtbot.waitUntil(lambda: "may reach" in bar.hint.text(), timeout=5000)
    assert "This flow may reach: network api.example.com; files ~/data" in bar.hint.text()
    kind, text = bar.items()[0]
    assert kind == "model" and "may reach: network api.example.com; files ~/data" in text


def test_a_confirmed_model_pick_is_learned_and_no_match_suggests(qtbot, qloop, library, monkeypatch):  # noqa: F811
    """Routing memory in the bar: Enter on the model's pick keeps the sentence as a learned
    trigger, so the next sentence of that shape is a trigger match (no model request); when the
    model finds no flow, "did you mean" flows are listed."""
    from editor.window.command_bar import CommandBar
    from engine.llm.registry import make_resolver
    from tests.fakes.openai_server import FakeLLMServer, openai_plain

    for name in ("OPENAI_API_KEY", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(name, raising=False)
    with FakeLLMServer() as server:
        bar = CommandBar(
            None, library=library, resolver_factory=lambda: make_resolver("openai", base_url=server.base_url)
        )
        qtbot.addWidget(bar)
        bar.popup()
        server.push(openai_plain(json.dumps({"flow": "weather", "arguments": {"city": "Oslo"}})))
        bar.edit.setText("is it raining in Oslo")
        bar.ask_model("is it raining in Oslo")
        qtbot.waitUntil(lambda: bar.items() and bar.items()[0][0] == "model", timeout=5000)
        with qtbot.waitSignal(bar.run_requested) as picked:
            bar.activate(bar.list.item(0), open_it=False)
        assert picked.args[0].flow.id == "weather"
        assert bar.last_learned == "is it raining in $(city:wildcard)"
        saved = json.loads((library.folders[0] / "weather.flow.json").read_text())
        assert {"pattern": "is it raining in $(city:wildcard)", "learned": True} in saved["triggers"]
        bar.popup()
        bar.edit.setText("is it raining in Rio de Janeiro")
        kinds = bar.items()
        assert kinds[0][0] == "trigger" and "Rio de Janeiro" in kinds[0][1]
        assert len(server.requests) == 1
        server.push(openai_plain(json.dumps({"flow": None, "arguments": {}})))
        bar.edit.setText("tell me the weather forecast")
        bar.ask_model("tell me the weather forecast")
        qtbot.waitUntil(lambda: any(t.startswith("Did you mean") for _k, t in bar.items()), timeout=5000)
        assert "Did you mean Weather report?" in [t.split("\n")[0] for _k, t in bar.items()]
