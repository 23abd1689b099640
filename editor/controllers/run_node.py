""" "Run this node" with sample inputs (the canvas's context menu, the code page's button): opens
:class:`editor.run.run_node.RunNodeDialog` on the open document's node; a failed run marks the
node's failing line in the inspector."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QWidget

from ..editing import WorkflowDocument
from ..panels.inspector import InspectorPanel
from ..run.run_node import RunNodeDialog


class RunNodeController(QObject):
    """Owns the open "Run this node" dialog (one at a time)."""

    def __init__(
        self,
        parent: QWidget,
        document: WorkflowDocument,
        inspector: InspectorPanel,
        resolver_factory: Callable[[], Any],
    ) -> None:
        super().__init__(parent)
        self._parent = parent
        self.document = document
        self.inspector = inspector
        self._resolver_factory = resolver_factory
        self.dialog: RunNodeDialog | None = None
        inspector.run_node_requested.connect(self.open)

    def open(self, node_id: str) -> RunNodeDialog | None:
        if self.document.node(node_id) is None:
            return None
        if self.dialog is not None:
            self.dialog.close()
        # a copy: edits made while the dialog is open do not reach a run in progress
        workflow = self.document.workflow.model_copy(deep=True)
        dialog = RunNodeDialog(workflow, node_id, self._resolver_factory, path=self.document.path, parent=self._parent)
        dialog.finished_run.connect(lambda _status, state, n=node_id: self._finished(n, state))
        self.dialog = dialog
        dialog.show()
        return dialog

    def _finished(self, node_id: str, state: Any) -> None:
        error = state.errors.get(node_id) if state is not None else None
        errors = {k: v for k, v in self.inspector.run_errors().items() if k != node_id}
        if error:
            errors[node_id] = error
        self.inspector.set_run_errors(errors)
