"""engine.nodes.http_request against a real HTTP server on 127.0.0.1 (tests/fakes/web_server.py)."""

from __future__ import annotations

import asyncio
import gzip
import json
import socket
import threading
from typing import Any
from urllib.parse import quote

import httpx
import pytest

from engine import FlowdeskError
from engine.nodes.http_request import (
    MAX_RESPONSE_BYTES,
    SECRET_MASK,
    HttpRequestSpec,
    HttpStatusError,
    InvalidRequestError,
    RedirectError,
    RequestFailedError,
    ResponseTooLargeError,
    UrlNotAllowedError,
    WebRequestError,
    looks_like_literal_credential,
    mask_url,
    request_event_data,
    send_request,
)
from tests.fakes.web_server import Answer, Request, WebServer, json_answer, redirect, text_answer

MB = 1024 * 1024


def echo(req: Request) -> Answer:
    return json_answer(
        {
            "method": req.method,
            "path": req.path,
            "query": req.query,
            "contentType": req.headers.get("content-type"),
            "body": req.body.decode(),
        }
    )


@pytest.fixture()
def web():
    with WebServer() as server:
        server.route("/items", json_answer({"items": [{"name": "alpha"}, {"name": "beta"}]}))
        server.route("/echo", echo)
        server.route("/missing", text_answer("no page called missing here", 404))
        server.route("/plain", text_answer("just text"))
        server.route("/loop-a", redirect("/loop-b"))
        server.route("/loop-b", redirect("/loop-a"))
        for n in range(8):
            server.route(f"/hop{n}", redirect(f"/hop{n + 1}", 307 if n % 2 else 302))
        server.route("/hop8", text_answer("arrived"))
        server.route("/to-file", redirect("file:///etc/passwd"))
        yield server


class Events:
    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        self.seen.append((kind, data))

    @property
    def kinds(self) -> list[str]:
        return [k for k, _ in self.seen]


async def test_get_json_parses_output_and_logs_both_events(web: WebServer) -> None:
    events = Events()
    result = await send_request(HttpRequestSpec(url=web.url("/items")), on_event=events)
    assert result.status == 200 and result.ok
    assert result.output == {"items": [{"name": "alpha"}, {"name": "beta"}]}
    assert result.output["items"][0]["name"] == "alpha"
    assert result.content_type == "application/json"
    assert result.headers["content-type"] == "application/json"
    assert result.bytes == len(json.dumps({"items": [{"name": "alpha"}, {"name": "beta"}]}))
    assert events.seen == [
        ("http_request", {"method": "GET", "url": web.url("/items")}),
        ("http_response", {"status": 200, "bytes": result.bytes, "durationMs": result.duration_ms}),
    ]
    assert isinstance(result.duration_ms, int) and result.duration_ms >= 0


async def test_text_response_is_text(web: WebServer) -> None:
    result = await send_request({"url": web.url("/plain")})
    assert result.output == "just text" and result.text == "just text"


async def test_post_json_body_keeps_its_list(web: WebServer) -> None:
    body = {"items": [1, "two", {"three": None}, [True]], "count": 4}
    result = await send_request({"method": "post", "url": web.url("/echo"), "bodyType": "json", "body": body})
    assert web.last("/echo").json == body
    assert result.output["method"] == "POST" and result.output["contentType"] == "application/json"
    # a whole-field reference that resolved to a bare list is sent as that list
    await send_request({"method": "POST", "url": web.url("/echo"), "bodyType": "json", "body": ["a", 2]})
    assert web.last("/echo").json == ["a", 2]
    # JSON typed as text is parsed, so its types stay
    await send_request({"method": "PUT", "url": web.url("/echo"), "bodyType": "json", "body": '{"n": [1, 2]}'})
    assert web.last("/echo").json == {"n": [1, 2]}


async def test_invalid_json_text_body_is_refused_before_sending(web: WebServer) -> None:
    with pytest.raises(InvalidRequestError, match="not valid JSON"):
        await send_request({"method": "POST", "url": web.url("/echo"), "bodyType": "json", "body": "{nope"})
    assert web.requests == []


async def test_form_body(web: WebServer) -> None:
    form = [
        {"key": "name", "value": "Ada Lovelace"},
        {"key": "n", "value": 3},
        {"key": "ok", "value": True},
        {"key": "", "value": "blank rows are skipped"},
    ]
    result = await send_request({"method": "POST", "url": web.url("/echo"), "bodyType": "form", "formData": form})
    assert web.last("/echo").body == b"name=Ada+Lovelace&n=3&ok=true"
    assert result.output["contentType"] == "application/x-www-form-urlencoded"


async def test_text_body(web: WebServer) -> None:
    await send_request({"method": "POST", "url": web.url("/echo"), "bodyType": "text", "body": "héllo"})
    req = web.last("/echo")
    assert req.body == "héllo".encode() and req.headers["content-type"] == "text/plain; charset=utf-8"


