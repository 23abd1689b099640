"""The first Run with nothing configured: the set-up dialog lists what it found (a key in the
environment, an OpenAI-compatible server on a probed port), remembers the choice, and the run
of the review sample goes ahead with it. A provider that is set up but cannot serve (a stopped
server, a missing key) fails the run with "Choose provider…", which opens the same dialog."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QLabel

import engine.llm.local as local_mod
from editor.first_run import FirstRunDialog
from engine.llm.config import settings_path
from tests.fakes.openai_server import FakeLLMServer, free_port, local_server_handler

from .conftest import SAMPLES, press_run, states

_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")


@pytest.fixture
def nothing_configured(monkeypatch):
    for name in _KEYS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(local_mod, "local_available", lambda: False)


@pytest.fixture
def local_server(monkeypatch):
    with FakeLLMServer() as srv:
        srv.handler = local_server_handler(("tiny-instruct",), answer="REFUND: we will refund the duplicate charge.")
        monkeypatch.setenv("FLOWDESK_PROBE_PORTS", f"ollama={srv.port}")
        yield srv


def the_dialog(qtbot, window) -> FirstRunDialog:
    qtbot.waitUntil(lambda: window.findChild(FirstRunDialog) is not None, timeout=3000)
    dialog = window.findChild(FirstRunDialog)
    qtbot.waitUntil(dialog.isVisible, timeout=2000)
    return dialog


def labels(dialog: FirstRunDialog) -> list[str]:
    return [dialog.list.item(i).text() for i in range(dialog.list.count())]


def test_first_run_offers_the_server_and_the_key_and_runs_with_the_choice(
    qtbot, window, nothing_configured, local_server, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-firstrun-0001")
    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    console = window.run_console
    press_run(qtbot, window)
    dialog = the_dialog(qtbot, window)
    assert console.run_id is None or console.bridge.is_active is False  # nothing started yet
    found = labels(dialog)
    assert found[0] == f"Ollama at http://127.0.0.1:{local_server.port}/v1 — tiny-instruct"
    assert "OpenAI — API key in OPENAI_API_KEY" in found
    assert found[-1].startswith("Dry run with echo")
    assert "sk-test" not in " ".join(found)
    assert "pip install" in dialog.install_command.text()
    dialog.list.setCurrentRow(dialog.choice("ollama"))
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=8000) as waiting:
        qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    assert waiting.args == [True]
    qtbot.waitUntil(lambda: states(window.scene)["signoff"] == "waiting", timeout=3000)
    assert [r.path for r in local_server.requests if r.method == "POST"] == ["/v1/chat/completions"]
    saved = json.loads(settings_path().read_text())
    assert saved["defaultProvider"] == "ollama"
    assert saved["providers"]["ollama"]["base_url"] == f"http://127.0.0.1:{local_server.port}/v1"
    assert "sk-test" not in settings_path().read_text()


def test_dry_run_with_echo_is_remembered(qtbot, window, nothing_configured, local_server):
    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    console = window.run_console
    press_run(qtbot, window)
    dialog = the_dialog(qtbot, window)
    assert not any("API key" in text for text in labels(dialog))
    dialog.list.setCurrentRow(dialog.choice("echo"))
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=8000):
        qtbot.keyClick(dialog.list, Qt.Key.Key_Return)  # Enter on a choice takes it
    qtbot.waitUntil(lambda: states(window.scene)["signoff"] == "waiting", timeout=3000)
    assert json.loads(settings_path().read_text())["defaultProvider"] == "echo"
    assert "Runs now use echo" in window.statusBar().currentMessage()
    # (the card's button is live a tick before the bridge takes decisions: wait for the bridge)
    qtbot.waitUntil(lambda: not console.bridge.is_busy, timeout=3000)
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        qtbot.mouseClick(console.approvals.active_card.approve_button, Qt.MouseButton.LeftButton)
    # the next Run goes straight ahead: the choice was remembered
    qtbot.waitUntil(lambda: window.act_run.isEnabled() and window.findChild(FirstRunDialog) is None, timeout=3000)
    first = console.run_id
    with qtbot.waitSignal(console.run_started, timeout=8000):
        window.act_run.trigger()
    assert window.findChild(FirstRunDialog) is None
    qtbot.waitUntil(lambda: console.run_id != first and states(window.scene)["signoff"] == "waiting", timeout=5000)


def test_cancelling_the_dialog_starts_nothing(qtbot, window, nothing_configured, local_server):
    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    press_run(qtbot, window)
    dialog = the_dialog(qtbot, window)
    dialog.reject()
    qtbot.waitUntil(lambda: window.findChild(FirstRunDialog) is None, timeout=2000)
    assert window.run_console.run_id is None and not settings_path().exists()


def _ollama_as_default(url: str) -> str:
    """settings.json naming ollama, at ``url``, as the default provider."""
    settings_path().parent.mkdir(parents=True, exist_ok=True)
    settings_path().write_text(json.dumps({"defaultProvider": "ollama", "providers": {"ollama": {"base_url": url}}}))
    return url


def _down_ollama_as_default() -> str:
    """Ollama as the default, at a port nothing listens on (a stopped server)."""
    return _ollama_as_default(f"http://127.0.0.1:{free_port()}/v1")


def test_a_provider_that_does_not_answer_offers_another_and_runs_again(qtbot, window, nothing_configured, local_server):
    down = _down_ollama_as_default()
    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    console = window.run_console
    button = console.header.provider_button
    assert not button.isVisible()
    with qtbot.waitSignal(console.run_finished, timeout=8000) as finished:
        press_run(qtbot, window)
    assert finished.args == ["failed"]
    # the way out is in the header, beside the error, and says what went wrong
    assert button.isVisible()
    assert "Provider 'ollama' could not serve this run" in button.toolTip() and down in button.toolTip()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    dialog = the_dialog(qtbot, window)
    intro = dialog.findChild(QLabel, "firstRunIntro").text()
    assert "could not use its model" in intro and down in intro
    # the survey found the server that does answer (on the probed port): take it
    dialog.list.setCurrentRow(dialog.choice("ollama"))
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=8000):
        qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: states(window.scene)["signoff"] == "waiting", timeout=3000)
    assert not button.isVisible()  # the new run is going
    saved = json.loads(settings_path().read_text())
    assert saved["providers"]["ollama"]["base_url"] == f"http://127.0.0.1:{local_server.port}/v1"
    assert [r.path for r in local_server.requests if r.method == "POST"] == ["/v1/chat/completions"]


def test_a_forced_provider_that_cannot_start_is_replaced_by_the_choice(qtbot, window, nothing_configured, local_server):
    # Run ▸ LLM Provider forces openai, which has no key: nothing can start. The choice (echo)
    # replaces the forced provider, or the next run would fail the same way.
    from editor.window.settings import settings

    settings().setValue("run/provider", "openai")
    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    console = window.run_console
    press_run(qtbot, window)
    button = console.header.provider_button
    qtbot.waitUntil(button.isVisible, timeout=3000)
    assert console.run_id is None and "OPENAI_API_KEY" in button.toolTip()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    dialog = the_dialog(qtbot, window)
    dialog.list.setCurrentRow(dialog.choice("echo"))
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=8000):
        qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
    assert settings().value("run/provider") == "echo"
    assert "Runs now use echo" in window.statusBar().currentMessage()
    qtbot.waitUntil(lambda: states(window.scene)["signoff"] == "waiting", timeout=3000)


def test_a_flow_run_from_the_command_bar_offers_another_provider_in_its_window(
    qtbot, window, nothing_configured, local_server, tmp_path, qloop
):
    from engine import FlowLibrary, set_default_library

    _down_ollama_as_default()
    folder = tmp_path / "lib"
    folder.mkdir()
    (folder / "hello.flow.json").write_text((SAMPLES / "hello.flow.json").read_text())
    set_default_library(FlowLibrary([folder], seed=False))
    try:
        window.act_command.trigger()
        qtbot.keyClicks(window.commands.bar.edit, "say hello")
        qtbot.keyClick(window.commands.bar.edit, Qt.Key.Key_Return)
        run_window = window.commands.windows[0]
        console = run_window.console
        button = console.header.provider_button
        qtbot.waitUntil(button.isVisible, timeout=8000)  # once the run has failed
        assert console.status == "failed" and "Provider 'ollama' could not serve this run" in button.toolTip()
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: run_window.findChild(FirstRunDialog) is not None, timeout=3000)
        dialog = run_window.findChild(FirstRunDialog)
        dialog.list.setCurrentRow(dialog.choice("echo"))
        qtbot.mouseClick(dialog.run_button, Qt.MouseButton.LeftButton)
        # the flow runs again in its own window, with the provider chosen
        qtbot.waitUntil(lambda: console.status == "completed", timeout=8000)
        assert console.final_output() == "Say hello to Flowdesk in one sentence."
        assert json.loads(settings_path().read_text())["defaultProvider"] == "echo"
        run_window.close()
    finally:
        set_default_library(None)


def test_a_model_the_local_server_does_not_have_offers_its_models_for_every_agent(qtbot, window, nothing_configured):
    # Ollama with its own model, and a sample written for OpenAI's (gpt-4o-mini): the server says
    # 404. Choose model… lists the server's models; the one chosen serves every agent, and stays.
    from editor.first_run import ModelChoiceDialog
    from editor.window.settings import settings

    with FakeLLMServer() as srv:
        srv.handler = local_server_handler(("llama3.2", "qwen2.5"), answer="REFUND: we will refund it.", strict=True)
        _ollama_as_default(srv.base_url)
        assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
        qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
        console = window.run_console
        button = console.header.provider_button
        press_run(qtbot, window)
        qtbot.waitUntil(button.isVisible, timeout=8000)
        assert button.text() == "Choose model…" and "has no model 'gpt-4o-mini'" in button.toolTip()
        qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
        qtbot.waitUntil(lambda: window.findChild(ModelChoiceDialog) is not None, timeout=3000)
        dialog = window.findChild(ModelChoiceDialog)
        shown = [dialog.list.item(i).text() for i in range(dialog.list.count())]
        assert shown[1:] == ["llama3.2", "qwen2.5"]  # what the server has, the first one picked
        assert dialog.list.currentItem().text() == "llama3.2"
        with qtbot.waitSignal(console.waiting_for_input_changed, timeout=8000):
            qtbot.mouseClick(dialog.use_button, Qt.MouseButton.LeftButton)
        assert settings().value("run/model") == "llama3.2"
        asked = [r.json["model"] for r in srv.requests if r.method == "POST"]
        assert asked[0] == "gpt-4o-mini" and asked[-1] == "llama3.2"
        # the menu says which model every agent now gets
        window.providers.fill_provider_menu(window.provider_menu)
        entry = window.provider_menu.findChild(QAction, "chooseModel")
        assert entry is not None and entry.text() == "Model for Every Agent: llama3.2…"
        console.cancel_run()
        settings().setValue("run/model", "")
