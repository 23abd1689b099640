"""The WebFlow browser API (seed 000's ``WebFlowBrowserAPI``) on a Playwright page.

:class:`WebFlowBrowser` has every method of the seed's table under its own (camelCase) name, so a
WebFlow script's ``browser.navigateTo(url)`` is bridged to the method of that name; the ``steps``
of a browser node run through the same methods (:mod:`engine.browser.steps`). Each action is
checked against the step's :class:`~engine.browser.scope.Guard` (a navigation before it is sent,
everything the page loads as it is requested) and reported through ``on_action`` (the node logs
``browser_action``); ``extractComponent``, ``checkPageState`` and ``queryContent`` ask the node's
model about the page's text through ``ask_model``, with a picture of the viewport when that model
reads images (:mod:`engine.browser.shots`; the action's event notes its size, not the picture).
"""

from __future__ import annotations

import base64
import json
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol
from urllib.parse import urljoin

from engine.browser.scope import Guard
from engine.browser.shots import page_image_for_model
from engine.nodes.base import NodeError

__all__ = ["WebFlowBrowser", "API_METHODS", "DEFAULT_TIMEOUT_MS", "PAGE_TEXT_LIMIT"]

DEFAULT_TIMEOUT_MS = 30_000
PAGE_TEXT_LIMIT = 12_000  # characters of page text sent to the model

#: The seed's ``WebFlowBrowserAPI``, in its order: what a script's ``browser`` object offers.
API_METHODS = (
    "navigateTo",
    "goBack",
    "awaitPageLoad",
    "awaitPageInteraction",
    "getCurrentUrl",
    "click",
    "clickAndWait",
    "followLink",
    "enterText",
    "enterTextOnPage",
    "clearAndType",
    "pressKey",
    "selectOption",
    "getPageText",
    "captureScreenshot",
    "waitForNavigation",
    "extractComponent",
    "checkPageState",
    "queryContent",
)

OnAction = Callable[[str, str, str, int, dict[str, Any]], None]
OnScreenshot = Callable[[bytes, str, str], None]


class PageImage(Protocol):
    """A picture of the page for the model, taken only when called: ``(bytes, media type)`` or
    None; form fields holding one of ``hide`` (the step's secrets) shown empty."""

    def __call__(self, hide: Sequence[str] = ()) -> Awaitable[tuple[bytes, str] | None]: ...


#: ``ask_model(system, user, page_image)``: the answer's text. It calls ``page_image`` only when
#: the node's model reads images (taking a picture costs time; text-only models need none).
AskModel = Callable[[str, str, PageImage], Awaitable[str]]

_TABLE_JS = """(el) => {
  const table = el.tagName === 'TABLE' ? el : el.querySelector('table');
  if (!table) return null;
  const cells = (r) => Array.from(r.children).filter((c) => c.tagName === 'TH' || c.tagName === 'TD');
  const text = (c) => (c.innerText || c.textContent || '').trim();
  const rows = Array.from(table.rows);
  let header = null, body = rows;
  const head = table.tHead && table.tHead.rows.length ? table.tHead.rows[0] : null;
  const thRow = rows.find((r) => cells(r).length && cells(r).every((c) => c.tagName === 'TH'));
  if (head) { header = head; body = rows.filter((r) => r.parentElement !== table.tHead); }
  else if (thRow) { header = thRow; body = rows.filter((r) => r !== thRow); }
  else if (rows.length) { header = rows[0]; body = rows.slice(1); }
  const keys = header ? cells(header).map((c, i) => text(c) || ('column' + (i + 1))) : [];
  return body.filter((r) => cells(r).length).map((r) => {
    const o = {};
    cells(r).forEach((c, i) => { o[i < keys.length ? keys[i] : 'column' + (i + 1)] = text(c); });
    return o;
  });
}"""

