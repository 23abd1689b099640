"""The ``fetch`` node's core: a web page as readable Markdown, plain text or cleaned HTML.

:func:`fetch_page` GETs an http(s) URL through :mod:`engine.nodes.http_request` (so the same rules
hold: only http/https at every hop, at most 5 redirects, loops refused, a 10 MB streamed
body cap, 4xx/5xx fail, secrets masked in events and errors) and hands the body to
:func:`extract`.

Invariants
* Only HTML and text are read. A binary type (images, PDF, audio, video, fonts, archives,
  ``application/octet-stream``…) is refused from its ``Content-Type`` before its body is
  read, with a message naming the type; a body with no type is sniffed (HTML markers,
  NUL bytes).
* Non-HTML text (``text/plain``, JSON, XML, CSV…) passes through unchanged, whatever the format.
* From HTML, scripts, styles and other non-content (templates, SVG, iframes, forms) are always
  dropped. Without a selector the page's chrome is dropped too (``nav``, page-level
  ``header``/``footer``, ``aside``, ARIA navigation/banner/contentinfo/search landmarks,
  hidden elements, common sidebar/breadcrumb classes) and the article root is the page's
  ``main``, its only ``article``, its ``[role=main]`` or else ``body``. With a ``selector``
  the output is what it matches (every match, in page order), as selected.
* The output is at most ``maxChars`` characters; a longer one is cut at a line or word
  boundary and ends with ``…`` (``FetchResult.truncated``).

The extraction (:func:`extract`, selectolax and markdownify, its bounds) is in
:mod:`engine.nodes.html_extract`; the transport in :mod:`engine.nodes.http_transport`.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator

from engine.nodes.html_extract import FETCH_FORMATS, extract
from engine.nodes.http_masking import body_excerpt, mask_url, request_event_data
from engine.nodes.http_transport import (
    MAX_REDIRECTS,
    MAX_RESPONSE_BYTES,
    USER_AGENT,
    EventSink,
    RawResponse,
    check_url,
    emit,
    exchange,
    own_client,
)
from engine.nodes.web_errors import (
    HttpStatusError,
    InvalidRequestError,
    RequestFailedError,
    SelectorNotFoundError,
    UnsupportedContentError,
)

__all__ = [
    "FetchSpec",
    "FetchResult",
    "fetch_page",
    "extract",
    "UnsupportedContentError",
    "SelectorNotFoundError",
    "DEFAULT_MAX_CHARS",
    "FETCH_FORMATS",
]

DEFAULT_MAX_CHARS = 20_000
ACCEPT = "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8,application/json;q=0.7,*/*;q=0.1"
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_TEXT_TYPES = re.compile(
    r"^(text/[\w.+-]+|application/([\w.-]+\+)?(json|xml)|application/(javascript|ecmascript|"
    r"x-ndjson|ndjson|yaml|x-yaml|toml|x-www-form-urlencoded|graphql|ld\+json|sql))$"
)


class FetchSpec(BaseModel):
    """A ``fetch`` node's data after template resolution (names as in the workflow file)."""

    model_config = ConfigDict(extra="ignore")

    url: str = ""
    format: Literal["markdown", "text", "html"] = "markdown"
    selector: str = ""
    maxChars: int = DEFAULT_MAX_CHARS

    @field_validator("format", mode="before")
    @classmethod
    def _format(cls, value: Any) -> Any:
        return str(value or "markdown").strip().lower()

    @field_validator("selector", mode="before")
    @classmethod
    def _selector(cls, value: Any) -> Any:
        return str(value or "").strip()

    @field_validator("maxChars", mode="before")
    @classmethod
    def _max_chars(cls, value: Any) -> Any:
        return DEFAULT_MAX_CHARS if value in (None, "") else value

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> FetchSpec:
        try:
            spec = cls.model_validate(dict(data))
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "data"
            raise InvalidRequestError(f"Fetch: {where}: {first.get('msg', 'invalid value')}") from None
        if spec.maxChars < 1:
            raise InvalidRequestError(f"Fetch: maxChars must be at least 1 (got {spec.maxChars}).")
        return spec


@dataclass(slots=True)
class FetchResult:
    """A fetched page. ``output`` is the text in ``format`` (at most ``maxChars``);
    ``kind`` says how it was made: ``"html"`` (extracted) or ``"text"`` (passed through)."""

    url: str
    status: int
    content_type: str
    kind: Literal["html", "text"]
    format: str
    title: str
    output: str
    truncated: bool
    bytes: int
    duration_ms: int
    redirects: list[str] = field(default_factory=list)

    def response_event(self) -> dict[str, Any]:
        """Data in the ``http_response`` shape: ``{status, bytes, durationMs}``."""
        return {"status": self.status, "bytes": self.bytes, "durationMs": self.duration_ms}


def _truncate(text: str, max_chars: int) -> tuple[str, bool]:
    if len(text) <= max_chars:
        return text, False
    cut = text[: max_chars - 1]
    boundary = max(cut.rfind("\n"), cut.rfind(" "))
    if boundary >= max_chars * 0.8:  # a line or word boundary, unless that loses too much
        cut = cut[:boundary]
    return cut.rstrip() + "…", True


# --------------------------------------------------------------------------- content types


