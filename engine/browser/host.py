"""The browser process of this process: Playwright driving the system's Chromium.

One Chromium per event loop (a Playwright connection belongs to the loop that started it), started
lazily by the first browser step and shared by the steps that run at the same time; each step
gets a fresh context (its own cookies, storage and pages), closed when the step ends, fails or is
cancelled. When the last step using the browser ends the browser is closed too (after
``FLOWDESK_BROWSER_KEEPALIVE`` seconds when set, for many short steps in a row), so no Chromium
outlives the work that needed it: measured here a launch costs 0.15-0.27 s, a browser with one
page ~0.54 GB.

Every request of a context goes through its :class:`~engine.browser.scope.Guard` (``route``),
and so do WebSockets (``route_web_socket``); service workers are blocked (they could fetch
behind the route's back).

Playwright is the ``browser`` extra: imported here inside functions only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import weakref
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urljoin

from engine.browser import INSTALL_CHROMIUM, browser_problem, find_chromium, show_browser
from engine.browser.scope import Guard
from engine.nodes.base import NodeError

__all__ = ["BrowserHost", "host_for_loop", "LAUNCH_ARGS"]

log = logging.getLogger(__name__)

# What works on a closed network (measured): no sandbox (containers), no GPU, no QUIC, nothing
# phoning home. Playwright adds --headless and its own automation flags.
LAUNCH_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)

_HOSTS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, BrowserHost] = weakref.WeakKeyDictionary()


def host_for_loop() -> BrowserHost:
    """The browser host of the running event loop (made on first use)."""
    loop = asyncio.get_running_loop()
    host = _HOSTS.get(loop)
    if host is None:
        host = _HOSTS[loop] = BrowserHost()
    return host


def _keepalive() -> float:
    try:
        return max(0.0, float(os.environ.get("FLOWDESK_BROWSER_KEEPALIVE", "0") or 0))
    except ValueError:
        return 0.0


class BrowserHost:
    """One Playwright connection and one Chromium, shared by the steps running now."""

    def __init__(self) -> None:
        self._lock = asyncio.Lock()
        self._pw: Any = None
        self._browser: Any = None
        self._headed: bool | None = None
        self._users = 0
        self._idle: asyncio.TimerHandle | None = None

    @property
    def running(self) -> bool:
        return self._browser is not None

    async def _ensure(self) -> Any:
        async with self._lock:
            headed = show_browser() and bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
            browser = self._browser
            if browser is not None and (not browser.is_connected() or (headed != self._headed and self._users <= 1)):
                await self._close_now()
            if self._browser is None:
                await self._launch(headed)
            return self._browser

    async def _launch(self, headed: bool) -> None:
        problem = browser_problem()
        if problem is not None:
            raise NodeError(problem[1])
        # The start runs to its end even when the step is cancelled meanwhile (a timeout, the
        # run cancelled): Chromium is then closed at once, rather than left running unowned.
        starting = asyncio.ensure_future(_start(headed))
        try:
            self._pw, self._browser = await asyncio.shield(starting)
        except asyncio.CancelledError:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                pw, browser = await asyncio.wait_for(asyncio.shield(starting), 60)
                await browser.close()
                await pw.stop()
            raise
        self._headed = headed

    async def _close_now(self) -> None:
        browser, pw = self._browser, self._pw
        self._browser = self._pw = None
        if browser is not None:
            with contextlib.suppress(Exception):
                await browser.close()
        if pw is not None:
            with contextlib.suppress(Exception):
                await pw.stop()

    async def close(self) -> None:
        """Close the browser now (the app quits; a test ends)."""
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        async with self._lock:
            await self._close_now()

    async def _release(self) -> None:
        if self._users > 0:
            return
        delay = _keepalive()
        if delay <= 0:
            await self.close()
        else:
            loop = asyncio.get_running_loop()
            self._idle = loop.call_later(delay, lambda: loop.create_task(self._release_idle()))

    async def _release_idle(self) -> None:
        self._idle = None
        if self._users == 0:
            await self.close()

    @contextlib.asynccontextmanager
    async def context(self, guard: Guard, *, viewport: tuple[int, int] = (1280, 800)) -> AsyncIterator[Any]:
        """A fresh browser context whose requests all pass ``guard``; closed on the way out,
        however the step ends (the close itself is shielded from a second cancellation)."""
        self._users += 1
        if self._idle is not None:
            self._idle.cancel()
            self._idle = None
        try:
            browser = await self._ensure()
            context = await _new_context(browser, viewport)
            try:
                await context.route("**/*", _request_guard(guard))
                await context.route_web_socket("**/*", _socket_guard(guard))
                yield context
            finally:
                await _shielded(context.close())
        finally:
            self._users -= 1
            if self._users == 0:
                await _shielded(self._release())


async def _start(headed: bool) -> tuple[Any, Any]:
    """Playwright's driver and a Chromium from it (the ``browser`` extra is imported here)."""
    from playwright.async_api import async_playwright

    executable = find_chromium()
    pw = await async_playwright().start()
    try:
        browser = await pw.chromium.launch(
            executable_path=executable, headless=not headed, args=list(LAUNCH_ARGS), handle_sigint=False
        )
    except Exception as err:
        await pw.stop()
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise NodeError(
            f"the browser ({executable}) could not start: {first}. Is it a working Chromium? "
            f"Install one with '{INSTALL_CHROMIUM}' or set FLOWDESK_CHROMIUM."
        ) from None
    return pw, browser


