"""The picture of a page that a vision model is shown with its text (``extractComponent``,
``checkPageState``, ``queryContent``).

What the page shows now, the viewport only (what a person sees; a full page can be tens of
thousands of pixels tall), kept under :data:`MODEL_IMAGE_LIMIT` bytes so a request stays small
and cheap: a PNG when it fits (most pages: 30-300 KB at 1280x800), else a JPEG, else a JPEG of
the viewport scaled down (Chromium's own ``Page.captureScreenshot`` with a ``clip.scale``; the
layout is not touched). A picture that cannot be taken is no picture: the model still gets the
page text, so the step goes on.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

__all__ = ["MODEL_IMAGE_LIMIT", "page_image_for_model"]

log = logging.getLogger(__name__)

#: Largest picture (bytes, before base64) sent to a model.
MODEL_IMAGE_LIMIT = 1_000_000
_JPEG_QUALITIES = (70, 45)
_SCALES = (0.5, 0.25)


async def page_image_for_model(
    page: Any, *, limit: int = MODEL_IMAGE_LIMIT, timeout_ms: int = 10_000
) -> tuple[bytes, str] | None:
    """``(image bytes, media type)`` of ``page``'s viewport under ``limit`` bytes, or None."""
    try:
        shot = await page.screenshot(type="png", timeout=timeout_ms)
        if len(shot) <= limit:
            return bytes(shot), "image/png"
        for quality in _JPEG_QUALITIES:
            shot = await page.screenshot(type="jpeg", quality=quality, timeout=timeout_ms)
            if len(shot) <= limit:
                return bytes(shot), "image/jpeg"
        return await _scaled_down(page, limit)
    except Exception as err:  # a closed or crashed page, a timeout: the text goes alone
        log.debug("no picture of the page for the model: %s", err)
        return None


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
