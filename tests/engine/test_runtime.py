"""Runtime semantics (docs/design.md, "Run model (runtime semantics)"): exact event sequences per node type,
concurrency, pause/resume/queue/defer, cancel, snapshot/restore, loop guard."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import pytest

from engine import EchoProvider, Run, RunStateError, RunStatus, parse_workflow

from .flows import Recorder, agent, approval, cond, flow, link, seq, start, types

SYS = "system"


async def test_start_agent_sequence_exact() -> None:
    wf = flow([start(text="hi"), agent("a", name="Writer")], [link("s", "a")])
    run = Run(wf, Recorder())
    assert await run.start() == RunStatus.COMPLETED
    assert seq(run) == [
        (SYS, "run_status", "running"),
        ("s", "step_start", "Start"),
        ("a", "step_start", "Writer"),
        ("a", "start_prompt", "hi"),
        ("a", "llm_response", "a(hi)"),
        (SYS, "run_status", "completed"),
    ]
    assert run.outputs == {"s": "hi", "a": "a(hi)"}
    assert run.records["a"].input == "hi" and run.records["a"].output == "a(hi)"


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": 7, "completion_tokens": 3},
        {"completion_tokens": 5},
        {"prompt_tokens": 2, "completion_tokens": 1, "cached_tokens": 1},
        None,
    ],
)
async def test_usage_reaches_the_response_event_and_the_record(usage) -> None:
    from engine.llm.base import LLMResult

    class Fixed:
        name = "fixed"

        async def complete(self, inv, ctx):
            return LLMResult("ok", usage)

    wf = flow([start(text="hi"), agent("a")], [link("s", "a")])
    run = Run(wf, Fixed())
    await run.start()
    response = next(e for e in run.events if e.type == "llm_response")
    assert response.extra == ({"usage": usage} if usage else None)
    record = run.records["a"]
    assert record.usage == usage and record.output == "ok" and record.error is None
    assert record.started == run.events[run.events.index(response) - 1].timestamp
    assert record.ended == response.timestamp and record.duration >= 0


async def test_initial_input_overrides_start_and_empty_start_is_empty_string() -> None:
    wf = flow([start(text="from file"), agent("a")], [link("s", "a")])
    run = Run(wf, Recorder(), initial_input="from user")
    await run.start()
    assert run.outputs["a"] == "a(from user)"
    wf2 = parse_workflow(
        {"nodes": [{"id": "s", "type": "start"}, agent("a", "[{{PREVIOUS_OUTPUT}}]")], "connections": [link("s", "a")]}
    )
    run2 = Run(wf2, Recorder())
    await run2.start()
    assert run2.outputs["a"] == "a([])"


async def test_user_prompt_template_replaces_every_placeholder() -> None:
    wf = flow([start(text="X"), agent("a", "<{{PREVIOUS_OUTPUT}}|{{PREVIOUS_OUTPUT}}>")], [link("s", "a")])
    run = Run(wf, Recorder())
    await run.start()
    assert ("a", "start_prompt", "<X|X>") in seq(run)


async def test_wire_form_fields() -> None:
    wf = flow([start(), agent("a")], [link("s", "a")])
    run = Run(wf, EchoProvider())
    await run.start()
    wire = [e.to_wire() for e in run.events]
    for w in wire:
        assert {"timestamp", "nodeId", "type", "content"} <= set(w)
        assert w["timestamp"].endswith("Z") and "T" in w["timestamp"]
    json.dumps(wire)


@pytest.mark.parametrize(
    "op,value,text,branch",
    [
        ("contains", "refund", "I want a REFUND now", "yes"),
        ("contains", "  Refund ", "i want a refund", "yes"),  # value trimmed and case-folded
        ("contains", "refund", "all good", "no"),
        ("equal", "yes", "YES", "yes"),
        ("equal", "yes", "yes please", "no"),
        ("equal", " Yes ", "yes", "yes"),
        ("contains", "", "anything", "no"),  # an empty value never matches
        ("equal", "   ", "", "no"),
    ],
)
async def test_if_operators(op: str, value: str, text: str, branch: str) -> None:
    wf = flow(
        [start(text=text), cond("c", (op, value)), agent("yes"), agent("no")],
        [link("s", "c"), link("c", "yes", "condition-0"), link("c", "no", "false")],
    )
    run = Run(wf, Recorder())
    assert await run.start() == RunStatus.COMPLETED
    ran = [n for n, t in types(run) if t == "llm_response"]
    assert ran == [branch]
    checks = [c for n, t, c in seq(run) if t == "logic_check"]
    if branch == "yes":
        assert checks == [f"Condition 1: {op} '{value.strip()}' → matched"]
    else:
        assert checks == [f"Condition 1: {op} '{value.strip()}' → no match", "No condition matched → Else branch"]


async def test_if_first_match_wins_and_exact_sequence() -> None:
    wf = flow(
        [
            start(text="Refund and cancel"),
            cond("c", ("contains", "cancel"), ("contains", "refund")),
            agent("a0"),
            agent("a1"),
            agent("f"),
        ],
        [link("s", "c"), link("c", "a0", "condition-0"), link("c", "a1", "condition-1"), link("c", "f", "false")],
    )
    run = Run(wf, Recorder())
    await run.start()
    assert seq(run) == [
        (SYS, "run_status", "running"),
        ("s", "step_start", "Start"),
        ("c", "step_start", "Condition"),
        ("c", "logic_check", "Condition 1: contains 'cancel' → matched"),
        ("a0", "step_start", "a0"),
        ("a0", "start_prompt", "Refund and cancel"),
        ("a0", "llm_response", "a0(Refund and cancel)"),
        (SYS, "run_status", "completed"),
    ]


async def test_if_passes_non_string_output_as_json() -> None:
    # An approval's decision object reaching an if node is compared as JSON text.
    wf = flow(
        [start(text="x"), approval("ap"), cond("c", ("contains", '"decision"')), agent("a")],
        [link("s", "ap"), link("ap", "a", "approve")],
    )
    run = Run(wf, Recorder())
    await run.start()
    from engine.run.scheduler import as_text

    assert as_text({"decision": "approve"}) == '{"decision": "approve"}'
    assert as_text(None) == ""


async def test_legacy_condition_and_true_handle() -> None:
    raw = {
        "nodes": [
            start(text="please REFUND"),
            {"id": "c", "type": "if", "data": {"condition": "refund"}},
            agent("t"),
            agent("f"),
        ],
        "connections": [link("s", "c"), link("c", "t", "true"), link("c", "f", "false")],
    }
    wf = parse_workflow(raw)
    run = Run(wf, Recorder())
    await run.start()
    assert [n for n, t in types(run) if t == "llm_response"] == ["t"]
    # A workflow built in code (not normalised by the loader) with a `true` handle works too.
    wf2 = flow(
        [start(text="refund"), cond("c", ("contains", "refund")), agent("t")],
        [link("s", "c"), link("c", "t", "condition-0")],
    )
    wf2.connections[1].sourceHandle = "true"
    run2 = Run(wf2, Recorder())
    await run2.start()
    assert [n for n, t in types(run2) if t == "llm_response"] == ["t"]


async def test_subagent_edges_never_followed() -> None:
    wf = flow([start(), agent("p", subagents=True), agent("child")], [link("s", "p"), link("p", "child", "subagent")])
    run = Run(wf, Recorder())
    await run.start()
    assert "child" not in [n for n, _ in types(run)]
    assert run.status == RunStatus.COMPLETED


async def test_fan_out_branches_overlap_in_time() -> None:
    wf = flow([start(), agent("a"), agent("b")], [link("s", "a"), link("s", "b")])
    rec = Recorder(delays={"a": 0.3, "b": 0.3})
    t0 = time.monotonic()
    run = Run(wf, rec)
    await run.start()
    elapsed = time.monotonic() - t0
    (a0, a1), (b0, b1) = rec.spans["a"], rec.spans["b"]
    assert a0 < b1 and b0 < a1, "the two branches must overlap"
    assert elapsed < 0.55
    assert run.outputs["a"] == "a(hello)" and run.outputs["b"] == "b(hello)"


async def test_approve_and_reject_paths_exact() -> None:
    def make() -> Run:
        wf = flow(
            [
                start(text="draft"),
                approval("ap", "Send it?"),
                agent("yes", "ship: {{PREVIOUS_OUTPUT}}"),
                agent("no", "redo: {{PREVIOUS_OUTPUT}}"),
            ],
            [link("s", "ap"), link("ap", "yes", "approve"), link("ap", "no", "reject")],
        )
        return Run(wf, Recorder())

    run = make()
    assert await run.start() == RunStatus.PAUSED
    assert run.waiting_for_input and run.current_node_id == "ap" and run.pending_approval == "ap"
    assert seq(run)[-3:] == [
        ("ap", "step_start", "Approval"),
        ("ap", "wait_input", "Send it?"),
        (SYS, "run_status", "paused"),
    ]
    n = len(seq(run))
    assert await run.resume("approve", "fine") == RunStatus.COMPLETED
    assert seq(run)[n:] == [
        ("ap", "input_received", json.dumps({"decision": "approve", "note": "fine"})),
        (SYS, "run_status", "running"),
        ("yes", "step_start", "yes"),
        ("yes", "start_prompt", "ship: draft"),  # the output under review, never the decision object
        ("yes", "llm_response", "yes(ship: draft)"),
        (SYS, "run_status", "completed"),
    ]
    assert run.outputs["ap"] == {"decision": "approve", "note": "fine"}
    assert not run.waiting_for_input and run.current_node_id is None

    run = make()
    await run.start()
    assert await run.resume({"decision": "REJECTED", "note": "too long"}) == RunStatus.COMPLETED
    assert [n for n, t in types(run) if t == "llm_response"] == ["no"]
    assert ("ap", "input_received", json.dumps({"decision": "reject", "note": "too long"})) in seq(run)


async def test_approval_object_never_leaks_into_agent_prompt() -> None:
    # Approval -> agent with an empty user prompt, and approval -> if -> agent.
    wf = flow(
        [
            start(text="the text"),
            agent("w"),
            approval("ap"),
            agent("next"),
            cond("c", ("contains", "text")),
            agent("after_if", "again {{PREVIOUS_OUTPUT}}"),
        ],
        [
            link("s", "w"),
            link("w", "ap"),
            link("ap", "next", "approve"),
            link("ap", "c", "approve"),
            link("c", "after_if", "condition-0"),
        ],
    )
    run = Run(wf, Recorder())
    await run.start()
    await run.resume(True)
    prompts = {n: c for n, t, c in seq(run) if t == "start_prompt"}
    assert prompts["next"] == "w(the text)"
    assert prompts["after_if"] == "again w(the text)"
    assert all("decision" not in c for c in prompts.values())


async def test_decision_input_uses_last_text_output() -> None:
    # If the input that reaches an agent *is* a decision (an AgentFlow-style run restored with
    # a decision as deferred input), the last real text output is used instead.
    wf = flow(
        [start(text="t"), approval("ap"), agent("a", "got {{PREVIOUS_OUTPUT}}"), agent("b")],
        [link("s", "ap"), link("ap", "b", "reject")],
    )
    run = Run(wf, Recorder())
    await run.start()
    snap = run.snapshot()
    snap["deferred"] = [{"nodeId": "a", "input": {"decision": "approve", "note": ""}}]
    snap["lastTextOutput"] = "real text"
    restored = Run.restore(snap, Recorder())
    assert await restored.resume("approve") == RunStatus.COMPLETED
    assert ("a", "start_prompt", "got real text") in seq(restored)


async def test_pause_while_sibling_running_defers_then_drains() -> None:
    # s -> ap (approval) and s -> slow -> after; `after` is deferred while paused.
    wf = flow(
        [start(text="x"), approval("ap"), agent("slow"), agent("after"), agent("ok")],
        [link("s", "ap"), link("s", "slow"), link("slow", "after"), link("ap", "ok", "approve")],
    )
    rec = Recorder(delays={"slow": 0.2})
    run = Run(wf, rec)
    assert await run.start() == RunStatus.PAUSED
    t = types(run)
    assert t.index(("ap", "wait_input")) < t.index(("slow", "llm_response")), "paused while the sibling still ran"
    assert ("after", "step_start") not in t, "the sibling's downstream must be deferred while paused"
    assert run.snapshot()["deferred"] == [{"nodeId": "after", "input": "slow(x)"}]
    n = len(seq(run))
    assert await run.resume("approve") == RunStatus.COMPLETED
    assert types(run)[n:] == [
        ("ap", "input_received"),
        (SYS, "run_status"),
        ("ok", "step_start"),
        ("ok", "start_prompt"),
        ("ok", "llm_response"),
        ("after", "step_start"),
        ("after", "start_prompt"),
        ("after", "llm_response"),
        (SYS, "run_status"),
    ]
    assert run.outputs["after"] == "after(slow(x))"


async def test_two_approvals_in_parallel_branches_handled_in_order() -> None:
    wf = flow(
        [start(text="x"), approval("ap1", "first?"), approval("ap2", "second?"), agent("a1"), agent("a2")],
        [link("s", "ap1"), link("s", "ap2"), link("ap1", "a1", "approve"), link("ap2", "a2", "reject")],
    )
    run = Run(wf, Recorder())
    assert await run.start() == RunStatus.PAUSED
    assert run.pending_approval == "ap1" and run.queued_approvals == ["ap2"]
    assert ("ap2", "approval_queued") in types(run)
    assert await run.resume("approve") == RunStatus.PAUSED
    assert run.pending_approval == "ap2" and run.current_node_id == "ap2"
    assert seq(run)[-2:] == [("ap2", "wait_input", "second?"), (SYS, "run_status", "paused")]
    assert await run.resume("reject", "no") == RunStatus.COMPLETED
    assert [n for n, t in types(run) if t == "llm_response"] == ["a1", "a2"]
    assert [n for n, t in types(run) if t == "input_received"] == ["ap1", "ap2"]


async def test_resume_when_not_paused_is_refused() -> None:
    wf = flow([start(), agent("a")], [link("s", "a")])
    run = Run(wf, Recorder())
    await run.start()
    with pytest.raises(RunStateError):
        await run.resume("approve")
    with pytest.raises(ValueError):
        from engine import normalise_decision

        normalise_decision("maybe")


async def test_cancel_during_slow_agent_call() -> None:
    wf = flow([start(), agent("slow"), agent("never")], [link("s", "slow"), link("slow", "never")])
    rec = Recorder(delays={"slow": 30})
    run = Run(wf, rec)
    task = asyncio.create_task(run.start())
    for _ in range(100):
        await asyncio.sleep(0.01)
        if rec.calls:
            break
    t0 = time.monotonic()
    run.cancel()
    status = await asyncio.wait_for(task, 2)
    assert status == RunStatus.CANCELLED
    assert time.monotonic() - t0 < 0.5
    assert rec.cancelled == ["slow"]
    assert ("never", "step_start") not in types(run)
    assert seq(run)[-1] == (SYS, "run_status", "cancelled")


async def test_cancel_a_paused_run() -> None:
    wf = flow([start(), approval("ap"), agent("a")], [link("s", "ap"), link("ap", "a", "approve")])
    run = Run(wf, Recorder())
    await run.start()
    run.cancel()
    assert run.status == RunStatus.CANCELLED and not run.waiting_for_input
    with pytest.raises(RunStateError):
        await run.resume("approve")


async def test_llm_error_fails_run_and_stops_other_branches() -> None:
    wf = flow(
        [start(), agent("bad"), agent("slow"), agent("after_slow")],
        [link("s", "bad"), link("s", "slow"), link("slow", "after_slow")],
    )
    rec = Recorder(delays={"slow": 5, "bad": 0.05}, fail={"bad": "model exploded"})
    run = Run(wf, rec)
    assert await asyncio.wait_for(run.start(), 2) == RunStatus.FAILED
    s = seq(run)
    assert ("bad", "llm_error", "model exploded") in s
    assert ("bad", "error", "Agent 'bad' failed: model exploded") in s
    assert s[-1] == (SYS, "run_status", "failed")
    assert rec.cancelled == ["slow"]
    assert "model exploded" in run.error


async def test_provider_bug_is_reported_not_raised() -> None:
    class Broken:
        name = "broken"

        async def complete(self, inv, ctx):  # type: ignore[no-untyped-def]
            raise KeyError("oops")

    wf = flow([start(), agent("a")], [link("s", "a")])
    run = Run(wf, Broken())
    assert await run.start() == RunStatus.FAILED
    assert any(t == "llm_error" and "KeyError" in c for _, t, c in seq(run))


async def test_validation_errors_fail_before_any_step() -> None:
    wf = flow([agent("a")], [])
    run = Run(wf, Recorder())
    assert await run.start() == RunStatus.FAILED
    assert ("s", "step_start") not in types(run)
    assert any(t == "error" for _, t in types(run))


async def test_snapshot_restored_in_fresh_engine_and_resumed() -> None:
    wf = flow(
        [start(text="x"), agent("w"), approval("ap1"), approval("ap2"), agent("a1"), agent("a2")],
        [
            link("s", "w"),
            link("w", "ap1"),
            link("w", "ap2"),
            link("ap1", "a1", "approve"),
            link("ap2", "a2", "approve"),
        ],
    )
    run = Run(wf, Recorder())
    await run.start()
    text = json.dumps(run.snapshot())  # must be plain JSON
    fresh = Run.restore(json.loads(text), Recorder())
    assert fresh.status == RunStatus.PAUSED and fresh.pending_approval == "ap1" and fresh.queued_approvals == ["ap2"]
    assert fresh.run_id == run.run_id
    assert await fresh.resume("approve") == RunStatus.PAUSED
    assert await fresh.resume("approve") == RunStatus.COMPLETED
    assert fresh.outputs["a1"] == "a1(w(x))" and fresh.outputs["a2"] == "a2(w(x))"
    assert [n for n, t in types(fresh) if t == "llm_response"] == ["a1", "a2"]


async def test_snapshot_restore_in_another_process(tmp_path) -> None:  # type: ignore[no-untyped-def]
    wf = flow(
        [start(text="x"), approval("ap"), agent("a", "done: {{PREVIOUS_OUTPUT}}")],
        [link("s", "ap"), link("ap", "a", "approve")],
    )
    run = Run(wf, EchoProvider())
    await run.start()
    snap = tmp_path / "snap.json"
    snap.write_text(json.dumps(run.snapshot()))
    code = (
        "import asyncio, json, sys\n"
        "from engine import Run, EchoProvider\n"
        "r = Run.restore(json.load(open(sys.argv[1])), EchoProvider())\n"
        "print(asyncio.run(r.resume('approve')))\n"
        "print(r.outputs['a'])\n"
    )
    proc = await asyncio.create_subprocess_exec(sys.executable, "-c", code, str(snap), stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    assert out.decode().split("\n")[:2] == ["completed", "done: x"]


async def test_snapshot_refused_while_steps_run() -> None:
    wf = flow([start(), agent("slow")], [link("s", "slow")])
    run = Run(wf, Recorder(delays={"slow": 0.2}))
    task = asyncio.create_task(run.start())
    await asyncio.sleep(0.05)
    with pytest.raises(RunStateError):
        run.snapshot()
    await task


async def test_execution_loop_allowed_until_visit_limit() -> None:
    # a -> c -> a loop that exits when the text contains "a(a(a(": three turns.
    wf = flow(
        [start(text="go"), agent("a"), cond("c", ("contains", "a(a(a(")), agent("done")],
        [link("s", "a"), link("a", "c"), link("c", "done", "condition-0"), link("c", "a", "false")],
    )
    run = Run(wf, Recorder())
    assert await run.start() == RunStatus.COMPLETED
    assert run.visits["a"] == 3


async def test_loop_guard_fails_the_run() -> None:
    wf = flow([start(), agent("a"), agent("b")], [link("s", "a"), link("a", "b"), link("b", "a")])
    run = Run(wf, Recorder(), max_visits=5)
    assert await asyncio.wait_for(run.start(), 5) == RunStatus.FAILED
    errors = [(n, c) for n, t, c in seq(run) if t == "error"]
    assert errors and errors[0][0] == "a" and "more than 5 times" in errors[0][1]
    assert run.visits["a"] == 6 and run.visits["b"] == 5


async def test_chain_of_10000_agents_runs_to_the_end() -> None:
    n = 10_000
    nodes = [start()] + [agent(f"a{i}") for i in range(n)]
    links = [link("s", "a0")] + [link(f"a{i}", f"a{i + 1}") for i in range(n - 1)]
    wf = flow(nodes, links)
    run = Run(wf, EchoProvider(), keep_events=False)
    assert await run.start() == RunStatus.COMPLETED
    assert run.outputs[f"a{n - 1}"] == "hello"


async def test_iter_events_streams_until_settled() -> None:
    wf = flow([start(), approval("ap"), agent("a")], [link("s", "ap"), link("ap", "a", "approve")])
    run = Run(wf, Recorder())
    got: list[str] = []

    async def consume() -> None:
        async for ev in run.iter_events():
            got.append(str(ev.type))

    consumer = asyncio.create_task(consume())
    await asyncio.sleep(0)
    await run.start()
    await asyncio.wait_for(consumer, 1)
    assert got == [str(e.type) for e in run.events]
    assert got[-1] == "run_status"


async def test_callback_receives_events_in_order() -> None:
    wf = flow([start(), agent("a"), agent("b")], [link("s", "a"), link("a", "b")])
    seen: list[str] = []
    run = Run(wf, Recorder(), on_event=lambda e: seen.append(f"{e.node_id}:{e.type}"))
    await run.start()
    assert seen == [f"{e.node_id}:{e.type}" for e in run.events]
