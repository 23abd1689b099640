"""Readable-text extraction for the ``fetch`` node: quality and speed on real saved pages.

    python -m tests.bench.bench_web_extract [--json] [--quick] [--pages FILE.html ...]

For each page, the reference is the text of its article element (Sphinx ``div.body``, the
Node.js docs' ``#apicontent``, mdBook's ``main``, else ``main``/``[role=main]``/``article``/
``body``). Each extractor's Markdown is compared with it as sets of word 3-grams:
``recall`` (article kept), ``precision`` (output that is article; link URLs count against
it), ``nav leak`` (share of the chrome's 3-grams that got through) and whether fenced code
blocks came out. Times are medians per page next to a bare Lexbor parse of the same page
(``x parse``), so compare ratios. The pages default to tests/fixtures/pages; pass more with
``--pages`` (the choice in engine/nodes/web_fetch.py was measured on 12 documentation pages).

Candidates other than the chosen one (engine.nodes.web_fetch.extract: selectolax + markdownify)
run when installed: trafilatura, readability-lxml (+ markdownify).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from engine.nodes.web_fetch import extract
from tests.bench.common import report

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pages"
REFERENCE_ROOTS = ("div.body[role=main]", "#apicontent", "main", "[role=main]", "article", "body")
REFERENCE_NOISE = "script, style, noscript, svg, nav, .headerlink, div.header, .nav-panel"


def shingles(text: str, n: int = 3) -> set[tuple[str, ...]]:
    words = re.findall(r"[A-Za-z0-9_]+", text.lower())
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def reference(html: str) -> tuple[set, set]:
    """(article 3-grams, chrome 3-grams) of a page."""
    tree = LexborHTMLParser(html)
    for node in tree.css("script, style, noscript, svg"):
        node.decompose()
    root_sel = next(s for s in REFERENCE_ROOTS if tree.css_first(s) is not None)
    everything = shingles(tree.body.text(separator=" ") if tree.body else "")
    for node in tree.css(REFERENCE_NOISE):
        node.decompose()
    article = shingles(tree.css_first(root_sel).text(separator=" "))
    return article, everything - article


def candidates() -> dict[str, Callable[[str], str]]:
    found: dict[str, Callable[[str], str]] = {"selectolax + markdownify (chosen)": lambda html: extract(html)[1]}
    try:
        import trafilatura

        found["trafilatura (markdown)"] = lambda html: (
            trafilatura.extract(
                html, output_format="markdown", include_formatting=True, include_links=True, include_tables=True
            )
            or ""
        )
    except ImportError:
        pass
    try:
        import markdownify
        from readability import Document

        found["readability-lxml + markdownify"] = lambda html: markdownify.markdownify(
            Document(html).summary(html_partial=True), heading_style="ATX"
        )
    except ImportError:
        pass
    return found


def median_ms(fn: Callable[[], Any], repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000


def main() -> None:
    p = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    p.add_argument("--json", action="store_true")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--pages", nargs="*", default=[])
    args = p.parse_args()
    repeat = 1 if args.quick else 5
    pages = sorted(FIXTURES.glob("*.html")) + [Path(x) for x in args.pages]
    cands = candidates()
    per_page: list[dict[str, Any]] = []
    totals: dict[str, list[tuple[float, float, float, float, bool]]] = {name: [] for name in cands}
    for page in pages:
        html = page.read_text(encoding="utf-8", errors="replace")
        article, chrome = reference(html)
        parse_ms = median_ms(lambda: LexborHTMLParser(html), repeat)
        for name, fn in cands.items():
            out = fn(html)
            got = shingles(out)
            recall = len(got & article) / max(1, len(article))
            precision = len(got & article) / max(1, len(got))
            leak = len(got & chrome) / len(chrome) if chrome else 0.0
            ms = median_ms(lambda: fn(html), repeat)
            totals[name].append((recall, precision, leak, ms / max(parse_ms, 1e-6), "```" in out))
            per_page.append(
                {
                    "page": page.name,
                    "extractor": name,
                    "recall": round(recall, 3),
                    "precision": round(precision, 3),
                    "nav leak": round(leak, 3),
                    "ms": round(ms, 1),
                    "x parse": round(ms / max(parse_ms, 1e-6), 1),
                    "fenced code": "```" in out,
                }
            )
    summary = [
        {
            "extractor": name,
            "recall": round(statistics.mean(r[0] for r in rows), 3),
            "worst recall": round(min(r[0] for r in rows), 3),
            "precision": round(statistics.mean(r[1] for r in rows), 3),
            "nav leak": round(statistics.mean(r[2] for r in rows), 3),
            "x parse": round(statistics.median(r[3] for r in rows), 1),
            "pages with fences": f"{sum(r[4] for r in rows)}/{len(rows)}",
        }
        for name, rows in totals.items()
        if rows
    ]
    if args.json:
        print(json.dumps({"benchmark": "web extract", "pages": per_page, "summary": summary}, indent=2))
        return
    report(f"Readable-text extraction per page ({len(pages)} pages, medians of {repeat})", per_page, False)
    report("Summary (means; x parse = extraction time / a bare Lexbor parse, median over pages)", summary, False)
    if len(cands) == 1:
        print("\n(other candidates are not installed: pip install trafilatura readability-lxml)", file=sys.stderr)


if __name__ == "__main__":
    main()
