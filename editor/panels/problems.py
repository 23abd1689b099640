"""Problems list: every validation issue; clicking one selects its node(s).

Problems name nodes as the user sees them, by title (an agent's name, a node's label),
never by ids the canvas does not show: :func:`describe_issue` rewrites the validator's
message (which may quote ids) with :func:`node_labels`, which numbers duplicate titles
("Writer (1)", "Writer (2)", left to right on the canvas)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QVBoxLayout, QWidget

from engine import Issue, Workflow

from ..issue_text import describe_issue, node_labels, node_title  # noqa: F401 (re-exported)
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

    def set_issues(self, issues: list[Issue], workflow: Workflow | None = None) -> None:
        """Show ``issues``; with ``workflow``, nodes are named by their titles."""
        self.list.clear()
        labels = node_labels(workflow)
        if not issues:
            item = QListWidgetItem(self._ok_icon, "No problems: the workflow is ready to run.")
            item.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.list.addItem(item)
            return
        for issue in issues:
            text = describe_issue(issue, workflow, labels)
            item = QListWidgetItem(self._error_icon if issue.is_error else self._warning_icon, text)
            item.setData(Qt.ItemDataRole.UserRole, list(issue.node_ids))
            item.setToolTip(f"{text}\n(click to select the node{'s' * (len(issue.node_ids) != 1)})"
                            if issue.node_ids else text)
            self.list.addItem(item)

    def _clicked(self, item: QListWidgetItem) -> None:
        ids = item.data(Qt.ItemDataRole.UserRole)
        if ids:
            self.nodes_requested.emit(list(ids))
