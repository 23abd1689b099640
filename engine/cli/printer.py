"""The command line's one printer: a run's events as they come (readable lines, or JSON lines in
wire form with ``--jsonl``), the one-line summary of a paused or ended run, the rows of
``flowdesk runs``, and the ``flowdesk: ...`` messages on stderr.
"""

from __future__ import annotations

import os
import sys
from typing import Any, TextIO

from engine.cli import print_err
from engine.run.costs import format_cost, readable_prices, run_costs
from engine.run.events import SUBAGENT_CALL_TYPES, format_duration, format_timestamp
from engine.run.state import RunState

__all__ = ["Printer", "print_err", "RUNS_HEADER", "runs_line"]


# ------------------------------------------------------------------------------- output
_COLOURS = {
    "step_start": "\033[1;36m", "start_prompt": "\033[2m", "logic_check": "\033[35m", "wait_input": "\033[1;33m",
    "input_received": "\033[33m", "llm_response": "\033[32m", "llm_error": "\033[1;31m", "error": "\033[1;31m",
    "subagent_call_start": "\033[34m", "subagent_call_end": "\033[34m", "subagent_call_error": "\033[31m",
    "run_status": "\033[1m", "approval_queued": "\033[33m",
}


class Printer:
    """Prints each event as it comes: a JSON line (wire form) with ``--jsonl``, else a readable line.

    Readable output is derived like every other view of a run: the events feed the engine's
    run-state reducer (:class:`engine.RunState`), subagent calls are printed from their typed
    fields, and when the run pauses or ends a one-line summary of the node states follows.
    """

    def __init__(self, out: TextIO, workflow: Any, jsonl: bool) -> None:
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
            if ev.type == "llm_error":  # (a provider that could not serve: see engine.cli.run._execute)
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
        total = run_costs(self.state, self.workflow, readable_prices())["total"]
        if not total["tokens"]:
            return ""
        return f" · tokens {total['tokens']:,}" + (f" · {format_cost(total['cost'])}" if total["cost"] is not None else "")


RUNS_HEADER = f"{'RUN':<12} {'STATUS':<12} {'STARTED':<20} {'DURATION':>10} {'TOKENS · COST':>16}  WORKFLOW / INPUT"


def runs_line(run_id: str, status: str, started_at: float, duration: float | None, workflow: str, given: str,
              note: str = "", *, spent: str = "") -> str:
    """One row of ``flowdesk runs`` (local or ``--temporal``): what the run was given on one line,
    cut at 40; ``spent``: its tokens and cost (``391 · $0``), empty when it used none."""
    text = given.replace("\n", " ")
    text = text if len(text) < 40 else text[:37] + "..."
    return (f"{run_id[:12]:<12} {status:<12} {format_timestamp(started_at)[:19].replace('T', ' '):<20} "
            f"{format_duration(duration):>10} {spent:>16}  {workflow}" + (f" — {text}" if text else "") + note)
