"""A browser step's screenshot is shown as a picture in the console's entry pane: from a live
event's own bytes, and from the run store when the stored event keeps only the attachment's id."""

from __future__ import annotations

import base64

from PySide6.QtCore import QBuffer, QByteArray, QIODevice
from PySide6.QtGui import QColor, QImage

from editor.run.entry_pane import EntryPane
from editor.run.log_model import LogEntry


def _png(width: int = 64, height: int = 40) -> bytes:
    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(QColor("#1f883d"))
    data = QByteArray()
    buffer = QBuffer(data)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")
    return bytes(data)


def _entry(attachment: dict) -> LogEntry:
    extra = {"url": "http://127.0.0.1/login", "selector": "", "attachment": attachment}
    return LogEntry(0.0, "web", "Browser", "browser_screenshot", "screenshot · http://127.0.0.1/login · 1 KB", extra, 0)


def test_a_live_screenshot_is_shown_as_a_picture_and_the_header_has_no_base64(qtbot) -> None:
    pane = EntryPane()
    qtbot.addWidget(pane)
    png = _png()
    data = base64.b64encode(png).decode()
    pane.show_entry(_entry({"id": "web-1", "mime": "image/png", "size": len(png), "data": data}))
    assert pane.kind == "image"
    assert "<img" in pane.view.toHtml() and "flowdesk-shot:web-1" in pane.view.toHtml()
    assert data[:40] not in pane.header.text()


def test_a_stored_screenshot_is_read_from_the_store(qtbot) -> None:
    pane = EntryPane()
    qtbot.addWidget(pane)
    png = _png()
    asked: list[str] = []
    pane.attachment_source = lambda ident: asked.append(ident) or png
    pane.show_entry(_entry({"id": "web-2", "mime": "image/png", "size": len(png)}))
    assert asked == ["web-2"] and pane.kind == "image"


def test_a_missing_picture_shows_the_text(qtbot) -> None:
    pane = EntryPane()
    qtbot.addWidget(pane)
    pane.show_entry(_entry({"id": "gone", "mime": "image/png", "size": 10}))
    assert pane.kind != "image" and "screenshot" in pane.view.toPlainText()
