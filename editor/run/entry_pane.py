"""The run console's "Entry" tab: one log entry in full, with its metadata and a Copy button.

Content is shown as its type asks (markdown answers, highlighted JSON, plain text); a
subagent call shows its typed fields and message as the JSON object the wire form has; a
step shows when it started, how and when it ended, and where the rest of it is.

An answer being streamed is rendered again as it grows, at most every
:data:`STREAM_REFRESH` seconds (the last piece always shown): rendering its whole text as
Markdown for every piece (twice per piece: the console shows the latest answer and the entry
that changed) took the window's time from painting the log's rows.
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, QUrl
from PySide6.QtGui import QImage, QTextDocument
from PySide6.QtWidgets import QHBoxLayout, QLabel, QTextBrowser, QToolButton, QVBoxLayout, QWidget

from engine import SUBAGENT_CALL_TYPES, SUBAGENT_FIELDS, EventType, format_duration

from .details import format_usage, highlight_json, render_content
from .log_model import STREAMING, LogEntry, format_time
from .log_view import TYPE_COLOURS, end_line

__all__ = ["EntryPane", "STREAM_REFRESH"]

STREAM_REFRESH = 0.05  # seconds between two renderings of a streamed answer's growing text
_PROMPT = "Select an entry to see it in full."


class EntryPane(QWidget):
    """Shows one :class:`LogEntry`; ``kind`` says how it was rendered (markdown, json or text)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        el = QVBoxLayout(self)
        el.setContentsMargins(4, 4, 4, 4)
        head = QHBoxLayout()
        self.header = QLabel(_PROMPT)
        self.header.setObjectName("entryHeader")
        self.header.setWordWrap(True)
        self.header.setTextFormat(Qt.TextFormat.RichText)
        head.addWidget(self.header, 1)
        self.copy_button = QToolButton()
        self.copy_button.setText("Copy")
        self.copy_button.setToolTip("Copy this entry's content")
        head.addWidget(self.copy_button, 0, Qt.AlignmentFlag.AlignTop)
        el.addLayout(head)
        self.view = QTextBrowser()
        self.view.setObjectName("entryView")
        self.view.setOpenExternalLinks(True)
        el.addWidget(self.view, 1)
        self.kind: str | None = None
        self.entry: LogEntry | None = None
        #: Reads a stored attachment's bytes by its id (a screenshot of a run read from the store,
        #: whose event keeps only the id): set by the console; None: only live events show one.
        self.attachment_source: Callable[[str], bytes | None] | None = None
        self._rendered = 0.0  # when the shown entry was last rendered (time.monotonic)
        self._later = QTimer(self)  # the streamed text that came since, rendered when it fires
        self._later.setSingleShot(True)
        self._later.timeout.connect(lambda: self.show_entry(self.entry))

    def copy_text(self) -> str:
        """What Copy puts on the clipboard: the entry's content; for a step, its summary as shown."""
        if self.entry is None:
            return ""
        return self.view.toPlainText() if self.kind == "step" else self.entry.content

    def clear(self) -> None:
        self.entry = None
        self.kind = None
        self.header.setText(_PROMPT)
        self.view.clear()

    def show_entry(self, entry: LogEntry | None) -> None:
        if entry is not None and entry is self.entry and entry.type == STREAMING:
            wait = self._rendered + STREAM_REFRESH - time.monotonic()
            if wait > 0:  # the same answer grew again within the interval: shown when it ends
                if not self._later.isActive():
                    self._later.start(max(1, round(wait * 1000)))
                return
        self._later.stop()
        self._rendered = time.monotonic()
        if entry is None:
            self.clear()
            return
        colour = TYPE_COLOURS.get(entry.type, "#475569")
        fields = entry.extra or {}
        meta = [format_time(entry.timestamp)]
        usage = fields.get("usage")
        if isinstance(usage, dict):
            meta.append(format_usage(usage) + " tokens")
        if entry.type == STREAMING:
            meta.append("streaming…")
        if entry.ended is not None:
            meta.append(f"streamed for {format_duration(entry.ended - entry.timestamp)}")
        if entry.type not in SUBAGENT_CALL_TYPES:
            shown = {k: v for k, v in fields.items() if k not in ("usage", "attachment") and v not in ("", None)}
            if shown:
                meta.append(", ".join(f"{k}: {v}" for k, v in shown.items()))
        # the node's id only where its name does not already carry it ("Approval (signoff)")
        name = entry.node_name
        ident = (
            ""
            if entry.node_id == name or name.endswith(f"({entry.node_id})")
            else f" <span style='color:#9ca3af'>({_esc(entry.node_id)})</span>"
        )
        self.header.setText(
            f"<b>{_esc(name)}</b>{ident} · "
            f"<span style='color:{colour}; font-weight:bold'>{_esc(entry.label)}</span> · "
            f"<span style='color:#6b7280'>{_esc(' · '.join(meta))}</span>"
        )
        bar = self.view.verticalScrollBar()
        same = entry is self.entry
        keep = bar.value()
        self.entry = entry
        if entry.type == EventType.STEP_START:
            self.view.setHtml(step_html(entry))
            self.kind = "step"
        elif entry.type in SUBAGENT_CALL_TYPES:
            call = {"type": entry.type, **{k: fields.get(k) for k in SUBAGENT_FIELDS}, "message": entry.content}
            self.view.setHtml(highlight_json(call))
            self.kind = "json"
        elif entry.type == "browser_screenshot":
            self.kind = "image" if self._show_image(fields) else render_content(self.view, "text", entry.content)
        else:
            self.kind = render_content(self.view, entry.type, entry.content)
        if entry.type == STREAMING:
            bar.setValue(bar.maximum())  # follow the text as it streams
        else:
            bar.setValue(min(keep, bar.maximum()) if same else 0)

    def picture(self, attachment: dict) -> bytes | None:
        """An attachment's bytes: the event's own (a live run), else the stored ones."""
        png: bytes | None = None
        data = attachment.get("data")
        if isinstance(data, str):
            try:
                png = base64.b64decode(data)
            except ValueError:
                png = None
        if png is None and self.attachment_source is not None and attachment.get("id"):
            try:
                png = self.attachment_source(str(attachment["id"]))
            except Exception:  # an unreadable store: the text is shown instead
                png = None
        return png

    def _show_image(self, fields: dict) -> bool:
        """A screenshot's picture in the pane (False: none to show)."""
        attachment = fields.get("attachment") if isinstance(fields.get("attachment"), dict) else {}
        png = self.picture(attachment)
        image = QImage.fromData(png) if png else QImage()
        if image.isNull():
            return False
        url = QUrl(f"flowdesk-shot:{attachment.get('id') or 'live'}")
        self.view.document().addResource(QTextDocument.ResourceType.ImageResource, url, image)
        width = min(image.width(), max(200, self.view.viewport().width() - 24))
        self.view.setHtml(f"<img src='{url.toString()}' width='{width}'>")
        return True


