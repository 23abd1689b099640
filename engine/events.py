"""Typed run events and their AgentFlow wire form.

An event is created on the hot path of every step, so it is a slotted object that
stores a float timestamp; the ISO 8601 text is only made when the wire form is asked
for. Wire form: ``{timestamp, nodeId, type, content}`` (plus ``usage`` when a
response reports token usage).
"""

from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from enum import StrEnum
from typing import Any

__all__ = ["EventType", "RunEvent", "RunStatus", "SYSTEM_NODE", "format_timestamp", "parse_timestamp"]

SYSTEM_NODE = "system"


class RunStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def is_final(self) -> bool:
        return self in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)


class EventType(StrEnum):
    # AgentFlow's log types
    STEP_START = "step_start"
    START_PROMPT = "start_prompt"
    LOGIC_CHECK = "logic_check"
    WAIT_INPUT = "wait_input"
    INPUT_RECEIVED = "input_received"
    LLM_RESPONSE = "llm_response"
    LLM_ERROR = "llm_error"
    ERROR = "error"
    SUBAGENT_CALL_START = "subagent_call_start"
    SUBAGENT_CALL_END = "subagent_call_end"
    SUBAGENT_CALL_ERROR = "subagent_call_error"
    # Flowdesk's additions
    LLM_DELTA = "llm_delta"  # streamed text, coalesced
    RUN_STATUS = "run_status"  # content: the new status
    APPROVAL_QUEUED = "approval_queued"  # an approval reached while another one is pending
    NODE_OUTPUT = "node_output"  # reserved for non-agent outputs shown in the console


def format_timestamp(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_timestamp(text: str) -> float:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return 0.0


class RunEvent:
    """One log entry of a run."""

    __slots__ = ("timestamp", "node_id", "type", "content", "extra")

    def __init__(self, node_id: str, type: str, content: str = "", *, timestamp: float | None = None,
                 extra: dict[str, Any] | None = None) -> None:
        self.timestamp = time.time() if timestamp is None else timestamp
        self.node_id = node_id
        self.type = type
        self.content = content
        self.extra = extra

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "timestamp": format_timestamp(self.timestamp),
            "nodeId": self.node_id,
            "type": str(self.type),
            "content": self.content,
        }
        if self.extra:
            wire.update(self.extra)
        return wire

    def to_json(self) -> str:
        return json.dumps(self.to_wire(), ensure_ascii=False)

    @classmethod
    def from_wire(cls, wire: dict[str, Any]) -> "RunEvent":
        extra = {k: v for k, v in wire.items() if k not in ("timestamp", "nodeId", "type", "content")}
        ts = wire.get("timestamp")
        timestamp = parse_timestamp(ts) if isinstance(ts, str) else float(ts or 0.0)
        content = wire.get("content", "")
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        return cls(str(wire.get("nodeId", SYSTEM_NODE)), str(wire.get("type", "")), content,
                   timestamp=timestamp, extra=extra or None)

    def json_content(self) -> Any:
        """The content decoded as JSON, or None when it is not JSON."""
        try:
            return json.loads(self.content)
        except (TypeError, ValueError):
            return None

    def __repr__(self) -> str:
        text = self.content if len(self.content) < 60 else self.content[:57] + "..."
        return f"RunEvent({self.node_id!r}, {str(self.type)!r}, {text!r})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunEvent):
            return NotImplemented
        return (self.node_id, str(self.type), self.content, self.extra) == (
            other.node_id, str(other.type), other.content, other.extra)
