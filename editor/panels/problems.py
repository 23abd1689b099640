"""Problems list: every validation issue; clicking one selects its node(s).

Problems name nodes as the user sees them, by title (an agent's name, a node's label),
never by ids the canvas does not show: :func:`describe_issue` rewrites the validator's
message (which may quote ids) with :func:`node_labels`, which numbers duplicate titles
("Writer (1)", "Writer (2)", left to right on the canvas).

An issue whose code has a quick fix (``quick_fixes``: code -> action label, set by the
window) says so in its text and offers the fix in its context menu and on the "Quick fix"
button; choosing it emits ``quick_fix_requested(issue)``.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QMenu, QPushButton, QVBoxLayout, QWidget

from engine import Issue, Workflow

from ..issue_text import describe_issue, node_labels, node_title  # noqa: F401 (re-exported)
from ..resources import icon_path


class ProblemsPanel(QWidget):
    nodes_requested = Signal(list)  # node ids to select and show
    quick_fix_requested = Signal(object)  # the Issue

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.list = QListWidget(self)
        self.list.setObjectName("problems")
        self.list.itemClicked.connect(self._clicked)
        self.list.itemActivated.connect(self._clicked)
        layout.addWidget(self.list)
        self.quick_fixes: dict[str, str] = {}
        self.fix_button = QPushButton("Quick fix")
        self.fix_button.setObjectName("quickFix")
        self.fix_button.setVisible(False)
        self.fix_button.clicked.connect(self._fix_current)
        layout.addWidget(self.fix_button)
        self.list.currentItemChanged.connect(lambda *_: self._update_fix_button())
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._context_menu)
        self._error_icon = QIcon(icon_path("error"))
        self._warning_icon = QIcon(icon_path("warning"))
        self._ok_icon = QIcon(icon_path("ok"))

    def set_issues(self, issues: list[Issue], workflow: Workflow | None = None) -> None:
        """Show ``issues``; with ``workflow``, nodes are named by their titles."""
        self.list.clear()
        if not issues:  # (no node labels needed: they cost a walk over every node of a big file)
            item = QListWidgetItem(self._ok_icon, "No problems: the workflow is ready to run.")
            item.setFlags(Qt.ItemFlag.ItemIsEnabled)
            self.list.addItem(item)
            self.fix_button.setVisible(False)
            return
        labels = node_labels(workflow)
        for issue in issues:
            text = describe_issue(issue, workflow, labels)
            fix = self.quick_fixes.get(issue.code)
            item = QListWidgetItem(
                self._error_icon if issue.is_error else self._warning_icon,
                text + (f"  — quick fix: {fix}" if fix else ""),
            )
            item.setData(Qt.ItemDataRole.UserRole, list(issue.node_ids))
            item.setData(Qt.ItemDataRole.UserRole + 1, issue)
            item.setToolTip(
                (f"{text}\n(click to select the node{'s' * (len(issue.node_ids) != 1)})" if issue.node_ids else text)
                + (f"\nRight-click or the button below: {fix}" if fix else "")
            )
            self.list.addItem(item)
        self._update_fix_button()

    def set_no_workflow(self) -> None:
        """Nothing to check: says so (as the inspector does) instead of an empty list."""
        self.list.clear()
        item = QListWidgetItem("No workflow is open. Its problems are listed here once you create or open one.")
        item.setFlags(Qt.ItemFlag.NoItemFlags)
        self.list.addItem(item)
        self.fix_button.setVisible(False)

    def fix_for(self, item: QListWidgetItem | None) -> str | None:
        issue = item.data(Qt.ItemDataRole.UserRole + 1) if item is not None else None
        return self.quick_fixes.get(issue.code) if issue is not None else None

    def _update_fix_button(self) -> None:
        fix = self.fix_for(self.list.currentItem())
        self.fix_button.setVisible(bool(fix))
        if fix:
            self.fix_button.setText(f"Quick fix: {fix}")

    def _fix_current(self) -> None:
        item = self.list.currentItem()
        if self.fix_for(item):
            self.quick_fix_requested.emit(item.data(Qt.ItemDataRole.UserRole + 1))

    def _context_menu(self, pos) -> None:
        item = self.list.itemAt(pos)
        fix = self.fix_for(item)
        if not fix:
            return
        self.list.setCurrentItem(item)
        menu = QMenu(self)
        menu.addAction(fix, self._fix_current)
        menu.exec(self.list.viewport().mapToGlobal(pos))

    def _clicked(self, item: QListWidgetItem) -> None:
        ids = item.data(Qt.ItemDataRole.UserRole)
        if ids:
            self.nodes_requested.emit(list(ids))
