"""Writing files safely: the one atomic write every saver uses (workflows, settings, exports).

A leaf module (the standard library only), so the model, the settings and the CLI can all
use it without importing each other.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_text"]


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically: temp file in the same folder, fsync, rename.

    On any failure (disk full, permission) the original file is untouched and the
    temporary file removed; the OSError propagates to the caller.
    """
    p = Path(path)
    if p.is_symlink():
        p = p.resolve()  # write through a link to its file; replacing the link itself would cut it
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=str(p.parent) or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            mode = os.stat(p).st_mode & 0o777
            os.chmod(tmp, mode)
        except FileNotFoundError:
            os.chmod(tmp, 0o644)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
