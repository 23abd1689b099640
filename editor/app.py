"""GUI entry: one QApplication with a qasync event loop, and the main window.

asyncio runs on the Qt event loop (qasync), so the run console can drive the engine's
async API without threads.
"""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Sequence

import qasync
from PySide6.QtGui import QColor, QPalette, QPixmapCache
from PySide6.QtWidgets import QApplication

from editor.main_window import MainWindow
from editor.resources import style_sheet
from editor.startup_check import startup_problem
from editor.wheel_guard import install_wheel_guard
from engine import close_local_models

log = logging.getLogger(__name__)


LINK_COLOUR = "#8ab4f8"
LINK_VISITED_COLOUR = "#c39bf5"


def configure_app(app) -> None:
    """Application-wide look and caches shared by the app and the tests."""
    app.setOrganizationName("Flowdesk")
    app.setApplicationName("Flowdesk")
    if app.property("flowdeskConfigured"):
        return  # re-applying a style sheet re-polishes every widget; do it once
    app.setProperty("flowdeskConfigured", True)
    app.setStyle("Fusion")
    app.setStyleSheet(style_sheet())
    # Links in rich text (rendered Markdown outputs, About's folders) in a light blue: the
    # palette's own dark blue is unreadable on the style sheet's dark panels.
    palette = app.palette()
    for group in (QPalette.ColorGroup.Active, QPalette.ColorGroup.Inactive):
        palette.setColor(group, QPalette.ColorRole.Link, QColor(LINK_COLOUR))
        palette.setColor(group, QPalette.ColorRole.LinkVisited, QColor(LINK_VISITED_COLOUR))
    app.setPalette(palette)
    # Node items use DeviceCoordinateCache; the 10 MB default overflows at 2,000 nodes.
    QPixmapCache.setCacheLimit(256 * 1024)
    install_wheel_guard(app)  # the wheel scrolls forms; it changes no field it passes over


def create_window(argv: Sequence[str] = ()):
    win = MainWindow()
    win.show()
    win.files.start(list(argv))
    return win


def main(argv: Sequence[str] | None = None) -> int:
    if QApplication.instance() is None:  # Qt aborts when its platform plugin cannot load: check first
        problem = startup_problem()
        if problem:
            sys.stderr.write(problem)
            return 2
    args = list(argv or [])
    app = QApplication.instance() or QApplication([sys.argv[0], *args])
    configure_app(app)
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    closing = asyncio.Event()
    app.aboutToQuit.connect(closing.set)
    win = create_window(args)  # kept alive for the loop's lifetime
    win.closed.connect(closing.set)  # the app ends with its main window, whatever else is open
    with loop:
        loop.run_until_complete(closing.wait())
        finish(loop)
    return 0


def finish(loop: asyncio.AbstractEventLoop, timeout: float = 2.0) -> None:
    """End what could outlive the window (issue 30, item 22): the runs' tasks are cancelled and
    given ``timeout`` seconds to stop (a local model's generation stops at its next token), then
    the embedded model's server (its thread, memory and loopback port) is stopped."""
    tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in tasks:
        task.cancel()
    if tasks:
        try:
            loop.run_until_complete(asyncio.wait(tasks, timeout=timeout))
        except RuntimeError as err:  # the loop was stopped meanwhile: nothing more to wait for
            log.debug("quitting: %s", err)
    close_local_models()
