"""Anthropic Messages API replies for :class:`tests.fakes.openai_server.FakeLLMServer`.

The same server serves both APIs (it answers whatever is scripted); these builders make
the event stream Anthropic sends: ``message_start``, ``content_block_*``,
``message_delta``, ``message_stop``.
"""

from __future__ import annotations

import json
from typing import Any

from .openai_server import FakeLLMServer, Reply, error_reply, sse

__all__ = [
    "FakeLLMServer",
    "Reply",
    "anthropic_text",
    "anthropic_tool_use",
    "anthropic_plain",
    "anthropic_error",
    "anthropic_error_event",
]


def _start(usage_in: int, model: str) -> bytes:
    return sse(
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "usage": {"input_tokens": usage_in, "output_tokens": 1},
            },
        },
        "message_start",
    )


def _end(stop: str, usage_out: int) -> list[bytes | float]:
    return [
        sse(
            {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": usage_out}},
            "message_delta",
        ),
        sse({"type": "message_stop"}, "message_stop"),
    ]


def anthropic_text(
    text: str,
    *,
    pieces: int = 3,
    usage: tuple[int, int] = (13, 8),
    pause: float = 0.0,
    model: str = "claude-fake",
    stop: bool = True,
    cut: bool = False,
) -> Reply:
    size = max(1, -(-len(text) // pieces))
    events: list[bytes | float] = [
        _start(usage[0], model),
        sse({"type": "ping"}, "ping"),
        sse(
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            "content_block_start",
        ),
    ]
    for i in range(0, len(text), size):
        if pause and i:
            events.append(pause)
        events.append(
            sse(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text[i : i + size]},
                },
                "content_block_delta",
            )
        )
    if stop:
        events.append(sse({"type": "content_block_stop", "index": 0}, "content_block_stop"))
        events += _end("end_turn", usage[1])
    return Reply(events=events, cut=cut)


def anthropic_tool_use(
    calls: list[tuple[str, dict[str, Any]]], *, text: str = "Let me delegate.", usage: tuple[int, int] = (30, 12)
) -> Reply:
    events: list[bytes | float] = [_start(usage[0], "claude-fake")]
    idx = 0
    if text:
        events += [
            sse(
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                "content_block_start",
            ),
            sse(
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
                "content_block_delta",
            ),
            sse({"type": "content_block_stop", "index": 0}, "content_block_stop"),
        ]
        idx = 1
    for i, (name, args) in enumerate(calls):
        raw = json.dumps(args)
        n = idx + i
        events += [
            sse(
                {
                    "type": "content_block_start",
                    "index": n,
                    "content_block": {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": {}},
                },
                "content_block_start",
            ),
            sse(
                {
                    "type": "content_block_delta",
                    "index": n,
                    "delta": {"type": "input_json_delta", "partial_json": raw[: len(raw) // 2]},
                },
                "content_block_delta",
            ),
            sse(
                {
                    "type": "content_block_delta",
                    "index": n,
                    "delta": {"type": "input_json_delta", "partial_json": raw[len(raw) // 2 :]},
                },
                "content_block_delta",
            ),
            sse({"type": "content_block_stop", "index": n}, "content_block_stop"),
        ]
    events += _end("tool_use", usage[1])
    return Reply(events=events)


def anthropic_plain(text: str, *, usage: tuple[int, int] = (4, 2)) -> Reply:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-fake",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": usage[0], "output_tokens": usage[1]},
    }
    return Reply(body=json.dumps(body).encode())


def anthropic_error(status: int, message: str, *, kind: str = "api_error", retry_after: str | None = None) -> Reply:
    return error_reply(status, message, code=kind, retry_after=retry_after, anthropic=True)


def anthropic_error_event(message: str = "Overloaded") -> Reply:
    return Reply(
        events=[
            _start(3, "claude-fake"),
            sse({"type": "error", "error": {"type": "overloaded_error", "message": message}}, "error"),
        ]
    )
