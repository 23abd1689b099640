"""WorkflowDocument: the one object that mutates the open workflow.

Invariants:
* The pydantic :class:`engine.Workflow` is the source of truth; views (scene, inspector,
  problems) subscribe to the past-tense signals below and never write to the model.
* Every user edit goes through a request method (``add_node``, ``connect``, ``delete``,
  ``move_nodes``, ``edit_node_data`` ...) that pushes one :mod:`editor.commands` command on
  :attr:`undo_stack`; the low-level ``insert_*``/``remove_*``/``set_*`` methods are for those
  commands only and emit the signals.
* Node ids are kept as read; new ids come from :func:`engine.new_id` and never collide.
* Connections have no id in the file format; they are named by their key
  ``(source, sourceHandle or "output", target, targetHandle or "input")``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from collections.abc import Sequence
from typing import Any, Iterable

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QUndoStack

from engine import (ConnectionCheck, Connection, GraphIndex, Node, PaletteEntry, Workflow, check_connection,
                    dumps_workflow, load_workflow, loads_workflow, new_id, palette_entries, save_workflow, spec_for)

ConnKey = tuple[str, str, str, str]

class _PaletteKinds(Sequence[str]):
    """The palette's keys in order (a kind, or a variant such as ``subagent``), read from the
    engine's node registry when first asked (plug-in kinds included)."""

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


