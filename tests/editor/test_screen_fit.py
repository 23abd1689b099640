"""Windows open within the screen: a size asked for that the screen has no room for is cut
to the screen's free area (a 1,400 × 860 main window on a 1,280 × 720 laptop opened with its
status bar and bottom tabs off-screen)."""

from __future__ import annotations

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget

from editor.screen_fit import SCREEN_SHARE, fit_resize


def test_a_window_larger_than_the_screen_is_cut_to_it(qtbot):
    free = QGuiApplication.primaryScreen().availableGeometry()
    w = QWidget()
    qtbot.addWidget(w)
    fit_resize(w, free.width() * 2, free.height() * 2)
    assert w.width() == int(free.width() * SCREEN_SHARE) and w.height() == int(free.height() * SCREEN_SHARE)


def test_a_window_the_screen_has_room_for_gets_its_size(qtbot):
    w = QWidget()
    qtbot.addWidget(w)
    fit_resize(w, 420, 300)
    assert (w.width(), w.height()) == (420, 300)


def test_the_main_window_opens_within_the_screen(app, qtbot, dialogs):
    from PySide6.QtWidgets import QMessageBox

    from editor.main_window import MainWindow

    free = QGuiApplication.primaryScreen().availableGeometry()
    win = MainWindow()
    qtbot.addWidget(win)
    assert 0 < win.width() <= free.width() and 0 < win.height() <= free.height()
    dialogs.question_answer = QMessageBox.StandardButton.Discard
    win.close()
