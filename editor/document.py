"""The document's model: the open workflow, its signals and its undo stack.

Invariants:
* The pydantic :class:`engine.Workflow` is the source of truth; views (scene, inspector,
  problems) subscribe to the past-tense signals of :class:`WorkflowModel` and never write
  to the model.
* Only :mod:`editor.commands` calls the low-level ``insert_*``/``remove_*``/``set_*``
  methods, which emit the signals. Every user edit is a request of
  :class:`editor.editing.WorkflowDocument` (``add_node``, ``connect``, ``delete``, ...) that
  pushes one command on :attr:`WorkflowModel.undo_stack`. This module imports neither the
  commands nor the canvas: the layers are model <- commands <- requests.
* Node ids are kept as read; new ids come from :func:`engine.new_id` and never collide.
* Connections have no id in the file format; they are named by their key
  ``(source, sourceHandle or "output", target, targetHandle or "input")``.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoStack

from engine import (
    CanvasGroup,
    CanvasNote,
    Connection,
    ConnectionCheck,
    GraphIndex,
    Node,
    PaletteEntry,
    Workflow,
    check_connection,
    dumps_workflow,
    load_workflow,
    new_id,
    palette_entries,
    save_workflow,
    spec_for,
)

ConnKey = tuple[str, str, str, str]

#: The canvas annotations, by kind: the workflow's list field and its model class.
ANNOTATIONS: dict[str, tuple[str, type[CanvasNote] | type[CanvasGroup]]] = {
    "note": ("notes", CanvasNote),
    "group": ("groups", CanvasGroup),
}


class _PaletteKinds(Sequence[str]):
    """The palette's keys in order (a kind, or a variant such as ``subagent``), read from the
    engine's node registry when asked (plug-in kinds included)."""

    def _keys(self) -> list[str]:
        return [e.key for e in palette_entries()]

    def __getitem__(self, i):  # type: ignore[override]
        return self._keys()[i]

    def __len__(self) -> int:
        return len(self._keys())

    def __iter__(self):
        return iter(self._keys())

    def __repr__(self) -> str:
        return f"PALETTE_KINDS{tuple(self._keys())!r}"


PALETTE_KINDS = _PaletteKinds()


def palette_entry(key: str) -> PaletteEntry:
    """The palette entry named ``key`` (KeyError when no kind offers it)."""
    for entry in palette_entries():
        if entry.key == key:
            return entry
    raise KeyError(key)


def conn_key(c: Connection) -> ConnKey:
    return c.key()


def is_subagent_node(node: Node, index: GraphIndex | None = None) -> bool:
    """Whether the canvas shows ``node`` as a subagent (linked under a parent, or created as one)."""
    spec = spec_for(node.type)
    if spec is None or not spec.tool_capable:
        return False
    if index is not None and index.sub_parents.get(node.id):
        return True
    return bool(getattr(node.data, "subagent", False)) and not (index is not None and index.in_execution(node.id))


