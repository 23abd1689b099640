"""RunSidePane: the run console's right-hand side: the approval cards above the tabs.

The tabs show the chosen log entry (``Entry``), the subagent and flow calls (``Calls``), the
chosen node's run details (``Node``) and the timeline. The approval cards sit above them in
one vertical splitter: stacked above the log they left it one and a half entries in a short
dock. While cards wait they take up to :data:`APPROVAL_SHARE` of the splitter; when even
that cuts them, :meth:`RunSidePane.fit_approvals` answers how many pixels more the console
would need (the window may give them).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QSplitter, QTabWidget, QWidget

from .approvals import ApprovalsPanel
from .details import NodeRunDetails
from .entry_pane import EntryPane
from .timeline import TimelineView
from .trace import SubagentTrace

__all__ = ["RunSidePane", "APPROVAL_SHARE"]

#: The approval cards' largest share of the console's side split (the tabs keep the rest).
APPROVAL_SHARE = 0.62


class RunSidePane(QSplitter):
    """Approval cards above the Entry / Calls / Node / Timeline tabs."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Vertical, parent)
        self.setObjectName("consoleSide")
        self.setChildrenCollapsible(False)
        self.approvals = ApprovalsPanel(self)
        self.addWidget(self.approvals)
        self.tabs = QTabWidget()
        self.tabs.setObjectName("runTabs")
        self.entry_pane = EntryPane()
        self.tabs.addTab(self.entry_pane, "Entry")
        self.trace = SubagentTrace()
        self.tabs.addTab(self.trace, "Calls")
        self.node_panel = NodeRunDetails()
        self.tabs.addTab(self.node_panel, "Node")
        self.timeline = TimelineView()
        self.tabs.addTab(self.timeline, "Timeline")
        self.tabs.setMinimumHeight(120)  # the entry header and a few lines of it, beside a card
        self.addWidget(self.tabs)
        self.setStretchFactor(0, 0)
        self.setStretchFactor(1, 1)

    def fit_approvals(self) -> int:
        """Share the split between the waiting cards and the tabs; returns the pixels the
        cards lack to be shown whole (0 when they fit, or when none waits)."""
        if not self.approvals.cards:
            return 0
        total = sum(self.sizes()) or self.height()
        hint = self.approvals.sizeHint().height()
        want = min(hint, int(total * APPROVAL_SHARE))
        self.setSizes([want, max(90, total - want)])
        return max(0, int(hint / APPROVAL_SHARE) - total)
