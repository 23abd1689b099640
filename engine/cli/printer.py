"""The command line's one printer: a run's events as they come (readable lines, or JSON lines in
wire form with ``--jsonl``), the one-line summary of a paused or ended run, the rows of
``flowdesk runs``, and the ``flowdesk: ...`` messages on stderr.

Printing a live run (:meth:`Printer.follow`): the printer listens to the run and keeps the
events not printed yet, in order; a batch of them is encoded once and written with one write.
What is printed (docs/design.md, "what was shown is stored"): while the run is recorded, only
the events the store has committed (the recorder's ``on_commit`` count), and right after them
the streamed text (``llm_delta``) that follows, since its step's start is committed; a delta
held behind an event not committed yet asks the store to commit now. Deltas are printed on the
next turn of the event loop, the other events of a run not recorded within ``FRAME`` seconds.
``--jsonl`` lines are made for the whole batch at once (:func:`wire_text`) and never touch the
run-state reducer (no summary is printed). Readable output keeps, of what it printed, only the
events that can change what its summary shows (not streamed text, prompts, or the end of a
step that finished) and feeds them to the reducer in batches, when a summary (or ``state``)
is asked for.
"""

from __future__ import annotations

import asyncio
import math
import os
import re
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from functools import cached_property
from json.encoder import encode_basestring as _quote
from typing import Any, TextIO

from engine.cli import print_err
from engine.run.costs import format_cost, readable_prices, run_costs
from engine.run.events import SUBAGENT_CALL_TYPES, RunEvent, format_duration, format_timestamp
from engine.run.state import RunState

__all__ = ["Printer", "print_err", "RUNS_HEADER", "runs_line", "wire_line", "wire_text", "FRAME"]

FRAME = 0.016  # seconds an event of a run not recorded may wait to be printed with the next ones
_HELD_MAX = 2048  # events gathered before they are printed at once (a run that does not let the loop turn)
_REDUCE_EVERY = 4096  # events kept for the reducer before it is fed (bounds the memory of a long run)
_DELTA = "llm_delta"
_ERROR_LINE = '"type": "llm_error"'  # in a batch's --jsonl text when one of its events is an llm_error
_URGENT = frozenset({_DELTA, "run_status"})  # events a followed run's printer acts on at once (see _arrange)
_ENDS = frozenset({"paused", "completed", "failed", "cancelled"})
# Events that change nothing the summary shows (node states, approvals, tokens): not fed to the reducer.
_UNSEEN = frozenset({"start_prompt", "http_request", "http_response", "route_choice", "structured_retry"})
# Keys of the wire form before (and after) an event's own fields: an event whose fields name one
# of them is encoded by RunEvent.to_json itself (the field replaces the key in place).
_WIRE_KEY = re.compile(r'"(?:timestamp|nodeId|type|content|path)"')
_second: list[Any] = [None, ""]  # the last whole second stamped, and its text
_MILLIS = [f".{ms:03d}Z" for ms in range(1000)]
_QUOTED: dict[str, str] = {}  # node ids and kinds as JSON strings (they repeat: four events a step)
_TAILS: dict[str, str | None] = {}  # an event's extra text -> what it adds to the line (None: the long way)
_KEEP = 4096  # entries kept in each of those (a run with many distinct ids or extras starts them over)
_STEP_DONE = '{"status": "done"'  # a step_end of a step that finished (not printed readably)


