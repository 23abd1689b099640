"""The ``browser`` node: drives a real browser (Playwright and the system's Chromium).

Data (docs/nodes.md, "browser"): either ``steps`` (``[{action, selector?, value?, timeoutMs?}]``,
see :mod:`engine.browser.steps`) or ``script`` (a WebFlow script, ``async function
execute(browser, params)``, with ``params``: ``{name: template}``), ``scope`` (``{type: "site" |
"global", domains}``), ``model``/``provider`` (asked by ``extractComponent``, ``checkPageState``
and ``queryContent``, with a picture of the page when the model reads images), and the step policy. Templates in every step are resolved like any data.

Each action logs ``browser_action`` (``{action, selector, url, durationMs}``); a screenshot logs
``browser_screenshot`` whose ``attachment`` (``{id, mime, size, data}``, data in base64) the run
store keeps apart from the event (the event keeps the id and the size). A request the scope or
the workflow's ``permissions.network`` refuses is blocked and logged ``browser_blocked``; a
navigation refused fails the step (``outside_scope`` / ``permission_denied``). The browser's
context is closed when the step ends, fails or is cancelled.
"""

from __future__ import annotations

import base64
from typing import Any

from pydantic import Field, field_validator

from engine.browser import browser_problem
from engine.browser.api import API_METHODS, DEFAULT_TIMEOUT_MS, PageImage, WebFlowBrowser
from engine.browser.host import host_for_loop
from engine.browser.scope import Guard, Scope, scope_problems
from engine.browser.steps import run_steps, step_problems
from engine.browser.webscript import script_problems, webflow_result
from engine.code.deno import deno_available, run_deno
from engine.code.errors import EXTRA_HINT
from engine.graph.permissions import access_for
from engine.llm.base import AgentInvocation, LLMError, LLMResult, NoToolsContext
from engine.llm.vision import image_data_url, provider_accepts_images
from engine.nodes.base import NodeData, NodeError, NodeSpec, PolicyData, is_none, resolve_for_step
from engine.nodes.http_masking import mask_url
from engine.run.events import EventType

__all__ = ["BrowserData", "BrowserSpec", "SPEC", "BROWSER_ACTION", "BROWSER_SCREENSHOT", "BROWSER_BLOCKED"]

BROWSER_ACTION = "browser_action"
BROWSER_SCREENSHOT = "browser_screenshot"
BROWSER_BLOCKED = "browser_blocked"

#: A WebFlow script's time limit when the node sets none (the seed's default).
SCRIPT_TIMEOUT_MS = 180_000
SCRIPT_MEMORY_MB = 256


