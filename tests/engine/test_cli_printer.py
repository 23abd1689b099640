"""The CLI's printer (issue 32): the wire line made without a decode, a batch written at once,
streamed text printed ahead of the store's commit while every other event waits for it, and a
stream that goes quiet passing on the text it held."""

from __future__ import annotations

import asyncio
import io
import json
from typing import Any

from engine import EchoProvider, Run, RunEvent, RunState
from engine.cli.printer import Printer, wire_line, wire_text
from engine.llm.config import HttpSettings
from engine.llm.openai import OpenAIProvider
from tests.fakes.openai_server import FakeLLMServer, Reply, _chunk

from .flows import agent, approval, cond, flow, link, start


def test_wire_line_is_to_json() -> None:
    events = [
        RunEvent("a", "step_start", "Agent"),
        RunEvent(
            "a", "llm_response", 'quo"te \\ é \n 漢 \u2028 \x01', extra={"usage": {"prompt_tokens": 3}, "model": "m"}
        ),
        RunEvent("a", "step_end", "", extra={"status": "done", "durationMs": 1.5, "handle": None}),
        RunEvent("a", "logic_check", "x", extra={"content": "replaced in place", "n": 1}),
        RunEvent("a", "logic_check", "x", extra={"note": 'names "type" in a value'}),
        RunEvent("a", "llm_delta", "tok", path="f1/a"),
        RunEvent("a", "step_end", "", extra={"status": "done", "path": "in extra"}, path="f1"),
        RunEvent(
            "a",
            "subagent_call_start",
            "arg",
            extra={"parentNodeId": "a", "subagentNodeId": "b", "subagentName": "B", "callId": "c1", "depth": 1},
        ),
        RunEvent(
            "a",
            "subagent_call_end",
            "ok",
            extra={"parentNodeId": "a", "subagentNodeId": "b", "depth": 1, "usage": {"total_tokens": 4}},
        ),
        RunEvent("a", "llm_error", "", extra_json="{}"),
        RunEvent("\ud800", "error", "lone \udfff surrogate"),
    ]
    for ev in events:
        assert wire_line(ev) == ev.to_json(), ev


class _Recorder:
    """What the printer asks of a recorder: commit soon."""

    def __init__(self) -> None:
        self.asked = 0

    def commit_soon(self) -> None:
        self.asked += 1


class _Run:
    def __init__(self) -> None:
        self.listeners: list[Any] = []

    def add_listener(self, fn: Any) -> None:
        self.listeners.append(fn)

    def emit(self, ev: RunEvent) -> None:
        for fn in self.listeners:
            fn(ev)


async def test_deltas_are_printed_before_their_commit_other_events_after() -> None:
    wf = flow([start(), agent("a")], [link("s", "a")])
    out = io.StringIO()
    printer = Printer(out, wf, jsonl=True)
    recorder, run = _Recorder(), _Run()
    printer.follow(run, recorder)
    lines = lambda: [json.loads(x)["type"] for x in out.getvalue().splitlines()]  # noqa: E731
    run.emit(RunEvent("a", "step_start", "A"))
    run.emit(RunEvent("a", "llm_delta", "one"))
    await asyncio.sleep(0)
    assert lines() == [] and recorder.asked == 1  # held behind the uncommitted start: a commit is asked for
    printer.committed([None], True)  # the step's start is committed: it and the delta after it are printed
    assert lines() == ["step_start", "llm_delta"]
    run.emit(RunEvent("a", "llm_delta", "two"))
    await asyncio.sleep(0)
    assert lines() == ["step_start", "llm_delta", "llm_delta"]  # not waiting for any commit
    run.emit(RunEvent("a", "llm_response", "onetwo"))
    run.emit(RunEvent("a", "llm_delta", "late"))  # (a later step's, say): behind the response
    await asyncio.sleep(0)
    assert len(lines()) == 3
    printer.committed([None, None, None], True)  # the two deltas printed and the response
    assert lines()[3:] == ["llm_response", "llm_delta"]
    run.emit(RunEvent("a", "step_end", "", extra={"status": "done"}))
    printer.finish()  # the recorder is closed: the rest
    assert lines()[5:] == ["step_end"]


async def test_a_run_not_recorded_is_printed_in_frames_with_one_write_each() -> None:
    wf = flow([start(), agent("a")], [link("s", "a")])

    class Out(io.StringIO):
        writes = 0

        def write(self, text: str) -> int:
            Out.writes += 1
            return super().write(text)

    out = Out()
    printer = Printer(out, wf, jsonl=False)
    run = _Run()
    printer.follow(run)
    for i in range(50):
        run.emit(RunEvent("a", "start_prompt", f"p{i}"))
    assert out.getvalue() == ""
    await asyncio.sleep(0.05)
    assert out.getvalue().count("start_prompt") == 50 and Out.writes == 1
    run.emit(RunEvent("s", "run_status", "completed"))  # printed at once, with the summary
    assert "completed" in out.getvalue() and "nodes:" in out.getvalue() and Out.writes == 2


