"""The ``flowdesk`` argument parser: every command and its options (the Temporal ones added by
:mod:`engine.temporal.options`). Cheap to import: ``flowdesk --version`` and ``--help`` need
nothing else.
"""

from __future__ import annotations

import argparse
from typing import Any

from engine.resources import flowdesk_version
from engine.temporal.options import add_arguments as temporal_arguments

__all__ = ["build_parser"]


def _decision(text: str) -> tuple[str, str]:
    word, _, note = text.partition(":")
    word = word.strip().lower()
    if word not in ("approve", "reject"):
        raise argparse.ArgumentTypeError(f"'{text}' is not approve or reject (optionally followed by :NOTE)")
    return word, note


def _run_options(r: argparse.ArgumentParser) -> None:
    r.add_argument("--input", help="the run's initial input (overrides the start node's)")
    r.add_argument(
        "--var",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a run variable (repeatable); overrides the Start node's default, coerced to its type",
    )
    r.add_argument(
        "--decide",
        action="append",
        type=_decision,
        default=[],
        metavar="approve|reject[:NOTE]",
        help="answer the next approval; repeat for later ones, applied in order",
    )
    r.add_argument("--jsonl", action="store_true", help="print each log entry as a JSON line as it happens")
    r.add_argument("--provider", help="LLM provider for every agent (for example: echo, openai, anthropic, local)")
    r.add_argument("--model", help="model for every agent, overriding the nodes' models")
    r.add_argument("--base-url", help="base URL of an OpenAI-compatible server")
    r.add_argument("--max-visits", type=int, default=25, help="how often one node may run in a run (loop guard)")
    r.add_argument("--no-store", action="store_true", help="do not record the run in the run history")


class _VersionAction(argparse.Action):
    """``--version``: the version is looked up only when asked, not on every command's start."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print the installed version and exit"
        )

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any) -> None:
        # Imported here, as a command group is: engine.resources loads importlib.resources and
        # tempfile, which only --version needs of all the commands parsed here.

        print(f"flowdesk {flowdesk_version()}")
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="flowdesk", description="Draw, run and inspect agentic LLM workflows.")
    p.add_argument("--version", action=_VersionAction)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    v = sub.add_parser("validate", help="check a workflow file and list its problems")
    v.add_argument("file")
    v.add_argument("--json", action="store_true", help="print the issues as JSON")
    r = sub.add_parser("run", help="run a workflow headless")
    r.add_argument("file")
    _run_options(r)
    r.add_argument(
        "--from",
        dest="from_node",
        metavar="NODE",
        help="run from this node: upstream nodes reuse the outputs recorded in an earlier run",
    )
    r.add_argument("--reuse", metavar="RUN_ID", help="the earlier run to reuse (default: the file's last run)")
    d = sub.add_parser("do", help="run the library flow a sentence asks for (trigger phrases first, else the model)")
    d.add_argument("text", metavar="TEXT")
    d.add_argument("--yes", action="store_true", help="run without asking for confirmation")
    d.add_argument("--dry-run", action="store_true", help="print the flow and its arguments; run nothing")
    d.add_argument("--json", action="store_true", help="print the choice as JSON")
    d.add_argument(
        "--library",
        action="append",
        metavar="FOLDER",
        help="use this folder as the library instead of the user's (repeatable)",
    )
    _run_options(d)
    rs = sub.add_parser("resume", help="answer a paused run's approval and continue it")
    rs.add_argument("run_id")
    rs.add_argument(
        "--decide",
        action="append",
        type=_decision,
        default=[],
        metavar="approve|reject[:NOTE]",
        required=True,
        help="answer the pending approval; repeat for later ones",
    )
    rs.add_argument("--jsonl", action="store_true", help="print each new log entry as a JSON line")
    rs.add_argument(
        "--output",
        metavar="TEXT|@FILE",
        help="the reviewed output, edited: what flows on from the approval (@FILE reads a file)",
    )
    rs.add_argument(
        "--arguments",
        metavar="JSON|@FILE",
        help="at a tool call's approval: the arguments to call it with instead (a JSON object, checked "
        "against the tool's schema)",
    )
    rs.add_argument("--provider")
    rs.add_argument("--model")
    rs.add_argument("--base-url")
    ls = sub.add_parser("runs", help="list recorded runs, newest first, with the tokens and cost each spent")
    ls.add_argument("--workflow", help="only runs of the workflow with this name")
    ls.add_argument("--status", choices=["running", "paused", "completed", "failed", "cancelled", "interrupted"])
    ls.add_argument("--limit", type=int, default=20)
    ls.add_argument("--offset", type=int, default=0)
    ls.add_argument("--json", action="store_true")
    im = sub.add_parser("import", help="convert an AnythingLLM agent flow or a TypeAgent recipe to a Flowdesk workflow")
    im.add_argument("file")
    im.add_argument("-o", "--output", metavar="OUT", help="write the workflow here (default: print it)")
    ex = sub.add_parser("export", help="write a Flowdesk workflow in another system's format")
    ex.add_argument("file")
    ex.add_argument("--to", required=True, choices=["anythingllm"], help="the target format")
    ex.add_argument("-o", "--output", metavar="OUT", help="write the file here (default: print it)")
    sh = sub.add_parser("show", help="print a recorded run's log")
    sh.add_argument("run_id")
    sh.add_argument("--jsonl", action="store_true", help="print the log as JSON lines (wire form)")
    fl = sub.add_parser("flows", help="list the flow library (reusable flows, their parameters and triggers)")
    fl.add_argument("--json", action="store_true", help="print the flows as JSON")
    df = sub.add_parser("diff", help="compare two runs: workflow changes and, node by node, output, status, time")
    df.add_argument("run_a")
    df.add_argument("run_b")
    df.add_argument("--json", action="store_true", help="print the comparison as JSON")
    rp = sub.add_parser("repair", help="ask the model to patch the data of a failed run's failed node")
    rp.add_argument("run_id")
    rp.add_argument("--apply", action="store_true", help="write the patched workflow to its file (after confirmation)")
    rp.add_argument("--yes", action="store_true", help="with --apply: do not ask for confirmation")
    rp.add_argument("--file", help="the workflow file to write (default: the file the run was started from)")
    rp.add_argument("--provider")
    rp.add_argument("--model")
    rp.add_argument("--base-url")
    rp.add_argument("--json", action="store_true", help="print the proposal as JSON")
    # Scale-out (issue 19): `worker`, `follow`, `cancel` and --temporal on run/resume/runs.
    temporal_arguments(sub)
    return p
