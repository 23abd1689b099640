"""Flowdesk's headless command line: ``validate``, ``run``, ``resume``, ``runs``, ``show``, ``diff``, ``repair``, ``flows``, ``import``, ``export``, ``do``.

Exit codes (a contract other tools rely on):
  validate: 0 no errors, 1 errors, 2 the file cannot be read as a workflow.
  run, resume: 0 completed, 1 failed (validation errors included), 2 usage or file error,
            3 paused with no decision left, 4 cancelled (Ctrl+C).
  runs, show, diff: 0, or 2 when the run history cannot be read or the run does not exist.
  import, export: 0 written, 2 the file cannot be read or converted (the reason printed).
  do: as run once a flow runs; 0 with --dry-run; 2 no flow matches (nor a usable model answer);
      4 not confirmed (no --yes, and no "y" on a terminal).
``validate`` and ``run`` also accept the flow files ``import`` reads (AnythingLLM agent flows,
TypeAgent recipes): they are converted on load, with a note on stderr naming the format.
``run FILE --from NODE [--reuse RUN_ID]`` reuses the outputs recorded in an earlier run (default:
the document's last run) for every node upstream of NODE whose execution key still matches.
``run`` records every event in the run store (unless ``--no-store``); a run paused with
no decision left prints its id and the ``flowdesk resume`` command that continues it.
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
from contextlib import contextmanager
from typing import Any, Iterator, Sequence, TextIO

from engine.run.events import SUBAGENT_CALL_TYPES, format_duration, format_timestamp

__all__ = ["main", "COMMANDS"]

COMMANDS = ("run", "validate", "resume", "runs", "show", "diff", "repair", "flows", "import", "export", "do",
            "worker", "follow", "cancel")

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_PAUSED, EXIT_CANCELLED = 0, 1, 2, 3, 4


def _decision(text: str) -> tuple[str, str]:
    word, _, note = text.partition(":")
    word = word.strip().lower()
    if word not in ("approve", "reject"):
        raise argparse.ArgumentTypeError(f"'{text}' is not approve or reject (optionally followed by :NOTE)")
    return word, note


def _run_options(r: argparse.ArgumentParser) -> None:
    r.add_argument("--input", help="the run's initial input (overrides the start node's)")
    r.add_argument("--var", action="append", default=[], metavar="NAME=VALUE",
                   help="a run variable (repeatable); overrides the Start node's default, coerced to its type")
    r.add_argument("--decide", action="append", type=_decision, default=[], metavar="approve|reject[:NOTE]",
                   help="answer the next approval; repeat for later ones, applied in order")
    r.add_argument("--jsonl", action="store_true", help="print each log entry as a JSON line as it happens")
    r.add_argument("--provider", help="LLM provider for every agent (for example: echo, openai, anthropic, local)")
    r.add_argument("--model", help="model for every agent, overriding the nodes' models")
    r.add_argument("--base-url", help="base URL of an OpenAI-compatible server")
    r.add_argument("--max-visits", type=int, default=25, help="how often one node may run in a run (loop guard)")
    r.add_argument("--no-store", action="store_true", help="do not record the run in the run history")


class _VersionAction(argparse.Action):
    """``--version``: the version is looked up only when asked, not on every command's start."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS,
                         help="print the installed version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_args: Any) -> None:
        from engine.resources import flowdesk_version

        print(f"flowdesk {flowdesk_version()}")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="flowdesk", description="Draw, run and inspect agentic LLM workflows.")
    p.add_argument("--version", action=_VersionAction)
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    v = sub.add_parser("validate", help="check a workflow file and list its problems")
    v.add_argument("file")
    v.add_argument("--json", action="store_true", help="print the issues as JSON")
    r = sub.add_parser("run", help="run a workflow headless")
    r.add_argument("file")
    _run_options(r)
    r.add_argument("--from", dest="from_node", metavar="NODE",
                   help="run from this node: upstream nodes reuse the outputs recorded in an earlier run")
    r.add_argument("--reuse", metavar="RUN_ID", help="the earlier run to reuse (default: the file's last run)")
    d = sub.add_parser("do", help="run the library flow a sentence asks for (trigger phrases first, else the model)")
    d.add_argument("text", metavar="TEXT")
    d.add_argument("--yes", action="store_true", help="run without asking for confirmation")
    d.add_argument("--dry-run", action="store_true", help="print the flow and its arguments; run nothing")
    d.add_argument("--json", action="store_true", help="print the choice as JSON")
    d.add_argument("--library", action="append", metavar="FOLDER",
                   help="use this folder as the library instead of the user's (repeatable)")
    _run_options(d)
    rs = sub.add_parser("resume", help="answer a paused run's approval and continue it")
    rs.add_argument("run_id")
    rs.add_argument("--decide", action="append", type=_decision, default=[], metavar="approve|reject[:NOTE]",
                    required=True, help="answer the pending approval; repeat for later ones")
    rs.add_argument("--jsonl", action="store_true", help="print each new log entry as a JSON line")
    rs.add_argument("--output", metavar="TEXT|@FILE",
                    help="the reviewed output, edited: what flows on from the approval (@FILE reads a file)")
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
    from engine.temporal.cli import add_arguments as _temporal_arguments

    _temporal_arguments(sub)
    return p


