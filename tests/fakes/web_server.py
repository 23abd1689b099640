"""A small real HTTP server for the ``http`` and ``fetch`` tests: stdlib ``http.server`` in a
daemon thread on 127.0.0.1, a random port, one thread per connection.

Routes are plain functions ``route(req: Request) -> Answer`` registered by path (the query
is not part of the key). Every request is recorded (:class:`Request`), and an answer
that streams records how many body bytes the server managed to send before the client hung
up (``Request.sent`` and ``Request.disconnected``), so tests can prove a client stopped
reading early or closed the connection on cancel.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

__all__ = ["WebServer", "Request", "Answer", "json_answer", "text_answer", "redirect"]


@dataclass
class Request:
    method: str
    path: str
    query: list[tuple[str, str]]
    headers: dict[str, str]
    body: bytes
    sent: int = 0  # body bytes written by the server
    disconnected: threading.Event = field(default_factory=threading.Event)

    @property
    def json(self) -> Any:
        return json.loads(self.body or b"null")


@dataclass
class Answer:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    chunks: Iterable[bytes] | None = None  # streamed with no Content-Length, then the connection closes
    pause: float = 0.0  # seconds between streamed chunks


def json_answer(data: Any, status: int = 200, content_type: str = "application/json") -> Answer:
    return Answer(status, {"Content-Type": content_type}, json.dumps(data).encode())


def text_answer(text: str | bytes, status: int = 200, content_type: str = "text/plain; charset=utf-8") -> Answer:
    return Answer(status, {"Content-Type": content_type}, text.encode() if isinstance(text, str) else text)


def redirect(location: str, status: int = 302) -> Answer:
    return Answer(status, {"Location": location, "Content-Length": "0"})


Route = Callable[[Request], Answer]


class WebServer:
    """``with WebServer() as web: web.route("/x", fn); web.url("/x")``."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.requests: list[Request] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _handle(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                req = Request(
                    self.command,
                    parts.path,
                    parse_qsl(parts.query, keep_blank_values=True),
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                )
                server.requests.append(req)
                route = server.routes.get(parts.path)
                answer = route(req) if route else text_answer("no such route", 404)
                self.send_response(answer.status)
                for k, v in answer.headers.items():
                    self.send_header(k, v)
                try:
                    if answer.chunks is not None:
                        self.send_header("Connection", "close")
                        self.end_headers()
                        self.close_connection = True
                        for chunk in answer.chunks:
                            self.wfile.write(chunk)
                            self.wfile.flush()
                            req.sent += len(chunk)
                            if answer.pause:
                                time.sleep(answer.pause)
                    else:
                        if "Content-Length" not in answer.headers:
                            self.send_header("Content-Length", str(len(answer.body)))
                        self.end_headers()
                        if self.command != "HEAD":
                            self.wfile.write(answer.body)
                            req.sent += len(answer.body)
                except (BrokenPipeError, ConnectionResetError):
                    req.disconnected.set()
                    self.close_connection = True

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), name="web-server", daemon=True)

    def route(self, path: str, fn: Route | Answer) -> None:
        self.routes[path] = fn if callable(fn) else (lambda _req, a=fn: a)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def last(self, path: str) -> Request:
        return [r for r in self.requests if r.path == path][-1]

    def __enter__(self) -> WebServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
