"""Link routing around node cards: pure geometry on model rectangles (no Qt).

A link keeps its smooth bezier when that curve is clear of every other card. Otherwise it
is routed orthogonally (drawn with rounded corners by the edge item): first a Z through a
free vertical channel between the two ports, else a track above or below the cards in its
way (how back edges of an auto-laid-out graph stay outside the row). Subagent links, which
run top-down, are routed the same way on transposed coordinates.

Obstacles come from an :class:`ObstacleGrid`, a bucket grid of node rectangles keyed by
model position that the scene updates as nodes move, so finding the cards near a link is a
few dict look-ups, not a scan of the scene. Routing runs only when a link's endpoint moves
(or a card is dropped on it), never while painting.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

Rect = tuple[float, float, float, float]  # x0, y0, x1, y1
Point = tuple[float, float]

CELL = 256.0
MARGIN = 12.0  # clearance kept between a routed link and a card (the corner radius must stay under 2x this)
STUB = 22.0  # straight run out of a port before the first bend
CORNER_R = 12.0
_BEZIER_SAMPLES = 16


class ObstacleGrid:
    """Node rectangles in buckets of ``CELL`` model units."""

    def __init__(self) -> None:
        self.rects: dict[str, Rect] = {}
        self._cells: dict[tuple[int, int], set[str]] = defaultdict(set)
        self._of: dict[str, list[tuple[int, int]]] = {}

    @staticmethod
    def _span(r: Rect) -> Iterable[tuple[int, int]]:
        for cx in range(int(r[0] // CELL), int(r[2] // CELL) + 1):
            for cy in range(int(r[1] // CELL), int(r[3] // CELL) + 1):
                yield cx, cy

    def set(self, key: str, rect: Rect) -> None:
        old = self.rects.get(key)
        if old == rect:
            return
        if old is not None:
            self.remove(key)
        self.rects[key] = rect
        cells = list(self._span(rect))
        self._of[key] = cells
        for c in cells:
            self._cells[c].add(key)

    def remove(self, key: str) -> None:
        self.rects.pop(key, None)
        for c in self._of.pop(key, ()):
            s = self._cells.get(c)
            if s is not None:
                s.discard(key)
                if not s:
                    del self._cells[c]

    def clear(self) -> None:
        self.rects.clear()
        self._cells.clear()
        self._of.clear()

    def query(self, r: Rect) -> dict[str, Rect]:
        """Rectangles intersecting ``r``."""
        found: dict[str, Rect] = {}
        x0, y0, x1, y1 = r
        cells = self._cells
        span_x = int(x1 // CELL) - int(x0 // CELL) + 1
        span_y = int(y1 // CELL) - int(y0 // CELL) + 1
        if span_x * span_y > len(cells):  # a huge query: walk the occupied cells instead
            keys: Iterable[str] = self.rects
        else:
            keys = {k for c in self._span(r) for k in cells.get(c, ())}
        for k in keys:
            o = self.rects[k]
            if o[0] < x1 and o[2] > x0 and o[1] < y1 and o[3] > y0:
                found[k] = o
        return found


# ---------------------------------------------------------------------- geometry helpers
def _seg_hits(p: Point, q: Point, r: Rect) -> bool:
    """Whether segment p-q passes through the open rectangle ``r`` (Liang-Barsky clipping)."""
    x0, y0, x1, y1 = r
    if max(p[0], q[0]) <= x0 or min(p[0], q[0]) >= x1 or max(p[1], q[1]) <= y0 or min(p[1], q[1]) >= y1:
        return False
    dx, dy = q[0] - p[0], q[1] - p[1]
    t0, t1 = 0.0, 1.0
    for pk, qk in ((-dx, p[0] - x0), (dx, x1 - p[0]), (-dy, p[1] - y0), (dy, y1 - p[1])):
        if pk == 0:
            if qk <= 0:
                return False
            continue
        t = qk / pk
        if pk < 0:
            t0 = max(t0, t)
        else:
            t1 = min(t1, t)
        if t0 >= t1:
            return False
    return True


def bezier_controls(a: Point, b: Point) -> tuple[Point, Point]:
    """Control points of the default left-to-right link curve (see ``items.edge.bezier``)."""
    dx = max(50.0, abs(b[0] - a[0]) * 0.5)
    return (a[0] + dx, a[1]), (b[0] - dx, b[1])


def _bezier_points(a: Point, b: Point) -> list[Point]:
    c1, c2 = bezier_controls(a, b)
    pts = []
    for i in range(_BEZIER_SAMPLES + 1):
        t = i / _BEZIER_SAMPLES
        u = 1 - t
        w0, w1, w2, w3 = u * u * u, 3 * u * u * t, 3 * u * t * t, t * t * t
        pts.append((w0 * a[0] + w1 * c1[0] + w2 * c2[0] + w3 * b[0], w0 * a[1] + w1 * c1[1] + w2 * c2[1] + w3 * b[1]))
    return pts


def _clear(points: list[Point], rects: list[Rect]) -> bool:
    for i in range(len(points) - 1):
        p, q = points[i], points[i + 1]
        for r in rects:
            if _seg_hits(p, q, r):
                return False
    return True


def _t(p: Point) -> Point:
    return p[1], p[0]


def _tr(r: Rect) -> Rect:
    return r[1], r[0], r[3], r[2]


def _inflate(r: Rect, m: float) -> Rect:
    return r[0] - m, r[1] - m, r[2] + m, r[3] + m


# ---------------------------------------------------------------------- routing
def route(a: Point, b: Point, vertical: bool, grid: ObstacleGrid, ends: tuple[str, str]) -> list[Point] | None:
    """The bends of a link from port ``a`` to port ``b``; None when the default curve is clear.

    ``vertical`` links (subagents) leave downwards and arrive from above; the others leave
    to the right and arrive from the left. ``ends`` are the ids of the two cards the link
    joins. The returned polyline starts at ``a`` and ends at ``b``.
    """
    if vertical:
        pts = _route_h(_t(a), _t(b), lambda r: {k: _tr(v) for k, v in grid.query(_tr(r)).items()}, ends)
        return None if pts is None else [_t(p) for p in pts]
    return _route_h(a, b, grid.query, ends)


def _route_h(a: Point, b: Point, query, ends: tuple[str, str]) -> list[Point] | None:
    # 1. The default curve, when it touches no card but its own two.
    curve = _bezier_points(a, b)
    xs = [p[0] for p in curve]
    ys = [p[1] for p in curve]
    near = query((min(xs) - MARGIN, min(ys) - MARGIN, max(xs) + MARGIN, max(ys) + MARGIN))
    rects = [(_inflate(r, -2.0) if k in ends else _inflate(r, 4.0)) for k, r in near.items()]
    if _clear(curve, rects):
        return None
    a1 = (a[0] + STUB, a[1])
    b1 = (b[0] - STUB, b[1])
    lo, hi = min(a1[0], b1[0]), max(a1[0], b1[0])
    for extent in (600.0, 4000.0, float("inf")):
        band = query((lo - MARGIN, min(a[1], b[1]) - extent, hi + MARGIN, max(a[1], b[1]) + extent))
        obstacles = [_inflate(r, MARGIN) for r in band.values()]
        pts = _z_route(a1, b1, obstacles) or _track_route(a1, b1, obstacles)
        if pts is not None:
            return _simplify([a, *pts, b])
        if extent == float("inf") or len(band) == len(query((lo - MARGIN, -1e12, hi + MARGIN, 1e12))):
            break
    return None  # nowhere to go (a card sits on the port): keep the curve


def _z_route(a1: Point, b1: Point, obstacles: list[Rect]) -> list[Point] | None:
    """Right, down/up through a free vertical channel, right."""
    if b1[0] < a1[0]:
        return None
    ylo, yhi = min(a1[1], b1[1]), max(a1[1], b1[1])
    mid = (a1[0] + b1[0]) / 2
    cands = {mid, a1[0], b1[0]}
    for r in obstacles:
        if r[1] < yhi and r[3] > ylo:
            cands.update((r[0] - 1.0, r[2] + 1.0))
    for xm in sorted((x for x in cands if a1[0] <= x <= b1[0]), key=lambda x: abs(x - mid)):
        pts = [a1, (xm, a1[1]), (xm, b1[1]), b1]
        if _clear(pts, obstacles):
            return pts
    return None


def _track_route(a1: Point, b1: Point, obstacles: list[Rect]) -> list[Point] | None:
    """Up or down to a free horizontal track, along it, then back to the target's row."""
    lo, hi = min(a1[0], b1[0]), max(a1[0], b1[0])
    cands = {a1[1], b1[1]}
    for r in obstacles:
        if r[0] < hi and r[2] > lo:
            cands.update((r[1] - 1.0, r[3] + 1.0))
    for yt in sorted(cands, key=lambda y: (abs(y - a1[1]) + abs(y - b1[1]), y)):
        pts = [a1, (a1[0], yt), (b1[0], yt), b1]
        if _clear(pts, obstacles):
            return pts
    return None


def _simplify(points: list[Point]) -> list[Point]:
    out: list[Point] = []
    for p in points:
        if out and abs(out[-1][0] - p[0]) < 1e-6 and abs(out[-1][1] - p[1]) < 1e-6:
            continue
        if len(out) >= 2:
            o, q = out[-2], out[-1]
            if (abs(o[0] - q[0]) < 1e-6 and abs(q[0] - p[0]) < 1e-6) or (abs(o[1] - q[1]) < 1e-6 and abs(q[1] - p[1]) < 1e-6):
                out[-1] = p  # collinear: drop the middle point
                continue
        out.append(p)
    return out
