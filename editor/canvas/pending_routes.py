"""Links drawn as their curve first and routed around cards after the first paint.

Routing a link (:func:`~editor.canvas.routing.route`: is its curve clear of every other card,
else which orthogonal path is) is the largest part of building a scene for a document with
thousands of links: about a third of a 2,000-card, 3,000-link load. A document that big is
shown first with every link as its curve (what a link clear of other cards keeps anyway), and
its links are routed in slices of ``SLICE_S`` on the event loop once the scene has been
painted, so the window shows the document sooner and stays responsive while the routes come
in. A link that is routed for another reason meanwhile (its card moved) leaves the queue;
:meth:`PendingRoutes.finish` routes the rest at once (a test, a benchmark that needs them).
"""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QObject, QTimer

__all__ = ["PendingRoutes", "DEFER_LINKS"]

DEFER_LINKS = 500  # a document with more links than this shows them as curves until routed
SLICE_S = 0.04  # routing time per turn of the event loop (the window answers in between)

ConnKey = tuple[str, str, str, str]


class PendingRoutes:
    """The links still drawn as their curve, in the order they are routed."""

    def __init__(self, owner: QObject, route_one: Callable[[ConnKey], None]) -> None:
        self._keys: dict[ConnKey, None] = {}  # (an ordered set)
        self._route_one = route_one
        self._timer = QTimer(owner)
        self._timer.setSingleShot(True)
        self._timer.setInterval(0)
        self._timer.timeout.connect(self._slice)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def add(self, key: ConnKey) -> None:
        self._keys[key] = None

    def discard(self, key: ConnKey) -> None:
        self._keys.pop(key, None)

    def clear(self) -> None:
        self._keys.clear()
        self._timer.stop()

    def painted(self) -> None:
        """The scene was painted: route what is left on the next turns of the event loop."""
        if self._keys and not self._timer.isActive():
            self._timer.start()

    def finish(self) -> None:
        """Route every link still waiting, now."""
        self._timer.stop()
        while self._keys:
            self._next()

    def _next(self) -> None:
        key = next(iter(self._keys))
        del self._keys[key]
        self._route_one(key)

    def _slice(self) -> None:
        end = time.perf_counter() + SLICE_S
        while self._keys and time.perf_counter() < end:
            self._next()
        if self._keys:
            self._timer.start()
