"""Showing content: agent responses as Markdown, JSON pretty-printed and highlighted with
pygments (inline styles, so no style sheet is needed), everything else as plain text;
and :class:`NodeRunDetails`, the inspector's run tab for one node.

Invariants
* Rendering never raises on odd content: anything that is not valid JSON is text.
* Highlighted JSON is HTML with inline styles only (``HtmlFormatter(noclasses=True)``),
  which QTextBrowser renders without a style sheet.
"""

from __future__ import annotations

import json
from functools import lru_cache
from html import escape
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QIcon, QImage, QPixmap
from PySide6.QtWidgets import (
    QFormLayout,
    QFrame,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from engine import EventType, format_duration

from ..code_style import FlowdeskDarkStyle
from ..resources import icon_path
from .log_model import STREAMING

__all__ = ["render_content", "highlight_json", "NodeRunDetails", "pretty_json", "format_usage"]

MARKDOWN_TYPES = frozenset({str(EventType.LLM_RESPONSE), STREAMING, str(EventType.NODE_OUTPUT)})


@lru_cache(maxsize=1)
def _formatter() -> Any:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(noclasses=True, style=FlowdeskDarkStyle, nobackground=True)


@lru_cache(maxsize=1)
def _lexer() -> Any:
    from pygments.lexers import JsonLexer

    return JsonLexer()


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def highlight_json(value: Any) -> str:
    """HTML (inline styles) of ``value`` pretty-printed as JSON."""
    from pygments import highlight

    html = highlight(pretty_json(value), _lexer(), _formatter())
    # Qt's rich text never wraps a <pre>: a div with pre-wrap keeps the layout and wraps long strings
    html = html.replace('<pre style="', '<div style="white-space: pre-wrap; font-family: monospace; ', 1)
    html = html.replace("<pre>", '<div style="white-space: pre-wrap; font-family: monospace">', 1)
    html = html.replace("</pre>", "</div>", 1)
    return html


def parse_json_container(text: str) -> Any:
    """The decoded value when ``text`` is a JSON object or array, else None."""
    s = text.lstrip()
    if not s or s[0] not in "[{":
        return None
    try:
        value = json.loads(text)
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, (dict, list)) else None


def render_content(browser: QTextBrowser, kind: str, content: str) -> str:
    """Show ``content`` in ``browser`` as the entry type asks; returns "markdown", "json" or "text"."""
    value = parse_json_container(content)
    if kind in MARKDOWN_TYPES and value is None:  # (a structured answer is JSON, shown as such)
        browser.setMarkdown(content)
        return "markdown"
    if value is not None:
        browser.setHtml(highlight_json(value))
        return "json"
    browser.setPlainText(content)
    return "text"


def format_usage(usage: dict[str, int] | None) -> str:
    if not usage:
        return "—"
    p, c = usage.get("prompt_tokens"), usage.get("completion_tokens")
    parts = []
    if p is not None:
        parts.append(f"{p} in")
    if c is not None:
        parts.append(f"{c} out")
    return " · ".join(parts) or json.dumps(usage)


