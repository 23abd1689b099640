"""Flowdesk's data files, found inside the installed package with :mod:`importlib.resources`.

The repository keeps them in ``resources/`` (icons, the style sheet, the providers catalogue)
and ``samples/`` (the sample workflows) at its top level; ``pyproject.toml`` installs those
folders as the packages ``flowdesk_resources`` and ``flowdesk_samples``, in a wheel as in an
editable install. No path is ever computed from ``__file__`` or the current directory, so
the files are found wherever the package is installed.

Qt wants real file names (icons, ``url()`` in the style sheet): :func:`resource_path` gives
one, extracting the file for the process's lifetime if the package is not on a file system.
This module imports no Qt.
"""

from __future__ import annotations

import atexit
import contextlib
from functools import cache, lru_cache
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from engine.version import flowdesk_version  # (re-exported: its home before engine.version)

__all__ = [
    "RESOURCES_PACKAGE",
    "SAMPLES_PACKAGE",
    "resource",
    "resource_path",
    "read_resource_text",
    "sample_paths",
    "flowdesk_version",
]

RESOURCES_PACKAGE = "flowdesk_resources"
SAMPLES_PACKAGE = "flowdesk_samples"

_extracted = contextlib.ExitStack()
atexit.register(_extracted.close)


def _root(package: str) -> Traversable | None:
    try:
        return resources.files(package)
    except (ModuleNotFoundError, TypeError):  # not installed: Flowdesk runs with no data files
        return None


def resource(*parts: str) -> Traversable | None:
    """``resources/<parts...>`` inside the installed package (None when the package is missing)."""
    root = _root(RESOURCES_PACKAGE)
    if root is None:
        return None
    for p in parts:
        root = root / p
    return root


@cache
def resource_path(*parts: str) -> Path | None:
    """A real file system path to ``resources/<parts...>`` (for Qt), or None when it does not exist."""
    res = resource(*parts)
    if res is None or not (res.is_file() or res.is_dir()):
        return None
    return _extracted.enter_context(resources.as_file(res))


def read_resource_text(*parts: str) -> str:
    """The text of ``resources/<parts...>``; :class:`OSError` (``FileNotFoundError``) when it is missing."""
    res = resource(*parts)
    if res is None:
        raise FileNotFoundError(f"the package {RESOURCES_PACKAGE} is not installed")
    return res.read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _samples_dir() -> Path | None:
    root = _root(SAMPLES_PACKAGE)
    if root is None:
        return None
    return _extracted.enter_context(resources.as_file(root))


def sample_paths() -> list[Path]:
    """The sample workflows (``*.flow.json``) shipped with Flowdesk, sorted by name."""
    folder = _samples_dir()
    return sorted(folder.glob("*.flow.json")) if folder is not None else []