def _binary_refusal(shown: str, content_type: str) -> UnsupportedContentError:
    return UnsupportedContentError(
        f"{shown} is {content_type}, binary content that fetch does not read: it reads web pages (HTML) and text.",
        url=shown,
        content_type=content_type,
    )


def _kind_of(content_type: str) -> Literal["html", "text", "binary", "unknown"]:
    if not content_type:
        return "unknown"
    if content_type in _HTML_TYPES:
        return "html"
    if _TEXT_TYPES.match(content_type):
        return "text"
    return "binary"


def _sniff(body: bytes) -> Literal["html", "text", "binary"]:
    head = body[:4096]
    if b"\x00" in head:
        return "binary"
    start = head.lstrip(b"\xef\xbb\xbf \t\r\n").lower()
    if start.startswith((b"<!doctype html", b"<html")) or b"<body" in start or b"<head" in start:
        return "html"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.start < len(head) - 4:  # not merely a character cut at the end of the window
            return "binary"
    return "text"


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([\w.:-]+)""", re.I)


def _html_text(raw: RawResponse) -> str:
    charset = raw.charset
    if not charset:
        m = _META_CHARSET.search(raw.body[:4096])
        charset = m.group(1).decode("ascii", "replace") if m else "utf-8"
    try:
        return raw.body.decode(charset, "replace")
    except LookupError:
        return raw.body.decode("utf-8", "replace")


# --------------------------------------------------------------------------- fetch


async def fetch_page(
    spec: FetchSpec | Mapping[str, Any],
    *,
    client: httpx.AsyncClient | None = None,
    secrets: Iterable[str] = (),
    timeout: float | None = None,
    max_bytes: int = MAX_RESPONSE_BYTES,
    on_event: EventSink | None = None,
    check_target: Callable[[str], None] | None = None,
) -> FetchResult:
    """GET the page and return it in ``spec.format``; see the module docstring for the rules.

    Emits ``http_request`` ``{method: "GET", url}`` and ``http_response`` ``{status, bytes,
    durationMs}`` through ``on_event`` like :func:`engine.nodes.http_request.send_request`. Raises
    :class:`UrlNotAllowedError`, :class:`InvalidRequestError` (bad format or selector),
    :class:`RedirectError`, :class:`ResponseTooLargeError`, :class:`RequestFailedError`,
    :class:`HttpStatusError` (any 4xx/5xx), :class:`UnsupportedContentError` and
    :class:`SelectorNotFoundError` — all :class:`WebRequestError`.
    """
    if not isinstance(spec, FetchSpec):
        spec = FetchSpec.from_data(spec)
    secrets = [s for s in secrets if s]
    url = check_url(spec.url, secrets)
    mine = client is None
    http = own_client() if client is None else client
    shown = mask_url(str(url), secrets)

    def check_head(response: httpx.Response) -> None:
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if response.status_code < 400 and _kind_of(content_type) == "binary":
            raise _binary_refusal(mask_url(str(response.url), secrets), content_type)

    try:
        request = http.build_request(
            "GET",
            url,
            headers={"Accept": ACCEPT, "User-Agent": USER_AGENT},
            timeout=httpx.Timeout(timeout) if timeout else httpx.USE_CLIENT_DEFAULT,
        )
        await emit(on_event, "http_request", request_event_data("GET", str(request.url), secrets))
        try:
            async with asyncio.timeout(timeout):
                raw = await exchange(
                    http,
                    request,
                    secrets=secrets,
                    max_bytes=max_bytes,
                    max_redirects=MAX_REDIRECTS,
                    check_head=check_head,
                    check_target=check_target,
                )
        except TimeoutError:
            raise RequestFailedError(f"Timed out after {timeout:g} s waiting for {shown}.", url=shown) from None
    finally:
        if mine:
            await http.aclose()
    final = mask_url(str(raw.url), secrets)
    await emit(on_event, "http_response", {"status": raw.status, "bytes": len(raw.body), "durationMs": raw.duration_ms})
    if raw.status >= 400:
        excerpt = body_excerpt(raw.text(), secrets)
        raise HttpStatusError(
            f"HTTP {raw.status} {raw.reason} from GET {final}" + (f": {excerpt}" if excerpt else ""),
            url=final,
            status=raw.status,
            excerpt=excerpt,
        )
    kind = _kind_of(raw.content_type)
    if kind == "unknown":
        kind = _sniff(raw.body)
    if kind == "binary":
        raise _binary_refusal(final, raw.content_type or "binary data with no content type")
    if kind == "html":
        try:
            # off the event loop: a big page takes a few hundred ms, and the editor's loop is the GUI's
            title, text = await asyncio.to_thread(
                extract, _html_text(raw), format=spec.format, selector=spec.selector or None, base_url=str(raw.url)
            )
        except SelectorNotFoundError:
            raise SelectorNotFoundError(
                f"The selector {spec.selector!r} matched nothing on {final}.", url=final
            ) from None
        made: Literal["html", "text"] = "html"
    else:
        title, text, made = "", raw.text(), "text"
    output, truncated = _truncate(text, spec.maxChars)
    return FetchResult(
        url=final,
        status=raw.status,
        content_type=raw.content_type,
        kind=made,
        format=spec.format,
        title=title,
        output=output,
        truncated=truncated,
        bytes=len(raw.body),
        duration_ms=raw.duration_ms,
        redirects=raw.redirects,
    )
