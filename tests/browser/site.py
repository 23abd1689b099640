"""A small web site for the browser tests: a threaded HTTP server on 127.0.0.1 (port 0) that
records every request it gets (so a test can tell a blocked request was never sent).

Pages: ``/login`` (a form posting to ``/welcome``), ``/table`` (a table with ``th`` headers) and
``/plain-table`` (headers in the first row), ``/js`` (content added by a script, late), ``/redirect``
(302 to ``/table``), ``/redirect-out`` (302 to another host), ``/out`` (a link and an image out of
scope, and a button that fetches from another host), ``/slow`` (answers after a delay),
``/socket?to=WS_URL`` (a page opening a WebSocket, ``#ws`` says what came of it), ``/ws`` (a
WebSocket that says "hello"), ``/sw`` (a page registering the service worker ``/sw.js``).
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

PAGES = {
    "/login": """<html><head><title>Log in</title></head><body>
<h1>Log in</h1>
<form action="/welcome" method="get">
  <input id="user" name="user" placeholder="User name">
  <input id="password" name="password" type="password" placeholder="Password">
  <select id="role" name="role"><option value="reader">Reader</option><option value="admin">Administrator</option></select>
  <button id="go" type="submit">Log in</button>
</form></body></html>""",
    "/table": """<html><body><table id="people">
<thead><tr><th>Name</th><th>Age</th></tr></thead>
<tbody><tr><td>Ada</td><td>36</td></tr><tr><td>Alan</td><td>41</td></tr></tbody>
</table><a id="logo" href="/img.png" data-kind="logo">logo</a></body></html>""",
    "/plain-table": """<html><body><table>
<tr><td>City</td><td>Country</td></tr><tr><td>Lyon</td><td>France</td></tr></table></body></html>""",
    "/js": """<html><body><div id="root">loading</div><script>
setTimeout(() => { const p = document.createElement('p'); p.id = 'late'; p.textContent = 'Rendered by script';
document.body.appendChild(p); document.getElementById('root').textContent = 'ready'; }, 300);
</script></body></html>""",
    "/sw": """<html><body><p id="sw">idle</p><script>
const out = document.getElementById('sw');
if (!navigator.serviceWorker) { out.textContent = 'unavailable'; }
else {
  navigator.serviceWorker.register('/sw.js')
    .then(() => navigator.serviceWorker.getRegistrations())
    .then((all) => { out.textContent = all.length ? 'registered' : 'not registered'; },
          () => { out.textContent = 'refused'; });
}
</script></body></html>""",
}

SOCKET_PAGE = """<html><body><p id="ws">idle</p><script>
const out = document.getElementById('ws');
const ws = new WebSocket(%s);
ws.onmessage = (e) => { out.textContent = 'got ' + e.data; };
ws.onclose = (e) => { if (out.textContent === 'idle') out.textContent = 'closed ' + e.code; };
</script></body></html>"""

_WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


class Site:
    """``with Site() as site: site.url("/login")``; ``site.requests``: the paths asked, in order."""

    def __init__(self, other_host: str = "") -> None:
        self.requests: list[str] = []
        self.other = other_host  # a URL base that is outside the scope (another server)
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - the http.server API
                site.requests.append(self.path)
                path = urlsplit(self.path).path
                query = parse_qs(urlsplit(self.path).query)
                if path == "/redirect":
                    return self._redirect("/table")
                if path == "/redirect-out":
                    return self._redirect(site.other + "/table")
                if path == "/slow":
                    time.sleep(float(query.get("s", ["5"])[0]))
                    return self._page("<html><body>slow</body></html>")
                if path == "/welcome":
                    user = query.get("user", [""])[0]
                    role = query.get("role", [""])[0]
                    return self._page(
                        f"<html><body><h1 id='hello'>Welcome {user}</h1><p id='role'>{role}</p></body></html>"
                    )
                if path == "/out":
                    o = site.other
                    return self._page(
                        f"<html><body><a id='away' href='{o}/table'>away</a><img src='{o}/pixel.png'>"
                        f"<button id='fetch' onclick=\"fetch('{o}/api').then(()=>{{}},()=>{{}});"
                        "document.getElementById('done').textContent='sent'\">fetch</button>"
                        "<p id='done'>idle</p></body></html>"
                    )
                if path == "/ws" and self.headers.get("Upgrade", "").lower() == "websocket":
                    return self._socket()
                if path == "/socket":
                    to = query.get("to", [""])[0]
                    return self._page(SOCKET_PAGE % json.dumps(to))
                if path == "/sw.js":
                    self.send_response(200)
                    self.send_header("Content-Type", "text/javascript")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return None
                if path == "/img.png":
                    self.send_response(200)
                    self.send_header("Content-Type", "image/png")
                    self.end_headers()
                    return None
                body = PAGES.get(path)
                if body is None:
                    self.send_response(404)
                    self.end_headers()
                    return None
                return self._page(body)

            def _page(self, body: str) -> None:
                data = body.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _socket(self) -> None:
                """A WebSocket handshake, one text frame ("hello"), then the connection held a moment."""
                key = self.headers.get("Sec-WebSocket-Key", "")
                accept = base64.b64encode(hashlib.sha1((key + _WS_GUID).encode()).digest()).decode()
                self.protocol_version = "HTTP/1.1"  # a browser wants "HTTP/1.1 101"
                self.send_response(101, "Switching Protocols")
                self.send_header("Upgrade", "websocket")
                self.send_header("Connection", "Upgrade")
                self.send_header("Sec-WebSocket-Accept", accept)
                self.end_headers()
                self.wfile.write(bytes([0x81, 5]) + b"hello")
                self.wfile.flush()
                time.sleep(1)
                self.close_connection = True

            def _redirect(self, where: str) -> None:
                self.send_response(302)
                self.send_header("Location", where)
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def __enter__(self) -> Site:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
