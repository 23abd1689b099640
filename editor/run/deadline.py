"""ApprovalDeadline: the timer of a paused run's approval that times out.

Split from :mod:`editor.run.bridge`. At the pending approval's deadline the run takes its
``onTimeout`` decision (docs/design.md: the run takes it; a run taken up after its deadline
takes it at once). This object owns the timer on the event loop; what happens at the
deadline is the bridge's (``expire``): it claims the run and drives ``run.expire()``.
A run on a Temporal server has no ``pause_timeout`` here: the server keeps its own timer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from engine import RunStatus

__all__ = ["ApprovalDeadline"]

RETRY_S = 0.2  # an operation still settling, or a clock a little behind: look again this much later


class ApprovalDeadline:
    """Calls ``expire(run)`` at the pending approval's deadline; ``expire`` returns False when
    it is not time yet (the run is busy, or not overdue by its own clock), to be asked again
    a little later."""

    def __init__(self, expire: Callable[[Any], bool]) -> None:
        self._expire = expire
        self._handle: asyncio.TimerHandle | None = None

    def arm(self, run: Any) -> None:
        """Follow ``run``'s pending approval (the one armed before is dropped)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        timeout = run.pause_timeout() if hasattr(run, "pause_timeout") else None  # (a remote run: the server's timer)
        if timeout is None or run.status != RunStatus.PAUSED:
            return
        self._call_later(max(0.0, timeout[0] - time.time()), run)

    def disarm(self) -> None:
        """Follow no approval any more (the run went on elsewhere)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _call_later(self, delay: float, run: Any) -> None:
        self._handle = asyncio.get_event_loop().call_later(delay, self._due, run)

    def _due(self, run: Any) -> None:
        self._handle = None
        if not self._expire(run):
            self._call_later(RETRY_S, run)