def step_html(entry: LogEntry) -> str:
    """A step's entry in full: its visit, when it started, how and when it ended (its
    ``step_end``, which the log shows on the step's row), and where its input and output are."""
    rows: list[tuple[str, str]] = []
    if entry.visit > 1:
        rows.append(("Visit", str(entry.visit)))
    rows.append(("Started", format_time(entry.timestamp)))
    end = entry.end
    if end is None:
        rows.append(("Status", "running…"))
    else:
        content = str(end.get("content") or "")
        status = str(end.get("status") or content or "done")
        rows.append(("Status", end_line(end, content)))
        ms = end.get("durationMs")
        if isinstance(ms, (int, float)) and not isinstance(ms, bool):
            rows.append(("Ended", format_time(entry.timestamp + ms / 1000)))
        if status != "done" and content and content != status:
            rows.append(("Error", content))
        if end.get("handle"):
            rows.append(("Went on by", f"its '{end['handle']}' link"))
    table = "".join(
        f"<tr><td style='color:#9ca3af; padding-right:12px'>{k}</td><td>{_esc(v)}</td></tr>" for k, v in rows
    )
    return (
        f"<p><b>{_esc(entry.content or entry.node_name)}</b></p><table>{table}</table>"
        "<p style='color:#9ca3af'>Its prompt, answer and other entries follow it in the log. "
        "What it received and passed on: the Node tab, and the inspector's Run tab.</p>"
    )


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
