"""The command line of remote runs: ``worker``, ``follow``, ``cancel`` and ``--temporal`` on
``run``/``resume``/``runs`` (same output and exit codes as local runs; see ``engine.cli``).

``run --temporal`` submits and follows; Ctrl+C only stops following (the run goes on on the
server) and prints how to follow, answer or cancel it (exit 4). Imports ``temporalio`` only
when a remote command runs.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

from engine.temporal import DEFAULT_NAMESPACE, DEFAULT_TASK_QUEUE, TemporalUnavailable, require_temporal, split_address

__all__ = ["add_arguments", "wants", "dispatch"]

REMOTE = ("worker", "follow", "cancel")


def _server_options(p: argparse.ArgumentParser, required: bool = False) -> None:
    p.add_argument("--temporal", metavar="HOST:PORT", required=required,
                   help="a Temporal server (the 'temporal' extra): run there instead of on this computer")
    p.add_argument("--namespace", default=DEFAULT_NAMESPACE, help=f"Temporal namespace (default {DEFAULT_NAMESPACE})")
    p.add_argument("--task-queue", default=DEFAULT_TASK_QUEUE,
                   help=f"Temporal task queue of the workers (default {DEFAULT_TASK_QUEUE})")


def add_arguments(sub: Any) -> None:
    """Add the remote commands and options to ``flowdesk``'s sub-parsers."""
    for name in ("run", "resume", "runs"):
        _server_options(sub.choices[name])
    w = sub.add_parser("worker", help="run Flowdesk runs of a Temporal server (the 'temporal' extra)")
    _server_options(w, required=True)
    w.add_argument("--concurrency", type=int, default=10, help="model calls this worker runs at once (default 10)")
    f = sub.add_parser("follow", help="print a remote run's log, following it until it pauses or ends")
    f.add_argument("run_id")
    f.add_argument("--jsonl", action="store_true", help="print each log entry as a JSON line")
    _server_options(f, required=True)
    c = sub.add_parser("cancel", help="cancel a remote run")
    c.add_argument("run_id")
    _server_options(c, required=True)


def wants(args: argparse.Namespace) -> bool:
    return args.command in REMOTE or bool(getattr(args, "temporal", None))


def _err(msg: str) -> None:
    sys.stderr.write(f"flowdesk: {msg}\n")


def dispatch(args: argparse.Namespace) -> int:
    from engine.cli import EXIT_CANCELLED, EXIT_USAGE

    try:
        require_temporal()
        args.temporal = split_address(args.temporal)
    except TemporalUnavailable as err:
        _err(str(err))
        return EXIT_USAGE
    handler = {"worker": _worker, "run": _run, "resume": _resume, "runs": _runs, "follow": _follow,
               "cancel": _cancel}[args.command]
    try:
        return asyncio.run(handler(args))
    except TemporalUnavailable as err:
        _err(str(err))
        return EXIT_USAGE
    except KeyboardInterrupt:
        run_id = getattr(args, "_run_id", None)
        if args.command == "worker":
            _err("worker stopped")
            return 0
        if run_id:
            _detached(args, run_id)
        return EXIT_CANCELLED
    finally:
        # The SDK's client (a Rust core with threads of its own) is let go while the interpreter
        # is whole: left to the interpreter's shutdown, a late callback from one of its threads
        # could abort the process.
        import gc

        gc.collect()


def _where(args: argparse.Namespace) -> str:
    extra = "" if args.namespace == DEFAULT_NAMESPACE else f" --namespace {args.namespace}"
    return f"--temporal {args.temporal}{extra}"


def _detached(args: argparse.Namespace, run_id: str) -> None:
    _err(f"stopped following; run {run_id} goes on on the server")
    _err(f"follow it:  flowdesk follow {run_id} {_where(args)}")
    _err(f"cancel it:  flowdesk cancel {run_id} {_where(args)}")


async def _worker(args: argparse.Namespace) -> int:
    from engine.temporal.worker import run_worker

    if args.concurrency < 1:
        _err("--concurrency must be at least 1")
        return 2
    from engine.temporal.client import connect

    await connect(args.temporal, args.namespace)  # a clear message when the server is not there

    def ready() -> None:
        _err(f"worker ready: {args.temporal} namespace {args.namespace} task queue {args.task_queue} "
             f"(concurrency {args.concurrency}); Ctrl+C stops it")

    await run_worker(args.temporal, namespace=args.namespace, task_queue=args.task_queue,
                     concurrency=args.concurrency, ready=ready)
    _err("worker stopped")
    return 0