async def test_query_and_headers(web: WebServer) -> None:
    spec = {
        "url": web.url("/echo?fixed=1"),
        "query": [{"key": "q", "value": "a b&c"}, {"key": "n", "value": 7}],
        "headers": [
            {"key": "X-Trace", "value": "t-1"},
            {"key": "Accept", "value": "application/json"},
            {"key": " ", "value": "skipped"},
        ],
    }
    result = await send_request(spec)
    req = web.last("/echo")
    assert req.query == [("fixed", "1"), ("q", "a b&c"), ("n", "7")]
    assert req.headers["x-trace"] == "t-1" and req.headers["accept"] == "application/json"
    assert result.output["query"] == [["fixed", "1"], ["q", "a b&c"], ["n", "7"]]
    # a plain mapping is accepted for the tables too
    await send_request({"url": web.url("/echo"), "query": {"k": "v"}, "headers": {"X-Other": "o"}})
    assert web.last("/echo").query == [("k", "v")] and web.last("/echo").headers["x-other"] == "o"


async def test_404_fails_with_status_by_default(web: WebServer) -> None:
    events = Events()
    with pytest.raises(HttpStatusError) as info:
        await send_request({"url": web.url("/missing")}, on_event=events)
    err = info.value
    assert err.status == 404 and err.excerpt == "no page called missing here"
    assert str(err) == f"HTTP 404 Not Found from GET {web.url('/missing')}: no page called missing here"
    assert err.result is not None and err.result.output == "no page called missing here"
    assert events.kinds == ["http_request", "http_response"]  # the response is logged before the failure
    assert events.seen[1][1]["status"] == 404


async def test_404_without_fail_on_status_is_an_output(web: WebServer) -> None:
    result = await send_request({"url": web.url("/missing"), "failOnStatus": False})
    assert result.status == 404 and not result.ok
    assert result.output == "no page called missing here"


async def test_20_mb_streamed_body_is_refused_while_streaming(web: WebServer) -> None:
    chunk = b"x" * 65536
    web.route("/big", lambda req: Answer(200, {"Content-Type": "text/plain"}, chunks=(chunk for _ in range(320))))
    with pytest.raises(ResponseTooLargeError, match="over the limit of 10 MB") as info:
        await send_request({"url": web.url("/big")})
    assert info.value.limit == MAX_RESPONSE_BYTES
    req = web.last("/big")
    assert await asyncio.to_thread(req.disconnected.wait, 10)
    assert req.sent < 20 * MB  # the client hung up; the server never got to send it all


async def test_20_mb_announced_body_is_refused_before_reading(web: WebServer) -> None:
    web.route("/big-announced", Answer(200, {"Content-Type": "application/octet-stream"}, b"y" * (20 * MB)))
    with pytest.raises(ResponseTooLargeError, match="20 MB announced"):
        await send_request({"url": web.url("/big-announced")})
    req = web.last("/big-announced")
    assert await asyncio.to_thread(req.disconnected.wait, 10)
    assert req.sent == 0


async def test_a_small_gzip_body_that_inflates_past_the_limit_is_refused(web: WebServer) -> None:
    bomb = gzip.compress(b"\0" * (20 * MB), compresslevel=9)
    assert len(bomb) < MB
    web.route("/bomb", Answer(200, {"Content-Type": "text/plain", "Content-Encoding": "gzip"}, bomb))
    with pytest.raises(ResponseTooLargeError, match="more than 10 MB received"):
        await send_request({"url": web.url("/bomb")})


async def test_head_reads_no_body(web: WebServer) -> None:
    web.route("/head", Answer(200, {"Content-Type": "text/plain", "Content-Length": str(20 * MB)}))
    result = await send_request({"method": "HEAD", "url": web.url("/head")})
    assert result.status == 200 and result.bytes == 0 and result.headers["content-length"] == str(20 * MB)


async def test_custom_size_limit(web: WebServer) -> None:
    with pytest.raises(ResponseTooLargeError):
        await send_request({"url": web.url("/plain")}, max_bytes=4)
    assert (await send_request({"url": web.url("/plain")}, max_bytes=9)).output == "just text"


async def test_redirect_loop_is_refused(web: WebServer) -> None:
    with pytest.raises(RedirectError, match="Redirect loop") as info:
        await send_request({"url": web.url("/loop-a")})
    assert info.value.loop
    assert info.value.chain == [web.url("/loop-a"), web.url("/loop-b"), web.url("/loop-a")]
    assert [r.path for r in web.requests] == ["/loop-a", "/loop-b"]


