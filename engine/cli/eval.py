"""``flowdesk eval FILE``: run a workflow's test cases, grade them, print the results.

Exit 0 when every case passes, 1 when one fails (or the workflow does not validate), 2 on a
usage error (a file that cannot be read, no cases, a bad case or flag: the message names it),
4 on Ctrl+C. The table goes to stdout (``--json``: the JSON document instead); a progress bar
to stderr, only on a terminal. Runs and the eval are recorded in the run store; the last
eval's recorded outputs are reused where a node's key did not change (docs/evals.md).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
from pathlib import Path
from typing import Any, TextIO

from engine.cli import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, EXIT_USAGE
from engine.cli.files import load_any
from engine.cli.printer import print_err
from engine.cli.run import stored_base_url
from engine.cli.runs import open_store
from engine.evals.cases import (
    CaseError,
    EvalCase,
    cases_file_for,
    default_expectations,
    parse_expect_option,
    read_cases_file,
    workflow_cases,
)
from engine.evals.history import EvalHistory
from engine.evals.report import format_table, write_junit
from engine.evals.runner import CaseResult, EvalResult, run_eval
from engine.graph.model import WorkflowLoadError
from engine.graph.validate import validate
from engine.graph.variables import VariableError, run_variables
from engine.llm.discovery import default_provider_problem, describe, needs_default_provider, survey
from engine.llm.registry import NoProviderConfigured, ProviderConfigError, make_resolver
from engine.store import StoreError
from engine.temporal import TemporalUnavailable, require_temporal, split_address
from engine.temporal.remote import RemoteRun

__all__ = ["cmd_eval", "load_eval_cases"]


class _Progress:
    """``[#####.....] 3/5 cases  2 failed`` on stderr, redrawn in place; only on a terminal."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total, self.stream = total, stream
        self.done = self.failed = 0
        self.on = total > 0 and stream.isatty()
        self.drawn = 0  # the length of the line last drawn, which clear() blanks

    def draw(self) -> None:
        if not self.on:
            return
        width = 24
        filled = width * self.done // self.total
        failed = f"  {self.failed} failed" if self.failed else ""
        line = f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} cases{failed}  "
        self.drawn = max(self.drawn, len(line))
        self.stream.write("\r" + line)
        self.stream.flush()

    def case_done(self, _index: int, result: CaseResult) -> None:
        self.done += 1
        self.failed += 0 if result.passed else 1
        self.draw()

    def clear(self) -> None:
        if self.on:
            self.stream.write("\r" + " " * self.drawn + "\r")
            self.stream.flush()


def load_eval_cases(wf: Any, path: str, cases_path: str | None, expect_texts: list[str]) -> list[EvalCase]:
    """The cases of an eval: ``--cases F`` (a .jsonl file, or a .csv dataset given ``--expect``
    or the workflow's ``testsExpect``), else the workflow's ``tests`` and ``NAME.tests.jsonl``.
    CaseError when one cannot be used (a duplicate name included: results are kept by name)."""
    expect = [parse_expect_option(t) for t in expect_texts]
    if cases_path:
        if cases_path.lower().endswith(".csv"):
            expect = expect or default_expectations(wf, path)
        cases = read_cases_file(cases_path, expect)
    else:
        cases = workflow_cases(wf, path)
        beside = cases_file_for(path)
        if beside.is_file():
            cases += read_cases_file(beside)
        if expect:
            for case in cases:
                case.expect.extend(expect)
    seen: set[str] = set()
    for case in cases:
        if case.name in seen:
            raise CaseError(f"two cases are named '{case.name}': give each case its own name")
        seen.add(case.name)
    nodes = {n.id for n in wf.nodes}
    for case in cases:
        for exp in case.expect:
            if exp.node is not None and exp.node not in nodes:
                raise CaseError(f"case '{case.name}': {exp.type} names node '{exp.node}', which {path} does not have")
    return cases


def _usage_problem(args: argparse.Namespace) -> str | None:
    if args.concurrency < 1:
        return "--concurrency must be at least 1"
    if args.max_visits < 1:
        return "--max-visits must be at least 1"
    if args.junit:
        folder = Path(args.junit).resolve().parent
        if not folder.is_dir():
            return f"--junit: the folder {folder} does not exist"
        if Path(args.junit).is_dir():
            return f"--junit: {args.junit} is a folder; give a file name"
    return None


