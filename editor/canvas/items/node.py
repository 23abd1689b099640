"""NodeItem: paints one node - body, title, preview text, ports and validation badge.

Holds the node id and display state only (no document, view or engine references). Its
geometry comes from :func:`editor.canvas.style.node_layout` and is rebuilt when the node's
data changes (:meth:`set_node`). Uses ``DeviceCoordinateCache``; level of detail skips
text when zoomed out.
"""

from __future__ import annotations

import textwrap

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QIcon, QPainter, QPainterPath, QStaticText
from PySide6.QtWidgets import QGraphicsItem, QGraphicsSceneHoverEvent, QStyleOptionGraphicsItem, QWidget

from engine import Node

from ...resources import icon_path
from ..style import (
    BADGE_R,
    CORNER,
    ERROR,
    ERROR_HANDLE,
    ERROR_PORT,
    FIND_HIT,
    GRID,
    KIND_COLOR,
    LINE_H,
    NODE_BG,
    NODE_BORDER,
    NODE_MUTED,
    NODE_TEXT,
    PAD,
    PINNED_COLOR,
    PORT_HIT_R,
    ROW_H,
    RUN_COLOR,
    RUN_STATE_LABEL,
    SELECT,
    TAKEN_PORT,
    TARGET_OK,
    TITLE_H,
    WARNING,
    NodeLayout,
    font,
    handle_tooltip,
    metrics,
    node_layout,
    pen,
)
from .node_marks import (
    PREVIEW_GAP,
    PREVIEW_LINE_H,
    STATS_H,
    STROKED_GLYPHS,
    kind_glyph,
    paint_preview,
    paint_run_badge,
    paint_run_mark,
)
from .port import PortHit, hit, paint_port

_ERROR_TEXT = "#ff9b94"  # the error port's label (readable on the node body)
_PORT_COLOR = QColor("#c9d1d9")
PORT_LOD = 0.12  # zoomed out further, cards are drawn without their handles (under 2 px across)
_NODE_FLAGS = (  # (made once: a big document makes thousands of cards)
    QGraphicsItem.GraphicsItemFlag.ItemIsSelectable
    | QGraphicsItem.GraphicsItemFlag.ItemIsMovable
    | QGraphicsItem.GraphicsItemFlag.ItemSendsGeometryChanges
)
_DEVICE_CACHE = QGraphicsItem.CacheMode.DeviceCoordinateCache
_POSITION_CHANGE = QGraphicsItem.GraphicsItemChange.ItemPositionChange
_POSITION_CHANGED = QGraphicsItem.GraphicsItemChange.ItemPositionHasChanged


