"""HTTP requests for the ``http`` node (and the transport under the ``fetch`` node).

Given already-resolved values (templates are resolved by the caller) and the set of secret
strings they contain, :func:`send_request` sends one request over httpx and returns an
:class:`HttpResult`; every refusal or failure is a :class:`WebRequestError`.

Invariants
* Only ``http`` and ``https`` URLs are sent, at the start and at every redirect hop
  (``file://``, ``ftp://``, ``data:`` … are refused with :class:`UrlNotAllowedError`).
* Redirects are followed by hand, at most :data:`MAX_REDIRECTS` hops; a hop back to a URL
  already visited is refused at once as a loop (:class:`RedirectError`). httpx builds each hop
  (303 → GET, ``Authorization`` dropped when the origin changes).
* The response body is streamed and refused as soon as it passes ``max_bytes`` (default
  :data:`MAX_RESPONSE_BYTES`, 10 MB; a larger ``Content-Length`` is refused before reading);
  it is never read whole into memory first. The limit counts decoded bytes, so a small
  gzip body that inflates past it is refused too.
* Cancellation (and the ``timeout`` deadline, which covers the whole exchange including the
  body) closes the response and, when this module made it, the client.
* Secrets never leave in event data or error messages: each secret (also percent-encoded)
  is replaced by :data:`SECRET_MASK`, a URL's userinfo password is always masked, and so are
  the values of query parameters whose name says they hold a credential. The response
  itself is returned as received; masking what is stored is the caller's job.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import time
import zlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote, quote_plus, unquote_plus, urlencode, urlsplit, urlunsplit

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.errors import FlowdeskError
from engine.graph.templates import SECRET_MASK
from engine.nodes.credentials import looks_like_literal_credential

__all__ = [
    "HttpRequestSpec",
    "HttpResult",
    "KeyValue",
    "send_request",
    "request_event_data",
    "mask_url",
    "mask_text",
    "looks_like_literal_credential",
    "WebRequestError",
    "InvalidRequestError",
    "UrlNotAllowedError",
    "RedirectError",
    "ResponseTooLargeError",
    "HttpStatusError",
    "RequestFailedError",
    "MAX_REDIRECTS",
    "MAX_RESPONSE_BYTES",
    "SECRET_MASK",
    "EventSink",
]

MAX_REDIRECTS = 5
MAX_RESPONSE_BYTES = 10 * 1024 * 1024
ALLOWED_SCHEMES = ("http", "https")
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
USER_AGENT = "Flowdesk/0.1"
EXCERPT_CHARS = 200
# Query parameters whose value is a credential whatever the secret set says.
_SENSITIVE_PARAMS = {
    "key",
    "apikey",
    "api_key",
    "api-key",
    "token",
    "access_token",
    "auth",
    "password",
    "secret",
    "client_secret",
    "sig",
    "signature",
}

EventSink = Callable[[str, dict[str, Any]], Awaitable[None] | None]
"""``on_event(kind, data)``: called with ``("http_request", {method, url})`` before the request is
sent and ``("http_response", {status, bytes, durationMs})`` once the body is read (also for a
4xx/5xx that then fails). May be a plain function or a coroutine function."""


# --------------------------------------------------------------------------- errors


class WebRequestError(FlowdeskError, RuntimeError):
    """Root of every refusal or failure of an ``http`` or ``fetch`` step; ``str()`` is for people
    (secrets already masked). ``url`` is the masked URL concerned, when there is one."""

    def __init__(self, message: str, *, url: str | None = None) -> None:
        super().__init__(message)
        self.url = url


class InvalidRequestError(WebRequestError, ValueError):
    """The request itself is wrong (method, header, body that is not JSON, bad selector…)."""


class UrlNotAllowedError(InvalidRequestError):
    """The URL is not an http(s) URL with a host (``file://``, ``ftp://``, ``data:``, relative…)."""


class RedirectError(WebRequestError):
    """A redirect loop, or more than :data:`MAX_REDIRECTS` hops. ``chain`` lists the masked URLs."""

    def __init__(
        self, message: str, *, url: str | None = None, chain: list[str] | None = None, loop: bool = False
    ) -> None:
        super().__init__(message, url=url)
        self.chain = chain or []
        self.loop = loop


class ResponseTooLargeError(WebRequestError):
    """The body passed the size limit (``limit`` bytes); reading stopped there."""

    def __init__(self, message: str, *, url: str | None = None, limit: int = 0) -> None:
        super().__init__(message, url=url)
        self.limit = limit


class HttpStatusError(WebRequestError):
    """A 4xx/5xx answer with ``failOnStatus``: ``status``, ``excerpt`` (start of the body, masked)
    and the whole ``result`` (for an ``error`` branch that wants the body)."""

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        status: int = 0,
        excerpt: str = "",
        result: HttpResult | None = None,
    ) -> None:
        super().__init__(message, url=url)
        self.status = status
        self.excerpt = excerpt
        self.result = result


