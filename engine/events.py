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
from typing import Any, NamedTuple

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


def _make_encoder() -> Any:
    """A JSON encoder for events' extra fields, built once.

    ``json.dumps`` (and ``JSONEncoder.encode``) build a new C encoder on every call; events
    are made on the hot path of every step, so the C encoder is made once here.
    """
    from json import encoder as _enc

    c_make = getattr(_enc, "c_make_encoder", None)
    if c_make is None:  # a Python without the C accelerator
        return json.JSONEncoder(ensure_ascii=False).encode

    def default(obj: Any) -> Any:
        raise TypeError(f"Object of type {type(obj).__name__} is not JSON serializable")

    c_encode = c_make(None, default, _enc.encode_basestring, None, ": ", ", ", False, False, True)
    return lambda obj: "".join(c_encode(obj, 0))


_encode = _make_encoder()


def format_timestamp(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_timestamp(text: str) -> float:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (ValueError, AttributeError):
        return 0.0


class _EventFields(NamedTuple):
    node_id: str
    type: str
    content: str
    timestamp: float
    extra_json: str | None  # further wire fields (usage, ...) as a JSON object text


_tuple_new = tuple.__new__


class RunEvent(_EventFields):
    """One log entry of a run: an immutable tuple of plain values.

    A tuple of strings and numbers is untracked by Python's cyclic garbage collector, so
    a run holding tens of thousands of events does not make every collection slower
    (measured: with a dict per response kept, the per-node cost of a 10,000-agent chain
    was 2x that of a 100-agent one). Hence ``type`` is a plain ``str`` and the extra
    fields are kept as JSON text, decoded on demand by :attr:`extra`.
    """

    __slots__ = ()

    def __new__(cls, node_id: str, type: str, content: str = "", *, timestamp: float | None = None,
                extra: dict[str, Any] | None = None, extra_json: str | None = None) -> "RunEvent":
        if extra:
            extra_json = _encode(extra)
        # tuple.__new__ directly: the namedtuple's own __new__ is one more Python call per event.
        return _tuple_new(cls, (node_id, type if type.__class__ is str else str(type), content,
                                time.time() if timestamp is None else timestamp, extra_json or None))

    @property
    def extra(self) -> dict[str, Any] | None:
        return json.loads(self.extra_json) if self.extra_json else None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "timestamp": format_timestamp(self.timestamp),
            "nodeId": self.node_id,
            "type": str(self.type),
            "content": self.content,
        }
        if self.extra_json:
            wire.update(json.loads(self.extra_json))
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
        # Same entry = same node, type, content and extra; the timestamp is not compared.
        if not isinstance(other, RunEvent):
            return NotImplemented
        return (self[0], self[1], self[2], self[4]) == (other[0], other[1], other[2], other[4])

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((self[0], self[1], self[2]))
