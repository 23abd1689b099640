"""Where the editor's resources live (icons, style sheet, providers list, samples)."""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from pathlib import Path
from typing import Any

from engine import read_resource_text, resource_path, sample_paths

log = logging.getLogger(__name__)


# Used when resources/providers.json is missing or unreadable, so the model box is never empty.
BUILTIN_PROVIDERS: dict[str, Any] = {"providers": [
    {"id": "openai", "name": "OpenAI", "models": [
        {"id": "gpt-4o-mini", "name": "GPT-4o mini", "reasoningEfforts": []},
        {"id": "gpt-4o", "name": "GPT-4o", "reasoningEfforts": []},
        {"id": "o4-mini", "name": "o4-mini", "reasoningEfforts": ["low", "medium", "high"]},
    ]},
    {"id": "anthropic", "name": "Anthropic", "models": [
        {"id": "claude-sonnet-4-5", "name": "Claude Sonnet 4.5", "reasoningEfforts": ["low", "medium", "high"]},
        {"id": "claude-haiku-4-5", "name": "Claude Haiku 4.5", "reasoningEfforts": []},
    ]},
    {"id": "echo", "name": "Echo (offline)", "models": [{"id": "echo", "name": "Echo", "reasoningEfforts": []}]},
]}
DEFAULT_EFFORTS = ["low", "medium", "high"]


def icon_path(name: str) -> str:
    path = resource_path("icons", f"{name}.svg")
    return str(path) if path is not None else ""


def style_sheet() -> str:
    """The application style sheet; its ``url(resources/...)`` paths made absolute, since Qt
    resolves them against the current directory, not the style sheet's folder."""
    try:
        text = read_resource_text("style.qss")
    except OSError:
        return ""
    folder = resource_path()
    return text.replace("url(resources/", f"url({folder.as_posix()}/") if folder is not None else text


@lru_cache(maxsize=1)
def providers() -> list[dict[str, Any]]:
    path = resource_path("providers.json")
    return load_providers(path) if path is not None else BUILTIN_PROVIDERS["providers"]


def load_providers(path: Path) -> list[dict[str, Any]]:
    """Providers from ``path`` (``{"providers": [{id, name, models: [{id, name, reasoningEfforts}]}]}``),
    or a small built-in list when the file is missing or unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        provs = data["providers"]
        if isinstance(provs, list) and provs:
            return [p for p in provs if isinstance(p, dict) and isinstance(p.get("models"), list)]
    except FileNotFoundError:
        pass
    except (OSError, ValueError, KeyError, TypeError) as err:
        log.warning("ignoring %s: %s", path, err)
    return BUILTIN_PROVIDERS["providers"]


def model_choices(provs: list[dict[str, Any]] | None = None) -> list[tuple[str, str, str]]:
    """(model id, label, provider id) for every known model."""
    out = []
    for p in provs if provs is not None else providers():
        for m in p.get("models", []):
            if isinstance(m, dict) and m.get("id"):
                out.append((str(m["id"]), f"{m.get('name') or m['id']}  ·  {p.get('name') or p.get('id')}", str(p.get("id", ""))))
    return out


def efforts_for(model: str) -> list[str]:
    for p in providers():
        for m in p.get("models", []):
            if isinstance(m, dict) and m.get("id") == model:
                efforts = m.get("reasoningEfforts") or []
                return [str(e) for e in efforts] or DEFAULT_EFFORTS
    return DEFAULT_EFFORTS


def samples() -> list[Path]:
    return sample_paths()
