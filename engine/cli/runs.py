"""Commands on the run history: ``runs`` (the list, with tokens and cost), ``show`` (a run's
log) and ``diff`` (two runs compared); and finding a run by id or prefix for the others.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from engine.cli import EXIT_OK, EXIT_USAGE
from engine.cli.printer import RUNS_HEADER, Printer, print_err, runs_line
from engine.errors import FlowdeskError
from engine.flows.inbox import expire_overdue
from engine.run.costs import format_cost, stored_run_costs
from engine.run.diff import diff_runs, format_diff
from engine.store import RunStore, StoreError

__all__ = ["cmd_runs", "cmd_show", "cmd_diff", "open_store", "find_run"]


def open_store(*, required: bool) -> Any:
    try:
        store = RunStore()
        store.recover()
        return store
    except StoreError as err:
        if required:
            print_err(str(err))
        else:
            print_err(f"warning: {err} The run is not recorded.")
        return None


def find_run(run_id: str) -> tuple[Any, Any] | None:
    """The store and a run by id (or unique prefix); None, with the reason printed, if there is none."""
    store = open_store(required=True)
    if store is None:
        return None
    info = store.find_run(run_id)
    if info is None:
        matches = store.matching_run_ids(run_id, limit=6) if len(run_id) >= 4 else []
        if len(matches) > 1:
            more = ", ..." if len(matches) > 5 else ""
            print_err(
                f"the run id '{run_id}' is ambiguous: it starts {'more than 5' if more else len(matches)} runs "
                f"({', '.join(matches[:5])}{more}); give more of it"
            )
        else:
            print_err(
                f"there is no run '{run_id}' in the run history (see: flowdesk runs); a run on a Temporal "
                f"server is shown with: flowdesk follow {run_id} --temporal HOST:PORT"
            )
        return None
    return store, info


def cmd_diff(args: argparse.Namespace) -> int:
    found = find_run(args.run_a)
    if found is None:
        return EXIT_USAGE
    store, a = found
    b = store.find_run(args.run_b)
    if b is None:
        print_err(f"there is no run '{args.run_b}' in the run history (see: flowdesk runs)")
        return EXIT_USAGE
    try:
        result = diff_runs(store, a.id, b.id)
    except StoreError as err:
        print_err(str(err))
        return EXIT_USAGE
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print(format_diff(result))
    return EXIT_OK


def cmd_runs(args: argparse.Namespace) -> int:
    store = open_store(required=True)
    if store is None:
        return EXIT_USAGE
    try:  # paused runs whose approval timed out take their onTimeout decision when listed
        asyncio.run(expire_overdue(store))
    except (StoreError, FlowdeskError) as err:
        print_err(f"warning: {err}")
    try:
        total = store.count_runs(workflow=args.workflow, status=args.status)
        runs = store.list_runs(workflow=args.workflow, status=args.status, limit=args.limit, offset=args.offset)
    except StoreError as err:
        print_err(str(err))
        return EXIT_USAGE
    try:
        spent = stored_run_costs(store, [r.id for r in runs])  # as the history prices them
    except StoreError as err:
        print_err(str(err))
        return EXIT_USAGE
    if args.json:
        try:
            counts = store.event_counts(r.id for r in runs)
        except StoreError as err:
            print_err(str(err))
            return EXIT_USAGE
        print(
            json.dumps(
                {
                    "total": total,
                    "offset": args.offset,
                    "runs": [
                        {
                            **r.to_json(),
                            "eventCount": counts.get(r.id, 0),
                            "tokens": spent.get(r.id, (0, None))[0],
                            "cost": spent.get(r.id, (0, None))[1],
                        }
                        for r in runs
                    ],
                },
                ensure_ascii=False,
                indent=2,
            )
        )
        return EXIT_OK
    print(RUNS_HEADER)
    for r in runs:
        tokens, cost = spent.get(r.id, (0, None))
        used = (f"{tokens:,}" + (f" · {format_cost(cost)}" if cost is not None else "")) if tokens else ""
        print(
            runs_line(
                r.id,
                r.status,
                r.started_at,
                r.duration,
                r.workflow_name,
                r.input_summary,
                "" if r.fully_recorded else "  [not fully recorded]",
                spent=used,
            )
        )
    shown = f"{args.offset + 1}-{args.offset + len(runs)}" if runs else "none"
    print(f"{shown} of {total} run{'s' if total != 1 else ''}")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    found = find_run(args.run_id)
    if found is None:
        return EXIT_USAGE
    store, info = found
    try:
        if args.jsonl:
            for line in store.export_jsonl(info.id):
                sys.stdout.write(line + "\n")
            return EXIT_OK
        wf = store.workflow_of(info.id)
        print(f"run {info.id} · {info.workflow_name} · {info.status}")
        if info.arguments:
            print(f"arguments: {info.arguments_text}")
        printer = Printer(sys.stdout, wf, False)
        for ev in store.iter_events(info.id):
            printer(ev)
        if info.status not in ("paused", "completed", "failed", "cancelled"):  # no final status in the log
            print(printer.summary())
        ended = store.final_variables(info.id) if info.status in ("completed", "failed", "cancelled") else None
        if ended:  # the variables the run ended with, kept in its record (as the history's tooltip shows them)
            shown = (f"{k}={v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)}" for k, v in ended.items())
            print(f"variables at the end: {', '.join(shown)}")
    except StoreError as err:
        print_err(str(err))
        return EXIT_USAGE
    return EXIT_OK
