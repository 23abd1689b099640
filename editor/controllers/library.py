"""The window's side of the flow library: the Library dock, "Save to library", opening a
subflow (a ``flow`` node's double-click or its inspector's "Open this flow") and the Problems
quick fix "Create a flow for it" of an unbound ``action`` node.

The library is the engine's default one (:func:`engine.default_library`: the data folder's
``library/`` plus the folders in the settings), the same one validation and runs resolve
flow references against.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QDockWidget, QMessageBox, QWidget

from engine import FlowdeskError, FlowLibrary, new_flow_for_action

from ..canvas.scene import CanvasScene
from ..editing import WorkflowDocument
from ..panels.inspector import InspectorPanel
from ..panels.library import LibraryPanel
from ..panels.problems import ProblemsPanel
from ..run.console import RunConsole
from .files import FilesController
from .session import DocumentSession
from .validation import ValidationController

QUICK_FIXES = {"action_unbound": "Create a flow for it"}

Status = Callable[[str, int], None]


class LibraryController(QObject):
    """Drives the Library dock (tabbed with the node palette) and the window's library commands."""

    def __init__(
        self,
        parent: QWidget,
        panel: LibraryPanel,
        dock: QDockWidget,
        session: DocumentSession,
        document: WorkflowDocument,
        scene: CanvasScene,
        inspector: InspectorPanel,
        problems: ProblemsPanel,
        console: RunConsole,
        files: FilesController,
        validation: ValidationController,
        status: Status,
    ) -> None:
        super().__init__(parent)
        self._parent = parent  # the message boxes' parent
        self.panel = panel
        self.dock = dock
        self.session = session
        self.document = document
        self.files = files
        self.validation = validation
        self._status = status
        panel.open_requested.connect(lambda path: files.open_path(path))
        panel.save_requested.connect(self.save_to_library)
        panel.changed.connect(validation.run_validation)
        dock.visibilityChanged.connect(lambda on: panel.refresh() if on else None)
        inspector.library_flows = panel.flows
        console.model.child_workflow = self.child_workflow  # names of a subflow's entries
        inspector.open_flow_requested.connect(self.open_flow_ref)
        scene.node_activated.connect(self._open_subflow_node)
        problems.quick_fixes = dict(QUICK_FIXES)
        problems.quick_fix_requested.connect(self.apply_quick_fix)
        console.run_started.connect(lambda _run_id: self.count_run())

    def count_run(self) -> None:
        """A run of a library flow's file counts in the library's usage (the dock sorts by it)."""
        path = self.document.path
        if not path:
            return
        try:
            entry = self.library.entry_for_path(path)
            if entry is not None:
                self.library.record_run(entry.id)
        except (OSError, FlowdeskError):
            pass

    @property
    def library(self) -> FlowLibrary:
        return self.panel.library

    def _show_entry(self, entry_id: str) -> None:
        self.panel.refresh()
        self.panel.select(entry_id)
        self.dock.show()
        self.dock.raise_()
        self.validation.run_validation()

    # ------------------------------------------------------------------ saving
    def save_to_library(self) -> bool:
        """Save the current document into the library (it gets a stable ``id`` on the way).

        An untitled document becomes the library file; a document saved elsewhere is copied
        into the library and its own file keeps the new id on its next save."""
        if not self.session.has_document:
            return False
        doc = self.document
        folders = [f.resolve() for f in self.library.folders]
        in_library = bool(doc.path) and Path(doc.path).resolve().parent in folders
        try:
            entry = self.library.save(doc.workflow, doc.path if in_library else None)
        except (OSError, FlowdeskError) as err:
            QMessageBox.critical(self._parent, "Cannot save to the library", str(err))
            return False
        if not doc.path or in_library:
            doc.save(str(entry.path))  # the document is the library file now: clean, titled
            self.files.add_recent(str(entry.path))
        self.files.chrome_changed.emit()
        self._show_entry(entry.id)
        self._status(f"Saved “{entry.name}” to the library ({entry.path})", 5000)
        return True

    # ------------------------------------------------------------------ subflows
    def open_flow_ref(self, ref: str) -> bool:
        """Open the flow a ``flow`` node names (a library id or a path relative to this file)."""
        ref = (ref or "").strip()
        if not ref:
            return False
        try:
            entry = self.library.resolve(ref, base=self.document.path, by_name=True)
        except (OSError, FlowdeskError):
            entry = None
        if entry is None:
            QMessageBox.warning(
                self._parent,
                "Open flow",
                f"The flow '{ref}' is not in the library and is not a readable file next to this workflow.",
            )
            return False
        return self.files.open_path(str(entry.path))

    def child_workflow(self, flow_node_id: str) -> Any:
        """The workflow a flow node runs (for naming a subflow's entries in the console), or None."""
        node = self.document.node(flow_node_id)
        if node is None or node.type not in ("flow", "action"):
            return None
        data = node.data.model_dump()
        ref = data.get("flow") if node.type == "flow" else data.get("action")
        entry = self.library.resolve(str(ref or ""), base=self.document.path, by_name=node.type == "action")
        return None if entry is None else self.library.load_path(entry.path)

    def _open_subflow_node(self, node_id: str) -> None:
        node = self.document.node(node_id)
        if node is None or node.type not in ("flow", "action"):
            return
        data = node.data.model_dump()
        ref = data.get("flow") if node.type == "flow" else data.get("action")
        if ref:
            self.open_flow_ref(str(ref))

    # ------------------------------------------------------------------ quick fixes
    def apply_quick_fix(self, issue: Any) -> bool:
        if issue.code != "action_unbound" or not issue.node_ids:
            return False
        node = self.document.node(issue.node_ids[0])
        if node is None or node.type != "action":
            return False
        data = node.data.model_dump()
        action = str(data.get("action") or "")
        workflow = new_flow_for_action(action, data.get("parameters") or {}, schema=str(data.get("schema") or ""))
        try:
            entry = self.library.save(workflow)
        except (OSError, FlowdeskError) as err:
            QMessageBox.critical(self._parent, "Create a flow", str(err))
            return False
        self._show_entry(entry.id)
        self._status(
            f"Created the flow “{entry.name}” in the library for the action '{action}'; "
            "open it from the Library to fill it in.",
            8000,
        )
        return True
