"""Running: ``run`` (a file, or from a node reusing an earlier run's outputs) and ``resume``
(a paused run's approval answered); the approvals answered in order, the run recorded as it
goes and printed once committed, Ctrl+C a cancel.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from engine.cli import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, EXIT_OUTPUT_CLOSED, EXIT_PAUSED, EXIT_USAGE
from engine.cli.files import load_any
from engine.cli.printer import FRAME, Printer, print_err
from engine.cli.runs import find_run, open_store
from engine.errors import FlowdeskError
from engine.flows.library import default_library
from engine.flows.repair import RepairError, apply_repair, failed_node, propose_repair
from engine.graph.formats import detect_flow_format
from engine.graph.inputs import has_surrogates
from engine.graph.model import WorkflowLoadError, atomic_write_text, dumps_workflow
from engine.graph.validate import validate
from engine.graph.variables import VariableError, json_safe, parse_var_argument, run_variables
from engine.llm.base import AgentInvocation, LLMError
from engine.llm.config import settings_path, split_url_credentials
from engine.llm.discovery import default_provider_problem, describe, needs_default_provider, survey
from engine.llm.registry import NoProviderConfigured, ProviderConfigError, make_resolver, provider_models
from engine.nodes.approval import option_labels
from engine.run.events import RunStatus, format_duration
from engine.run.scheduler import Run, normalise_decision
from engine.store import RunRecorder, StoreError

__all__ = ["cmd_run", "cmd_resume", "run_loaded", "run_arguments", "stored_base_url", "run_result"]


def run_arguments(wf: Any, var_texts: list[str], given: dict[str, Any] | None = None) -> dict[str, Any] | None:
    """A run's arguments: ``given`` (`do`'s), overridden by each ``--var NAME=VALUE``, checked
    against the workflow's variables; None (the reason printed) when one is refused, before the
    run starts (docs/design.md: exit 2)."""
    arguments: dict[str, Any] = dict(given or {})
    for text in var_texts:
        try:
            name, value = parse_var_argument(text)
        except ValueError as err:
            print_err(str(err))
            return None
        if has_surrogates(value):
            print_err(f"--var {name}: the value is not valid text (bytes that are not UTF-8)")
            return None
        arguments[name] = value
    try:
        run_variables(wf, arguments)
    except VariableError as err:
        print_err(str(err))
        return None
    return arguments


class _Output:
    """What the command does when the reader of the printed run goes away (``flowdesk run ... |
    head -5``; the printer notices the closed pipe): as a Unix tool dies of SIGPIPE, nothing
    more is written (stdout points to /dev/null, so no flush at exit fails either) and the run
    is cancelled: nobody reads it. The command then exits 141, quietly."""

    def __init__(self, printer: Printer, run: Any) -> None:
        self.printer = printer
        self.run = run
        self.loop: asyncio.AbstractEventLoop | None = None  # set once the run's loop runs
        printer.on_broken = self._reader_gone

    @property
    def closed(self) -> bool:
        return self.printer.broken

    def committed(self, events: list[Any], recorded: bool) -> None:
        self.printer.committed(events, recorded)

    def _reader_gone(self) -> None:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass
        loop = self.loop
        if loop is not None and not loop.is_closed():  # (this may be the store's writer thread)
            try:
                loop.call_soon_threadsafe(self.run.cancel, "The output was closed: nobody reads the run any more.")
            except RuntimeError:  # the loop has just closed: the run is over anyway
                pass


async def _drive(
    run: Any,
    decisions: list[tuple[str, str]],
    recorder: Any,
    *,
    resume_first: bool,
    first_output: str | None = None,
    output: _Output | None = None,
    first_arguments: Any = None,
) -> int:
    """Start (or resume) a run and answer its approvals in order; returns the exit code."""
    loop = asyncio.get_running_loop()
    if output is not None:
        output.loop = loop
    try:
        loop.add_signal_handler(signal.SIGINT, run.cancel)
        loop.add_signal_handler(signal.SIGTERM, run.cancel)
    except (NotImplementedError, RuntimeError):  # not on the main thread / not supported
        pass
    try:
        if resume_first:
            word, note = decisions.pop(0)
            status = await _answer(run, word, note, first_output, first_arguments)
        else:
            status = await run.start()
        if recorder:
            recorder.settled()
        while status == RunStatus.PAUSED:
            if output is not None and output.closed:
                return EXIT_OUTPUT_CLOSED
            if not decisions:
                timeout = run.pause_timeout()
                if timeout is not None:  # the approval times out: wait for its deadline here
                    if await _wait_deadline(run, timeout, recorder):
                        return EXIT_PAUSED  # answered by another process meanwhile: it goes on there
                    status = await run.expire() if run.status == RunStatus.PAUSED else await run.wait()
                    if recorder:
                        recorder.settled()
                    continue
                node = run.pending_approval
                extra = getattr(run, "waiting_extra", lambda: None)() or {}
                if extra.get("kind") == "tool_call":
                    tool = f"{extra['server']}/{extra.get('tool')}" if extra.get("server") else extra.get("tool")
                    print_err(
                        f"run {run.run_id} is paused at '{node}': its call of '{tool}' with "
                        f"{json.dumps(extra.get('arguments'), ensure_ascii=False)} waits for approval "
                        "(--arguments JSON on resume calls it with other arguments)"
                    )
                else:
                    print_err(f"run {run.run_id} is paused at approval '{node}' waiting for a decision")
                if recorder:
                    print_err(
                        f"continue it with: flowdesk resume {run.run_id} --decide {_choices(run)}   (or reject:NOTE)"
                    )
                else:
                    print_err(f"pass --decide {_choices(run)}[:NOTE] to answer it")
                return EXIT_PAUSED
            word, note = decisions.pop(0)
            status = await _answer(run, word, note, None)
            if recorder:
                recorder.settled()
    except ValueError as err:  # a decision the approval does not take: the run stays paused
        print_err(str(err))
        if recorder:
            print_err(f"the run is paused; continue it with: flowdesk resume {run.run_id} --decide {_choices(run)}")
        return EXIT_USAGE
    if output is not None and output.closed:  # `| head`: the reader left; say nothing more
        return EXIT_OUTPUT_CLOSED
    # Every ended run names itself (README: "its id is printed when it ends"): the id is what
    # `show` and `repair` take.
    log = f" (its log: flowdesk show {run.run_id[:8]})" if recorder else ""
    if status == RunStatus.COMPLETED:
        print_err(f"run {run.run_id} completed{log}")
        return EXIT_OK
    if status == RunStatus.CANCELLED:
        print_err(f"run {run.run_id} cancelled{log}")
        return EXIT_CANCELLED
    print_err(f"run {run.run_id} failed: {run.error}")
    if recorder:
        print_err(
            f"its log: flowdesk show {run.run_id[:8]}; a fix proposed by the model: flowdesk repair {run.run_id[:8]}"
        )
    return EXIT_FAILED


def _choices(run: Any) -> str:
    return "|".join(run.decisions())


async def _answer(run: Any, word: str, note: str, output: Any, arguments: Any = None) -> RunStatus:
    """Resume with a decision, unless the approval's deadline has passed: it then takes its
    ``onTimeout`` decision (said so) and ``word`` is not used."""
    timeout = run.pause_timeout() if hasattr(run, "pause_timeout") else None
    if timeout is not None and run.overdue():
        when = datetime.fromtimestamp(timeout[0]).strftime("%Y-%m-%d %H:%M:%S")
        print_err(
            f"the approval '{run.pending_approval}' timed out at {when}: it takes '{timeout[1]}' "
            f"(the decision '{word}' is not used)"
        )
        return await run.expire()
    if arguments is not None:  # a tool call's arguments, edited
        return await run.resume(word, note, output=output, arguments=arguments)
    return await run.resume(word, note, output=output)


async def _wait_deadline(run: Any, timeout: tuple[float, str], recorder: Any) -> bool:
    """Wait until the pending approval's deadline (said once); True when another process
    answered the run meanwhile (it is no longer paused in the run history)."""
    deadline, decision = timeout
    when = datetime.fromtimestamp(deadline).strftime("%H:%M:%S")
    left = max(0.0, deadline - time.time())
    print_err(
        f"run {run.run_id} is paused at approval '{run.pending_approval}' until {when} "
        f"(in {format_duration(left)}); then it takes '{decision}'"
        + (f". Answer it meanwhile with: flowdesk resume {run.run_id} --decide {_choices(run)}" if recorder else "")
    )
    store = recorder.store if recorder else None
    while run.status == RunStatus.PAUSED:
        left = deadline - time.time()
        if left <= 0:
            return False
        await asyncio.sleep(min(1.0, left))
        if store is not None:
            try:
                info = store.get_run(run.run_id)
            except StoreError:
                continue
            if info is not None and info.status != "paused":
                print_err(f"run {run.run_id} was answered by another process; it goes on there")
                return True
    return False


def _execute(
    run: Any,
    store: Any,
    decisions: list[tuple[str, str]],
    printer: Printer,
    *,
    workflow_path: str | None = None,
    resume_first: bool = False,
    first_output: str | None = None,
    first_arguments: Any = None,
) -> int:
    recorder = None
    output = _Output(printer, run)
    if store is not None:
        try:
            recorder = RunRecorder(
                store, run, workflow_path=workflow_path, new=not resume_first, on_commit=output.committed
            )
        except StoreError as err:
            print_err(f"warning: {err} The run is not recorded.")
    printer.follow(run, recorder)  # printed as it happens, or once committed while recorded
    code = EXIT_CANCELLED
    try:
        with _sigint_kept():
            code = asyncio.run(
                _drive(
                    run,
                    decisions,
                    recorder,
                    resume_first=resume_first,
                    first_output=first_output,
                    output=output,
                    first_arguments=first_arguments,
                )
            )
    except KeyboardInterrupt:
        code = EXIT_CANCELLED
    finally:
        with _interrupts_ignored():  # a second Ctrl+C must not cut the last batch's commit
            if recorder:
                recorder.close()
        printer.finish()
    problem = printer.state.provider_problem
    if code == EXIT_FAILED and problem is not None:  # the way out, rather than only the error
        who = f"provider '{problem['provider']}'" if problem.get("provider") else "the model provider"
        if problem.get("model"):  # it answered, without that model: one of its own serves every agent
            models = provider_models(problem["provider"]) if problem.get("provider") else []
            print_err(
                f"{who} has no model '{problem['model']}': choose one it has for every agent with --model NAME"
                + (f" (it lists: {', '.join(models[:8])}{', ...' if len(models) > 8 else ''})" if models else "")
            )
        else:
            print_err(
                f"{who} could not serve the run: start its server or set it up, or choose another with "
                f"--provider NAME (--provider echo for a dry run; a default can be set as defaultProvider "
                f"in {settings_path()})"
            )
    if recorder is not None and recorder.error is not None:
        lost = f"{recorder.lost} event{'s' if recorder.lost != 1 else ''}" if recorder.lost else "the run's state"
        where = (
            "the run's history is not fully recorded"
            if recorder.row_written
            else "the run is not in the run history at all"
        )
        print_err(f"{where}: {lost} could not be written. {recorder.error}")
        if code in (EXIT_OK, EXIT_PAUSED):  # a run that cannot be looked at or resumed later did not succeed
            return EXIT_FAILED
    return code


@contextmanager
def _sigint_kept() -> Iterator[None]:
    """Ctrl+C's handler given back as it was once the run's loop has closed (the loop resets it to
    Python's KeyboardInterrupt, a traceback in the instant before the command exits; the
    ``flowdesk`` launcher's is a quiet cancel)."""
    try:
        before = signal.getsignal(signal.SIGINT)
    except ValueError:
        before = None
    try:
        yield
    finally:
        if before is not None and before is not signal.getsignal(signal.SIGINT):
            try:
                signal.signal(signal.SIGINT, before)
            except (ValueError, TypeError):  # not the main thread, or a handler set outside Python
                pass


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


def cmd_run(args: argparse.Namespace) -> int:
    if args.input is not None and has_surrogates(args.input):
        print_err("--input is not valid text: it holds bytes that are not UTF-8")
        return EXIT_USAGE
    try:
        wf = load_any(args.file)
    except WorkflowLoadError as err:
        print_err(str(err))
        return EXIT_USAGE
    return run_loaded(wf, args, args.file)


def _unknown_decisions(wf: Any, decisions: list[tuple[str, str]]) -> list[str]:
    """The ``--decide`` words that cannot be an answer in ``wf``: anything but approve/reject when
    no approval offers options (a typo would otherwise wait, unused, for an approval that never
    asks). With options, the approval reached says which it takes (and the run stays paused);
    a workflow that runs other flows may pause in theirs: not checked."""
    for node in wf.nodes:
        if node.type in ("flow", "action") or (node.type == "approval" and option_labels(node.data)):
            return []
    return [word for word, _note in decisions if word.lower() not in ("approve", "reject")]


def run_loaded(
    wf: Any,
    args: argparse.Namespace,
    path: str,
    given: dict[str, Any] | None = None,
    library: Any = None,
    keep: dict[str, Any] | None = None,
) -> int:
    """``flowdesk run`` from a loaded workflow (``given``: run variables, from ``do``; ``library``:
    where a library flow's run is counted, default the user's)."""
    if args.max_visits < 1:
        print_err("--max-visits must be at least 1")
        return EXIT_USAGE
    arguments = run_arguments(wf, args.var, given)
    if arguments is None:
        return EXIT_USAGE
    issues = validate(wf, path=os.path.abspath(path))
    errors = [i for i in issues if i.is_error]
    if errors:
        for i in errors:
            print_err(f"error: {i.message} ({i.code})")
        print_err(f"{path} has {len(errors)} error{'s' if len(errors) != 1 else ''}; the run was not started")
        return EXIT_FAILED
    if not args.provider and not args.base_url:
        problem = default_provider_problem() if needs_default_provider(wf) else None
        if problem is not None:  # said once, before the run, rather than by every agent
            print_err(describe(survey()) if isinstance(problem, NoProviderConfigured) else str(problem))
            return EXIT_USAGE
    try:
        resolver = make_resolver(args.provider, model=args.model, base_url=args.base_url)
    except ProviderConfigError as err:
        print_err(str(err))
        return EXIT_USAGE
    as_json = bool(getattr(args, "run_json", False))
    # With --json, stdout holds only the result object; the run's log goes to stderr (so does
    # the log of a flow run by `do --json`: stdout holds only its choice).
    log_out = sys.stderr if as_json or getattr(args, "log_to_stderr", False) else sys.stdout
    printer = Printer(log_out, wf, args.jsonl and not as_json)
    # Kept for a resume in another process; credentials in the base URL are not (see stored_base_url).
    meta = {
        k: v
        for k, v in (("provider", args.provider), ("model", args.model), ("baseUrl", stored_base_url(args.base_url)))
        if v
    }
    if args.base_url and stored_base_url(args.base_url) != args.base_url:
        meta["baseUrlCredentials"] = True  # resume says to pass --base-url again
    store = None if args.no_store else open_store(required=False)
    reuse = None
    from_node, reuse_id = getattr(args, "from_node", None), getattr(args, "reuse", None)
    if from_node is not None:
        if wf.node(from_node) is None:
            print_err(f"--from: {path} has no node '{from_node}'")
            return EXIT_USAGE
        reuse = _reuse_source(args, wf, store)
        if reuse is None:
            return EXIT_USAGE
    elif reuse_id:
        print_err("--reuse goes with --from NODE (the node to run from)")
        return EXIT_USAGE
    unknown = _unknown_decisions(wf, list(args.decide))
    if unknown:
        print_err(
            f"--decide {unknown[0]}: this workflow's approvals take approve or reject "
            "(an approval's own options add more)"
        )
        return EXIT_USAGE
    run = Run(
        wf,
        resolver,
        initial_input=args.input,
        max_visits=args.max_visits,
        check=False,
        meta=meta,
        keep_events=False,  # printed and stored as they happen; no need to hold them
        variables=arguments,
        path=os.path.abspath(path),
        reuse_from=reuse or None,
        start_at=from_node,
        store=store,
        delta_interval=FRAME,
    )  # streamed text in frames of FRAME seconds at most
    code = _execute(run, store, list(args.decide), printer, workflow_path=os.path.abspath(path))
    attempts = max(0, int(getattr(args, "repair_attempts", 1) or 0)) if getattr(args, "repair", False) else 0
    if code == EXIT_FAILED and attempts and store is None:
        print_err("--repair needs the run history to run again from the failed node (not with --no-store)")
    while code == EXIT_FAILED and attempts > 0 and store is not None:
        attempts -= 1
        repaired = _repair(wf, printer.state, args, path, resolver)
        if repaired is None:
            break
        wf, node_id = repaired
        reuse = store.recorded_steps(run.run_id) or {}
        printer = Printer(log_out, wf, args.jsonl and not as_json)
        run = Run(
            wf,
            resolver,
            initial_input=args.input,
            max_visits=args.max_visits,
            check=False,
            meta=meta,
            keep_events=False,
            variables=arguments,
            path=os.path.abspath(path),
            reuse_from=reuse,
            start_at=node_id,
            store=store,
            delta_interval=FRAME,
        )
        print_err(f"running again from '{node_id}', reusing what ran before it")
        code = _execute(run, store, list(args.decide), printer, workflow_path=os.path.abspath(path))
    if keep is not None:  # the caller reads the run once it ends (`do`'s "and then")
        keep["run"] = run
    _count_use(library, path)
    if as_json and code != EXIT_OUTPUT_CLOSED:
        sys.stdout.write(json.dumps(run_result(run, printer.state), ensure_ascii=False, indent=2) + "\n")
        sys.stdout.flush()
    return code


def _repair(wf: Any, state: Any, args: argparse.Namespace, path: str, resolver: Any) -> tuple[Any, str] | None:
    """``run --repair``: the model's patch of the failed node, shown, confirmed (unless
    ``--yes``) and written to the file; ``(patched workflow, node id)``, or None (said why)."""
    failed = failed_node(state)
    if failed is None:
        return None
    node_id, input_text, error = failed
    try:
        provider = resolver(AgentInvocation(node_id, "Repair", "", "", args.model or "", "low", {}, []))
        proposal = asyncio.run(propose_repair(provider, wf, node_id, input_text, error, model=args.model or ""))
    except (ProviderConfigError, LLMError) as err:
        print_err(f"the repair request failed: {err}")
        return None
    except RepairError as err:
        print_err(f"the proposed repair was refused: {err}")
        return None
    print_err(f"repair of '{node_id}': {proposal.reason}")
    for name, before, after in proposal.changes:
        print_err(f"  {name}: {json.dumps(before, ensure_ascii=False)} → {json.dumps(after, ensure_ascii=False)}")
    if not getattr(args, "yes", False):
        sys.stderr.write("apply it and run again from the node? [y/N] ")
        sys.stderr.flush()
        answer = sys.stdin.readline().strip().lower() if sys.stdin is not None else ""
        if answer not in ("y", "yes"):
            print_err("not applied")
            return None
    try:
        patched = apply_repair(wf, proposal)
    except RepairError as err:
        print_err(f"the repair could not be applied: {err}")
        return None
    if path.endswith(".json") and os.path.isfile(path) and detect_flow_format(_read_json(path)) == "flowdesk":
        try:
            atomic_write_text(path, dumps_workflow(patched))
            print_err(f"written: {path}")
        except OSError as err:
            print_err(f"warning: the repaired workflow could not be written to {path}: {err.strerror or err}")
    else:
        print_err(f"note: {path} is not a Flowdesk workflow file; the repair is used for this run only")
    return patched, node_id


def _read_json(path: str) -> Any:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _count_use(library: Any, path: str) -> None:
    """A run of a library flow counts in the library's usage (runs, last run)."""
    try:
        lib = library if library is not None else default_library()
        entry = lib.entry_for_path(path)
        if entry is not None:
            lib.record_run(entry.id)
    except (OSError, FlowdeskError):
        pass


def run_result(run: Any, state: Any) -> dict[str, Any]:
    """``flowdesk run --json``: ``{runId, status, output, vars, results: [{nodeId, status,
    durationMs, output}]}`` (seed 001's run result), nodes in the order they ran."""
    outcomes = run.outcomes
    results = []
    for node_id in outcomes:
        details = state.details.get(node_id)
        duration = details.duration if details is not None else None
        results.append(
            {
                "nodeId": node_id,
                "status": str(outcomes[node_id]),
                "durationMs": None if duration is None else round(duration * 1000),
                "output": json_safe({"o": run.outputs.get(node_id)})["o"],
            }
        )
    return {
        "runId": run.run_id,
        "status": str(run.status),
        "output": json_safe({"o": run.result})["o"],
        "vars": json_safe(run.variables or {}),
        "results": results,
    }


def _reuse_source(args: argparse.Namespace, wf: Any, store: Any) -> dict[str, Any] | None:
    """The recorded executions a ``--from`` run reuses (None, with the reason printed, when there are none)."""
    if store is None:
        print_err("--from needs the run history (it holds the recorded outputs to reuse)")
        return None
    if args.reuse:
        info = store.find_run(args.reuse)
        if info is None:
            print_err(f"--reuse: there is no run '{args.reuse}' in the run history (see: flowdesk runs)")
            return None
        run_id = info.id
    else:
        run_id = store.last_run_of(workflow_path=os.path.abspath(args.file), workflow_name=wf.display_name())
        if run_id is None:
            print_err(f"--from: {args.file} has no earlier run to reuse; run it once first (or pass --reuse RUN_ID)")
            return None
    recorded = store.recorded_steps(run_id)
    if not recorded:
        print_err(f"note: run {run_id[:12]} has no recorded outputs left (cleared or evicted); every node runs")
    return recorded or {}


def stored_base_url(url: str | None) -> str | None:
    """The base URL as a run record keeps it: without ``user:password@`` (a secret)."""
    if not url:
        return url
    return split_url_credentials(url)[0]


def cmd_resume(args: argparse.Namespace) -> int:
    output = None
    if args.output is not None:
        output = _text_arg(args.output, "--output")
        if output is None:
            return EXIT_USAGE
        if not args.decide:
            print_err("--output goes with --decide approve|reject|LABEL (the decision it comes with)")
            return EXIT_USAGE
    arguments = None
    if getattr(args, "arguments", None) is not None:
        arguments = _json_object_arg(args.arguments, "--arguments")
        if arguments is None:
            return EXIT_USAGE
    found = find_run(args.run_id)
    if found is None:
        return EXIT_USAGE
    store, info = found
    snap = store.snapshot_of(info.id)
    if info.status == "paused" and snap is None:
        print_err(f"run {info.id} is paused but its state was not saved; it cannot be resumed")
        return EXIT_USAGE
    meta = (snap or {}).get("meta") or {}
    if meta.get("baseUrlCredentials") and not args.base_url:
        print_err(
            "note: the run's --base-url had credentials, which are not stored; pass --base-url again if the "
            "server needs them"
        )
    try:
        # The provider settings of the original run apply unless new ones are given.
        resolver = make_resolver(
            args.provider or meta.get("provider"),
            model=args.model or meta.get("model"),
            base_url=args.base_url or meta.get("baseUrl"),
        )
        wf = store.workflow_of(info.id)
        run = Run.restore(snap, resolver, workflow=wf, check=False, delta_interval=FRAME) if snap else None
        if run is not None and run.status == RunStatus.PAUSED and not run.overdue():
            word, note = args.decide[0]
            normalise_decision(word, note, options=run.decisions())  # refused before the run is claimed
            if arguments is not None:  # checked against the tool's schema, also before the claim
                problem = run.answer_problem({"decision": word, "note": note, "arguments": arguments})
                if problem:
                    print_err(f"--arguments: {problem}")
                    return EXIT_USAGE
        store.claim_for_resume(info.id)
    except (ProviderConfigError, StoreError) as err:
        print_err(str(err))
        return EXIT_USAGE
    except ValueError as err:  # a decision the approval does not take
        print_err(str(err))
        return EXIT_USAGE
    printer = Printer(sys.stdout, wf, args.jsonl)
    if not args.jsonl:  # the summary counts what happened before the pause too
        printer.state.apply_many(store.iter_events(info.id))
    if run is None:  # (claimed: it was paused, and a paused run without a snapshot was refused above)
        print_err(f"run {info.id} has no saved state; it cannot be resumed")
        return EXIT_USAGE
    return _execute(
        run, store, list(args.decide), printer, resume_first=True, first_output=output, first_arguments=arguments
    )


def _json_object_arg(value: str, option: str) -> dict[str, Any] | None:
    """A JSON object given as text or @FILE (None, with the reason printed, when it is not one)."""
    text = _text_arg(value, option)
    if text is None:
        return None
    try:
        parsed = json.loads(text)
    except ValueError as err:
        print_err(f"{option}: not valid JSON ({err})")
        return None
    if not isinstance(parsed, dict):
        print_err(f"{option}: must be a JSON object of argument names and values")
        return None
    return parsed


def _text_arg(value: str, option: str) -> str | None:
    """TEXT, or the text of FILE for @FILE (None, with the reason printed, when it cannot be read)."""
    if not value.startswith("@"):
        return value
    try:
        with open(value[1:], encoding="utf-8") as f:
            return f.read()
    except OSError as err:
        print_err(f"{option}: cannot read {value[1:]}: {err.strerror or err}")
    except UnicodeDecodeError:
        print_err(f"{option}: {value[1:]} is not UTF-8 text")
    return None
