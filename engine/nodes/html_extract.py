"""HTML extraction for the ``fetch`` node: a page's title and content as Markdown, text or HTML.

:func:`extract` parses with selectolax (the Lexbor HTML5 parser, CSS selectors) and converts
with markdownify; the choice and its measurements are in the commit that added
:mod:`engine.nodes.web_fetch` and in ``tests/bench/bench_web_extract.py``. Scripts, styles and
other non-content are always dropped; without a selector the page's chrome is dropped too and
the article root is found (``main``, a lone ``article``, ``[role=main]``, else ``body``). The
work a page may cost is bounded (:data:`MAX_PAGE_ELEMENTS`, :data:`MAX_PAGE_DEPTH`,
:data:`MAX_CONVERT_ELEMENTS`, :data:`MAX_CONVERT_DEPTH`). No I/O here: fetching is
:mod:`engine.nodes.web_fetch`'s.
"""

from __future__ import annotations

import functools
import re
from typing import Any
from urllib.parse import urljoin

from selectolax.lexbor import LexborHTMLParser, LexborNode, SelectolaxError

from engine.nodes.web_errors import InvalidRequestError, SelectorNotFoundError

__all__ = [
    "extract",
    "FETCH_FORMATS",
    "MAX_PAGE_ELEMENTS",
    "MAX_PAGE_DEPTH",
    "MAX_CONVERT_ELEMENTS",
    "MAX_CONVERT_DEPTH",
]

FETCH_FORMATS = ("markdown", "text", "html")

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
