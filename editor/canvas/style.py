"""Canvas look and node geometry.

Geometry is a pure function of the model (:func:`node_layout`), so frame-all and
auto-layout can work from the document without measuring items, and a NodeItem only
re-derives it when its node's data changes. Colours, pens and fonts are built once.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QFontMetricsF, QPen

from engine import Node, NodeSpec, handle_label, source_handles, spec_for

TITLE_H = 36.0
LINE_H = 18.0
ROW_H = 24.0
PAD = 8.0
SUB_ROW_H = 22.0
PORT_R = 6.0
PORT_HIT_R = 13.0
BADGE_R = 9.0
CORNER = 8.0
GRID = 20.0
# Node widths come from the kind's spec (``width``); an agent drawn as a subagent is narrower,
# and a node of an unknown type is drawn as wide as an agent (as before kinds were specs).
SUBAGENT_WIDTH = 236.0
UNKNOWN_WIDTH = 248.0

CANVAS_BG = QColor("#1b1e25")
GRID_DOT = QColor("#2c313c")
GRID_DOT_MAJOR = QColor("#3a404d")
NODE_BG = QColor("#262a33")
NODE_BORDER = QColor("#3a3f4b")
NODE_TEXT = QColor("#e6e9ef")
NODE_MUTED = QColor("#9aa3b2")
SELECT = QColor("#ffb454")
TARGET_OK = QColor("#3fb950")
ERROR = QColor("#f85149")
WARNING = QColor("#d29922")
EDGE = QColor("#8a93a6")
EDGE_SUB = QColor("#2bb6a8")
PORT_FILL = QColor("#1b1e25")
FIND_HIT = QColor("#58a6ff")
# Run states drawn on the canvas during and after a run (display only, never undoable).
RUN_COLOR = {
    "running": QColor("#58a6ff"),
    "done": QColor("#3fb950"),
    "failed": QColor("#f85149"),
    "waiting": QColor("#ffb454"),
    "queued": QColor("#d29922"),
    "retrying": QColor("#e3a008"),  # between attempts of a retry policy
    "skipped": QColor("#a371f7"),  # failed, skipped by its policy: the branch went on
    "cached": QColor("#39c5cf"),  # reused from an earlier run (run from a node): not run again
}
PINNED_COLOR = QColor("#db61a2")
RUN_LINK = QColor("#58a6ff")
TAKEN_PORT = RUN_LINK  # an output handle the run followed (the branch chosen): marked like its link
# The error port of a working node and its links: red, dashed (docs/design.md "Step policies").
ERROR_PORT = QColor("#f85149")
ERROR_LINK = QColor("#e5534b")
ERROR_HANDLE = "error"
# Run badges above a node: a retry in progress, a loop's iteration.
BADGE_RETRY = QColor("#b45309")  # white text on these reaches WCAG AA
BADGE_LOOP = QColor("#7c3aed")
BADGE_JOIN = QColor("#1f7a7a")
RUN_STATE_LABEL = {
    "running": "Running",
    "done": "Done",
    "failed": "Failed",
    "waiting": "Waiting for approval",
    "queued": "Approval queued",
    "not_reached": "Not reached",
    "skipped": "Skipped after an error",
    "retrying": "Retrying",
    "cached": "From cache (reused from an earlier run)",
}

SUBAGENT_COLOR = QColor("#1f9a8f")
UNKNOWN_COLOR = QColor("#6b7280")  # a node of an unknown type: grey, so it is not taken for an agent


class _KindColors(dict):
    """Accent colour by kind, from the kind's spec (``color``), made once per kind."""

    def __missing__(self, kind: str) -> QColor:
        spec = spec_for(kind)
        color = QColor(spec.color) if spec is not None else UNKNOWN_COLOR
        self[kind] = color
        return color

    def get(self, kind, default=None):  # type: ignore[override]
        return self[kind]


KIND_COLOR: dict[str, QColor] = _KindColors(subagent=SUBAGENT_COLOR)
OUT_LABEL = {
    "output": "Next step",
    "approve": "Approve",
    "reject": "Reject",
    "false": "Else",
    "subagent": "Subagents",
    "error": "On error",
}


