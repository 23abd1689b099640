"""The ``flowdesk`` argument parser: every command and its options (the Temporal ones added by
:mod:`engine.temporal.options`). Cheap to import: ``flowdesk --version`` and ``--help`` need
nothing else.
"""

from __future__ import annotations

import argparse
from typing import Any

from engine.temporal.options import add_arguments as temporal_arguments
from engine.version import flowdesk_version

__all__ = ["build_parser"]


def _decision(text: str) -> tuple[str, str]:
    """``approve``, ``reject`` or an approval's option label, optionally followed by ``:NOTE``
    (whether the approval takes the label is checked when it is answered)."""
    word, _, note = text.partition(":")
    word = word.strip()
    if not word:
        raise argparse.ArgumentTypeError(
            f"'{text}' names no decision: approve, reject or an option's label (optionally followed by :NOTE)"
        )
    if word.lower() in ("approve", "reject"):
        word = word.lower()
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
        metavar="approve|reject|LABEL[:NOTE]",
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
    r.add_argument(
        "--json",
        dest="run_json",
        action="store_true",
        help="print the run's result as one JSON object when it ends (the log goes to stderr)",
    )
    r.add_argument("--repair", action="store_true", help="when the run fails, ask the model to repair the failed node")
    r.add_argument("--yes", action="store_true", help="with --repair: apply the repair without asking")
    r.add_argument(
        "--repair-attempts", type=int, default=1, metavar="N", help="with --repair: how many repairs to try (1)"
    )
    d = sub.add_parser("do", help="run the library flow a sentence asks for (trigger phrases first, else the model)")
    d.add_argument("text", metavar="TEXT")
    d.add_argument("--yes", action="store_true", help="run without asking for confirmation")
    d.add_argument("--dry-run", action="store_true", help="print the flow and its arguments; run nothing")
    d.add_argument("--json", action="store_true", help="print the choice as JSON (and how it matched)")
    d.add_argument(
        "--no-learn", action="store_true", help="do not keep a model-routed sentence as a learned trigger of the flow"
    )
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
        metavar="approve|reject|LABEL[:NOTE]",
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
    fl = sub.add_parser(
        "flows",
        help="list the flow library (reusable flows, their parameters and triggers); show, enable, disable or delete one",
    )
    fl.add_argument("action", nargs="?", choices=["list", "show", "enable", "disable", "delete"], default="list")
    fl.add_argument("flow_id", nargs="?", metavar="ID", help="the flow (its id, name or file stem)")
    fl.add_argument("--json", action="store_true", help="print the flows as JSON")
    fl.add_argument(
        "--library", action="append", metavar="FOLDER", help="use this folder as the library instead of the user's"
    )
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
    le = sub.add_parser("learn", help="save a completed run whose agent called tools as a reusable flow")
    le.add_argument("run_id", metavar="RUN_ID")
    le.add_argument("-o", "--output", metavar="FILE", help="write the flow here (default: a new file in the library)")
    le.add_argument("--name", help="the flow's name (default: the agent's name, learned)")
    le.add_argument("--no-model", action="store_true", help="ask no model: keep every argument as written")
    le.add_argument("--force", action="store_true", help="replace FILE if it exists")
    le.add_argument("--provider")
    le.add_argument("--model")
    le.add_argument("--base-url")
    le.add_argument("--json", action="store_true", help="print what was written as JSON")
    ib = sub.add_parser("inbox", help="list every run waiting for a decision, oldest first (local and on Temporal)")
    ib.add_argument("--json", action="store_true", help="print the waiting runs as JSON")
    ib.add_argument(
        "--temporal",
        dest="inbox_temporal",
        metavar="HOST:PORT",
        help="also list the runs paused on this Temporal server (default: $FLOWDESK_TEMPORAL, if set)",
    )
    ib.add_argument("--namespace", default="default", help="Temporal namespace (default default)")
    # Scale-out (issue 19): `worker`, `follow`, `cancel` and --temporal on run/resume/runs.
    temporal_arguments(sub)
    _serving_commands(sub)
    _eval_parser(sub)
    return p


