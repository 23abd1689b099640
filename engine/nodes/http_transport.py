"""The transport under the ``http`` and ``fetch`` nodes: URL checks, redirects, capped reading.

:func:`exchange` sends one built request and follows redirects by hand (each hop checked: only
http and https, at most :data:`MAX_REDIRECTS`, a hop back to a visited URL refused as a loop,
``check_target`` asked before every request); it streams the body and stops at ``max_bytes``
(a larger ``Content-Length`` is refused before reading; gzip/deflate is inflated here a piece at
a time so a small bomb is refused at the limit). :func:`check_url` is the first URL's check,
:func:`own_client` the client used when the caller gives none. The invariants are listed in
:mod:`engine.nodes.http_request`'s docstring.
"""

from __future__ import annotations

import inspect
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import httpx

from engine.nodes.http_masking import mask_text, mask_url
from engine.nodes.web_errors import RedirectError, RequestFailedError, ResponseTooLargeError, UrlNotAllowedError

__all__ = [
    "MAX_REDIRECTS",
    "MAX_RESPONSE_BYTES",
    "ALLOWED_SCHEMES",
    "USER_AGENT",
    "EventSink",
    "HeadCheck",
    "RawResponse",
    "check_url",
    "exchange",
    "emit",
    "own_client",
]

MAX_REDIRECTS = 5
MAX_RESPONSE_BYTES = 10 * 1024 * 1024
ALLOWED_SCHEMES = ("http", "https")
USER_AGENT = "Flowdesk/0.1"

EventSink = Callable[[str, dict[str, Any]], Awaitable[None] | None]
"""``on_event(kind, data)``: called with ``("http_request", {method, url})`` before the request is
sent and ``("http_response", {status, bytes, durationMs})`` once the body is read (also for a
4xx/5xx that then fails). May be a plain function or a coroutine function."""


def check_url(url: str, secrets: Iterable[str] = ()) -> httpx.URL:
    """The URL as httpx sees it, if it is an absolute http(s) URL with a host; else
    :class:`UrlNotAllowedError` naming the scheme."""
    shown = mask_url(url, secrets)
    text = str(url).strip()
    if not text:
        raise UrlNotAllowedError("No URL given: enter an http:// or https:// address.")
    try:
        parsed = httpx.URL(text)
    except (httpx.InvalidURL, ValueError, TypeError) as err:
        # httpx's reason may quote a piece of the URL (a password read as a port): only without secrets
        detail = "" if "@" in text or any(secrets) else f" ({err})"
        raise UrlNotAllowedError(f"Not a valid URL: {shown}{detail}.", url=shown) from None
    scheme = parsed.scheme.lower()
    if not scheme:
        raise UrlNotAllowedError(f"Not an absolute URL: {shown}; start it with http:// or https://.", url=shown)
    if scheme not in ALLOWED_SCHEMES:
        raise UrlNotAllowedError(f"Only http and https URLs are allowed, not {scheme}:// ({shown}).", url=shown)
    if not parsed.host:
        raise UrlNotAllowedError(f"The URL has no host: {shown}.", url=shown)
    return parsed


@dataclass(slots=True)
class RawResponse:
    """A finished exchange before interpretation (shared by ``http`` and ``fetch``)."""

    status: int
    reason: str
    headers: httpx.Headers
    body: bytes
    url: httpx.URL
    duration_ms: int
    redirects: list[str]

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip().lower()

    @property
    def charset(self) -> str | None:
        for part in self.headers.get("content-type", "").split(";")[1:]:
            key, _, value = part.partition("=")
            if key.strip().lower() == "charset" and value.strip():
                return value.strip().strip("\"'")
        return None

    def text(self, default: str = "utf-8") -> str:
        encoding = self.charset or default
        try:
            return self.body.decode(encoding, "replace")
        except LookupError:
            return self.body.decode(default, "replace")


HeadCheck = Callable[[httpx.Response], None]


