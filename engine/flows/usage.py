"""The flow library's index: per flow id, ``usage: {runs, lastRun, created}`` (docs/flows.md,
"The flow library"). Kept in ``index.json`` in the library's first folder, not in the flow
files, so counting a run never rewrites a flow. A library that cannot be written keeps no
usage and loses nothing else.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from engine.graph.model import Workflow, atomic_write_text

__all__ = ["UsageIndex", "INDEX_NAME", "created_time", "lands_disabled"]

INDEX_NAME = "index.json"


def created_time(path: str | os.PathLike[str]) -> float | None:
    """When the file was made (its birth time where the system keeps one, else its mtime)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return getattr(st, "st_birthtime", None) or st.st_mtime


def lands_disabled(workflow: Workflow) -> bool:
    """An AnythingLLM flow imported with ``active: false`` (seed 004): off when first seen."""
    meta = (workflow.model_extra or {}).get("imported")
    if not isinstance(meta, dict) or not isinstance(meta.get("metadata"), dict):
        return False
    return meta.get("format") == "anythingllm" and meta["metadata"].get("active") is False


class UsageIndex:
    """``index.json`` in the folder ``primary()`` returns (read and written whole, atomically)."""

    def __init__(self, primary: Callable[[], Path]) -> None:
        self._primary = primary
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        return self._primary() / INDEX_NAME

    def read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {"flows": {}}
        if not isinstance(data, dict) or not isinstance(data.get("flows"), dict):
            return {"flows": {}}
        return data

    def write(self, index: dict[str, Any]) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(self.path, json.dumps(index, ensure_ascii=False, indent=1))
        except OSError:
            pass  # a read-only library: usage is not kept, nothing else is lost

    def usage(self, known: Iterable[tuple[str, Path]]) -> tuple[dict[str, dict[str, Any]], list[str]]:
        """Every flow's usage, the flows of ``known`` (id, file) not in the index yet entered
        (``created`` from their file); returns the usage by id and the ids that were new."""
        with self._lock:
            index = self.read()
            flows = index.setdefault("flows", {})
            fresh = [(fid, path) for fid, path in known if fid not in flows]
            for fid, path in fresh:
                flows[fid] = {"runs": 0, "lastRun": None, "created": created_time(path)}
            if fresh:
                self.write(index)
        return flows, [fid for fid, _ in fresh]

    def record_run(self, flow_id: str, when: float | None = None) -> None:
        """Count one run of ``flow_id`` (``runs`` + 1, ``lastRun``)."""
        with self._lock:
            index = self.read()
            entry = index["flows"].setdefault(flow_id, {"runs": 0, "lastRun": None, "created": None})
            entry["runs"] = int(entry.get("runs") or 0) + 1
            entry["lastRun"] = time.time() if when is None else when
            self.write(index)

    def forget(self, flow_id: str) -> None:
        with self._lock:
            index = self.read()
            if index["flows"].pop(flow_id, None) is not None:
                self.write(index)
