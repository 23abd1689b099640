"""Repair… on a failed node: the model proposes a patch of the node's data (checked against the
node's schema by the engine), shown as a diff with the model's one-line reason; Accept applies
it as one undo step and offers to run again from the node."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QMessageBox, QTextBrowser, QVBoxLayout, QWidget

from engine import AgentInvocation, RepairError, RepairProposal, propose_repair

from ..run.approvals import diff_html
from ..screen_fit import fit_resize

__all__ = ["RepairDialog", "RepairMixin"]


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


class RepairMixin:
    """``repair_node(node_id)`` for the main window (context menu "Repair…" on a failed node)."""

    repair_dialog: RepairDialog | None = None

    def repair_node(self, node_id: str, provider: Any = None) -> "asyncio.Future | None":
        details = self.run_console.node_details(node_id) or {}
        error = details.get("error") or "failed"
        node = self.document.node(node_id)
        if node is None:
            return None
        dialog = RepairDialog(node.title, self)
        self.repair_dialog = dialog
        dialog.accepted.connect(lambda: self._apply_repair(dialog))
        dialog.show()
        if provider is None:
            try:
                resolver = self._resolver_factory()
                provider = resolver(AgentInvocation(node_id=node_id, name="Repair", system_prompt="", user_content="",
                                                    model="", reasoning_effort="low", tools={}, subagents=[],
                                                    provider=getattr(node.data, "provider", None)))
            except Exception as err:  # no provider set up: said in the dialog
                dialog.show_refusal(f"no model to ask: {err}")
                return None
        workflow = self.document.workflow.model_copy(deep=True)

        async def ask() -> None:
            try:
                proposal = await propose_repair(provider, workflow, node_id, details.get("input"), error)
            except RepairError as err:
                dialog.show_refusal(str(err))
                return
            except Exception as err:  # the model call failed
                dialog.show_refusal(f"the repair request failed: {err}")
                return
            dialog.show_proposal(proposal)

        return asyncio.ensure_future(ask())

    def _apply_repair(self, dialog: RepairDialog) -> None:
        proposal = dialog.proposal
        node = self.document.node(proposal.node_id) if proposal else None
        if proposal is None or node is None:
            return
        data = {**node.data.model_dump(), **proposal.patch}
        self.document.edit_node_data(proposal.node_id, data, None)  # one undo step
        self.statusBar().showMessage(f"Repaired {node.title}: {proposal.reason}", 6000)
        box = QMessageBox(QMessageBox.Icon.Question, "Repaired", f"{proposal.reason}\n\nRun again from "
                          f"{node.title} (the nodes before it from cache)?",
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self)
        box.setObjectName("repairRunFrom")
        box.buttonClicked.connect(lambda b, n=proposal.node_id: self.run_from_node(n)
                                  if box.standardButton(b) == QMessageBox.StandardButton.Yes else None)
        self.repair_question = box
        box.open()
