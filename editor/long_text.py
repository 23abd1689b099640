"""Text too long for a Qt text widget to lay out quickly.

QPlainTextEdit lays a block (a line) out as a whole, in time that grows faster than its
length: a 100,000-character line takes seconds, a million characters a minute. Widgets that
show document text ask :func:`too_long_to_show` first and show :func:`preview` instead,
read-only, so the document's text is never replaced by the preview.
"""

from __future__ import annotations

__all__ = ["LONG_LINE", "LONG_TEXT", "too_long_to_show", "preview"]

LONG_LINE = 4_000  # characters on one line
LONG_TEXT = 1_000_000  # characters in all


def too_long_to_show(text: str) -> bool:
    if len(text) <= LONG_LINE:
        return False
    if len(text) > LONG_TEXT:
        return True
    return any(len(line) > LONG_LINE for line in text.split("\n"))


def preview(text: str, chars: int = 2_000) -> str:
    head = text[:chars].replace("\n", " ")
    return (
        f"[Read-only preview: this text is {len(text):,} characters long, too long to edit here. "
        f"It is kept as it is.]\n{head}…"
    )
