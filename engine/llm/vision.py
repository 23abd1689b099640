"""Images in a model request: which models accept them, and how an image travels.

An :class:`~engine.llm.base.AgentInvocation` carries images as data URLs
(``data:image/png;base64,...``) in ``images``: strings, so an invocation still turns into JSON
as it is (a Temporal activity's input). Each HTTP provider puts them into its own request shape
(OpenAI's ``image_url`` parts, Anthropic's ``image`` blocks) when the model accepts images, and
sends the text alone otherwise; providers that take no images (echo, local) ignore them.

Whether a model accepts images is decided, first match wins, by

1. its catalogue entry's ``supportsImages`` (``resources/providers.json``, or the user's
   ``providers.<id>.models`` in settings.json, which merge by id: the per-model override);
2. its provider's ``supportsImages`` (catalogue or settings: every model of that provider);
3. its name (:data:`VISION_MODEL_PATTERNS`): OpenAI's GPT-4o, GPT-4.1, GPT-5, o3 and o4
   families, Anthropic's Claude 3 and 4 families, and the common open vision models (LLaVA,
   ``*-vision``, ``*-vl``, MiniCPM-V, Moondream), with or without an ``openai/``-style prefix.

Anything else is treated as text-only: a model that cannot read an image would fail the
request, and the page text alone still gets an answer.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

__all__ = [
    "VISION_MODEL_PATTERNS",
    "model_accepts_images",
    "provider_accepts_images",
    "image_data_url",
    "split_data_url",
]

#: Model names treated as vision-capable when neither the catalogue nor the settings say.
VISION_MODEL_PATTERNS: tuple[str, ...] = (
    r"gpt-4o.*",
    r"gpt-4\.1.*",
    r"gpt-4-turbo.*",
    r"gpt-5.*",
    r"o3(-pro)?(-\d{4}-.*)?",  # o3-mini reads text only
    r"o4-mini.*",
    r"claude-3.*",
    r"claude-(opus|sonnet|haiku)-4.*",
    r"claude-4.*",
    r"(bak)?llava.*",
    r".*-vision.*",
    r".*vl([-:].*)?",  # qwen2.5vl, qwen2-vl-7b
    r"minicpm-v.*",
    r"moondream.*",
)
_VISION = re.compile("|".join(f"(?:{p})" for p in VISION_MODEL_PATTERNS), re.IGNORECASE)
_DATA_URL = re.compile(r"^data:(image/[\w.+-]+);base64,(.*)$", re.S)


def _by_name(model: str) -> bool:
    name = model.strip().rsplit("/", 1)[-1]  # "openai/gpt-4o-mini" (OpenRouter) as "gpt-4o-mini"
    return bool(name) and _VISION.fullmatch(name) is not None


def model_accepts_images(model: str, info: Any = None, provider_default: bool | None = None) -> bool:
    """Whether ``model`` takes images: ``info``'s ``supportsImages`` (a catalogue entry), else
    ``provider_default`` (the provider's ``supportsImages``), else its name (module docstring)."""
    flag = getattr(info, "supportsImages", None) if info is not None else None
    if isinstance(flag, bool):
        return flag
    if isinstance(provider_default, bool):
        return provider_default
    return _by_name(model)


def provider_accepts_images(provider: Any, model: str) -> bool:
    """Whether ``provider`` would send images to ``model`` (its ``accepts_images``; a provider
    without one, such as echo or the embedded model, takes none)."""
    accepts = getattr(provider, "accepts_images", None)
    if not callable(accepts):
        return False
    try:
        return bool(accepts(model))
    except Exception:  # a provider that cannot say: text only
        return False


def image_data_url(data: bytes, mime: str = "image/png") -> str:
    """``data`` (an image file's bytes) as a data URL, the form :attr:`AgentInvocation.images` holds."""
    return f"data:{mime};base64," + base64.b64encode(data).decode("ascii")


def split_data_url(url: str) -> tuple[str, str] | None:
    """``(media type, base64 data)`` of an image data URL, or None when ``url`` is not one
    (or its data is not base64)."""
    match = _DATA_URL.match(url.strip()) if isinstance(url, str) else None
    if match is None:
        return None
    data = match.group(2).strip()
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return match.group(1).lower(), data
