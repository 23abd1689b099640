"""The overview of a big document kept as an image at the view's scale.

Zoomed out over a big document the scene paints every card as a rectangle and every link as
a line (:func:`~editor.canvas.background.draw_overview`): at 10,000 cards and 15,000 links
that is 20-30 ms of rasterising, too slow for a frame. :class:`OverviewCache` draws it once
into an image covering what is in view plus a margin, and a paint then copies the exposed
part of that image (a blit, well under a millisecond). The image is made again only when the
overview's geometry changed (a new :class:`~editor.canvas.projection.Overview`: the model
moved), the zoom changed, or the view left the part the image covers.

The image is aligned to the device's pixel grid (its origin is a whole number of pixels in
zoomed scene coordinates), so the copy is exact: what is shown is what a direct paint draws.
"""

from __future__ import annotations

import math

from PySide6.QtCore import QPointF, QRectF
from PySide6.QtGui import QImage, QPainter, QTransform

from .background import draw_overview
from .projection import Overview
from .style import CANVAS_BG

__all__ = ["OverviewCache"]

MAX_PIXELS = 12_000_000  # the image's size at most (48 MB): beyond, the overview is painted directly


class OverviewCache:
    """One image of the overview; see the module doc."""

    __slots__ = ("_key", "_image", "_area", "_geom")

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._image: QImage | None = None
        self._area = QRectF()  # what the image covers, in zoomed scene coordinates (scene x scale)
        self._geom: Overview | None = None  # held so its id in the key is not reused

    def clear(self) -> None:
        self._key, self._image, self._geom = None, None, None

    def draw(self, painter: QPainter, rect: QRectF, geom: Overview, bounds: QRectF, cards: int) -> None:
        """Paint the overview over ``rect`` (scene coordinates) from the image, made first when stale."""
        t = painter.worldTransform()
        s = t.m11()
        device = painter.device()
        if device is None or t.m12() or t.m21() or s <= 0 or abs(t.m22() - s) > 1e-9 * s:
            draw_overview(painter, rect, geom, bounds, cards)  # rotated or skewed: never in this app
            return
        dpr = device.devicePixelRatioF()
        dx, dy = t.dx(), t.dy()
        # In device coordinates (the view's pixels): what is shown, where the cards are, and
        # what this paint needs, in whole pixels.
        seen = QRectF(0, 0, device.width(), device.height())
        content = t.mapRect(bounds).adjusted(-2, -2, 2, 2)
        need = _whole(t.mapRect(rect).intersected(seen).intersected(content))
        if need.isEmpty():
            return  # no card there: the background's fill is all
        # The image's pixels sit on the device's: the scroll's fraction of a pixel is part of the key.
        phase = (round(dx - math.floor(dx), 3), round(dy - math.floor(dy), 3))
        key = (s, dpr, phase, id(geom), cards)
        area = self._area.translated(dx, dy)  # where the image is now (a scroll moves it whole pixels)
        area = QRectF(round(area.left()), round(area.top()), area.width(), area.height())
        if key != self._key or not area.contains(need):
            area = self._render(geom, bounds, cards, t, dpr, seen, content)
            if area is None:
                draw_overview(painter, rect, geom, bounds, cards)
                return
            self._key, self._geom = key, geom
        image = self._image
        assert image is not None
        target = need.intersected(area)
        source = target.translated(-area.left(), -area.top())
        painter.save()
        painter.setWorldTransform(QTransform())  # a blit, not a resampling
        painter.drawImage(
            target, image, QRectF(source.left() * dpr, source.top() * dpr, source.width() * dpr, source.height() * dpr)
        )
        painter.restore()

    def _render(
        self, geom: Overview, bounds: QRectF, cards: int, t: QTransform, dpr: float, seen: QRectF, content: QRectF
    ) -> QRectF | None:
        """Draw the overview for the device rectangle ``seen`` plus half of it on each side (cut
        to the cards' ``content``); where the image is (device coordinates), or None when even
        ``seen`` would be too big an image."""
        for grow in (0.5, 0.0):
            mx, my = seen.width() * grow, seen.height() * grow
            area = _whole(seen.adjusted(-mx, -my, mx, my).intersected(content))
            if area.width() * area.height() * dpr * dpr <= MAX_PIXELS:
                break
        else:
            return None
        w, h = max(1, math.ceil(area.width() * dpr)), max(1, math.ceil(area.height() * dpr))
        image = QImage(w, h, QImage.Format.Format_ARGB32_Premultiplied)
        image.setDevicePixelRatio(dpr)
        image.fill(CANVAS_BG)
        p = QPainter(image)
        p.setRenderHint(QPainter.RenderHint.Antialiasing)
        p.setWorldTransform(t * QTransform.fromTranslate(-area.left(), -area.top()))
        inv, _ok = t.inverted()
        draw_overview(p, inv.mapRect(area), geom, bounds, cards)
        p.end()
        self._image = image
        self._area = area.translated(-t.dx(), -t.dy())  # kept in zoomed scene coordinates
        return area


def _whole(r: QRectF) -> QRectF:
    """``r`` grown to whole device pixels."""
    return QRectF(
        QPointF(math.floor(r.left()), math.floor(r.top())), QPointF(math.ceil(r.right()), math.ceil(r.bottom()))
    )
