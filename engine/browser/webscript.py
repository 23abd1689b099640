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

from engine.code.blocked import BLOCKED_IDENTIFIERS, blocked_identifiers, strip_literals
from engine.nodes.base import NodeError

__all__ = ["BLOCKED_IDENTIFIERS", "script_problems", "webflow_result"]

_SIGNATURE = re.compile(r"async\s+function\s+execute\s*\(\s*browser\s*(?::[^,)]*)?,\s*params\s*(?::[^)]*)?\)")
_DYNAMIC = (re.compile(r"\bnew\s+Function\s*\("), re.compile(r"(?<![\w$.])import\s*\("))


def script_problems(script: str) -> list[tuple[str, str]]:
    """The seed's validation of a WebFlow script: ``(code, message)`` pairs, empty when it passes."""
    if not script.strip():
        return [("script_empty", "the WebFlow script is empty")]
    code = strip_literals(script)
    problems: list[tuple[str, str]] = [
        ("script_blocked", f"the script uses '{name}' (line {line}), which WebFlow scripts may not use")
        for name, line in blocked_identifiers(script)
    ]
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
