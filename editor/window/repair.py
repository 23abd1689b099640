"""The Repair… dialog (the request: :mod:`editor.controllers.repair`). On a failed node: the model proposes a patch of the node's data (checked against the
node's schema by the engine), shown as a diff with the model's one-line reason; Accept applies
it as one undo step and offers to run again from the node."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QTextBrowser, QVBoxLayout, QWidget

from engine import RepairProposal

from ..run.approvals import diff_html
from ..screen_fit import fit_resize

__all__ = ["RepairDialog"]


def _text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


class RepairDialog(QDialog):
    """The proposed change (per field, word diff) and the model's reason; Accept / Cancel."""

    def __init__(self, title: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("repairDialog")
        self.setWindowTitle(f"Repair {title}")
        fit_resize(self, 640, 420)
        lay = QVBoxLayout(self)
        self.reason_label = QLabel("Asking the model for a repair…")
        self.reason_label.setWordWrap(True)
        lay.addWidget(self.reason_label)
        self.diff_view = QTextBrowser()
        self.diff_view.setObjectName("repairDiff")
        lay.addWidget(self.diff_view, 1)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.accept_button = self.buttons.addButton("Accept", QDialogButtonBox.ButtonRole.AcceptRole)
        self.accept_button.setEnabled(False)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)
        self.proposal: RepairProposal | None = None

    def show_proposal(self, proposal: RepairProposal) -> None:
        self.proposal = proposal
        self.reason_label.setText(f"<b>The model's reason:</b> {proposal.reason}")
        parts = []
        for f, before, after in proposal.changes:
            parts.append(f"<p><b>{f}</b></p>" + diff_html(_text(before), _text(after)))
        self.diff_view.setHtml("".join(parts))
        self.accept_button.setEnabled(True)

    def show_refusal(self, message: str) -> None:
        self.reason_label.setText(f"<span style='color:#f85149'><b>No usable repair:</b> {message}</span>")
        self.accept_button.setEnabled(False)
