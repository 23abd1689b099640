"""The browser tests need Playwright (the ``browser`` extra) and a Chromium: skipped, with the
reason, when either is missing."""

from __future__ import annotations

import os

import pytest

from engine.browser import browser_problem
from tests.browser.site import Site


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    problem = browser_problem()
    if problem is None:
        return
    skip = pytest.mark.skip(reason=f"browser tests skipped: {problem[1]}")
    for item in items:
        if "tests/browser/" in str(item.fspath).replace(os.sep, "/") and not item.get_closest_marker("no_browser"):
            item.add_marker(skip)


def chromium_processes() -> list[int]:
    """The Chromium processes descended from this test process (read from /proc)."""
    me = os.getpid()
    parents: dict[int, int] = {}
    names: dict[int, str] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        rest = stat[stat.rfind(")") + 2 :].split()
        if rest and rest[0] == "Z":  # a zombie is gone already
            continue
        parents[int(entry)] = int(rest[1]) if len(rest) > 1 else 0
        names[int(entry)] = cmd
    out = []
    for pid, cmd in names.items():
        if "chrom" not in cmd.split(" ")[0].lower():
            continue
        p, seen = parents.get(pid, 0), 0
        while p > 1 and seen < 64:
            if p == me:
                out.append(pid)
                break
            p, seen = parents.get(p, 0), seen + 1
    return out


def settled_chromium(wait: float = 3.0) -> list[int]:
    """:func:`chromium_processes` once they are gone, or after ``wait`` seconds (processes of a
    closed browser take a moment to be reaped)."""
    import time

    end = time.monotonic() + wait
    procs = chromium_processes()
    while procs and time.monotonic() < end:
        time.sleep(0.05)
        procs = chromium_processes()
    return procs


def error_text(run) -> str:
    """A run's error events, as one line (what a failed assertion shows)."""
    return " ".join(e.content for e in run.events if e.type == "error")


@pytest.fixture
def site():
    """Two sites on 127.0.0.1: ``site`` and, as ``site.outside``, another origin its pages link to."""
    with Site() as other, Site(other_host=f"http://localhost:{other.port}") as main:
        main.outside = other
        yield main
