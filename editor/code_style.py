"""The pygments style for highlighted JSON (entry detail, inspector Run ▸ Output) on the
dark theme, and the WCAG contrast arithmetic that keeps every one of its colours readable.

Pygments' stock light styles ("friendly" was used) draw keys in dark navy (#062873), about
1.2:1 on the theme's #1f232b. Every colour here reaches WCAG AA (4.5:1) against each dark
background highlighted text is shown on; tests/editor/test_code_style.py computes it.
"""

from __future__ import annotations

from pygments.style import Style
from pygments.token import (
    Comment,
    Error,
    Generic,
    Keyword,
    Name,
    Number,
    Operator,
    Punctuation,
    String,
    Text,
    Token,
    Whitespace,
)

# Backgrounds highlighted text may sit on (resources/style.qss): the window, text fields,
# menus/popups, cards.
DARK_BACKGROUNDS = ("#1f232b", "#15181e", "#181b21", "#242831", "#262a33")

FOREGROUND = "#d7dce5"


class FlowdeskDarkStyle(Style):
    """Keys blue, strings green, numbers orange, true/false/null pink, punctuation grey."""

    name = "flowdesk-dark"
    background_color = "#1f232b"
    highlight_color = "#2c313c"
    styles = {
        Token: FOREGROUND,
        Text: FOREGROUND,
        Whitespace: FOREGROUND,
        Error: "#ffa198",
        Comment: "italic #9aa3b2",
        Keyword: "#ff7b72",
        Keyword.Constant: "#ff9bce",
        Operator: "#c9d1d9",
        Punctuation: "#aeb6c4",
        Name: FOREGROUND,
        Name.Tag: "#79c0ff",  # JSON keys
        Name.Attribute: "#79c0ff",
        Name.Builtin: "#ffa657",
        Name.Function: "#d2a8ff",
        Name.Class: "#ffa657",
        Name.Variable: "#79c0ff",
        String: "#a5e0a0",
        String.Escape: "#ffa657",
        Number: "#ffa657",
        Generic.Deleted: "#ffa198",
        Generic.Inserted: "#7ee787",
        Generic.Heading: "bold #79c0ff",
        Generic.Emph: "italic",
        Generic.Strong: "bold",
    }


def _channel(c: int) -> float:
    v = c / 255
    return v / 12.92 if v <= 0.04045 else ((v + 0.055) / 1.055) ** 2.4


def relative_luminance(hex_colour: str) -> float:
    h = hex_colour.lstrip("#")
    if len(h) == 3:
        h = "".join(ch * 2 for ch in h)
    r, g, b = (int(h[i : i + 2], 16) for i in (0, 2, 4))
    return 0.2126 * _channel(r) + 0.7152 * _channel(g) + 0.0722 * _channel(b)


def contrast_ratio(fg: str, bg: str) -> float:
    """WCAG 2 contrast ratio between two opaque colours (1.0 to 21.0)."""
    a, b = relative_luminance(fg), relative_luminance(bg)
    hi, lo = max(a, b), min(a, b)
    return (hi + 0.05) / (lo + 0.05)


__all__ = ["FlowdeskDarkStyle", "DARK_BACKGROUNDS", "contrast_ratio", "relative_luminance"]
