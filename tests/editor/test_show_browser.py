"""Run ▸ Show Browser: a checkable menu item that makes browser steps run headed, kept between
sessions."""

from __future__ import annotations

import engine
from editor.window.menus import _show_browser_toggled
from editor.window.settings import settings


def test_the_toggle_sets_the_engines_switch_and_is_remembered() -> None:
    try:
        _show_browser_toggled(True)
        assert engine.show_browser() is True
        assert settings().value("run/showBrowser", False, type=bool) is True
        _show_browser_toggled(False)
        assert engine.show_browser() is False
        assert settings().value("run/showBrowser", True, type=bool) is False
    finally:
        engine.set_show_browser(False)


def test_the_main_window_has_the_menu_item(qtbot) -> None:
    from editor.main_window import MainWindow

    w = MainWindow()
    qtbot.addWidget(w)
    action = w.act_show_browser
    assert action.isCheckable() and action.text() == "Show &Browser"
    assert action in w.menuBar().actions()[[a.text() for a in w.menuBar().actions()].index("&Run")].menu().actions()
    action.setChecked(True)
    assert engine.show_browser()
    action.setChecked(False)
    assert not engine.show_browser()