class RequestFailedError(WebRequestError):
    """No usable answer: connection refused, DNS, TLS, timeout, connection cut mid-body."""


# --------------------------------------------------------------------------- the request


class KeyValue(BaseModel):
    """One row of a key/value table (``query``, ``headers``, ``formData``); blank keys are skipped."""

    model_config = ConfigDict(extra="ignore")

    key: str = ""
    value: Any = ""


def _rows(value: Any) -> Any:
    """Accept ``[{key, value}]`` (the file's form) and a plain ``{key: value}`` mapping."""
    if value is None:
        return []
    if isinstance(value, Mapping):
        return [{"key": str(k), "value": v} for k, v in value.items()]
    return value


class HttpRequestSpec(BaseModel):
    """An ``http`` node's data after template resolution (field names as in the workflow file).

    ``body`` with ``bodyType: json`` is any JSON value (a whole-field reference keeps its list or
    object); a string there is JSON text and is parsed. ``formData`` rows are sent
    url-encoded; ``body`` with ``text`` is sent as ``text/plain`` unless a header says otherwise.
    Unknown fields (``outputVar``, positions…) are ignored.
    """

    model_config = ConfigDict(extra="ignore")

    method: str = "GET"
    url: str = ""
    query: list[KeyValue] = Field(default_factory=list)
    headers: list[KeyValue] = Field(default_factory=list)
    bodyType: Literal["none", "json", "form", "text"] = "none"
    body: Any = None
    formData: list[KeyValue] = Field(default_factory=list)
    failOnStatus: bool = True

    @field_validator("query", "headers", "formData", mode="before")
    @classmethod
    def _tables(cls, value: Any) -> Any:
        return _rows(value)

    @field_validator("method", mode="before")
    @classmethod
    def _method(cls, value: Any) -> Any:
        return str(value or "GET").strip().upper()

    @field_validator("bodyType", mode="before")
    @classmethod
    def _body_type(cls, value: Any) -> Any:
        return str(value or "none").strip().lower()

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> HttpRequestSpec:
        """Build from a node's resolved data; a wrong field raises :class:`InvalidRequestError`."""
        try:
            return cls.model_validate(dict(data))
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "data"
            raise InvalidRequestError(f"HTTP request: {where}: {first.get('msg', 'invalid value')}") from None


@dataclass(slots=True)
class HttpResult:
    """What came back. ``output`` is the parsed JSON when the response says it is JSON (and
    parses), else the body as text. ``url`` is the final URL after redirects, masked;
    ``redirects`` the masked URLs that redirected. ``headers`` keys are lower-case (repeated
    headers joined with ``", "``)."""

    method: str
    url: str
    status: int
    reason: str
    headers: dict[str, str]
    content_type: str
    bytes: int
    duration_ms: int
    output: Any
    text: str
    redirects: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status < 400

    def response_event(self) -> dict[str, Any]:
        """The ``http_response`` event's data: ``{status, bytes, durationMs}``."""
        return {"status": self.status, "bytes": self.bytes, "durationMs": self.duration_ms}


# --------------------------------------------------------------------------- masking


def _secret_forms(secrets: Iterable[str]) -> list[str]:
    forms: set[str] = set()
    for s in secrets:
        if s:
            forms.update({s, quote(s, safe=""), quote_plus(s, safe=""), quote(s)})
    return sorted(forms, key=len, reverse=True)


