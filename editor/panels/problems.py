"""Problems list: every validation issue; clicking one selects its node(s)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from engine import Issue

from ..resources import icon_path


class ProblemsPanel(QWidget):
    nodes_requested = Signal(list)  # node ids to select and show

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.list = QListWidget(self)
        self.list.setObjectName("problems")
        self.list.itemClicked.connect(self._clicked)
        self.list.itemActivated.connect(self._clicked)
        layout.addWidget(self.list)
        self._error_icon = QIcon(icon_path("error"))
        self._warning_icon = QIcon(icon_path("warning"))
        self._ok_icon = QIcon(icon_path("ok"))

    def set_issues(self, issues: list[Issue]) -> None:
        self.list.clear()
        if not issues:
            item = QListWidgetItem(self._ok_icon, "No problems: the workflow is ready to run.")
            item.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.list.addItem(item)
            return
        for issue in issues:
            item = QListWidgetItem(self._error_icon if issue.is_error else self._warning_icon, issue.message)
            item.setData(Qt.ItemDataRole.UserRole, list(issue.node_ids))
            item.setToolTip(f"{issue.code}: {issue.message}")
            self.list.addItem(item)

    def _clicked(self, item: QListWidgetItem) -> None:
        ids = item.data(Qt.ItemDataRole.UserRole)
        if ids:
            self.nodes_requested.emit(list(ids))
