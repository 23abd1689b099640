"""Undo commands. Each stores ids plus before/after plain data (``model_dump()`` fragments and
list positions), never scene items, and calls :class:`editor.document.WorkflowModel`'s
low-level methods only; the scene follows the model's signals. The requests that push them
are :class:`editor.editing.WorkflowDocument`'s.

Undo restores the exact ``model_dump()``: removed nodes and links go back to their old list
positions.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QUndoCommand

if TYPE_CHECKING:
    from .document import ConnKey, WorkflowModel

# QUndoCommand ids: a pushed command is offered to the one on top only when their ids match
MERGE_DATA_ID = 1001
MERGE_META_ID = 1002
MERGE_MOVE_ID = 1003
MERGE_ANNOTATION_ID = 1004


class AddItemsCommand(QUndoCommand):
    """Append nodes then links (add from the palette, connect, paste, duplicate)."""

    def __init__(self, doc: WorkflowModel, nodes: list[dict[str, Any]], conns: list[dict[str, Any]], text: str) -> None:
        super().__init__(text)
        self.doc = doc
        self.nodes = copy.deepcopy(nodes)
        self.conns = copy.deepcopy(conns)
        self.node_start = len(doc.workflow.nodes)
        self.conn_start = len(doc.workflow.connections)

    def redo(self) -> None:
        for i, d in enumerate(self.nodes):
            self.doc.insert_node(self.node_start + i, d)
        for i, d in enumerate(self.conns):
            self.doc.insert_connection(self.conn_start + i, d)

    def undo(self) -> None:
        if self.conns:
            self.doc.remove_connections_at([self.conn_start + i for i in range(len(self.conns))])
        if self.nodes:
            self.doc.remove_nodes([d["id"] for d in self.nodes])


class RemoveItemsCommand(QUndoCommand):
    """Remove nodes (with every link touching them) and links; undo puts all back in place."""

    def __init__(self, doc: WorkflowModel, node_ids: list[str], conn_keys: list[ConnKey]) -> None:
        n, c = len(node_ids), len(conn_keys)
        parts = [f"{n} node{'s' * (n != 1)}" if n else "", f"{c} link{'s' * (c != 1)}" if c and not n else ""]
        super().__init__("Delete " + " ".join(p for p in parts if p))
        self.doc = doc
        ids = set(node_ids)
        keys = set(conn_keys)
        wf = doc.workflow
        self.conns: list[tuple[int, dict[str, Any]]] = [
            (i, conn.model_dump())
            for i, conn in enumerate(wf.connections)
            if conn.source in ids or conn.target in ids or conn.key() in keys
        ]
        self.nodes: list[tuple[int, dict[str, Any]]] = [
            (i, node.model_dump()) for i, node in enumerate(wf.nodes) if node.id in ids
        ]

    def redo(self) -> None:
        if self.conns:
            self.doc.remove_connections_at([i for i, _ in self.conns])
        if self.nodes:
            self.doc.remove_nodes([d["id"] for _, d in self.nodes])

    def undo(self) -> None:
        for i, d in self.nodes:
            self.doc.insert_node(i, d)
        for i, d in self.conns:
            self.doc.insert_connection(i, d)


class ReplaceConnectionCommand(QUndoCommand):
    """Change one link in place (reconnect an end, renumber a condition branch)."""

    def __init__(
        self, doc: WorkflowModel, index: int, before: dict[str, Any], after: dict[str, Any], text: str
    ) -> None:
        super().__init__(text)
        self.doc, self.index = doc, index
        self.before, self.after = copy.deepcopy(before), copy.deepcopy(after)

    def redo(self) -> None:
        self.doc.replace_connection_at(self.index, self.after)

    def undo(self) -> None:
        self.doc.replace_connection_at(self.index, self.before)


class _MergingCommand(QUndoCommand):
    """A before/after command that takes in the next one of its class with the same ``merge`` key
    (typing in one field, a run of arrow-key moves); one that ends where it began is dropped."""

    MERGE_ID = -1
    before: Any
    after: Any
    merge: tuple | None = None

    def id(self) -> int:  # noqa: A003 - Qt API
        return self.MERGE_ID if self.merge is not None else -1

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, type(self)) or other.merge != self.merge or self.merge is None:
            return False
        self.after = other.after
        if self.after == self.before:
            self.setObsolete(True)  # typed and deleted again, nudged there and back: no step left behind
        return True


class MoveNodesCommand(_MergingCommand):
    """One drag (or one auto-layout) of any number of nodes; arrow-key nudges of the same nodes
    in a row merge into one (``merge`` key)."""

    MERGE_ID = MERGE_MOVE_ID

    def __init__(
        self,
        doc: WorkflowModel,
        before: dict[str, tuple[float, float]],
        after: dict[str, tuple[float, float]],
        text: str = "Move",
        merge: tuple | None = None,
    ) -> None:
        n = len(after)
        super().__init__(f"{text} {n} node{'s' * (n != 1)}" if text == "Move" else text)
        self.doc, self.before, self.after = doc, dict(before), dict(after)
        self.merge = merge

    def redo(self) -> None:
        self.doc.set_positions(self.after)

    def undo(self) -> None:
        self.doc.set_positions(self.before)


class SetNodeDataCommand(_MergingCommand):
    """Replace a node's data; typing in one field merges into one step (``merge`` key)."""

    MERGE_ID = MERGE_DATA_ID

    def __init__(
        self,
        doc: WorkflowModel,
        node_id: str,
        before: dict[str, Any],
        after: dict[str, Any],
        merge: tuple | None,
        text: str,
    ) -> None:
        super().__init__(text)
        self.doc, self.node_id = doc, node_id
        self.before, self.after = copy.deepcopy(before), copy.deepcopy(after)
        self.merge = merge

    def redo(self) -> None:
        self.doc.set_node_data(self.node_id, self.after)

    def undo(self) -> None:
        self.doc.set_node_data(self.node_id, self.before)


