"""The command line of remote runs: ``worker``, ``follow``, ``cancel`` and ``--temporal`` on
``run``/``resume``/``runs`` (same output and exit codes as local runs; see ``engine.cli``).

``run --temporal`` submits and follows; Ctrl+C only stops following (the run goes on on the
server) and prints how to follow, answer or cancel it (exit 4). Imports ``temporalio`` only
when a remote command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import signal
import sys
import threading
from collections.abc import AsyncIterator
from typing import Any

from engine.cli import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, EXIT_PAUSED, EXIT_USAGE
from engine.cli.files import load_any
from engine.cli.printer import RUNS_HEADER, Printer, print_err, runs_line
from engine.cli.run import _json_object_arg, _text_arg, run_arguments, stored_base_url
from engine.flows.library import default_library
from engine.flows.schedules import ScheduleError
from engine.graph.inputs import has_surrogates
from engine.graph.model import WorkflowLoadError
from engine.graph.validate import validate
from engine.run.costs import format_cost
from engine.run.scheduler import uuid_ids
from engine.temporal import DEFAULT_NAMESPACE, TemporalUnavailable, require_temporal, split_address
from engine.temporal.options import add_arguments, wants

# The modules over temporalio (client, worker) are imported inside the commands: the extra is optional.

__all__ = ["add_arguments", "wants", "dispatch"]


def dispatch(args: argparse.Namespace) -> int:
    try:
        require_temporal()
        args.temporal = split_address(args.temporal)
    except TemporalUnavailable as err:
        print_err(str(err))
        return EXIT_USAGE
    if args.command != "worker":
        # Python's own Ctrl+C (KeyboardInterrupt), in place of the launcher's early "cancelled" exit:
        # Ctrl+C here stops following only, and says how to follow or cancel the run that goes on.
        try:
            signal.signal(signal.SIGINT, lambda signum, frame: _interrupted(args))
        except ValueError:  # not the main thread
            pass
    handler = {"worker": _worker, "run": _run, "resume": _resume, "runs": _runs, "follow": _follow, "cancel": _cancel}[
        args.command
    ]
    try:
        return asyncio.run(handler(args))
    except TemporalUnavailable as err:
        print_err(str(err))
        return EXIT_USAGE
    except KeyboardInterrupt:
        run_id = getattr(args, "_run_id", None)
        if args.command == "worker":
            print_err("worker stopped")
            return 0
        if run_id:
            _detached(args, run_id)
        return EXIT_CANCELLED
    finally:
        # The SDK's client (a Rust core with threads of its own) is let go while the interpreter
        # is whole: left to the interpreter's shutdown, a late callback from one of its threads
        # could abort the process.
        gc.collect()


def _where(args: argparse.Namespace) -> str:
    extra = "" if args.namespace == DEFAULT_NAMESPACE else f" --namespace {args.namespace}"
    return f"--temporal {args.temporal}{extra}"


STOP_GRACE = 3.0  # seconds Ctrl+C waits for the SDK's calls in flight before the process ends anyway


def _interrupted(args: argparse.Namespace) -> None:
    """Ctrl+C: a KeyboardInterrupt, as Python's own handler raises, plus a deadline. A call to the
    server in flight (a query waiting for a worker that is not there) is not cut short by
    cancelling its task, and asyncio.run waits for it: past ``STOP_GRACE`` the process ends
    with what a clean stop would have said."""

    def stop_now() -> None:
        run_id = getattr(args, "_run_id", None)
        if run_id:
            _detached(args, run_id)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(EXIT_CANCELLED)

    timer = threading.Timer(STOP_GRACE, stop_now)
    timer.daemon = True
    timer.start()
    raise KeyboardInterrupt


def _detached(args: argparse.Namespace, run_id: str) -> None:
    print_err(f"stopped following; run {run_id} goes on on the server")
    print_err(f"follow it with: flowdesk follow {run_id} {_where(args)}")
    print_err(f"cancel it with: flowdesk cancel {run_id} {_where(args)}")


NO_WORKER_AFTER = 3.0  # seconds a run may wait for a worker before the user is told


async def _warn_without_worker(client: Any, args: argparse.Namespace, run_id: str) -> None:
    """Say so when no worker polls the run's task queue (the run waits, silently, until one does)."""
    from temporalio.service import RPCError

    from engine.temporal.client import task_queue_has_worker

    try:
        await asyncio.sleep(NO_WORKER_AFTER)
        queue = getattr(args, "task_queue", None) if args.command == "run" else None
        if queue is None:
            queue = (await client.get_workflow_handle(run_id).describe()).task_queue
        if await task_queue_has_worker(client, queue):
            return
    except RPCError:  # the server is asked only to help the user: following goes on regardless
        return
    print_err(
        f"no worker is polling task queue {queue}: the run waits until one starts "
        f"(flowdesk worker --temporal {args.temporal} --task-queue {queue})"
    )


