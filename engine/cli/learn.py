"""``flowdesk learn RUN_ID``: a completed run whose agent called tools saved as a deterministic
flow (engine/flows/learn.py), validated before it is written, never over an existing file
without ``--force`` (exit 2, the file unchanged)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
from pathlib import Path

from engine.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from engine.cli.printer import print_err
from engine.cli.runs import find_run
from engine.flows.learn import LearnError, learn_from_run
from engine.flows.library import FLOW_SUFFIX, default_library
from engine.graph.model import atomic_write_text, dumps_workflow
from engine.graph.validate import validate
from engine.llm.base import AgentInvocation, LLMError
from engine.llm.registry import ProviderConfigError, make_resolver
from engine.run.state import RunState
from engine.store import StoreError

__all__ = ["cmd_learn"]


def _target(args: argparse.Namespace, name: str) -> Path:
    if args.output:
        return Path(args.output)
    stem = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:60] or "learned"
    return default_library().primary / f"{stem}{FLOW_SUFFIX}"


def cmd_learn(args: argparse.Namespace) -> int:
    found = find_run(args.run_id)
    if found is None:
        return EXIT_USAGE
    store, info = found
    try:
        wf = store.workflow_of(info.id)
        events = list(store.iter_events(info.id))
    except StoreError as err:
        print_err(str(err))
        return EXIT_USAGE
    state = RunState.of(wf, events)
    provider = None
    if not args.no_model:
        try:
            resolver = make_resolver(args.provider, model=args.model, base_url=args.base_url)
            provider = resolver(AgentInvocation("learn", "Learn a flow", "", "", args.model or "", "low", {}, []))
        except ProviderConfigError as err:
            print_err(f"the model cannot be asked ({err}); pass --no-model to keep every argument literal")
            return EXIT_USAGE
    try:
        learned, proposal = asyncio.run(
            learn_from_run(wf, events, state, run_id=info.id, provider=provider, model=args.model or "", name=args.name)
        )
    except LearnError as err:
        print_err(str(err))
        return EXIT_USAGE if provider is None or "completed" in str(err) or "no agent" in str(err) else EXIT_FAILED
    except LLMError as err:
        print_err(f"the model could not propose the flow's parameters: {err} (or pass --no-model)")
        return EXIT_FAILED
    target = _target(args, learned.name or "learned")
    if target.exists() and not args.force:
        print_err(f"{target} exists; nothing written (pass --force to replace it, or -o another file)")
        return EXIT_USAGE
    errors = [i for i in validate(learned, path=os.path.abspath(target)) if i.is_error]
    if errors:
        for issue in errors:
            print_err(f"error: {issue.message} ({issue.code})")
        print_err("the learned flow does not validate; nothing written")
        return EXIT_FAILED
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(target, dumps_workflow(learned))
    except OSError as err:
        print_err(f"{target} could not be written: {err.strerror or err}")
        return EXIT_FAILED
    if args.json:
        print(
            json.dumps(
                {
                    "path": str(target),
                    "id": learned.id,
                    "name": learned.name,
                    "variables": proposal.variables,
                    "triggers": proposal.triggers,
                    "reasons": proposal.reasons,
                },
                ensure_ascii=False,
                indent=2,
            )
        )
    else:
        calls = sum(1 for n in learned.nodes if n.id.startswith("call"))
        print(f"learned: {learned.name} [{learned.id}] ({calls} call{'s' if calls != 1 else ''}) → {target}")
        for v in proposal.variables:
            print(f"  variable {v['name']} ({v['type']}) from {json.dumps(v['from'], ensure_ascii=False)}")
        for t in proposal.triggers:
            print(f"  trigger: {t}")
        for r in proposal.reasons:
            print(f"  why: {r}")
    return EXIT_OK