class BrowserData(PolicyData):
    steps: list[Any] = Field(default_factory=list)
    script: str = ""
    params: dict[str, Any] = Field(default_factory=dict)
    scope: dict[str, Any] | None = Field(default=None, exclude_if=is_none)
    model: str = ""
    provider: str | None = Field(default=None, exclude_if=is_none)

    @field_validator("steps", mode="before")
    @classmethod
    def _steps(cls, v: Any) -> Any:
        return [] if v is None else v if isinstance(v, list) else [v]

    @field_validator("script", "model", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v

    @field_validator("params", mode="before")
    @classmethod
    def _params(cls, v: Any) -> Any:
        return {} if v is None else v

    @field_validator("scope", mode="before")
    @classmethod
    def _scope(cls, v: Any) -> Any:
        if v is None or isinstance(v, dict):
            return v
        return {"type": "site", "domains": [v]} if isinstance(v, str) else {"invalid": v}


class BrowserSpec(NodeSpec):
    kind = "browser"
    data_model = BrowserData
    label = "Browser"
    description = "Drive a real browser: open pages, click, type and read what they show."
    icon = "browser"
    color = "#1f883d"
    category = "Steps"
    works = True
    verbatim = ("script",)  # a WebFlow script runs as written: its `${…}` are JavaScript's

    def new_data(self) -> dict[str, Any]:
        return {
            "steps": [{"action": "goto", "value": "https://example.com"}, {"action": "extractText", "selector": "h1"}]
        }

    def title(self, data: NodeData) -> str:
        return "Browser (script)" if getattr(data, "script", "") else "Browser"

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        if getattr(data, "script", ""):
            return [("WebFlow script", True)]
        steps = [s for s in getattr(data, "steps", []) if isinstance(s, dict)]
        if not steps:
            return [("(no steps)", True)]
        first = steps[0]
        text = f"{first.get('action', '?')} {first.get('value') or first.get('selector') or ''}".strip()
        more = f" (+{len(steps) - 1} more)" if len(steps) > 1 else ""
        return [(text + more, True)]

    def describe(self, node: Any) -> str:
        return f"Browser '{node.id}'"

    def check(self, node: Any, checks: Any) -> None:
        d = node.data
        where = checks.label(node)
        if d.script.strip() and d.steps:
            checks.error("browser_steps_and_script", f"{where}: has both steps and a script; keep one of them.")
        elif not d.script.strip() and not d.steps:
            checks.error("browser_empty", f"{where}: has no steps and no script.")
        for message in step_problems(d.steps) if not d.script.strip() else []:
            checks.error("browser_step_invalid", f"{where}: {message}.")
        if d.script.strip():
            for code, message in script_problems(d.script):
                checks.error(code, f"{where}: {message}.")
            if not deno_available():
                checks.error("script_host_missing", f"{where}: WebFlow scripts run in Deno; {EXTRA_HINT}.")
        for message in scope_problems(d.scope):
            checks.error("browser_scope_invalid", f"{where}: {message}.")
        problem = browser_problem()
        if problem is not None:
            checks.error(problem[0], f"{where}: {problem[1]}.")

    async def execute(self, ctx: Any, node: Any, value: Any) -> tuple[Any, str]:
        problem = browser_problem()
        if problem is not None:
            raise NodeError(f"{self.describe(node)}: {problem[1]}")
        data, secrets = resolve_for_step(ctx, node, value)
        # A script is code, not a template: its `${…}` are JavaScript's (its params are resolved)
        script = str(getattr(node.data, "script", "") or "")
        if script.strip():
            if not deno_available():
                raise NodeError(f"{self.describe(node)}: WebFlow scripts run in Deno; {EXTRA_HINT}")
            refused = script_problems(script)
            if refused:
                raise NodeError(f"{refused[0][0]}: {refused[0][1]}")
        steps = data.get("steps") or []
        if not script.strip():
            problems = step_problems(steps)
            if problems:
                raise NodeError(f"{self.describe(node)}: {problems[0]}")
        workflow = getattr(ctx, "workflow", None)
        session = _Session(ctx, node, secrets)
        guard = Guard(Scope.of(data.get("scope")), access_for(workflow, open_by_default=True), session.blocked)
        async with host_for_loop().context(guard) as context:
            page = await context.new_page()
            browser = WebFlowBrowser(
                page,
                guard,
                on_action=session.action,
                on_screenshot=session.screenshot,
                ask_model=session.ask_model,
                timeout_ms=DEFAULT_TIMEOUT_MS,
            )
            if script.strip():
                output = await _run_script(ctx, node, browser, script, data, session)
            else:
                output = await run_steps(browser, steps)
        return ctx.mask(output, secrets) if secrets else output, "output"


async def _run_script(
    ctx: Any, node: Any, browser: WebFlowBrowser, script: str, data: dict[str, Any], session: _Session
) -> Any:
    """Run a WebFlow script in the code extra's Deno host: ``execute(browser, params)`` with every
    method of the seed's browser API bridged to ``browser``; the Deno process itself reaches
    nothing (no network, no files): all it does goes through the bridge and so the guard."""
    params = data.get("params") or {}
    if not params:  # a script of an imported WebFlow reads the flow's variables
        params = dict(getattr(ctx, "variables", None) or {})
    timeout = getattr(node.data, "timeoutMs", None) or SCRIPT_TIMEOUT_MS
    try:
        value = await run_deno(
            script,
            entry="execute",
            arguments=[params],
            api_methods={name: getattr(browser, name) for name in API_METHODS},
            access=None,
            timeout_ms=int(timeout),
            memory_mb=SCRIPT_MEMORY_MB,
            on_log=session.log,
            typescript=True,
        )
    except NodeError:
        browser.guard.raise_if_denied()  # a navigation refused says so, whatever the script made of it
        raise
    browser.guard.raise_if_denied()
    return webflow_result(value)


class _Session:
    """One step's reporting: its events (secrets masked) and its model."""

    def __init__(self, ctx: Any, node: Any, secrets: list[str]) -> None:
        self.ctx = ctx
        self.node = node
        self.secrets = secrets

    def _mask(self, text: str) -> str:
        return self.ctx.mask(text, self.secrets) if self.secrets else text

    def _url(self, url: str) -> str:
        """A page's address fit for the run record: secrets masked, and, as for http steps, a
        userinfo password and credential-named query values (a login form sent with GET puts
        ``password=…`` in the address) masked even when no secret names them."""
        return mask_url(self._mask(url))

    def action(self, action: str, selector: str, url: str, duration_ms: int, extra: dict[str, Any]) -> None:
        url, selector = self._url(url), self._mask(selector)
        fields = {"action": action, "selector": selector, "url": url, "durationMs": duration_ms, **extra}
        shown = f"{action} {selector}".strip() + f" · {url} · {duration_ms} ms"
        self.ctx.emit(self.node.id, BROWSER_ACTION, shown, fields)

    def screenshot(self, png: bytes, url: str, selector: str) -> None:
        attachment_id = f"{self.node.id}-{self.ctx.new_id()[:12]}"
        url = self._url(url)
        size = len(png)
        extra = {
            "url": url,
            "selector": self._mask(selector),
            "attachment": {
                "id": attachment_id,
                "mime": "image/png",
                "size": size,
                "data": base64.b64encode(png).decode("ascii"),
            },
        }
        self.ctx.emit(self.node.id, BROWSER_SCREENSHOT, f"screenshot · {url} · {size // 1024} KB", extra)

    def log(self, stream: str, text: str) -> None:
        text = self._mask(text)
        self.ctx.emit(self.node.id, EventType.CODE_LOG, text, {"stream": stream, "text": text})

    def blocked(self, url: str, reason: str) -> None:
        """A request refused by the guard, logged as it is refused (before the step goes on)."""
        url = self._url(url)
        self.ctx.emit(self.node.id, BROWSER_BLOCKED, f"blocked ({reason}): {url}", {"url": url, "reason": reason})

    async def ask_model(self, system: str, user: str, page_image: PageImage | None = None) -> str:
        """The node's model's answer about the page; a picture of it goes along (a data URL in
        the invocation's ``images``) only when the provider sends images to that model. The
        picture reaches the model only: no event or output holds it. The step's secrets are
        masked in the text and shown as empty fields in the picture."""
        data = self.node.data
        user = self._mask(user)
        inv = AgentInvocation(
            self.node.id,
            "Browser",
            system,
            user,
            getattr(data, "model", "") or "",
            "low",
            {"web_search": False, "subagents": False},
            [],
            getattr(data, "provider", None),
        )
        try:
            provider = self.ctx.resolve(inv)
            if page_image is not None and provider_accepts_images(provider, inv.model):
                shot = await page_image(self.secrets)
                if shot is not None:
                    inv.images = [image_data_url(*shot)]
            result = await provider.complete(inv, NoToolsContext(self.node.id))
        except LLMError as err:
            raise NodeError(f"Browser '{self.node.id}': the model could not answer: {err}") from None
        if not isinstance(result, LLMResult):
            raise NodeError(f"Browser '{self.node.id}': the provider returned no answer")
        return result.text


SPEC = BrowserSpec()