class NodeItem(QGraphicsItem):
    def __init__(self, node: Node, as_subagent: bool = False) -> None:
        super().__init__()
        self.node_id = node.id
        self.layout: NodeLayout = node_layout(node, as_subagent)
        self._port_tips = self._tips(node)
        self._rect = QRectF()
        # The far-zoom title, laid out once per layout and size: (layout, role, text, where)
        self._far_title: tuple[NodeLayout, str, QStaticText, QPointF] | None = None
        self.connected: set[str] = set()  # handles with at least one link
        self.issue_severity: str | None = None
        self.issue_text = ""
        self.dimmed = False
        self.target_state: str | None = None  # "ok" | "refused" while a link hovers it
        self.found = False
        self.snap = False
        # Run state (display only): running/done/failed/waiting/queued/not_reached or None.
        self.run_state: str | None = None
        self.run_tip = ""
        self.run_badge = ""  # "attempt 2 of 4" while retrying, "iteration 3" for a loop (display only)
        self.run_badge_kind = ""  # "retry" | "loop" | "join"
        self.taken: frozenset[str] = frozenset()  # output handles the run shown followed (display only)
        self.pulse = 0.0  # 0..1, advanced by the scene while the node runs
        self.pinned = _is_pinned(node)  # its data holds a pinnedOutput: it does not run
        # After a run (display only): "1.2 s · 340 tokens" and the last output's first lines,
        # elided to the card's width once (not in paint), drawn under the card.
        self.run_stats = ""
        self.output_text = ""
        self._preview_lines: list[str] = []
        self._update_rect()
        self.setFlags(_NODE_FLAGS)
        self.setAcceptHoverEvents(True)
        self.setCacheMode(_DEVICE_CACHE)
        self.setPos(node.x, node.y)
        self.setToolTip(self._body_tooltip())

    # ------------------------------------------------------------------ state from the scene
    def _tips(self, node: Node) -> dict[str, str]:
        # Display state copied out of the model: the item keeps no reference to it.
        return {h: handle_tooltip(node, h) for h in [h for h, _, _ in self.layout.outputs] + ["input"]}

    def set_node(self, node: Node, as_subagent: bool) -> None:
        self.prepareGeometryChange()
        self.layout = node_layout(node, as_subagent)
        self._port_tips = self._tips(node)
        self.pinned = _is_pinned(node)
        self._elide_preview()
        self._update_rect()
        self.setToolTip(self._body_tooltip())
        self.update()

    def _update_rect(self) -> None:
        lay = self.layout
        # Room for ports on the sides and the badge, which grows when zoomed out.
        # Room for ports on the sides, the badge (which grows when zoomed out) and a run halo.
        # The top leaves room for a run badge, which also grows when zoomed out (up to 2 x 15 px).
        self._rect = QRectF(
            -16, -36, lay.width + 2 * BADGE_R + 20, lay.height + 36 + max(2 * BADGE_R + 2, self._preview_height() + 4)
        )

    def _preview_height(self) -> float:
        if not self.run_stats and not self._preview_lines:
            return 0.0
        return PREVIEW_GAP + (STATS_H if self.run_stats else 0.0) + PREVIEW_LINE_H * len(self._preview_lines) + 6

    def _elide_preview(self) -> None:
        fm = metrics("small")
        width = self.layout.width - 12
        self._preview_lines = [
            fm.elidedText(line, Qt.TextElideMode.ElideRight, width) for line in self.output_text.splitlines()
        ]

    def set_output_preview(self, stats: str, text: str) -> None:
        """After a run: the step's duration and tokens, and its output's first lines ("": none)."""
        if (stats, text) == (self.run_stats, self.output_text):
            return
        self.prepareGeometryChange()
        self.run_stats, self.output_text = stats, text
        self._elide_preview()
        self._update_rect()
        self.update()

    def set_issues(self, severity: str | None, text: str) -> None:
        if (severity, text) != (self.issue_severity, self.issue_text):
            self.issue_severity, self.issue_text = severity, text
            self.update()

    def set_dimmed(self, dimmed: bool) -> None:
        if dimmed != self.dimmed:
            self.dimmed = dimmed
            self.update()

    def set_target_state(self, state: str | None) -> None:
        if state != self.target_state:
            self.target_state = state
            self.update()

    def set_found(self, found: bool) -> None:
        if found != self.found:
            self.found = found
            self.update()

    def set_run_state(self, state: str | None, tip: str = "") -> None:
        if (state, tip) != (self.run_state, self.run_tip):
            self.run_state, self.run_tip = state, tip
            self.setToolTip(self._body_tooltip())
            self.update()

    def set_run_badge(self, text: str, kind: str = "") -> None:
        if (text, kind) != (self.run_badge, self.run_badge_kind):
            self.run_badge, self.run_badge_kind = text, kind
            self.setToolTip(self._body_tooltip())
            self.update()

    def set_taken(self, handles: frozenset[str]) -> None:
        """Mark the output handles the run followed (the branch a condition or a router chose)."""
        if handles != self.taken:
            self.taken = handles
            self.update()

    def set_pulse(self, phase: float) -> None:
        self.pulse = phase
        self.update()

    def set_connected(self, handles: set[str]) -> None:
        if handles != self.connected:
            self.connected = set(handles)
            self.update()

    def port_scene_pos(self, handle: str | None) -> QPointF:
        return self.pos() + self.layout.port_pos(handle)

    def port_at(self, local: QPointF, radius: float = PORT_HIT_R) -> PortHit | None:
        lay = self.layout
        for h, p, _ in lay.outputs:
            if hit(local, p, radius):
                return PortHit(self.node_id, h, True)
        if lay.input_pos is not None and hit(local, lay.input_pos, radius):
            return PortHit(self.node_id, "input", False)
        return None

    def chevron_rect(self) -> QRectF:
        """The collapse/expand toggle at the right of the title bar."""
        return QRectF(self.layout.width - 30, (TITLE_H - 20) / 2, 20, 20)

    def badge_rect(self) -> QRectF:
        w = self.layout.width
        return QRectF(w - BADGE_R - 2, -BADGE_R + 2, 2 * BADGE_R, 2 * BADGE_R)

    def _body_tooltip(self) -> str:
        lay = self.layout
        kind = lay.label
        text = f"{lay.title} ({kind})" if lay.title != kind else kind
        if lay.kind == "agent" and not any(h == "subagent" for h, _, _ in lay.outputs):
            text += "\nTo give it subagents, tick Subagents in the inspector (a handle appears at the bottom)."
        if self.pinned:
            text += "\nPinned: outputs its pinned value and does not run (unpin in the inspector's Run tab)."
        if self.run_badge:
            text += f"\n{self.run_badge[0].upper()}{self.run_badge[1:]}"
        if self.run_state:
            text += f"\n{RUN_STATE_LABEL.get(self.run_state, self.run_state)}"
            if self.run_tip:
                # Tooltips only wrap rich text: a provider's error (often 200+ characters)
                # made one line across the whole screen.
                text += ":\n" + textwrap.fill(self.run_tip, 90, break_long_words=False, break_on_hyphens=False)
        return text

    # ------------------------------------------------------------------ Qt overrides
    def boundingRect(self) -> QRectF:
        return self._rect

    def shape(self) -> QPainterPath:
        p = QPainterPath()
        p.addRect(QRectF(-PAD, 0, self.layout.width + 2 * PAD, self.layout.height + PAD))
        return p

    def itemChange(self, change: QGraphicsItem.GraphicsItemChange, value):
        # Qt calls this about ten times as a card is made (flags, position, tooltip, scene):
        # the enum members are module constants and the changes it does not handle return
        # ``value`` as the base class does, without a round trip through it.
        if change is _POSITION_CHANGE:
            # Whole pixels (or the grid) so saved files hold tidy coordinates.
            if self.snap:
                return QPointF(round(value.x() / GRID) * GRID, round(value.y() / GRID) * GRID)
            return QPointF(round(value.x()), round(value.y()))
        if change is _POSITION_CHANGED:
            scene = self.scene()
            if scene is not None and hasattr(scene, "node_item_moved"):
                scene.node_item_moved(self)
        return value

    def hoverMoveEvent(self, event: QGraphicsSceneHoverEvent) -> None:
        # The tooltip depends on what is under the pointer: a handle, the badge, or the body.
        pos = event.pos()
        port = self.port_at(pos, getattr(self.scene(), "port_hit_radius", PORT_HIT_R))
        if port is not None:
            tip = self._port_tips.get(port.handle, port.handle)
        elif self.issue_text and self.badge_rect().adjusted(-3, -3, 3, 3).contains(pos):
            tip = self.issue_text
        elif self.chevron_rect().contains(pos):
            tip = "Expand" if self.layout.collapsed else "Collapse to the title"
        else:
            tip = self._body_tooltip() + (f"\n{self.issue_text}" if self.issue_text else "")
        if tip != self.toolTip():
            self.setToolTip(tip)
        # A crosshair over handles says "drag from here to link".
        want = Qt.CursorShape.CrossCursor if port is not None else Qt.CursorShape.ArrowCursor
        if self.cursor().shape() != want:
            self.setCursor(want)
        super().hoverMoveEvent(event)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        lay = self.layout
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        color = KIND_COLOR[lay.kind]
        body = QRectF(0, 0, lay.width, lay.height)
        # Always set: the view runs with DontSavePainterState, so state leaks between items.
        painter.setOpacity(0.3 if self.dimmed else 0.45 if self.run_state in ("not_reached", "skipped") else 1.0)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, lod > 0.3)
        # Body and title bar
        if self.isSelected():
            border = pen(SELECT.name(), 2.5)
        elif self.target_state == "ok":
            border = pen(TARGET_OK.name(), 2.5)
        elif self.target_state == "refused":
            border = pen(ERROR.name(), 2.5)
        elif self.found:
            border = pen(FIND_HIT.name(), 2.5)
        else:
            border = pen(NODE_BORDER.name(), 1.0)
        ring = RUN_COLOR.get(self.run_state or "")
        if ring is not None:
            # A halo around the body: pulsing while running, solid for the other states. Its
            # width holds on screen when zoomed out (the default fit of a wide graph is ~50 %),
            # so states read at a glance; waiting and failed nodes also get a tinted glow, which
            # tells them from a selected node (its border is orange too).
            width = {"running": 2.0 + 3.0 * self.pulse, "waiting": 4.0, "failed": 3.5}.get(self.run_state or "", 2.5)
            width = min(width / min(max(lod, 0.01), 1.0), 9.0)
            halo = QColor(ring)
            if self.run_state == "running":
                halo.setAlphaF(0.45 + 0.55 * self.pulse)
            gap = 3.0 + width / 2
            outline = body.adjusted(-gap, -gap, gap, gap)
            if self.run_state in ("waiting", "failed"):
                glow = QColor(ring)
                glow.setAlphaF(0.22)
                painter.setPen(Qt.PenStyle.NoPen)
                painter.setBrush(QBrush(glow))
                painter.drawRoundedRect(outline, CORNER + gap, CORNER + gap)
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.setPen(
                pen(halo.name(QColor.NameFormat.HexArgb), width, self.run_state in ("queued", "retrying", "cached"))
            )
            painter.drawRoundedRect(outline, CORNER + gap, CORNER + gap)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QBrush(NODE_BG))
        painter.drawRoundedRect(body, CORNER, CORNER)
        painter.setBrush(QBrush(color))
        painter.drawPath(_title_bar(lay.width, lay.collapsed))
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.setPen(border)
        painter.drawRoundedRect(body, CORNER, CORNER)
        if lod >= 0.4:
            self._paint_text(painter, lay)
        elif lod >= 0.2:
            self._paint_far_title(painter, lay, lod)
        # Ports (below PORT_LOD a handle is a speck of a pixel or less: a fitted 2,000-card
        # graph paints 6,000 of them into the cards' caches on its first frame)
        port_color = _PORT_COLOR
        if lay.input_pos is not None and lod >= PORT_LOD:
            paint_port(
                painter,
                lay.input_pos,
                TARGET_OK if self.target_state == "ok" else port_color,
                "input" in self.connected,
                self.target_state == "ok",
            )
        for h, p, _ in lay.outputs if lod >= PORT_LOD else ():
            c = KIND_COLOR["subagent"] if h == "subagent" else ERROR_PORT if h == ERROR_HANDLE else port_color
            if h in self.taken:
                c = TAKEN_PORT
            paint_port(painter, p, c, h in self.connected or h in self.taken, h in self.taken)
        if self.run_badge and lod >= 0.2:
            paint_run_badge(
                painter,
                self.layout.width,
                self.run_badge,
                self.run_badge_kind,
                min(max(0.8 / max(lod, 0.01), 1.0), 2.0),
            )
        if self.pinned and lod >= 0.2:
            self._paint_pin(painter, lay)
        if (self.run_stats or self._preview_lines) and lod >= 0.4 and not self.dimmed:
            paint_preview(painter, lay, self.run_stats, self._preview_lines)
        if ring is not None and self.run_state in ("done", "failed", "waiting", "cached") and lod >= 0.2:
            paint_run_mark(painter, self.run_state, ring, min(max(0.8 / max(lod, 0.01), 1.0), 2.0))
        # Validation badge
        if self.issue_severity:
            b = self.badge_rect()
            if lod < 0.7:  # keep the badge noticeable when zoomed out
                grow = BADGE_R * (min(0.7 / max(lod, 0.01), 1.8) - 1)
                b = b.adjusted(-grow, -grow, grow, grow)
            painter.setPen(pen(NODE_BG.name(), 2.0))
            painter.setBrush(QBrush(ERROR if self.issue_severity == "error" else WARNING))
            painter.drawEllipse(b)
            if lod >= 0.3:
                painter.setPen(pen("#ffffff", 1.0))
                painter.setFont(font("badge"))
                painter.drawText(b, Qt.AlignmentFlag.AlignCenter, "!")
        painter.setOpacity(1.0)

    def _paint_pin(self, painter: QPainter, lay: NodeLayout) -> None:
        """A pin mark on the bottom-right corner, the pin icon the inspector shows too: the
        node's output is pinned (it does not run)."""
        c = QPointF(lay.width - 2.0, lay.height - 2.0)
        painter.setPen(pen(PINNED_COLOR.name(), 1.5))
        painter.setBrush(QBrush(NODE_BG))
        painter.drawEllipse(c, 10.0, 10.0)
        pin_icon().paint(painter, QRectF(c.x() - 7.0, c.y() - 7.0, 14.0, 14.0).toRect())

    def _paint_far_title(self, painter: QPainter, lay: NodeLayout, lod: float) -> None:
        """Zoomed far out (20-40 %: a run's whole graph beside the console), the title alone,
        large enough to read, across the card: the cards are told apart by more than colour."""
        role = "title-far" if lod >= 0.28 else "title-farther"
        cached = self._far_title
        if cached is None or cached[0] is not lay or cached[1] != role:
            # Laid out once (a QStaticText), not at every paint: a fitted view of a big graph
            # paints thousands of these.
            fm = metrics(role)
            below = lay.height - TITLE_H  # the body under the title bar, if the text fits there
            rect = (
                QRectF(8, TITLE_H, lay.width - 16, below)
                if below >= fm.height()
                else QRectF(8, 0, lay.width - 16, lay.height)
            )
            text = QStaticText(fm.elidedText(lay.title, Qt.TextElideMode.ElideRight, rect.width()))
            text.prepare(font=font(role))
            size = text.size()
            cached = self._far_title = (
                lay,
                role,
                text,
                QPointF(rect.center().x() - size.width() / 2, rect.center().y() - size.height() / 2),
            )
        painter.setFont(font(role))
        painter.setPen(pen(NODE_TEXT.name()))
        painter.drawStaticText(cached[3], cached[2])

    def _paint_text(self, painter: QPainter, lay: NodeLayout) -> None:
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(QBrush(QColor(255, 255, 255, 235)))
        glyph = kind_glyph(lay.icon, 18, TITLE_H / 2)
        painter.drawPath(glyph)
        if lay.icon in STROKED_GLYPHS:  # the check mark is a stroke, not a fill
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.setPen(pen("#ffffff", 2.2))
            painter.drawPath(glyph)
        lod = QStyleOptionGraphicsItem.levelOfDetailFromTransform(painter.worldTransform())
        # Zoomed out, titles keep a readable size on screen and the small print is left out.
        compact = lod < 0.7
        role = "title"
        if compact:
            role = "title-large" if lod >= 0.6 else "title-huge"
        body_role = "body-large" if lod >= 0.6 else "body-huge"
        # Collapse chevron: pointing down when expanded, right when collapsed.
        c = self.chevron_rect().center()
        chevron = QPainterPath()
        if lay.collapsed:
            chevron.moveTo(c.x() - 2.5, c.y() - 5)
            chevron.lineTo(c.x() + 2.5, c.y())
            chevron.lineTo(c.x() - 2.5, c.y() + 5)
        else:
            chevron.moveTo(c.x() - 5, c.y() - 2.5)
            chevron.lineTo(c.x(), c.y() + 2.5)
            chevron.lineTo(c.x() + 5, c.y() - 2.5)
        painter.setBrush(Qt.BrushStyle.NoBrush)
        painter.setPen(pen("#e6e9ef", 1.8))
        painter.drawPath(chevron)
        painter.setFont(font(role))
        painter.setPen(pen(NODE_TEXT.name()))
        right = 36
        text_w = lay.width - 34 - right
        painter.drawText(
            QRectF(32, 0, text_w, TITLE_H),
            Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignLeft,
            metrics(role).elidedText(lay.title, Qt.TextElideMode.ElideRight, text_w),
        )
        if lay.collapsed:
            return
        if compact:
            painter.setFont(font(body_role))
            fm = metrics(body_role)
            y = TITLE_H + PAD - 2
            # The most telling line: the last that is not small print (an agent's prompt, a web
            # page's URL rather than its selector, a flow node's flow rather than its inputs).
            plain = [line for line in lay.lines if not line[1]]
            for text, _muted in (plain or lay.lines)[-1:]:
                painter.setPen(pen(NODE_TEXT.name()))
                painter.drawText(
                    QRectF(12, y, lay.width - 24, LINE_H * len(lay.lines) + 4),
                    Qt.AlignmentFlag.AlignVCenter,
                    fm.elidedText(text, Qt.TextElideMode.ElideRight, lay.width - 24),
                )
            painter.setPen(pen(NODE_MUTED.name()))
            for h, p, label in lay.outputs:
                if h != "subagent" and len(lay.outputs) > 1:
                    painter.drawText(
                        QRectF(12, p.y() - ROW_H / 2 - 2, lay.width - 26, ROW_H + 4),
                        Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                        fm.elidedText(label, Qt.TextElideMode.ElideRight, lay.width - 40),
                    )
            return
        painter.setFont(font("body"))
        fm = metrics("body")
        y = TITLE_H + PAD
        for text, muted in lay.lines:
            painter.setPen(pen((NODE_MUTED if muted else NODE_TEXT).name()))
            painter.drawText(
                QRectF(12, y, lay.width - 24, LINE_H),
                Qt.AlignmentFlag.AlignVCenter,
                fm.elidedText(text, Qt.TextElideMode.ElideRight, lay.width - 24),
            )
            y += LINE_H
        painter.setFont(font("small"))
        sm = metrics("small")
        painter.setPen(pen(NODE_MUTED.name()))
        for h, p, label in lay.outputs:
            if h == "subagent":
                painter.drawText(QRectF(0, p.y() - 22, lay.width, 16), Qt.AlignmentFlag.AlignCenter, label)
            else:
                taken = h in self.taken and len(lay.outputs) > 1
                painter.setPen(
                    pen(TAKEN_PORT.name() if taken else _ERROR_TEXT if h == ERROR_HANDLE else NODE_MUTED.name())
                )
                text = f"\u2713 {label}" if taken else label  # the branch the run took
                painter.drawText(
                    QRectF(12, p.y() - ROW_H / 2, lay.width - 26, ROW_H),
                    Qt.AlignmentFlag.AlignVCenter | Qt.AlignmentFlag.AlignRight,
                    sm.elidedText(text, Qt.TextElideMode.ElideMiddle, lay.width - 40),
                )


_TITLE_BARS: dict[tuple[float, bool], QPainterPath] = {}


def _title_bar(width: float, collapsed: bool) -> QPainterPath:
    """The title bar's shape (rounded top corners; all four when collapsed), made once per
    width: simplifying it took a tenth of a fitted 2,000-card first paint."""
    path = _TITLE_BARS.get((width, collapsed))
    if path is None:
        title = QPainterPath()
        title.addRoundedRect(QRectF(0, 0, width, TITLE_H), CORNER, CORNER)
        if not collapsed:
            title.addRect(QRectF(0, TITLE_H - CORNER, width, CORNER))
        title.setFillRule(Qt.FillRule.WindingFill)
        path = _TITLE_BARS[(width, collapsed)] = title.simplified()
    return path


_PIN_ICON: list[QIcon] = []


def pin_icon() -> QIcon:
    """The pin icon (resources/icons/pin.svg), made once (it needs the application)."""
    if not _PIN_ICON:
        _PIN_ICON.append(QIcon(icon_path("pin")))
    return _PIN_ICON[0]


def _is_pinned(node: Node) -> bool:
    return getattr(node.data, "pinnedOutput", None) is not None