def mask_text(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (raw or percent-encoded) replaced by :data:`SECRET_MASK`."""
    for form in _secret_forms(secrets):
        if form in text:
            text = text.replace(form, SECRET_MASK)
    return text


def mask_url(url: str, secrets: Iterable[str] = ()) -> str:
    """A URL fit for a log: secrets masked anywhere in it (query and userinfo included, raw or
    percent-encoded), the userinfo password always masked, and the values of credential-named
    query parameters (``api_key``, ``token``, ``sig``…) masked."""
    text = mask_text(str(url), secrets)
    try:
        parts = urlsplit(text)
    except ValueError:
        return text
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, sep, _password = userinfo.partition(":")
        netloc = f"{user}{':' + SECRET_MASK if sep else ''}@{hostport}"
    query = "&".join(_mask_param(p) for p in parts.query.split("&")) if parts.query else ""
    if netloc == parts.netloc and query == parts.query:
        return text
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def _mask_param(pair: str) -> str:
    key, sep, value = pair.partition("=")
    if sep and value and unquote_plus(key).strip().lower() in _SENSITIVE_PARAMS:
        return f"{key}={SECRET_MASK}"
    return pair


def request_event_data(method: str, url: str, secrets: Iterable[str] = ()) -> dict[str, Any]:
    """The ``http_request`` event's data: ``{method, url}`` with secrets masked."""
    return {"method": method.upper(), "url": mask_url(url, secrets)}


# --------------------------------------------------------------------------- transport


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
            response = await client.send(request, stream=True, follow_redirects=False)
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


# --------------------------------------------------------------------------- the http node's core

_JSON_TYPE = re.compile(r"^(application|text)/(.+\+)?json$")


def is_json_type(content_type: str) -> bool:
    return bool(_JSON_TYPE.match(content_type)) or content_type == "application/json"


def _as_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)


_TOO_DEEP = "The JSON body is nested too deeply to send (lists or objects nested hundreds of levels deep)."


def _build(
    client: httpx.AsyncClient, spec: HttpRequestSpec, url: httpx.URL, secrets: list[str], timeout: float | None
) -> httpx.Request:
    shown = mask_url(spec.url, secrets)
    if spec.method not in METHODS:
        raise InvalidRequestError(f"Unknown HTTP method {spec.method!r}; use one of {', '.join(METHODS)}.", url=shown)
    headers: list[tuple[str, str]] = []
    for row in spec.headers:
        key = row.key.strip()
        if not key:
            continue
        value = _as_text(row.value)
        if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", key):
            raise InvalidRequestError(f"Header name {key!r} is not valid (letters, digits and - only).", url=shown)
        if "\r" in value or "\n" in value:
            raise InvalidRequestError(f"Header {key} has a line break in its value.", url=shown)
        if not value.isascii():
            odd = next(c for c in value if not c.isascii())
            raise InvalidRequestError(
                f"Header {key} has a character HTTP headers cannot carry ('{odd}'): header "
                "values are ASCII only; percent-encode it or send it in the body.",
                url=shown,
            )
        headers.append((key, value))
    params: list[tuple[str, str | int | float | bool | None]] = [
        (row.key, _as_text(row.value)) for row in spec.query if row.key.strip()
    ]
    kwargs: dict[str, Any] = {}
    has_type = any(k.lower() == "content-type" for k, _ in headers)
    if spec.bodyType == "json":
        body = spec.body
        if isinstance(body, str):
            try:
                body = json.loads(body) if body.strip() else None
            except ValueError as err:
                raise InvalidRequestError(
                    f"The JSON body is not valid JSON: {mask_text(str(err), secrets)}.", url=shown
                ) from None
            except RecursionError:
                raise InvalidRequestError(_TOO_DEEP, url=shown) from None
        try:
            kwargs["content"] = json.dumps(body, ensure_ascii=False).encode("utf-8")
        except RecursionError:
            raise InvalidRequestError(_TOO_DEEP, url=shown) from None
        except (TypeError, ValueError) as err:
            raise InvalidRequestError(f"The JSON body cannot be sent as JSON: {err}.", url=shown) from None
        if not has_type:
            headers.append(("Content-Type", "application/json"))
    elif spec.bodyType == "form":
        rows = list(spec.formData)
        if not rows and isinstance(spec.body, Mapping):  # a form given as an object in ``body``
            rows = [KeyValue(key=str(k), value=v) for k, v in spec.body.items()]
        kwargs["content"] = urlencode([(r.key, _as_text(r.value)) for r in rows if r.key.strip()]).encode("ascii")
        if not has_type:
            headers.append(("Content-Type", "application/x-www-form-urlencoded"))
    elif spec.bodyType == "text":
        kwargs["content"] = _as_text(spec.body).encode("utf-8")
        if not has_type:
            headers.append(("Content-Type", "text/plain; charset=utf-8"))
    if params:  # added to the URL's own query (httpx's ``params=`` would replace it)
        url = url.copy_merge_params(params)
    return client.build_request(
        spec.method,
        url,
        headers=headers,
        timeout=httpx.Timeout(timeout) if timeout else httpx.USE_CLIENT_DEFAULT,
        **kwargs,
    )


