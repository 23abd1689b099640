"""``ast.parse`` for the source-reading tests, run on a fresh thread.

CPython 3.11's AST conversion checks its recursion depth against the calling thread's
counter, and late in a long test session (after deep recursion elsewhere in the process) it
fails at random with ``SystemError: AST constructor recursion depth mismatch``. A new
thread starts with its own counter, so the parse is the same on every run."""

from __future__ import annotations

import ast
from concurrent.futures import ThreadPoolExecutor


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(ast.parse, source, filename).result()
