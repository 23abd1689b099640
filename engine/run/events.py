"""Typed run events and their AgentFlow wire form.

An event is created on the hot path of every step, so it is a slotted object that
stores a float timestamp; the ISO 8601 text is only made when the wire form is asked
for. Wire form: ``{timestamp, nodeId, type, content}`` (plus ``usage`` and ``model`` when a
response reports token usage and the model that answered).

Structured data travels in typed fields, never inside ``content``:

* ``extra`` (kept as JSON text, see :class:`RunEvent`) holds an event's structured fields:
  ``usage`` and ``model`` (the model that answered, when the provider said) on
  ``llm_response`` and ``subagent_call_end``; ``conditionIndex``/``matched`` on ``logic_check``;
  ``handle`` (the decision followed) and ``note`` (when not empty) on ``input_received``, and
  when the reviewer edited the output ``edited: true``, ``output`` (what flowed on) and
  ``original``; ``fromRun`` and ``handle`` on ``cache_hit``; ``handle`` on ``step_pinned``;
  ``detail`` on ``run_status``; and on ``subagent_call_*`` the call: ``parentNodeId,
  subagentNodeId, subagentName, callId, parentCallId, depth`` (``content`` is then the
  call's message: its input, answer or error).
* ``path``: where the run that emitted the event sits: ``""`` for a top-level run; a nested
  run (a subflow, later) names its parent run and call, so the events of nested runs never
  collide in one log.

The AgentFlow wire form is made only when events are written out (:meth:`RunEvent.to_wire`,
and :meth:`RunEvent.stored` for the run store): there ``subagent_call_*`` carry their fields
as a JSON string in ``content`` (``{type, parentNodeId, subagentNodeId, subagentName, callId,
parentCallId, depth, message}``; a call's ``usage`` and ``model`` stay beside it, as an
``llm_response``'s do) and ``path`` appears only when it is not empty. Reading
stored or imported events goes through :meth:`RunEvent.from_wire` / :meth:`RunEvent.from_stored`,
which turn that form (and older logs without Flowdesk's fields) back into typed fields once.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, NamedTuple

__all__ = [
    "EventType",
    "RunEvent",
    "RunStatus",
    "SYSTEM_NODE",
    "SUBAGENT_CALL_TYPES",
    "SUBAGENT_FIELDS",
    "FLOW_CALL_TYPES",
    "FLOW_CALL_FIELDS",
    "TOOL_CALL_TYPES",
    "decision_fields",
    "format_duration",
    "format_timestamp",
    "parse_timestamp",
]

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
    HTTP_REQUEST = "http_request"  # extra {method, url} (secrets masked)
    HTTP_RESPONSE = "http_response"  # extra {status, bytes, durationMs}
    FLOW_CALL_START = "flow_call_start"  # a library flow called by a model as a tool (extra: FLOW_CALL_FIELDS)
    FLOW_CALL_END = "flow_call_end"
    FLOW_CALL_ERROR = "flow_call_error"
    CACHE_HIT = "cache_hit"  # a run from a node reused this node's recorded output (extra: fromRun, handle)
    STEP_PINNED = "step_pinned"  # a pinned node did not run; its pinned output flows on (extra: handle)
    # Step policies and data flow (docs/design.md, "Step policies", "More node kinds")
    STEP_END = "step_end"  # extra {status: done|skipped|failed, durationMs}
    STEP_RETRY = "step_retry"  # extra {attempt (the one about to run), maxAttempts, delayMs, error}
    STEP_SKIPPED = "step_skipped"  # content: the error; the output is null, the branch goes on
    LOOP_CHECK = "loop_check"  # extra {iteration, matched}
    JOIN_WAIT = "join_wait"  # extra {delivered, expected}: an arrival at a join that keeps waiting
    # Conditions, routing and structured answers (docs/design.md)
    ROUTE_CHOICE = "route_choice"  # extra {label, reason, handle}: the route a router's model chose
    STRUCTURED_RETRY = "structured_retry"  # extra {attempt, error}: a structured answer asked again
    # Code and scripts (docs/design.md, "Acting")
    CODE_LOG = "code_log"  # extra {stream: stdout|stderr, text}: a line a code/script step printed
    API_CALL_START = "api_call_start"  # extra {method, args} (secrets masked): a script's api call
    API_CALL_END = "api_call_end"  # extra {method, args, error?}
    PERMISSION_DENIED = "permission_denied"  # extra {what, field}: a step reached outside its permissions
    # MCP tools (docs/design.md, "Acting"): extra {tool, server, callId, arguments, result | error}
    TOOL_CALL_START = "tool_call_start"
    TOOL_CALL_END = "tool_call_end"
    TOOL_CALL_ERROR = "tool_call_error"


SUBAGENT_CALL_TYPES = frozenset(
    {EventType.SUBAGENT_CALL_START.value, EventType.SUBAGENT_CALL_END.value, EventType.SUBAGENT_CALL_ERROR.value}
)
FLOW_CALL_TYPES = frozenset(
    {EventType.FLOW_CALL_START.value, EventType.FLOW_CALL_END.value, EventType.FLOW_CALL_ERROR.value}
)
TOOL_CALL_TYPES = frozenset(
    {EventType.TOOL_CALL_START.value, EventType.TOOL_CALL_END.value, EventType.TOOL_CALL_ERROR.value}
)
# The structured fields of a flow_call_* event (content: the arguments as JSON, the result or the error).
FLOW_CALL_FIELDS = ("parentNodeId", "flowId", "flowName", "callId", "parentCallId", "depth")
# The structured fields of a subagent_call_* event, in their wire order.
SUBAGENT_FIELDS = ("parentNodeId", "subagentNodeId", "subagentName", "callId", "parentCallId", "depth")


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
    return datetime.fromtimestamp(ts, tz=UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def format_duration(seconds: float | None, none: str = "") -> str:
    """A duration as people read it, the same everywhere it is shown (history, console, compare
    view, timeline, CLI): "340 ms", "2.4 s", "42 s", "3 min 05 s", "2 h 07 min", "3 d 4 h".
    ``none`` stands for an unknown one (None or NaN); a negative one (a clock set back) reads 0 ms."""
    if seconds is None or seconds != seconds:
        return none
    seconds = max(float(seconds), 0.0)
    ms = round(seconds * 1000)
    if ms < 1000:  # a quick step or run reads in milliseconds, not "0.0 s"
        return f"{ms} ms"
    tenths = round(seconds, 1)
    if tenths < 10:
        return f"{tenths:.1f} s"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, sec = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {sec:02d} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes:02d} min"
    return f"{hours // 24} d {hours % 24} h"


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
    extra_json: str | None  # structured fields (usage, ...) as a JSON object text


_tuple_new = tuple.__new__
_WIRE_KEYS = ("timestamp", "nodeId", "type", "content", "path")


def decision_fields(answer: dict[str, Any]) -> dict[str, Any]:
    """The typed fields of an ``input_received`` event: the handle followed, the note when there is
    one, and for an output the reviewer edited ``edited``, ``output`` (what flows on) and ``original``."""
    note = answer.get("note")
    fields = {"handle": answer.get("decision"), "note": note} if note else {"handle": answer.get("decision")}
    if answer.get("timedOut"):
        fields["timedOut"] = True
    if answer.get("edited"):
        fields["edited"] = True
        fields["output"] = answer.get("output")
        fields["original"] = answer.get("original")
    return fields


def _decision_fields(content: str) -> dict[str, Any] | None:
    """The typed fields an ``input_received`` content names (logs written before events carried them)."""
    try:
        answer = json.loads(content)
    except (TypeError, ValueError):
        return None
    if not isinstance(answer, dict) or not isinstance(answer.get("decision"), str):
        return None
    return decision_fields(answer)


def _condition_fields(text: str) -> dict[str, Any] | None:
    """``conditionIndex``/``matched`` of an AgentFlow ``logic_check`` written without them."""
    if text.startswith("Condition "):
        num = text[len("Condition ") :].split(":", 1)[0]
        if num.isdigit():
            return {"conditionIndex": int(num) - 1, "matched": "→ matched" in text or "-> matched" in text}
    if "Else" in text or "No condition" in text:
        return {"conditionIndex": None, "matched": False}
    return None


class RunEvent(_EventFields):
    """One log entry of a run: an immutable tuple of plain values.

    Its items are strings and numbers only, so the cyclic garbage collector has nothing to
    follow from an event (measured: with a dict per response kept, the per-node cost of a
    10,000-agent chain was 2x that of a 100-agent one). Hence ``type`` is a plain ``str``
    and the extra fields are kept as JSON text, decoded on demand by :attr:`extra`. (The
    event itself stays tracked: CPython untracks exact tuples only, not a subclass's
    instances, so a long run's events are still visited by the collections of their
    generation: about a tenth of a 10,000-agent chain's time.) The run path is a
    sixth item only when it is not empty (a top-level run's events are five-item tuples,
    as the runtime builds them inline).
    """

    __slots__ = ()

    def __new__(
        cls,
        node_id: str,
        type: str,
        content: str = "",
        *,
        timestamp: float | None = None,
        extra: dict[str, Any] | None = None,
        extra_json: str | None = None,
        path: str = "",
    ) -> RunEvent:
        if extra:
            extra_json = _encode(extra)
        # tuple.__new__ directly: the namedtuple's own __new__ is one more Python call per event.
        fields = (
            node_id,
            type if type.__class__ is str else str(type),
            content,
            time.time() if timestamp is None else timestamp,
            extra_json or None,
        )
        return _tuple_new(cls, fields + (path,) if path else fields)

    @property
    def path(self) -> str:
        """The run path: ``""`` for a top-level run (see the module's docstring)."""
        return self[5] if len(self) > 5 else ""

    @property
    def extra(self) -> dict[str, Any] | None:
        return json.loads(self.extra_json) if self.extra_json else None

    # ------------------------------------------------------------------ written out
    def wire_content(self) -> str:
        """``content`` as the wire form has it (a JSON string for ``subagent_call_*``)."""
        if self[1] in SUBAGENT_CALL_TYPES:
            fields = json.loads(self[4]) if self[4] else {}
            return _encode({"type": self[1], **{k: fields.get(k) for k in SUBAGENT_FIELDS}, "message": self[2]})
        return self[2]

    def _call_extra_json(self) -> str | None:
        """A subagent call's fields beyond those its wire content holds (a call's ``usage`` and
        ``model``), as JSON text; None when it has none."""
        if not self[4] or '"usage"' not in self[4] and '"model"' not in self[4]:
            return None
        more = {k: v for k, v in json.loads(self[4]).items() if k not in SUBAGENT_FIELDS}
        return _encode(more) if more else None

    def stored(self) -> tuple[str, str | None]:
        """``(content, extra_json)`` as the run store keeps them: the wire form's content and
        the other wire fields (the path included when it is not empty)."""
        if self[1] in SUBAGENT_CALL_TYPES:
            content, extra_json = self.wire_content(), self._call_extra_json()
        else:
            content, extra_json = self[2], self[4]
        if len(self) > 5:
            extra = json.loads(extra_json) if extra_json else {}
            extra["path"] = self[5]
            extra_json = _encode(extra)
        return content, extra_json

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {
            "timestamp": format_timestamp(self.timestamp),
            "nodeId": self.node_id,
            "type": str(self.type),
            "content": self.content,
        }
        if self[1] in SUBAGENT_CALL_TYPES:
            wire["content"] = self.wire_content()
            more = self._call_extra_json()
            if more:
                wire.update(json.loads(more))
        elif self.extra_json:
            wire.update(json.loads(self.extra_json))
        if len(self) > 5:
            wire["path"] = self[5]
        return wire

    def to_json(self) -> str:
        return json.dumps(self.to_wire(), ensure_ascii=False)

    # ------------------------------------------------------------------ read back
    @classmethod
    def from_wire(cls, wire: dict[str, Any]) -> RunEvent:
        """An event from its wire form (an imported log, a JSON line), typed fields restored."""
        extra = {k: v for k, v in wire.items() if k not in _WIRE_KEYS}
        ts = wire.get("timestamp")
        timestamp = parse_timestamp(ts) if isinstance(ts, str) else float(ts or 0.0)
        content = wire.get("content", "")
        if not isinstance(content, str):
            content = json.dumps(content, ensure_ascii=False)
        path = wire.get("path")
        return cls._typed(
            str(wire.get("nodeId", SYSTEM_NODE)),
            str(wire.get("type", "")),
            content,
            timestamp,
            extra or None,
            path if isinstance(path, str) else "",
        )

    @classmethod
    def from_stored(cls, node_id: str, type: str, content: str, timestamp: float, extra_json: str | None) -> RunEvent:
        """An event from a run store row (see :meth:`stored`); older rows hold the wire form too."""
        if not (extra_json and '"path"' in extra_json):
            mark = _TYPED_MARK.get(type)
            if mark is None or (extra_json and mark in extra_json):  # nothing to turn back
                return _tuple_new(cls, (node_id, type, content, timestamp, extra_json))
        extra = json.loads(extra_json) if extra_json else None
        path = extra.pop("path", "") if isinstance(extra, dict) and "path" in extra else ""
        return cls._typed(node_id, type, content, timestamp, extra, path if isinstance(path, str) else "")

    @classmethod
    def _typed(
        cls, node_id: str, type: str, content: str, timestamp: float, extra: dict[str, Any] | None, path: str
    ) -> RunEvent:
        if type in SUBAGENT_CALL_TYPES and not (extra and "subagentNodeId" in extra):
            try:
                payload = json.loads(content)
            except (TypeError, ValueError):
                payload = None
            if isinstance(payload, dict) and isinstance(payload.get("subagentNodeId"), str):
                message = payload.get("message", "")
                content = message if isinstance(message, str) else json.dumps(message, ensure_ascii=False)
                # the call's fields first, then what the wire form keeps beside them (usage, model),
                # in the order the event had them
                extra = {
                    **{k: payload.get(k) for k in SUBAGENT_FIELDS},
                    **{k: v for k, v in (extra or {}).items() if k not in SUBAGENT_FIELDS},
                }
        elif type == EventType.INPUT_RECEIVED and not (extra and "handle" in extra):
            fields = _decision_fields(content)
            if fields is not None:
                extra = {**(extra or {}), **fields}
        elif type == EventType.LOGIC_CHECK and not (extra and "conditionIndex" in extra):
            fields = _condition_fields(content)
            if fields is not None:
                extra = {**(extra or {}), **fields}
        return cls(node_id, type, content, timestamp=timestamp, extra=extra, path=path)

    def __repr__(self) -> str:
        text = self.content if len(self.content) < 60 else self.content[:57] + "..."
        return f"RunEvent({self.node_id!r}, {str(self.type)!r}, {text!r})"

    def __eq__(self, other: object) -> bool:
        # Same entry = same node, type, content, extra and path; the timestamp is not compared.
        if not isinstance(other, RunEvent):
            return NotImplemented
        return (self[0], self[1], self[2], self[4], self.path) == (other[0], other[1], other[2], other[4], other.path)

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        return hash((self[0], self[1], self[2]))


# Types whose stored or imported form may need turning back into typed fields
# (the field whose presence says it is typed already)
_TYPED_MARK = {
    **{t: '"subagentNodeId"' for t in SUBAGENT_CALL_TYPES},
    EventType.INPUT_RECEIVED.value: '"handle"',
    EventType.LOGIC_CHECK.value: '"conditionIndex"',
}
