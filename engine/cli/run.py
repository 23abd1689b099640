"""Running: ``run`` (a file, or from a node reusing an earlier run's outputs) and ``resume``
(a paused run's approval answered): the file loaded and validated, the arguments, provider and
run store set up, ``--repair``'s second try, ``--json``'s result. Driving the run itself (the
approvals answered in order, the run recorded as it goes and printed once committed, Ctrl+C a
cancel) is :mod:`engine.cli.execute`'s.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

from engine.cli import EXIT_FAILED, EXIT_OUTPUT_CLOSED, EXIT_USAGE
from engine.cli.execute import execute
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
from engine.llm.config import split_url_credentials
from engine.llm.discovery import default_provider_problem, describe, needs_default_provider, survey
from engine.llm.registry import NoProviderConfigured, ProviderConfigError, make_resolver
from engine.nodes.approval import option_labels
from engine.run.events import RunStatus
from engine.run.scheduler import Run, normalise_decision
from engine.run.state import RunState
from engine.store import StoreError

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
    errors = validate(wf, path=os.path.abspath(path), warnings=False)  # (a run prints no warnings)
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
    code = execute(run, store, list(args.decide), printer, workflow_path=os.path.abspath(path))
    attempts = max(0, int(getattr(args, "repair_attempts", 1) or 0)) if getattr(args, "repair", False) else 0
    if code == EXIT_FAILED and attempts and store is None:
        print_err("--repair needs the run history to run again from the failed node (not with --no-store)")
    while code == EXIT_FAILED and attempts > 0 and store is not None:
        attempts -= 1
        repaired = _repair(wf, _failed_state(printer, store, run.run_id), args, path, resolver)
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
        code = execute(run, store, list(args.decide), printer, workflow_path=os.path.abspath(path))
    if keep is not None:  # the caller reads the run once it ends (`do`'s "and then")
        keep["run"] = run
    _count_use(library, path)
    if as_json and code != EXIT_OUTPUT_CLOSED:
        sys.stdout.write(json.dumps(run_result(run, printer.state), ensure_ascii=False, indent=2) + "\n")
        sys.stdout.flush()
    return code


def _failed_state(printer: Printer, store: Any, run_id: str) -> Any:
    """The failed run's state: the printer's, which reduces what it prints, unless it printed
    wire lines (``--jsonl`` reduces nothing): then the run's recorded events."""
    if not printer.jsonl:
        return printer.state
    state = RunState(printer.workflow)
    state.apply_many(list(store.iter_events(run_id)))
    return state


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
    return execute(
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
