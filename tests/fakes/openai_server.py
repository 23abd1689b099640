"""A small fake LLM HTTP server for tests: real sockets, real HTTP/1.1, real SSE.

It runs its own asyncio loop in a daemon thread, bound to 127.0.0.1 on a random port,
so sync tests, async tests and subprocesses can all talk to it. Each request is
recorded (:class:`Recorded`: path, headers, JSON body, and whether the client hung up)
and answered by the scripted :class:`Reply` at the head of the queue, or by
``server.handler(recorded)`` when one is set (for concurrent requests whose order is not
fixed). Streamed replies use chunked transfer encoding, so a ``cut`` stream (closed
without the final chunk) looks to the client exactly like a server dying mid-answer.

Builders for OpenAI-shaped replies live here; Anthropic ones in ``anthropic_server``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "FakeLLMServer",
    "Reply",
    "Recorded",
    "sse",
    "openai_text",
    "openai_plain",
    "openai_tool_calls",
    "error_reply",
    "garbage_stream",
    "garbage_json",
    "openai_empty_stream",
    "openai_null_content",
    "local_server_handler",
    "flaky_handler",
]

_REASONS = {
    200: "OK",
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
    529: "Overloaded",
}


@dataclass
class Reply:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None  # a whole body (JSON unless headers say otherwise)
    events: list[bytes | float] | None = None  # streamed SSE frames; a float is a pause in seconds
    cut: bool = False  # close the socket mid-stream (no final chunk)
    delay: float = 0.0  # wait before the status line


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    started: float
    ended: float | None = None
    disconnected: threading.Event = field(default_factory=threading.Event)
    sent: list[float] = field(default_factory=list)  # wall-clock time each streamed frame was written

    @property
    def json(self) -> Any:
        try:
            return json.loads(self.body or b"null")
        except ValueError:
            return None

    @property
    def system_prompt(self) -> str:
        data = self.json or {}
        if isinstance(data.get("system"), str):
            return data["system"]
        for m in data.get("messages", []):
            if m.get("role") == "system":
                return m.get("content") or ""
        return ""

    @property
    def tool_results(self) -> list[str]:
        """Tool results sent back in this request (OpenAI and Anthropic shapes)."""
        out = []
        for m in (self.json or {}).get("messages", []):
            if m.get("role") == "tool":
                out.append(m.get("content", ""))
            elif isinstance(m.get("content"), list):
                out.extend(b.get("content", "") for b in m["content"] if b.get("type") == "tool_result")
        return out


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on: a server that is stopped, or never started."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeLLMServer:
    def __init__(self, port: int = 0) -> None:
        self.requests: list[Recorded] = []
        self.handler: Callable[[Recorded], Reply] | None = None
        self._queue: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.base_events.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, name="fake-llm-server", daemon=True)
        self.port = port  # 0: a free one, chosen when the server starts

    # ------------------------------------------------------------------ control
    def start(self) -> FakeLLMServer:
        self._thread.start()
        fut = asyncio.run_coroutine_threadsafe(asyncio.start_server(self._handle, "127.0.0.1", self.port), self._loop)
        self._server = fut.result(5)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    def stop(self) -> None:
        async def close() -> None:
            assert self._server is not None
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        if self._thread.is_alive():
            asyncio.run_coroutine_threadsafe(close(), self._loop).result(5)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def push(self, *replies: Reply) -> None:
        with self._lock:
            self._queue.extend(replies)

    def wait_for_requests(self, n: int, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.requests) < n:
            if time.monotonic() > deadline:
                raise TimeoutError(f"expected {n} requests, got {len(self.requests)}")
            time.sleep(0.01)

    # ------------------------------------------------------------------ serving
    def _next_reply(self, rec: Recorded) -> Reply:
        if self.handler is not None:
            return self.handler(rec)
        with self._lock:
            if self._queue:
                return self._queue.popleft()
        return error_reply(500, "fake server: no reply scripted for this request")

    async def _pause(self, reader: asyncio.StreamReader, seconds: float, rec: Recorded) -> bool:
        """Wait ``seconds`` while watching the socket; False when the client hung up."""
        try:
            data = await asyncio.wait_for(reader.read(1), seconds)
        except TimeoutError:
            return True
        except ConnectionError:
            data = b""
        if not data:
            rec.disconnected.set()
            return False
        return True

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        rec: Recorded | None = None
        try:
            line = await reader.readline()
            if not line:
                return
            method, path, _ = line.decode("latin-1").split(" ", 2)
            headers: dict[str, str] = {}
            while True:
                h = await reader.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                k, _, v = h.decode("latin-1").partition(":")
                headers[k.strip().lower()] = v.strip()
            body = await reader.readexactly(int(headers.get("content-length", "0") or 0))
            rec = Recorded(method, path, headers, body, time.monotonic())
            with self._lock:
                self.requests.append(rec)
            reply = self._next_reply(rec)
            if reply.delay and not await self._pause(reader, reply.delay, rec):
                return
            head = [f"HTTP/1.1 {reply.status} {_REASONS.get(reply.status, 'Status')}", "Connection: close"]
            extra = {k.lower(): v for k, v in reply.headers.items()}
            if reply.events is None:
                payload = reply.body or b""
                extra.setdefault("content-type", "application/json")
                head += [f"{k}: {v}" for k, v in extra.items()] + [f"Content-Length: {len(payload)}"]
                writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + payload)
                await writer.drain()
                return
            extra.setdefault("content-type", "text/event-stream")
            head += [f"{k}: {v}" for k, v in extra.items()] + ["Transfer-Encoding: chunked", "Cache-Control: no-cache"]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode("latin-1"))
            await writer.drain()
            for item in reply.events:
                if isinstance(item, (int, float)):
                    if not await self._pause(reader, float(item), rec):
                        return
                    continue
                writer.write(f"{len(item):x}\r\n".encode() + item + b"\r\n")
                await writer.drain()
                rec.sent.append(time.time())
            if reply.cut:
                return
            writer.write(b"0\r\n\r\n")
            await writer.drain()
            # Let the client read the end before the close, and notice if it hangs up first.
        except (ConnectionError, asyncio.IncompleteReadError):
            if rec is not None:
                rec.disconnected.set()
        except asyncio.CancelledError:
            pass
        finally:
            if rec is not None:
                rec.ended = time.monotonic()
            try:
                writer.close()
            except Exception:
                pass


# ---------------------------------------------------------------------------- builders
def sse(data: Any, event: str | None = None) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data)
    return ((f"event: {event}\n" if event else "") + f"data: {text}\n\n").encode()


def _chunk(delta: dict[str, Any], finish: str | None = None, model: str = "fake-model") -> bytes:
    return sse(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
    )


def openai_text(
    text: str,
    *,
    pieces: int = 3,
    usage: tuple[int, int] | None = (11, 7),
    pause: float = 0.0,
    model: str = "fake-model",
    finish: bool = True,
    done: bool = True,
    cut: bool = False,
) -> Reply:
    """A streamed answer in ``pieces`` deltas (``pause`` seconds apart)."""
    size = max(1, -(-len(text) // pieces))
    events: list[bytes | float] = [_chunk({"role": "assistant", "content": ""}, model=model)]
    for i in range(0, len(text), size):
        if pause and i:
            events.append(pause)
        events.append(_chunk({"content": text[i : i + size]}, model=model))
    if finish:
        events.append(_chunk({}, "stop", model=model))
    if usage and finish:
        events.append(
            sse(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "model": model,
                    "choices": [],
                    "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)},
                }
            )
        )
    if done and finish:
        events.append(b"data: [DONE]\n\n")
    return Reply(events=events, cut=cut)


def openai_plain(text: str, *, usage: tuple[int, int] | None = (5, 3), model: str = "fake-model") -> Reply:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
    }
    if usage:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return Reply(body=json.dumps(body).encode())


def openai_tool_calls(
    calls: list[tuple[str, dict[str, Any]]],
    *,
    text: str = "",
    usage: tuple[int, int] | None = (20, 10),
    ids: list[str] | None = None,
) -> Reply:
    """A streamed turn asking for tool calls; each call's arguments arrive in two fragments."""
    events: list[bytes | float] = [_chunk({"role": "assistant", "content": text or None})]
    for i, (name, args) in enumerate(calls):
        raw = json.dumps(args)
        cid = ids[i] if ids else f"call_fake_{i}"
        events.append(
            _chunk(
                {
                    "tool_calls": [
                        {
                            "index": i,
                            "id": cid,
                            "type": "function",
                            "function": {"name": name, "arguments": raw[: len(raw) // 2]},
                        }
                    ]
                }
            )
        )
        events.append(_chunk({"tool_calls": [{"index": i, "function": {"arguments": raw[len(raw) // 2 :]}}]}))
    events.append(_chunk({}, "tool_calls"))
    if usage:
        events.append(
            sse(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "choices": [],
                    "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
                }
            )
        )
    events.append(b"data: [DONE]\n\n")
    return Reply(events=events)


def error_reply(
    status: int, message: str, *, code: str | None = None, retry_after: str | None = None, anthropic: bool = False
) -> Reply:
    if anthropic:
        body = {"type": "error", "error": {"type": code or "api_error", "message": message}}
    else:
        body = {"error": {"message": message, "type": "invalid_request_error", "code": code}}
    headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return Reply(status=status, headers=headers, body=json.dumps(body).encode())


def garbage_stream() -> Reply:
    return Reply(events=[_chunk({"role": "assistant", "content": "Hel"}), b"data: {this is not json\n\n"])


def garbage_json() -> Reply:
    return Reply(body=b'{"unexpected": true}')


def openai_empty_stream(*, usage: tuple[int, int] | None = (3, 0)) -> Reply:
    """A stream that carries no choice at all: ``choices: []`` (usage only), then ``[DONE]``."""
    events: list[bytes | float] = []
    if usage:
        events.append(
            sse(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "choices": [],
                    "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
                }
            )
        )
    events.append(sse({"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": []}))
    events.append(b"data: [DONE]\n\n")
    return Reply(events=events)


def openai_null_content() -> Reply:
    """A whole (not streamed) completion whose message has ``content: null`` and no tool call."""
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "fake-model",
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": None}}],
    }
    return Reply(body=json.dumps(body).encode())


def local_server_handler(
    models: tuple[str, ...] = ("fake-model",), answer: str = "fake answer", *, strict: bool = False
) -> Callable[[Recorded], Reply]:
    """A handler for a server standing in for Ollama / LM Studio: ``GET /v1/models`` lists
    ``models``; every chat completion is answered with ``answer`` (streamed when asked).
    ``strict``: a model it does not list is refused as Ollama refuses it (HTTP 404)."""

    def handle(rec: Recorded) -> Reply:
        if rec.method == "GET" and rec.path.rstrip("/").endswith("/models"):
            return Reply(
                body=json.dumps({"object": "list", "data": [{"id": m, "object": "model"} for m in models]}).encode()
            )
        if rec.method == "POST" and rec.path.endswith("/chat/completions"):
            asked = (rec.json or {}).get("model")
            if strict and asked not in models:
                return error_reply(404, f'model "{asked}" not found, try pulling it first')
            return openai_text(answer) if (rec.json or {}).get("stream") else openai_plain(answer)
        return error_reply(404, f"fake server: no route {rec.method} {rec.path}")

    return handle


def flaky_handler(
    failures: int, answer: str = "finally", *, status: int = 400, message: str = "fake server: flaky failure"
) -> Callable[[Recorded], Reply]:
    """The flaky mode: the first ``failures`` chat requests fail with ``status`` (400 by default,
    which providers do not retry themselves; 429/5xx they do), every later one answers ``answer``
    (streamed when asked)."""
    seen = [0]

    def handle(rec: Recorded) -> Reply:
        seen[0] += 1
        if seen[0] <= failures:
            return error_reply(status, message)
        stream = bool((rec.json or {}).get("stream"))
        return openai_text(answer) if stream else openai_plain(answer)

    return handle
