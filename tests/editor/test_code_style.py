"""Every colour the highlighters use on the dark theme reaches WCAG AA (4.5:1) against the
backgrounds it is drawn on: the JSON style (entry detail, inspector Run ▸ Output) and the
prompt editor's template highlighter."""

from __future__ import annotations

import re

import pytest
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QTextDocument
from PySide6.QtWidgets import QTextBrowser

from editor.code_style import DARK_BACKGROUNDS, FlowdeskDarkStyle, contrast_ratio
from editor.panels.inspector import TemplateHighlighter
from editor.run.details import highlight_json, render_content

AA = 4.5


def test_contrast_arithmetic_matches_wcag():
    assert contrast_ratio("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast_ratio("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)
    # The colour the issue found: dark navy keys on the panel background.
    assert contrast_ratio("#062873", "#1f232b") < 1.5


def test_every_token_colour_of_the_json_style_is_readable():
    colours = {}
    for token, spec in FlowdeskDarkStyle.styles.items():
        for part in spec.split():
            if part.startswith("#"):
                colours[str(token)] = part
    assert "Token.Name.Tag" in colours  # JSON keys
    for token, colour in colours.items():
        for bg in DARK_BACKGROUNDS:
            assert contrast_ratio(colour, bg) >= AA, (token, colour, bg, round(contrast_ratio(colour, bg), 2))


def test_highlighted_json_uses_only_readable_colours(app):
    value = {"name": "Ada", "age": 36, "ok": True, "none": None, "tags": ["x", 1.5], "nested": {"k": "v\\n"}}
    html = highlight_json(value)
    found = set(re.findall(r"color:\s*(#[0-9a-fA-F]{3,6})", html))
    assert found, html
    for colour in found:
        for bg in DARK_BACKGROUNDS:
            assert contrast_ratio(colour, bg) >= AA, (colour, bg)
    # And what a QTextBrowser ends up drawing, character by character.
    browser = QTextBrowser()
    assert render_content(browser, "node_input", '{"key": "value", "n": 1, "b": false}') == "json"
    block = browser.document().begin()
    drawn = set()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            fmt = it.fragment().charFormat()
            if it.fragment().text().strip() and fmt.foreground().style() != 0:
                drawn.add(fmt.foreground().color().name())
            it += 1
        block = block.next()
    assert drawn
    for colour in drawn:
        assert contrast_ratio(colour, "#1f232b") >= AA, colour


def _over(fg: QColor, bg: str) -> str:
    """``fg`` (possibly translucent) composited over the opaque ``bg``."""
    b = QColor(bg)
    a = fg.alphaF()
    mix = [round(f * a + g * (1 - a)) for f, g in ((fg.red(), b.red()), (fg.green(), b.green()), (fg.blue(), b.blue()))]
    return QColor(*mix).name()


def test_prompt_template_highlighter_colours_are_readable(app):
    hl = TemplateHighlighter(QTextDocument())
    for fmt in (hl.known, hl.other, hl.unknown):  # built-ins, variables, unknown references (underlined)
        fg = fmt.foreground().color().name()
        for bg in DARK_BACKGROUNDS:
            has_bg = fmt.background().style() != Qt.BrushStyle.NoBrush
            behind = _over(fmt.background().color(), bg) if has_bg else bg
            assert contrast_ratio(fg, behind) >= AA, (fg, behind)