# ------------------------------------------------------------------------------- output
_COLOURS = {
    "step_start": "\033[1;36m", "start_prompt": "\033[2m", "logic_check": "\033[35m", "wait_input": "\033[1;33m",
    "input_received": "\033[33m", "llm_response": "\033[32m", "llm_error": "\033[1;31m", "error": "\033[1;31m",
    "subagent_call_start": "\033[34m", "subagent_call_end": "\033[34m", "subagent_call_error": "\033[31m",
    "run_status": "\033[1m", "approval_queued": "\033[33m",
}


class _Printer:
    """Prints each event as it comes: a JSON line (wire form) with ``--jsonl``, else a readable line.

    Readable output is derived like every other view of a run: the events feed the engine's
    run-state reducer (:class:`engine.RunState`), subagent calls are printed from their typed
    fields, and when the run pauses or ends a one-line summary of the node states follows.
    """

    def __init__(self, out: TextIO, workflow: Any, jsonl: bool) -> None:
        from engine.run.state import RunState

        self.out = out
        self.titles = {n.id: n.title for n in workflow.nodes}
        self.workflow = workflow
        self.jsonl = jsonl
        self.state = RunState(workflow)
        self.colour = not jsonl and out.isatty() and os.environ.get("NO_COLOR") is None

    def committed(self, events: list[Any], recorded: bool) -> None:
        """The recorder's ``on_commit``: a batch is printed once it is in the run history (or
        once it could not be written), so nothing printed is lost to a kill."""
        for ev in events:
            self(ev)

    def __call__(self, ev: Any) -> None:
        if self.jsonl:
            self.out.write(ev.to_json() + "\n")
            self.out.flush()
            if ev[1] == "llm_error":  # (a provider that could not serve: see _execute)
                self.state.apply(ev)
            return
        kind = ev.type
        if kind == "llm_delta":
            return
        self.state.apply(ev)
        content = ev.content
        if kind in SUBAGENT_CALL_TYPES:
            fields = ev.extra or {}
            depth = fields.get("depth")
            arrow = {"subagent_call_start": "→", "subagent_call_end": "←", "subagent_call_error": "✗"}[kind]
            indent = "  " * max(0, (depth if isinstance(depth, int) else 1) - 1)
            content = f"{indent}{arrow} {fields.get('subagentName') or '?'}: {content}"
        elif kind == "step_retry":
            f = ev.extra or {}
            content = f"attempt {f.get('attempt')} of {f.get('maxAttempts')} in {f.get('delayMs')} ms: {content}"
        elif kind == "step_skipped":
            content = f"skipped: {content}"
        elif kind == "loop_check":
            f = ev.extra or {}
            content = f"iteration {f.get('iteration')}: " + ("until matched, done" if f.get("matched") else "go on")
        elif kind == "step_end":
            f = ev.extra or {}
            if f.get("status") == "done":
                return  # a finished step says so in its own events; only a skip or a failure is printed
            ms = f.get("durationMs")
            took = format_duration(ms / 1000) if isinstance(ms, (int, float)) else "?"
            content = f"{f.get('status')} after {took}" + (
                f", following '{f['handle']}': {content}" if f.get("handle") else "")
        who = self.titles.get(ev.node_id, ev.node_id)
        stamp = format_timestamp(ev.timestamp)[11:23]
        text = content.replace("\n", "\n" + " " * 16) if content else ""
        line = f"{stamp}  {who} · {kind}" + (f"\n{' ' * 16}{text}" if text and kind not in ("step_start", "run_status") else f"  {text}")
        if self.colour:
            line = f"{_COLOURS.get(kind, '')}{line}\033[0m"
        self.out.write(line + "\n")
        if kind == "run_status" and content in ("paused", "completed", "failed", "cancelled"):
            self.out.write(self.summary() + "\n")
        self.out.flush()

    def summary(self) -> str:
        """``nodes: 4 done · 1 waiting · 2 skipped`` (and the approvals waiting, in order)."""
        counts: dict[str, int] = {}
        for state in self.state.node_states().values():
            counts[state] = counts.get(state, 0) + 1
        order = ("done", "running", "waiting", "queued", "failed", "cancelled", "skipped", "idle")
        text = " · ".join(f"{counts[s]} {s}" for s in order if counts.get(s))
        pending = self.state.pending_approvals
        if pending:
            text += " · approvals waiting: " + ", ".join(self.titles.get(n, n) for n in pending)
        return f"{' ' * 14}nodes: {text or 'none'}" + self._spent()

    def _spent(self) -> str:
        """`` · tokens 391 · $0.0004``: what the run's model calls used so far, priced as the
        console and the history price them (no cost when a model has no price)."""
        from engine.run.costs import format_cost, readable_prices, run_costs

        total = run_costs(self.state, self.workflow, readable_prices())["total"]
        if not total["tokens"]:
            return ""
        return f" · tokens {total['tokens']:,}" + (f" · {format_cost(total['cost'])}" if total["cost"] is not None else "")


