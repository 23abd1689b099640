"""The picture of a page that a vision model is shown with its text (``extractComponent``,
``checkPageState``, ``queryContent``).

What the page shows now, the viewport only (what a person sees; a full page can be tens of
thousands of pixels tall), kept under :data:`MODEL_IMAGE_LIMIT` bytes so a request stays small
and cheap: a PNG when it fits (most pages: 30-300 KB at 1280x800), else a JPEG, else a JPEG of
the viewport scaled down (Chromium's own ``Page.captureScreenshot`` with a ``clip.scale``; the
layout is not touched). A picture that cannot be taken is no picture: the model still gets the
page text, so the step goes on. Form fields holding one of the step's secrets are shown empty.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from typing import Any

__all__ = ["MODEL_IMAGE_LIMIT", "page_image_for_model"]

log = logging.getLogger(__name__)

#: Largest picture (bytes, before base64) sent to a model.
MODEL_IMAGE_LIMIT = 1_000_000
_JPEG_QUALITIES = (70, 45)
_SCALES = (0.5, 0.25)


_FIELD_VALUES_JS = "() => Array.from(document.querySelectorAll('input, textarea'), (e) => String(e.value || ''))"
_HIDE_JS = """(indices) => {
  const fields = Array.from(document.querySelectorAll('input, textarea'));
  for (const i of indices) {
    const e = fields[i];
    if (!e) continue;
    e.setAttribute('data-flowdesk-hidden', JSON.stringify(
      [e.style.getPropertyValue('color'), e.style.getPropertyPriority('color')]));
    e.style.setProperty('color', 'transparent', 'important');
  }
}"""
_SHOW_JS = """() => {
  for (const e of document.querySelectorAll('[data-flowdesk-hidden]')) {
    const [value, priority] = JSON.parse(e.getAttribute('data-flowdesk-hidden'));
    if (value) e.style.setProperty('color', value, priority); else e.style.removeProperty('color');
    e.removeAttribute('data-flowdesk-hidden');
  }
}"""


async def page_image_for_model(
    page: Any, *, hide: Sequence[str] = (), limit: int = MODEL_IMAGE_LIMIT, timeout_ms: int = 10_000
) -> tuple[bytes, str] | None:
    """``(image bytes, media type)`` of ``page``'s viewport under ``limit`` bytes, or None.

    A form field holding one of ``hide`` (the step's secrets, typed into it) is shown empty in
    the picture: its text is made transparent while the picture is taken. The secrets are
    compared here, never handed to the page (whose scripts could read them)."""
    hidden = False
    try:
        if hide:
            values = await page.evaluate(_FIELD_VALUES_JS)
            indices = [i for i, v in enumerate(values) if any(s and s in str(v) for s in hide)]
            if indices:
                await page.evaluate(_HIDE_JS, indices)
                hidden = True
        return await _bounded(page, limit, timeout_ms)
    except Exception as err:  # a closed or crashed page, a timeout: the text goes alone
        log.debug("no picture of the page for the model: %s", err)
        return None
    finally:
        if hidden:
            try:
                await page.evaluate(_SHOW_JS)
            except Exception as err:
                log.debug("form fields not shown again: %s", err)


async def _bounded(page: Any, limit: int, timeout_ms: int) -> tuple[bytes, str] | None:
    """The viewport as a PNG, else a JPEG, else a scaled-down JPEG: the first under ``limit``."""
    shot = await page.screenshot(type="png", timeout=timeout_ms)
    if len(shot) <= limit:
        return bytes(shot), "image/png"
    for quality in _JPEG_QUALITIES:
        shot = await page.screenshot(type="jpeg", quality=quality, timeout=timeout_ms)
        if len(shot) <= limit:
            return bytes(shot), "image/jpeg"
    return await _scaled_down(page, limit)


async def _scaled_down(page: Any, limit: int) -> tuple[bytes, str] | None:
    """The viewport scaled down until its JPEG fits (Chromium's DevTools protocol)."""
    box = await page.evaluate("() => [window.scrollX, window.scrollY, window.innerWidth, window.innerHeight]")
    x, y, width, height = (float(v) for v in box)
    session = await page.context.new_cdp_session(page)
    try:
        for scale in _SCALES:
            clip = {"x": x, "y": y, "width": width, "height": height, "scale": scale}
            answer = await session.send("Page.captureScreenshot", {"format": "jpeg", "quality": 45, "clip": clip})
            shot = base64.b64decode(answer.get("data") or "")
            if shot and len(shot) <= limit:
                return shot, "image/jpeg"
    finally:
        await session.detach()
    return None
