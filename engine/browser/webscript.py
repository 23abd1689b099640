"""WebFlow scripts (seed 000): ``async function execute(browser, params)``.

Before a script runs it is checked as the seed's ``scriptValidator`` does: string literals and
comments stripped, then each blocked identifier searched as a whole word (``script_blocked``
naming the identifier and its line), ``new Function(`` and ``import(`` refused, and the
``execute(browser, params)`` signature required. This is a scan, not a parse (as in the seed):
the sandbox the script runs in (Deno with no permissions, only the bridged ``browser`` object)
is what actually holds it.

The result is the seed's ``WebFlowResult``: ``{success, message?, data?, error?}``; a value
without ``success`` is wrapped ``{success: true, message: String(value), data: value}``;
``success: false`` fails the step with its ``error``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from engine.nodes.base import NodeError

__all__ = ["BLOCKED_IDENTIFIERS", "script_problems", "webflow_result"]

#: The seed's blocked identifiers (scriptValidator.mts).
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


_SIGNATURE = re.compile(r"async\s+function\s+execute\s*\(\s*browser\s*(?::[^,)]*)?,\s*params\s*(?::[^)]*)?\)")
_BLOCKED = re.compile(r"(?<![\w$.])(" + "|".join(map(re.escape, BLOCKED_IDENTIFIERS)) + r")(?![\w$])")
_DYNAMIC = (re.compile(r"\bnew\s+Function\s*\("), re.compile(r"(?<![\w$.])import\s*\("))


def _strip(source: str) -> str:
    """``source`` with comments and string literals blanked (newlines kept, so lines still count)."""
    out: list[str] = []
    i, n = 0, len(source)
    while i < n:
        c = source[i]
        two = source[i : i + 2]
        if two == "//":
            j = source.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif two == "/*":
            j = source.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", source[i:j]))
            i = j
        elif c in "'\"`":
            j = i + 1
            while j < n and source[j] != c and (c == "`" or source[j] != "\n"):
                j += 2 if source[j] == "\\" else 1
            out.append(c + re.sub(r"[^\n]", " ", source[i + 1 : j]) + (source[j] if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def script_problems(script: str) -> list[tuple[str, str]]:
    """The seed's validation of a WebFlow script: ``(code, message)`` pairs, empty when it passes."""
    if not script.strip():
        return [("script_empty", "the WebFlow script is empty")]
    code = _strip(script)
    problems: list[tuple[str, str]] = []
    seen: set[str] = set()
    for m in _BLOCKED.finditer(code):
        name = m.group(1)
        if name in seen:
            continue
        seen.add(name)
        line = code.count("\n", 0, m.start()) + 1
        problems.append(
            ("script_blocked", f"the script uses '{name}' (line {line}), which WebFlow scripts may not use")
        )
    for pattern in _DYNAMIC:
        found = pattern.search(code)
        if found and not problems:
            line = code.count("\n", 0, found.start()) + 1
            problems.append(("script_blocked", f"the script builds code at run time (line {line})"))
    if not _SIGNATURE.search(code):
        problems.append(
            ("script_signature", "the script must define 'async function execute(browser, params)'"),
        )
    return problems


def webflow_result(value: Any) -> Any:
    """The step's output from a script's return value (see the module docstring); raises
    :class:`NodeError` for ``success: false``."""
    if isinstance(value, dict) and "success" in value:
        if value.get("success") is False:
            error = value.get("error") or value.get("message") or "the WebFlow script reported a failure"
            raise NodeError(f"WebFlow script failed: {error}")
        return value
    if isinstance(value, str):
        message = value
    elif value is None:
        message = "undefined"
    else:
        message = json.dumps(value, ensure_ascii=False)
    return {"success": True, "message": message, "data": value}
