"""CanvasView: zoom towards the cursor, pan (middle/right button, or Space + drag), fit,
100 %, palette drops, and a minimap overlay.

Frame-all uses the scene's model-derived bounds, not item grouping. The minimap paints
node rectangles from the model on its own (no second QGraphicsView rendering every item),
refreshed on a short timer after changes. It never covers what the user is working on: it
shows only when part of the graph is out of view, hides while a node or link is dragged,
sits in a corner with no card under it when there is one, and otherwise moves to another
corner (or hides) when a selected or hovered node is under it.
"""

from __future__ import annotations

import shiboken6
from PySide6.QtCore import QPoint, QPointF, QRect, QRectF, Qt, QTimer, Signal
from PySide6.QtGui import (
    QCursor,
    QDragEnterEvent,
    QDragMoveEvent,
    QDropEvent,
    QKeyEvent,
    QMouseEvent,
    QPainter,
    QWheelEvent,
)
from PySide6.QtWidgets import QApplication, QFrame, QGraphicsView, QWidget

from engine import loads_workflow

from .items.group import GroupItem
from .items.note import NoteItem
from .minimap import Minimap
from .scene import CanvasScene
from .style import GRID, TITLE_H, node_rect, node_size

NODE_MIME = "application/x-flowdesk-node"
REALIZE_BUDGET_S = 0.003  # per frame of a pan, for making the items of cards just outside the view
MIN_ZOOM, MAX_ZOOM = 0.005, 3.0  # far enough out to frame a 100k-node file (drawn as an overview)


def local_paths(mime) -> list[str]:
    """The local paths a drag carries, in order (files from a file manager)."""
    return [u.toLocalFile() for u in mime.urls() if u.isLocalFile()] if mime.hasUrls() else []


NUDGE_STEP = 10.0  # px an arrow key moves the selected nodes (a grid step when snapping)
_NUDGE = {Qt.Key.Key_Left: (-1, 0), Qt.Key.Key_Right: (1, 0), Qt.Key.Key_Up: (0, -1), Qt.Key.Key_Down: (0, 1)}


