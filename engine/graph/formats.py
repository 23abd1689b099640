"""Which flow format a decoded document is, by its shape (no conversion here).

Loading asks it to say what a file that is not a workflow graph is; the importers
(:mod:`engine.flows.importers`) convert the formats it names.
"""

from __future__ import annotations

from typing import Any

__all__ = ["FLOW_FORMATS", "detect_flow_format", "format_label"]

FLOW_FORMATS = {
    "anythingllm": "AnythingLLM agent flow",
    "typeagent-steps": "TypeAgent step recipe",
    "typeagent-script": "TypeAgent script recipe",
    "webflow": "TypeAgent WebFlow definition",
    "flowdesk": "Flowdesk workflow",
}
_ANYTHINGLLM_BLOCKS = ("start", "apiCall", "llmInstruction", "webScraping", "code", "website", "file")


def format_label(fmt: str) -> str:
    return FLOW_FORMATS.get(fmt, fmt)


def detect_flow_format(raw: Any) -> str | None:
    """The format of a decoded document by its shape, or None when it is none of them."""
    if not isinstance(raw, dict):
        return None
    if isinstance(raw.get("nodes"), list):
        return "flowdesk"
    steps = raw.get("steps")
    if isinstance(steps, list) and steps:
        items = [s for s in steps if isinstance(s, dict)]
        if items and all("schemaName" in s or "actionName" in s for s in items):
            return "typeagent-steps"
        if items and all("type" in s and ("config" in s or s.get("type") in _ANYTHINGLLM_BLOCKS) for s in items):
            return "anythingllm"
    elif isinstance(steps, list) and ("active" in raw or "name" in raw) and "parameters" in raw:
        return "typeagent-steps"
    elif isinstance(steps, list):
        return "anythingllm"
    script = raw.get("script")
    if isinstance(script, str) and isinstance(raw.get("scope"), dict):
        return "webflow"
    if (
        script is None
        and isinstance(raw.get("scope"), dict)
        and isinstance(raw.get("parameters"), dict)
        and ("grammarPatterns" in raw or "source" in raw)
    ):
        return "webflow"  # as TypeAgent stores one: the script in a .js file of its own
    if (isinstance(script, str) or (isinstance(script, dict) and "body" in script)) and (
        "grammarPatterns" in raw or "parameters" in raw or "actionName" in raw
    ):
        return "typeagent-script"
    return None
