"""The provider settings dialog: base URLs, default provider and search URL go to the
settings file; an API key goes to the OS keyring only and never into any file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from PySide6.QtCore import Qt

import engine.llm.config as config
from editor.panels.provider_settings import ProviderSettingsDialog

SECRET = "sk-test-PROVIDERDIALOG-0123456789"


@pytest.fixture()
def config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    d = tmp_path / "config"
    monkeypatch.setenv("FLOWDESK_CONFIG_DIR", str(d))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    return d


def select(dialog: ProviderSettingsDialog, pid: str) -> None:
    for row in range(dialog.list.count()):
        if dialog.list.item(row).data(0x0100) == pid:
            dialog.list.setCurrentRow(row)
            return
    raise AssertionError(pid)


def test_settings_saved_and_key_only_in_keyring(qtbot, config_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stored: dict[str, str] = {}
    monkeypatch.setattr("editor.panels.provider_settings.store_api_key", lambda pid, key: stored.__setitem__(pid, key))
    dialog = ProviderSettingsDialog()
    qtbot.addWidget(dialog)
    select(dialog, "ollama")
    qtbot.keyClicks(dialog.url_edit, "http://gpu-box:11434/v1")
    assert "Not needed" in dialog.key_label.text() or "key" in dialog.key_label.text()
    select(dialog, "openai")
    assert "OPENAI_API_KEY" in dialog.key_label.text()
    qtbot.keyClicks(dialog.key_edit, SECRET)
    dialog.key_button.click()
    assert stored == {"openai": SECRET}
    assert dialog.key_edit.text() == ""
    dialog.default_combo.setCurrentIndex(dialog.default_combo.findData("ollama"))
    dialog.search_edit.setText("http://localhost:8888")
    dialog.save()
    saved = json.loads((config_dir / "settings.json").read_text())
    assert saved["defaultProvider"] == "ollama"
    assert saved["providers"]["ollama"]["base_url"] == "http://gpu-box:11434/v1"
    assert saved["webSearch"]["searxngUrl"] == "http://localhost:8888"
    assert SECRET not in (config_dir / "settings.json").read_text()
    # The engine reads what the dialog wrote.
    assert config.load_settings().defaultProvider == "ollama"
    assert config.providers()["ollama"].base_url == "http://gpu-box:11434/v1"


def test_the_header_says_how_a_provider_is_spoken_to_only_where_its_name_does_not(qtbot, config_dir: Path) -> None:
    dialog = ProviderSettingsDialog()
    qtbot.addWidget(dialog)
    titles = {}
    for row in range(dialog.list.count()):
        dialog.list.setCurrentRow(row)
        titles[dialog.current_id()] = dialog.title.text()
    assert titles["openai"] == "<b>OpenAI</b>" and titles["anthropic"] == "<b>Anthropic</b>"
    assert "OpenAI-compatible API" in titles["ollama"] and "OpenAI-compatible API" in titles["openrouter"]
    assert titles["local"] == "<b>Local (embedded llama.cpp)</b>" and titles["echo"] == "<b>Echo (offline dry run)</b>"


def test_save_settings_refuses_keys(config_dir: Path) -> None:
    settings = config.Settings(providers={"openai": {"api_key": SECRET}})
    with pytest.raises(config.ProviderConfigError):
        config.save_settings(settings)
    assert not (config_dir / "settings.json").exists()


def test_bad_settings_file_does_not_block_the_dialog(qtbot, config_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config_dir.mkdir(parents=True)
    (config_dir / "settings.json").write_text("{not json")
    warnings: list[str] = []
    monkeypatch.setattr("editor.panels.provider_settings.QMessageBox.warning", lambda *a, **k: warnings.append(a[2]))
    dialog = ProviderSettingsDialog()
    qtbot.addWidget(dialog)
    assert warnings and "not valid" in warnings[0]
    dialog.save()
    assert json.loads((config_dir / "settings.json").read_text()) == {}


def test_run_cache_is_shown_limited_and_cleared(qtbot, config_dir: Path, tmp_path: Path) -> None:
    from engine import RunStore

    store = RunStore(tmp_path / "runs.db")
    with store._transaction() as conn:
        store._put_executions(conn, "r1", [("a", "k1", "x" * 1000, "output"), ("b", "k2", "y" * 10, "output")])
    dialog = ProviderSettingsDialog(store=store)
    qtbot.addWidget(dialog)
    assert dialog.cache_label.text() == "2 recorded outputs, 1012 bytes"  # (1,001 + 11 characters), not "0.0 MB"
    assert dialog.clear_cache_button.isEnabled()
    dialog.clear_cache_button.click()
    assert store.cache_stats()["entries"] == 0 and dialog.cache_label.text() == "0 recorded outputs, 0 bytes"
    dialog.cache_limit.setValue(5)
    dialog.save()
    assert json.loads((config_dir / "settings.json").read_text())["runCache"] == {"limitMB": 5}
    assert store.cache_limit == 5 * 1024 * 1024
    assert RunStore(tmp_path / "runs.db").cache_limit == 5 * 1024 * 1024  # applied at the next start


def test_test_connection_says_what_answered_or_why_not(qtbot, config_dir: Path) -> None:
    """The button sends one short request with the base URL as typed (not yet saved) and says
    what answered; a server that is not there is said so; nothing is written."""
    from tests.fakes.openai_server import FakeLLMServer, openai_text

    with FakeLLMServer() as server:
        server.push(openai_text("OK", model="tiny-model"))
        dialog = ProviderSettingsDialog()
        qtbot.addWidget(dialog)
        select(dialog, "ollama")
        qtbot.keyClicks(dialog.url_edit, server.base_url)
        qtbot.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
        assert dialog.test_label.text() == "Testing…" and not dialog.test_button.isEnabled()
        qtbot.waitUntil(lambda: dialog.test_label.text().startswith("✓"), timeout=10000)
        assert dialog.test_label.text().startswith("✓ tiny-model answered in ")
        assert dialog.test_label.text().endswith("“OK”")
        assert dialog.test_button.isEnabled()
        assert len(server.requests) == 1 and server.requests[0].path == "/v1/chat/completions"
    # the server is gone now: the same test says why nothing answered
    qtbot.mouseClick(dialog.test_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: dialog.test_label.text().startswith("✗"), timeout=10000)
    assert "Could not connect" in dialog.test_label.text()
    # another provider shows its own result (none yet); editing the URL forgets the old one
    select(dialog, "openai")
    assert dialog.test_label.text() == ""
    select(dialog, "ollama")
    assert dialog.test_label.text().startswith("✗")
    qtbot.keyClicks(dialog.url_edit, "x")
    assert dialog.test_label.text() == ""
    assert not (config_dir / "settings.json").exists()  # testing saves nothing
