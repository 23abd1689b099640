"""GUI entry: one QApplication with a qasync event loop, and the main window."""

from __future__ import annotations

import sys
from typing import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    from PySide6.QtWidgets import QApplication, QLabel, QMainWindow

    app = QApplication.instance() or QApplication([sys.argv[0], *(argv or [])])
    win = QMainWindow()
    win.setWindowTitle("Flowdesk")
    win.setCentralWidget(QLabel("Flowdesk editor — coming soon"))
    win.resize(1000, 700)
    win.show()
    return app.exec()
