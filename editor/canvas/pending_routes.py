"""A big document's links: made and routed around cards after the first paint.

Making 3,000 link items and routing them (:func:`~editor.canvas.routing.route`: is the curve
clear of every other card, else which orthogonal path is) was two thirds of loading a
2,000-card, 3,000-link document, and a fitted first paint draws those links as merged
hairlines anyway. A document with more than ``DEFER_LINKS`` links is shown first with no
link item: the scene draws each link's curve from the cards (:class:`UnmadeCurves`, one path
per look). Once it has been painted, :class:`PendingRoutes` makes the items (with their
curves) and finds their routes in slices of ``SLICE_S`` on the event loop (pure geometry, so
nothing is repainted meanwhile), then gives the routes to the links together, in one repaint.
A link looked up meanwhile (``edge_items[key]``) is made at once; one routed for another
reason (its card moved) leaves the queue; :meth:`PendingRoutes.finish` does the rest at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QTimer
from PySide6.QtGui import QColor, QPainter, QPainterPath, QPen

from .items.edge import bezier
from .style import EDGE, EDGE_SUB, ERROR_HANDLE, ERROR_LINK, pen

__all__ = ["PendingRoutes", "UnmadeCurves", "DEFER_LINKS"]

DEFER_LINKS = 1000  # a document with more links than this makes them after its first paint
SLICE_S = 0.04  # routing time per turn of the event loop (the window answers in between)

ConnKey = tuple[str, str, str, str]


class PendingRoutes:
    """The links still drawn as their curve: routes are found in slices (pure geometry, the
    items untouched, so nothing is repainted meanwhile) and given to the items all at once
    when the last is found, in one repaint. A card that moved meanwhile (the cards' version
    changed) sends the routes found so far back to be found again."""

    def __init__(
        self,
        owner: QObject,
        find: Callable[[ConnKey], object | None],
        apply: Callable[[ConnKey, object], None],
        version: Callable[[], int],
        done: Callable[[], None] = lambda: None,
    ) -> None:
        self._keys: dict[ConnKey, None] = {}  # to find, in order (an ordered set)
        self._found: dict[ConnKey, object] = {}  # found, not yet given to the items
        self._find, self._apply, self._version_of = find, apply, version
        self._done = done  # the routes were given (a scene repaints: its far-out links are drawn merged)
        self._version = -1  # the cards' version the routes in _found were found against
        self.generation = 0  # goes up when the queue is cleared (a new document)
        self._timer = QTimer(owner)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._slice)

    def __len__(self) -> int:
        return len(self._keys) + len(self._found)

    def __contains__(self, key: object) -> bool:
        return key in self._keys or key in self._found

    def waiting(self) -> list[ConnKey]:
        return [*self._found, *self._keys]

    def add(self, key: ConnKey) -> None:
        self._keys[key] = None

    def discard(self, key: ConnKey) -> None:
        self._keys.pop(key, None)
        self._found.pop(key, None)

    def clear(self) -> None:
        self.generation += 1
        self._keys.clear()
        self._found.clear()
        self._timer.stop()

    def painted(self) -> None:
        """The scene was painted: find the routes on the next turns of the event loop."""
        if len(self) and not self._timer.isActive():
            self._timer.start()

    def finish(self) -> None:
        """Route every link still waiting, now."""
        self._timer.stop()
        self._run(None)

    def _slice(self) -> None:
        self._run(time.perf_counter() + SLICE_S)
        if len(self):
            self._timer.start()

    def _run(self, end: float | None) -> None:
        version = self._version_of()
        if version != self._version:  # cards moved: what was found may cross them now
            self._keys = dict.fromkeys(list(self._found) + list(self._keys))
            self._found.clear()
            self._version = version
        keys, found = self._keys, self._found
        while keys and (end is None or time.perf_counter() < end):
            key = next(iter(keys))
            del keys[key]
            route = self._find(key)
            if route is not None:
                found[key] = route
        if not keys:
            self._found = {}
            for key, route in found.items():
                self._apply(key, route)
            if found:
                self._done()


class UnmadeCurves:
    """The links of a big document that have no item yet (their items are made after the
    first paint), drawn by the scene as their curves, merged by colour: far out as the hairlines
    the links' own items draw there, nearer as their stroke (without the arrow, for the moment
    until the item is made). Made again only when ``key`` changes (the scene's cards or links)."""

    __slots__ = ("_key", "_paths")

    def __init__(self) -> None:
        self._key: tuple | None = None
        self._paths: list[tuple[QColor, bool, QPainterPath]] = []

    def draw(
        self,
        painter: QPainter,
        key: tuple,
        ends: Callable[[ConnKey], tuple | None],
        keys: Callable[[], list[ConnKey]],
        far: bool,
    ) -> None:
        if key != self._key:
            self._paths = _merged(keys(), ends)
            self._key = key
        aa = painter.testRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, not far)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        for color, dashed, path in self._paths:
            painter.setPen(QPen(color, 0) if far else pen(color.name(), 2.0, dashed))
            painter.drawPath(path)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, aa)


def _merged(keys, ends: Callable[[ConnKey], tuple | None]) -> list[tuple[QColor, bool, QPainterPath]]:
    """Each link's curve (as :class:`~.items.edge.EdgeItem` draws it before it is routed),
    merged into one path per look: plain, subagent (dashed), error (dashed)."""
    looks: dict[str, tuple[QColor, bool, QPainterPath]] = {}
    for key in keys:
        found = ends(key)
        if found is None:
            continue
        sub = key[1] == "subagent"
        name = "error" if key[1] == ERROR_HANDLE else "sub" if sub else "plain"
        look = looks.get(name)
        if look is None:
            color = ERROR_LINK if name == "error" else EDGE_SUB if sub else EDGE
            look = looks[name] = (color, name != "plain", QPainterPath())
        look[2].addPath(bezier(found[0], found[1], sub))
    return list(looks.values())
