"""Commands on flows: ``flows`` (the library), ``do`` (a sentence to a library flow, then run)
and ``repair`` (the model asked to patch a failed run's failed node).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

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
from engine.flows.repair import RepairError, apply_repair, failed_node, propose_repair
from engine.graph.inputs import has_surrogates
from engine.graph.model import WorkflowLoadError, atomic_write_text, dumps_workflow, load_workflow
from engine.llm.base import AgentInvocation, LLMError
from engine.llm.registry import ProviderConfigError, make_resolver
from engine.run.state import RunState
from engine.store import StoreError

__all__ = ["cmd_flows", "cmd_do", "cmd_repair"]


def cmd_do(args: argparse.Namespace) -> int:
    """Match the library's triggers (no model call); else ask the model once; confirm; run."""
    text = args.text.strip()
    if not text or has_surrogates(text):
        print_err("TEXT is empty" if not text else "TEXT is not valid text: it holds bytes that are not UTF-8")
        return EXIT_USAGE
    library = FlowLibrary(args.library, seed=False) if args.library else default_library()
    flows = routable_flows(library)
    skipped: list[str] = []
    matches = match_sentence(text, flows, skipped)
    for message in skipped:  # a malformed pattern in one flow does not stop the others
        print_err(f"warning: {message}")
    if matches:
        choice = matches[0]
    else:
        if not flows:
            print_err("no flow matches: the library has no flows")
            return EXIT_USAGE
        try:
            resolver = make_resolver(args.provider, model=args.model, base_url=args.base_url)
            choice = asyncio.run(ask_model_for_flow(text, flows, resolver, model=args.model or ""))
        except NoFlowMatches as err:
            print_err(str(err))
            return EXIT_USAGE
        except (ProviderConfigError, LLMError) as err:
            print_err(f"no flow matches: the model could not be asked: {err}")
            return EXIT_USAGE
    try:  # read before the confirmation: it says what the flow may reach
        wf = library.load_path(choice.flow.path)
    except LibraryError as err:
        print_err(str(err))
        return EXIT_USAGE
    reach = permission_summary(wf)
    out = sys.stderr if args.jsonl else sys.stdout  # with --jsonl, stdout holds only the log's JSON lines
    if args.json:
        shown = {**choice.to_json(), "mayReach": reach, "permissions": wf.model_dump(mode="json").get("permissions")}
        out.write(json.dumps(shown, ensure_ascii=False, indent=2) + "\n")
    else:
        how = f'trigger "{choice.pattern}"' if choice.source == "trigger" else "chosen by the model"
        lines = [f"flow: {choice.flow.name} ({choice.flow.id}) · {how}"]
        lines += [f"  {name} = {json.dumps(value, ensure_ascii=False)}" for name, value in choice.arguments.items()]
        lines += [] if choice.arguments else ["  (no arguments)"]
        lines.append(f"This flow may reach: {reach}")
        out.write("\n".join(lines) + "\n")
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
            print_err("not run: not confirmed (pass --yes to run without asking)")
            return EXIT_CANCELLED
    return run_loaded(wf, args, str(choice.flow.path), choice.arguments)


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


def cmd_flows(args: argparse.Namespace) -> int:
    flows = default_library().flows()
    if args.json:
        print(
            json.dumps(
                {"folders": [str(f) for f in default_library().folders], "flows": [f.to_json() for f in flows]},
                ensure_ascii=False,
                indent=2,
            )
        )
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
