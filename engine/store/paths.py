"""Where the run store lives: the user data folder (``FLOWDESK_DATA_DIR`` overrides it)."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

__all__ = ["data_dir"]


def data_dir() -> Path:
    env = os.environ.get("FLOWDESK_DATA_DIR")
    if env:
        return Path(env)
    return Path(platformdirs.user_data_dir("flowdesk", appauthor=False))
