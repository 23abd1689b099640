"""Edit commands of the main window: add a node, clipboard, delete, select, collapse,
auto-layout, fit; and keeping the inspector on the selection. Every change to the
workflow is a request to the document (one undo step each)."""

from __future__ import annotations

from PySide6.QtCore import QPointF
from PySide6.QtGui import QGuiApplication

from engine import Connection, GraphIndex, Node, WorkflowLoadError, check_connection

from ..canvas.style import node_layout, node_size
from ..document import PALETTE_KINDS
from ..panels.palette import DESCRIPTIONS
from ..layout import auto_layout


# Steps away from the middle of the view, nearest first (then higher, then further left).
_NEAREST_FIRST = sorted(((i, j) for i in range(-12, 13) for j in range(-12, 13)),
                        key=lambda o: (o[0] * o[0] + o[1] * o[1], o[1], o[0]))


class EditActionsMixin:
    """The window's edit actions; they act on the canvas selection through the document."""

    def _add_node_at(self, kind: str, pos: QPointF) -> None:
        if not self._has_document:
            return
        x, y = round(pos.x()), round(pos.y())
        if self.scene.snap_to_grid:
            from ..canvas.style import GRID

            x, y = round(x / GRID) * GRID, round(y / GRID) * GRID
        nid = self.document.add_node(kind, x, y)
        self.scene.select_nodes([nid])

    def _link_to_new_node(self, source: str, handle: str, pos: QPointF) -> None:
        """A new link let go on empty canvas: the quick-add menu there, offering the kinds that can
        take that link (the engine's own rules); the one picked is added with its input at the
        drop point and linked, as one undo step."""
        if not self._has_document or source not in self.scene.node_items:
            return
        kinds = self._kinds_taking(source, handle)
        if not kinds:
            self.statusBar().showMessage("No kind of node can take a link from there.", 5000)
            return
        self.scene.show_pending_link(source, handle, pos)  # the link stays drawn while the menu asks
        self._quick_add(pos, kinds, lambda kind, at: self._add_linked_node(source, handle, kind, at),
                        "Add a linked node…")
        self.quick_add_menu.aboutToHide.connect(self.scene.clear_pending_link)

    def _kinds_taking(self, source: str, handle: str) -> list[str]:
        """The palette kinds a new node of which would accept a link from ``source``'s ``handle``."""
        doc = self.document
        wf = doc.workflow
        candidates: dict[str, str] = {}
        nodes = list(wf.nodes)
        for i, kind in enumerate(PALETTE_KINDS):
            dump = doc.new_node_dump(kind, 0, 0)
            dump["id"] = candidates[kind] = f"\0new-{i}"  # (no real id starts with a NUL)
            nodes.append(Node.model_validate(dump))
        index = GraphIndex(wf.model_copy(update={"nodes": nodes}))
        return [kind for kind, nid in candidates.items() if check_connection(index, source, handle, nid, "input").ok]

    def _add_linked_node(self, source: str, handle: str, kind: str, pos: QPointF) -> None:
        doc = self.document
        dump = doc.new_node_dump(kind, 0, 0)
        lay = node_layout(Node.model_validate(dump), as_subagent=handle == "subagent")  # drawn as it will be
        port = lay.input_pos or QPointF(0.0, 0.0)
        dump["x"], dump["y"] = round(pos.x() - port.x()), round(pos.y() - port.y())
        link = Connection(source=source, target=dump["id"], sourceHandle=handle, targetHandle="input")
        doc.add_items([dump], [link.model_dump()], f"Add {DESCRIPTIONS[kind][0]} linked to {source}")
        self.scene.select_nodes([dump["id"]])

    def _add_node_at_centre(self, kind: str) -> None:
        """A node added from the palette or the menu (not dropped at a place): in the middle of
        the view, or the nearest free place to it, so it never lands on top of another card."""
        if not self._has_document:
            self.new_document()
        self._add_node_at(kind, self._free_spot(kind, self.view.mapToScene(self.view.viewport().rect().center())))

    def _free_spot(self, kind: str, centre: QPointF) -> QPointF:
        """The top-left corner of a new ``kind`` card centred on ``centre`` if that overlaps no
        card (with a gap), else of the nearest such place in 40 px steps (up to 480 px away)."""
        w, h = node_size(Node.model_validate(self.document.new_node_dump(kind, 0, 0)))  # the card add_node makes
        gap, step = 24.0, 40.0
        x0, y0 = centre.x() - w / 2, centre.y() - h / 2
        cards = self.scene.obstacles
        for i, j in _NEAREST_FIRST:
            x, y = x0 + i * step, y0 + j * step
            if cards.is_free((x - gap, y - gap, x + w + gap, y + h + gap)):
                return QPointF(x, y)
        return QPointF(x0, y0)  # a crowded view: the middle after all

    def _edit_node(self, _node_id: str) -> None:
        """A double-click on a node body: show its settings."""
        self.inspector_dock.show()
        self.inspector_dock.raise_()
        self.inspector_tabs.setCurrentWidget(self.inspector)

    def edit_selected_node(self) -> bool:
        """F2: the selected node's first field in the inspector (an agent's name), focused with
        its text selected, to type over; False with no single node selected."""
        from PySide6.QtWidgets import QLineEdit, QPlainTextEdit, QWidget

        ids = self.scene.selected_node_ids()
        if len(ids) != 1:
            self.statusBar().showMessage("Select one node to edit it.", 3000)
            return False
        self._edit_node(ids[0])
        page = self.inspector.stack.currentWidget()
        found = [*page.findChildren(QLineEdit), *page.findChildren(QPlainTextEdit)] if page is not None else []
        fields = [w for w in found if w.isVisibleTo(page) and w.isEnabled() and not w.isReadOnly()]
        if not fields:
            return False
        def place(w: QWidget) -> tuple[int, int]:
            at = w.mapTo(page, w.rect().topLeft())
            return at.y(), at.x()

        first = min(fields, key=place)  # the topmost, then leftmost
        first.setFocus()
        first.selectAll()
        self.inspector.scroll.ensureWidgetVisible(first)
        return True

    def _selection_changed(self) -> None:
        self.inspector.show_selection(self.scene.selected_node_ids())

    def show_nodes(self, ids: list[str]) -> None:
        self.scene.select_nodes(ids)
        if ids:
            self.view.centre_on_node(ids[0])

    def copy(self) -> None:
        ids = self.scene.selected_node_ids()
        if ids:
            QGuiApplication.clipboard().setText(self.document.fragment_json(ids))
            self.statusBar().showMessage(f"Copied {len(ids)} node{'s' * (len(ids) != 1)}", 3000)

    def cut(self) -> None:
        self.copy()
        self.delete_selection()

    def paste(self) -> None:
        text = QGuiApplication.clipboard().text()
        self._paste_text(text)

    def _paste_text(self, text: str) -> None:
        if not text.strip() or not self._has_document:
            return
        try:
            ids = self.document.paste_json(text, at=self.view.paste_position(text))
        except WorkflowLoadError as err:
            self.statusBar().showMessage(f"Nothing to paste: the clipboard does not hold workflow JSON ({err})", 5000)
            return
        self.scene.select_nodes(ids)

    def duplicate(self) -> None:
        ids = self.scene.selected_node_ids()
        if ids:
            self._paste_text(self.document.fragment_json(ids))

    def delete_selection(self) -> None:
        self.document.delete(self.scene.selected_node_ids(), self.scene.selected_conn_keys())

    def select_all(self) -> None:
        self.scene.select_all()

    def toggle_collapse(self) -> None:
        ids = self.scene.selected_node_ids()
        if ids:
            any_open = any(not self.document.node(i).data.collapsed for i in ids)
            self.document.set_collapsed(ids, any_open)

    def auto_layout(self) -> None:
        ids = self.scene.selected_node_ids()
        auto_layout(self.document, ids if len(ids) > 1 else None)
        if len(ids) <= 1:
            self.view.fit_all()

    def fit(self) -> None:
        self.view.fit_all()
