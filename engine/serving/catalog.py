"""Library flows as tools (``flowdesk mcp serve``), and noticing when the library changes.

A flow's tool: its name from the flow's id (letters, digits, ``_``, ``-`` and ``.``; anything
else becomes ``_``; a clash gets ``_2``, ``_3``...), its description from the flow's
description (else its name) with whether it may pause, its input schema from the Start
variables (:meth:`engine.flows.library.LibraryFlow.parameters_schema`). ``input`` is added as an
optional string parameter when no variable is called so: the run's initial input.

The library is a folder of files that a user, the desktop or ``flowdesk flows`` may change at
any time; :class:`LibraryWatch` looks at it (the files' names, sizes and times, and which flows
are turned off) every second and says when that changed, so the server can tell its clients
(``notifications/tools/list_changed``). Polling a folder costs one ``stat`` a file; no extra
dependency, the same on every OS.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from engine.errors import FlowdeskError
from engine.flows.library import FLOW_SUFFIX, FlowLibrary, LibraryFlow
from engine.llm.config import load_settings

__all__ = ["FlowTool", "RESUME_TOOL", "flow_tools", "resume_tool_schema", "LibraryWatch", "library_signature"]

RESUME_TOOL = "flowdesk_resume"
_BAD = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True, slots=True)
class FlowTool:
    name: str
    flow: LibraryFlow
    description: str
    input_schema: dict[str, Any]


def _tool_name(flow_id: str) -> str:
    name = _BAD.sub("_", flow_id.strip())[:120] or "flow"
    return name


def flow_tools(flows: list[LibraryFlow]) -> dict[str, FlowTool]:
    """The tools for ``flows`` (enabled, readable ones), by tool name, in library order."""
    out: dict[str, FlowTool] = {}
    for flow in flows:
        base = _tool_name(flow.id)
        name, n = base, 1
        while name in out or name == RESUME_TOOL:
            n += 1
            name = f"{base}_{n}"
        schema = flow.parameters_schema()
        if "input" not in schema["properties"]:
            schema["properties"]["input"] = {
                "type": "string",
                "description": "The run's initial input (the Start node's output); optional.",
            }
        if not schema["required"]:
            del schema["required"]
        text = flow.description.strip() or flow.name
        if flow.can_pause:
            text += (
                f" (May pause for a human decision: the result then names the run id; answer it with {RESUME_TOOL}.)"
            )
        out[name] = FlowTool(name, flow, text, schema)
    return out


def resume_tool_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "runId": {"type": "string", "description": "The paused run's id (given when it paused)."},
            "decision": {"type": "string", "description": "approve or reject"},
            "note": {"type": "string", "description": "A note for the next step ({{APPROVAL_NOTE}})."},
        },
        "required": ["runId", "decision"],
        "additionalProperties": False,
    }


def library_signature(library: FlowLibrary) -> tuple[Any, ...]:
    """What changes when the served tool list may change: the flow files and the flows turned off."""
    files: list[tuple[str, int, int]] = []
    for folder in library.folders:
        try:
            for p in sorted(folder.glob(f"*{FLOW_SUFFIX}")):
                try:
                    st = p.stat()
                except OSError:
                    continue
                files.append((str(p), st.st_mtime_ns, st.st_size))
        except OSError:
            continue
    try:
        disabled = tuple(sorted(load_settings().library.disabled))
    except FlowdeskError:  # unreadable settings: the library reads them as empty too
        disabled = ()
    return (tuple(files), disabled)


class LibraryWatch:
    """Calls ``changed()`` (a coroutine function) whenever :func:`library_signature` changes."""

    def __init__(self, library: FlowLibrary, changed: Callable[[], Awaitable[None]], *, interval: float = 1.0) -> None:
        self.library = library
        self.changed = changed
        self.interval = interval
        self._last = library_signature(library)

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            now = await asyncio.to_thread(library_signature, self.library)
            if now != self._last:
                self._last = now
                await self.changed()