class CanvasView(QGraphicsView):
    zoom_changed = Signal(float)
    node_dropped = Signal(str, QPointF)  # palette kind, scene position
    nudge_requested = Signal(float, float)  # arrow keys with nodes selected: move them by (dx, dy)
    files_dropped = Signal(list)  # local file paths dropped on the canvas (the window opens them)

    def __init__(self, scene: CanvasScene, parent: QWidget | None = None) -> None:
        super().__init__(scene, parent)
        self.canvas_scene = scene
        self.setRenderHints(QPainter.RenderHint.Antialiasing | QPainter.RenderHint.TextAntialiasing)
        self.setViewportUpdateMode(QGraphicsView.ViewportUpdateMode.MinimalViewportUpdate)
        self.setOptimizationFlags(
            QGraphicsView.OptimizationFlag.DontSavePainterState
            | QGraphicsView.OptimizationFlag.DontAdjustForAntialiasing
        )
        self.setCacheMode(QGraphicsView.CacheModeFlag.CacheNone)
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.AnchorUnderMouse)
        self.setResizeAnchor(QGraphicsView.ViewportAnchor.AnchorViewCenter)
        self.setDragMode(QGraphicsView.DragMode.RubberBandDrag)
        self.setRubberBandSelectionMode(Qt.ItemSelectionMode.IntersectsItemShape)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setAcceptDrops(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        self._pan_from: QPoint | None = None
        self._pan_button = Qt.MouseButton.NoButton
        self._pan_moved = False
        self._space_down = False
        self._hover_node: str | None = None  # the node under the pointer (the minimap keeps clear of it)
        self.minimap = Minimap(self)
        # The minimap helps to find what is off screen; with the whole graph in view it would
        # only cover part of it (at the default fit, the bottom-right nodes), so it hides then.
        self.minimap_enabled = True
        # After "fit all", resizing the view (a dock growing when a run starts, the window
        # resized) frames the graph again, until the user zooms or pans.
        self.fitted = False
        scene.document.changed.connect(self.minimap.schedule)
        scene.selectionChanged.connect(self.update_minimap_visibility)
        # At once on a new workflow (rare, and it decides whether the minimap shows at all),
        # and for a view made on a document that is already filled (a run view).
        scene.document.workflow_reset.connect(self.minimap.refresh)
        self.minimap.refresh()
        # A big document has items only for what is in view (see CanvasScene): more are made
        # as the view moves, and after edits (a node moved into view, an undo).
        self._realize_timer = QTimer(self, singleShot=True, interval=0)
        self._realize_timer.timeout.connect(self.realize_visible)
        self._realize_more = QTimer(self, singleShot=True, interval=0)  # the margin, a budget at a time
        self._realize_more.timeout.connect(self._realize_next)
        scene.document.changed.connect(self._realize_timer.start)

    def realize_visible(self, budget_s: float | None = None) -> None:
        """Make the items of the cards in view (plus a margin) of a big document. With
        ``budget_s`` (a scroll), the cards in the margin get that long; the rest are made on
        the next turns of the event loop, a budget at a time."""
        scene = self.canvas_scene
        if not shiboken6.isValid(scene) or not scene.lazy or self.viewport().rect().isEmpty():
            return
        r = self.visible_scene_rect()
        m = max(r.width(), r.height()) * 0.25
        scene.realize_rect(r.adjusted(-m, -m, m, m), r, budget_s)
        if scene.realize_left:
            self._realize_more.start()

    def _realize_next(self) -> None:
        self.realize_visible(REALIZE_BUDGET_S)

    # ------------------------------------------------------------------ zoom and framing
    def zoom(self) -> float:
        return self.transform().m11()

    def set_zoom(self, factor: float, anchor: QPointF | None = None) -> None:
        self.fitted = False
        factor = max(MIN_ZOOM, min(MAX_ZOOM, factor))
        centre = anchor if anchor is not None else self.mapToScene(self.viewport().rect().center())
        self.resetTransform()
        self.scale(factor, factor)
        self.centerOn(centre)
        self._zoomed()

    def zoom_by(self, step: float, at: QPoint | None = None) -> None:
        self.fitted = False
        current = self.zoom()
        target = max(MIN_ZOOM, min(MAX_ZOOM, current * step))
        if at is None:
            self.set_zoom(target)
            return
        # Keep the scene point under the cursor fixed.
        anchor = self.transformationAnchor()
        self.setTransformationAnchor(QGraphicsView.ViewportAnchor.NoAnchor)
        before = self.mapToScene(at)
        self.scale(target / current, target / current)
        after = self.mapToScene(at)
        self._pan_by_scene(before - after)
        self.setTransformationAnchor(anchor)
        self._zoomed()

    def _pan_by_scene(self, delta: QPointF) -> None:
        self.fitted = False
        # Through the scroll bars in whole pixels: centerOn() rounds and drifts on every step.
        z = self.zoom()
        h, v = self.horizontalScrollBar(), self.verticalScrollBar()
        h.setValue(h.value() + round(delta.x() * z))
        v.setValue(v.value() + round(delta.y() * z))

    def _zoomed(self) -> None:
        self.realize_visible()
        self.canvas_scene.set_zoom(self.zoom())
        self.zoom_changed.emit(self.zoom())
        self.minimap.update()
        self.update_minimap_visibility()

    def set_minimap_enabled(self, on: bool) -> None:
        """View ▸ Minimap: shown when enabled and part of the graph is out of view."""
        self.minimap_enabled = on
        self.update_minimap_visibility()

    def update_minimap_visibility(self) -> None:
        if not shiboken6.isValid(self.canvas_scene):  # the scene went first (the window closing)
            return
        bounds = self.minimap.nodes_bounds
        scene = self.canvas_scene
        dragging = scene.link_drag is not None or (scene.move_tracker is not None and self._buttons_down())
        wanted = (
            self.minimap_enabled
            and not dragging
            and not (not bounds.isNull() and self.visible_scene_rect().contains(bounds))
        )
        corner = self._free_corner() if wanted else None
        if corner is not None and corner != self.minimap.pos():
            self.minimap.move(corner)
        wanted = wanted and corner is not None
        if wanted == self.minimap.isHidden():
            self.minimap.setVisible(wanted)

    def _buttons_down(self) -> bool:
        return QApplication.mouseButtons() != Qt.MouseButton.NoButton

    def minimap_corners(self) -> list[QPoint]:
        """Where the minimap may sit, in order of preference: bottom-right, bottom-left, top-right, top-left."""
        vp = self.viewport().rect()
        w, h, m = self.minimap.width(), self.minimap.height(), 12
        right, bottom = vp.width() - w - m, vp.height() - h - m
        return [QPoint(right, bottom), QPoint(m, bottom), QPoint(right, m), QPoint(m, m)]

    def minimap_keep_clear(self) -> list[QRect]:
        """Viewport rectangles the minimap must not cover: selected and hovered nodes, a dragged link."""
        scene = self.canvas_scene
        rects: list[QRect] = []
        visible = self.visible_scene_rect()
        ids = list(scene.selected_node_ids())
        if self._hover_node is not None:
            ids.append(self._hover_node)
        for nid in ids:
            item = scene.node_items.peek(nid)  # (a node without an item is off screen)
            if item is None:
                continue
            r = item.sceneBoundingRect()
            if r.intersects(visible):
                rects.append(self.mapFromScene(r).boundingRect())
        if scene.link_drag is not None:
            rects.append(self.mapFromScene(scene.link_drag.item.sceneBoundingRect()).boundingRect())
        return rects

    def _free_corner(self) -> QPoint | None:
        keep = self.minimap_keep_clear()
        size = self.minimap.size()
        usable = []
        for corner in self.minimap_corners():
            area = QRect(corner, size).adjusted(-4, -4, 4, 4)
            if not any(area.intersects(r) for r in keep):
                usable.append(corner)
        # Best a corner over no card at all (handles, badges and ports stay in sight), else
        # one over nothing selected, hovered or dragged.
        grid = self.canvas_scene.obstacles
        for corner in usable:
            r = self.mapToScene(QRect(corner, size).adjusted(-4, -4, 4, 4)).boundingRect()
            if grid.is_free((r.left(), r.top(), r.right(), r.bottom())):
                return corner
        if usable:
            return usable[0]
        return None  # every corner would cover something in use: stay hidden

    def visible_scene_rect(self) -> QRectF:
        return self.mapToScene(self.viewport().rect()).boundingRect()

    def fit_all(self) -> None:
        self.fit_rect(self.graph_bounds())
        self.fitted = True

    def graph_bounds(self) -> QRectF:
        """What "fit the whole graph" shows: every card and every sticky note (from the model)."""
        document = self.canvas_scene.document
        rect = self.canvas_scene.items_bounds() if document.workflow.nodes else QRectF()
        for note in document.annotations("note"):
            rect = rect.united(QRectF(note.x, note.y, note.width, note.height))
        return rect if not rect.isNull() else self.canvas_scene.items_bounds()

    def fit_rect(self, rect: QRectF) -> None:
        if rect.isNull():
            return
        rect = rect.adjusted(-60, -60, 60, 60)
        vp = self.viewport().rect()
        factor = min(vp.width() / rect.width(), vp.height() / rect.height(), 1.0)
        self.set_zoom(factor, rect.center())

    def fit_selection(self) -> None:
        scene = self.canvas_scene
        rect = QRectF()
        for nid in scene.selected_node_ids():
            node = scene.document.node(nid)
            if node is not None:
                rect = rect.united(node_rect(node))
        if rect.isNull():
            self.fit_all()
        else:
            self.fit_rect(rect)

    def centre_on_node(self, node_id: str) -> None:
        node = self.canvas_scene.document.node(node_id)
        if node is not None:
            w, h = node_size(node)
            self.fitted = False
            self.centerOn(QPointF(node.x + w / 2, node.y + h / 2))
            self.minimap.update()

    def paste_position(self, text: str) -> tuple[float, float] | None:
        """Where pasted nodes go (their bounding box's top-left): at the pointer when it is over
        the canvas, else just below the copied nodes, clear of them, of their links and of any
        other card. None when ``text`` is not workflow JSON (the paste reports that)."""
        try:
            frag = loads_workflow(text)
        except Exception:  # the document's paste says what is wrong with it
            return None
        if not frag.nodes:
            return None
        rects = [node_rect(n, bool(getattr(n.data, "subagent", False))) for n in frag.nodes]
        box = rects[0]
        for r in rects[1:]:
            box = box.united(r)
        cursor = self.viewport().mapFromGlobal(QCursor.pos())
        if self.viewport().rect().contains(cursor) and self.underMouse():
            at = self.mapToScene(cursor)
            x, y = at.x(), at.y()
        else:
            # Below the source, stepping further down past any card in the way.
            x, y = box.left(), box.bottom() + 60.0
            grid = self.canvas_scene.obstacles
            for _ in range(200):
                area = (x - 20, y - 20, x + box.width() + 20, y + box.height() + 20)
                hits = grid.query(area)
                if not hits:
                    break
                y = max(r[3] for r in hits.values()) + 40.0
        if self.canvas_scene.snap_to_grid:
            x, y = round(x / GRID) * GRID, round(y / GRID) * GRID
        return round(x), round(y)

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.realize_visible()
        if self.fitted and not self.viewport().rect().isEmpty():
            self.fit_all()
        self.update_minimap_visibility()

    def scrollContentsBy(self, dx: int, dy: int) -> None:
        super().scrollContentsBy(dx, dy)
        self.realize_visible(REALIZE_BUDGET_S)  # (a frame of a pan: the margin can wait)
        self.minimap.update()
        self.update_minimap_visibility()

    # ------------------------------------------------------------------ input
    def wheelEvent(self, event: QWheelEvent) -> None:
        delta = event.angleDelta().y() or event.angleDelta().x()
        if not delta:
            return
        if (
            event.modifiers() & Qt.KeyboardModifier.ShiftModifier
            and not event.modifiers() & Qt.KeyboardModifier.ControlModifier
        ):
            self._pan_by_scene(QPointF(-delta / self.zoom(), 0))
            return
        self.zoom_by(1.0015**delta, event.position().toPoint())
        event.accept()

    def _on_background(self, pos: QPoint) -> bool:
        scene_pos = self.mapToScene(pos)
        return self.itemAt(pos) is None and self.canvas_scene.port_at(scene_pos) is None

    def mousePressEvent(self, event: QMouseEvent) -> None:
        pos = event.position().toPoint()
        button = event.button()
        mods = event.modifiers()
        selecting = bool(mods & (Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.ControlModifier))
        editor = self.canvas_scene.note_editor
        if editor is not None and not editor.sceneBoundingRect().contains(self.mapToScene(pos)):
            editor.finish()  # a click anywhere else on the canvas ends the typing in a note
        # Background drags pan (as in AgentFlow); Shift/Ctrl + drag draws a selection rectangle.
        # Middle button and Space + drag pan anywhere; the right button pans on the background
        # and opens the context menu when it does not move.
        pan = (
            button == Qt.MouseButton.MiddleButton
            or (button == Qt.MouseButton.LeftButton and self._space_down)
            or (button == Qt.MouseButton.LeftButton and not selecting and self._on_background(pos))
            or (button == Qt.MouseButton.RightButton and self._on_background(pos))
        )
        if pan:
            self._pan_from = pos
            self._pan_button = button
            self._pan_moved = False
            self.viewport().setCursor(Qt.CursorShape.ClosedHandCursor)
            event.accept()
            return
        super().mousePressEvent(event)

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if self._pan_from is not None:
            pos = event.position().toPoint()
            d = pos - self._pan_from
            self._pan_from = pos
            if d.manhattanLength():
                self._pan_moved = True
            self._pan_by_scene(QPointF(-d.x() / self.zoom(), -d.y() / self.zoom()))
            event.accept()
            return
        super().mouseMoveEvent(event)
        self._track_hover(event.position().toPoint())

    def _track_hover(self, pos: QPoint) -> None:
        if not shiboken6.isValid(self.canvas_scene):
            return
        scene = self.canvas_scene
        busy = scene.link_drag is not None or scene.move_tracker is not None
        if busy or self.minimap.isVisible() or self._hover_node is not None:
            item = scene.node_item_at(self.mapToScene(pos)) if not busy else None
            self._hover_node = item.node_id if item is not None else None
            self.update_minimap_visibility()

    def leaveEvent(self, event) -> None:
        self._hover_node = None
        self.update_minimap_visibility()
        super().leaveEvent(event)

    def mouseReleaseEvent(self, event: QMouseEvent) -> None:
        if self._pan_from is not None:
            self._pan_from = None
            self.viewport().setCursor(Qt.CursorShape.OpenHandCursor if self._space_down else Qt.CursorShape.ArrowCursor)
            if not self._pan_moved:
                if self._pan_button == Qt.MouseButton.RightButton:
                    # A right click without a drag still opens the context menu.
                    self.canvas_scene.context_menu_requested.emit(self.mapToScene(event.position().toPoint()), None)
                elif self._pan_button == Qt.MouseButton.LeftButton:
                    self.canvas_scene.clearSelection()  # a click on the background deselects
            event.accept()
            return
        super().mouseReleaseEvent(event)
        self.update_minimap_visibility()  # back after a drag, clear of what was dropped

    def contextMenuEvent(self, event) -> None:
        # Background right clicks are handled as pan-or-menu above; nodes, sticky notes and group
        # frames get the scene's menu (a note's or a group's: colour, collapse, run from here...).
        scene_pos = self.mapToScene(event.pos())
        if self.canvas_scene.node_item_at(scene_pos) is not None or isinstance(
            self.itemAt(event.pos()), (NoteItem, GroupItem)
        ):
            super().contextMenuEvent(event)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if self.canvas_scene.note_editor is not None:  # typing in a sticky note: every key is text
            super().keyPressEvent(event)
            return
        if event.key() == Qt.Key.Key_Space and not event.isAutoRepeat():
            self._space_down = True
            self.viewport().setCursor(Qt.CursorShape.OpenHandCursor)
            event.accept()
            return
        step = _NUDGE.get(event.key())
        scene = self.canvas_scene
        if (
            step is not None
            and scene.selected_node_ids()
            and scene.link_drag is None
            and scene.move_tracker is None
            and not event.modifiers() & ~(Qt.KeyboardModifier.ShiftModifier | Qt.KeyboardModifier.KeypadModifier)
        ):
            # Arrow keys move the selected nodes (a grid step when snapping; Shift: five), as in a
            # drawing program; with nothing selected they scroll the view as before.
            size = GRID if scene.snap_to_grid else NUDGE_STEP
            size *= 5 if event.modifiers() & Qt.KeyboardModifier.ShiftModifier else 1
            self.nudge_requested.emit(step[0] * size, step[1] * size)
            event.accept()
            return
        super().keyPressEvent(event)

    def keyReleaseEvent(self, event: QKeyEvent) -> None:
        if event.key() == Qt.Key.Key_Space and not event.isAutoRepeat() and self._space_down:
            self._space_down = False
            self.viewport().unsetCursor()
            event.accept()
            return
        super().keyReleaseEvent(event)

    # ------------------------------------------------------------------ palette drops
    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasFormat(NODE_MIME) or local_paths(event.mimeData()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event: QDragMoveEvent) -> None:
        if event.mimeData().hasFormat(NODE_MIME) or local_paths(event.mimeData()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        if not event.mimeData().hasFormat(NODE_MIME):
            paths = local_paths(event.mimeData())
            if paths:  # a workflow file from a file manager: the window opens it
                event.acceptProposedAction()
                self.files_dropped.emit(paths)
            else:
                event.ignore()
            return
        kind = bytes(event.mimeData().data(NODE_MIME).data()).decode()
        pos = self.mapToScene(event.position().toPoint())
        self.node_dropped.emit(kind, QPointF(pos.x() - 40, pos.y() - TITLE_H / 2))
        event.setDropAction(Qt.DropAction.CopyAction)
        event.accept()
