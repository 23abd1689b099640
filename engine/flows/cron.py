"""Cron expressions of library flows' schedules: reading them and their fire times.

Kept apart from the runner (engine/flows/schedules.py) so that validating a workflow checks its
``schedule`` without loading asyncio or the state file's machinery. Cron expressions are read
by ``croniter`` (in the ``serve`` extra); without it :class:`ScheduleError` names the extra.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from engine.errors import FlowdeskError

__all__ = ["ScheduleError", "check_cron", "next_fire", "previous_fire", "schedule_of"]


class ScheduleError(FlowdeskError):
    """A schedule cannot be read (a bad cron expression), or croniter is not installed."""


# ---------------------------------------------------------------------------------- cron
def _croniter() -> Any:
    try:
        from croniter import croniter
    except ImportError:
        raise ScheduleError(
            "schedules need croniter, from the 'serve' extra: pip install 'flowdesk[serve]' "
            "(in a checkout: pip install -e '.[serve]')"
        ) from None
    return croniter


def _iter(cron: str, at: float) -> Any:
    croniter = _croniter()
    text = (cron or "").strip()
    if not text:
        raise ScheduleError("the schedule is empty; write a cron expression such as '0 9 * * mon-fri'")
    try:
        # a naive local datetime: cron fields are read in local time
        return croniter(text, datetime.fromtimestamp(at))
    except (ValueError, KeyError, TypeError) as err:
        raise ScheduleError(f"the schedule '{text}' is not a cron expression ({str(err).rstrip('.')})") from None


def next_fire(cron: str, after: float) -> float:
    """The first fire time of ``cron`` strictly after ``after`` (epoch seconds, local time's cron)."""
    return _iter(cron, after).get_next(datetime).timestamp()


def previous_fire(cron: str, at: float) -> float:
    """The last fire time of ``cron`` at or before ``at``."""
    it = _iter(cron, at + 0.001)
    return it.get_prev(datetime).timestamp()


def check_cron(cron: str) -> str | None:
    """Why ``cron`` cannot be used as a schedule (None when it can)."""
    try:
        next_fire(cron, time.time())
    except ScheduleError as err:
        return str(err)
    return None


def schedule_of(workflow: Any) -> tuple[str, bool] | None:
    """``(cron, catchUp)`` of a workflow's top-level ``schedule`` (None when it has none)."""
    extra = getattr(workflow, "model_extra", None) or {}
    raw = extra.get("schedule")
    catch_up = extra.get("catchUp") is True
    if isinstance(raw, dict):
        catch_up = raw.get("catchUp") is True or catch_up
        raw = raw.get("cron")
    if not isinstance(raw, str) or not raw.strip():
        return None
    return raw.strip(), catch_up
