"""The GUI's own settings (recent files, the provider chosen in the Run menu, window and dock
layout, the first-run choice), kept in ``gui.ini`` in Flowdesk's config folder, beside
``settings.json``: ``$FLOWDESK_CONFIG_DIR`` or the platform's user config folder (see
``engine.config_dir``). One folder holds every setting Flowdesk writes, so moving or
isolating it (as the tests do) covers the GUI too.

The default provider is not kept here: one place names it, ``defaultProvider`` in
``settings.json`` (written by Provider Settings and by the first-run dialog, read by the
engine for the GUI and the CLI alike). The Run menu's provider, kept here, overrides every
agent's provider for runs started from this window.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QSettings

from engine import config_dir

GUI_SETTINGS_FILE = "gui.ini"


def settings_file() -> Path:
    return config_dir() / GUI_SETTINGS_FILE


def settings() -> QSettings:
    """The GUI settings, an INI file at an explicit path (never the registry or ~/.config/Flowdesk)."""
    return QSettings(str(settings_file()), QSettings.Format.IniFormat)
