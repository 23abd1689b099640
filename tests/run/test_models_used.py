"""Issue 30, item 23: the run header names the provider and model that actually answered (not
the card's), the agent card shows them while it runs, and the embedded ``local`` model's
"it is tiny" is said once, on the first run that uses it (dismissable, remembered)."""

from __future__ import annotations

import pytest

from engine import EchoProvider
from engine.llm.registry import make_resolver

from .conftest import slow_echo


@pytest.fixture(autouse=True)
def isolated_settings(tmp_path, monkeypatch):
    monkeypatch.setenv("FLOWDESK_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("FLOWDESK_DATA_DIR", str(tmp_path / "data"))


def test_run_header_names_the_provider_and_model_actually_used(console, review, qtbot):
    console.set_resolver_factory(lambda: make_resolver("echo", model="forced-model"))
    console.set_workflow(review)
    console.start_run()
    qtbot.waitUntil(lambda: console.bridge.status in ("paused", "completed", "failed"), timeout=5000)
    label = console.header.models_label
    assert label.isVisible() and label.text() == "Model: echo · forced-model"
    assert "gpt-4o-mini" not in label.text()  # what the card asks for is not what answered


def test_agent_card_badge_names_the_model_while_it_runs(console, review, qtbot):
    console.set_resolver_factory(slow_echo(30))
    console.set_workflow(review)
    badges: list[dict] = []
    console.run_badges_changed.connect(badges.append)
    console.start_run()
    qtbot.waitUntil(lambda: any(b.get("triage", ("", ""))[1] == "model" for b in badges), timeout=5000)
    assert console.run_badges()["triage"] == ("echo · gpt-4o-mini", "model")
    console.cancel_run()
    qtbot.waitUntil(lambda: not console.bridge.is_busy, timeout=3000)
    assert "triage" not in console.run_badges()


class LocalLike(EchoProvider):
    """Answers as the embedded model names itself (``name`` local, ``model_id``)."""

    name = "local"
    model_id = "smollm2-135m-instruct"


def test_local_model_notice_is_said_once_on_the_first_run_and_remembered(console, review, qtbot):
    from editor.run.console import LOCAL_NOTICE_KEY
    from editor.window.settings import settings

    provider = LocalLike()
    console.set_resolver_factory(lambda: provider)
    console.set_workflow(review)
    console.start_run()
    qtbot.waitUntil(lambda: console.header.models_label.isVisible(), timeout=5000)
    assert console.header.models_label.text() == "Model: local · smollm2-135m-instruct"
    assert console.header.local_notice.isVisible()
    notice = console.header.local_notice_label.text()
    assert "tiny" in notice and "Run ▸ LLM Provider" in notice
    assert settings().value(LOCAL_NOTICE_KEY, False, type=bool)
    console.header.local_notice_dismiss.click()
    assert not console.header.local_notice.isVisible()
    qtbot.waitUntil(lambda: not console.bridge.is_busy, timeout=5000)
    if console.bridge.is_active:
        console.cancel_run()
        qtbot.waitUntil(lambda: not console.bridge.is_busy, timeout=3000)
    console.start_run()  # a second run: not said again
    qtbot.waitUntil(lambda: console.header.models_label.isVisible(), timeout=5000)
    assert not console.header.local_notice.isVisible()
