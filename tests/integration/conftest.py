"""Integration fixtures: the real MainWindow, with asyncio on the Qt event loop (qasync).

Reuses the editor fixtures (isolated QSettings and data folder, non-blocking dialogs) and
the run fixtures (the qasync loop installed for pytest-qt). The window's run store lives in
the test's own data folder, so every test starts with an empty run history.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import QPointF, Qt
from PySide6.QtWidgets import QApplication, QMessageBox

from ..editor.conftest import app, dialogs, isolated  # noqa: F401 - fixtures
from ..run.conftest import qloop  # noqa: F401 - fixture

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"


@pytest.fixture
def window(app, qtbot, dialogs, qloop, isolated):  # noqa: F811
    from editor.main_window import MainWindow

    win = MainWindow()
    qtbot.addWidget(win)
    win.resize(1400, 900)
    win.show()
    qtbot.waitExposed(win)
    yield win
    dialogs.question_answer = QMessageBox.StandardButton.Discard
    for w in list(win.run_views.run_windows):
        w.close()
    if win.isVisible():
        win.close()
    bridge = win.run_console.bridge
    if bridge.is_active or bridge.is_busy:
        bridge.cancel()
        qtbot.waitUntil(lambda: not bridge.is_busy, timeout=3000)
    if win.store is not None:
        win.store.close()


def choose_provider(window, provider: str) -> None:
    """Run ▸ LLM Provider ▸ ``provider``, as the menu does it."""
    menu = window.provider_menu
    menu.aboutToShow.emit()
    matches = [a for a in menu.actions() if a.data() == provider]
    assert matches, [a.text() for a in menu.actions()]
    matches[0].trigger()
    assert matches[0].isChecked()


def press_run(qtbot, window) -> None:
    """F5 on the canvas, as a user does."""
    window.activateWindow()
    window.view.setFocus()
    qtbot.keyClick(window.view, Qt.Key.Key_F5)


def node_centre(window_or_view, scene, node_id: str) -> QPointF:
    item = scene.node_items[node_id]
    return item.mapToScene(QPointF(item.layout.width / 2, 18))


def click_node(qtbot, view, scene, node_id: str) -> None:
    pos = view.mapFromScene(node_centre(view, scene, node_id))
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier, pos)
    QApplication.processEvents()


def states(scene) -> dict[str, str | None]:
    return {nid: item.run_state for nid, item in scene.node_items.items()}


def followed(scene) -> set[tuple[str, str, str]]:
    return {(k[0], k[1], k[2]) for k, e in scene.edge_items.items() if e.followed}
