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

import math
from collections import defaultdict
from collections.abc import Iterable

Rect = tuple[float, float, float, float]  # x0, y0, x1, y1
Point = tuple[float, float]

CELL = 512.0
MARGIN = 12.0  # clearance kept between a routed link and a card (the corner radius must stay under 2x this)
STUB = 22.0  # straight run out of a port before the first bend
CORNER_R = 12.0
_BEZIER_SAMPLES = 16
CROWD = 400  # more cards than this near a link (cards piled up): it keeps its curve


class ObstacleGrid:
    """Node rectangles in buckets of ``CELL`` model units."""

    def __init__(self) -> None:
        self.rects: dict[str, Rect] = {}
        self._cells: dict[tuple[int, int], set[str]] = defaultdict(set)
        self._of: dict[str, list[tuple[int, int]]] = {}
        self.version = 0  # goes up on every change (what is derived from the cards is then stale)

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
        self.version += 1
        self.rects[key] = rect
        cells = list(self._span(rect))
        self._of[key] = cells
        for c in cells:
            self._cells[c].add(key)

    def add_many(self, entries: Iterable[tuple[str, Rect]]) -> None:
        """``set`` for many rectangles at once (a big document's cards: 100k in a few tenths of a second)."""
        rects, cells, of = self.rects, self._cells, self._of
        self.version += 1
        for key, r in entries:
            if key in rects:  # a repeated id (an invalid file): the careful way
                self.set(key, r)
                continue
            rects[key] = r
            x0, x1, y0, y1 = int(r[0] // CELL), int(r[2] // CELL), int(r[1] // CELL), int(r[3] // CELL)
            if x0 == x1 and y0 == y1:
                span = [(x0, y0)]
            else:
                span = [(cx, cy) for cx in range(x0, x1 + 1) for cy in range(y0, y1 + 1)]
            of[key] = span
            for c in span:
                cells[c].add(key)

    def is_free(self, r: Rect) -> bool:
        """Whether no card meets ``r`` (the look stops at the first one)."""
        return self.query(r, limit=0) == {}

    def remove(self, key: str) -> None:
        self.version += 1
        self.rects.pop(key, None)
        for c in self._of.pop(key, ()):
            s = self._cells.get(c)
            if s is not None:
                s.discard(key)
                if not s:
                    del self._cells[c]

    def clear(self) -> None:
        self.version += 1
        self.rects.clear()
        self._cells.clear()
        self._of.clear()

    def query(self, r: Rect, limit: int | None = None) -> dict[str, Rect] | None:
        """Rectangles intersecting ``r``; with ``limit``, None as soon as more than that many do
        (a crowd: the caller gives up without gathering them all)."""
        found: dict[str, Rect] = {}
        x0, y0, x1, y1 = r
        cells = self._cells
        rects = self.rects
        finite = all(math.isfinite(v) for v in r)
        if finite:
            cx0, cx1, cy0, cy1 = int(x0 // CELL), int(x1 // CELL), int(y0 // CELL), int(y1 // CELL)
        if not finite or (cx1 - cx0 + 1) * (cy1 - cy0 + 1) > len(cells):  # a huge query: walk the cards instead
            for k, o in rects.items():
                if o[0] < x1 and o[2] > x0 and o[1] < y1 and o[3] > y0:
                    found[k] = o
                    if limit is not None and len(found) > limit:
                        return None
            return found
        for cx in range(cx0, cx1 + 1):
            for cy in range(cy0, cy1 + 1):
                for k in cells.get((cx, cy), ()):
                    o = rects[k]
                    if o[0] < x1 and o[2] > x0 and o[1] < y1 and o[3] > y0:
                        found[k] = o
                if limit is not None and len(found) > limit:
                    return None
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


_WEIGHTS = [
    ((1 - t) ** 3, 3 * (1 - t) ** 2 * t, 3 * (1 - t) * t * t, t**3)
    for t in (i / _BEZIER_SAMPLES for i in range(_BEZIER_SAMPLES + 1))
]


def _bezier_points(a: Point, b: Point) -> list[Point]:
    (c1x, c1y), (c2x, c2y) = bezier_controls(a, b)
    ax, ay, bx, by = a[0], a[1], b[0], b[1]
    return [
        (w0 * ax + w1 * c1x + w2 * c2x + w3 * bx, w0 * ay + w1 * c1y + w2 * c2y + w3 * by)
        for w0, w1, w2, w3 in _WEIGHTS
    ]


def _clear(points: list[Point], rects: list[Rect]) -> bool:
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    rects = [r for r in rects if r[0] < x1 and r[2] > x0 and r[1] < y1 and r[3] > y0]
    if not rects:
        return True
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

        def query(r: Rect, limit: int | None = None) -> dict[str, Rect] | None:
            found = grid.query(_tr(r), limit)
            return None if found is None else {k: _tr(v) for k, v in found.items()}

        pts = _route_h(_t(a), _t(b), query, ends)
        return None if pts is None else [_t(p) for p in pts]
    return _route_h(a, b, grid.query, ends)


def _route_h(a: Point, b: Point, query, ends: tuple[str, str]) -> list[Point] | None:
    # 1. The default curve, when it touches no card but its own two. A cubic stays inside
    # its control points' box, and a forward link of 100+ units never turns back into its
    # own cards, so most links are accepted from one look-up without sampling the curve.
    c1, c2 = bezier_controls(a, b)
    box = (min(a[0], c2[0]) - 4.0, min(a[1], b[1]) - 4.0, max(b[0], c1[0]) + 4.0, max(a[1], b[1]) + 4.0)
    # A curve across a big stretch of a large graph would cross something: route it at once
    # rather than gather every card under it.
    big = (box[2] - box[0]) * (box[3] - box[1]) > 16 * CELL * CELL
    near = {} if big else query(box, CROWD)
    if near is None:  # cards piled on each other under the curve: no route would be clear
        return None
    others = [r for k, r in near.items() if k not in ends]
    if not big and not others and b[0] - a[0] >= 100.0:
        return None
    if not big and len(others) <= 8:  # a long curve over a crowd of cards is routed without trying it
        curve = _bezier_points(a, b)
        rects = [_inflate(r, 4.0) for r in others]
        if b[0] - a[0] < 100.0:
            rects += [_inflate(r, -2.0) for k, r in near.items() if k in ends]
        if _clear(curve, rects):
            return None
    a1 = (a[0] + STUB, a[1])
    b1 = (b[0] - STUB, b[1])
    lo, hi = min(a1[0], b1[0]), max(a1[0], b1[0])
    seen = -1
    m = MARGIN
    for extent in (160.0, 640.0, 2560.0):  # nearby cards first, then further out (then give up)
        ymin, ymax = min(a[1], b[1]) - extent, max(a[1], b[1]) + extent
        band = query((lo - m, ymin, hi + m, ymax), CROWD)
        if band is None:
            return None  # a crowd of cards in the way: keep the curve rather than search it (O(n) per link)
        if len(band) == seen:
            continue  # no more cards than last time: the same answer
        seen = len(band)
        obstacles = [(r[0] - m, r[1] - m, r[2] + m, r[3] + m) for r in band.values()]
        pts = _z_route(a1, b1, obstacles) or _track_route(a1, b1, obstacles, ymin, ymax)
        if pts is not None:
            return _simplify([a, *pts, b])
    return None  # nowhere to go (a card sits on the port): keep the curve


def _free(intervals: list[tuple[float, float]], lo: float, hi: float) -> list[tuple[float, float]]:
    """The closed sub-ranges of [lo, hi] outside every open interval."""
    gaps = []
    at = lo
    for s, e in sorted(intervals):
        if e <= at:
            continue
        if s >= hi:
            break
        if s >= at:
            gaps.append((at, s))
        at = max(at, e)
    if at <= hi:
        gaps.append((at, hi))
    return gaps


def _nearest(gaps: list[tuple[float, float]], want: float) -> float | None:
    best = None
    for g0, g1 in gaps:
        v = min(max(want, g0), g1)
        if best is None or abs(v - want) < abs(best - want):
            best = v
    return best


def _z_route(a1: Point, b1: Point, obstacles: list[Rect]) -> list[Point] | None:
    """Right, down/up through a free vertical channel, right: solved on intervals, O(k log k)."""
    lo, hi = a1[0], b1[0]
    if hi < lo:
        return None
    ya, yb = a1[1], b1[1]
    for r in obstacles:
        if r[1] < ya < r[3] and r[2] > a1[0]:  # in the way along the source's row
            if r[0] <= a1[0]:
                return None
            hi = min(hi, r[0])
        if r[1] < yb < r[3] and r[0] < b1[0]:  # in the way along the target's row
            if r[2] >= b1[0]:
                return None
            lo = max(lo, r[2])
    if hi < lo:
        return None
    ylo, yhi = min(ya, yb), max(ya, yb)
    columns = [(r[0], r[2]) for r in obstacles if r[1] < yhi and r[3] > ylo]
    xm = _nearest(_free(columns, lo, hi), (a1[0] + b1[0]) / 2)
    if xm is None:
        return None
    return [a1, (xm, ya), (xm, yb), b1]


def _ray(x: float, y: float, obstacles: list[Rect]) -> tuple[float, float] | None:
    """How far a vertical line at ``x`` is free above and below ``y`` (None: ``y`` is inside a card)."""
    up, down = -math.inf, math.inf
    for r in obstacles:
        if r[0] < x < r[2]:
            if r[1] < y < r[3]:
                return None
            if r[3] <= y:
                up = max(up, r[3])
            else:
                down = min(down, r[1])
    return up, down


def _track_route(a1: Point, b1: Point, obstacles: list[Rect], ymin: float, ymax: float) -> list[Point] | None:
    """Up or down to a free horizontal track within [ymin, ymax] (the rows whose cards are
    known), along it, then back to the target's row."""
    ra, rb = _ray(a1[0], a1[1], obstacles), _ray(b1[0], b1[1], obstacles)
    if ra is None or rb is None:
        return None
    top, bottom = max(ra[0], rb[0], ymin), min(ra[1], rb[1], ymax)
    if bottom < top:
        return None
    lo, hi = min(a1[0], b1[0]), max(a1[0], b1[0])
    rows = [(r[1], r[3]) for r in obstacles if r[0] < hi and r[2] > lo]
    yt = _nearest(_free(rows, top, bottom), (a1[1] + b1[1]) / 2)
    if yt is None:
        return None
    return [a1, (a1[0], yt), (b1[0], yt), b1]


def _simplify(points: list[Point]) -> list[Point]:
    out: list[Point] = []
    for p in points:
        if out and abs(out[-1][0] - p[0]) < 1e-6 and abs(out[-1][1] - p[1]) < 1e-6:
            continue
        if len(out) >= 2:
            o, q = out[-2], out[-1]
            if (abs(o[0] - q[0]) < 1e-6 and abs(q[0] - p[0]) < 1e-6) or (
                abs(o[1] - q[1]) < 1e-6 and abs(q[1] - p[1]) < 1e-6
            ):
                out[-1] = p  # collinear: drop the middle point
                continue
        out.append(p)
    return out