async def _sync_schedules(client: Any, args: argparse.Namespace) -> None:
    """The library's scheduled flows become Temporal Schedules (engine/temporal/schedules.py)."""
    from engine.temporal.schedules import sync_schedules

    try:
        done = await sync_schedules(client, default_library(), task_queue=args.task_queue)
    except ScheduleError as err:  # no croniter: the library's schedules cannot be read here
        print_err(f"schedules not set up on the server: {err}")
        return
    for flow_id, message in done["errors"].items():
        print_err(f"schedule of flow {flow_id} not set up on the server: {message}")
    made = len(done["created"]) + len(done["updated"])
    if made or done["deleted"]:
        print_err(
            f"schedules on the server: {made} flow{'s' if made != 1 else ''} scheduled, {len(done['deleted'])} removed"
        )


async def _worker(args: argparse.Namespace) -> int:
    from engine.temporal.worker import run_worker

    if args.concurrency < 1:
        print_err("--concurrency must be at least 1")
        return 2
    from engine.temporal.client import connect

    client = await connect(args.temporal, args.namespace)  # a clear message when the server is not there
    await _sync_schedules(client, args)

    def ready() -> None:
        print_err(
            f"worker ready: {args.temporal} namespace {args.namespace} task queue {args.task_queue} "
            f"(concurrency {args.concurrency}); Ctrl+C stops it"
        )

    await run_worker(
        args.temporal, namespace=args.namespace, task_queue=args.task_queue, concurrency=args.concurrency, ready=ready
    )
    print_err("worker stopped")
    return 0


@contextlib.asynccontextmanager
async def _watching(client: Any, args: argparse.Namespace, run_id: str) -> AsyncIterator[None]:
    """While the body waits on the run (its queries wait for a worker too), say so if none polls its queue."""
    watch = asyncio.ensure_future(_warn_without_worker(client, args, run_id))
    try:
        yield
    finally:
        watch.cancel()


async def _drive(
    args: argparse.Namespace,
    client: Any,
    run_id: str,
    printer: Any,
    decisions: list[tuple[str, str]],
    after: int = 0,
    first_output: str | None = None,
    first_arguments: Any = None,
) -> int:
    """Follow the run, answering its approvals with ``decisions`` in order (the first with the
    reviewer's edited output ``first_output``, when given); the exit code."""
    from engine.temporal.client import answer, follow

    args._run_id = run_id
    async with _watching(client, args, run_id):
        state = await follow(client, run_id, printer, after=after)
    while state.status == "paused":
        if not decisions:
            print_err(f"run {run_id} is paused at approval '{state.pending}' waiting for a decision")
            print_err(f"continue it with: flowdesk resume {run_id} {_where(args)} --decide approve   (or reject:NOTE)")
            return EXIT_PAUSED
        word, note = decisions.pop(0)
        output, first_output = first_output, None
        arguments, first_arguments = first_arguments, None
        try:
            await answer(client, run_id, word, note, node_id=state.pending, output=output, arguments=arguments)
        except Exception as err:  # refused by the workflow (arguments that do not fit the tool's schema)
            if arguments is None:
                raise
            cause = getattr(err, "cause", None)  # the workflow validator's reason
            print_err(f"--arguments: {getattr(cause, 'message', None) or getattr(err, 'message', None) or err}")
            return EXIT_USAGE
        state = await follow(client, run_id, printer, after=state.next, state=state)
    if state.status == "completed":
        print_err(f"run {run_id} completed (its log: flowdesk follow {run_id} {_where(args)})")
        return EXIT_OK
    if state.status == "cancelled":
        print_err("run cancelled")
        return EXIT_CANCELLED
    print_err(f"run failed: {state.error}")
    return EXIT_FAILED


def _options(args: argparse.Namespace | None = None) -> dict[str, Any]:
    # How soon a lost worker's step is retried (tests and demos shorten it).
    ms = os.environ.get("FLOWDESK_TEMPORAL_HEARTBEAT_MS", "")
    options: dict[str, Any] = {"heartbeatMs": int(ms)} if ms.isdigit() else {}
    local = getattr(args, "local_steps", None)
    if isinstance(local, bool):  # every step a local activity, or none (docs/temporal.md)
        options["localSteps"] = local
    return options