def _err(msg: str) -> None:
    sys.stderr.write(f"flowdesk: {msg}\n")


def _run_arguments(wf: Any, var_texts: list[str], given: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """A run's arguments: ``given`` (`do`'s), overridden by each ``--var NAME=VALUE``, checked
    against the workflow's variables; None (the reason printed) when one is refused, before the
    run starts (DESIGN.md: exit 2)."""
    from engine.graph.inputs import has_surrogates
    from engine.graph.variables import VariableError, parse_var_argument, run_variables

    arguments: dict[str, Any] = dict(given or {})
    for text in var_texts:
        try:
            name, value = parse_var_argument(text)
        except ValueError as err:
            _err(str(err))
            return None
        if has_surrogates(value):
            _err(f"--var {name}: the value is not valid text (bytes that are not UTF-8)")
            return None
        arguments[name] = value
    try:
        run_variables(wf, arguments)
    except VariableError as err:
        _err(str(err))
        return None
    return arguments


# ------------------------------------------------------------------------------- commands
def _load_any(path: str) -> Any:
    """The workflow in ``path``; a foreign flow file is converted, with a note on stderr."""
    from engine.flows.importers import load_any_workflow

    wf, imported = load_any_workflow(path)
    if imported is not None:
        _err(f"note: {imported.note(path)}")
        for warning in imported.warnings:
            _err(f"warning: {warning}")
    return wf


def _write_out(text: str, output: str | None) -> int:
    from engine.graph.model import atomic_write_text

    if not output:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        atomic_write_text(output, text)
    except OSError as err:
        _err(f"{output}: cannot be written: {err.strerror or err}")
        return EXIT_USAGE
    return EXIT_OK


def _cmd_import(args: argparse.Namespace) -> int:
    from engine.flows.importers import import_flow
    from engine.graph.model import WorkflowLoadError, dumps_workflow, load_workflow, loads_workflow, parse_workflow

    try:
        data = open(args.file, "rb").read()
    except OSError:
        data = None
    try:
        if data is None:
            load_workflow(args.file)  # says what is wrong with the path
            return EXIT_USAGE
        try:
            raw = json.loads(data)
        except (ValueError, RecursionError):
            loads_workflow(data, path=args.file)  # the model's own message
            return EXIT_USAGE
        result = import_flow(raw, path=args.file)
        wf = parse_workflow(result.workflow, path=args.file)
    except WorkflowLoadError as err:
        _err(str(err))
        return EXIT_USAGE
    for warning in result.warnings:
        _err(f"warning: {warning}")
    if result.format == "flowdesk":
        _err(f"note: {args.file} is already a Flowdesk workflow; written unchanged")
    else:
        _err(f"{result.note(args.file)}" + (f"; written to {args.output}" if args.output else ""))
    return _write_out(dumps_workflow(wf), args.output)


def _cmd_export(args: argparse.Namespace) -> int:
    from engine.flows.importers import ExportRefused, export_anythingllm
    from engine.graph.model import WorkflowLoadError

    try:
        wf = _load_any(args.file)
        out = export_anythingllm(wf)
    except (WorkflowLoadError, ExportRefused) as err:
        _err(str(err))
        return EXIT_USAGE
    return _write_out(json.dumps(out, ensure_ascii=False, indent=2) + "\n", args.output)


def _cmd_do(args: argparse.Namespace) -> int:
    """Match the library's triggers (no model call); else ask the model once; confirm; run."""
    from engine.flows.dispatch import NoFlowMatches, ask_model_for_flow, match_sentence, routable_flows
    from engine.graph.inputs import has_surrogates
    from engine.flows.library import FlowLibrary, LibraryError, default_library
    from engine.llm.base import LLMError
    from engine.llm.registry import ProviderConfigError, make_resolver

    text = args.text.strip()
    if not text or has_surrogates(text):
        _err("TEXT is empty" if not text else "TEXT is not valid text: it holds bytes that are not UTF-8")
        return EXIT_USAGE
    library = FlowLibrary(args.library, seed=False) if args.library else default_library()
    flows = routable_flows(library)
    matches = match_sentence(text, flows)
    if matches:
        choice = matches[0]
    else:
        if not flows:
            _err("no flow matches: the library has no flows")
            return EXIT_USAGE
        try:
            resolver = make_resolver(args.provider, model=args.model, base_url=args.base_url)
            choice = asyncio.run(ask_model_for_flow(text, flows, resolver, model=args.model or ""))
        except NoFlowMatches as err:
            _err(str(err))
            return EXIT_USAGE
        except (ProviderConfigError, LLMError) as err:
            _err(f"no flow matches: the model could not be asked: {err}")
            return EXIT_USAGE
    out = sys.stderr if args.jsonl else sys.stdout  # with --jsonl, stdout holds only the log's JSON lines
    if args.json:
        out.write(json.dumps(choice.to_json(), ensure_ascii=False, indent=2) + "\n")
    else:
        how = f"trigger \"{choice.pattern}\"" if choice.source == "trigger" else "chosen by the model"
        lines = [f"flow: {choice.flow.name} ({choice.flow.id}) · {how}"]
        lines += [f"  {name} = {json.dumps(value, ensure_ascii=False)}" for name, value in choice.arguments.items()]
        out.write("\n".join(lines + ([] if choice.arguments else ["  (no arguments)"])) + "\n")
    out.flush()
    if args.dry_run:
        return EXIT_OK
    if not args.yes:
        answer = ""
        if sys.stdin is not None and sys.stdin.isatty():
            try:
                answer = input(f"Run {choice.flow.name}? [y/N] ")
            except EOFError:
                answer = ""
        if answer.strip().lower() not in ("y", "yes"):
            _err("not run: not confirmed (pass --yes to run without asking)")
            return EXIT_CANCELLED
    try:
        wf = library.load_path(choice.flow.path)
    except LibraryError as err:
        _err(str(err))
        return EXIT_USAGE
    return _run_loaded(wf, args, str(choice.flow.path), choice.arguments)


def _cmd_validate(args: argparse.Namespace) -> int:
    from engine.graph.model import WorkflowLoadError
    from engine.graph.validate import validate

    try:
        wf = _load_any(args.file)
    except WorkflowLoadError as err:
        if args.json:
            print(json.dumps({"error": str(err)}))
        else:
            _err(str(err))
        return EXIT_USAGE
    from engine.llm.config import web_search_available

    issues = validate(wf, web_search_available=web_search_available(), path=os.path.abspath(args.file))
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


async def _drive(run: Any, decisions: list[tuple[str, str]], recorder: Any, *, resume_first: bool,
                 first_output: str | None = None) -> int:
    """Start (or resume) a run and answer its approvals in order; returns the exit code."""
    from engine.run.events import RunStatus

    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, run.cancel)
        loop.add_signal_handler(signal.SIGTERM, run.cancel)
    except (NotImplementedError, RuntimeError):  # not on the main thread / not supported
        pass
    if resume_first:
        word, note = decisions.pop(0)
        status = await run.resume(word, note, output=first_output)
    else:
        status = await run.start()
    if recorder:
        recorder.settled()
    while status == RunStatus.PAUSED:
        if not decisions:
            node = run.pending_approval
            _err(f"run {run.run_id} is paused at approval '{node}' waiting for a decision")
            if recorder:
                _err(f"continue it with: flowdesk resume {run.run_id} --decide approve   (or reject:NOTE)")
            else:
                _err("pass --decide approve|reject[:NOTE] to answer it")
            return EXIT_PAUSED
        word, note = decisions.pop(0)
        status = await run.resume(word, note)
        if recorder:
            recorder.settled()
    if status == RunStatus.COMPLETED:
        _err(f"run {run.run_id} completed" + (f" (its log: flowdesk show {run.run_id[:8]})" if recorder else ""))
        return EXIT_OK
    if status == RunStatus.CANCELLED:
        _err("run cancelled")
        return EXIT_CANCELLED
    _err(f"run failed: {run.error}")
    return EXIT_FAILED