def body_excerpt(text: str, secrets: Iterable[str]) -> str:
    """The start of a response body for an error message: one line, masked, ~200 characters."""
    flat = " ".join(mask_text(text, secrets).split())
    return flat if len(flat) <= EXCERPT_CHARS else flat[: EXCERPT_CHARS - 1] + "…"


async def send_request(
    spec: HttpRequestSpec | Mapping[str, Any],
    *,
    client: httpx.AsyncClient | None = None,
    secrets: Iterable[str] = (),
    timeout: float | None = None,
    max_bytes: int = MAX_RESPONSE_BYTES,
    on_event: EventSink | None = None,
    check_target: Callable[[str], None] | None = None,
) -> HttpResult:
    """Send one ``http`` node request and return its :class:`HttpResult`.

    ``timeout`` (seconds) bounds the whole exchange, redirects and body included; ``None``
    leaves the client's own timeouts (30 s per read for the client made here). ``client`` is
    used as given (its ``follow_redirects`` is ignored: redirects are followed here); without
    one, a client is made and closed. Raises :class:`UrlNotAllowedError`,
    :class:`InvalidRequestError`, :class:`RedirectError`, :class:`ResponseTooLargeError`,
    :class:`RequestFailedError`, and :class:`HttpStatusError` for 4xx/5xx when
    ``failOnStatus`` is set (after the ``http_response`` event).
    """
    if not isinstance(spec, HttpRequestSpec):
        spec = HttpRequestSpec.from_data(spec)
    secrets = [s for s in secrets if s]
    url = check_url(spec.url, secrets)
    mine = client is None
    http = own_client() if client is None else client
    try:
        request = _build(http, spec, url, secrets, timeout)
        await emit(on_event, "http_request", request_event_data(spec.method, str(request.url), secrets))
        try:
            async with asyncio.timeout(timeout):
                raw = await exchange(http, request, secrets=secrets, max_bytes=max_bytes, check_target=check_target)
        except TimeoutError:
            shown = mask_url(str(request.url), secrets)
            raise RequestFailedError(f"Timed out after {timeout:g} s waiting for {shown}.", url=shown) from None
    finally:
        if mine:
            await http.aclose()
    text = raw.text()
    output: Any = text
    if is_json_type(raw.content_type) and text.strip():
        try:
            output = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, or nested too deep to read: the text
            output = text
    result = HttpResult(
        method=spec.method,
        url=mask_url(str(raw.url), secrets),
        status=raw.status,
        reason=raw.reason,
        headers={k.lower(): ", ".join(raw.headers.get_list(k)) for k in raw.headers.keys()},
        content_type=raw.content_type,
        bytes=len(raw.body),
        duration_ms=raw.duration_ms,
        output=output,
        text=text,
        redirects=raw.redirects,
    )
    await emit(on_event, "http_response", result.response_event())
    if spec.failOnStatus and raw.status >= 400:
        excerpt = body_excerpt(text, secrets)
        reason = f" {raw.reason}" if raw.reason else ""
        raise HttpStatusError(
            f"HTTP {raw.status}{reason} from {spec.method} {result.url}" + (f": {excerpt}" if excerpt else ""),
            url=result.url,
            status=raw.status,
            excerpt=excerpt,
            result=result,
        )
    return result
