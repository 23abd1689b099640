"""Flowdesk's headless command line: ``validate``, ``run``, ``resume``, ``runs``, ``show``, ``diff``, ``repair``, ``flows``, ``import``, ``export``, ``do``, ``learn``, ``inbox``.

Exit codes (a contract other tools rely on):
  validate: 0 no errors, 1 errors, 2 the file cannot be read as a workflow.
  run, resume: 0 completed, 1 failed (validation errors included), 2 usage or file error,
            3 paused with no decision left, 4 cancelled (Ctrl+C), 141 its output was closed
            (``| head``: nothing more is written, the run is cancelled, no traceback).
  runs, show, diff: 0, or 2 when the run history cannot be read or the run does not exist.
  import, export: 0 written, 2 the file cannot be read or converted (the reason printed).
  inbox: 0 (nothing waiting included), 2 when the run history cannot be read.
  eval: 0 every case passed, 1 a case failed (or the workflow does not validate), 2 usage or
        file error (no cases, a bad case line), 4 cancelled (docs/evals.md).
  do: as run once a flow runs; 0 with --dry-run; 2 no flow matches (nor a usable model answer);
      4 not confirmed (no --yes, and no "y" on a terminal).
  learn: 0 written; 1 the model's proposal or the learned flow's validation failed; 2 the run
      cannot be learned (not completed, no tool calls) or the file exists (no --force).
``validate`` and ``run`` also accept the flow files ``import`` reads (AnythingLLM agent flows,
TypeAgent recipes): they are converted on load, with a note on stderr naming the format.
``run FILE --from NODE [--reuse RUN_ID]`` reuses the outputs recorded in an earlier run (default:
the document's last run) for every node upstream of NODE whose execution key still matches.
``run`` records every event in the run store (unless ``--no-store``); a run paused with
no decision left prints its id and the ``flowdesk resume`` command that continues it.
``serve`` and ``mcp serve`` serve the library's flows (HTTP API and webhooks; MCP tools) until
stopped; they exit 2 before listening when refused (a missing extra, no token off loopback).
``--jsonl`` prints each log entry as one JSON line in wire form, in emission order, as
it happens; human-facing messages then go to stderr. This package imports no Qt.

One module a command group, loaded only when one of its commands runs (so ``--version`` and
``validate`` start fast): :mod:`~engine.cli.files` (validate, import, export),
:mod:`~engine.cli.run` (run, resume; driven by :mod:`~engine.cli.execute`), :mod:`~engine.cli.runs` (runs, show, diff),
:mod:`~engine.cli.flows` (flows, do, repair), :mod:`engine.temporal.cli` (worker, follow,
cancel, ``--temporal``), :mod:`~engine.cli.serve` (serve, mcp serve); all of them print through
:mod:`~engine.cli.printer`.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence
from importlib import import_module
from typing import Any

from engine.cli.parser import build_parser
from engine.temporal.options import wants as temporal_wanted

__all__ = ["main", "COMMANDS", "print_err"]

COMMANDS = (
    "run",
    "validate",
    "resume",
    "runs",
    "show",
    "diff",
    "repair",
    "flows",
    "import",
    "export",
    "do",
    "learn",
    "worker",
    "follow",
    "cancel",
    "serve",
    "mcp",
    "inbox",
    "eval",
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PAUSED, EXIT_CANCELLED = 0, 1, 2, 3, 4
EXIT_OUTPUT_CLOSED = 141  # 128 + SIGPIPE, as a shell reports a writer whose reader left (`run ... | head`)

# Each command's group module and function, imported when the command runs.
_HANDLERS = {
    "validate": ("files", "cmd_validate"),
    "import": ("files", "cmd_import"),
    "export": ("files", "cmd_export"),
    "run": ("run", "cmd_run"),
    "resume": ("run", "cmd_resume"),
    "runs": ("runs", "cmd_runs"),
    "show": ("runs", "cmd_show"),
    "diff": ("runs", "cmd_diff"),
    "flows": ("flows", "cmd_flows"),
    "do": ("flows", "cmd_do"),
    "repair": ("flows", "cmd_repair"),
    "serve": ("serve", "cmd_serve"),
    "mcp": ("serve", "cmd_mcp"),
    "inbox": ("inbox", "cmd_inbox"),
    "eval": ("eval", "cmd_eval"),
    "learn": ("learn", "cmd_learn"),
}


def print_err(msg: str) -> None:
    """A message for the user on stderr, as every command writes one: ``flowdesk: ...``."""
    sys.stderr.write(f"flowdesk: {msg}\n")


def _handler(command: str) -> Any:
    """The function of ``command``: its group module is imported here, on purpose (a deliberate
    lazy load: a command pays only for the engine parts it uses)."""
    module, name = _HANDLERS[command]
    return getattr(import_module(f"engine.cli.{module}"), name)


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a path or text that is not UTF-8 is escaped, never a traceback
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError):
            pass
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse's usage errors exit 2 already; keep --help at 0
        return int(exc.code or 0)
    if args.command == "validate":
        return _handler("validate")(args)
    if temporal_wanted(args):
        return import_module("engine.temporal.cli").dispatch(args)  # a command group, as _handler
    if args.command in _HANDLERS:
        handler = _handler(args.command)
        try:
            return handler(args)
        except BrokenPipeError:  # `flowdesk show ... | head`
            return EXIT_OK
    parser.print_help()
    return EXIT_USAGE


#: Extensions whose own threads may call back while the interpreter finalizes.
_NATIVE_THREADS = ("temporalio.bridge", "pydantic_monty")


def before_exit(code: int | None = None) -> None:
    """The command has returned and the process exits now (the entry points call this; a
    process that goes on, such as a test calling :func:`main`, does not): what is still alive
    is frozen out of the cyclic GC, so the interpreter's last collection neither walks it nor
    frees it object by object, and the OS takes the memory back at once. A loaded workflow and
    its index refer to each other, so only that collection would free them: at 10,000 nodes
    it was some 8 µs a node of ``flowdesk run``, and 70 ms of any command's exit.

    A command that talked to a Temporal server (``code`` given) ends here, without the
    interpreter's finalization: the SDK's core has threads of its own, and one calling back
    while the interpreter finalizes crashed the process after its last line (SIGSEGV, or
    "PyGILState_Release … finalizing": 2 of 20 ``run --temporal`` in an acceptance probe).
    So does a command that ran Python code steps: pydantic-monty's worker pool (Rust, with
    threads of its own) aborted the process after its last line (SIGABRT, about 1 ``flowdesk
    eval`` in 10 with a failing code step)."""
    gc.freeze()
    if code is not None and any(name in sys.modules for name in _NATIVE_THREADS):
        logging = sys.modules.get("logging")
        if logging is not None:  # what its handlers hold (a server's log file)
            logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # a closed pipe, a closed stream: nothing more to say
                pass
        os._exit(code)
