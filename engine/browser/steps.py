"""A browser node's ``steps``: ``{action, selector?, value?, timeoutMs?}`` run in order.

Actions: ``goto`` (``value``: the URL), ``click``, ``type`` (``value``: the text, the field
cleared first), ``select`` (``value``: the option's value or label), ``press`` (``value``: a key
such as ``Enter``; on ``selector`` when given, else the focused element), ``waitFor`` (a
``selector`` to appear, or ``value``: a load state or milliseconds), ``extractText`` (the text of
``selector``, the page's when none), ``extractAttribute`` (``value``: the attribute's name),
``extractTable`` (rows as objects keyed by the header cells: ``th``, else the first row),
``screenshot`` (of ``selector``, else the viewport; ``value: "full"`` for the whole page).

The output is the list of what the extract steps returned, or that one value when there is one.
"""

from __future__ import annotations

from typing import Any

from engine.browser.api import WebFlowBrowser

__all__ = ["STEP_ACTIONS", "EXTRACT_ACTIONS", "step_problems", "run_steps"]

STEP_ACTIONS = (
    "goto",
    "click",
    "type",
    "select",
    "press",
    "waitFor",
    "extractText",
    "extractAttribute",
    "extractTable",
    "screenshot",
)
EXTRACT_ACTIONS = frozenset({"extractText", "extractAttribute", "extractTable"})
_NEEDS_SELECTOR = frozenset({"click", "type", "select", "extractAttribute"})
_NEEDS_VALUE = {
    "goto": "the URL to open",
    "select": "the option to choose",
    "press": "the key to press",
    "extractAttribute": "the attribute's name",
}


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def step_problems(steps: Any) -> list[str]:
    """What is wrong with a ``steps`` list, one message per problem (``step 2 (click): …``)."""
    if not isinstance(steps, list):
        return ["steps must be a list of {action, selector, value, timeoutMs}"]
    out = []
    for i, step in enumerate(steps, 1):
        if not isinstance(step, dict):
            out.append(f"step {i} is not an object {{action, selector, value}}")
            continue
        action = step.get("action")
        if action not in STEP_ACTIONS:
            shown = f"'{action}'" if action else "no action"
            out.append(f"step {i} has {shown}; the actions are {', '.join(STEP_ACTIONS)}")
            continue
        if action in _NEEDS_SELECTOR and not _text(step.get("selector")).strip():
            out.append(f"step {i} ({action}) needs a selector")
        if action in _NEEDS_VALUE and not _text(step.get("value") or step.get("url")).strip():
            out.append(f"step {i} ({action}) needs a value: {_NEEDS_VALUE[action]}")
        timeout = step.get("timeoutMs")
        if timeout is not None and (isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout < 0):
            out.append(f"step {i} ({action}) has timeoutMs {timeout!r}; it must be a number of milliseconds")
    return out


async def run_steps(browser: WebFlowBrowser, steps: list[dict[str, Any]]) -> Any:
    """Run ``steps`` (templates already resolved) on ``browser``; the extracts' values."""
    extracted: list[Any] = []
    for step in steps:
        action = step.get("action")
        selector = _text(step.get("selector")).strip()
        value = step.get("value")
        if value is None and action == "goto":
            value = step.get("url")
        timeout = step.get("timeoutMs")
        if action == "goto":
            await browser.navigateTo(_text(value), _action="goto", _timeout=timeout)
        elif action == "click":
            await browser.click(selector, _action="click", _timeout=timeout)
        elif action == "type":
            await browser.enterText(selector, _text(value), _action="type", _timeout=timeout)
        elif action == "select":
            await browser.selectOption(selector, _text(value), _action="select", _timeout=timeout)
        elif action == "press":
            await browser.pressKey(_text(value), _action="press", _selector=selector, _timeout=timeout)
        elif action == "waitFor":
            await browser.wait_for(selector, value, _timeout=timeout)
        elif action == "extractText":
            extracted.append(await browser.extract_text(selector, _timeout=timeout))
        elif action == "extractAttribute":
            extracted.append(await browser.extract_attribute(selector, _text(value), _timeout=timeout))
        elif action == "extractTable":
            extracted.append(await browser.extract_table(selector, _timeout=timeout))
        elif action == "screenshot":
            full = _text(value).strip().lower() in ("full", "fullpage", "page", "true")
            await browser.screenshot(selector, full_page=full, _timeout=timeout)
    browser.guard.raise_if_denied()
    return extracted[0] if len(extracted) == 1 else extracted
