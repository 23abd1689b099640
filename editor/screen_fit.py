"""Top-level windows sized to fit the screen they open on.

A window asked for 1,400 × 860 on a 1,280 × 720 laptop screen opened partly off-screen: its
status bar, the bottom panels' tabs and the toolbar's right end out of reach. :func:`fit_resize`
gives the size asked for where the screen has room, else as much as the screen's free area
(less the panels and taskbars) allows.
"""

from __future__ import annotations

from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QWidget

__all__ = ["fit_resize", "SCREEN_SHARE"]

#: At most this share of the screen's free area (room left for the window's frame).
SCREEN_SHARE = 0.96


def fit_resize(window: QWidget, width: int, height: int) -> None:
    """``window.resize(width, height)``, each side at most :data:`SCREEN_SHARE` of the free
    area of the screen the window is on (the primary screen before it is shown)."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    if screen is not None:
        free = screen.availableGeometry()
        width = min(width, int(free.width() * SCREEN_SHARE))
        height = min(height, int(free.height() * SCREEN_SHARE))
    window.resize(width, height)
