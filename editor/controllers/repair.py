"""Repair… on a failed node: the model proposes a patch of the node's data (checked against the
node's schema by the engine), shown as a diff with the model's one-line reason
(:class:`editor.window.repair.RepairDialog`); Accept applies it as one undo step and offers to
run again from the node."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QMessageBox, QWidget

from engine import AgentInvocation, RepairError, propose_repair

from ..editing import WorkflowDocument
from ..run.console import RunConsole
from ..window.repair import RepairDialog

Status = Callable[[str, int], None]


class RepairController(QObject):
    """``repair_node(node_id)``: the context menu's "Repair…" on a failed node."""

    def __init__(
        self,
        parent: QWidget,
        document: WorkflowDocument,
        console: RunConsole,
        resolver_factory: Callable[[], Any],
        run_from: Callable[[str], None],
        status: Status,
    ) -> None:
        super().__init__(parent)
        self._parent = parent
        self.document = document
        self.console = console
        self._resolver_factory = resolver_factory
        self._run_from = run_from
        self._status = status
        self.repair_dialog: RepairDialog | None = None
        self.repair_question: QMessageBox | None = None

    def repair_node(self, node_id: str, provider: Any = None) -> asyncio.Future | None:
        details = self.console.node_details(node_id) or {}
        error = details.get("error") or "failed"
        node = self.document.node(node_id)
        if node is None:
            return None
        dialog = RepairDialog(node.title, self._parent)
        self.repair_dialog = dialog
        dialog.accepted.connect(lambda: self._apply_repair(dialog))
        dialog.show()
        if provider is None:
            try:
                resolver = self._resolver_factory()
                provider = resolver(
                    AgentInvocation(
                        node_id=node_id,
                        name="Repair",
                        system_prompt="",
                        user_content="",
                        model="",
                        reasoning_effort="low",
                        tools={},
                        subagents=[],
                        provider=getattr(node.data, "provider", None),
                    )
                )
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
        self._status(f"Repaired {node.title}: {proposal.reason}", 6000)
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Repaired",
            f"{proposal.reason}\n\nRun again from {node.title} (the nodes before it from cache)?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            self._parent,
        )
        box.setObjectName("repairRunFrom")
        box.buttonClicked.connect(
            lambda b, n=proposal.node_id: (
                self._run_from(n) if box.standardButton(b) == QMessageBox.StandardButton.Yes else None
            )
        )
        self.repair_question = box
        box.open()