async def _drive(args: argparse.Namespace, client: Any, run_id: str, printer: Any, decisions: list[tuple[str, str]],
                 after: int = 0) -> int:
    """Follow the run, answering its approvals with ``decisions`` in order; the exit code."""
    from engine.cli import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, EXIT_PAUSED
    from engine.temporal.client import answer, follow

    args._run_id = run_id
    state = await follow(client, run_id, printer, after=after)
    while state.status == "paused":
        if not decisions:
            _err(f"run {run_id} is paused at approval '{state.pending}' waiting for a decision")
            _err(f"continue it with: flowdesk resume {run_id} {_where(args)} --decide approve   (or reject:NOTE)")
            return EXIT_PAUSED
        word, note = decisions.pop(0)
        await answer(client, run_id, word, note, node_id=state.pending)
        state = await follow(client, run_id, printer, after=state.next, state=state)
    if state.status == "completed":
        _err(f"run {run_id} completed (its log: flowdesk follow {run_id} {_where(args)})")
        return EXIT_OK
    if state.status == "cancelled":
        _err("run cancelled")
        return EXIT_CANCELLED
    _err(f"run failed: {state.error}")
    return EXIT_FAILED


def _options() -> dict[str, Any]:
    # How soon a lost worker's step is retried (tests and demos shorten it).
    ms = os.environ.get("FLOWDESK_TEMPORAL_HEARTBEAT_MS", "")
    return {"heartbeatMs": int(ms)} if ms.isdigit() else {}


async def _run(args: argparse.Namespace) -> int:
    from engine.cli import EXIT_FAILED, EXIT_USAGE
    from engine.cli.printer import Printer
    from engine.cli.run import run_arguments, stored_base_url
    from engine.graph.inputs import has_surrogates
    from engine.graph.model import WorkflowLoadError, load_workflow
    from engine.run.scheduler import uuid_ids
    from engine.graph.validate import validate
    from engine.temporal.client import connect, submit

    if args.input is not None and has_surrogates(args.input):
        _err("--input is not valid text: it holds bytes that are not UTF-8")
        return EXIT_USAGE
    try:
        wf = load_workflow(args.file)
    except WorkflowLoadError as err:
        _err(str(err))
        return EXIT_USAGE
    if args.max_visits < 1:
        _err("--max-visits must be at least 1")
        return EXIT_USAGE
    arguments = run_arguments(wf, args.var)  # refused before the run is sent (exit 2), as locally
    if arguments is None:
        return EXIT_USAGE
    errors = [i for i in validate(wf) if i.is_error]
    if errors:
        for i in errors:
            _err(f"error: {i.message} ({i.code})")
        _err(f"{args.file} has {len(errors)} error{'s' if len(errors) != 1 else ''}; the run was not started")
        return EXIT_FAILED
    # Names only: keys come from the workers' environment or keyring.
    meta = {k: v for k, v in (("provider", args.provider), ("model", args.model),
                              ("baseUrl", stored_base_url(args.base_url))) if v}
    client = await connect(args.temporal, args.namespace)
    run_id = uuid_ids()
    await submit(client, wf, run_id=run_id, initial_input=args.input, max_visits=args.max_visits, meta=meta,
                 task_queue=args.task_queue, options=_options(), variables=arguments, path=os.path.abspath(args.file))
    args._run_id = run_id
    _err(f"run {run_id} submitted to {args.temporal} (task queue {args.task_queue})")
    return await _drive(args, client, run_id, Printer(sys.stdout, wf, args.jsonl), list(args.decide))


async def _resume(args: argparse.Namespace) -> int:
    from engine.cli import EXIT_USAGE
    from engine.cli.printer import Printer
    from engine.temporal.client import connect, definition, follow

    client = await connect(args.temporal, args.namespace)
    wf = await definition(client, args.run_id)
    printer = Printer(sys.stdout, wf, args.jsonl)
    state = await follow(client, args.run_id, printer.state.apply, settle=False)  # the summary counts the past
    if state.status != "paused":
        _err(f"run {args.run_id} is not waiting for input (status {state.status})")
        return EXIT_USAGE
    return await _drive(args, client, args.run_id, printer, list(args.decide), after=state.next)


async def _follow(args: argparse.Namespace) -> int:
    from engine.cli.printer import Printer
    from engine.temporal.client import connect, definition

    client = await connect(args.temporal, args.namespace)
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
            _err(f"run {args.run_id} has already ended ({described.status.name.lower()})")
            return 0
        await cancel(client, args.run_id)
    except RPCError as err:
        _err(f"cannot cancel run {args.run_id}: {err.message}")
        return 2
    _err(f"cancellation of run {args.run_id} requested")
    return 0


async def _runs(args: argparse.Namespace) -> int:
    import json

    from engine.cli.printer import RUNS_HEADER, runs_line
    from engine.temporal.client import connect, list_runs

    client = await connect(args.temporal, args.namespace)
    runs = await list_runs(client, limit=args.offset + args.limit)
    runs = [r for r in runs if (not args.workflow or r["workflowName"] == args.workflow)
            and (not args.status or r["status"] == args.status)][args.offset:]
    if args.json:
        print(json.dumps({"offset": args.offset, "runs": runs}, ensure_ascii=False, indent=2))
        return 0
    print(RUNS_HEADER)
    for r in runs:
        print(runs_line(r["id"], r["status"], r["startedAt"], r["duration"], r["workflowName"], r["initialInput"] or "",
                        "  [temporal]"))
    print(f"{len(runs)} run{'s' if len(runs) != 1 else ''} on {args.temporal}")
    return 0