def cmd_eval(args: argparse.Namespace) -> int:
    problem = _usage_problem(args)
    if problem:
        print_err(problem)
        return EXIT_USAGE
    try:
        wf = load_any(args.file)
    except WorkflowLoadError as err:
        print_err(str(err))
        return EXIT_USAGE
    path = os.path.abspath(args.file)
    try:
        cases = load_eval_cases(wf, args.file, args.cases, list(args.expect))
    except CaseError as err:
        print_err(str(err))
        return EXIT_USAGE
    if not cases:
        where = (
            f"{args.cases} has no cases"
            if args.cases
            else (
                f"{args.file} has no test cases: add a 'tests' list to it or a {cases_file_for(args.file).name} "
                "beside it (one case a line; see docs/evals.md)"
            )
        )
        print_err(where)
        return EXIT_USAGE
    if not any(case.expect for case in cases):  # every case would pass once its run completes
        print_err(
            "note: no case has an expectation, so a case passes when its run completes "
            "(give --expect TYPE:VALUE, or expectations in the cases)"
        )
    for case in cases:
        try:
            run_variables(wf, case.vars)
        except VariableError as err:
            print_err(f"case '{case.name}': {err}")
            return EXIT_USAGE
    errors = [i for i in validate(wf, path=path) if i.is_error]
    if errors:
        for i in errors:
            print_err(f"error: {i.message} ({i.code})")
        print_err(f"{args.file} has {len(errors)} error{'s' if len(errors) != 1 else ''}; no case was run")
        return EXIT_FAILED
    if not args.provider and not args.base_url:
        needs = needs_default_provider(wf) or any(e.type == "judge" for c in cases for e in c.expect)
        provider_problem = default_provider_problem() if needs else None
        if provider_problem is not None:
            print_err(
                describe(survey()) if isinstance(provider_problem, NoProviderConfigured) else str(provider_problem)
            )
            return EXIT_USAGE
    try:
        resolver = make_resolver(args.provider, model=args.model, base_url=args.base_url)
        # The judge's own model (an expectation's ``model``) must not be overridden by --model.
        judge_resolver = make_resolver(args.provider, base_url=args.base_url) if args.model else resolver
    except ProviderConfigError as err:
        print_err(str(err))
        return EXIT_USAGE
    store = None if args.no_store else open_store(required=False)
    history = None
    if store is not None:
        try:
            history = EvalHistory(store)
        except StoreError as err:
            print_err(f"warning: {err} The eval is not recorded.")
            store = None
    baseline = None
    if args.baseline:
        if history is None:
            print_err("--baseline needs the run history (it holds the earlier evals)")
            return EXIT_USAGE
        baseline = history.get(args.baseline)
        if baseline is None:
            print_err(f"--baseline: there is no eval '{args.baseline}' in the run history")
            return EXIT_USAGE
    factory = None
    if args.eval_temporal:
        factory = _remote_factory(args)
        if factory is None:
            return EXIT_USAGE
    progress = _Progress(len(cases), sys.stderr)
    progress.draw()
    try:
        # Python's own Ctrl+C during the eval (not the launcher's quick exit): asyncio.run then
        # cancels the cases' runs, and their recorders write what they have before the exit.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    except ValueError:  # not the main thread
        pass
    try:
        result = asyncio.run(
            run_eval(
                wf,
                cases,
                path=path,
                provider=args.provider,
                model=args.model,
                base_url=stored_base_url(args.base_url),  # as run records keep it: no credentials
                resolver=resolver,
                judge_resolver=judge_resolver,
                store=store,
                record=store is not None,
                concurrency=args.concurrency,
                baseline=baseline,
                max_visits=args.max_visits,
                run_factory=factory,
                on_case_done=progress.case_done,
            )
        )
    except KeyboardInterrupt:
        progress.clear()
        print_err("eval cancelled")
        return EXIT_CANCELLED
    except (StoreError, ValueError) as err:
        progress.clear()
        print_err(str(err))
        return EXIT_USAGE
    progress.clear()
    return _report(args, result)


def _report(args: argparse.Namespace, result: EvalResult) -> int:
    if args.json:
        sys.stdout.write(json.dumps(result.to_json(), ensure_ascii=False, indent=2) + "\n")
    else:
        sys.stdout.write(format_table(result))
    sys.stdout.flush()
    if args.junit:
        try:
            write_junit(args.junit, result)
        except OSError as err:
            print_err(f"--junit: cannot write {args.junit}: {err.strerror or err}")
            return EXIT_USAGE
    if not result.recorded and not args.no_store:
        print_err("note: the run history could not be used; this eval's runs are not recorded")
    return EXIT_OK if result.all_passed else EXIT_FAILED


def _remote_factory(args: argparse.Namespace) -> Any:
    """Each case's run as a remote run on the Temporal server (None, the reason printed, when the
    ``temporal`` extra is missing or the address is not HOST:PORT)."""
    try:
        require_temporal()
        address = split_address(args.eval_temporal)
    except TemporalUnavailable as err:
        print_err(str(err))
        return None

    def make(workflow: Any, _resolver: Any, **kwargs: Any) -> RemoteRun:
        return RemoteRun(workflow, address=address, namespace=args.namespace, task_queue=args.task_queue, **kwargs)

    return make
