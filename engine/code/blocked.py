"""TypeAgent's script validation: identifiers a TaskFlow (or WebFlow) script may not use.

TypeAgent scans a script with word-boundary patterns after stripping string literals and
comments, and refuses it before it runs. Flowdesk does the same (``script_blocked``, a
validation error naming the identifier and its line) and adds ``Deno``, the runtime's own
namespace, which plays the part Node's ``process`` plays there. The scan is a first line of
defence that says early what is wrong; the Deno sandbox (no permissions but those granted)
is what actually holds.
"""

from __future__ import annotations

import re

__all__ = ["BLOCKED_IDENTIFIERS", "blocked_identifiers", "strip_literals"]

#: Seed 000's list, plus ``Deno``.
BLOCKED_IDENTIFIERS = (
    "eval",
    "Function",
    "require",
    "import",
    "fetch",
    "XMLHttpRequest",
    "WebSocket",
    "window",
    "document",
    "globalThis",
    "self",
    "setTimeout",
    "setInterval",
    "clearTimeout",
    "clearInterval",
    "chrome",
    "process",
    "Buffer",
    "__dirname",
    "__filename",
    "Deno",
)

_PATTERN = re.compile(r"(?<![\w$.])(" + "|".join(map(re.escape, BLOCKED_IDENTIFIERS)) + r")(?![\w$])")


def strip_literals(source: str) -> str:
    """``source`` with the insides of string and template literals and comments blanked (their
    newlines kept, so lines still count the same)."""
    out: list[str] = []
    i, n = 0, len(source)

    def blank(text: str) -> str:
        return "".join("\n" if c == "\n" else " " for c in text)

    while i < n:
        c = source[i]
        if c == "/" and source.startswith("//", i):
            end = source.find("\n", i)
            end = n if end < 0 else end
            out.append(blank(source[i:end]))
            i = end
        elif c == "/" and source.startswith("/*", i):
            end = source.find("*/", i + 2)
            end = n if end < 0 else end + 2
            out.append(blank(source[i:end]))
            i = end
        elif c in "\"'`":
            j = i + 1
            while j < n and source[j] != c:
                if source[j] == "\\":
                    j += 1
                elif c != "`" and source[j] == "\n":  # an unterminated quote ends at the line
                    break
                j += 1
            end = min(j + 1, n)
            out.append(c + blank(source[i + 1 : end - 1]) + (source[end - 1] if end - 1 > i else ""))
            i = end
        else:
            out.append(c)
            i += 1
    return "".join(out)


def blocked_identifiers(source: str) -> list[tuple[str, int]]:
    """Each blocked identifier the script uses, with the line it is first used on (1-based)."""
    text = strip_literals(source)
    found: dict[str, int] = {}
    for match in _PATTERN.finditer(text):
        name = match.group(1)
        if name not in found:
            found[name] = text.count("\n", 0, match.start()) + 1
    return sorted(found.items(), key=lambda item: item[1])
