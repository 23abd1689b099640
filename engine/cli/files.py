"""Commands on workflow files: ``validate``, ``import``, ``export``.

``validate`` loads the model and the validation only (no run store, no run, no provider).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from typing import Any

from engine.cli import EXIT_FAILED, EXIT_OK, EXIT_USAGE, print_err
from engine.flows.importers import ExportRefused, export_anythingllm, import_flow, load_any_workflow
from engine.graph.model import (
    WorkflowLoadError,
    atomic_write_text,
    dumps_workflow,
    load_workflow,
    loads_workflow,
    parse_workflow,
)
from engine.graph.validate import validate
from engine.llm.config import web_search_available

__all__ = ["cmd_validate", "cmd_import", "cmd_export", "load_any"]


def load_any(path: str) -> Any:
    """The workflow in ``path``; a foreign flow file is converted, with a note on stderr.

    A command loads its workflow once and keeps it to the end, so the loaded objects are frozen
    out of the cyclic GC (``gc.freeze``) before collection resumes: otherwise the first young
    collections and then a full one walk every object of the file (a 10,000-node file: some
    150 ms of a run's 1 s, in the run's first steps). A run's own freeze and thaw
    (engine/run/setup.py) keep working: a thaw only returns them to the oldest generation."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        wf, imported = load_any_workflow(path)
    finally:
        gc.freeze()
        if was_enabled:
            gc.enable()
    if imported is not None:
        print_err(f"note: {imported.note(path)}")
        for warning in imported.warnings:
            print_err(f"warning: {warning}")
    return wf


def _write_out(text: str, output: str | None) -> int:
    if not output:
        sys.stdout.write(text)
        return EXIT_OK
    try:
        atomic_write_text(output, text)
    except OSError as err:
        print_err(f"{output}: cannot be written: {err.strerror or err}")
        return EXIT_USAGE
    return EXIT_OK


def cmd_import(args: argparse.Namespace) -> int:
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
        print_err(str(err))
        return EXIT_USAGE
    for warning in result.warnings:
        print_err(f"warning: {warning}")
    if result.format == "flowdesk":
        print_err(f"note: {args.file} is already a Flowdesk workflow; written unchanged")
    else:
        print_err(f"{result.note(args.file)}" + (f"; written to {args.output}" if args.output else ""))
    return _write_out(dumps_workflow(wf), args.output)


def cmd_export(args: argparse.Namespace) -> int:
    try:
        wf = load_any(args.file)
        warnings: list[str] = []
        out = export_anythingllm(wf, warnings)
    except (WorkflowLoadError, ExportRefused) as err:
        print_err(str(err))
        return EXIT_USAGE
    for warning in warnings:
        print_err(f"warning: {warning}")
    return _write_out(json.dumps(out, ensure_ascii=False, indent=2) + "\n", args.output)


def cmd_validate(args: argparse.Namespace) -> int:
    try:
        wf = load_any(args.file)
    except WorkflowLoadError as err:
        if args.json:
            print(json.dumps({"error": str(err)}))
        else:
            print_err(str(err))
        return EXIT_USAGE
    issues = validate(wf, web_search_available=web_search_available(), path=os.path.abspath(args.file))
    errors = sum(1 for i in issues if i.is_error)
    if args.json:
        print(json.dumps({"issues": [i.to_json() for i in issues]}, ensure_ascii=False, indent=2))
    else:
        for i in issues:
            where = f" [{', '.join(i.node_ids)}]" if i.node_ids else ""
            print(f"{i.severity}: {i.message} ({i.code}){where}")
        warnings = len(issues) - errors
        print(
            f"{args.file}: {errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}"
        )
    return EXIT_FAILED if errors else EXIT_OK
