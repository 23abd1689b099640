"""Library schedules as Temporal Schedules (docs/design.md: "on Temporal the same schedule becomes
a Temporal Schedule").

:func:`sync_schedules` makes the server's schedules match the library's scheduled flows
(:func:`engine.flows.schedules.flow_schedules`): one Temporal Schedule per flow, id
``flowdesk-<flow id>``, whose action starts a ``FlowdeskRun`` of the flow's workflow (as it
is in the file now) on the task queue; a flow whose schedule changed is updated, a schedule of
a flow that no longer has one (or is disabled) is deleted. ``flowdesk worker`` calls it when it
starts. The cron expression is read in the worker's local time zone (its IANA name, when this
computer says it); ``catchUp: true`` gives the schedule a catch-up window of a year (the server
starts what it missed while down; one at a time), else a minute.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleUpdate,
)

from engine.errors import FlowdeskError
from engine.flows.schedules import flow_schedules
from engine.graph.model import workflow_to_dict
from engine.temporal import DEFAULT_TASK_QUEUE, WORKFLOW_TYPE

__all__ = ["sync_schedules", "schedule_id", "PREFIX"]

PREFIX = "flowdesk-"


def schedule_id(flow_id: str) -> str:
    return f"{PREFIX}{flow_id}"


def _local_zone() -> str | None:
    """This computer's IANA time zone name (``Europe/Paris``), or None when it cannot tell."""
    tz = os.environ.get("TZ", "").lstrip(":")
    if tz and "/" in tz:
        return tz
    try:
        target = os.path.realpath("/etc/localtime")
    except OSError:
        return None
    marker = "zoneinfo" + os.sep
    return target.split(marker, 1)[1] if marker in target else None


def _schedule(library: Any, s: Any, task_queue: str) -> Schedule:
    workflow = library.load_path(s.path)
    request = {
        "workflow": workflow_to_dict(workflow),
        "runId": None,  # the workflow id the server gives each start
        "initialInput": None,
        "maxVisits": 25,
        "meta": {"schedule": s.cron},
        "options": {},
        "variables": None,
        "path": str(Path(s.path)),
    }
    return Schedule(
        action=ScheduleActionStartWorkflow(
            WORKFLOW_TYPE,
            request,
            id=f"{s.flow_id}-scheduled",
            task_queue=task_queue,
            memo={"workflowName": workflow.name or s.name, "status": "running", "initialInput": ""},
        ),
        spec=ScheduleSpec(cron_expressions=[s.cron], time_zone_name=_local_zone()),
        policy=SchedulePolicy(
            overlap=ScheduleOverlapPolicy.BUFFER_ONE if s.catch_up else ScheduleOverlapPolicy.SKIP,
            catchup_window=timedelta(days=365) if s.catch_up else timedelta(minutes=1),
        ),
    )


async def sync_schedules(client: Client, library: Any, *, task_queue: str = DEFAULT_TASK_QUEUE) -> dict[str, Any]:
    """Make the server's ``flowdesk-*`` schedules those of the library; returns what was done:
    ``{created: [ids], updated: [ids], deleted: [ids], errors: {flow id: message}}``."""
    done: dict[str, Any] = {"created": [], "updated": [], "deleted": [], "errors": {}}
    wanted = {}
    for s in flow_schedules(library):
        try:
            wanted[schedule_id(s.flow_id)] = (s, _schedule(library, s, task_queue))
        except FlowdeskError as err:
            done["errors"][s.flow_id] = str(err)
    existing = set()
    async for listed in await client.list_schedules():
        if listed.id.startswith(PREFIX):
            existing.add(listed.id)
    for sid, (s, schedule) in wanted.items():
        try:
            if sid in existing:

                def update(_input: Any, schedule: Schedule = schedule) -> ScheduleUpdate:
                    return ScheduleUpdate(schedule=schedule)

                await client.get_schedule_handle(sid).update(update)
                done["updated"].append(sid)
            else:
                try:
                    await client.create_schedule(sid, schedule)
                    done["created"].append(sid)
                except ScheduleAlreadyRunningError:  # made meanwhile (another worker starting)
                    done["updated"].append(sid)
        except Exception as err:  # the server refused it (a cron it does not read, ...)
            done["errors"][s.flow_id] = str(err)
    for sid in sorted(existing - set(wanted)):
        try:
            await client.get_schedule_handle(sid).delete()
            done["deleted"].append(sid)
        except Exception as err:
            done["errors"][sid[len(PREFIX) :]] = str(err)
    return done
