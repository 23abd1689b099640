"""A small HTTP server for the acceptance suites of issue 30, on 127.0.0.1 port 0.

It remembers every request (method, path, Host header, headers, body) so a test can prove
what was sent, or that nothing was. Routes:

- ``/echo/...`` answers ``{"ok": true, "path": ...}`` as JSON (POST bodies are recorded);
- ``/drip`` answers 200 with a long Content-Length and then one byte every half second, for a
  minute or until the client goes away (a server that never finishes);
- ``/mirror`` answers with the Authorization header and URL it received (a leaky API);
- ``/no-location`` a 302 without a Location; ``/status500...`` always a 500;
- ``/deep-json`` a JSON list nested 200,000 deep; ``/deep-html`` 100,000 nested divs;
- ``/page`` a small HTML page;
- ``/hop?to=URL`` a 302 to URL.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Seen:
    method: str
    path: str
    host: str
    headers: dict[str, str]
    body: bytes
    query: str = ""

    def json(self) -> Any:
        return json.loads(self.body.decode("utf-8"))


class RecordingServer:
    def __init__(self) -> None:
        self.seen: list[Seen] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                owner.seen.append(
                    Seen(
                        self.command,
                        parts.path,
                        self.headers.get("Host", ""),
                        dict(self.headers.items()),
                        body,
                        parts.query,
                    )
                )
                if parts.path.startswith("/echo"):
                    self._send(200, "application/json", json.dumps({"ok": True, "path": parts.path}).encode())
                elif parts.path == "/mirror":  # says back what it was sent: a leaky API
                    said = {"authorization": self.headers.get("Authorization", ""), "url": self.path}
                    self._send(200, "application/json", json.dumps(said).encode())
                elif parts.path == "/no-location":  # a redirect that says not where
                    self.send_response(302)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif parts.path.startswith("/status500"):
                    self._send(500, "text/plain", b"broken today")
                elif parts.path == "/deep-json":
                    self._send(200, "application/json", b"[" * 200_000 + b"]" * 200_000)
                elif parts.path == "/deep-html":
                    html = b"<html><body>" + b"<div>" * 100_000 + b"deep text" + b"</div>" * 100_000 + b"</body></html>"
                    self._send(200, "text/html", html)
                elif parts.path == "/page":
                    html = "<html><body><nav>menu</nav><h1>Title</h1><p>Hello page.</p></body></html>"
                    self._send(200, "text/html; charset=utf-8", html.encode())
                elif parts.path == "/hop":
                    target = parse_qs(parts.query).get("to", ["/"])[0]
                    self.send_response(302)
                    self.send_header("Location", target)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                elif parts.path == "/drip":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/html")
                    self.send_header("Content-Length", "100000")
                    self.end_headers()
                    end = time.monotonic() + 60
                    try:
                        while time.monotonic() < end:
                            self.wfile.write(b"a")
                            self.wfile.flush()
                            time.sleep(0.5)
                    except OSError:
                        pass
                    self.close_connection = True
                else:
                    self._send(404, "text/plain", b"not here")

            def _send(self, status: int, ctype: str, data: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = _handle  # noqa: N815 - http.server's names

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.httpd.block_on_close = False
        self.port = self.httpd.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> RecordingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def at(self, path: str) -> list[Seen]:
        return [s for s in self.seen if s.path == path]