_ELEMENTS_JS = """() => {
  const out = [];
  const sel = (e) => {
    if (e.id) return '#' + CSS.escape(e.id);
    const tag = e.tagName.toLowerCase();
    if (e.getAttribute('name')) return tag + '[name="' + e.getAttribute('name').replace(/"/g, '\\\\"') + '"]';
    const path = [];
    for (let n = e; n && n.nodeType === 1 && n !== document.body; n = n.parentElement) {
      if (n.id) { path.unshift('#' + CSS.escape(n.id)); break; }
      const same = Array.from(n.parentElement ? n.parentElement.children : []).filter((s) => s.tagName === n.tagName);
      path.unshift(n.tagName.toLowerCase() + (same.length > 1 ? ':nth-of-type(' + (same.indexOf(n) + 1) + ')' : ''));
    }
    return path.join(' > ');
  };
  for (const e of document.querySelectorAll('a[href],button,input,select,textarea,[role=button],[role=link]')) {
    if (out.length >= 150) break;
    const label = (e.getAttribute('aria-label') || e.getAttribute('placeholder') || e.innerText || e.value || '').trim();
    out.push({selector: sel(e), tag: e.tagName.toLowerCase(), type: e.getAttribute('type') || undefined,
              text: label.slice(0, 80) || undefined, href: e.getAttribute('href') || undefined});
  }
  return out;
}"""


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def parse_json_answer(text: str) -> Any:
    """A model's JSON answer (code fences and prose around it tolerated); ValueError when none."""
    body = text.strip()
    fence = re.search(r"```(?:json)?\s*(.*?)```", body, re.S)
    if fence:
        body = fence.group(1).strip()
    try:
        return json.loads(body)
    except ValueError:
        pass
    for opener, closer in (("{", "}"), ("[", "]")):
        start, end = body.find(opener), body.rfind(closer)
        if 0 <= start < end:
            try:
                return json.loads(body[start : end + 1])
            except ValueError:
                continue
    raise ValueError("no JSON in the answer")


