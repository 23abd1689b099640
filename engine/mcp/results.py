"""What an MCP server's answers become in Flowdesk: tool listings and call results as plain data.

The SDK's types are read by attribute (``name``, ``input_schema``, ``structured_content``,
``content``, ``is_error``), so this module imports no SDK and tests can hand it anything shaped
alike. A call's *value* (the ``mcp`` kind's output, an event's ``result``) is its structured
content when the server gave one, else its text; the *text* a model gets is the structured
content as JSON, else the text, with each image, audio clip or resource noted in brackets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ToolInfo", "ToolOutcome", "tool_info", "outcome_of"]


@dataclass(slots=True)
class ToolInfo:
    """A tool as a server lists it."""

    name: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=lambda: {"type": "object"})

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "inputSchema": self.input_schema}


@dataclass(slots=True)
class ToolOutcome:
    """One call's result: ``value`` (structured content, else text), ``text`` for a model,
    ``is_error`` (the server flagged the result as an error)."""

    value: Any
    text: str
    is_error: bool = False


def tool_info(tool: Any) -> ToolInfo:
    schema = getattr(tool, "input_schema", None) or getattr(tool, "inputSchema", None)
    if not isinstance(schema, dict):
        schema = {"type": "object"}
    return ToolInfo(str(getattr(tool, "name", "")), str(getattr(tool, "description", "") or ""), dict(schema))


def _note(block: Any) -> str | None:
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(getattr(block, "text", ""))
    mime = getattr(block, "mime_type", None) or getattr(block, "mimeType", None) or "unknown type"
    if kind in ("image", "audio"):
        data = getattr(block, "data", "") or ""
        size = len(data) * 3 // 4  # base64
        return f"[{kind}: {mime}, about {size} bytes, not shown]"
    if kind == "resource_link":
        return f"[resource: {getattr(block, 'uri', '')}]"
    if kind == "resource":
        res = getattr(block, "resource", None)
        text = getattr(res, "text", None)
        if isinstance(text, str):
            return text
        return f"[resource: {getattr(res, 'uri', '')}]"
    return f"[{kind or 'content'}]"


def outcome_of(result: Any) -> ToolOutcome:
    """A ``CallToolResult`` as a :class:`ToolOutcome`."""
    parts = [n for n in (_note(b) for b in (getattr(result, "content", None) or ())) if n is not None]
    text = "\n".join(parts)
    structured = getattr(result, "structured_content", None)
    if structured is None:
        structured = getattr(result, "structuredContent", None)
    is_error = bool(getattr(result, "is_error", False) or getattr(result, "isError", False))
    if structured is not None and not is_error:
        shown = json.dumps(structured, ensure_ascii=False)
        notes = [p for p in parts if p.startswith("[")]  # images and the like are noted beside it
        return ToolOutcome(structured, "\n".join([shown, *notes]), False)
    return ToolOutcome(text, text or ("(the tool reported an error)" if is_error else "(no content)"), is_error)