def _serving_commands(sub: Any) -> None:
    """``serve`` (the HTTP API) and ``mcp serve`` (library flows as MCP tools): engine/cli/serve.py."""
    sv = sub.add_parser("serve", help="serve the library's flows over HTTP: an API, webhooks, run events")
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    sv.add_argument("--port", type=int, default=8377, help="port to listen on (default 8377; 0: any free port)")
    sv.add_argument("--token", help="require Authorization: Bearer TOKEN (or set FLOWDESK_TOKEN)")
    _serving_options(sv)
    sv.add_argument("--max-body-bytes", type=int, default=1024 * 1024, help="largest request body (default 1 MiB)")
    sv.add_argument(
        "--cors-origin", action="append", metavar="ORIGIN", help="allow browser calls from this origin (repeatable)"
    )
    sv.add_argument("--max-visits", type=int, default=25, help="how often one node may run in a run (loop guard)")
    mc = sub.add_parser("mcp", help="MCP: serve the library's flows as tools to MCP clients")
    mcs = mc.add_subparsers(dest="mcp_command", metavar="SUBCOMMAND")
    ms = mcs.add_parser("serve", help="serve the enabled library flows as MCP tools (stdio, or --http)")
    ms.add_argument(
        "--http", metavar="HOST:PORT", help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio"
    )
    ms.add_argument("--token", help="with --http: require Authorization: Bearer TOKEN (or set FLOWDESK_TOKEN)")
    _serving_options(ms)


def _serving_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--library",
        action="append",
        metavar="DIR",
        help="serve the flows of this folder instead of the user's library (repeatable)",
    )
    p.add_argument("--provider", help="LLM provider for every agent (for example: echo, openai, anthropic, local)")
    p.add_argument("--model", help="model for every agent, overriding the nodes' models")
    p.add_argument("--base-url", help="base URL of an OpenAI-compatible server")


def _eval_parser(sub: Any) -> None:
    """``flowdesk eval`` (issue 37, docs/evals.md)."""
    ev = sub.add_parser("eval", help="run a workflow's test cases and grade their outputs")
    ev.add_argument("file")
    ev.add_argument("--cases", metavar="F", help="the cases: a .jsonl file, or a .csv dataset of inputs")
    ev.add_argument(
        "--expect",
        action="append",
        default=[],
        metavar="[NODE.]TYPE:VALUE",
        help="an expectation for every case (repeatable; for a CSV dataset's rows), or its JSON",
    )
    ev.add_argument("--concurrency", type=int, default=4, help="cases run at once (default 4)")
    ev.add_argument("--provider", help="LLM provider for every agent and the judge (as for run)")
    ev.add_argument("--model", help="model for every agent and the judge, overriding the nodes' models")
    ev.add_argument("--base-url", help="base URL of an OpenAI-compatible server")
    ev.add_argument("--baseline", metavar="EVAL_ID", help="compare with this earlier eval: what got worse or better")
    ev.add_argument("--junit", metavar="OUT", help="write the results as JUnit XML to OUT")
    ev.add_argument("--json", action="store_true", help="print the results as JSON")
    ev.add_argument("--max-visits", type=int, default=25, help="how often one node may run in a run (loop guard)")
    ev.add_argument("--no-store", action="store_true", help="record neither the runs nor the eval")
    # Its own destination: `main` sends a command whose args have `temporal` to the remote group.
    ev.add_argument("--temporal", dest="eval_temporal", metavar="HOST:PORT", help="run the cases on a Temporal server")
    ev.add_argument("--namespace", default="default", help="Temporal namespace (default default)")
    ev.add_argument("--task-queue", default="flowdesk", help="Temporal task queue of the workers (default flowdesk)")