def _describe(err: httpx.HTTPError, shown: str, secrets: Iterable[str]) -> RequestFailedError:
    detail = mask_text(str(err) or type(err).__name__, secrets)
    if isinstance(err, httpx.ConnectTimeout):
        return RequestFailedError(f"Timed out connecting to {shown}.", url=shown)
    if isinstance(err, httpx.TimeoutException):
        return RequestFailedError(f"Timed out waiting for {shown} ({type(err).__name__}).", url=shown)
    if isinstance(err, httpx.ConnectError):
        return RequestFailedError(f"Could not connect to {shown}: {detail}.", url=shown)
    if isinstance(err, (httpx.RemoteProtocolError, httpx.ReadError)):
        return RequestFailedError(
            f"The connection to {shown} was cut before the answer was complete ({detail}).", url=shown
        )
    return RequestFailedError(f"HTTP error talking to {shown}: {detail}", url=shown)


_AS_SET = httpx.Auth()  # no authentication step: the request's own headers are sent as they are


async def exchange(
    client: httpx.AsyncClient,
    request: httpx.Request,
    *,
    secrets: Iterable[str] = (),
    max_bytes: int = MAX_RESPONSE_BYTES,
    max_redirects: int = MAX_REDIRECTS,
    check_head: HeadCheck | None = None,
    check_target: Callable[[str], None] | None = None,
) -> RawResponse:
    """Send ``request``, follow redirects (checked, capped, loops refused) and read the body
    with the size cap. ``check_head`` may refuse a final response from its status line and
    headers before its body is read (``fetch`` refuses binary content that way).
    ``check_target(url)`` is asked before each request, redirects included, and raises to
    refuse it (the workflow's ``permissions.network``)."""
    secrets = list(secrets)
    started = time.perf_counter()
    visited = {_visit_key(request)}
    chain: list[str] = []
    while True:
        shown = mask_url(str(request.url), secrets)
        if check_target is not None:
            check_target(str(request.url))
        try:
            # An Authorization header the node sets wins over the URL's user:password, which httpx
            # would otherwise turn into Basic auth over it.
            auth = _AS_SET if "authorization" in request.headers else httpx.USE_CLIENT_DEFAULT
            response = await client.send(request, stream=True, follow_redirects=False, auth=auth)
        except httpx.UnsupportedProtocol:
            raise UrlNotAllowedError(f"Only http and https URLs are allowed ({shown}).", url=shown) from None
        except httpx.InvalidURL:  # httpx builds the next hop in send(): a Location of data:… fails there
            raise UrlNotAllowedError(
                f"{shown} redirected to an address that is not an http or https URL that can be followed.", url=shown
            ) from None
        except httpx.HTTPError as err:
            raise _describe(err, shown, secrets) from None
        try:
            try:
                nxt = response.next_request
            except (httpx.InvalidURL, ValueError):  # Location: data:… or a URL httpx cannot build
                given = mask_url(response.headers.get("location", "").strip(), secrets)
                raise UrlNotAllowedError(
                    f"{shown} redirected to {given[:200]}, which is not an http or https URL that can be followed.",
                    url=given,
                ) from None
            if nxt is None and response.status_code in _REDIRECTS and not response.headers.get("location", "").strip():
                raise RedirectError(
                    f"{shown} answered HTTP {response.status_code} {response.reason_phrase} (a "
                    "redirect) without a Location header: there is no address to follow.",
                    url=shown,
                    chain=chain + [shown],
                )
            if nxt is not None:
                chain.append(shown)
                target = mask_url(str(nxt.url), secrets)
                if nxt.url.scheme.lower() not in ALLOWED_SCHEMES:
                    given = mask_url(response.headers.get("location", "").strip() or str(nxt.url), secrets)
                    raise UrlNotAllowedError(
                        f"{shown} redirected to {given}: only http and https URLs are allowed.", url=given
                    )
                if _visit_key(nxt) in visited:
                    raise RedirectError(
                        f"Redirect loop: {' → '.join(chain + [target])}", url=target, chain=chain + [target], loop=True
                    )
                if len(chain) > max_redirects:
                    raise RedirectError(
                        f"Too many redirects: more than {max_redirects}, starting at {chain[0]} (last {target}).",
                        url=target,
                        chain=chain + [target],
                    )
                visited.add(_visit_key(nxt))
                request = nxt
                continue
            if check_head is not None:
                check_head(response)
            body = await _read_capped(response, shown, max_bytes, secrets)
            return RawResponse(
                status=response.status_code,
                reason=response.reason_phrase,
                headers=response.headers,
                body=body,
                url=response.url,
                redirects=chain,
                duration_ms=round((time.perf_counter() - started) * 1000),
            )
        finally:
            await response.aclose()


