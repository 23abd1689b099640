"""Where the window keeps its state between sessions (QSettings): geometry, docks, canvas toggles."""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QSettings

ORG = "Flowdesk"
APP = "Flowdesk"

# Bumped whenever the set of docks changes, so a layout saved by an older version (which
# Qt would apply to the new docks, squashing them) is ignored instead of restored.
DOCK_LAYOUT_VERSION = 2


def settings() -> QSettings:
    # INI everywhere (not the Windows registry) so tests can isolate it with QSettings.setPath.
    return QSettings(QSettings.Format.IniFormat, QSettings.Scope.UserScope, ORG, APP)


class WindowSettingsMixin:
    """Restores and saves the main window's geometry, dock layout and canvas toggles."""

    def _restore_settings(self) -> None:
        s = settings()
        geo = s.value("window/geometry")
        if isinstance(geo, QByteArray) and not geo.isEmpty():
            self.restoreGeometry(geo)
        state = s.value("window/state")
        if isinstance(state, QByteArray) and not state.isEmpty():
            self.restoreState(state, DOCK_LAYOUT_VERSION)
        self.act_snap.setChecked(s.value("canvas/snap", False, type=bool))
        self.act_minimap.setChecked(s.value("canvas/minimap", True, type=bool))

    def _save_settings(self) -> None:
        s = settings()
        s.setValue("window/geometry", self.saveGeometry())
        s.setValue("window/state", self.saveState(DOCK_LAYOUT_VERSION))
        s.setValue("canvas/snap", self.act_snap.isChecked())
        s.setValue("canvas/minimap", self.act_minimap.isChecked())
        s.setValue("lastFile", self.document.path or "")
        s.sync()