@cache
def font(role: str) -> QFont:
    f = QFont()
    if role == "title":
        f.setPointSizeF(10.5)
        f.setBold(True)
    elif role == "title-large":  # drawn at 50-70 % zoom
        f.setPointSizeF(14.0)
        f.setBold(True)
    elif role == "title-huge":  # drawn at 40-50 % zoom
        f.setPointSizeF(17.0)
        f.setBold(True)
    elif role == "title-far":  # drawn alone at 28-40 % zoom
        f.setPointSizeF(24.0)
        f.setBold(True)
    elif role == "title-farther":  # drawn alone at 20-28 % zoom
        f.setPointSizeF(33.0)
        f.setBold(True)
    elif role == "body-large":
        f.setPointSizeF(13.0)
    elif role == "body-huge":
        f.setPointSizeF(16.0)
    elif role == "small":
        f.setPointSizeF(8.5)
    elif role == "badge":
        f.setPointSizeF(8.5)
        f.setBold(True)
    else:
        f.setPointSizeF(9.5)
    return f


@cache
def metrics(role: str) -> QFontMetricsF:
    return QFontMetricsF(font(role))


@cache
def pen(color: str, width: float = 1.0, dashed: bool = False) -> QPen:
    p = QPen(QColor(color), width)
    p.setCosmetic(False)
    p.setCapStyle(Qt.PenCapStyle.RoundCap)
    if dashed:
        p.setStyle(Qt.PenStyle.CustomDashLine)
        p.setDashPattern([5.0, 4.0])
    return p


def node_kind(node: Node, as_subagent: bool) -> str:
    """The look a node is drawn with: its kind, or ``subagent`` for an agent shown as one."""
    spec = spec_for(node.type)
    if spec is not None and spec.tool_capable and as_subagent:
        return "subagent"
    return node.type


def kind_label(kind: str) -> str:
    """How the canvas names a kind (``Condition`` for ``if``); ``subagent`` is the agent's look."""
    if kind == "subagent":
        return "Subagent"
    spec = spec_for(kind)
    return (spec.label or kind) if spec is not None else "Unknown type"


def node_title(node: Node) -> str:
    spec = spec_for(node.type)
    return _clip(spec.title(node.data) if spec is not None else node.type)  # elided when drawn


def out_label(node: Node, handle: str) -> str:
    if handle.startswith("condition-"):
        return handle_label(node, handle).split(": ", 1)[-1]
    if handle in OUT_LABEL:
        return OUT_LABEL[handle]
    label = handle_label(node, handle)  # a kind's own handles (loop: Body, Done)
    return label if label and label != handle else handle


def has_error_port(node: Node, kind: str) -> bool:
    """A working node (its spec says it ``works``) has the ``error`` source handle; the spec's
    ``outputs`` leaves it out, so the canvas draws it apart, below the other outputs."""
    spec = spec_for(node.type)
    return (
        kind != "subagent"
        and spec is not None
        and bool(getattr(spec, "works", False))
        and ERROR_HANDLE not in spec.outputs(node.data)
    )


def handle_tooltip(node: Node, handle: str) -> str:
    if handle == "input":
        return "Input"
    if handle.startswith("condition-"):
        return handle_label(node, handle)
    if handle == ERROR_HANDLE:
        return "On error: followed when the node fails (the output is the error message) instead of failing the run"
    return OUT_LABEL.get(handle, handle_label(node, handle))


_PREVIEW_CHARS = 400  # far more than a node shows: a preview is elided, and eliding costs per character


def _one_line(text: str) -> str:
    return " ".join(text[:_PREVIEW_CHARS].split())


def _clip(text: str) -> str:
    """At most a preview's length of ``text`` (a card elides it to its width when drawn)."""
    return text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS]


