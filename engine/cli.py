"""Flowdesk's headless command line: ``flowdesk validate`` and ``flowdesk run``.

Exit codes (a contract other tools rely on):
  validate: 0 no errors, 1 errors, 2 the file cannot be read as a workflow.
  run:      0 completed, 1 failed (validation errors included), 2 usage or file error,
            3 paused with no decision left, 4 cancelled (Ctrl+C).
``--jsonl`` prints each log entry as one JSON line in wire form, in emission order, as
it happens; human-facing messages then go to stderr. This module imports no Qt.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from typing import Any, Sequence, TextIO

__all__ = ["main", "COMMANDS"]

COMMANDS = ("run", "validate")

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PAUSED, EXIT_CANCELLED = 0, 1, 2, 3, 4


def _decision(text: str) -> tuple[str, str]:
    word, _, note = text.partition(":")
    word = word.strip().lower()
    if word not in ("approve", "reject"):
        raise argparse.ArgumentTypeError(f"'{text}' is not approve or reject (optionally followed by :NOTE)")
    return word, note


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="flowdesk", description="Draw, run and inspect agentic LLM workflows.")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    v = sub.add_parser("validate", help="check a workflow file and list its problems")
    v.add_argument("file")
    v.add_argument("--json", action="store_true", help="print the issues as JSON")
    r = sub.add_parser("run", help="run a workflow headless")
    r.add_argument("file")
    r.add_argument("--input", help="the run's initial input (overrides the start node's)")
    r.add_argument("--decide", action="append", type=_decision, default=[], metavar="approve|reject[:NOTE]",
                   help="answer the next approval; repeat for later ones, applied in order")
    r.add_argument("--jsonl", action="store_true", help="print each log entry as a JSON line as it happens")
    r.add_argument("--provider", help="LLM provider for every agent (for example: echo, openai, anthropic, local)")
    r.add_argument("--model", help="model for every agent, overriding the nodes' models")
    r.add_argument("--base-url", help="base URL of an OpenAI-compatible server")
    r.add_argument("--max-visits", type=int, default=25, help="how often one node may run in a run (loop guard)")
    return p


# ------------------------------------------------------------------------------- output
_COLOURS = {
    "step_start": "\033[1;36m", "start_prompt": "\033[2m", "logic_check": "\033[35m", "wait_input": "\033[1;33m",
    "input_received": "\033[33m", "llm_response": "\033[32m", "llm_error": "\033[1;31m", "error": "\033[1;31m",
    "subagent_call_start": "\033[34m", "subagent_call_end": "\033[34m", "subagent_call_error": "\033[31m",
    "run_status": "\033[1m", "approval_queued": "\033[33m",
}


class _Printer:
    def __init__(self, out: TextIO, titles: dict[str, str], jsonl: bool) -> None:
        self.out = out
        self.titles = titles
        self.jsonl = jsonl
        self.colour = not jsonl and out.isatty() and os.environ.get("NO_COLOR") is None

    def __call__(self, ev: Any) -> None:
        if self.jsonl:
            self.out.write(ev.to_json() + "\n")
            self.out.flush()
            return
        kind = str(ev.type)
        if kind == "llm_delta":
            return
        content = ev.content
        if kind.startswith("subagent_call_"):
            data = ev.json_content() or {}
            arrow = {"subagent_call_start": "→", "subagent_call_end": "←", "subagent_call_error": "✗"}[kind]
            indent = "  " * max(0, int(data.get("depth", 1)) - 1)
            content = f"{indent}{arrow} {data.get('subagentName', '?')}: {data.get('message', '')}"
        who = self.titles.get(ev.node_id, ev.node_id)
        stamp = ev.to_wire()["timestamp"][11:23]
        text = content.replace("\n", "\n" + " " * 16) if content else ""
        line = f"{stamp}  {who} · {kind}" + (f"\n{' ' * 16}{text}" if text and kind not in ("step_start", "run_status") else f"  {text}")
        if self.colour:
            line = f"{_COLOURS.get(kind, '')}{line}\033[0m"
        self.out.write(line + "\n")
        self.out.flush()


def _err(msg: str) -> None:
    sys.stderr.write(f"flowdesk: {msg}\n")


# ------------------------------------------------------------------------------- commands
def _cmd_validate(args: argparse.Namespace) -> int:
    from .model import WorkflowLoadError, load_workflow
    from .validate import validate

    try:
        wf = load_workflow(args.file)
    except WorkflowLoadError as err:
        if args.json:
            print(json.dumps({"error": str(err)}))
        else:
            _err(str(err))
        return EXIT_USAGE
    from .llm.config import web_search_available

    issues = validate(wf, web_search_available=web_search_available())
    errors = sum(1 for i in issues if i.is_error)
    if args.json:
        print(json.dumps({"issues": [i.to_json() for i in issues]}, ensure_ascii=False, indent=2))
    else:
        for i in issues:
            where = f" [{', '.join(i.node_ids)}]" if i.node_ids else ""
            print(f"{i.severity}: {i.message} ({i.code}){where}")
        warnings = len(issues) - errors
        print(f"{args.file}: {errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}")
    return EXIT_FAILED if errors else EXIT_OK


async def _run_async(args: argparse.Namespace, wf: Any, resolver: Any) -> int:
    from .events import RunStatus
    from .runtime import Run

    out = sys.stdout
    printer = _Printer(out, {n.id: n.title for n in wf.nodes}, args.jsonl)
    run = Run(wf, resolver, initial_input=args.input, on_event=printer, max_visits=args.max_visits, check=False)
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, run.cancel)
        loop.add_signal_handler(signal.SIGTERM, run.cancel)
    except (NotImplementedError, RuntimeError):  # not on the main thread / not supported
        pass
    decisions = list(args.decide)
    status = await run.start()
    while status == RunStatus.PAUSED:
        if not decisions:
            node = run.pending_approval
            _err(f"run {run.run_id} is paused at approval '{node}' waiting for a decision "
                 "(pass --decide approve|reject[:NOTE])")
            return EXIT_PAUSED
        word, note = decisions.pop(0)
        status = await run.resume(word, note)
    if status == RunStatus.COMPLETED:
        return EXIT_OK
    if status == RunStatus.CANCELLED:
        _err("run cancelled")
        return EXIT_CANCELLED
    _err(f"run failed: {run.error}")
    return EXIT_FAILED


def _cmd_run(args: argparse.Namespace) -> int:
    from .llm.registry import ProviderConfigError, make_resolver
    from .model import WorkflowLoadError, load_workflow
    from .validate import validate

    try:
        wf = load_workflow(args.file)
    except WorkflowLoadError as err:
        _err(str(err))
        return EXIT_USAGE
    if args.max_visits < 1:
        _err("--max-visits must be at least 1")
        return EXIT_USAGE
    issues = validate(wf)
    errors = [i for i in issues if i.is_error]
    if errors:
        for i in errors:
            _err(f"error: {i.message} ({i.code})")
        _err(f"{args.file} has {len(errors)} error{'s' if len(errors) != 1 else ''}; the run was not started")
        return EXIT_FAILED
    try:
        resolver = make_resolver(args.provider, model=args.model, base_url=args.base_url)
    except ProviderConfigError as err:
        _err(str(err))
        return EXIT_USAGE
    try:
        return asyncio.run(_run_async(args, wf, resolver))
    except KeyboardInterrupt:
        return EXIT_CANCELLED


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse's usage errors exit 2 already; keep --help at 0
        return int(exc.code or 0)
    if args.command == "validate":
        return _cmd_validate(args)
    if args.command == "run":
        return _cmd_run(args)
    parser.print_help()
    return EXIT_USAGE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
