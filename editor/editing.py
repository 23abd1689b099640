"""WorkflowDocument: the editable workflow. Every user edit is a request that pushes one undo step.

The request methods (``add_node``, ``connect``, ``delete``, ``move_nodes``, ``edit_node_data``
...) build :mod:`editor.commands` commands, whose ``redo``/``undo`` call the low-level methods
of :class:`editor.document.WorkflowModel`; the model itself knows nothing of commands,
so the layers are model <- commands <- requests, with no import cycle. Typed edits of
one field merge into one step until :meth:`WorkflowDocument.end_merge`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from PySide6.QtCore import QObject

from engine import Connection, ConnectionCheck, Permissions, Workflow, check_connection, loads_workflow, new_id

from .commands import (
    AddAnnotationCommand,
    AddItemsCommand,
    MoveNodesCommand,
    RemoveAnnotationCommand,
    RemoveItemsCommand,
    ReplaceConnectionCommand,
    SetAnnotationCommand,
    SetMetaCommand,
    SetNodeDataCommand,
)
from .document import ConnKey, WorkflowModel


class WorkflowDocument(WorkflowModel):
    """The document the editor's widgets hold: :class:`WorkflowModel` plus undoable requests."""

    def __init__(
        self, workflow: Workflow | None = None, path: str | None = None, parent: QObject | None = None
    ) -> None:
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
            dump = Connection(
                source=source, target=target, sourceHandle=source_handle, targetHandle=target_handle
            ).model_dump()
            self.undo_stack.push(AddItemsCommand(self, [], [dump], "Connect"))
        return result

    def reconnect(
        self, old: ConnKey, source: str, source_handle: str, target: str, target_handle: str = "input"
    ) -> ConnectionCheck:
        """Move the link ``old`` to new ends (one undo step); checked as if ``old`` were gone."""
        i = self.connection_index(old)
        if i is None:
            return ConnectionCheck(False, "That link no longer exists.")
        without = self._workflow.model_copy(
            update={"connections": [c for j, c in enumerate(self._workflow.connections) if j != i]}
        )
        result = check_connection(without, source, source_handle, target, target_handle)
        if result.ok:
            before = self._workflow.connections[i].model_dump()
            after = {
                **before,
                "source": source,
                "sourceHandle": source_handle,
                "target": target,
                "targetHandle": target_handle,
            }
            self.undo_stack.push(ReplaceConnectionCommand(self, i, before, after, "Reconnect"))
        return result

    def delete(
        self, node_ids: Iterable[str] = (), conn_keys: Iterable[ConnKey] = (), note_ids: Iterable[str] = ()
    ) -> None:
        """Delete nodes (with their links), links and notes in one step; a group loses the
        deleted nodes (and goes when none is left)."""
        node_ids = [n for n in node_ids if n in self._nodes]
        conn_keys = list(conn_keys)
        note_ids = [n for n in note_ids if self.annotation("note", n) is not None]
        gone = set(node_ids)
        groups = [g for g in self._workflow.groups or () if gone.intersection(g.nodes)]
        if not (node_ids or conn_keys or note_ids):
            return
        if not groups and not note_ids:
            self.undo_stack.push(RemoveItemsCommand(self, node_ids, conn_keys))
            return
        n = len(node_ids) + len(note_ids)
        self.undo_stack.beginMacro(f"Delete {n} item{'s' * (n != 1)}" if n else "Delete links")
        for g in groups:
            kept = [m for m in g.nodes if m not in gone]
            if kept:
                before = g.model_dump()
                self.undo_stack.push(
                    SetAnnotationCommand(self, "group", g.id, before, {**before, "nodes": kept}, "Remove from group")
                )
            else:
                self.undo_stack.push(RemoveAnnotationCommand(self, "group", g.id, "Ungroup"))
        for nid in note_ids:
            self.undo_stack.push(RemoveAnnotationCommand(self, "note", nid, "Delete note"))
        if node_ids or conn_keys:
            self.undo_stack.push(RemoveItemsCommand(self, node_ids, conn_keys))
        self.undo_stack.endMacro()

    # ------------------------------------------------------------------ notes and groups (canvas annotations)
    def add_note(
        self, x: float, y: float, text: str = "", color: str = "yellow", size: tuple[float, float] = (220.0, 140.0)
    ) -> str:
        """A sticky note at (x, y) (one undo step); returns its id."""
        nid = self.new_annotation_id("note")
        dump = {
            "id": nid,
            "x": round(x),
            "y": round(y),
            "width": size[0],
            "height": size[1],
            "text": text,
            "color": color,
        }
        self.undo_stack.push(AddAnnotationCommand(self, "note", dump, "Add note"))
        return nid

    def edit_annotation(
        self, kind: str, ann_id: str, label: str = "Edit", merge_field: str | None = None, **fields: Any
    ) -> None:
        """Change some fields of a note or group (one undo step; edits of ``merge_field`` in a row merge)."""
        ann = self.annotation(kind, ann_id)
        if ann is None:
            return
        before = ann.model_dump()
        after = {**before, **fields}
        if after == before:
            return
        merge = (kind, ann_id, merge_field, self._merge_epoch) if merge_field else None
        self.undo_stack.push(SetAnnotationCommand(self, kind, ann_id, before, after, label, merge))

    def set_note_text(self, note_id: str, text: str) -> None:
        self.edit_annotation("note", note_id, "Edit note", "text", text=text)

    def set_note_frame(self, note_id: str, x: float, y: float, width: float, height: float) -> None:
        """Move and/or resize a note (one gesture, one step)."""
        note = self.annotation("note", note_id)
        if note is None:
            return
        resized = (round(width), round(height)) != (round(note.width), round(note.height))
        self.edit_annotation(
            "note",
            note_id,
            "Resize note" if resized else "Move note",
            x=round(x),
            y=round(y),
            width=max(40, round(width)),
            height=max(30, round(height)),
        )

    def set_note_color(self, note_id: str, color: str) -> None:
        self.edit_annotation("note", note_id, "Note colour", color=color)

    def group_nodes(self, node_ids: Iterable[str], title: str = "Group") -> str | None:
        """A group around ``node_ids`` (one undo step); returns its id (None when no node)."""
        ids = [n.id for n in self._workflow.nodes if n.id in set(node_ids)]
        if not ids:
            return None
        gid = self.new_annotation_id("group")
        self.undo_stack.push(AddAnnotationCommand(self, "group", {"id": gid, "title": title, "nodes": ids}, "Group"))
        return gid

    def ungroup(self, group_id: str) -> None:
        if self.annotation("group", group_id) is not None:
            self.undo_stack.push(RemoveAnnotationCommand(self, "group", group_id, "Ungroup"))

    def rename_group(self, group_id: str, title: str) -> None:
        self.edit_annotation("group", group_id, "Rename group", title=title.strip() or "Group")

    def set_group_collapsed(self, group_id: str, collapsed: bool) -> None:
        self.edit_annotation(
            "group", group_id, "Collapse group" if collapsed else "Expand group", collapsed=collapsed or None
        )

    def move_group(self, group_id: str, dx: float, dy: float) -> None:
        """Move a group's nodes by (dx, dy): one undo step."""
        group = self.annotation("group", group_id)
        if group is None or (dx == 0 and dy == 0):
            return
        before = {n: (self._nodes[n].x, self._nodes[n].y) for n in group.nodes if n in self._nodes}
        after = {n: (x + dx, y + dy) for n, (x, y) in before.items()}
        self.move_nodes(before, after, "Move group")

    def move_nodes(
        self, before: dict[str, tuple[float, float]], after: dict[str, tuple[float, float]], text: str = "Move"
    ) -> None:
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
        self.undo_stack.push(
            MoveNodesCommand(self, before, after, "Move", merge=("nudge", frozenset(ids), self._merge_epoch))
        )

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
            self.delete(
                (),
                [c.key() for c in self._workflow.connections if c.source == node_id and c.sourceHandle == "subagent"],
            )
        self.set_node_field(node_id, "tools.subagents", enabled, merge=False)
        self.undo_stack.endMacro()

    def set_conditions(
        self,
        node_id: str,
        conditions: list[dict[str, Any]],
        mapping: dict[int, int | None],
        text: str = "Edit conditions",
    ) -> None:
        """Replace an if node's conditions; ``mapping`` sends old condition indices to new ones
        (``None``: removed), so links follow their condition when it moves and go when it goes."""
        self.set_branches(node_id, "conditions", "condition-", conditions, mapping, text)

    def set_branches(
        self,
        node_id: str,
        field: str,
        prefix: str,
        items: list[dict[str, Any]],
        mapping: dict[int, int | None],
        text: str,
    ) -> None:
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
                old = int(handle[len(prefix) :])
            except ValueError:
                continue
            new = mapping.get(old, old)
            if new is None:
                doomed.append(c.key())
            elif new != old:
                before = c.model_dump()
                self.undo_stack.push(
                    ReplaceConnectionCommand(
                        self, i, before, {**before, "sourceHandle": f"{prefix}{new}"}, "Move branch"
                    )
                )
        self.delete((), doomed)
        data = node.data.model_dump()
        data[field] = items
        self.edit_node_data(node_id, data)
        self.undo_stack.endMacro()

    def set_labelled_branches(
        self, node_id: str, field: str, labels: list[str], renames: dict[str, str], text: str
    ) -> None:
        """Replace the list ``field`` whose labels are output handles themselves (an approval's
        ``options``) in one undo step: a link leaving from a renamed label follows it
        (``renames``: old label -> new), one leaving from a label no longer listed goes."""
        node = self._nodes.get(node_id)
        if node is None:
            return
        self.undo_stack.beginMacro(text)
        doomed: list[ConnKey] = []
        kept = set(labels)
        for i, c in enumerate(list(self._workflow.connections)):
            if c.source != node_id or c.handle in ("approve", "reject"):
                continue
            old_labels = getattr(node.data, field, None) or []
            if c.handle not in old_labels:
                continue
            new = renames.get(c.handle, c.handle)
            if new not in kept:
                doomed.append(c.key())
            elif new != c.handle:
                before = c.model_dump()
                self.undo_stack.push(
                    ReplaceConnectionCommand(self, i, before, {**before, "sourceHandle": new}, "Rename branch")
                )
        self.delete((), doomed)
        data = node.data.model_dump()
        data[field] = labels
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

    def set_permissions(self, value: dict[str, Any] | None) -> None:
        """The workflow's ``permissions`` (None removes the field: the kinds' defaults apply; a
        dict, even an empty one, bounds every step by it). One undo step per call."""
        current = getattr(self._workflow, "permissions", None)
        after = None if value is None else Permissions.model_validate(value)
        if current == after:
            return
        self.end_merge()  # a list edit is a step of its own
        merge = ("meta", ("permissions",), self._merge_epoch)
        self.undo_stack.push(SetMetaCommand(self, {"permissions": current}, {"permissions": after}, merge))

    # ------------------------------------------------------------------ clipboard
    def paste_json(
        self, text: str, offset: tuple[float, float] = (40.0, 40.0), at: tuple[float, float] | None = None
    ) -> list[str]:
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