def _open_store(*, required: bool) -> Any:
    from engine.store import RunStore, StoreError

    try:
        store = RunStore()
        store.recover()
        return store
    except StoreError as err:
        if required:
            _err(str(err))
        else:
            _err(f"warning: {err} The run is not recorded.")
        return None


def _execute(run: Any, store: Any, decisions: list[tuple[str, str]], printer: "_Printer", *,
             workflow_path: str | None = None, resume_first: bool = False, first_output: str | None = None) -> int:
    from engine.store import RunRecorder, StoreError

    recorder = None
    if store is not None:
        try:
            recorder = RunRecorder(store, run, workflow_path=workflow_path, new=not resume_first,
                                   on_commit=printer.committed)
        except StoreError as err:
            _err(f"warning: {err} The run is not recorded.")
    if recorder is None:
        run.add_listener(printer)  # nothing to wait for: printed as it happens
    code = EXIT_CANCELLED
    try:
        code = asyncio.run(_drive(run, decisions, recorder, resume_first=resume_first, first_output=first_output))
    except KeyboardInterrupt:
        code = EXIT_CANCELLED
    finally:
        with _interrupts_ignored():  # a second Ctrl+C must not cut the last batch's commit
            if recorder:
                recorder.close()
    problem = printer.state.provider_problem
    if code == EXIT_FAILED and problem is not None:  # the way out, rather than only the error
        from engine.llm.config import settings_path

        who = f"provider '{problem['provider']}'" if problem.get("provider") else "the model provider"
        if problem.get("model"):  # it answered, without that model: one of its own serves every agent
            from engine.llm.registry import provider_models

            models = provider_models(problem["provider"]) if problem.get("provider") else []
            _err(f"{who} has no model '{problem['model']}': choose one it has for every agent with --model NAME"
                 + (f" (it lists: {', '.join(models[:8])}{', ...' if len(models) > 8 else ''})" if models else ""))
        else:
            _err(f"{who} could not serve the run: start its server or set it up, or choose another with "
                 f"--provider NAME (--provider echo for a dry run; a default can be set as defaultProvider "
                 f"in {settings_path()})")
    if recorder is not None and recorder.error is not None:
        lost = f"{recorder.lost} event{'s' if recorder.lost != 1 else ''}" if recorder.lost else "the run's state"
        where = ("the run's history is not fully recorded" if recorder.row_written
                 else "the run is not in the run history at all")
        _err(f"{where}: {lost} could not be written. {recorder.error}")
        if code in (EXIT_OK, EXIT_PAUSED):  # a run that cannot be looked at or resumed later did not succeed
            return EXIT_FAILED
    return code