@dataclass(slots=True)
class NodeLayout:
    kind: str
    title: str
    width: float
    height: float
    input_pos: QPointF | None
    outputs: list[tuple[str, QPointF, str]] = field(default_factory=list)  # handle, position, label
    lines: list[tuple[str, bool]] = field(default_factory=list)  # text, muted
    collapsed: bool = False
    icon: str = "agent"  # the title glyph (the kind's icon name)
    label: str = "Agent"  # the kind's name, for tooltips

    def port_pos(self, handle: str | None) -> QPointF:
        if handle in (None, "input"):
            return self.input_pos or QPointF(0, TITLE_H / 2)
        if handle == "true":
            handle = "condition-0"
        for h, p, _ in self.outputs:
            if h == handle:
                return p
        return QPointF(self.width, TITLE_H / 2)  # a handle the node lacks (invalid file): still drawable


def node_layout(node: Node, as_subagent: bool = False) -> NodeLayout:
    kind = node_kind(node, as_subagent)
    spec = spec_for(node.type)
    width = SUBAGENT_WIDTH if kind == "subagent" else spec.width if spec is not None else UNKNOWN_WIDTH
    collapsed = bool(node.data.collapsed)
    handles = source_handles(node)
    if kind == "subagent":
        handles = [h for h in handles if h == "subagent"]
    side = [h for h in handles if h != "subagent"]
    has_sub = "subagent" in handles
    has_error = has_error_port(node, kind)
    lines: list[tuple[str, bool]] = _summary(spec, node)
    if collapsed:
        height = TITLE_H
        mid = TITLE_H / 2
        outputs = [(h, QPointF(width, mid), out_label(node, h)) for h in side]
        if has_error:  # at the bottom corner, apart from the normal output
            outputs.append((ERROR_HANDLE, QPointF(width - 14.0, height), OUT_LABEL[ERROR_HANDLE]))
        if has_sub:
            outputs.append(("subagent", QPointF(width / 2, height), OUT_LABEL["subagent"]))
        lines = []
    else:
        y = TITLE_H + (PAD + len(lines) * LINE_H if lines else 0.0) + 4.0
        outputs = []
        for h in side:
            outputs.append((h, QPointF(width, y + ROW_H / 2), out_label(node, h)))
            y += ROW_H
        if has_error:  # its own row after a gap: drawn apart from the normal outputs
            y += 4.0
            outputs.append((ERROR_HANDLE, QPointF(width, y + ROW_H / 2), OUT_LABEL[ERROR_HANDLE]))
            y += ROW_H
        y += 6.0
        if has_sub:
            y += SUB_ROW_H
        height = max(y, TITLE_H + 28.0)
        if has_sub:
            outputs.append(("subagent", QPointF(width / 2, height), OUT_LABEL["subagent"]))
    if kind == "subagent":
        input_pos: QPointF | None = QPointF(width / 2, 0.0)
    elif spec is not None and spec.inputs:
        input_pos = QPointF(0.0, TITLE_H / 2)
    else:
        input_pos = None
    icon = "subagent" if kind == "subagent" else (spec.icon or node.type) if spec is not None else "warning"
    return NodeLayout(
        kind, node_title(node), width, height, input_pos, outputs, lines, collapsed, icon, kind_label(kind)
    )


def _summary(spec: NodeSpec | None, node: Node) -> list[tuple[str, bool]]:
    if spec is None:  # say what it is: drawn like a known kind, it would be taken for one
        return [(f"Unknown node type '{node.type}'", False), ("Kept in the file as it is; it cannot run", True)]
    try:
        # Capped: a summary may quote a whole field (a 50 MB start input), and a card shows a line
        # of it, elided; measuring and drawing the rest took seconds per paint.
        return [(_clip(str(text)), bool(muted)) for text, muted in spec.summary(node.data)]
    except Exception:  # a plug-in's bug: the node is still drawn
        return []


def node_size(node: Node, as_subagent: bool = False) -> tuple[float, float]:
    lay = node_layout(node, as_subagent or bool(getattr(node.data, "subagent", False)))
    return lay.width, lay.height


def node_rect(node: Node, as_subagent: bool = False) -> QRectF:
    w, h = node_size(node, as_subagent)
    return QRectF(node.x, node.y, w, h)
