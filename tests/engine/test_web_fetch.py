"""engine.nodes.web_fetch on saved real pages (tests/fixtures/pages, see its README) served by a real
HTTP server on 127.0.0.1."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Any

import pytest

from engine.nodes.http_request import (
    HttpStatusError,
    InvalidRequestError,
    RedirectError,
    UrlNotAllowedError,
    WebRequestError,
)
from engine.nodes.web_fetch import (
    DEFAULT_MAX_CHARS,
    FetchSpec,
    SelectorNotFoundError,
    UnsupportedContentError,
    extract,
    fetch_page,
)
from tests.fakes.web_server import Answer, WebServer, json_answer, redirect, text_answer

PAGES = Path(__file__).resolve().parents[1] / "fixtures" / "pages"


def png_bytes() -> bytes:
    """A real 1x1 PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )


@pytest.fixture()
def web():
    with WebServer() as server:
        for page in PAGES.glob("*.html"):
            server.route(
                f"/pages/{page.name}", Answer(200, {"Content-Type": "text/html; charset=utf-8"}, page.read_bytes())
            )
        server.route("/notes.txt", text_answer("line one\n  <b>not html</b>\nline three\n"))
        server.route("/data.json", json_answer({"items": [1, 2], "name": "x"}))
        server.route("/logo.png", Answer(200, {"Content-Type": "image/png"}, png_bytes()))
        server.route("/paper.pdf", Answer(200, {"Content-Type": "application/pdf"}, b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"))
        server.route("/blob", Answer(200, {}, b"\x00\x01\x02binary\x00" * 10))
        server.route(
            "/untyped-page",
            Answer(
                200, {}, b"<!DOCTYPE html><html><body><nav>Menu</nav><main><p>Untyped article</p></main></body></html>"
            ),
        )
        server.route(
            "/latin1",
            Answer(
                200,
                {"Content-Type": "text/html"},
                '<html><head><meta charset="iso-8859-1"></head><body><main><p>Café crème</p>'
                "</main></body></html>".encode("latin-1"),
            ),
        )
        server.route("/gone", text_answer("This page is gone", 404))
        server.route("/moved", redirect("/pages/rust-nomicon-ownership.html", 301))
        server.route("/loop-a", redirect("/loop-b"))
        server.route("/loop-b", redirect("/loop-a"))
        for n in range(7):
            server.route(f"/hop{n}", redirect(f"/hop{n + 1}"))
        server.route("/hop7", redirect("/pages/libffi-the-basics.html"))
        yield server


def flat(text: str) -> str:
    return " ".join(text.split())


async def fetch(web: WebServer, path: str, **data: Any):
    return await fetch_page({"url": web.url(path), **data})


# ---------------------------------------------------------------- real pages: article in, chrome out


async def test_sphinx_page(web: WebServer) -> None:
    result = await fetch(web, "/pages/python-secrets.html")
    out = result.output
    assert result.kind == "html" and result.format == "markdown" and not result.truncated
    assert result.title == "secrets — Generate secure random numbers for managing secrets — Python 3.11.2 documentation"
    assert out.startswith("# `secrets` — Generate secure random numbers for managing secrets\n")
    assert (
        "module is used for generating cryptographically strong random numbers suitable for managing data such "
        "as passwords"
    ) in flat(out)
    assert "## Generating tokens" in out and "    ```pycon\n    >>> token_bytes(16)\n" in out  # in its dd
    for chrome in ("Previous topic", "Next topic", "Report a Bug", "Show Source", "Table of Contents", "¶"):
        assert chrome not in out
    for code in ("jquery", "menu.js", "@media only screen", "table.full-width-table"):  # scripts and styles
        assert code not in out
    # relative links are made absolute against the page's URL; in-page anchors are plain text
    assert f"[`random`]({web.url('/pages/random.html#module-random')})" in out
    assert "](#" not in out


async def test_node_docs_page(web: WebServer) -> None:
    out = (await fetch(web, "/pages/node-synopsis.html")).output
    assert out.startswith("## Usage and example\n")
    assert "Commands in this document start with `$` or `>` to replicate how they would appear" in flat(out)
    assert "```js\nconst http = require('node:http');" in out
    for chrome in ("About this documentation", "Table of contents", "localStorage", "storedTheme", "Index"):
        assert chrome not in out
    assert "## Usage and example#" not in out  # the headings' permalink marks are gone


async def test_mdbook_page(web: WebServer) -> None:
    result = await fetch(web, "/pages/rust-nomicon-ownership.html")
    out = result.output
    assert result.title == "Ownership - The Rustonomicon"
    assert out.startswith("# Ownership and Lifetimes\n\nOwnership is the breakout feature of Rust.")
    assert "```rust\n" in out
    for chrome in (
        "The Rustonomicon",
        "Previous chapter",
        "Next chapter",
        "Toggle Table of Contents",
        "path_to_root",
        "localStorage",
        "mdbook",
        "Fonticons",
    ):
        assert chrome not in out


async def test_texinfo_page_without_landmarks(web: WebServer) -> None:
    out = (await fetch(web, "/pages/libffi-the-basics.html")).output
    assert out.startswith("### 2.1 The Basics\n")
    assert "The first thing you must do is create an `ffi_cif` object that matches the signature" in flat(out)
    for chrome in ("Next: Simple Example", "Up: Using libffi", "copiable-anchor", "Permission is hereby granted"):
        assert chrome not in out


async def test_text_format_has_no_markup(web: WebServer) -> None:
    out = (await fetch(web, "/pages/python-secrets.html", format="text")).output
    assert out.startswith("secrets — Generate secure random numbers for managing secrets\n")
    assert "\nGenerating tokens\n" in out and ">>> token_bytes(16)" in out
    assert "The secrets module is used for generating cryptographically strong" in flat(out)
    for markup in ("`", "](", "## ", "**", "```"):
        assert markup not in out
    assert "Previous topic" not in out


async def test_html_format_is_the_cleaned_article(web: WebServer) -> None:
    out = (await fetch(web, "/pages/rust-nomicon-ownership.html", format="html")).output
    assert out.startswith("<main>") and out.endswith("</main>")
    assert "Ownership is the breakout feature of Rust." in out
    for gone in ("<script", "<style", "<nav", "<svg", "mdbook-sidebar"):
        assert gone not in out


# ---------------------------------------------------------------- selector


async def test_selector_picks_a_section(web: WebServer) -> None:
    out = (await fetch(web, "/pages/python-secrets.html", selector="section#generating-tokens")).output
    assert out.startswith("## Generating tokens\n")
    assert "token_urlsafe" in out and "Random numbers" not in out and "Previous topic" not in out


async def test_selector_joins_every_match_in_page_order(web: WebServer) -> None:
    out = (await fetch(web, "/pages/node-synopsis.html", selector="pre", format="text")).output
    blocks = out.split("\n\n")
    assert blocks[0] == "mkdir ~/projects\ncd ~/projects"
    assert blocks[-1] == "Server running at http://127.0.0.1:3000/"
    assert "const hostname = '127.0.0.1';" in out and "Commands in this document" not in out


async def test_selector_may_pick_chrome_on_purpose(web: WebServer) -> None:
    out = (await fetch(web, "/pages/libffi-the-basics.html", selector="div.header", format="text")).output
    assert "Next: Simple Example" in out


async def test_selector_matching_nothing_and_invalid_selector(web: WebServer) -> None:
    with pytest.raises(SelectorNotFoundError, match=r"The selector 'div\.price' matched nothing on http://127"):
        await fetch(web, "/pages/python-secrets.html", selector="div.price")
    with pytest.raises(InvalidRequestError, match=r"Not a valid CSS selector: 'div\[\['"):
        await fetch(web, "/pages/python-secrets.html", selector="div[[")


# ---------------------------------------------------------------- content types


async def test_plain_text_and_json_pass_through(web: WebServer) -> None:
    result = await fetch(web, "/notes.txt")
    assert result.kind == "text" and result.output == "line one\n  <b>not html</b>\nline three\n"
    result = await fetch(web, "/data.json", format="html")
    assert result.kind == "text" and result.output == '{"items": [1, 2], "name": "x"}'
    assert result.content_type == "application/json"


@pytest.mark.parametrize("path, content_type", [("/logo.png", "image/png"), ("/paper.pdf", "application/pdf")])
async def test_binary_content_is_refused_naming_its_type(web: WebServer, path: str, content_type: str) -> None:
    with pytest.raises(UnsupportedContentError) as info:
        await fetch(web, path)
    assert info.value.content_type == content_type
    assert str(info.value) == (
        f"{web.url(path)} is {content_type}, binary content that fetch does not read: "
        "it reads web pages (HTML) and text."
    )


async def test_untyped_content_is_sniffed(web: WebServer) -> None:
    with pytest.raises(UnsupportedContentError, match="binary data with no content type"):
        await fetch(web, "/blob")
    result = await fetch(web, "/untyped-page")
    assert result.kind == "html" and result.output == "Untyped article"


async def test_meta_charset_is_honoured(web: WebServer) -> None:
    assert (await fetch(web, "/latin1")).output == "Café crème"


# ---------------------------------------------------------------- limits and refusals


async def test_max_chars_caps_the_output(web: WebServer) -> None:
    result = await fetch(web, "/pages/python-secrets.html", maxChars=500)
    assert result.truncated and len(result.output) <= 500 and result.output.endswith("…")
    full = await fetch(web, "/pages/python-secrets.html")
    assert full.output.startswith(result.output[:-1].rstrip())
    assert FetchSpec.from_data({"url": "http://x"}).maxChars == DEFAULT_MAX_CHARS == 20_000
    with pytest.raises(InvalidRequestError, match="maxChars must be at least 1"):
        FetchSpec.from_data({"url": "http://x", "maxChars": 0})


async def test_redirects_followed_and_capped(web: WebServer) -> None:
    result = await fetch(web, "/moved")
    assert result.url == web.url("/pages/rust-nomicon-ownership.html") and result.redirects == [web.url("/moved")]
    assert result.output.startswith("# Ownership and Lifetimes")
    assert (await fetch(web, "/hop3")).output.startswith("### 2.1 The Basics")  # 5 redirects
    with pytest.raises(RedirectError, match="Too many redirects: more than 5"):
        await fetch(web, "/hop2")  # 6 redirects
    with pytest.raises(RedirectError, match="Redirect loop"):
        await fetch(web, "/loop-a")


async def test_only_http_and_https(web: WebServer) -> None:
    page = PAGES / "python-secrets.html"
    with pytest.raises(UrlNotAllowedError, match="Only http and https URLs are allowed, not file://"):
        await fetch_page({"url": page.as_uri()})
    with pytest.raises(UrlNotAllowedError, match="not ftp://"):
        await fetch_page({"url": "ftp://127.0.0.1/x"})


async def test_error_status_fails(web: WebServer) -> None:
    with pytest.raises(HttpStatusError, match=r"HTTP 404 Not Found from GET http://127\.0\.0\.1:\d+/gone: This page"):
        await fetch(web, "/gone")


async def test_events_and_unknown_format(web: WebServer) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    async def on_event(kind: str, data: dict[str, Any]) -> None:  # a coroutine sink works too
        seen.append((kind, data))

    result = await fetch_page({"url": web.url("/notes.txt")}, on_event=on_event)
    assert seen == [
        ("http_request", {"method": "GET", "url": web.url("/notes.txt")}),
        ("http_response", result.response_event()),
    ]
    assert result.response_event()["bytes"] == len("line one\n  <b>not html</b>\nline three\n")
    with pytest.raises(InvalidRequestError, match="format"):
        await fetch(web, "/notes.txt", format="pdf")
    assert issubclass(UnsupportedContentError, WebRequestError) and issubclass(SelectorNotFoundError, WebRequestError)


def test_extract_is_usable_on_its_own() -> None:
    title, text = extract(
        "<html><head><title>T</title><style>p{}</style></head><body><header>Site</header>"
        "<article><header><h1>Head</h1></header><p>Body <a href='/x'>link</a></p></article>"
        "<footer>Foot</footer><script>alert(1)</script></body></html>",
        base_url="http://h/a/",
    )
    assert title == "T"
    assert text == "# Head\n\nBody [link](http://h/x)"  # the article's own header stays, the page's goes
