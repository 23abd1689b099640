"""User data folder, recent files and crash-recovery autosaves.

Autosaves live in ``<data>/autosave/<pid>-<n>.json`` as ``{"flowdeskAutosave": 1, "path":
<original file or null>, "pid": ..., "workflow": {...}}``. A clean document or a normal close
removes its file; files left by a process that is no longer running are offered back at
start-up.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from engine import Workflow, WorkflowLoadError, atomic_write_text, dumps_workflow, parse_workflow

log = logging.getLogger(__name__)
_counter = itertools.count(1)


def data_dir() -> Path:
    """The user data folder (``FLOWDESK_DATA_DIR`` overrides the platform default)."""
    override = os.environ.get("FLOWDESK_DATA_DIR")
    return Path(override) if override else Path(platformdirs.user_data_dir("flowdesk"))


def autosave_dir() -> Path:
    return data_dir() / "autosave"


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


@dataclass
class Recovered:
    file: Path
    original_path: str | None
    workflow: Workflow


class Autosaver:
    """Writes one document's autosave file; ``clear()`` removes it."""

    def __init__(self) -> None:
        self.file = autosave_dir() / f"{os.getpid()}-{next(_counter)}.json"
        self.generation = 0  # goes up on clear(): a text made before it is not written after it

    @staticmethod
    def text(workflow: Workflow, original_path: str | None) -> str:
        """The autosave file's text (no Qt, no file: a big document's is made on a worker thread).
        Raises ValueError for text that UTF-8 cannot hold."""
        return (
            f'{{"flowdeskAutosave": 1, "path": {json.dumps(original_path, ensure_ascii=False)}, '
            f'"pid": {os.getpid()}, "workflow": {dumps_workflow(workflow, indent=None)}}}'
        )

    def write_text(self, text: str) -> None:
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.file, text)
        except (OSError, ValueError) as err:
            log.warning("autosave failed: %s", err)

    def write(self, workflow: Workflow, original_path: str | None) -> None:
        try:
            text = self.text(workflow, original_path)
        except ValueError as err:  # text that UTF-8 cannot hold (a lone surrogate)
            log.warning("autosave failed: %s", err)
            return
        self.write_text(text)

    def clear(self) -> None:
        self.generation += 1
        try:
            self.file.unlink()
        except FileNotFoundError:
            pass
        except OSError as err:
            log.warning("cannot remove autosave %s: %s", self.file, err)


def orphaned_autosaves() -> list[Recovered]:
    """Autosaves left by processes that are no longer running (a crash), newest first."""
    found = []
    folder = autosave_dir()
    if not folder.is_dir():
        return []
    for f in sorted(folder.glob("*.json"), key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            payload = json.loads(f.read_text(encoding="utf-8"))
            if _pid_alive(int(payload.get("pid", 0))):
                continue
            wf = parse_workflow(payload["workflow"])
            found.append(Recovered(f, payload.get("path"), wf))
        except (OSError, ValueError, KeyError, TypeError, WorkflowLoadError) as err:
            log.warning("unreadable autosave %s: %s", f, err)
    return found