async def _run(args: argparse.Namespace) -> int:
    from engine.temporal.client import connect, submit

    if args.input is not None and has_surrogates(args.input):
        print_err("--input is not valid text: it holds bytes that are not UTF-8")
        return EXIT_USAGE
    try:
        wf = load_any(args.file)  # as a local run loads it (a foreign flow file converted, with a note)
    except WorkflowLoadError as err:
        print_err(str(err))
        return EXIT_USAGE
    if args.max_visits < 1:
        print_err("--max-visits must be at least 1")
        return EXIT_USAGE
    arguments = run_arguments(wf, args.var)  # refused before the run is sent (exit 2), as locally
    if arguments is None:
        return EXIT_USAGE
    # Checked as a local run checks it: a flow step's relative reference from the file's folder.
    errors = [i for i in validate(wf, path=os.path.abspath(args.file)) if i.is_error]
    if errors:
        for i in errors:
            print_err(f"error: {i.message} ({i.code})")
        print_err(f"{args.file} has {len(errors)} error{'s' if len(errors) != 1 else ''}; the run was not started")
        return EXIT_FAILED
    # Names only: keys come from the workers' environment or keyring.
    meta = {
        k: v
        for k, v in (("provider", args.provider), ("model", args.model), ("baseUrl", stored_base_url(args.base_url)))
        if v
    }
    client = await connect(args.temporal, args.namespace)
    run_id = uuid_ids()
    await submit(
        client,
        wf,
        run_id=run_id,
        initial_input=args.input,
        max_visits=args.max_visits,
        meta=meta,
        task_queue=args.task_queue,
        options=_options(args),
        variables=arguments,
        path=os.path.abspath(args.file),
    )
    args._run_id = run_id
    print_err(f"run {run_id} submitted to {args.temporal} (task queue {args.task_queue})")
    return await _drive(args, client, run_id, Printer(sys.stdout, wf, args.jsonl), list(args.decide))


async def _resume(args: argparse.Namespace) -> int:
    from engine.temporal.client import connect, definition, follow

    output = None
    if args.output is not None:  # the reviewer's edit of the output under review, as a local resume takes it
        output = _text_arg(args.output, "--output")
        if output is None:
            return EXIT_USAGE
    arguments = None
    if getattr(args, "arguments", None) is not None:  # a tool call's arguments, as a local resume takes them
        arguments = _json_object_arg(args.arguments, "--arguments")
        if arguments is None:
            return EXIT_USAGE
    client = await connect(args.temporal, args.namespace)
    async with _watching(client, args, args.run_id):
        wf = await definition(client, args.run_id)
        printer = Printer(sys.stdout, wf, args.jsonl)
        state = await follow(client, args.run_id, printer.state.apply, settle=False)  # the summary counts the past
    if state.status != "paused":
        print_err(f"run {args.run_id} is not waiting for input (status {state.status})")
        return EXIT_USAGE
    return await _drive(
        args,
        client,
        args.run_id,
        printer,
        list(args.decide),
        after=state.next,
        first_output=output,
        first_arguments=arguments,
    )


async def _follow(args: argparse.Namespace) -> int:
    from engine.temporal.client import connect, definition

    args._run_id = args.run_id
    client = await connect(args.temporal, args.namespace)
    async with _watching(client, args, args.run_id):
        wf = await definition(client, args.run_id)
    return await _drive(args, client, args.run_id, Printer(sys.stdout, wf, args.jsonl), [])


async def _cancel(args: argparse.Namespace) -> int:
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.service import RPCError

    from engine.temporal.client import cancel, connect

    client = await connect(args.temporal, args.namespace)
    try:
        described = await client.get_workflow_handle(args.run_id).describe()
        if described.status is not None and described.status != WorkflowExecutionStatus.RUNNING:
            print_err(f"run {args.run_id} has already ended ({described.status.name.lower()})")
            return 0
        await cancel(client, args.run_id)
    except RPCError as err:
        print_err(f"cannot cancel run {args.run_id}: {err.message}")
        return 2
    print_err(f"cancellation of run {args.run_id} requested")
    return 0


async def _runs(args: argparse.Namespace) -> int:
    from engine.temporal.client import connect, list_runs

    client = await connect(args.temporal, args.namespace)
    runs = await list_runs(client, limit=args.offset + args.limit)
    runs = [
        r
        for r in runs
        if (not args.workflow or r["workflowName"] == args.workflow) and (not args.status or r["status"] == args.status)
    ][args.offset :]
    if args.json:
        print(json.dumps({"offset": args.offset, "runs": runs}, ensure_ascii=False, indent=2))
        return 0
    print(RUNS_HEADER)
    for r in runs:
        tokens, cost = r.get("tokens") or 0, r.get("cost")
        spent = (f"{tokens:,}" + (f" · {format_cost(cost)}" if cost is not None else "")) if tokens else ""
        print(
            runs_line(
                r["id"],
                r["status"],
                r["startedAt"],
                r["duration"],
                r["workflowName"],
                r["initialInput"] or "",
                "  [temporal]",
                spent=spent,
            )
        )
    print(f"{len(runs)} run{'s' if len(runs) != 1 else ''} on {args.temporal}")
    return 0