class NodeRunDetails(QWidget):
    """A node's last input, output, duration, tokens (and error) in the current or shown run,
    and its pinned output: "Pin this output" (the last one), "Pin a value…" (typed), "Unpin"."""

    pin_requested = Signal(str, object)  # node id, the value to pin
    unpin_requested = Signal(str)  # node id

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("nodeRunDetails")
        # Everything in a scroll area: squeezed below its minimum (a short console tab) the
        # State, Duration and Tokens rows were drawn on top of each other; now it scrolls.
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        self.scroll = QScrollArea()
        self.scroll.setObjectName("nodeRunScroll")
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QFrame.Shape.NoFrame)
        outer.addWidget(self.scroll)
        body = QWidget()
        body.setObjectName("nodeRunBody")
        self.scroll.setWidget(body)
        lay = QVBoxLayout(body)
        lay.setContentsMargins(6, 6, 6, 6)
        self.title = QLabel("Select a node to see what it did in the run.")
        self.title.setWordWrap(True)
        lay.addWidget(self.title)
        # Pinned output: a pinned node does not run and outputs its pinned value.
        self._pin_node: str | None = None
        self._pinned: Any = None
        pins = QHBoxLayout()
        pins.setSpacing(6)
        self.pin_label = QLabel("")
        self.pin_label.setObjectName("pinLabel")
        self.pin_label.setStyleSheet("color: #db61a2")
        # Wrapped, and never wider than the pane: one long line scrolled the inspector sideways
        # and clipped Input/Output (issue 30, item 25). The mark is the pin icon, not a glyph
        # the font may lack.
        self.pin_label.setWordWrap(True)
        self.pin_label.setTextFormat(Qt.TextFormat.RichText)
        self.pin_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.pin_label.setMinimumWidth(1)
        self.pin_button = QPushButton(QIcon(icon_path("pin")), "Pin output")
        self.pin_button.setObjectName("pinButton")
        self.pin_button.setToolTip(
            "Keep this output: the node will not run, its pinned output flows on (saved in the file)"
        )
        self.pin_value_button = QPushButton("Pin value…")
        self.pin_value_button.setToolTip("Pin a value you type: the node will not run, that value flows on")
        self.unpin_button = QPushButton("Unpin")
        self.unpin_button.setObjectName("unpinButton")
        for w in (self.pin_button, self.pin_value_button, self.unpin_button):
            pins.addWidget(w)
        pins.addStretch(1)
        self._pins = QWidget()
        self._pins.setLayout(pins)
        pins.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self._pins)
        lay.addWidget(self.pin_label)
        self._pins.setVisible(False)
        self.pin_label.setVisible(False)
        self.pin_button.clicked.connect(self._pin_last)
        self.pin_value_button.clicked.connect(self._pin_typed)
        self.unpin_button.clicked.connect(lambda: self._pin_node and self.unpin_requested.emit(self._pin_node))
        form = QFormLayout()
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight)
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        form.setRowWrapPolicy(QFormLayout.RowWrapPolicy.DontWrapRows)
        self.state_label = QLabel("—")
        self.duration_label = QLabel("—")
        self.tokens_label = QLabel("—")
        self.tokens_label.setWordWrap(True)  # a node called several times: its last call and its total
        self.error_label = QLabel("")
        self.error_label.setWordWrap(True)
        self.error_label.setStyleSheet("color: #b91c1c")
        form.addRow("State:", self.state_label)
        form.addRow("Duration:", self.duration_label)
        form.addRow("Tokens:", self.tokens_label)
        form.addRow("", self.error_label)
        lay.addLayout(form)
        lay.addWidget(QLabel("<b>Input</b>"))
        self.input_view = QTextBrowser()
        self.input_view.setObjectName("nodeInput")
        self.input_view.setMinimumHeight(64)
        lay.addWidget(self.input_view, 1)
        lay.addWidget(QLabel("<b>Output</b>"))
        self.output_view = QTextBrowser()
        self.output_view.setObjectName("nodeOutput")
        self.output_view.setMinimumHeight(64)
        lay.addWidget(self.output_view, 2)
        # A browser step's last screenshot, as a picture (scaled to the pane's width)
        self.screenshot_title = QLabel("<b>Screenshot</b>")
        self.screenshot = QLabel()
        self.screenshot.setObjectName("nodeScreenshot")
        self.screenshot.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        lay.addWidget(self.screenshot_title)
        lay.addWidget(self.screenshot)
        self.screenshot_title.setVisible(False)
        self.screenshot.setVisible(False)
        self.details: dict[str, Any] | None = None

    def set_pin(self, node_id: str | None, pinned: Any = None) -> None:
        """The node whose pin the buttons act on (None: no single node selected) and its pinned value."""
        self._pin_node, self._pinned = node_id, pinned
        self._pins.setVisible(node_id is not None)
        self._update_pin()

    def _update_pin(self) -> None:
        on = self._pinned is not None
        self.unpin_button.setEnabled(on)
        output = (self.details or {}).get("output")
        self.pin_button.setEnabled(self._pin_node is not None and output is not None)
        text = self._pinned if isinstance(self._pinned, str) else json.dumps(self._pinned, ensure_ascii=False)
        self.pin_label.setText(
            f'<img src="{escape(icon_path("pin"))}" width="14" height="14"> Pinned: {escape(preview_line(text))}'
            if on
            else ""
        )
        self.pin_label.setVisible(on and self._pin_node is not None)

    def _pin_last(self) -> None:
        output = (self.details or {}).get("output")
        if self._pin_node is not None and output is not None:
            self.pin_requested.emit(self._pin_node, output)

    def _pin_typed(self) -> None:
        if self._pin_node is None:
            return
        current = self._pinned if isinstance(self._pinned, str) else (self.details or {}).get("output") or ""
        text, ok = QInputDialog.getMultiLineText(
            self, "Pin a value", "The output this node gives instead of running:", current
        )
        if ok:
            self.pin_requested.emit(self._pin_node, text)

    def set_details(self, details: dict[str, Any] | None, name: str | None = None) -> None:
        self.details = details
        if self._pin_node is not None:
            self._update_pin()
        self._show_screenshot((details or {}).get("screenshot"))
        if not details:
            self.title.setText("Select a node to see what it did in the run.")
            for w in (self.state_label, self.duration_label, self.tokens_label):
                w.setText("—")
            self.error_label.setText("")
            self.input_view.clear()
            self.output_view.clear()
            return
        node = name or details.get("nodeId") or ""
        visits = details.get("visits") or 0
        self.title.setText(f"<b>{node}</b>" + (f" · ran {visits}×" if visits > 1 else ""))
        self.state_label.setText(details.get("state") or "not reached")
        self.duration_label.setText(format_duration(details.get("duration"), "—"))
        usage, total = details.get("usage"), details.get("totalUsage")
        tokens = format_usage(usage)
        if total and total != usage:  # called more than once: a loop's iterations, several subagent calls
            tokens += f" (last call) · {format_usage(total)} in this run"
        self.tokens_label.setText(tokens)
        self.error_label.setText(details.get("error") or "")
        render_content(self.input_view, "text", details.get("input") or "")
        output = details.get("output") or ""
        as_md = output and parse_json_container(output) is None
        render_content(self.output_view, str(EventType.LLM_RESPONSE) if as_md else "text", output)

    def _show_screenshot(self, png: Any) -> None:
        image = QImage.fromData(png) if isinstance(png, (bytes, bytearray)) and png else QImage()
        shown = not image.isNull()
        if shown:
            width = max(120, min(image.width(), self.scroll.viewport().width() - 16))
            self.screenshot.setPixmap(
                QPixmap.fromImage(image).scaledToWidth(width, Qt.TransformationMode.SmoothTransformation)
            )
        else:
            self.screenshot.clear()
        self.screenshot_title.setVisible(shown)
        self.screenshot.setVisible(shown)


def preview_line(text: str, limit: int = 80) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"