async def test_redirects_are_capped_at_five(web: WebServer) -> None:
    assert (await send_request({"url": web.url("/hop3")})).output == "arrived"  # 5 hops: fine
    web.requests.clear()
    with pytest.raises(RedirectError, match="Too many redirects: more than 5") as info:
        await send_request({"url": web.url("/hop2")})  # 6 hops
    assert not info.value.loop
    assert len(web.requests) == 6


async def test_post_body_kept_over_307_dropped_over_302(web: WebServer) -> None:
    web.route("/307", redirect("/echo", 307))
    web.route("/303", redirect("/echo", 303))
    result = await send_request({"method": "POST", "url": web.url("/307"), "bodyType": "json", "body": {"a": 1}})
    assert result.output["method"] == "POST" and web.last("/echo").json == {"a": 1}
    assert result.redirects == [web.url("/307")] and result.url == web.url("/echo")
    result = await send_request({"method": "POST", "url": web.url("/303"), "bodyType": "json", "body": {"a": 1}})
    assert result.output["method"] == "GET"


@pytest.mark.parametrize(
    "url",
    ["file:///etc/passwd", "ftp://example.org/x", "data:text/plain,hi", "javascript:alert(1)", "/relative/path", ""],
)
async def test_non_http_urls_are_refused(url: str) -> None:
    events = Events()
    with pytest.raises(UrlNotAllowedError) as info:
        await send_request({"url": url}, on_event=events)
    assert events.seen == []
    if url.startswith("file"):
        assert str(info.value) == "Only http and https URLs are allowed, not file:// (file:///etc/passwd)."


async def test_redirect_to_file_is_refused(web: WebServer) -> None:
    with pytest.raises(UrlNotAllowedError, match="redirected to file:///etc/passwd: only http and https"):
        await send_request({"url": web.url("/to-file")})


async def test_secrets_are_masked_in_events_and_errors(web: WebServer) -> None:
    secret = "s3cr3t/tok+en"
    web.route("/leaky", lambda req: text_answer(f"bad key {req.headers.get('x-api-key')}", 401))
    events = Events()
    spec = {
        "url": web.url("/leaky").replace("http://", f"http://bob:{quote(secret, safe='')}@") + "?sig=abc",
        "query": [{"key": "key", "value": secret}, {"key": "q", "value": f"x{secret}y"}],
        "headers": [{"key": "X-Api-Key", "value": secret}],
    }
    with pytest.raises(HttpStatusError) as info:
        await send_request(spec, secrets={secret}, on_event=events)
    assert web.last("/leaky").headers["x-api-key"] == secret  # sent for real
    flat = json.dumps(events.seen) + str(info.value) + info.value.excerpt + (info.value.url or "")
    assert secret not in flat and "s3cr3t%2Ftok%2Ben" not in flat and "s3cr3t" not in flat
    url = events.seen[0][1]["url"]
    assert url == (
        f"http://bob:{SECRET_MASK}@127.0.0.1:{web.port}/leaky?sig={SECRET_MASK}&key={SECRET_MASK}&q=x{SECRET_MASK}y"
    )
    assert str(info.value).endswith(f": bad key {SECRET_MASK}")


async def test_an_invalid_url_does_not_echo_pieces_of_a_secret() -> None:
    with pytest.raises(UrlNotAllowedError) as info:
        await send_request({"url": "http://bob:s3cr3t/tok@127.0.0.1:1/"}, secrets={"s3cr3t/tok"})
    assert "s3cr3t" not in str(info.value) and str(info.value).startswith("Not a valid URL: http://bob:")


async def test_a_given_client_is_used_and_left_open(web: WebServer) -> None:
    async with httpx.AsyncClient(headers={"X-From": "shared"}) as client:
        await send_request({"url": web.url("/echo")}, client=client)
        assert web.last("/echo").headers["x-from"] == "shared"
        assert not client.is_closed


