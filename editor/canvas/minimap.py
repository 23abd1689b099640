"""The canvas's minimap: a small overview in the view's corner; click or drag to move there.

It paints node rectangles from the model on its own (no second QGraphicsView rendering every
item), drawn into an image once per refresh (a short timer after changes), so a paint copies
one image rather than filling a rectangle per card. Where it sits and when it shows is the
view's business (editor/canvas/view.py).
"""

from __future__ import annotations

from typing import Any, Protocol

from PySide6.QtCore import QPointF, QRectF, Qt, QTimer
from PySide6.QtGui import QColor, QImage, QMouseEvent, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QWidget

from .style import KIND_COLOR


class MinimapHost(Protocol):
    """What the minimap needs of its view (a CanvasView, which is also its parent widget)."""

    canvas_scene: Any
    fitted: bool

    def visible_scene_rect(self) -> QRectF: ...

    def update_minimap_visibility(self) -> None: ...

    def centerOn(self, pos: QPointF) -> None: ...


class Minimap(QWidget):
    """A small overview in the view's corner; click or drag to move the view there."""

    def __init__(self, view: MinimapHost) -> None:
        super().__init__(view)
        self.view = view
        self.setFixedSize(200, 130)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setToolTip("Minimap: click to move the view")
        self._bounds = QRectF()
        self._image: QImage | None = None  # the cards, drawn once per refresh (not per paint)
        self._scaled: tuple[tuple, QImage] | None = None  # ... and scaled to the widget (see _cards)
        self.nodes_bounds = QRectF()  # the nodes' own bounds, no margin
        self.card_count = 0  # cards in the image (a small document's; a big one's come from its grid)
        self._timer = QTimer(self, singleShot=True, interval=120)
        self._timer.timeout.connect(self.refresh)

    def schedule(self) -> None:
        self._timer.start()

    def refresh(self) -> None:
        scene = self.view.canvas_scene
        self._image = None
        if scene.lazy:  # a big document: from the scene's grid, painted once into an image
            self.nodes_bounds = scene.items_bounds()
            self._bounds = self.nodes_bounds.adjusted(-60, -60, 60, 60)
            self._image = self._render_big(scene)
            self.update()
            self.view.update_minimap_visibility()
            return
        model = scene.model_rects()  # (sized from the items' layouts: no card is laid out again)
        rects = [(QRectF(x0, y0, x1 - x0, y1 - y0), KIND_COLOR[kind]) for x0, y0, x1, y1, kind in model]
        bounds = QRectF()
        if model:
            x0, y0 = min(r[0] for r in model), min(r[1] for r in model)
            bounds = QRectF(x0, y0, max(r[2] for r in model) - x0, max(r[3] for r in model) - y0)
        self.nodes_bounds = bounds
        self._bounds = bounds.adjusted(-60, -60, 60, 60)
        self.card_count = len(rects)
        self._image = self._render(rects)
        self.update()
        self.view.update_minimap_visibility()

    def _blank(self) -> tuple[QImage, float]:
        """A transparent image of the graph's bounds at twice the widget's size (so it stays
        sharp), and the scale from scene to image."""
        b = self._bounds
        w, h = 2 * self.width(), 2 * self.height()
        s = min(w / max(b.width(), 1), h / max(b.height(), 1))
        img = QImage(max(1, int(b.width() * s)), max(1, int(b.height() * s)), QImage.Format.Format_ARGB32_Premultiplied)
        img.fill(Qt.GlobalColor.transparent)
        return img, s

    def _render(self, rects: list[tuple[QRectF, QColor]]) -> QImage:
        """The cards, scaled into an image once per refresh: a paint then draws one image, not
        a rectangle per card."""
        b = self._bounds
        img, s = self._blank()
        p = QPainter(img)
        for r, c in rects:
            x, y = (r.left() - b.left()) * s, (r.top() - b.top()) * s
            p.fillRect(QRectF(x, y, max(r.width() * s, 4), max(r.height() * s, 4)), c)
        p.end()
        return img

    def _render_big(self, scene) -> QImage:
        """The cards of a big document, scaled into an image once per refresh (from the scene's
        overview geometry: a few batched calls; a cosmetic outline keeps a tiny card visible)."""
        b = self._bounds
        img, s = self._blank()
        p = QPainter(img)
        p.scale(s, s)
        p.translate(-b.left(), -b.top())
        for kind, rects in scene.overview_geometry().rects.items():
            color = KIND_COLOR[kind]
            p.setPen(QPen(color, 0))
            p.setBrush(color)
            p.drawRects(rects)
        p.end()
        return img

    def _transform(self) -> tuple[float, float, float]:
        b = self._bounds.united(self.view.visible_scene_rect())
        s = min((self.width() - 8) / max(b.width(), 1), (self.height() - 8) / max(b.height(), 1))
        ox = 4 + (self.width() - 8 - b.width() * s) / 2 - b.left() * s
        oy = 4 + (self.height() - 8 - b.height() * s) / 2 - b.top() * s
        return s, ox, oy

    def _cards(self, s: float, ox: float, oy: float) -> QImage | None:
        """The cards scaled to where this paint puts them, kept while that does not change (a
        pan within the graph's bounds): a paint then copies them, it does not scale them."""
        if self._image is None:
            return None
        key = (self._image.cacheKey(), s, ox, oy)
        if self._scaled is None or self._scaled[0] != key:
            b = self._bounds
            img = QImage(self.size(), QImage.Format.Format_ARGB32_Premultiplied)
            img.fill(Qt.GlobalColor.transparent)
            p = QPainter(img)
            p.drawImage(QRectF(b.left() * s + ox, b.top() * s + oy, b.width() * s, b.height() * s), self._image)
            p.end()
            self._scaled = (key, img)
        return self._scaled[1]

    def paintEvent(self, event: QPaintEvent) -> None:
        p = QPainter(self)
        p.fillRect(self.rect(), QColor(20, 23, 29, 225))
        p.setPen(QPen(QColor("#3a3f4b")))
        p.drawRect(self.rect().adjusted(0, 0, -1, -1))
        s, ox, oy = self._transform()
        p.setPen(Qt.PenStyle.NoPen)
        cards = self._cards(s, ox, oy)
        if cards is not None:
            p.drawImage(0, 0, cards)
        v = self.view.visible_scene_rect()
        p.setPen(QPen(QColor("#ffb454"), 1.5))
        p.setBrush(QColor(255, 180, 84, 14))
        p.drawRect(QRectF(v.left() * s + ox, v.top() * s + oy, v.width() * s, v.height() * s))
        p.end()

    def _jump(self, pos: QPointF) -> None:
        s, ox, oy = self._transform()
        self.view.fitted = False
        self.view.centerOn(QPointF((pos.x() - ox) / s, (pos.y() - oy) / s))

    def mousePressEvent(self, event: QMouseEvent) -> None:
        self._jump(event.position())

    def mouseMoveEvent(self, event: QMouseEvent) -> None:
        if event.buttons() & Qt.MouseButton.LeftButton:
            self._jump(event.position())
