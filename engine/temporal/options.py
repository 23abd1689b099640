"""The command-line options of remote runs: the ``worker``, ``follow`` and ``cancel`` commands and
``--temporal`` (with its namespace and task queue) on ``run``/``resume``/``runs``.

Apart from :mod:`engine.temporal.cli` (the commands themselves) because ``flowdesk``'s parser
adds these to every invocation: this module imports nothing but argparse, so ``flowdesk
--version`` stays cheap.
"""

from __future__ import annotations

import argparse
from typing import Any

from engine.temporal import DEFAULT_NAMESPACE, DEFAULT_TASK_QUEUE

__all__ = ["REMOTE", "add_arguments", "wants"]

REMOTE = ("worker", "follow", "cancel")


def _server_options(p: argparse.ArgumentParser, required: bool = False) -> None:
    p.add_argument(
        "--temporal",
        metavar="HOST:PORT",
        required=required,
        help="a Temporal server (the 'temporal' extra): run there instead of on this computer",
    )
    p.add_argument("--namespace", default=DEFAULT_NAMESPACE, help=f"Temporal namespace (default {DEFAULT_NAMESPACE})")
    p.add_argument(
        "--task-queue",
        default=DEFAULT_TASK_QUEUE,
        help=f"Temporal task queue of the workers (default {DEFAULT_TASK_QUEUE})",
    )


def add_arguments(sub: Any) -> None:
    """Add the remote commands and options to ``flowdesk``'s sub-parsers."""
    for name in ("run", "resume", "runs"):
        _server_options(sub.choices[name])
    sub.choices["run"].add_argument(
        "--local-steps",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="with --temporal: run every step as a local activity, inside the workflow task (fast "
        "short steps; a cancel is heard within the task's heartbeat, ~8 s); --no-local-steps: every "
        "step an activity. Default: steps quick by nature (echo agents, short timeoutMs) are local",
    )
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
