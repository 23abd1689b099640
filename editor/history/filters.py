"""HistoryFilterBar: the run history panel's filter row (one workflow, one status).

Split from :mod:`editor.history.panel` (which keeps ``filter_bar``, ``workflow_combo`` and
``status_combo`` as names for these widgets). The bar owns its two combo boxes and says
when the user changed either (``changed``); :meth:`HistoryFilterBar.set` changes them
without saying so (the panel reloads once). The workflows offered are those the store
has runs of (:meth:`HistoryFilterBar.fill_workflows`); a workflow chosen that has no runs
left stays chosen and simply lists none.
"""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QWidget

from .model import STATUS_LABELS

__all__ = ["HistoryFilterBar", "STATUS_FILTERS"]

STATUS_FILTERS = ("paused", "running", "completed", "failed", "cancelled", "interrupted")


class HistoryFilterBar(QWidget):
    """Workflow: [All workflows ▾]   Status: [All statuses ▾]"""

    changed = Signal()  # the user chose another workflow or status

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.setSpacing(6)
        self.workflow_combo = QComboBox(self)
        self.workflow_combo.setObjectName("workflowFilter")
        self.workflow_combo.setToolTip("Show the runs of one workflow")
        self.workflow_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.workflow_combo.setMinimumContentsLength(14)
        self.workflow_combo.addItem("All workflows", None)
        self.status_combo = QComboBox(self)
        self.status_combo.setObjectName("statusFilter")
        self.status_combo.setToolTip("Show the runs with one status")
        self.status_combo.addItem("All statuses", None)
        for s in STATUS_FILTERS:
            self.status_combo.addItem(STATUS_LABELS[s], s)
        row.addWidget(QLabel("Workflow:", self))
        row.addWidget(self.workflow_combo)
        row.addSpacing(8)
        row.addWidget(QLabel("Status:", self))
        row.addWidget(self.status_combo)
        row.addStretch(1)
        self.workflow_combo.currentIndexChanged.connect(self.changed)
        self.status_combo.currentIndexChanged.connect(self.changed)

    @property
    def workflow(self) -> str | None:
        return self.workflow_combo.currentData()

    @property
    def status(self) -> str | None:
        return self.status_combo.currentData()

    def set(self, *, workflow: str | None, status: str | None) -> None:
        """Choose ``workflow`` and ``status`` (None: all) without ``changed``; a workflow not
        offered yet is added."""
        for combo, value in ((self.workflow_combo, workflow), (self.status_combo, status)):
            i = combo.findData(value)
            if i < 0 and combo is self.workflow_combo and value is not None:
                combo.blockSignals(True)
                combo.addItem(value, value)
                combo.blockSignals(False)
                i = combo.count() - 1
            combo.blockSignals(True)
            combo.setCurrentIndex(max(i, 0))
            combo.blockSignals(False)

    def fill_workflows(self, names: list[str], current: str | None) -> None:
        """Offer the workflows ``names``, keeping ``current`` chosen."""
        combo = self.workflow_combo
        have = [combo.itemData(i) for i in range(1, combo.count())]
        if have == names:
            return
        combo.blockSignals(True)
        combo.clear()
        combo.addItem("All workflows", None)
        for n in names:
            if n:  # an empty name cannot be filtered on (the store treats "" as "all")
                combo.addItem(n, n)
        i = combo.findData(current) if current is not None else 0
        if i < 0:  # the filter's workflow has no runs left: keep it chosen, it simply lists none
            combo.addItem(current, current)
            i = combo.count() - 1
        combo.setCurrentIndex(i)
        combo.blockSignals(False)
