"""Python in pydantic-monty: run a snippet with inputs as variables and host functions to await.

``await run_python(code, *, inputs={}, host_functions={}, timeout_ms=30_000, memory_mb=256,
on_log=None)`` returns the value of the snippet's last expression (None when it ends with a
statement). ``host_functions`` are ``{name: async callable}`` the code awaits
(``await llm("…")``); their exceptions are raised in the sandbox with their message.

Monty is an interpreter of a Python subset written in Rust, run in worker subprocesses: no file
system, no network, no subprocess, no imports beyond its own small standard library. Each step
gets a fresh worker (a pool of one, closed with the step: cheap, and nothing survives from one
step to the next), with monty's own limits on time (``max_feed_duration_secs``), heap
(``max_memory``) and recursion depth, plus our wall-clock deadline around the whole (host calls
included). Its errors come back as ``line N: Name: message`` where ``N`` counts lines of the
snippet. :func:`python_problems` is what validation can tell from the ast before running:
syntax errors, what monty does not support (class inheritance, generators) and host calls that
are not awaited (monty would hand back the coroutine silently).
"""

from __future__ import annotations

import ast
import asyncio
import json
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.code.errors import EXTRA_HINT, CodeError, CodeMemoryError, CodeTimeout, CodeUnavailable
from engine.graph.permissions import PermissionDenied
from engine.nodes.base import NodeError

__all__ = ["run_python", "monty_available", "python_problems", "HOST_FUNCTIONS", "RECURSION_LIMIT"]

#: The host functions a ``code`` step's Python may await.
HOST_FUNCTIONS = ("llm", "call_flow")
#: The deepest call stack a snippet may build.
RECURSION_LIMIT = 500
UNSUPPORTED = "not supported by the Python sandbox (pydantic-monty)"

LogSink = Callable[[str, str], None]


def monty_available() -> bool:
    try:
        import pydantic_monty  # noqa: F401  (the `code` extra)
    except ImportError:
        return False
    return True


def python_problems(code: str, host_functions: tuple[str, ...] = HOST_FUNCTIONS) -> list[tuple[str, str, str]]:
    """What the ast shows before running: ``(severity, code, message)`` with severity
    ``error`` or ``warning``; messages start ``line N: ``."""
    try:
        tree = ast.parse(code)
    except SyntaxError as err:
        return [("error", "code_syntax", f"line {err.lineno or 1}: SyntaxError: {err.msg}")]
    problems: list[tuple[str, str, str]] = []
    awaited: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Await) and isinstance(node.value, ast.Call):
            awaited.add(id(node.value))
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 1)
        if isinstance(node, ast.ClassDef) and (node.bases or node.keywords):
            problems.append(
                ("error", "code_unsupported", f"line {line}: class inheritance (class {node.name}(…)) is {UNSUPPORTED}")
            )
        elif isinstance(node, (ast.Yield, ast.YieldFrom)):
            problems.append(("error", "code_unsupported", f"line {line}: generators (yield) are {UNSUPPORTED}"))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in host_functions
            and id(node) not in awaited
        ):
            name = node.func.id
            problems.append(
                (
                    "warning",
                    "code_not_awaited",
                    f"line {line}: {name}(…) is not awaited, so it never runs; write `await {name}(…)`",
                )
            )
    return problems