async def _shielded(coro: Any) -> None:
    """Run ``coro`` to its end even when the step is being cancelled (cleanup must finish)."""
    task = asyncio.ensure_future(coro)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(task), 10)
        raise
    except Exception as err:  # a browser that died while closing: nothing left to close
        log.debug("browser cleanup: %s", err)


async def _new_context(browser: Any, viewport: tuple[int, int]) -> Any:
    """A context that may reach local addresses as an ordinary browser does.

    Navigations are fulfilled from the route (to check redirects), so Chromium gives the
    document no address space of its own, counts it as public, and its Local Network Access
    check refuses every request it makes to another loopback or private origin (the image or
    API of a local site on another port: never sent). The permission is granted here; what a
    step may reach is the guard's business (scope and ``permissions.network``, every request).
    A Chromium too old to know the permission has no such check: the context is made without it.
    """
    options: dict[str, Any] = {
        "service_workers": "block",
        "viewport": {"width": viewport[0], "height": viewport[1]},
        "accept_downloads": False,
    }
    try:
        return await browser.new_context(permissions=["local-network-access"], **options)
    except Exception as err:  # playwright's Error: an unknown permission for this Chromium
        log.debug("local-network-access not granted: %s", err)
        return await browser.new_context(**options)


def _request_guard(guard: Guard) -> Any:
    async def handle(route: Any, request: Any) -> None:
        try:
            main = request.frame.parent_frame is None
        except Exception:  # a service worker's request has no frame
            main = False
        navigation = request.is_navigation_request() and main
        if not guard.request(request.url, navigation=navigation):
            await route.abort("blockedbyclient")
        elif request.is_navigation_request():
            # Chromium follows a redirect without asking the route again: a document is fetched
            # here without following redirects, and a redirect's target checked before it is sent.
            await _follow_checked(route, request, guard, navigation)
        else:
            await route.fallback()

    return handle


async def _follow_checked(route: Any, request: Any, guard: Guard, navigation: bool) -> None:
    try:
        response = await route.fetch(max_redirects=0)
    except Exception:
        await route.abort("failed")
        return
    location = response.headers.get("location")
    if 300 <= response.status < 400 and location:
        target = urljoin(request.url, location)
        if not guard.request(target, navigation=navigation):
            await route.abort("blockedbyclient")
            return
    await route.fulfill(response=response)


def _socket_guard(guard: Guard) -> Any:
    async def handle(ws: Any) -> None:
        if guard.request(ws.url, navigation=False):
            ws.connect_to_server()
        else:
            await ws.close(code=1008, reason="outside the step's scope")

    return handle