@contextmanager
def _interrupts_ignored() -> Iterator[None]:
    """SIGINT ignored meanwhile (on the main thread; elsewhere signals are not ours to set)."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _cmd_run(args: argparse.Namespace) -> int:
    from engine.graph.inputs import has_surrogates
    from engine.graph.model import WorkflowLoadError

    if args.input is not None and has_surrogates(args.input):
        _err("--input is not valid text: it holds bytes that are not UTF-8")
        return EXIT_USAGE
    try:
        wf = _load_any(args.file)
    except WorkflowLoadError as err:
        _err(str(err))
        return EXIT_USAGE
    return _run_loaded(wf, args, args.file)


def _run_loaded(wf: Any, args: argparse.Namespace, path: str, given: dict[str, Any] | None = None) -> int:
    """``flowdesk run`` from a loaded workflow (``given``: run variables, from ``do``)."""
    from engine.llm.registry import ProviderConfigError, make_resolver
    from engine.graph.validate import validate

    if args.max_visits < 1:
        _err("--max-visits must be at least 1")
        return EXIT_USAGE
    arguments = _run_arguments(wf, args.var, given)
    if arguments is None:
        return EXIT_USAGE
    issues = validate(wf, path=os.path.abspath(path))
    errors = [i for i in issues if i.is_error]
    if errors:
        for i in errors:
            _err(f"error: {i.message} ({i.code})")
        _err(f"{path} has {len(errors)} error{'s' if len(errors) != 1 else ''}; the run was not started")
        return EXIT_FAILED
    if not args.provider and not args.base_url:
        from engine.llm.discovery import default_provider_problem, describe, needs_default_provider, survey
        from engine.llm.registry import NoProviderConfigured

        problem = default_provider_problem() if needs_default_provider(wf) else None
        if problem is not None:  # said once, before the run, rather than by every agent
            _err(describe(survey()) if isinstance(problem, NoProviderConfigured) else str(problem))
            return EXIT_USAGE
    try:
        resolver = make_resolver(args.provider, model=args.model, base_url=args.base_url)
    except ProviderConfigError as err:
        _err(str(err))
        return EXIT_USAGE
    from engine.run.scheduler import Run

    printer = _Printer(sys.stdout, wf, args.jsonl)
    # Kept for a resume in another process; credentials in the base URL are not (see _stored_base_url).
    meta = {k: v for k, v in (("provider", args.provider), ("model", args.model),
                              ("baseUrl", _stored_base_url(args.base_url))) if v}
    if args.base_url and _stored_base_url(args.base_url) != args.base_url:
        meta["baseUrlCredentials"] = True  # resume says to pass --base-url again
    store = None if args.no_store else _open_store(required=False)
    reuse = None
    from_node, reuse_id = getattr(args, "from_node", None), getattr(args, "reuse", None)
    if from_node is not None:
        if wf.node(from_node) is None:
            _err(f"--from: {path} has no node '{from_node}'")
            return EXIT_USAGE
        reuse = _reuse_source(args, wf, store)
        if reuse is None:
            return EXIT_USAGE
    elif reuse_id:
        _err("--reuse goes with --from NODE (the node to run from)")
        return EXIT_USAGE
    run = Run(wf, resolver, initial_input=args.input, max_visits=args.max_visits, check=False,
              meta=meta, keep_events=False,  # printed and stored as they happen; no need to hold them
              variables=arguments, path=os.path.abspath(path), reuse_from=reuse or None, start_at=from_node,
              store=store)
    return _execute(run, store, list(args.decide), printer, workflow_path=os.path.abspath(path))


def _reuse_source(args: argparse.Namespace, wf: Any, store: Any) -> dict[str, Any] | None:
    """The recorded executions a ``--from`` run reuses (None, with the reason printed, when there are none)."""
    if store is None:
        _err("--from needs the run history (it holds the recorded outputs to reuse)")
        return None
    if args.reuse:
        info = store.find_run(args.reuse)
        if info is None:
            _err(f"--reuse: there is no run '{args.reuse}' in the run history (see: flowdesk runs)")
            return None
        run_id = info.id
    else:
        run_id = store.last_run_of(workflow_path=os.path.abspath(args.file), workflow_name=wf.display_name())
        if run_id is None:
            _err(f"--from: {args.file} has no earlier run to reuse; run it once first (or pass --reuse RUN_ID)")
            return None
    recorded = store.recorded_steps(run_id)
    if not recorded:
        _err(f"note: run {run_id[:12]} has no recorded outputs left (cleared or evicted); every node runs")
    return recorded or {}


def _stored_base_url(url: str | None) -> str | None:
    """The base URL as a run record keeps it: without ``user:password@`` (a secret)."""
    if not url:
        return url
    from engine.llm.config import split_url_credentials

    return split_url_credentials(url)[0]


def _find_run(run_id: str) -> tuple[Any, Any] | None:
    """The store and a run by id (or unique prefix); None, with the reason printed, if there is none."""
    store = _open_store(required=True)
    if store is None:
        return None
    info = store.find_run(run_id)
    if info is None:
        matches = store.matching_run_ids(run_id, limit=6) if len(run_id) >= 4 else []
        if len(matches) > 1:
            more = ", ..." if len(matches) > 5 else ""
            _err(f"the run id '{run_id}' is ambiguous: it starts {'more than 5' if more else len(matches)} runs "
                 f"({', '.join(matches[:5])}{more}); give more of it")
        else:
            _err(f"there is no run '{run_id}' in the run history (see: flowdesk runs)")
        return None
    return store, info


def _cmd_resume(args: argparse.Namespace) -> int:
    from engine.llm.registry import ProviderConfigError, make_resolver
    from engine.run.scheduler import Run
    from engine.store import StoreError

    output = None
    if args.output is not None:
        output = _text_arg(args.output, "--output")
        if output is None:
            return EXIT_USAGE
        if not args.decide:
            _err("--output goes with --decide approve|reject (the decision it comes with)")
            return EXIT_USAGE
    found = _find_run(args.run_id)
    if found is None:
        return EXIT_USAGE
    store, info = found
    snap = store.snapshot_of(info.id)
    if info.status == "paused" and snap is None:
        _err(f"run {info.id} is paused but its state was not saved; it cannot be resumed")
        return EXIT_USAGE
    meta = (snap or {}).get("meta") or {}
    if meta.get("baseUrlCredentials") and not args.base_url:
        _err("note: the run's --base-url had credentials, which are not stored; pass --base-url again if the "
             "server needs them")
    try:
        # The provider settings of the original run apply unless new ones are given.
        resolver = make_resolver(args.provider or meta.get("provider"), model=args.model or meta.get("model"),
                                 base_url=args.base_url or meta.get("baseUrl"))
        wf = store.workflow_of(info.id)
        store.claim_for_resume(info.id)
    except (ProviderConfigError, StoreError) as err:
        _err(str(err))
        return EXIT_USAGE
    printer = _Printer(sys.stdout, wf, args.jsonl)
    if not args.jsonl:  # the summary counts what happened before the pause too
        printer.state.apply_many(store.iter_events(info.id))
    run = Run.restore(snap, resolver, workflow=wf, check=False)
    return _execute(run, store, list(args.decide), printer, resume_first=True, first_output=output)


def _text_arg(value: str, option: str) -> str | None:
    """TEXT, or the text of FILE for @FILE (None, with the reason printed, when it cannot be read)."""
    if not value.startswith("@"):
        return value
    try:
        with open(value[1:], encoding="utf-8") as f:
            return f.read()
    except OSError as err:
        _err(f"{option}: cannot read {value[1:]}: {err.strerror or err}")
    except UnicodeDecodeError:
        _err(f"{option}: {value[1:]} is not UTF-8 text")
    return None


def _cmd_diff(args: argparse.Namespace) -> int:
    from engine.run.diff import diff_runs, format_diff
    from engine.store import StoreError

    found = _find_run(args.run_a)
    if found is None:
        return EXIT_USAGE
    store, a = found
    b = store.find_run(args.run_b)
    if b is None:
        _err(f"there is no run '{args.run_b}' in the run history (see: flowdesk runs)")
        return EXIT_USAGE
    try:
        result = diff_runs(store, a.id, b.id)
    except StoreError as err:
        _err(str(err))
        return EXIT_USAGE
    if args.json:
        print(json.dumps(result, ensure_ascii=False, indent=2))
    else:
        print(format_diff(result))
    return EXIT_OK


def _cmd_repair(args: argparse.Namespace) -> int:
    from engine.llm.registry import ProviderConfigError, make_resolver
    from engine.llm.base import LLMError
    from engine.graph.model import atomic_write_text, dumps_workflow, load_workflow, WorkflowLoadError
    from engine.flows.repair import RepairError, apply_repair, failed_node, propose_repair
    from engine.run.state import RunState
    from engine.store import StoreError

    found = _find_run(args.run_id)
    if found is None:
        return EXIT_USAGE
    store, info = found
    try:
        wf = store.workflow_of(info.id)
        state = RunState.of(wf, store.iter_events(info.id))
    except StoreError as err:
        _err(str(err))
        return EXIT_USAGE
    failed = failed_node(state)
    if failed is None:
        _err(f"run {info.id[:12]} has no failed node to repair")
        return EXIT_USAGE
    node_id, input_text, error = failed
    try:
        resolver = make_resolver(args.provider, model=args.model, base_url=args.base_url)
        from engine.llm.base import AgentInvocation

        provider = resolver(AgentInvocation(node_id=node_id, name="Repair", system_prompt="", user_content="",
                                            model=args.model or "", reasoning_effort="low", tools={}, subagents=[]))
        proposal = asyncio.run(propose_repair(provider, wf, node_id, input_text, error, model=args.model or ""))
    except (ProviderConfigError, LLMError) as err:
        _err(f"the repair request failed: {err}")
        return EXIT_FAILED
    except RepairError as err:
        _err(f"the proposed repair was refused: {err}")
        return EXIT_FAILED
    if args.json:
        print(json.dumps(proposal.to_json(), ensure_ascii=False, indent=2))
    else:
        node = wf.node(node_id)
        print(f"repair of {node.title if node else node_id} [{node_id}]: {proposal.reason}")
        for f, before, after in proposal.changes:
            print(f"  {f}: {json.dumps(before, ensure_ascii=False)} → {json.dumps(after, ensure_ascii=False)}")
    if not args.apply:
        return EXIT_OK
    path = args.file or info.workflow_path
    if not path:
        _err("the run does not say which file it was started from; pass --file PATH")
        return EXIT_USAGE
    try:
        current = load_workflow(path)
    except WorkflowLoadError as err:
        _err(str(err))
        return EXIT_USAGE
    if current.node(node_id) is None:
        _err(f"{path} has no node '{node_id}' any more; nothing written")
        return EXIT_USAGE
    if not args.yes:
        sys.stderr.write(f"write the patched workflow to {path}? [y/N] ")
        sys.stderr.flush()
        answer = sys.stdin.readline().strip().lower()
        if answer not in ("y", "yes"):
            _err("nothing written")
            return EXIT_OK
    try:
        patched = apply_repair(current, proposal)
        atomic_write_text(path, dumps_workflow(patched))
    except (RepairError, OSError) as err:
        _err(f"the workflow could not be written: {err}")
        return EXIT_FAILED
    _err(f"written: {path} (run it again from the node: flowdesk run {path} --from {node_id})")
    return EXIT_OK


def _cmd_runs(args: argparse.Namespace) -> int:
    from engine.store import StoreError

    store = _open_store(required=True)
    if store is None:
        return EXIT_USAGE
    try:
        total = store.count_runs(workflow=args.workflow, status=args.status)
        runs = store.list_runs(workflow=args.workflow, status=args.status, limit=args.limit, offset=args.offset)
    except StoreError as err:
        _err(str(err))
        return EXIT_USAGE
    from engine.run.costs import format_cost, stored_run_costs

    try:
        spent = stored_run_costs(store, [r.id for r in runs])  # as the history prices them
    except StoreError as err:
        _err(str(err))
        return EXIT_USAGE
    if args.json:
        try:
            counts = store.event_counts(r.id for r in runs)
        except StoreError as err:
            _err(str(err))
            return EXIT_USAGE
        print(json.dumps({"total": total, "offset": args.offset,
                          "runs": [{**r.to_json(), "eventCount": counts.get(r.id, 0),
                                    "tokens": spent.get(r.id, (0, None))[0], "cost": spent.get(r.id, (0, None))[1]}
                                   for r in runs]},
                         ensure_ascii=False, indent=2))
        return EXIT_OK
    print(RUNS_HEADER)
    for r in runs:
        tokens, cost = spent.get(r.id, (0, None))
        used = (f"{tokens:,}" + (f" · {format_cost(cost)}" if cost is not None else "")) if tokens else ""
        print(runs_line(r.id, r.status, r.started_at, r.duration, r.workflow_name, r.input_summary,
                        "" if r.fully_recorded else "  [not fully recorded]", spent=used))
    shown = f"{args.offset + 1}-{args.offset + len(runs)}" if runs else "none"
    print(f"{shown} of {total} run{'s' if total != 1 else ''}")
    return EXIT_OK


RUNS_HEADER = f"{'RUN':<12} {'STATUS':<12} {'STARTED':<20} {'DURATION':>10} {'TOKENS · COST':>16}  WORKFLOW / INPUT"


def runs_line(run_id: str, status: str, started_at: float, duration: float | None, workflow: str, given: str,
              note: str = "", *, spent: str = "") -> str:
    """One row of ``flowdesk runs`` (local or ``--temporal``): what the run was given on one line,
    cut at 40; ``spent``: its tokens and cost (``391 · $0``), empty when it used none."""
    text = given.replace("\n", " ")
    text = text if len(text) < 40 else text[:37] + "..."
    return (f"{run_id[:12]:<12} {status:<12} {format_timestamp(started_at)[:19].replace('T', ' '):<20} "
            f"{format_duration(duration):>10} {spent:>16}  {workflow}" + (f" — {text}" if text else "") + note)


def _cmd_show(args: argparse.Namespace) -> int:
    from engine.store import StoreError

    found = _find_run(args.run_id)
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
        printer = _Printer(sys.stdout, wf, False)
        for ev in store.iter_events(info.id):
            printer(ev)
        if info.status not in ("paused", "completed", "failed", "cancelled"):  # no final status in the log
            print(printer.summary())
    except StoreError as err:
        _err(str(err))
        return EXIT_USAGE
    return EXIT_OK


def _cmd_flows(args: argparse.Namespace) -> int:
    from engine.flows.library import default_library

    flows = default_library().flows()
    if args.json:
        print(json.dumps({"folders": [str(f) for f in default_library().folders],
                          "flows": [f.to_json() for f in flows]}, ensure_ascii=False, indent=2))
        return EXIT_OK
    if not flows:
        print(f"The flow library is empty ({default_library().primary}).")
        return EXIT_OK
    for f in flows:
        if f.error:
            print(f"! {f.path}: {f.error}")
            continue
        state = "" if f.enabled else "  (off)"
        print(f"{f.name}  [{f.id}]{state}")
        if f.description:
            print(f"    {' '.join(f.description.split())}")
        if f.parameters:
            params = ", ".join(f"{p.name}: {p.type}{'' if p.required else '?'}" for p in f.parameters)
            print(f"    parameters: {params}")
        for t in f.triggers:
            print(f"    trigger: {t}")
        print(f"    {f.path}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):  # a path or text that is not UTF-8 is escaped, never a traceback
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError):
            pass
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse's usage errors exit 2 already; keep --help at 0
        return int(exc.code or 0)
    if args.command == "validate":
        return _cmd_validate(args)
    from engine.temporal.cli import dispatch as _temporal_dispatch, wants as _temporal_wanted

    if _temporal_wanted(args):
        return _temporal_dispatch(args)
    handler = {"run": _cmd_run, "resume": _cmd_resume, "runs": _cmd_runs, "show": _cmd_show, "diff": _cmd_diff,
               "repair": _cmd_repair, "flows": _cmd_flows, "import": _cmd_import, "export": _cmd_export,
               "do": _cmd_do}.get(args.command)
    if handler is not None:
        try:
            return handler(args)
        except BrokenPipeError:  # `flowdesk show ... | head`
            return EXIT_OK
    parser.print_help()
    return EXIT_USAGE

