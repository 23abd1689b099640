"""Every setting Flowdesk writes lives in one config folder: settings.json and the GUI's own
gui.ini (recent files, the Run menu's provider, the window and dock layout), under
$FLOWDESK_CONFIG_DIR or the platform's user config folder."""

from __future__ import annotations

import configparser
import sys
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings

from editor.window.settings import settings, settings_file
from engine import config_dir

from .conftest import copy_sample


def read_ini(path: Path) -> configparser.ConfigParser:
    ini = configparser.ConfigParser(interpolation=None)
    ini.read(path, encoding="utf-8")
    return ini


def test_gui_settings_go_to_the_config_folder(app, qtbot, tmp_path, dialogs, isolated):
    from editor.main_window import MainWindow

    legacy = Path(QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, "Flowdesk", "Flowdesk").fileName())
    before = legacy.stat().st_mtime_ns if legacy.exists() else None
    assert settings_file() == tmp_path / "config" / "gui.ini" == config_dir() / "gui.ini"
    win = MainWindow()
    qtbot.addWidget(win)
    win.show()
    qtbot.waitExposed(win)
    path = copy_sample(tmp_path, "hello")
    assert win.files.open_path(str(path), ask=False)
    win.provider_menu.aboutToShow.emit()
    echo = next(a for a in win.provider_menu.actions() if a.data() == "echo")
    echo.trigger()
    win.close()
    ini = read_ini(settings_file())
    assert ini["General"]["lastFile"] == str(path)
    assert str(path) in ini["General"]["recentFiles"]
    assert ini["run"]["provider"] == "echo"
    assert ini["window"]["state"] and ini["window"]["geometry"]  # the dock layout
    assert "default" not in settings_file().read_text().lower()  # the default provider lives in settings.json only
    # nothing went to the old place (~/.config/Flowdesk/Flowdesk.ini)
    assert (legacy.stat().st_mtime_ns if legacy.exists() else None) == before
    # a new window reads them back from there
    win2 = MainWindow()
    qtbot.addWidget(win2)
    assert win2.files.recent_files() == [str(path)]
    win2.close()


@pytest.mark.skipif(sys.platform != "linux", reason="XDG_CONFIG_HOME is the Linux rule")
def test_platform_default_folder_holds_both_files(monkeypatch, tmp_path):
    monkeypatch.delenv("FLOWDESK_CONFIG_DIR", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    from engine.llm.config import settings_path

    assert settings_file().parent == settings_path().parent == config_dir()
    settings().setValue("probe", 1)
    settings().sync()
    assert config_dir() == tmp_path / "xdg" / "flowdesk" and (tmp_path / "xdg" / "flowdesk" / "gui.ini").exists()