def _stamp(ts: float) -> str:
    """``format_timestamp(ts)``: the text of its second made once a second, not once an event.

    The microseconds are found as ``datetime.fromtimestamp`` finds them (the fraction times
    10^6, rounded half to even), then cut to milliseconds as ``isoformat`` cuts them."""
    frac, whole = math.modf(ts)
    us = round(frac * 1e6)
    if us >= 1_000_000:
        whole += 1.0
        us -= 1_000_000
    elif us < 0:  # before 1970: not worth a fast path
        return format_timestamp(ts)
    second = int(whole)
    if _second[0] != second:
        _second[1] = datetime.fromtimestamp(second, tz=UTC).isoformat(timespec="seconds")[:19]
        _second[0] = second
    return _second[1] + _MILLIS[us // 1000]


def _quoted(text: str) -> str:
    quoted = _QUOTED.get(text)
    if quoted is None:
        if len(_QUOTED) >= _KEEP:
            _QUOTED.clear()
        quoted = _QUOTED[text] = _quote(text)
    return quoted


def _tail(extra: str) -> str | None:
    """The members of an event's extra text laid into its wire line (``, "usage": {...}``), or
    None when the line must be made by ``RunEvent.to_json`` (a field that collides with a wire
    key). The same texts come again and again (a finished step's ``step_end``), so the verdict
    is kept."""
    tail = _TAILS.get(extra, "?")
    if tail == "?":
        if extra[0] != "{" or _WIRE_KEY.search(extra):
            tail = None
        else:
            tail = ", " + extra[1:-1] if len(extra) > 2 else ""
        if len(_TAILS) >= _KEEP:
            _TAILS.clear()
        _TAILS[extra] = tail
    return tail


def wire_line(ev: RunEvent) -> str:
    """``ev.to_json()``, the same text (see :func:`wire_text`)."""
    return wire_text([ev])[:-1]


def wire_text(events: list[RunEvent]) -> str:
    """``ev.to_json() + "\\n"`` for each event, joined: the text of ``--jsonl`` for a batch, made
    without decoding and encoding the events' fields again.

    The CLI's hot loop with ``--jsonl`` (``tests/bench/bench_cli.py``, the 10,000-agent chain):
    ``to_wire`` decodes each event's extra JSON into a dict and ``json.dumps`` encodes it back.
    An event's extra text is made by the engine's own encoder with ``json.dumps``'s
    separators, so its members are laid in as they are; the wire keys are quoted like
    ``json.dumps(..., ensure_ascii=False)`` quotes, node ids and kinds once each. Subagent
    calls (their content is rewritten) and fields that collide with a wire key go the long way."""
    lines: list[str] = []
    # Micro-idioms, on purpose (this loop is what bench_cli's slope names): the caches in
    # locals; the timestamp's milliseconds found from the start of its second without
    # math.modf (a call and a tuple less an event; 1.1 -> 0.86 µs an event in all).
    append = lines.append
    quoted = _QUOTED
    tails = _TAILS
    calls = SUBAGENT_CALL_TYPES
    millis = _MILLIS
    second, second_text = _second
    base = float(second) if second is not None else -1.0
    for ev in events:
        kind = ev[1]
        extra = ev[4]
        if extra:
            tail = tails.get(extra, "?")
            if tail == "?":
                tail = _tail(extra)
            if tail is None or kind in calls:
                append(ev.to_json() + "\n")
                continue
        elif kind in calls:
            append(ev.to_json() + "\n")
            continue
        else:
            tail = ""
        node = ev[0]
        qn = quoted.get(node) or _quoted(node)
        qk = quoted.get(kind) or _quoted(kind)
        if len(ev) > 5:
            tail += f', "path": {_quote(ev[5])}'
        ts = ev[3]  # its milliseconds as _stamp finds them (ts - base is modf's fraction within that second)
        us = round((ts - base) * 1e6)
        if 0 <= us < 1_000_000:
            stamp = second_text + millis[us // 1000]
        else:
            stamp = _stamp(ts)
            second, second_text = _second
            base = float(second) if second is not None else -1.0
        append(f'{{"timestamp": "{stamp}", "nodeId": {qn}, "type": {qk}, "content": {_quote(ev[2])}{tail}}}\n')
    return "".join(lines)


# ------------------------------------------------------------------------------- output
_COLOURS = {
    "step_start": "\033[1;36m",
    "start_prompt": "\033[2m",
    "logic_check": "\033[35m",
    "wait_input": "\033[1;33m",
    "input_received": "\033[33m",
    "llm_response": "\033[32m",
    "llm_error": "\033[1;31m",
    "error": "\033[1;31m",
    "subagent_call_start": "\033[34m",
    "subagent_call_end": "\033[34m",
    "subagent_call_error": "\033[31m",
    "run_status": "\033[1m",
    "approval_queued": "\033[33m",
}


class Printer:
    """Prints a run's events: a JSON line each (wire form) with ``--jsonl``, else a readable line.

    Readable output is derived like every other view of a run: the events feed the engine's
    run-state reducer (:class:`engine.RunState`, in batches: see :attr:`state`), subagent calls
    are printed from their typed fields, and when the run pauses or ends a one-line summary of
    the node states follows. ``printer(ev)`` prints one event now; :meth:`follow` prints a live
    run in batches (see the module's docstring).
    """

    def __init__(self, out: TextIO, workflow: Any, jsonl: bool) -> None:
        self.out = out
        self.workflow = workflow
        self.jsonl = jsonl
        self._state: RunState | None = None  # made when first asked for (--jsonl seldom needs it)
        self._unreduced: list[RunEvent] = []  # printed events that matter to the summary, not yet fed to the reducer
        self.colour = not jsonl and out.isatty() and os.environ.get("NO_COLOR") is None
        # A followed run: its events not printed yet, in order (appended on the event loop).
        self._held: list[RunEvent] = []
        self._recorder: Any = None  # while it records the run, only what it committed is printed
        self._committed = 0  # events committed and not printed (below 0: deltas printed before their commit)
        self._lock = threading.Lock()  # the event loop and the store's writer thread both print
        self._loop: asyncio.AbstractEventLoop | None = None
        self._soon = False  # a release is scheduled on the next turn of the loop
        self._busy = False  # a release is arranged already (or, the run recorded, the store's commits make them)
        self._timer: asyncio.TimerHandle | None = None
        self.broken = False  # stdout was closed (a reader such as `| head` went away): nothing more is written
        self.on_broken: Callable[[], None] | None = None  # told once, when that happens

    @cached_property
    def titles(self) -> dict[str, str]:
        """Each node's title by id (for readable lines and the summary; ``--jsonl`` needs none)."""
        return {n.id: n.title for n in self.workflow.nodes}

    @property
    def state(self) -> RunState:
        """The run state of what was printed (the reducer fed with what it has not seen yet)."""
        state = self._state
        if state is None:  # (with --jsonl no summary is printed: the state only tells a provider's problem)
            state = self._state = RunState(None if self.jsonl else self.workflow)
        if self._unreduced:
            state.apply_many(self._unreduced)
            self._unreduced.clear()
        return state

    # ------------------------------------------------------------------ a live run
    def follow(self, run: Any, recorder: Any = None) -> None:
        """Print ``run``'s events as they come; ``recorder``: the :class:`engine.RunRecorder`
        recording it, made with ``on_commit=printer.committed``."""
        self._recorder = recorder
        self._busy = recorder is not None
        run.add_listener(self._seen)

    def _seen(self, ev: RunEvent) -> None:
        # On the event loop, as the run emits: keep it, and see that it is printed soon. This
        # runs four times a step (bench_cli's slope): the usual event, a release arranged
        # already, costs an append and three tests (_arrange, a call and six tests, is for the rest).
        held = self._held
        held.append(ev)
        if self._busy and ev[1] not in _URGENT and len(held) < _HELD_MAX:
            return
        self._arrange(ev[1], held)

    def _arrange(self, kind: str, held: list[RunEvent]) -> None:
        if kind == _DELTA:
            if not self._soon:
                self._soon = True
                self._call(0.0)
        elif self._recorder is None:
            if kind == "run_status" or len(held) >= _HELD_MAX:
                self.release()  # before start() returns: a run's last lines come before what the CLI says next
            elif self._timer is None and not self._soon:
                self._timer = self._call(FRAME)
        self._busy = self._recorder is not None or self._timer is not None or self._soon

    def _call(self, delay: float) -> asyncio.TimerHandle | None:
        loop = self._loop
        if loop is None:
            try:
                loop = self._loop = asyncio.get_running_loop()
            except RuntimeError:  # not on an event loop (a run driven by hand): print now
                self.release()
                return None
        if delay:
            return loop.call_later(delay, self._on_timer)
        loop.call_soon(self._on_soon)
        return None

    def _on_timer(self) -> None:
        self._timer = None
        self._busy = self._recorder is not None or self._soon
        self.release()

    def _on_soon(self) -> None:
        self._soon = False
        self._busy = self._recorder is not None or self._timer is not None
        self.release()
        recorder = self._recorder
        if self._held and recorder is not None:  # streamed text held behind an event not committed yet
            recorder.commit_soon()

    def committed(self, events: list[Any], recorded: bool) -> None:
        """The recorder's ``on_commit`` (on the thread that wrote the batch): ``events`` are in
        the run history now (or could not be written, ``recorded`` False: they are shown all
        the same, the error is reported), so they may be printed."""
        with self._lock:
            self._committed += len(events)
        self.release()

    def release(self, everything: bool = False) -> None:
        """Print what may be printed of the followed run (``everything``: all of it, once the
        recorder is closed)."""
        with self._lock:
            held = self._held
            if not held:
                return
            n = len(held)
            if self._recorder is not None and not everything:
                n = min(n, max(0, self._committed))
                while n < len(held) and held[n][1] == _DELTA:  # streamed text of a step whose start is committed
                    n += 1
                if not n:
                    return
            batch = held[:n]
            del held[:n]
            self._committed -= n
            self.write(batch)

    def finish(self) -> None:
        """The run is over and its recorder closed: print what is left."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._busy = self._recorder is not None or self._soon
        self.release(everything=True)

    # ------------------------------------------------------------------ encoding
    def __call__(self, ev: RunEvent) -> None:
        self.write([ev])

    def write(self, events: list[RunEvent]) -> None:
        """Encode ``events`` (and a summary after a pause or an end) and write them with one write."""
        if self.jsonl:
            text = wire_text(events)
            if _ERROR_LINE in text:  # (one search of the batch's text, not a test an event)
                for ev in events:
                    if ev[1] == "llm_error":  # (a provider that could not serve: see execute in engine/cli/execute.py)
                        self._unreduced.append(ev)
        else:
            text = self._lines(events)
        if self.broken or not text:
            return
        try:
            self.out.write(text)
            self.out.flush()
        except BrokenPipeError:  # the reader went away: nothing more is written
            self.broken = True
            if self.on_broken is not None:
                self.on_broken()

    def _lines(self, events: list[RunEvent]) -> str:
        out: list[str] = []
        keep = self._unreduced
        for ev in events:
            kind = ev[1]
            if kind == _DELTA:
                continue
            if kind not in _UNSEEN and not (kind == "step_end" and ev[4] and ev[4].startswith(_STEP_DONE)):
                keep.append(ev)  # (the reducer keeps no state the summary reads from a prompt or a finished step's end)
            line = self._line(ev)
            if line is not None:
                out.append(line)
                if ev[1] == "run_status" and ev[2] in _ENDS:
                    out.append(self.summary())
        if len(keep) >= _REDUCE_EVERY:
            self.state  # noqa: B018 - fed in batches: the memory of a long run stays bounded
        return "".join([line + "\n" for line in out])

    def _line(self, ev: RunEvent) -> str | None:
        """The readable line of one event (None: not printed)."""
        kind = ev.type
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
            if isinstance(f.get("total"), int):  # a loop over a list: the round that came back
                content = f"item {f.get('iteration')} of {f['total']} done"
            else:
                content = f"iteration {f.get('iteration')}: " + ("until matched, done" if f.get("matched") else "go on")
        elif kind == "step_end":
            if ev[4] and ev[4].startswith(_STEP_DONE):
                return None  # a finished step says so in its own events
            f = ev.extra or {}
            if f.get("status") == "done":
                return None  # a finished step says so in its own events; only a skip or a failure is printed
            ms = f.get("durationMs")
            took = format_duration(ms / 1000) if isinstance(ms, (int, float)) else "?"
            content = f"{f.get('status')} after {took}" + (
                f", following '{f['handle']}': {content}" if f.get("handle") else ""
            )
        who = self.titles.get(ev.node_id, ev.node_id)
        stamp = _stamp(ev.timestamp)[11:23]
        text = content.replace("\n", "\n" + " " * 16) if content else ""
        line = f"{stamp}  {who} · {kind}" + (
            f"\n{' ' * 16}{text}" if text and kind not in ("step_start", "run_status") else f"  {text}"
        )
        if self.colour:
            line = f"{_COLOURS.get(kind, '')}{line}\033[0m"
        return line

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
        return f" · tokens {total['tokens']:,}" + (
            f" · {format_cost(total['cost'])}" if total["cost"] is not None else ""
        )


RUNS_HEADER = f"{'RUN':<12} {'STATUS':<12} {'STARTED':<20} {'DURATION':>10} {'TOKENS · COST':>16}  WORKFLOW / INPUT"


def runs_line(
    run_id: str,
    status: str,
    started_at: float,
    duration: float | None,
    workflow: str,
    given: str,
    note: str = "",
    *,
    spent: str = "",
) -> str:
    """One row of ``flowdesk runs`` (local or ``--temporal``): what the run was given on one line,
    cut at 40; ``spent``: its tokens and cost (``391 · $0``), empty when it used none."""
    text = given.replace("\n", " ")
    text = text if len(text) < 40 else text[:37] + "..."
    return (
        f"{run_id[:12]:<12} {status:<12} {format_timestamp(started_at)[:19].replace('T', ' '):<20} "
        f"{format_duration(duration):>10} {spent:>16}  {workflow}" + (f" — {text}" if text else "") + note
    )