_REDIRECTS = (301, 302, 303, 307, 308)


def _visit_key(request: httpx.Request) -> tuple[str, str]:
    return request.method, str(request.url.copy_with(fragment=None))


async def _read_capped(response: httpx.Response, shown: str, max_bytes: int, secrets: list[str]) -> bytes:
    def too_large(what: str) -> ResponseTooLargeError:
        return ResponseTooLargeError(
            f"The response from {shown} is too large: {what}, over the limit of {_size(max_bytes)}.",
            url=shown,
            limit=max_bytes,
        )

    length = response.headers.get("content-length", "").strip()
    if response.request.method != "HEAD" and length.isdigit() and int(length) > max_bytes:
        raise too_large(f"{_size(int(length))} announced")
    chunks: list[bytes] = []
    total = 0
    encoding = response.headers.get("content-encoding", "").strip().lower()
    try:
        if encoding in _ZLIB_WBITS:  # inflated here, a piece at a time: a bomb is refused at the limit
            async for chunk in _inflate(response, encoding, shown):
                total += len(chunk)
                if total > max_bytes:
                    raise too_large(f"more than {_size(max_bytes)} received once decompressed")
                chunks.append(chunk)
        else:
            async for chunk in response.aiter_bytes():
                total += len(chunk)
                if total > max_bytes:
                    raise too_large(f"more than {_size(max_bytes)} received")
                chunks.append(chunk)
    except httpx.HTTPError as err:
        raise _describe(err, shown, secrets) from None
    return b"".join(chunks)


_ZLIB_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS}
_INFLATE_PIECE = 256 * 1024


async def _inflate(response: httpx.Response, encoding: str, shown: str) -> AsyncIterator[bytes]:
    """The body of a gzip or deflate response, decompressed in pieces of at most 256 KB (httpx
    inflates a whole network chunk at once: 64 KB of a bomb became 64 MB before any limit)."""
    inflater = zlib.decompressobj(_ZLIB_WBITS[encoding])
    first = True
    async for raw in response.aiter_raw():
        data = raw
        while data:
            try:
                piece = inflater.decompress(data, _INFLATE_PIECE)
            except zlib.error:
                if first and encoding == "deflate":  # raw deflate without the zlib header, as some servers send
                    inflater, first = zlib.decompressobj(-zlib.MAX_WBITS), False
                    continue
                raise RequestFailedError(
                    f"The response from {shown} says it is {encoding}-compressed but cannot be decompressed.", url=shown
                ) from None
            first = False
            if piece:
                yield piece
            data = inflater.unconsumed_tail
    rest = inflater.flush()
    if rest:
        yield rest


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.3g} MB"
    if n >= 1024:
        return f"{n / 1024:.3g} KB"
    return f"{n} bytes"


async def emit(on_event: EventSink | None, kind: str, data: dict[str, Any]) -> None:
    if on_event is None:
        return
    result = on_event(kind, data)
    if inspect.isawaitable(result):
        await result


def own_client() -> httpx.AsyncClient:
    """The client used when the caller gives none (closed after the request)."""
    return httpx.AsyncClient(
        timeout=httpx.Timeout(30.0, connect=10.0),
        follow_redirects=False,
        headers={"User-Agent": USER_AGENT, "Accept-Encoding": "gzip, deflate"},
    )
