"""Edit commands of the window: add a node (at a place, in the middle of the view, or linked
from a link let go on empty canvas, through the quick-add menu), clipboard, delete, select,
collapse, auto-layout, fit; and keeping the inspector on the selection. Every change to the
workflow is a request to the document (one undo step each)."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QPointF
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QDockWidget, QLineEdit, QMenu, QPlainTextEdit, QTabWidget, QWidget, QWidgetAction

from engine import Connection, GraphIndex, Node, WorkflowLoadError, check_connection

from ..canvas.scene import CanvasScene
from ..canvas.style import GRID, node_layout, node_size
from ..canvas.view import CanvasView
from ..document import PALETTE_KINDS
from ..editing import WorkflowDocument
from ..layout import auto_layout
from ..panels.inspector import InspectorPanel
from ..panels.palette import DESCRIPTIONS, NOTE_KEY, entry_icon
from .session import DocumentSession

Status = Callable[[str, int], None]

# Steps away from the middle of the view, nearest first (then higher, then further left).
_NEAREST_FIRST = sorted(
    ((i, j) for i in range(-12, 13) for j in range(-12, 13)), key=lambda o: (o[0] * o[0] + o[1] * o[1], o[1], o[0])
)


class EditController(QObject):
    """The window's edit commands; they act on the canvas selection through the document."""

    def __init__(
        self,
        parent: QWidget,
        session: DocumentSession,
        document: WorkflowDocument,
        scene: CanvasScene,
        view: CanvasView,
        inspector: InspectorPanel,
        inspector_dock: QDockWidget,
        inspector_tabs: QTabWidget,
        new_document: Callable[[], None],
        status: Status,
    ) -> None:
        super().__init__(parent)
        self._parent = parent  # the pop-up menus' parent
        self.session = session
        self.document = document
        self.scene = scene
        self.view = view
        self.inspector = inspector
        self.inspector_dock = inspector_dock
        self.inspector_tabs = inspector_tabs
        self._new_document = new_document
        self._status = status
        self.quick_add_menu: QMenu | None = None

    def nudge(self, dx: float, dy: float) -> None:
        """Arrow keys: the selected nodes move a step (one undo step)."""
        self.document.nudge_nodes(self.scene.selected_node_ids(), dx, dy)

    def add_node_at(self, kind: str, pos: QPointF) -> None:
        if not self.session.has_document:
            return
        x, y = round(pos.x()), round(pos.y())
        if self.scene.snap_to_grid:
            x, y = round(x / GRID) * GRID, round(y / GRID) * GRID
        if kind == NOTE_KEY:  # the palette's sticky note
            self.add_note_at(QPointF(x, y))
            return
        nid = self.document.add_node(kind, x, y)
        self.scene.select_nodes([nid])

    def add_note_at(self, pos: QPointF) -> None:
        """A sticky note at ``pos``, selected and ready for typing (one undo step)."""
        if not self.session.has_document:
            return
        note_id = self.document.add_note(pos.x(), pos.y())
        self.scene.clearSelection()
        item = self.scene.note_items.get(note_id)
        if item is not None:
            item.setSelected(True)
            self.view.setFocus()  # typing goes to the note (the palette had the focus)
            self.scene.edit_note(note_id)

    def free_note_spot(self, centre: QPointF, size: tuple[float, float] = (220.0, 140.0)) -> QPointF:
        """The top-left corner of a new note near ``centre`` that covers no card (40 px steps
        down and to the sides, from the scene's grid of cards), else centred there."""
        w, h = size
        for i, j in _NEAREST_FIRST:
            x, y = centre.x() - w / 2 + i * 40, centre.y() - h / 2 + j * 40
            if not self.scene.obstacles.query((x - 16, y - 16, x + w + 16, y + h + 16)):
                return QPointF(x, y)
        return QPointF(centre.x() - w / 2, centre.y() - h / 2)

    def group_selection(self) -> None:
        """Ctrl+G: a group around the selected nodes."""
        ids = self.scene.selected_node_ids()
        if not ids:
            self._status("Select the nodes to group.", 4000)
            return
        self.document.group_nodes(ids)

    def first_node_of_group(self, group_id: str) -> str | None:
        """Where a run of the group starts: the member no other member links to (the leftmost,
        then topmost, of those), from the engine's graph index."""
        group = self.document.annotation("group", group_id)
        if group is None:
            return None
        members = [n for n in self.document.workflow.nodes if n.id in set(group.nodes)]
        inside = {n.id for n in members}
        exec_in = self.document.graph_index().exec_in  # node -> the nodes with an execution link to it
        entries = [n for n in members if not inside.intersection(exec_in.get(n.id, ()))]
        pool = entries or members
        return min(pool, key=lambda n: (n.x, n.y)).id if pool else None

    def link_to_new_node(self, source: str, handle: str, pos: QPointF) -> None:
        """A new link let go on empty canvas: the quick-add menu there, offering the kinds that can
        take that link (the engine's own rules); the one picked is added with its input at the
        drop point and linked, as one undo step."""
        if not self.session.has_document or source not in self.scene.node_items:
            return
        kinds = self.kinds_taking(source, handle)
        if not kinds:
            self._status("No kind of node can take a link from there.", 5000)
            return
        self.scene.show_pending_link(source, handle, pos)  # the link stays drawn while the menu asks
        self.quick_add(
            pos, kinds, lambda kind, at: self.add_linked_node(source, handle, kind, at), "Add a linked node…"
        )
        self.quick_add_menu.aboutToHide.connect(self.scene.clear_pending_link)

    def kinds_taking(self, source: str, handle: str) -> list[str]:
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

    def add_linked_node(self, source: str, handle: str, kind: str, pos: QPointF) -> None:
        doc = self.document
        dump = doc.new_node_dump(kind, 0, 0)
        lay = node_layout(Node.model_validate(dump), as_subagent=handle == "subagent")  # drawn as it will be
        port = lay.input_pos or QPointF(0.0, 0.0)
        dump["x"], dump["y"] = round(pos.x() - port.x()), round(pos.y() - port.y())
        link = Connection(source=source, target=dump["id"], sourceHandle=handle, targetHandle="input")
        doc.add_items([dump], [link.model_dump()], f"Add {DESCRIPTIONS[kind][0]} linked to {source}")
        self.scene.select_nodes([dump["id"]])

    def add_node_at_centre(self, kind: str) -> None:
        """A node added from the palette or the menu (not dropped at a place): in the middle of
        the view, or the nearest free place to it, so it never lands on top of another card."""
        if not self.session.has_document:
            self._new_document()
        centre = self.view.mapToScene(self.view.viewport().rect().center())
        if kind == NOTE_KEY:
            self.add_note_at(self.free_note_spot(centre))
            return
        self.add_node_at(kind, self.free_spot(kind, centre))

    def free_spot(self, kind: str, centre: QPointF) -> QPointF:
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

    def edit_node(self, _node_id: str) -> None:
        """A double-click on a node body: show its settings."""
        self.inspector_dock.show()
        self.inspector_dock.raise_()
        self.inspector_tabs.setCurrentWidget(self.inspector)

    def edit_selected_node(self) -> bool:
        """F2: the selected node's first field in the inspector (an agent's name), focused with
        its text selected, to type over; False with no single node selected."""
        ids = self.scene.selected_node_ids()
        if len(ids) != 1:
            self._status("Select one node to edit it.", 3000)
            return False
        self.edit_node(ids[0])
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

    def selection_changed(self) -> None:
        self.inspector.show_selection(self.scene.selected_node_ids())

    def show_nodes(self, ids: list[str]) -> None:
        self.scene.select_nodes(ids)
        if ids:
            self.view.centre_on_node(ids[0])

    def copy(self) -> None:
        ids = self.scene.selected_node_ids()
        if ids:
            QGuiApplication.clipboard().setText(self.document.fragment_json(ids))
            self._status(f"Copied {len(ids)} node{'s' * (len(ids) != 1)}", 3000)

    def cut(self) -> None:
        self.copy()
        self.delete_selection()

    def paste(self) -> None:
        text = QGuiApplication.clipboard().text()
        self.paste_text(text)

    def paste_text(self, text: str) -> None:
        if not text.strip() or not self.session.has_document:
            return
        try:
            ids = self.document.paste_json(text, at=self.view.paste_position(text))
        except WorkflowLoadError as err:
            self._status(f"Nothing to paste: the clipboard does not hold workflow JSON ({err})", 5000)
            return
        self.scene.select_nodes(ids)

    def duplicate(self) -> None:
        ids = self.scene.selected_node_ids()
        if ids:
            self.paste_text(self.document.fragment_json(ids))

    def delete_selection(self) -> None:
        self.document.delete(
            self.scene.selected_node_ids(), self.scene.selected_conn_keys(), self.scene.selected_note_ids()
        )
        for gid in self.scene.selected_group_ids():  # a selected group frame: ungroup (its nodes stay)
            self.document.ungroup(gid)

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

    def quick_add(self, pos: QPointF, kinds: list[str] | None = None, add=None, placeholder: str = "Add node…") -> None:
        """Double-click on the canvas: a small searchable menu of node types (``kinds``, all by
        default); the one picked is added at ``pos`` (or handed to ``add(kind, pos)``)."""
        menu = QMenu(self._parent)
        menu.setObjectName("quickAdd")
        search = QLineEdit(menu)
        search.setPlaceholderText(placeholder)
        field = QWidgetAction(menu)
        field.setDefaultWidget(search)
        menu.addAction(field)
        entries = []
        add = add or self.add_node_at
        for kind in PALETTE_KINDS if kinds is None else kinds:
            name, desc = DESCRIPTIONS[kind]
            a = menu.addAction(entry_icon(kind), name)
            a.setToolTip(desc)
            a.triggered.connect(lambda _=False, k=kind: add(k, pos))
            entries.append((f"{name} {desc}".lower(), a))

        def filter_(text: str) -> None:
            for words, a in entries:
                a.setVisible(text.lower() in words)

        def pick() -> None:
            for _words, a in entries:
                if a.isVisible():
                    a.trigger()
                    menu.close()
                    return

        search.textChanged.connect(filter_)
        search.returnPressed.connect(pick)
        self.quick_add_menu = menu
        menu.popup(self.view.mapToGlobal(self.view.mapFromScene(pos)))
        search.setFocus()
