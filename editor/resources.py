"""Where the editor's resources live (icons, style sheet, samples): inside the installed
package, found through the engine (:func:`engine.resource_path`, :func:`engine.sample_paths`),
so a wheel works like the checkout.

The provider and model catalogue is the engine's (:func:`engine.model_choices`), read in
one place, so a model the user adds in settings.json shows up in the editor too.
"""

from __future__ import annotations

from pathlib import Path

from engine import read_resource_text, resource_path, sample_paths


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


def samples() -> list[Path]:
    return sample_paths()
