"""The run store's errors: one root (:class:`StoreError`), whose message names the file and what is wrong."""

from __future__ import annotations

from engine.errors import FlowdeskError

__all__ = ["StoreError", "AlreadyImported"]


class StoreError(FlowdeskError, RuntimeError):
    """The run store cannot be used; the message says which file and why."""


class AlreadyImported(StoreError):
    """The run record being imported is in the history already (as ``run_id``); nothing was added."""

    def __init__(self, message: str, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id
