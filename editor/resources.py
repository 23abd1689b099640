"""Where the editor's resources live (icons, style sheet, samples).

The provider and model catalogue is the engine's (:func:`engine.model_choices`), read in
one place, so a model the user adds in settings.json shows up in the editor too.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESOURCES = ROOT / "resources"
SAMPLES = ROOT / "samples"


def icon_path(name: str) -> str:
    return str(RESOURCES / "icons" / f"{name}.svg")


def style_sheet() -> str:
    """The application style sheet; its ``url(resources/...)`` paths made absolute, since Qt
    resolves them against the current directory, not the style sheet's folder."""
    try:
        text = (RESOURCES / "style.qss").read_text(encoding="utf-8")
    except OSError:
        return ""
    return text.replace("url(resources/", f"url({RESOURCES.as_posix()}/")


def samples() -> list[Path]:
    return sorted(SAMPLES.glob("*.flow.json"))
