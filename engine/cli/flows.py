"""Commands on flows: ``flows`` (the library), ``do`` (a sentence to a library flow, then run)
and ``repair`` (the model asked to patch a failed run's failed node).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from typing import Any

from engine.cli import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, EXIT_USAGE
from engine.cli.printer import print_err
from engine.cli.run import run_loaded
from engine.cli.runs import find_run
from engine.flows.dispatch import (
    NoFlowMatches,
    ask_model_for_flow,
    match_sentence,
    permission_summary,
    routable_flows,
)
from engine.flows.library import FlowLibrary, LibraryError, default_library
from engine.flows.memory import generalise, remember, split_requests, suggestions
from engine.flows.repair import RepairError, apply_repair, failed_node, propose_repair
from engine.graph.inputs import has_surrogates
from engine.graph.model import WorkflowLoadError, atomic_write_text, dumps_workflow, load_workflow
from engine.llm.base import AgentInvocation, LLMError
from engine.llm.registry import ProviderConfigError, make_resolver
from engine.nodes.base import as_text
from engine.run.state import RunState
from engine.store import StoreError

__all__ = ["cmd_flows", "cmd_do", "cmd_repair"]


class _Router:
    """Routes one request: the library's triggers first (no model call), else one model
    request (the resolver made on first need)."""

    def __init__(self, args: argparse.Namespace, flows: list[Any]) -> None:
        self.args = args
        self.flows = flows
        self._resolver: Any = None

    def route(self, text: str) -> tuple[Any, str]:
        """``(choice, "")`` or ``(None, why nothing matches)``."""
        skipped: list[str] = []
        matches = match_sentence(text, self.flows, skipped)
        for message in skipped:  # a malformed pattern in one flow does not stop the others
            print_err(f"warning: {message}")
        if matches:
            return matches[0], ""
        if not self.flows:
            return None, "no flow matches: the library has no flows"
        try:
            if self._resolver is None:
                self._resolver = make_resolver(self.args.provider, model=self.args.model, base_url=self.args.base_url)
            model = self.args.model or ""
            return asyncio.run(ask_model_for_flow(text, self.flows, self._resolver, model=model)), ""
        except NoFlowMatches as err:
            return None, str(err)
        except (ProviderConfigError, LLMError) as err:
            return None, f"no flow matches: the model could not be asked: {err}"


def _no_match(args: argparse.Namespace, text: str, reason: str, flows: list[Any]) -> int:
    """Nothing matched ``text``: the reason and up to three "did you mean" flows; exit 2."""
    near = suggestions(text, flows)
    print_err(reason)
    if near:  # each flow once, with a phrase that runs it (else what it does)
        print_err("did you mean:")
        for f in near:
            example = f.triggers[0] if f.triggers else " ".join(f.description.split())
            example = example if len(example) <= 100 else example[:99].rstrip() + "…"
            print_err(f"  {f.name} [{f.id}]" + (f": {example}" if example else ""))
    if args.json:
        print(
            json.dumps(
                {
                    "flow": None,
                    "request": text,
                    "reason": reason,
                    "suggestions": [{"id": f.id, "name": f.name, "description": f.description} for f in near],
                },
                ensure_ascii=False,
                indent=2,
            )
        )
    return EXIT_USAGE


def _say_choices(args: argparse.Namespace, choices: list[Any], workflows: list[Any]) -> None:
    """What will run, with what each flow may reach (its ``permissions``), before the confirmation."""
    out = sys.stderr if args.jsonl else sys.stdout  # with --jsonl, stdout holds only the log's JSON lines

    def shown(choice: Any, wf: Any) -> dict[str, Any]:
        permissions = wf.model_dump(mode="json").get("permissions")
        return {**choice.to_json(), "mayReach": permission_summary(wf), "permissions": permissions}

    if args.json:
        first = shown(choices[0], workflows[0])
        if len(choices) > 1:
            first["then"] = [shown(c, wf) for c, wf in zip(choices[1:], workflows[1:], strict=True)]
        out.write(json.dumps(first, ensure_ascii=False, indent=2) + "\n")
    else:
        lines: list[str] = []
        for i, choice in enumerate(choices):
            how = f'trigger "{choice.pattern}"' if choice.source == "trigger" else "chosen by the model"
            if choice.source == "model" and choice.reason:
                how += f", because {choice.reason.rstrip('.')}"
            step = f"{i + 1}. " if len(choices) > 1 else ""
            lines.append(f"{step}flow: {choice.flow.name} ({choice.flow.id}) · {how}")
            lines += [f"  {n} = {json.dumps(v, ensure_ascii=False)}" for n, v in choice.arguments.items()]
            if not choice.arguments:
                lines.append("  (no arguments)")
            lines.append(f"This flow may reach: {permission_summary(workflows[i])}")
        if len(choices) > 1:
            lines.append("each runs in turn, taking the previous one's output as its input")
        out.write("\n".join(lines) + "\n")
    out.flush()


def _confirmed(args: argparse.Namespace, choices: list[Any]) -> bool:
    if args.yes:
        return True
    answer = ""
    if sys.stdin is not None and sys.stdin.isatty():
        names = " then ".join(c.flow.name for c in choices)
        try:
            answer = input(f"Run {names}? [y/N] ")
        except EOFError:
            answer = ""
    return answer.strip().lower() in ("y", "yes")


def _learn(library: FlowLibrary, text: str, choice: Any) -> None:
    """Routing memory: a model-routed, confirmed request kept as a learned trigger of its flow."""
    pattern = generalise(text, choice.arguments, choice.flow)
    if pattern is None:
        print_err(f'note: "{text}" was not kept as a trigger (its arguments cannot be captured back from it)')
        return
    try:
        if remember(library, choice.flow, pattern):
            choice.learned = pattern
            print_err(f'learned: "{pattern}" now runs {choice.flow.name} with no model request')
    except (LibraryError, WorkflowLoadError) as err:
        print_err(f"warning: {err}")


def cmd_do(args: argparse.Namespace) -> int:
    """Match the library's triggers (no model call); else ask the model once; confirm; run.
    "X and then Y" (or "then", ";") routes each part and runs them in order."""
    text = args.text.strip()
    if not text or has_surrogates(text):
        print_err("TEXT is empty" if not text else "TEXT is not valid text: it holds bytes that are not UTF-8")
        return EXIT_USAGE
    library = FlowLibrary(args.library, seed=False) if args.library else default_library()
    flows = routable_flows(library)
    router = _Router(args, flows)
    skipped: list[str] = []
    whole = match_sentence(text, flows, skipped)
    for message in skipped:  # a malformed pattern in one flow does not stop the others
        print_err(f"warning: {message}")
    parts = [text] if whole else split_requests(text)
    if len(parts) < 2:  # one request ("… then" at its end is not a second one)
        parts = [text]
    choices: list[Any] = []
    for part in parts:
        choice, reason = (whole[0], "") if whole else router.route(part)
        if choice is None:
            return _no_match(args, part, reason, flows)
        choices.append((part, choice))
    workflows = []
    for _part, choice in choices:  # read before the confirmation: it says what each flow may reach
        try:
            workflows.append(library.load_path(choice.flow.path))
        except LibraryError as err:
            print_err(str(err))
            return EXIT_USAGE
    _say_choices(args, [c for _, c in choices], workflows)
    if args.dry_run:
        return EXIT_OK
    if not _confirmed(args, [c for _, c in choices]):
        print_err("not run: not confirmed (pass --yes to run without asking)")
        return EXIT_CANCELLED
    if not args.no_learn:
        for part, choice in choices:
            if choice.source == "model":
                _learn(library, part, choice)
    code = EXIT_OK
    # With --json, stdout holds only the choice printed above: the runs' logs go to stderr.
    run_args = argparse.Namespace(**{**vars(args), "log_to_stderr": bool(args.json)})
    for i, ((_part, choice), wf) in enumerate(zip(choices, workflows, strict=True)):
        keep: dict[str, Any] = {}
        code = run_loaded(wf, run_args, str(choice.flow.path), choice.arguments, library, keep)
        if code != EXIT_OK or i == len(choices) - 1:
            break
        run = keep.get("run")
        output = run.result if run is not None else None
        # the next flow's run input: its Start node's output, {{PREVIOUS_OUTPUT}} after it
        run_args = argparse.Namespace(**{**vars(run_args), "input": as_text(output) if output is not None else ""})
    return code


def cmd_repair(args: argparse.Namespace) -> int:
    found = find_run(args.run_id)
    if found is None:
        return EXIT_USAGE
    store, info = found
    try:
        wf = store.workflow_of(info.id)
        state = RunState.of(wf, store.iter_events(info.id))
    except StoreError as err:
        print_err(str(err))
        return EXIT_USAGE
    failed = failed_node(state)
    if failed is None:
        print_err(f"run {info.id[:12]} has no failed node to repair")
        return EXIT_USAGE
    node_id, input_text, error = failed
    try:
        resolver = make_resolver(args.provider, model=args.model, base_url=args.base_url)
        provider = resolver(
            AgentInvocation(
                node_id=node_id,
                name="Repair",
                system_prompt="",
                user_content="",
                model=args.model or "",
                reasoning_effort="low",
                tools={},
                subagents=[],
            )
        )
        proposal = asyncio.run(propose_repair(provider, wf, node_id, input_text, error, model=args.model or ""))
    except (ProviderConfigError, LLMError) as err:
        print_err(f"the repair request failed: {err}")
        return EXIT_FAILED
    except RepairError as err:
        print_err(f"the proposed repair was refused: {err}")
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
        print_err("the run does not say which file it was started from; pass --file PATH")
        return EXIT_USAGE
    try:
        current = load_workflow(path)
    except WorkflowLoadError as err:
        print_err(str(err))
        return EXIT_USAGE
    if current.node(node_id) is None:
        print_err(f"{path} has no node '{node_id}' any more; nothing written")
        return EXIT_USAGE
    if not args.yes:
        sys.stderr.write(f"write the patched workflow to {path}? [y/N] ")
        sys.stderr.flush()
        answer = sys.stdin.readline().strip().lower()
        if answer not in ("y", "yes"):
            print_err("nothing written")
            return EXIT_OK
    try:
        patched = apply_repair(current, proposal)
        atomic_write_text(path, dumps_workflow(patched))
    except (RepairError, OSError) as err:
        print_err(f"the workflow could not be written: {err}")
        return EXIT_FAILED
    print_err(f"written: {path} (run it again from the node: flowdesk run {path} --from {node_id})")
    return EXIT_OK


def _when(ts: Any) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if isinstance(ts, (int, float)) else "never"


def _flow_action(args: argparse.Namespace, library: FlowLibrary) -> int:
    """``flows show|enable|disable|delete ID`` (delete asks nothing; an unknown id exits 2)."""
    if not args.flow_id:
        print_err(f"flows {args.action} needs the flow's ID (see: flowdesk flows)")
        return EXIT_USAGE
    entry = library.get(args.flow_id)
    if entry is None:
        print_err(f"there is no flow '{args.flow_id}' in the library (see: flowdesk flows)")
        return EXIT_USAGE
    try:
        if args.action == "delete":
            library.delete(entry.id)
            print_err(f"deleted: {entry.name} [{entry.id}] ({entry.path})")
        elif args.action in ("enable", "disable"):
            library.set_enabled(entry.id, args.action == "enable")
            print_err(f"{entry.name} [{entry.id}] is {'on' if args.action == 'enable' else 'off'}")
        elif args.json:
            print(json.dumps(entry.to_json(), ensure_ascii=False, indent=2))
        else:
            _print_flow(entry)
            u = entry.usage
            print(
                f"    runs: {u.get('runs', 0)}, last run: {_when(u.get('lastRun'))}, created: {_when(u.get('created'))}"
            )
    except LibraryError as err:
        print_err(str(err))
        return EXIT_USAGE
    return EXIT_OK


def _print_flow(f: Any) -> None:
    state = "" if f.enabled else "  (off)"
    print(f"{f.name}  [{f.id}]{state}")
    if f.description:
        print(f"    {' '.join(f.description.split())}")
    if f.parameters:
        params = ", ".join(f"{p.name}: {p.type}{'' if p.required else '?'}" for p in f.parameters)
        print(f"    parameters: {params}")
    for t in f.triggers:
        print(f"    trigger: {t}{'  (learned)' if t in f.learned else ''}")
    print(f"    {f.path}")


def cmd_flows(args: argparse.Namespace) -> int:
    library = FlowLibrary(args.library, seed=False) if getattr(args, "library", None) else default_library()
    if args.action != "list":
        return _flow_action(args, library)
    flows = library.flows()
    if args.json:
        print(
            json.dumps(
                {"folders": [str(f) for f in library.folders], "flows": [f.to_json() for f in flows]},
                ensure_ascii=False,
                indent=2,
            )
        )
        return EXIT_OK
    if not flows:
        print(f"The flow library is empty ({library.primary}).")
        return EXIT_OK
    for f in flows:
        if f.error:
            print(f"! {f.path}: {f.error}")
            continue
        _print_flow(f)
    return EXIT_OK
