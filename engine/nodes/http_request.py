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

This module holds the request (:class:`HttpRequestSpec`, building its body and headers), the
result and :func:`send_request`. The transport (URL checks, redirects, capped and inflated
reading) is :mod:`engine.nodes.http_transport`, masking :mod:`engine.nodes.http_masking`, the
errors :mod:`engine.nodes.web_errors`; their names stay importable from here.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlencode

import httpx
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.nodes.credentials import looks_like_literal_credential
from engine.nodes.http_masking import EXCERPT_CHARS, SECRET_MASK, body_excerpt, mask_text, mask_url, request_event_data
from engine.nodes.http_transport import (
    ALLOWED_SCHEMES,
    MAX_REDIRECTS,
    MAX_RESPONSE_BYTES,
    USER_AGENT,
    EventSink,
    HeadCheck,
    RawResponse,
    check_url,
    emit,
    exchange,
    own_client,
)
from engine.nodes.web_errors import (
    HttpStatusError,
    InvalidRequestError,
    RedirectError,
    RequestFailedError,
    ResponseTooLargeError,
    UrlNotAllowedError,
    WebRequestError,
)

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
    # moved to http_transport / http_masking, still importable from here
    "ALLOWED_SCHEMES",
    "USER_AGENT",
    "EXCERPT_CHARS",
    "HeadCheck",
    "RawResponse",
    "check_url",
    "exchange",
    "emit",
    "own_client",
    "body_excerpt",
]

METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")


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
