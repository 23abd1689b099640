"""Checks on what comes in from outside (files, JSON, command-line text) before it is used.

Each returns a plain description of the problem, or None, so that the caller raises its
own typed error (:class:`engine.WorkflowLoadError`, a CLI usage error) with a message
that names the place:

* :func:`not_a_regular_file` - a FIFO, a device (``/dev/zero``) or a socket given as a
  workflow file would block the reader or fill the memory; it is refused before opening.
* :func:`lone_surrogate_at` - a JSON ``"\\ud800"`` escape decodes to a lone surrogate,
  which no UTF-8 file, database or terminal can hold: refused at load, where it is named.
* :func:`huge_integer_at` - where an integer longer than Python reads (4,300 digits) is.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from typing import Any

__all__ = [
    "not_a_regular_file",
    "lone_surrogate_at",
    "may_hold_surrogates",
    "has_surrogates",
    "huge_integer_at",
    "describe_surrogate",
]

# A JSON escape of a surrogate code point (\uD800-\uDFFF), as text or bytes.
_ESCAPE_STR = re.compile(r"\\u[dD][89a-fA-F]")
_ESCAPE_BYTES = re.compile(rb"\\u[dD][89a-fA-F]")


def not_a_regular_file(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be read as a document (None when it is a regular file, or missing:
    the caller's read reports that)."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    kind = (
        "a named pipe (FIFO)"
        if stat.S_ISFIFO(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a special file"
    )
    return f"is not a regular file ({kind}); give the path of a workflow file"


def has_surrogates(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (cannot be written as UTF-8)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def may_hold_surrogates(text: str | bytes) -> bool:
    """A fast look at raw JSON: False when no decoded string of it can hold a lone surrogate."""
    if isinstance(text, bytes):
        return _ESCAPE_BYTES.search(text) is not None
    return _ESCAPE_STR.search(text) is not None or has_surrogates(text)


def describe_surrogate(text: str) -> str:
    for ch in text:
        if 0xD800 <= ord(ch) <= 0xDFFF:
            return f"\\u{ord(ch):04x}"
    return "?"


def lone_surrogate_at(value: Any, where: str = "") -> tuple[str, str] | None:
    """``(place, "\\udXXX")`` of the first string (key or value) in a decoded JSON value that
    holds a lone surrogate, or None. Walks with a stack (no recursion limit)."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, place = stack.pop()
        if isinstance(item, str):
            if has_surrogates(item):
                return place or "the document", describe_surrogate(item)
        elif isinstance(item, dict):
            for k, v in reversed(list(item.items())):
                sub = f"{place}.{k}" if place else str(k)
                if isinstance(k, str) and has_surrogates(k):
                    return (f"a key in {place}" if place else "a key"), describe_surrogate(k)
                stack.append((v, sub))
        elif isinstance(item, list):
            for i in range(len(item) - 1, -1, -1):
                stack.append((item[i], f"{place}[{i}]"))
    return None


def huge_integer_at(text: str | bytes) -> str | None:
    """``"line L, column C"`` of the first integer too long for Python to read, or None."""
    limit = sys.get_int_max_str_digits() or 0
    if not limit:
        return None
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    m = re.search(rf"\d{{{limit + 1},}}", text)
    if m is None:
        return None
    line = text.count("\n", 0, m.start()) + 1
    col = m.start() - (text.rfind("\n", 0, m.start()) + 1) + 1
    return f"line {line}, column {col}"
