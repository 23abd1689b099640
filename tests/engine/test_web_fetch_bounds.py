"""Issue 30 item 8: fetch's time and memory stay in proportion to its 10 MB limit. Each
generated page is served by a real server on 127.0.0.1 and fetched in a fresh interpreter
whose peak RSS is measured (400k links, 100k nested divs, gzip bombs)."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from engine.nodes.web_fetch import extract

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import asyncio, gzip, json, resource, sys, time, zlib
from engine.nodes.web_fetch import fetch_page
from engine.errors import FlowdeskError
from tests.fakes.web_server import Answer, WebServer

def peak_mb():  # VmHWM: this image's peak (ru_maxrss carries a forking parent's peak across exec)
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


case = sys.argv[1]
if case == "links":
    body = ("<html><body><main>" + "".join(f"<a href=/{i}>x</a>" for i in range(400_000))
            + "</main></body></html>").encode()
    answer = Answer(200, {"Content-Type": "text/html"}, body)
elif case == "divs":
    body = ("<html><body>" + "<div>" * 100_000 + "deep" + "</div>" * 100_000 + "</body></html>").encode()
    answer = Answer(200, {"Content-Type": "text/html"}, body)
else:  # 200 MB of one byte, compressed a megabyte at a time (so making it costs no memory here)
    gz = case == "gzip-bomb"
    co = zlib.compressobj(9, zlib.DEFLATED, 31 if gz else 15)
    piece = b"a" * (1024 * 1024)
    body = b"".join(co.compress(piece) for _ in range(200)) + co.flush()
    del piece
    answer = Answer(200, {"Content-Type": "text/html", "Content-Encoding": "gzip" if gz else "deflate"}, body)
with WebServer() as web:
    web.route("/page", lambda _req: answer)
    base = peak_mb()
    started = time.monotonic()
    try:
        result = asyncio.run(fetch_page({"url": web.url("/page")}, timeout=60))
        outcome = {"ok": True, "chars": len(result.output), "output": result.output[:200]}
    except FlowdeskError as err:
        outcome = {"ok": False, "error": str(err)}
    outcome["seconds"] = time.monotonic() - started
    outcome["rss_mb"] = peak_mb()
    outcome["base_mb"] = base
print(json.dumps(outcome))
"""


def fetch_in_subprocess(case: str) -> dict:
    r = subprocess.run([sys.executable, "-c", SCRIPT, case], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_fetch_of_400k_links_is_bounded_in_time_and_memory() -> None:
    out = fetch_in_subprocess("links")
    assert out["ok"] and out["output"].startswith("[x](http://127.0.0.1:"), out
    assert out["chars"] <= 20_000
    assert out["seconds"] < 10, out
    assert out["rss_mb"] < 160, {k: v for k, v in out.items() if k != "output"}


def test_fetch_of_100k_nested_divs_ends_quickly_without_recursion_error() -> None:
    out = fetch_in_subprocess("divs")
    assert out["ok"], out
    assert out["seconds"] < 5, out
    assert out["rss_mb"] < 160, {k: v for k, v in out.items() if k != "output"}


@pytest.mark.parametrize("case", ["gzip-bomb", "deflate-bomb"])
def test_decompression_bomb_is_refused_early_with_little_memory(case: str) -> None:
    out = fetch_in_subprocess(case)
    assert not out["ok"] and "too large" in out["error"] and "decompressed" in out["error"], out
    assert out["rss_mb"] - out["base_mb"] < 60, out
    assert out["seconds"] < 5, out


def test_deeply_nested_content_comes_out_as_text_not_a_recursion_error() -> None:
    html = (
        "<html><body><main>" + "<div><span>" * 120 + "the deep words" + "</span></div>" * 120 + "</main></body></html>"
    )
    _title, text = extract(html, format="markdown")
    assert "the deep words" in text
    _title, text = extract(html, format="text")
    assert "the deep words" in text


def test_gzip_and_deflate_bodies_still_read() -> None:
    # the bounded inflater against ordinary compressed pages (raw deflate included)
    import asyncio

    from engine.nodes.web_fetch import fetch_page
    from tests.fakes.web_server import Answer, WebServer

    page = b"<html><body><main><h1>Hi</h1><p>compressed page</p></main></body></html>"
    raw = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
    with WebServer() as web:
        web.route(
            "/gz",
            lambda _r: Answer(200, {"Content-Type": "text/html", "Content-Encoding": "gzip"}, gzip.compress(page)),
        )
        web.route(
            "/zl",
            lambda _r: Answer(200, {"Content-Type": "text/html", "Content-Encoding": "deflate"}, zlib.compress(page)),
        )
        web.route(
            "/raw",
            lambda _r: Answer(
                200, {"Content-Type": "text/html", "Content-Encoding": "deflate"}, raw.compress(page) + raw.flush()
            ),
        )
        for path in ("/gz", "/zl", "/raw"):
            result = asyncio.run(fetch_page({"url": web.url(path)}))
            assert "compressed page" in result.output, path
