"""Driving a real browser for the ``browser`` kind (docs/nodes.md, "browser").

Playwright (the ``browser`` extra) drives the system's Chromium: found on ``PATH``
(``chromium``, ``chromium-browser``, ``google-chrome``) or named by ``FLOWDESK_CHROMIUM``;
Flowdesk never downloads a browser. This package's top level imports neither Playwright nor
anything heavy: validation asks :func:`browser_problem` whether a browser step could run here.

* :mod:`engine.browser.scope`: what a step may reach (its ``scope`` and the workflow's
  ``permissions.network``).
* :mod:`engine.browser.host`: the one browser process of this process (per event loop), a fresh
  context per step.
* :mod:`engine.browser.api`: the WebFlow browser API (seed ``WebFlowBrowserAPI``) on a page.
* :mod:`engine.browser.steps`: a ``steps`` list run through that API.
* :mod:`engine.browser.webscript`: WebFlow scripts: validation and result shape.
"""

from __future__ import annotations

import os
import shutil
from importlib.util import find_spec

__all__ = [
    "CHROMIUM_NAMES",
    "INSTALL_CHROMIUM",
    "INSTALL_EXTRA",
    "find_chromium",
    "browser_problem",
    "set_show_browser",
    "show_browser",
]

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
INSTALL_CHROMIUM = "apt-get install chromium"
INSTALL_EXTRA = "pip install 'flowdesk[browser]'"

# Whether browsers are started with a window ("Show browser" in the desktop). Read when a
# browser starts; one process-wide flag, as the desktop has one browser.
_SHOW = {"on": False}


def set_show_browser(on: bool) -> None:
    """Start browsers with a visible window (headed) from now on; False: headless (the default)."""
    _SHOW["on"] = bool(on)


def show_browser() -> bool:
    """Whether browsers start headed: the desktop's toggle, or ``FLOWDESK_SHOW_BROWSER=1``."""
    return _SHOW["on"] or os.environ.get("FLOWDESK_SHOW_BROWSER", "") in ("1", "true", "yes")


def find_chromium() -> str | None:
    """The Chromium executable to drive: ``FLOWDESK_CHROMIUM`` when set (and present), else the
    first of :data:`CHROMIUM_NAMES` on ``PATH``; None when there is none."""
    named = os.environ.get("FLOWDESK_CHROMIUM", "").strip()
    if named:
        path = shutil.which(named) or (named if os.path.isfile(named) and os.access(named, os.X_OK) else None)
        return path
    for name in CHROMIUM_NAMES:
        path = shutil.which(name)
        if path:
            return path
    return None


def browser_problem() -> tuple[str, str] | None:
    """Why a browser step cannot run here, as ``(code, message)`` with the install command; None
    when Playwright and Chromium are both present."""
    if find_spec("playwright") is None:
        return (
            "browser_extra_missing",
            f"browser steps need the 'browser' extra (Playwright), which is not installed: {INSTALL_EXTRA}",
        )
    if find_chromium() is None:
        named = os.environ.get("FLOWDESK_CHROMIUM", "").strip()
        where = (
            f"FLOWDESK_CHROMIUM names '{named}', which is not an executable" if named else "no Chromium found on PATH"
        )
        return (
            "browser_missing",
            f"browser steps need Chromium ({where}): install it with '{INSTALL_CHROMIUM}' "
            "or set FLOWDESK_CHROMIUM to the browser's executable",
        )
    return None