def flows_called(code: str) -> list[str]:
    """The literal flow ids a snippet passes to ``call_flow`` (for the permission warning)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    out = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "call_flow"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.append(node.args[0].value)
    return out


def _line(err: Any) -> int | None:
    try:
        frames = err.traceback()
    except Exception:
        return None
    return int(frames[-1].line) if frames else None


def _message(err: Any) -> str:
    try:
        return str(err.display("type-msg"))
    except Exception:
        return str(err)


async def run_python(
    code: str,
    *,
    inputs: Mapping[str, Any] | None = None,
    host_functions: Mapping[str, Callable[..., Any]] | None = None,
    timeout_ms: int = 30_000,
    memory_mb: int = 256,
    on_log: LogSink | None = None,
    folders: Sequence[str | os.PathLike[str]] = (),
) -> Any:
    """Run ``code`` in a fresh monty worker (see the module docstring); returns its last value.
    ``folders`` (the workflow's ``permissions.files``) are mounted read-only at their own paths;
    any other file access fails ``permission_denied``."""
    try:
        import pydantic_monty as pm  # the `code` extra
    except ImportError:
        raise CodeUnavailable(f"Python code runs in pydantic-monty, which is not installed: {EXTRA_HINT}.") from None
    seconds = max(0.05, timeout_ms / 1000)
    limits: Any = {
        "max_feed_duration_secs": seconds,
        "max_memory": max(1, int(memory_mb)) << 20,
        "max_recursion_depth": RECURSION_LIMIT,
    }
    pending = ""

    def printed(stream: str, text: str) -> None:
        nonlocal pending
        if on_log is None:
            return
        *lines, rest = (pending + text).split("\n")
        pending = rest
        for line in lines:
            on_log(stream, line)

    mounts = [pm.MountDir(host_path=f, virtual_path=str(f), mode="read-only") for f in _disjoint(folders)]
    try:
        async with pm.AsyncMonty(min_processes=1, max_processes=1, request_timeout=seconds + 5) as pool:
            async with pool.checkout(script_name="code.py", limits=limits, print_flush_interval=0) as session:
                value = await asyncio.wait_for(
                    session.feed_run(
                        _checked(code),
                        inputs=dict(inputs or {}),
                        external_lookup=dict(host_functions or {}),
                        print_callback=printed,
                        mount=mounts or None,
                    ),
                    seconds,
                )
    except TimeoutError:
        raise CodeTimeout(f"timed out after {timeout_ms} ms (the code was stopped)") from None
    except pm.MontySyntaxError as err:
        raise CodeError(_message(err), _line(err)) from None
    except pm.MontyRuntimeError as err:
        raise _runtime_error(err, timeout_ms, memory_mb) from None
    except pm.MontyCrashedError as err:
        if getattr(err, "timed_out", False):
            raise CodeTimeout(f"timed out after {timeout_ms} ms (the code was stopped)") from None
        raise CodeError(f"the Python sandbox's worker stopped: {err}") from None
    except pm.MontyError as err:
        raise CodeError(str(err)) from None
    finally:
        for mount in mounts:
            mount.close()
        if pending and on_log is not None:
            on_log("stdout", pending)
    if isinstance(value, dict) and list(value) == [_NOT_PLAIN]:
        raise CodeError(f"the value of the last expression is not JSON-serialisable: a {value[_NOT_PLAIN]}")
    return _plain(value)


_VALUE = "__flowdesk_value__"
_NOT_PLAIN = "__flowdesk_not_plain__"
# Appended after the snippet (so its line numbers stay the snippet's own): monty hands a function,
# a range or an iterator back as its text, which the host cannot tell from a real string, so
# the last value is checked inside the sandbox and a value that is not plain JSON comes back
# as a marker naming its type.
_CHECK = f"""
def __flowdesk_plain__(v):
    if v is None or isinstance(v, (str, int, float, bool)):
        return ""
    if isinstance(v, (list, tuple)):
        for item in v:
            bad = __flowdesk_plain__(item)
            if bad:
                return bad
        return ""
    if isinstance(v, dict):
        for key in v:
            bad = __flowdesk_plain__(key) or __flowdesk_plain__(v[key])
            if bad:
                return bad
        return ""
    return type(v).__name__
{_VALUE} if not __flowdesk_plain__({_VALUE}) else {{"{_NOT_PLAIN}": __flowdesk_plain__({_VALUE})}}
"""


def _checked(code: str) -> str:
    """``code`` with its last expression kept in ``__flowdesk_value__`` and checked (see _CHECK);
    unchanged when it does not end with an expression or does not parse (monty says why)."""
    try:
        body = ast.parse(code).body
    except (SyntaxError, ValueError):
        return code
    if not body or not isinstance(body[-1], ast.Expr):
        return code
    last = body[-1]
    lines = code.split("\n")
    row = lines[last.lineno - 1]
    at = len(row.encode("utf-8")[: last.col_offset].decode("utf-8", "ignore"))  # col_offset counts UTF-8 bytes
    lines[last.lineno - 1] = f"{row[:at]}{_VALUE} = {row[at:]}"
    return "\n".join(lines).rstrip() + "\n" + _CHECK


def _disjoint(folders: Sequence[str | os.PathLike[str]]) -> list[Path]:
    """The existing folders, none inside another (monty refuses overlapping mounts)."""
    found = sorted({Path(f) for f in folders if Path(f).is_dir()}, key=lambda p: len(p.parts))
    out: list[Path] = []
    for folder in found:
        if not any(folder == kept or kept in folder.parents for kept in out):
            out.append(folder)
    return out


_DENIED_PATH = re.compile(r"PermissionError: (?:\[Errno \d+\] )?(?:Permission denied|Read-only file system): ('.*')")


def _runtime_error(err: Any, timeout_ms: int, memory_mb: int) -> NodeError:
    message, line = _message(err), _line(err)
    denied = _DENIED_PATH.match(message)
    if denied:  # a file outside permissions.files (monty sees no other file)
        refusal = PermissionDenied(f"file access to {denied.group(1)}", "files")
        refusal.args = (f"{refusal} (line {line})" if line else str(refusal),)
        return refusal
    try:
        inner = err.exception()
    except Exception:
        inner = None
    if isinstance(inner, TimeoutError) or message.startswith("TimeoutError"):
        return CodeTimeout(f"timed out after {timeout_ms} ms (the code was stopped)", line)
    if isinstance(inner, MemoryError) or message.startswith("MemoryError"):
        return CodeMemoryError(f"MemoryError: the code went past its memory limit ({memory_mb} MB)", line)
    if isinstance(inner, NotImplementedError) or message.startswith("NotImplementedError"):
        message += f" ({UNSUPPORTED})"
    return CodeError(message, line)


def _plain(value: Any) -> Any:
    """The value as plain JSON, or a step failure saying why it is not."""
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as err:
        why = f"{value} is not a JSON number" if isinstance(value, float) and not math.isfinite(value) else str(err)
        raise CodeError(f"the value of the last expression is not JSON-serialisable: {why}") from None
