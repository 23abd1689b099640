"""The installed package's version, on its own: ``flowdesk --version`` and every command's parser
import this, not :mod:`engine.resources` (whose :mod:`importlib.resources` costs ~9 ms of each
command's start)."""

from __future__ import annotations

__all__ = ["flowdesk_version"]


def flowdesk_version() -> str:
    """The installed package's version (``flowdesk --version``, Help ▸ About)."""
    from importlib import metadata  # the standard library's, loaded only when asked

    try:
        return metadata.version("flowdesk")
    except metadata.PackageNotFoundError:  # a checkout that was never installed
        return "(not installed)"
