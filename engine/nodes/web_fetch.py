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

Extraction uses selectolax (the Lexbor HTML5 parser, CSS selectors) and markdownify; the
choice and its measurements are in the commit that added this module and in
``tests/bench/bench_web_extract.py``.
"""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urljoin

import httpx
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError

from engine.nodes.http_request import (
    MAX_REDIRECTS,
    MAX_RESPONSE_BYTES,
    USER_AGENT,
    EventSink,
    HttpStatusError,
    InvalidRequestError,
    RawResponse,
    RequestFailedError,
    WebRequestError,
    body_excerpt,
    check_url,
    emit,
    exchange,
    mask_url,
    own_client,
    request_event_data,
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
FETCH_FORMATS = ("markdown", "text", "html")
ACCEPT = "text/html,application/xhtml+xml;q=0.9,text/plain;q=0.8,application/json;q=0.7,*/*;q=0.1"

# Never content, selector or not.
_NEVER = (
    "script, style, noscript, template, svg, canvas, iframe, object, embed, link, meta, form, button, input, "
    "select, textarea, dialog"
)
# Chrome around the article, dropped when no selector is given. (page-level header/footer: see _drop_chrome)
_CHROME = (
    "nav, aside, [role=navigation], [role=banner], [role=contentinfo], [role=search], [role=complementary], "
    "[aria-hidden=true], [hidden], .sidebar, .sphinxsidebar, .related, .breadcrumb, .breadcrumbs, "
    ".skip-link, .skiplink, .navbar, .menu, .cookie-banner, .headerlink, .site-header, .site-footer"
)
# Page-level parts: dropped unless inside an article or the main content (texinfo's div.header is its nav bar).
_PAGE_PARTS = "header, footer, .header, .footer, .nav-panel, .navheader, .navfooter"
_ROOTS = ("main", "[role=main]")
_ANCHOR_MARKS = {"", "#", "¶", "§", "🔗", "link", "permalink"}
_HTML_TYPES = ("text/html", "application/xhtml+xml")
_TEXT_TYPES = re.compile(
    r"^(text/[\w.+-]+|application/([\w.-]+\+)?(json|xml)|application/(javascript|ecmascript|"
    r"x-ndjson|ndjson|yaml|x-yaml|toml|x-www-form-urlencoded|graphql|ld\+json|sql))$"
)


class UnsupportedContentError(WebRequestError):
    """The URL answered with binary content (``content_type`` names it); nothing was read."""

    def __init__(self, message: str, *, url: str | None = None, content_type: str = "") -> None:
        super().__init__(message, url=url)
        self.content_type = content_type


class SelectorNotFoundError(WebRequestError):
    """The CSS selector matched nothing on the page."""


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


# --------------------------------------------------------------------------- extraction


@functools.cache
def _converters() -> tuple[Any, Any]:
    """markdownify's converters for Markdown and text, built on first use: markdownify brings in
    BeautifulSoup, over 100 ms of import that ``import engine`` need not pay."""
    import markdownify

    class Text(markdownify.MarkdownConverter):
        """Plain text: the same block structure as the Markdown, without its markup."""

        def convert_hN(self, n: int, el: Any, text: str, parent_tags: set[str]) -> str:
            if "_inline" in parent_tags:
                return text
            text = text.strip()
            return f"\n\n{text}\n\n" if text else ""

        def convert_a(self, el: Any, text: str, parent_tags: set[str]) -> str:
            return text

        def convert_img(self, el: Any, text: str, parent_tags: set[str]) -> str:
            return el.attrs.get("alt", "") or ""

        def convert_pre(self, el: Any, text: str, parent_tags: set[str]) -> str:
            text = text.strip("\n")
            return f"\n\n{text}\n\n" if text else ""

        def convert_code(self, el: Any, text: str, parent_tags: set[str]) -> str:
            return text

        def convert_b(self, el: Any, text: str, parent_tags: set[str]) -> str:
            return text

        convert_strong = convert_em = convert_i = convert_b

        def convert_hr(self, el: Any, text: str, parent_tags: set[str]) -> str:
            return "\n\n"

    return markdownify.MarkdownConverter(**_MD_OPTIONS), Text(**_TEXT_OPTIONS)


def _code_language(el: Any) -> str:
    """``language-rust`` on the pre or its code (mdBook, highlight.js), or ``highlight-python3``
    on an ancestor (Sphinx)."""
    nodes = [el, *el.find_all("code", limit=1)]
    for node in nodes:
        for cls in node.get("class") or ():
            if cls.startswith(("language-", "lang-")):
                return cls.split("-", 1)[1]
    parent = el.parent
    for _ in range(2):
        if parent is None:
            break
        for cls in parent.get("class") or ():
            if cls.startswith("highlight-") and cls not in ("highlight-default",):
                return cls.split("-", 1)[1]
        parent = parent.parent
    return ""


_MD_OPTIONS: dict[str, Any] = dict(
    heading_style="ATX",
    bullets="-",
    escape_underscores=False,
    escape_misc=False,
    code_language_callback=_code_language,
    strip_document="strip",
)
_TEXT_OPTIONS: dict[str, Any] = dict(
    bullets="-", escape_underscores=False, escape_asterisks=False, escape_misc=False, strip_document="strip"
)


def _drop(tree: LexborHTMLParser | LexborNode, selector: str) -> None:
    for node in tree.css(selector):
        node.decompose()


def _drop_chrome(tree: LexborHTMLParser) -> None:
    _drop(tree, _CHROME)
    # a header or footer belongs to the page unless it sits in an article or the main content
    for node in tree.css(_PAGE_PARTS):
        parent, inside = node.parent, False
        while parent is not None:
            if parent.tag in ("article", "main") or (parent.attributes or {}).get("role") == "main":
                inside = True
                break
            parent = parent.parent
        if not inside:
            node.decompose()


def _root(tree: LexborHTMLParser) -> LexborNode | None:
    for selector in _ROOTS:
        node = tree.css_first(selector)
        if node is not None:
            return node
    articles = tree.css("article")
    if len(articles) == 1:
        return articles[0]
    return tree.body


def _tidy_links(nodes: list[LexborNode], base_url: str | None) -> None:
    # only as many as can be converted (MAX_CONVERT_ELEMENTS): urljoin costs ~50 µs a link
    for node in nodes:
        for a in node.css("a")[:MAX_CONVERT_ELEMENTS]:
            href = (a.attributes.get("href") or "").strip()
            if not href or href.startswith(("#", "javascript:")):
                if a.text().strip().lower() in _ANCHOR_MARKS:
                    a.decompose()  # a heading's permalink mark
                else:
                    a.unwrap()  # an in-page link: its text stays, the link is noise once the page is text
                continue
            if "title" in a.attrs:
                del a.attrs["title"]
            if base_url:
                a.attrs["href"] = urljoin(base_url, href)
        for img in node.css("img")[:MAX_CONVERT_ELEMENTS]:
            src = (img.attributes.get("src") or "").strip()
            if src.startswith("data:") or not (img.attributes.get("alt") or "").strip():
                img.decompose()
            elif base_url:
                img.attrs["src"] = urljoin(base_url, src)


def _title(tree: LexborHTMLParser) -> str:
    for selector in ("title", "h1"):
        node = tree.css_first(selector)
        if node is not None:
            text = " ".join(node.text().split())
            if text:
                return text
    return ""


# Bounds on the work a page may cost (issue 30: 400k links took 98 s and 900 MB; 100k nested
# divs 120 s in the parser alone, then a RecursionError). The output is maxChars long anyway.
MAX_PAGE_ELEMENTS = 60_000  # elements parsed; the page is cut before the next one
MAX_PAGE_DEPTH = 256  # nesting parsed (the parser's time grows with depth × elements)
MAX_CONVERT_ELEMENTS = 5_000  # elements converted to Markdown/text; the rest of the content is cut
MAX_CONVERT_DEPTH = 60  # deeper content is converted by the parser's plain text (the converter recurses)
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)")
_VOID = frozenset(
    {
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "source",
        "track",
        "wbr",
        "param",
        "keygen",
    }
)
# End tags a page may leave out: not counted as nesting before parsing (after it, every tag is closed).
_OPTIONAL_END = frozenset(
    {
        "p",
        "li",
        "dt",
        "dd",
        "tr",
        "td",
        "th",
        "option",
        "optgroup",
        "rt",
        "rp",
        "thead",
        "tbody",
        "tfoot",
        "colgroup",
        "caption",
        "html",
        "head",
        "body",
    }
)


def _bounded(html: str, max_elements: int, max_depth: int, *, strict: bool = False) -> tuple[str, int, bool]:
    """``(html, deepest, cut)``: ``html`` cut before the element that would pass ``max_elements``
    elements or ``max_depth`` levels of nesting (one regex pass, no tree). ``strict``: every
    non-void element has its end tag (the parser's own serialisation)."""
    depth = deepest = count = 0
    optional = frozenset() if strict else _OPTIONAL_END
    for m in _TAG.finditer(html):
        name = m.group(2).lower()
        if name in _VOID:
            continue
        if m.group(1):
            if name not in optional and depth:
                depth -= 1
            continue
        count += 1
        if name not in optional:
            depth += 1
            deepest = max(deepest, depth)
        if count > max_elements or depth > max_depth:
            return html[: m.start()], deepest, True
    return html, deepest, False


def _convert(fragment: str, format: str, nodes: list[LexborNode]) -> str:
    """The content as Markdown or text, its cost bounded: too many elements are cut, nesting
    too deep for the converter (it recurses) is read as the parser's plain text."""
    fragment, deepest, _cut = _bounded(fragment, MAX_CONVERT_ELEMENTS, 1 << 30, strict=True)
    if deepest <= MAX_CONVERT_DEPTH:
        markdown, text = _converters()
        try:
            return _normalise((markdown if format == "markdown" else text).convert(fragment))
        except RecursionError:
            pass
    plain = "\n".join(n.text(deep=True, separator="\n", strip=True) for n in nodes)
    return _normalise(plain)


def extract(
    html: str, *, format: str = "markdown", selector: str | None = None, base_url: str | None = None
) -> tuple[str, str]:
    """``(title, content)`` of an HTML page in ``format`` (``markdown``, ``text``, ``html``).

    With ``selector``, the content is every element it matches (page order); an invalid
    selector raises :class:`InvalidRequestError`, one matching nothing
    :class:`SelectorNotFoundError`. Relative links become absolute against ``base_url``.
    The work is bounded: a page is parsed up to :data:`MAX_PAGE_ELEMENTS` elements and
    :data:`MAX_PAGE_DEPTH` levels, and converted up to :data:`MAX_CONVERT_ELEMENTS` elements
    (content nested deeper than :data:`MAX_CONVERT_DEPTH` comes out as plain text).
    """
    if format not in FETCH_FORMATS:
        raise InvalidRequestError(f"Unknown format {format!r}; use one of {', '.join(FETCH_FORMATS)}.")
    html, _deepest, _cut = _bounded(html, MAX_PAGE_ELEMENTS, MAX_PAGE_DEPTH)
    tree = LexborHTMLParser(html)
    title = _title(tree)
    _drop(tree, _NEVER)
    if selector:
        try:
            nodes = tree.css(selector)
        except (SelectolaxError, ValueError) as err:
            raise InvalidRequestError(f"Not a valid CSS selector: {selector!r} ({err}).") from None
        if not nodes:
            raise SelectorNotFoundError(f"The selector {selector!r} matched nothing on the page.")
        # a match inside another match would come out twice
        nodes = [n for n in nodes if not any(_inside(n, other) for other in nodes if other is not n)]
        _drop(tree, ".headerlink")
    else:
        _drop_chrome(tree)
        root = _root(tree)
        nodes = [root] if root is not None else []
    _tidy_links(nodes, base_url)
    fragment = "\n".join(n.html or "" for n in nodes)
    if format == "html":
        return title, fragment.strip()
    return title, _convert(fragment, format, nodes)


def _inside(node: LexborNode, ancestor: LexborNode) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.mem_id == ancestor.mem_id:
            return True
        parent = parent.parent
    return False


def _normalise(text: str) -> str:
    lines = [line.rstrip() for line in text.replace("\r\n", "\n").split("\n")]
    text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
    return re.sub(r"^(?:-{3,}\n+)+|(?:\n+-{3,})+$", "", text).strip()  # rules left at the ends by dropped chrome


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
