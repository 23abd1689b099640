"""Where Flowdesk keeps its data (the run store, the library's seeded samples): the user data
folder, or ``FLOWDESK_DATA_DIR``. Apart from the store so reading a path loads no database code."""

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