class WorkflowDocument(QObject):
    node_added = Signal(str)
    node_removed = Signal(str)
    connection_added = Signal(object)  # ConnKey
    connection_removed = Signal(object)  # ConnKey
    connection_replaced = Signal(object, object)  # old ConnKey, new ConnKey
    nodes_moved = Signal(list)  # node ids
    node_data_changed = Signal(str)
    meta_changed = Signal()
    workflow_reset = Signal()
    changed = Signal()  # after any model change: validation and autosave listen here
    path_changed = Signal(str)

    def __init__(self, workflow: Workflow | None = None, path: str | None = None, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.undo_stack = QUndoStack(self)
        self._workflow = workflow or Workflow(name="Untitled workflow", version=1)
        self._nodes: dict[str, Node] = {n.id: n for n in self._workflow.nodes}
        self._path: str | None = path
        self._merge_epoch = 0

    # ------------------------------------------------------------------ reading
    @property
    def workflow(self) -> Workflow:
        """The model, for reading. Mutate only through this class."""
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

    def is_modified(self) -> bool:
        return not self.undo_stack.isClean()

    def display_name(self) -> str:
        if self._path:
            return Path(self._path).name
        return "Untitled"

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

    def set_meta(self, meta: dict[str, Any]) -> None:
        changed = False
        for key, value in meta.items():
            if getattr(self._workflow, key, None) != value:
                setattr(self._workflow, key, value)
                changed = True
        if changed:
            self.meta_changed.emit()
            self.changed.emit()

    # ------------------------------------------------------------------ requests (one undo step each)
    def end_merge(self) -> None:
        """Start a new undo step for the next typed edit (called when an editor loses focus)."""
        self._merge_epoch += 1

    def new_node_dump(self, kind: str, x: float, y: float) -> dict[str, Any]:
        entry = palette_entry(kind)
        node = Node.model_validate({"id": new_id(entry.kind, self._nodes), "type": entry.kind, "x": x, "y": y,
                                    "data": copy.deepcopy(entry.data)})
        return node.model_dump()

    def add_node(self, kind: str, x: float, y: float) -> str:
        from .commands import AddItemsCommand

        dump = self.new_node_dump(kind, x, y)
        self.undo_stack.push(AddItemsCommand(self, [dump], [], f"Add {kind}"))
        return dump["id"]

    def add_items(self, node_dumps: list[dict[str, Any]], conn_dumps: list[dict[str, Any]], text: str) -> None:
        from .commands import AddItemsCommand

        if node_dumps or conn_dumps:
            self.undo_stack.push(AddItemsCommand(self, node_dumps, conn_dumps, text))

    def check(self, source: str, source_handle: str, target: str, target_handle: str = "input",
              index: GraphIndex | None = None) -> ConnectionCheck:
        return check_connection(index or self._workflow, source, source_handle, target, target_handle)

    def connect(self, source: str, source_handle: str, target: str, target_handle: str = "input") -> ConnectionCheck:
        from .commands import AddItemsCommand

        result = self.check(source, source_handle, target, target_handle)
        if result.ok:
            dump = Connection(source=source, target=target, sourceHandle=source_handle,
                              targetHandle=target_handle).model_dump()
            self.undo_stack.push(AddItemsCommand(self, [], [dump], "Connect"))
        return result

    def reconnect(self, old: ConnKey, source: str, source_handle: str, target: str,
                  target_handle: str = "input") -> ConnectionCheck:
        """Move the link ``old`` to new ends (one undo step); checked as if ``old`` were gone."""
        from .commands import ReplaceConnectionCommand

        i = self.connection_index(old)
        if i is None:
            return ConnectionCheck(False, "That link no longer exists.")
        without = self._workflow.model_copy(update={"connections": [c for j, c in enumerate(self._workflow.connections)
                                                                     if j != i]})
        result = check_connection(without, source, source_handle, target, target_handle)
        if result.ok:
            before = self._workflow.connections[i].model_dump()
            after = {**before, "source": source, "sourceHandle": source_handle, "target": target,
                     "targetHandle": target_handle}
            self.undo_stack.push(ReplaceConnectionCommand(self, i, before, after, "Reconnect"))
        return result

    def delete(self, node_ids: Iterable[str] = (), conn_keys: Iterable[ConnKey] = ()) -> None:
        from .commands import RemoveItemsCommand

        node_ids = [n for n in node_ids if n in self._nodes]
        conn_keys = list(conn_keys)
        if node_ids or conn_keys:
            self.undo_stack.push(RemoveItemsCommand(self, node_ids, conn_keys))

    def move_nodes(self, before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]],
                   text: str = "Move") -> None:
        from .commands import MoveNodesCommand

        after = {k: v for k, v in after.items() if before.get(k) != v}
        if after:
            self.undo_stack.push(MoveNodesCommand(self, {k: before[k] for k in after}, after, text))

    def edit_node_data(self, node_id: str, data: dict[str, Any], field: str | None = None) -> None:
        """Replace ``node_id``'s data; consecutive edits of the same ``field`` merge into one step."""
        from .commands import SetNodeDataCommand

        node = self._nodes.get(node_id)
        if node is None:
            return
        before = node.data.model_dump()
        if before == data:
            return
        merge = (node_id, field, self._merge_epoch) if field else None
        self.undo_stack.push(SetNodeDataCommand(self, node_id, before, data, merge, f"Edit {field or 'node'}"))

    def set_node_field(self, node_id: str, field: str, value: Any, merge: bool = True) -> None:
        node = self._nodes.get(node_id)
        if node is None:
            return
        data = node.data.model_dump()
        if "." in field:
            outer, inner = field.split(".", 1)
            data[outer] = {**(data.get(outer) or {}), inner: value}
        else:
            data[field] = value
        self.edit_node_data(node_id, data, field if merge else None)

    def set_subagents_enabled(self, node_id: str, enabled: bool) -> None:
        """Toggle an agent's subagents tool; turning it off also removes its subagent links (one step)."""
        node = self._nodes.get(node_id)
        if node is None:
            return
        self.undo_stack.beginMacro("Toggle subagents")
        if not enabled:
            self.delete((), [c.key() for c in self._workflow.connections
                             if c.source == node_id and c.sourceHandle == "subagent"])
        self.set_node_field(node_id, "tools.subagents", enabled, merge=False)
        self.undo_stack.endMacro()

    def set_conditions(self, node_id: str, conditions: list[dict[str, Any]], mapping: dict[int, int | None],
                       text: str = "Edit conditions") -> None:
        """Replace an if node's conditions; ``mapping`` sends old condition indices to new ones
        (``None``: removed), so links follow their condition when it moves and go when it goes."""
        from .commands import ReplaceConnectionCommand

        node = self._nodes.get(node_id)
        if node is None:
            return
        self.undo_stack.beginMacro(text)
        doomed: list[ConnKey] = []
        for i, c in enumerate(list(self._workflow.connections)):
            if c.source != node_id:
                continue
            handle = c.handle if c.handle != "true" else "condition-0"
            if not handle.startswith("condition-"):
                continue
            try:
                old = int(handle.split("-", 1)[1])
            except ValueError:
                continue
            new = mapping.get(old, old)
            if new is None:
                doomed.append(c.key())
            elif new != old:
                before = c.model_dump()
                self.undo_stack.push(ReplaceConnectionCommand(self, i, before, {**before, "sourceHandle": f"condition-{new}"},
                                                              "Move branch"))
        self.delete((), doomed)
        data = node.data.model_dump()
        data["conditions"] = conditions
        self.edit_node_data(node_id, data)
        self.undo_stack.endMacro()

    def set_collapsed(self, node_ids: Iterable[str], collapsed: bool) -> None:
        ids = [n for n in node_ids if n in self._nodes and bool(self._nodes[n].data.collapsed) != collapsed]
        if not ids:
            return
        self.undo_stack.beginMacro("Collapse" if collapsed else "Expand")
        for nid in ids:
            data = self._nodes[nid].data.model_dump()
            data["collapsed"] = collapsed or None
            self.edit_node_data(nid, data)
        self.undo_stack.endMacro()

    def set_info(self, name: str | None = None, description: str | None = None) -> None:
        from .commands import SetMetaCommand

        after = {}
        if name is not None and name != self._workflow.name:
            after["name"] = name
        if description is not None and description != self._workflow.description:
            after["description"] = description
        if after:
            before = {k: getattr(self._workflow, k) for k in after}
            merge = ("meta", tuple(after), self._merge_epoch)
            self.undo_stack.push(SetMetaCommand(self, before, after, merge))

    # ------------------------------------------------------------------ clipboard
    def fragment_json(self, node_ids: Iterable[str]) -> str:
        """The selected nodes and the links among them, as workflow JSON (for the clipboard)."""
        ids = [n.id for n in self._workflow.nodes if n.id in set(node_ids)]
        chosen = set(ids)
        frag = Workflow(nodes=[self._nodes[i] for i in ids],
                        connections=[c for c in self._workflow.connections if c.source in chosen and c.target in chosen])
        return dumps_workflow(frag)

    def paste_json(self, text: str, offset: tuple[float, float] = (40.0, 40.0),
                   at: tuple[float, float] | None = None) -> list[str]:
        """Add the workflow in ``text`` with fresh ids (one undo step); returns the new ids.

        Raises :class:`WorkflowLoadError` when ``text`` is not workflow JSON.
        """
        frag = loads_workflow(text)
        if not frag.nodes:
            return []
        taken = set(self._nodes)
        remap: dict[str, str] = {}
        for n in frag.nodes:
            remap[n.id] = new_id(n.type, taken)
            taken.add(remap[n.id])
        if at is not None:
            minx = min(n.x for n in frag.nodes)
            miny = min(n.y for n in frag.nodes)
            dx, dy = at[0] - minx, at[1] - miny
        else:
            dx, dy = offset
        nodes = []
        for n in frag.nodes:
            d = n.model_dump()
            d.update(id=remap[n.id], x=n.x + dx, y=n.y + dy)
            nodes.append(d)
        conns = []
        for c in frag.connections:
            if c.source in remap and c.target in remap:
                d = c.model_dump()
                d.update(source=remap[c.source], target=remap[c.target])
                conns.append(d)
        self.add_items(nodes, conns, "Paste")
        return [d["id"] for d in nodes]

    # ------------------------------------------------------------------ layout
    def auto_layout(self, node_ids: Iterable[str] | None = None) -> None:
        from .layout import layered_positions

        positions = layered_positions(self._workflow, set(node_ids) if node_ids else None)
        before = {nid: (self._nodes[nid].x, self._nodes[nid].y) for nid in positions}
        self.move_nodes(before, positions, "Auto-layout")


__all__ = ["WorkflowDocument", "ConnKey", "PALETTE_KINDS", "palette_entry", "is_subagent_node", "conn_key"]
