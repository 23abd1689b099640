"""The Help menu's dialogs (:mod:`editor.window.help`): Keyboard Shortcuts, listed from the
window's own menus and actions, and About Flowdesk; each shown once (F1 twice: one window)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt
from PySide6.QtWidgets import QMainWindow

from ..window.help import AboutDialog, ShortcutsDialog


class HelpController(QObject):
    def __init__(self, window: QMainWindow, store: Any) -> None:
        super().__init__(window)
        self._window = window  # the shortcuts are read from its menu bar and actions
        self.store = store

    def show_shortcuts(self) -> ShortcutsDialog:
        return self._show_once(ShortcutsDialog, lambda: ShortcutsDialog(self._window))

    def show_about(self) -> AboutDialog:
        path = Path(self.store.path) if self.store is not None else None
        return self._show_once(AboutDialog, lambda: AboutDialog(self._window, path))

    def _show_once(self, kind: type, make: Any) -> Any:
        """The dialog of ``kind`` already open, brought forward, else a new one."""
        dialog = next((d for d in self._window.findChildren(kind) if d.isVisible()), None)
        if dialog is None:
            dialog = make()
            dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
            dialog.show()
        dialog.raise_()
        dialog.activateWindow()
        return dialog
