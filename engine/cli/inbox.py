"""``flowdesk inbox``: every run waiting for a decision, oldest first, and how to answer each.

Local runs come from the run history (any process's), remote ones from a Temporal server when
one is named (``--temporal HOST:PORT`` or ``$FLOWDESK_TEMPORAL``; a server that cannot be
reached is a warning, the local list still prints). Before listing, stored runs whose approval
timed out take their ``onTimeout`` decision (docs/design.md: "a run paused in a process that
ended takes it when it is next resumed, listed or served after the deadline").
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import time
from datetime import datetime

from engine.cli import EXIT_OK, EXIT_USAGE
from engine.cli.printer import print_err
from engine.cli.runs import open_store
from engine.flows.inbox import InboxItem, expire_overdue, inbox_items
from engine.run.events import format_duration
from engine.store import RunStore, StoreError

__all__ = ["cmd_inbox", "TEMPORAL_ENV"]

TEMPORAL_ENV = "FLOWDESK_TEMPORAL"


def cmd_inbox(args: argparse.Namespace) -> int:
    store = open_store(required=True)
    if store is None:
        return EXIT_USAGE
    server = args.inbox_temporal or os.environ.get(TEMPORAL_ENV) or None
    try:
        items = asyncio.run(_gather(store, server, args.namespace))
    except StoreError as err:
        print_err(str(err))
        return EXIT_USAGE
    finally:
        if server:  # a Temporal client (threads of its own) let go while the interpreter is whole
            gc.collect()
    now = time.time()
    if args.json:
        print(json.dumps([i.to_json(now) for i in items], ensure_ascii=False, indent=2))
        return EXIT_OK
    if not items:
        print("Nothing is waiting for a decision.")
        return EXIT_OK
    print(f"{'WAITING':>12}  {'RUN':<12} {'FLOW':<24} {'NODE':<14} PROMPT")
    for item in items:
        print(_line(item, now))
    print(
        f"{len(items)} run{'s' if len(items) != 1 else ''} waiting. Answer one with: "
        "flowdesk resume RUN --decide approve|reject|LABEL[:NOTE]"
        + (" (add --temporal HOST:PORT for a run on Temporal)" if any(i.where == "temporal" for i in items) else "")
    )
    return EXIT_OK


async def _gather(store: RunStore, server: str | None, namespace: str) -> list[InboxItem]:
    await expire_overdue(store)
    return await inbox_items(store, temporal=server, namespace=namespace, on_problem=_warn)


def _warn(message: str) -> None:
    print_err(f"warning: {message}; only the local runs are listed")


def _line(item: InboxItem, now: float) -> str:
    prompt = " ".join(item.prompt.split())
    if len(prompt) > 60:
        prompt = prompt[:59] + "…"
    more = []
    if item.options:
        more.append("or " + ", ".join(item.options))
    if item.deadline is not None:
        at = datetime.fromtimestamp(item.deadline).strftime("%H:%M:%S")
        more.append(f"{item.on_timeout} at {at}")
    where = " [temporal]" if item.where == "temporal" else ""
    extra = f"  ({'; '.join(more)})" if more else ""
    flow = item.flow if len(item.flow) <= 24 else item.flow[:23] + "…"
    return (
        f"{format_duration(item.age(now)):>12}  {item.run_id[:12]:<12} {flow:<24} {item.node_id[:14]:<14} "
        f"{prompt}{extra}{where}"
    )
