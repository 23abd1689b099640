"""Where the window keeps its state between sessions (QSettings): geometry, docks, canvas toggles.

The GUI's settings (recent files, the provider chosen in the Run menu, window and dock layout)
are ``gui.ini`` in Flowdesk's config folder, beside ``settings.json``: ``$FLOWDESK_CONFIG_DIR``
or the platform's user config folder (``engine.config_dir``). One folder holds every setting
Flowdesk writes, so moving or isolating it (as the tests do) covers the GUI too.

The default provider is not kept here: one place names it, ``defaultProvider`` in
``settings.json`` (written by Provider Settings and by the first-run dialog, read by the
engine for the GUI and the CLI alike). The Run menu's provider, kept here, overrides every
agent's provider for runs started from this window.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMainWindow

from engine import config_dir

GUI_SETTINGS_FILE = "gui.ini"

# Bumped whenever the set of docks changes, so a layout saved by an older version (which
# Qt would apply to the new docks, squashing them) is ignored instead of restored.
DOCK_LAYOUT_VERSION = 4  # 3: the Tests dock; 4: the Inbox dock


def settings_file() -> Path:
    return config_dir() / GUI_SETTINGS_FILE


def settings() -> QSettings:
    """The GUI settings, an INI file at an explicit path (never the registry or ~/.config/Flowdesk)."""
    return QSettings(str(settings_file()), QSettings.Format.IniFormat)


def text_setting(key: str) -> str:
    """A GUI setting's text ("" when it is not set)."""
    return str(settings().value(key, "") or "")


def restore_window(window: QMainWindow, snap: QAction, minimap: QAction) -> None:
    """Give the main window its saved geometry, dock layout and canvas toggles."""
    s = settings()
    geo = s.value("window/geometry")
    if isinstance(geo, QByteArray) and not geo.isEmpty():
        window.restoreGeometry(geo)
    state = s.value("window/state")
    if isinstance(state, QByteArray) and not state.isEmpty():
        window.restoreState(state, DOCK_LAYOUT_VERSION)
    snap.setChecked(s.value("canvas/snap", False, type=bool))
    minimap.setChecked(s.value("canvas/minimap", True, type=bool))


def save_window(window: QMainWindow, snap: QAction, minimap: QAction, document_path: str | None) -> None:
    """Keep the main window's geometry, dock layout, canvas toggles and document for next time."""
    s = settings()
    s.setValue("window/geometry", window.saveGeometry())
    s.setValue("window/state", window.saveState(DOCK_LAYOUT_VERSION))
    s.setValue("canvas/snap", snap.isChecked())
    s.setValue("canvas/minimap", minimap.isChecked())
    s.setValue("lastFile", document_path or "")
    s.sync()
