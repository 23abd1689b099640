"""WorkflowDocument: the editable workflow. Every user edit is a request that pushes one undo step.

The request methods (``add_node``, ``connect``, ``delete``, ``move_nodes``, ``edit_node_data``
...) build :mod:`editor.commands` commands, whose ``redo``/``undo`` call the low-level methods
of :class:`editor.document.WorkflowModel`; the model itself knows nothing of commands,
so the layers are model <- commands <- requests, with no import cycle. Typed edits of
one field merge into one step until :meth:`WorkflowDocument.end_merge`.
"""

from __future__ import annotations

from typing import Any, Iterable

from PySide6.QtCore import QObject

from engine import ConnectionCheck, Connection, Workflow, check_connection, loads_workflow, new_id

from .commands import (AddItemsCommand, MoveNodesCommand, RemoveItemsCommand, ReplaceConnectionCommand, SetMetaCommand,
                       SetNodeDataCommand)
from .document import ConnKey, WorkflowModel


class WorkflowDocument(WorkflowModel):
    """The document the editor's widgets hold: :class:`WorkflowModel` plus undoable requests."""

    def __init__(self, workflow: Workflow | None = None, path: str | None = None, parent: QObject | None = None) -> None:
        super().__init__(workflow, path, parent)
        self._merge_epoch = 0

    # ------------------------------------------------------------------ requests (one undo step each)
    def end_merge(self) -> None:
        """Start a new undo step for the next typed edit (called when an editor loses focus)."""
        self._merge_epoch += 1

    def add_node(self, kind: str, x: float, y: float) -> str:
        dump = self.new_node_dump(kind, x, y)
        self.undo_stack.push(AddItemsCommand(self, [dump], [], f"Add {kind}"))
        return dump["id"]

    def add_items(self, node_dumps: list[dict[str, Any]], conn_dumps: list[dict[str, Any]], text: str) -> None:
        if node_dumps or conn_dumps:
            self.undo_stack.push(AddItemsCommand(self, node_dumps, conn_dumps, text))

    def connect(self, source: str, source_handle: str, target: str, target_handle: str = "input") -> ConnectionCheck:
        result = self.check(source, source_handle, target, target_handle)
        if result.ok:
            dump = Connection(source=source, target=target, sourceHandle=source_handle,
                              targetHandle=target_handle).model_dump()
            self.undo_stack.push(AddItemsCommand(self, [], [dump], "Connect"))
        return result

    def reconnect(self, old: ConnKey, source: str, source_handle: str, target: str,
                  target_handle: str = "input") -> ConnectionCheck:
        """Move the link ``old`` to new ends (one undo step); checked as if ``old`` were gone."""
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
        node_ids = [n for n in node_ids if n in self._nodes]
        conn_keys = list(conn_keys)
        if node_ids or conn_keys:
            self.undo_stack.push(RemoveItemsCommand(self, node_ids, conn_keys))

    def move_nodes(self, before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]],
                   text: str = "Move") -> None:
        after = {k: v for k, v in after.items() if before.get(k) != v}
        if after:
            self.undo_stack.push(MoveNodesCommand(self, {k: before[k] for k in after}, after, text))

    def nudge_nodes(self, node_ids: Iterable[str], dx: float, dy: float) -> None:
        """Move nodes by (dx, dy): arrow keys. Nudges of the same nodes in a row are one undo step."""
        ids = [n for n in node_ids if n in self._nodes]
        if not ids or (dx == 0 and dy == 0):
            return
        before = {n: (self._nodes[n].x, self._nodes[n].y) for n in ids}
        after = {n: (x + dx, y + dy) for n, (x, y) in before.items()}
        self.undo_stack.push(MoveNodesCommand(self, before, after, "Move",
                                              merge=("nudge", frozenset(ids), self._merge_epoch)))

    def edit_node_data(self, node_id: str, data: dict[str, Any], field: str | None = None) -> None:
        """Replace ``node_id``'s data; consecutive edits of the same ``field`` merge into one step."""
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
        self.set_branches(node_id, "conditions", "condition-", conditions, mapping, text)

    def set_branches(self, node_id: str, field: str, prefix: str, items: list[dict[str, Any]],
                     mapping: dict[int, int | None], text: str) -> None:
        """Replace the list ``field`` whose item ``i`` owns the output handle ``<prefix><i>`` (an
        if node's ``conditions``, a router's ``routes``) in one undo step; ``mapping`` sends old
        indices to new ones (``None``: removed), so links follow their item and go with it."""
        node = self._nodes.get(node_id)
        if node is None:
            return
        self.undo_stack.beginMacro(text)
        doomed: list[ConnKey] = []
        for i, c in enumerate(list(self._workflow.connections)):
            if c.source != node_id:
                continue
            handle = "condition-0" if c.handle == "true" and prefix == "condition-" else c.handle
            if not handle.startswith(prefix):
                continue
            try:
                old = int(handle[len(prefix):])
            except ValueError:
                continue
            new = mapping.get(old, old)
            if new is None:
                doomed.append(c.key())
            elif new != old:
                before = c.model_dump()
                self.undo_stack.push(ReplaceConnectionCommand(self, i, before, {**before, "sourceHandle": f"{prefix}{new}"},
                                                              "Move branch"))
        self.delete((), doomed)
        data = node.data.model_dump()
        data[field] = items
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
        after = {}
        if name is not None and name != self._workflow.name:
            after["name"] = name
        if description is not None and description != self._workflow.description:
            after["description"] = description
        if after:
            before = {k: getattr(self._workflow, k) for k in after}
            merge = ("meta", tuple(after), self._merge_epoch)
            self.undo_stack.push(SetMetaCommand(self, before, after, merge))

    def set_triggers(self, patterns: list[str]) -> None:
        """The workflow's trigger phrases (an empty list removes the field)."""
        current = getattr(self._workflow, "triggers", None)
        after_value = list(patterns) or None
        if (current or None) == after_value:
            return
        merge = ("meta", ("triggers",), self._merge_epoch)
        self.undo_stack.push(SetMetaCommand(self, {"triggers": current}, {"triggers": after_value}, merge))

    # ------------------------------------------------------------------ clipboard
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


__all__ = ["WorkflowDocument"]
