"""Zoomed out, a card shows what tells it apart: at 40-70 % its title and its most telling line
(an agent's prompt, a web page's URL, not the small print under them); at 20-40 % (a run's whole
graph next to the console) its title, large enough to read; below 20 % (the minimap, a
2,000-node overview) nothing but its shape."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QImage, QPainter
from PySide6.QtWidgets import QStyleOptionGraphicsItem

from editor.canvas.items.node import NodeItem
from engine import Node


def _painted(title: str, zoom: float, node: dict | None = None) -> QImage:
    item = NodeItem(
        Node.model_validate(node or {"id": "w", "type": "agent", "data": {"agentName": title, "model": "m"}})
    )
    rect = item.boundingRect()
    image = QImage(int(rect.width() * zoom) + 4, int(rect.height() * zoom) + 4, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.black)
    painter = QPainter(image)
    painter.scale(zoom, zoom)
    painter.translate(-rect.topLeft())
    item.paint(painter, QStyleOptionGraphicsItem(), None)
    painter.end()
    return image


@pytest.mark.parametrize("zoom", [0.39, 0.3, 0.22])
def test_a_far_zoomed_card_shows_its_title(app, zoom):
    assert _painted("Writer", zoom) != _painted("Publisher", zoom)


def test_a_card_in_an_overview_is_its_shape_only(app):
    assert _painted("Writer", 0.15) == _painted("Publisher", 0.15)


def _page(url: str, selector: str) -> dict:
    return {"id": "p", "type": "fetch", "data": {"url": url, "selector": selector}}


def test_a_zoomed_out_web_page_card_shows_its_url_not_its_selector(app):
    zoom = 0.6
    a = _painted("", zoom, _page("https://example.org/a", "main"))
    assert a == _painted("", zoom, _page("https://example.org/a", "article"))
    assert a != _painted("", zoom, _page("https://example.org/other-page", "main"))