async def test_a_quiet_stream_passes_on_what_it_held() -> None:
    """Two pieces 5 ms apart, then 0.6 s of silence: the second piece (held, as it came within
    the frame) is emitted by the timer, not with the piece after the pause."""
    events: list[bytes | float] = [
        _chunk({"role": "assistant", "content": ""}),
        _chunk({"content": "one "}),
        0.005,
        _chunk({"content": "two "}),
        0.6,
        _chunk({"content": "three"}),
        _chunk({}, "stop"),
    ]
    with FakeLLMServer() as server:
        server.handler = lambda rec: Reply(events=list(events))
        provider = OpenAIProvider(
            base_url=server.base_url, api_key="k", http=HttpSettings(connectTimeout=1, readTimeout=5, maxRetries=0)
        )
        run = Run(flow([start(), agent("a")], [link("s", "a")]), provider, delta_interval=0.05)
        await run.start()
    deltas = [e for e in run.events if e.type == "llm_delta"]
    assert "".join(e.content for e in deltas) == "one two three"
    assert [e.content for e in deltas][-1] == "three"
    assert deltas[-1].timestamp - deltas[-2].timestamp > 0.4  # "two" did not wait for "three"


def test_the_stamp_of_a_line_is_format_timestamp() -> None:
    from engine.cli.printer import _stamp
    from engine.run.events import format_timestamp

    base = 1_764_170_000
    cases = [
        base + k + f
        for k in range(3)
        for f in (0.0, 0.0004999, 0.0005, 0.123456789, 0.9994999, 0.9995, 0.99999949, 0.9999995, 0.99999999)
    ]
    cases += [0.0, 1e-7, 86_399.9999996, -1.5, 253_402_300_799.0] + [base + i * 0.0137 for i in range(2000)]
    for ts in cases:
        assert _stamp(ts) == format_timestamp(ts), ts


def test_a_batch_of_wire_lines_is_to_json_at_any_time() -> None:
    """wire_text (the batch) makes each event's timestamp inline: the same text as to_json's."""
    base = 1_764_170_000
    stamps = [base + k + f for k in range(3) for f in (0.0, 0.0005, 0.9994999, 0.9995, 0.9999995, 0.99999999)]
    stamps += [0.0, -1.5, 86_399.9999996] + [base + i * 0.0137 for i in range(500)]
    # just before the second of the line before (a clock stepped back): the same second's text or the one before
    stamps += [base + 5.0 + d for d in (0.0, -1e-7, -4e-7, -5e-7, -6e-7, 0.0, -1e-3, 1e-7, 0.9999996, 1.0)]
    events = [
        RunEvent(f"n{i % 7}", "step_end", "", timestamp=ts, extra_json='{"status": "done", "durationMs": 0}')
        for i, ts in enumerate(stamps)
    ]
    assert wire_text(events) == "".join(ev.to_json() + "\n" for ev in events)


async def test_the_summary_is_the_reducers_without_feeding_it_every_event() -> None:
    """The readable printer feeds the reducer only the events that can change what the summary
    shows (not prompts, nor a finished step's end): the summary is the one of every event."""
    wf = flow(
        [start(), agent("a"), cond("c", ("contains", "hello")), agent("b"), agent("x"), approval("p")],
        [link("s", "a"), link("a", "c"), link("c", "b", "condition-0"), link("c", "x", "false"), link("b", "p")],
    )
    out = io.StringIO()
    printer = Printer(out, wf, jsonl=False)
    run = Run(wf, EchoProvider(), keep_events=True, check=False)
    printer.follow(run)
    await run.start()
    printer.finish()
    full = RunState.of(wf, run.events or [])
    assert printer.state.node_states() == full.node_states()
    assert printer.state.pending_approvals == full.pending_approvals == ["p"]
    assert "nodes: 4 done · 1 waiting · 1 idle · approvals waiting: Approval" in out.getvalue()
    jsonl = Printer(io.StringIO(), wf, jsonl=True)
    jsonl.write(list(run.events or []))
    assert jsonl._state is None  # --jsonl prints no summary: no reducer, no index of the workflow


def test_jsonl_keeps_a_provider_problem_for_the_way_out() -> None:
    """With --jsonl the printer feeds the reducer only llm_error events (found by one search of
    the batch's text): the command still says what to do when the provider could not serve."""
    wf = flow([start(), agent("a")], [link("s", "a")])
    printer = Printer(io.StringIO(), wf, jsonl=True)
    quoted = RunEvent("a", "llm_response", 'he said "type": "llm_error"')  # the text alone finds nothing
    problem = RunEvent(
        "a", "llm_error", "cannot reach it", extra={"providerUnavailable": True, "provider": "ollama", "model": "m"}
    )
    printer.write([RunEvent("s", "step_start", "Start"), quoted])
    assert printer.state.provider_problem is None
    printer.write([RunEvent("a", "step_start", "a"), problem, RunEvent("a", "step_end", "failed")])
    assert printer.state.provider_problem == {
        "node": "a",
        "message": "cannot reach it",
        "provider": "ollama",
        "model": "m",
    }