class WorkflowModel(QObject):
    """The open workflow, its past-tense signals and its undo stack.

    Reading methods are for everyone; the low-level ``insert_*``/``remove_*``/``set_*``
    methods are for :mod:`editor.commands` only (user edits are requested through
    :class:`editor.editing.WorkflowDocument`, which pushes those commands).
    """

    node_added = Signal(str)
    node_removed = Signal(str)
    connection_added = Signal(object)  # ConnKey
    connection_removed = Signal(object)  # ConnKey
    connection_replaced = Signal(object, object)  # old ConnKey, new ConnKey
    nodes_moved = Signal(list)  # node ids
    node_data_changed = Signal(str)
    meta_changed = Signal()
    # Canvas annotations (sticky notes, groups): kind ("note" | "group"), id
    annotation_added = Signal(str, str)
    annotation_removed = Signal(str, str)
    annotation_changed = Signal(str, str)
    workflow_reset = Signal()
    changed = Signal()  # after any model change: validation and autosave listen here
    path_changed = Signal(str)

    def __init__(
        self, workflow: Workflow | None = None, path: str | None = None, parent: QObject | None = None
    ) -> None:
        super().__init__(parent)
        self.undo_stack = QUndoStack(self)
        self._workflow = workflow or Workflow(name="Untitled workflow", version=1)
        self._nodes: dict[str, Node] = {n.id: n for n in self._workflow.nodes}
        self._path: str | None = path

    # ------------------------------------------------------------------ reading
    @property
    def workflow(self) -> Workflow:
        """The model, for reading. It changes only through the low-level methods below (commands only)."""
        return self._workflow

    @property
    def path(self) -> str | None:
        return self._path

    def node(self, node_id: str) -> Node | None:
        return self._nodes.get(node_id)

    def node_ids(self) -> set[str]:
        return set(self._nodes)

    def graph_index(self) -> GraphIndex:
        return GraphIndex(self._workflow)

    def connection_index(self, key: ConnKey) -> int | None:
        for i, c in enumerate(self._workflow.connections):
            if c.key() == key:
                return i
        return None

    def connection(self, key: ConnKey) -> Connection | None:
        i = self.connection_index(key)
        return None if i is None else self._workflow.connections[i]

    def annotations(self, kind: str) -> list[Any]:
        """The workflow's notes (``kind`` "note") or groups ("group"), in file order (for reading)."""
        return list(getattr(self._workflow, ANNOTATIONS[kind][0]) or ())

    def annotation(self, kind: str, ann_id: str) -> Any | None:
        for a in getattr(self._workflow, ANNOTATIONS[kind][0]) or ():
            if a.id == ann_id:
                return a
        return None

    def annotation_index(self, kind: str, ann_id: str) -> int | None:
        for i, a in enumerate(getattr(self._workflow, ANNOTATIONS[kind][0]) or ()):
            if a.id == ann_id:
                return i
        return None

    def groups_of(self, node_id: str) -> list[Any]:
        """The groups ``node_id`` belongs to."""
        return [g for g in self._workflow.groups or () if node_id in g.nodes]

    def new_annotation_id(self, kind: str) -> str:
        taken = {a.id for a in self.annotations(kind)} | set(self._nodes)
        return new_id(kind, taken)

    def is_modified(self) -> bool:
        return not self.undo_stack.isClean()

    def display_name(self) -> str:
        if self._path:
            return Path(self._path).name
        return "Untitled"

    def new_node_dump(self, kind: str, x: float, y: float) -> dict[str, Any]:
        entry = palette_entry(kind)
        node = Node.model_validate(
            {
                "id": new_id(entry.kind, self._nodes),
                "type": entry.kind,
                "x": x,
                "y": y,
                "data": copy.deepcopy(entry.data),
            }
        )
        return node.model_dump()

    def check(
        self,
        source: str,
        source_handle: str,
        target: str,
        target_handle: str = "input",
        index: GraphIndex | None = None,
    ) -> ConnectionCheck:
        return check_connection(index or self._workflow, source, source_handle, target, target_handle)

    def fragment_json(self, node_ids: Iterable[str]) -> str:
        """The selected nodes and the links among them, as workflow JSON (for the clipboard)."""
        ids = [n.id for n in self._workflow.nodes if n.id in set(node_ids)]
        chosen = set(ids)
        frag = Workflow(
            nodes=[self._nodes[i] for i in ids],
            connections=[c for c in self._workflow.connections if c.source in chosen and c.target in chosen],
        )
        return dumps_workflow(frag)

    # ------------------------------------------------------------------ files
    def reset(self, workflow: Workflow, path: str | None) -> None:
        """Replace the whole workflow (open/new/revert). Clears undo history."""
        self.undo_stack.clear()
        self._workflow = workflow
        self._nodes = {n.id: n for n in workflow.nodes}
        self._path = path
        self.undo_stack.setClean()
        self.workflow_reset.emit()
        self.path_changed.emit(path or "")
        self.changed.emit()

    def open(self, path: str) -> None:
        """Load ``path``; on :class:`WorkflowLoadError` the document is left exactly as it was."""
        workflow = load_workflow(path)  # raises before anything is touched
        self.reset(workflow, str(Path(path).resolve()))

    def save(self, path: str | None = None) -> None:
        target = path or self._path
        if not target:
            raise ValueError("no path to save to")
        save_workflow(self._workflow, target)  # atomic: temp file + rename
        if str(Path(target).resolve()) != self._path:
            self._path = str(Path(target).resolve())
            self.path_changed.emit(self._path)
        self.undo_stack.setClean()

    def to_json(self) -> str:
        return dumps_workflow(self._workflow)

    # ------------------------------------------------------------------ low level (commands only)
    def insert_node(self, index: int, dump: dict[str, Any]) -> None:
        node = Node.model_validate(copy.deepcopy(dump))
        self._workflow.nodes.insert(index, node)
        self._nodes[node.id] = node
        self.node_added.emit(node.id)
        self.changed.emit()

    def remove_node(self, node_id: str) -> None:
        self.remove_nodes([node_id])

    def remove_nodes(self, node_ids: list[str]) -> None:
        """Remove several nodes in one pass (by identity: pydantic ``==`` compares every field)."""
        doomed = {id(self._nodes.pop(nid)) for nid in node_ids}
        self._workflow.nodes[:] = [n for n in self._workflow.nodes if id(n) not in doomed]
        for nid in node_ids:
            self.node_removed.emit(nid)
        self.changed.emit()

    def insert_connection(self, index: int, dump: dict[str, Any]) -> None:
        conn = Connection.model_validate(copy.deepcopy(dump))
        self._workflow.connections.insert(index, conn)
        self.connection_added.emit(conn.key())
        self.changed.emit()

    def remove_connection_at(self, index: int) -> None:
        self.remove_connections_at([index])

    def remove_connections_at(self, indices: list[int]) -> None:
        """Remove the links at ``indices`` (positions before the removal) in one pass."""
        doomed = set(indices)
        conns = self._workflow.connections
        removed = [conns[i] for i in sorted(doomed)]
        self._workflow.connections[:] = [c for i, c in enumerate(conns) if i not in doomed]
        for conn in removed:
            self.connection_removed.emit(conn.key())
        self.changed.emit()

    def replace_connection_at(self, index: int, dump: dict[str, Any]) -> None:
        old = self._workflow.connections[index]
        new = Connection.model_validate(copy.deepcopy(dump))
        self._workflow.connections[index] = new
        self.connection_replaced.emit(old.key(), new.key())
        self.changed.emit()

    def set_positions(self, positions: dict[str, tuple[float, float]]) -> None:
        moved = []
        for nid, (x, y) in positions.items():
            node = self._nodes.get(nid)
            if node is not None and (node.x, node.y) != (x, y):
                node.x, node.y = x, y
                moved.append(nid)
        if moved:
            self.nodes_moved.emit(moved)
            self.changed.emit()

    def set_node_data(self, node_id: str, data: dict[str, Any]) -> None:
        node = self._nodes[node_id]
        if node.data.model_dump() == data:
            return
        node.data = type(node.data).model_validate(copy.deepcopy(data))
        self.node_data_changed.emit(node_id)
        self.changed.emit()

    def insert_annotation(self, kind: str, index: int, dump: dict[str, Any]) -> None:
        field, cls = ANNOTATIONS[kind]
        item = cls.model_validate(copy.deepcopy(dump))
        items = list(getattr(self._workflow, field) or ())
        items.insert(index, item)
        setattr(self._workflow, field, items)
        self.annotation_added.emit(kind, item.id)
        self.changed.emit()

    def remove_annotation(self, kind: str, ann_id: str) -> None:
        field = ANNOTATIONS[kind][0]
        items = [a for a in getattr(self._workflow, field) or () if a.id != ann_id]
        setattr(self._workflow, field, items or None)  # no empty list left in the file
        self.annotation_removed.emit(kind, ann_id)
        self.changed.emit()

    def replace_annotation(self, kind: str, ann_id: str, dump: dict[str, Any]) -> None:
        field, cls = ANNOTATIONS[kind]
        i = self.annotation_index(kind, ann_id)
        if i is None:
            return
        items = getattr(self._workflow, field)
        if items[i].model_dump() == dump:
            return
        items[i] = cls.model_validate(copy.deepcopy(dump))
        self.annotation_changed.emit(kind, ann_id)
        self.changed.emit()

    def set_meta(self, meta: dict[str, Any]) -> None:
        changed = False
        for key, value in meta.items():
            if getattr(self._workflow, key, None) != value:
                setattr(self._workflow, key, value)
                changed = True
        if changed:
            self.meta_changed.emit()
            self.changed.emit()


__all__ = ["WorkflowModel", "ConnKey", "ANNOTATIONS", "PALETTE_KINDS", "palette_entry", "is_subagent_node", "conn_key"]