class WebFlowBrowser:
    """The seed's browser API on one page (see the module docstring)."""

    def __init__(
        self,
        page: Any,
        guard: Guard,
        *,
        on_action: OnAction,
        on_screenshot: OnScreenshot,
        ask_model: AskModel | None = None,
        timeout_ms: int = DEFAULT_TIMEOUT_MS,
    ) -> None:
        self.page = page
        self.guard = guard
        self.on_action = on_action
        self.on_screenshot = on_screenshot
        self.ask_model = ask_model
        self.timeout_ms = timeout_ms

    # ------------------------------------------------------------------ plumbing
    def _ms(self, timeout: Any) -> int:
        if isinstance(timeout, (int, float)) and not isinstance(timeout, bool) and timeout > 0:
            return int(timeout)
        return self.timeout_ms

    async def _run(
        self, action: str, selector: str, work: Awaitable[Any], *, timeout_ms: int | None = None, **extra: Any
    ) -> Any:
        """Do one action: refusals before and after it fail the step; Playwright's errors become
        a message naming the action; ``browser_action`` reported with its duration."""
        self.guard.raise_if_denied()
        started = time.perf_counter()
        try:
            result = await work
        except NodeError:
            raise
        except Exception as err:
            self.guard.raise_if_denied()  # a navigation refused mid-action says so, not "blocked by client"
            name = type(err).__name__
            where = f" '{selector}'" if selector else ""
            if name == "TimeoutError":
                ms = timeout_ms or self.timeout_ms
                raise NodeError(
                    f"browser {action}{where}: nothing happened within {ms} ms ({_first_line(err)})"
                ) from None
            raise NodeError(f"browser {action}{where} failed: {_first_line(err)}") from None
        self.guard.raise_if_denied()
        self.on_action(action, selector, self.page.url, round((time.perf_counter() - started) * 1000), extra)
        return result

    def _absolute(self, url: str) -> str:
        url = str(url or "").strip()
        if re.match(r"^[\w.-]+:\d+(/|$)", url):  # "localhost:3000/x": a host and port
            url = "http://" + url
        elif url and ":" not in url.split("/")[0] and not url.startswith(("/", ".", "#", "?")):
            url = "https://" + url  # "example.com/page": a host, as a browser's address bar reads it
        current = self.page.url
        if current and current.startswith(("http://", "https://")):
            return urljoin(current, url)
        return url

    async def _goto(self, url: str, timeout_ms: int) -> None:
        try:
            await self.page.goto(url, wait_until="load", timeout=timeout_ms)
        except Exception:
            self.guard.raise_if_denied()
            raise

    # ------------------------------------------------------------------ navigation
    async def navigateTo(self, url: str, *, _action: str = "navigateTo", _timeout: Any = None) -> None:
        target = self._absolute(url)
        if not target:
            raise NodeError(f"browser {_action}: no URL given")
        self.guard.check_navigation(target)  # before anything is sent
        ms = self._ms(_timeout)
        await self._run(_action, "", self._goto(target, ms), timeout_ms=ms)

    async def goBack(self) -> None:
        await self._run("goBack", "", self.page.go_back(timeout=self.timeout_ms))

    async def awaitPageLoad(self, timeout: Any = None) -> None:
        ms = self._ms(timeout)
        await self._run("awaitPageLoad", "", self.page.wait_for_load_state("load", timeout=ms), timeout_ms=ms)

    async def awaitPageInteraction(self, timeout: Any = None) -> None:
        ms = self._ms(timeout)

        async def settle() -> None:
            await self.page.wait_for_load_state("domcontentloaded", timeout=ms)
            try:  # a page that keeps a connection open never goes quiet: a short wait is enough
                await self.page.wait_for_load_state("networkidle", timeout=min(ms, 2000))
            except Exception:
                pass

        await self._run("awaitPageInteraction", "", settle(), timeout_ms=ms)

    async def waitForNavigation(self, timeout: Any = None) -> None:
        ms = self._ms(timeout)
        await self._run("waitForNavigation", "", self.page.wait_for_load_state("load", timeout=ms), timeout_ms=ms)

    async def getCurrentUrl(self) -> str:
        return str(self.page.url)

    # ------------------------------------------------------------------ DOM interaction
    async def click(self, cssSelector: str, *, _action: str = "click", _timeout: Any = None) -> None:
        ms = self._ms(_timeout)
        await self._run(_action, cssSelector, self.page.click(cssSelector, timeout=ms), timeout_ms=ms)

    async def clickAndWait(self, cssSelector: str, timeout: Any = None) -> None:
        ms = self._ms(timeout)

        async def go() -> None:
            await self.page.click(cssSelector, timeout=ms)
            await self.page.wait_for_load_state("load", timeout=ms)

        await self._run("clickAndWait", cssSelector, go(), timeout_ms=ms)

    async def followLink(self, cssSelector: str) -> None:
        ms = self.timeout_ms

        async def go() -> None:
            href = await self.page.get_attribute(cssSelector, "href", timeout=ms)
            if href:
                self.guard.check_navigation(self._absolute(href))
            await self.page.click(cssSelector, timeout=ms)
            await self.page.wait_for_load_state("load", timeout=ms)

        await self._run("followLink", cssSelector, go(), timeout_ms=ms)

    async def enterText(self, cssSelector: str, text: str, *, _action: str = "enterText", _timeout: Any = None) -> None:
        ms = self._ms(_timeout)
        await self._run(_action, cssSelector, self.page.fill(cssSelector, str(text), timeout=ms), timeout_ms=ms)

    async def clearAndType(self, cssSelector: str, text: str) -> None:
        ms = self.timeout_ms

        async def go() -> None:
            await self.page.fill(cssSelector, "", timeout=ms)
            await self.page.locator(cssSelector).first.press_sequentially(str(text), timeout=ms)

        await self._run("clearAndType", cssSelector, go(), timeout_ms=ms)

    async def enterTextOnPage(self, text: str, submitForm: bool = False) -> None:
        ms = self.timeout_ms

        async def go() -> None:
            focused = await self.page.evaluate(
                "() => { const e = document.activeElement; return !!e && e !== document.body && "
                "(e.isContentEditable || ['INPUT','TEXTAREA'].includes(e.tagName)); }"
            )
            if not focused:
                field = self.page.locator(
                    "input:not([type=hidden]):not([type=submit]):not([type=button]):not([type=checkbox])"
                    ":not([type=radio]), textarea"
                ).first
                await field.focus(timeout=ms)
            await self.page.keyboard.type(str(text))
            if submitForm:
                await self.page.keyboard.press("Enter")
                await self.page.wait_for_load_state("load", timeout=ms)

        await self._run("enterTextOnPage", "", go(), timeout_ms=ms)

    async def pressKey(self, key: str, *, _action: str = "pressKey", _selector: str = "", _timeout: Any = None) -> None:
        ms = self._ms(_timeout)
        if _selector:
            work = self.page.press(_selector, str(key), timeout=ms)
        else:
            work = self.page.keyboard.press(str(key))
        await self._run(_action, _selector, work, timeout_ms=ms)

    async def selectOption(
        self, cssSelector: str, value: str, *, _action: str = "selectOption", _timeout: Any = None
    ) -> None:
        ms = self._ms(_timeout)

        async def go() -> None:
            field = self.page.locator(cssSelector).first
            await field.wait_for(state="attached", timeout=ms)
            options = await field.evaluate(
                "(e) => Array.from(e.options || []).map((o) => [o.value, (o.label || o.text || '').trim()])"
            )
            wanted = str(value)
            if not any(wanted in (v, label) for v, label in options):  # fail now, not at the timeout
                shown = ", ".join(label or v for v, label in options[:20]) or "none"
                raise NodeError(f"browser {_action} '{cssSelector}': no option '{wanted}' (options: {shown})")
            await field.select_option(wanted, timeout=ms)  # by value or by label

        await self._run(_action, cssSelector, go(), timeout_ms=ms)

    # ------------------------------------------------------------------ page state
    async def getPageText(self) -> str:
        text = await self._run("getPageText", "", self.page.inner_text("body", timeout=self.timeout_ms))
        return str(text)

    async def captureScreenshot(self) -> str:
        png = await self.screenshot(_action="captureScreenshot")
        return "data:image/png;base64," + base64.b64encode(png).decode("ascii")

    # ------------------------------------------------------------------ the steps' own actions
    async def screenshot(
        self, selector: str = "", *, full_page: bool = False, _action: str = "screenshot", _timeout: Any = None
    ) -> bytes:
        ms = self._ms(_timeout)
        if selector:
            work = self.page.locator(selector).first.screenshot(timeout=ms, type="png")
        else:
            work = self.page.screenshot(full_page=full_page, timeout=ms, type="png")
        png = await self._run(_action, selector, work, timeout_ms=ms)
        self.on_screenshot(png, self.page.url, selector)
        return png

    async def wait_for(self, selector: str, value: Any, _timeout: Any = None) -> None:
        ms = self._ms(_timeout)
        if selector:
            state = str(value).strip().lower() if value else "visible"
            if state not in ("visible", "attached", "hidden", "detached"):
                state = "visible"
            work: Awaitable[Any] = self.page.wait_for_selector(selector, state=state, timeout=ms)
        elif str(value).strip().lower() in ("load", "domcontentloaded", "networkidle"):
            work = self.page.wait_for_load_state(str(value).strip().lower(), timeout=ms)
        else:
            try:
                pause = max(0, min(int(float(value or 0)), ms))
            except (TypeError, ValueError):
                raise NodeError(
                    f"browser waitFor: '{value}' is neither a selector, a load state nor a number of ms"
                ) from None
            work = self.page.wait_for_timeout(pause)
        await self._run("waitFor", selector, work, timeout_ms=ms)

    async def extract_text(self, selector: str, _timeout: Any = None) -> str:
        ms = self._ms(_timeout)
        text = await self._run(
            "extractText", selector, self.page.inner_text(selector or "body", timeout=ms), timeout_ms=ms
        )
        return str(text).strip()

    async def extract_attribute(self, selector: str, attribute: str, _timeout: Any = None) -> str | None:
        ms = self._ms(_timeout)
        work = self.page.get_attribute(selector, attribute, timeout=ms)
        return await self._run("extractAttribute", selector, work, timeout_ms=ms, attribute=attribute)

    async def extract_table(self, selector: str, _timeout: Any = None) -> list[dict[str, Any]]:
        ms = self._ms(_timeout)
        where = selector or "table"
        rows = await self._run(
            "extractTable", where, self.page.locator(where).first.evaluate(_TABLE_JS, timeout=ms), timeout_ms=ms
        )
        if rows is None:
            raise NodeError(f"browser extractTable '{where}': there is no table there")
        return list(rows)

    # ------------------------------------------------------------------ asking the model
    async def _page_for_model(self, *, elements: bool = False) -> str:
        text = str(await self.page.inner_text("body", timeout=self.timeout_ms))
        if len(text) > PAGE_TEXT_LIMIT:
            text = text[:PAGE_TEXT_LIMIT] + "\n[… page text cut]"
        parts = [f"URL: {self.page.url}", f"Title: {await self.page.title()}", "Page text:", text]
        if elements:
            items = await self.page.evaluate(_ELEMENTS_JS)
            parts += ["Interactive elements (selector, tag, text):", json.dumps(items, ensure_ascii=False)]
        return "\n".join(parts)

    async def _ask(self, method: str, system: str, user: str) -> Any:
        if self.ask_model is None:
            raise NodeError(f"browser {method}: this step has no model to ask")
        started = time.perf_counter()
        shown: dict[str, Any] = {}

        async def page_image(hide: Sequence[str] = ()) -> tuple[bytes, str] | None:
            shot = await page_image_for_model(self.page, hide=hide, timeout_ms=min(self.timeout_ms, 10_000))
            if shot is not None:  # the action's event says a picture went, not the picture
                shown["image"] = {"mime": shot[1], "size": len(shot[0])}
            return shot

        answer = await self.ask_model(system, user, page_image)
        try:
            value = parse_json_answer(answer)
        except ValueError:
            raise NodeError(f"browser {method}: the model's answer is not JSON: {answer[:200]!r}") from None
        self.on_action(method, "", self.page.url, round((time.perf_counter() - started) * 1000), shown)
        return value

    async def extractComponent(self, componentDef: Any, userRequest: str | None = None) -> Any:
        definition = componentDef if isinstance(componentDef, dict) else {"typeName": str(componentDef)}
        type_name = str(definition.get("typeName") or "Component")
        schema = str(definition.get("schema") or "")
        system = (
            "You find a UI component on a web page from its description and answer with one JSON value "
            f"of the TypeScript type {type_name}, nothing else. Use CSS selectors from the list of "
            "interactive elements when the type asks for a selector."
        )
        user = f"Type {type_name}:\n{schema}\n\n"
        if userRequest:
            user += f"User request: {userRequest}\n\n"
        user += await self._page_for_model(elements=True)
        return await self._ask("extractComponent", system, user)

    async def checkPageState(self, expectedStateDescription: str) -> dict[str, Any]:
        system = (
            "You check whether a web page is in an expected state. Answer with JSON only: "
            '{"matched": true|false, "explanation": "…"}'
        )
        user = f"Expected state: {expectedStateDescription}\n\n" + await self._page_for_model()
        value = await self._ask("checkPageState", system, user)
        if not isinstance(value, dict):
            value = {"matched": bool(value), "explanation": ""}
        return {"matched": bool(value.get("matched")), "explanation": str(value.get("explanation") or "")}

    async def queryContent(self, question: str) -> dict[str, Any]:
        system = (
            "You answer a question from a web page's content. Answer with JSON only: "
            '{"answered": true|false, "answerText": "…", "confidence": 0.0-1.0}'
        )
        user = f"Question: {question}\n\n" + await self._page_for_model()
        value = await self._ask("queryContent", system, user)
        if not isinstance(value, dict):
            return {"answered": True, "answerText": str(value)}
        out: dict[str, Any] = {"answered": bool(value.get("answered", True))}
        if value.get("answerText") is not None:
            out["answerText"] = str(value["answerText"])
        if isinstance(value.get("confidence"), (int, float)):
            out["confidence"] = float(value["confidence"])
        return out