class SetMetaCommand(QUndoCommand):
    """Workflow name/description."""

    def __init__(self, doc: WorkflowModel, before: dict[str, Any], after: dict[str, Any], merge: tuple) -> None:
        super().__init__("Edit workflow info")
        self.doc, self.before, self.after, self.merge = doc, before, after, merge

    def id(self) -> int:  # noqa: A003 - Qt API
        return MERGE_META_ID

    def mergeWith(self, other: QUndoCommand) -> bool:
        if not isinstance(other, SetMetaCommand) or other.merge != self.merge:
            return False
        self.after = other.after
        return True

    def redo(self) -> None:
        self.doc.set_meta(self.after)

    def undo(self) -> None:
        self.doc.set_meta(self.before)


class AddAnnotationCommand(QUndoCommand):
    """Add a sticky note or a group (``kind`` "note" | "group") at the end of its list."""

    def __init__(self, doc: WorkflowModel, kind: str, dump: dict[str, Any], text: str) -> None:
        super().__init__(text)
        self.doc, self.kind, self.dump = doc, kind, copy.deepcopy(dump)
        self.index = len(doc.annotations(kind))

    def redo(self) -> None:
        self.doc.insert_annotation(self.kind, self.index, self.dump)

    def undo(self) -> None:
        self.doc.remove_annotation(self.kind, self.dump["id"])


class RemoveAnnotationCommand(QUndoCommand):
    """Remove a note or a group (ungroup); undo puts it back in its place."""

    def __init__(self, doc: WorkflowModel, kind: str, ann_id: str, text: str) -> None:
        super().__init__(text)
        self.doc, self.kind = doc, kind
        self.index = doc.annotation_index(kind, ann_id) or 0
        self.dump = doc.annotation(kind, ann_id).model_dump()

    def redo(self) -> None:
        self.doc.remove_annotation(self.kind, self.dump["id"])

    def undo(self) -> None:
        self.doc.insert_annotation(self.kind, self.index, self.dump)


class SetAnnotationCommand(_MergingCommand):
    """Replace a note's or a group's fields (text, frame, colour, title, members, collapsed);
    typing in one note merges into one step (``merge`` key)."""

    MERGE_ID = MERGE_ANNOTATION_ID

    def __init__(
        self,
        doc: WorkflowModel,
        kind: str,
        ann_id: str,
        before: dict[str, Any],
        after: dict[str, Any],
        text: str,
        merge: tuple | None = None,
    ) -> None:
        super().__init__(text)
        self.doc, self.kind, self.ann_id = doc, kind, ann_id
        self.before, self.after = copy.deepcopy(before), copy.deepcopy(after)
        self.merge = merge

    def redo(self) -> None:
        self.doc.replace_annotation(self.kind, self.ann_id, self.after)

    def undo(self) -> None:
        self.doc.replace_annotation(self.kind, self.ann_id, self.before)
