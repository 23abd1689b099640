"""The window's side of the flow library: the Library dock, "Save to library", opening a
subflow (a ``flow`` node's double-click or its inspector's "Open this flow") and the Problems
quick fix "Create a flow for it" of an unbound ``action`` node.

The library is the engine's default one (:func:`engine.default_library`: the data folder's
``library/`` plus the folders in the settings), the same one validation and runs resolve
flow references against.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from engine import FlowdeskError, FlowLibrary, default_library, new_flow_for_action

from ..panels.library import LibraryPanel

QUICK_FIXES = {"action_unbound": "Create a flow for it"}


class LibraryMixin:
    """Builds the Library dock (tabbed with the node palette) and its actions."""

    def _init_library(self, library: FlowLibrary | None = None) -> None:
        self.library_panel = LibraryPanel(library)
        self.library_dock = self._dock("Library", "libraryDock", self.library_panel,
                                       Qt.DockWidgetArea.LeftDockWidgetArea)
        self.tabifyDockWidget(self.palette_dock, self.library_dock)
        self.palette_dock.raise_()
        # Shown from View ▸ Library (or by "Save to library"); hidden in the default layout, where
        # the tab bar it adds under the palette would take height from the palette and the console.
        self.library_dock.hide()
        self.library_panel.open_requested.connect(lambda path: self.open_path(path))
        self.library_panel.save_requested.connect(self.save_to_library)
        self.library_panel.changed.connect(self.run_validation)
        self.library_dock.visibilityChanged.connect(lambda on: self.library_panel.refresh() if on else None)
        self.inspector.library_flows = self.library_panel.flows
        self.run_console.model.child_workflow = self.child_workflow  # names of a subflow's entries
        self.inspector.open_flow_requested.connect(self.open_flow_ref)
        self.scene.node_activated.connect(self._open_subflow_node)
        self.problems.quick_fixes = dict(QUICK_FIXES)
        self.problems.quick_fix_requested.connect(self.apply_quick_fix)

    @property
    def library(self) -> FlowLibrary:
        return self.library_panel.library

    # ------------------------------------------------------------------ saving
    def save_to_library(self) -> bool:
        """Save the current document into the library (it gets a stable ``id`` on the way).

        An untitled document becomes the library file; a document saved elsewhere is copied
        into the library and its own file keeps the new id on its next save."""
        if not self._has_document:
            return False
        doc = self.document
        folders = [f.resolve() for f in self.library.folders]
        in_library = bool(doc.path) and Path(doc.path).resolve().parent in folders
        try:
            entry = self.library.save(doc.workflow, doc.path if in_library else None)
        except (OSError, FlowdeskError) as err:
            QMessageBox.critical(self, "Cannot save to the library", str(err))
            return False
        if not doc.path or in_library:
            doc.save(str(entry.path))  # the document is the library file now: clean, titled
            self._add_recent(str(entry.path))
        self._update_title()
        self._update_actions()
        self.library_panel.refresh()
        self.library_panel.select(entry.id)
        self.library_dock.show()
        self.library_dock.raise_()
        self.run_validation()
        self.statusBar().showMessage(f"Saved “{entry.name}” to the library ({entry.path})", 5000)
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
            QMessageBox.warning(self, "Open flow", f"The flow '{ref}' is not in the library and is not a readable "
                                "file next to this workflow.")
            return False
        return self.open_path(str(entry.path))

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
            QMessageBox.critical(self, "Create a flow", str(err))
            return False
        self.library_panel.refresh()
        self.library_panel.select(entry.id)
        self.library_dock.show()
        self.library_dock.raise_()
        self.run_validation()
        self.statusBar().showMessage(f"Created the flow “{entry.name}” in the library for the action '{action}'; "
                                     "open it from the Library to fill it in.", 8000)
        return True