async def test_cancellation_closes_the_connection(web: WebServer) -> None:
    started = threading.Event()

    def slow(req: Request) -> Answer:
        def chunks():
            started.set()
            for _ in range(400):  # at most ~10 s
                yield b"." * 1024

        return Answer(200, {"Content-Type": "text/plain"}, chunks=chunks(), pause=0.025)

    web.route("/slow", slow)
    task = asyncio.create_task(send_request({"url": web.url("/slow")}))
    assert await asyncio.to_thread(started.wait, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    req = web.last("/slow")
    assert await asyncio.to_thread(req.disconnected.wait, 10)
    assert req.sent < 400 * 1024


async def test_timeout_covers_the_whole_exchange(web: WebServer) -> None:
    web.route("/trickle", lambda req: Answer(200, {}, chunks=(b"." for _ in range(200)), pause=0.05))
    with pytest.raises(RequestFailedError, match="Timed out after 0.3 s waiting for"):
        await send_request({"url": web.url("/trickle")}, timeout=0.3)


async def test_connection_refused_is_a_request_failure() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(RequestFailedError, match=f"Could not connect to http://127.0.0.1:{port}/"):
        await send_request({"url": f"http://127.0.0.1:{port}/"})


@pytest.mark.parametrize(
    "data, message",
    [
        ({"url": "http://127.0.0.1:1/", "method": "FETCH"}, "Unknown HTTP method 'FETCH'"),
        ({"url": "http://127.0.0.1:1/", "bodyType": "xml"}, "bodyType"),
        ({"url": "http://127.0.0.1:1/", "headers": [{"key": "Bad Name", "value": "v"}]}, "Header name 'Bad Name'"),
        ({"url": "http://127.0.0.1:1/", "headers": [{"key": "X", "value": "a\r\nb"}]}, "line break"),
    ],
)
async def test_bad_requests_are_refused_clearly(data: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidRequestError, match=message):
        await send_request(data)


def test_error_hierarchy() -> None:
    for cls in (
        InvalidRequestError,
        UrlNotAllowedError,
        RedirectError,
        ResponseTooLargeError,
        HttpStatusError,
        RequestFailedError,
    ):
        assert issubclass(cls, WebRequestError) and issubclass(cls, RuntimeError) and issubclass(cls, FlowdeskError)
    assert issubclass(UrlNotAllowedError, ValueError)


def test_request_event_data_and_mask_url() -> None:
    assert request_event_data("get", "https://api.example/x?token=abc&page=2", ["zzz"]) == {
        "method": "GET",
        "url": f"https://api.example/x?token={SECRET_MASK}&page=2",
    }
    assert mask_url("https://ghp_secretvalue@github.example/repo", ["ghp_secretvalue"]) == (
        f"https://{SECRET_MASK}@github.example/repo"
    )
    assert mask_url("https://a.example/p?q=1") == "https://a.example/p?q=1"


@pytest.mark.parametrize(
    "name", ["refresh_token", "auth_token", "private_token", "passwd", "X-Api-Key", "session_token"]
)
def test_every_parameter_validation_calls_a_credential_is_masked_in_the_url_shown(name) -> None:
    """What validation warns of as a credential in a URL, the request's event never shows: one
    rule for both (``refresh_token`` and ``passwd`` were warned of but shown in clear)."""
    from engine.nodes.credentials import url_credential_params

    url = f"https://api.example/x?{name}=abcdef123456&page=2"
    assert url_credential_params(url) == [name]
    assert mask_url(url) == f"https://api.example/x?{name}={SECRET_MASK}&page=2"
    assert mask_url("https://api.example/search?q=token%20limits") == "https://api.example/search?q=token%20limits"


@pytest.mark.parametrize(
    "value, expected",
    [
        ("Bearer abcdefghijklmnopqrstuvwx0123", True),
        ("bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", True),
        ("sk-proj-1234567890abcdefghij", True),
        ("sk-ant-api03-abcdefghijklmnop", True),
        ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", True),
        ("AKIAIOSFODNN7EXAMPLE", True),
        ("d41d8cd98f00b204e9800998ecf8427e", True),
        ("dGhpcyBpcyBhIGxvbmcgYmFzZTY0IHRva2VuMTIz", True),
        ("Basic dXNlcjpwYXNzd29yZA==", True),
        ("Bearer {{secrets.API_KEY}}", False),
        ("{{secrets.OPENAI_KEY}}", False),
        ("Bearer short", False),
        ("application/json", False),
        ("text/html; charset=utf-8", False),
        ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko)", False),
        ("https://example.org/a/very/long/path/that/is/not/a/token", False),
        ("gzip, deflate, br", False),
        ("", False),
        (42, False),
    ],
)
def test_looks_like_literal_credential(value: Any, expected: bool) -> None:
    assert looks_like_literal_credential(value) is expected


def test_credential_header_names_make_shorter_values_count() -> None:
    assert looks_like_literal_credential("hunter2hunter", "X-API-Key")
    assert not looks_like_literal_credential("hunter2hunter", "X-Request-Id")
    assert not looks_like_literal_credential("{{secrets.KEY}}", "Authorization")
    uuid = "123e4567-e89b-12d3-a456-426614174000"
    assert not looks_like_literal_credential(uuid, "Idempotency-Key") and not looks_like_literal_credential(uuid)
    assert looks_like_literal_credential(uuid, "X-API-Key")


async def test_the_nodes_authorization_header_wins_over_the_urls_user_and_password(web: WebServer) -> None:
    with_user = web.url("/echo").replace("http://", "http://ann:pw@")
    await send_request({"url": with_user, "headers": [{"key": "Authorization", "value": "Bearer t0ken"}]})
    assert web.last("/echo").headers.get("authorization") == "Bearer t0ken"
    await send_request({"url": with_user})  # without one, the URL's user:password is Basic auth
    assert web.last("/echo").headers.get("authorization", "").startswith("Basic ")
