"""Issue 15, engine side (docs/design.md "Data flow", "Step policies", "More node kinds"): variables,
templates, step policies, join and loop, with exact event sequences (step_end included)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from engine import EchoProvider, Run, RunStatus, parse_workflow, validate
from engine.graph.variables import VariableError
from engine.llm.config import HttpSettings
from engine.llm.openai import OpenAIProvider
from tests.fakes.openai_server import FakeLLMServer, error_reply, flaky_handler, openai_plain, openai_text

from .flows import Recorder, agent, approval, cond, flow, link, seq, start

SYS = "system"
ROOT = Path(__file__).resolve().parents[2]


def _start_vars(*variables: dict[str, Any], text: str = "hello") -> dict[str, Any]:
    return {"id": "s", "type": "start", "data": {"initialInput": text, "variables": list(variables)}}


def _policy(node: dict[str, Any], **policy: Any) -> dict[str, Any]:
    node["data"].update(policy)
    return node


def join(id: str, **data: Any) -> dict[str, Any]:
    return {"id": id, "type": "join", "data": data}


def loop(id: str, until: str = "", max_iterations: int | None = None) -> dict[str, Any]:
    data: dict[str, Any] = {"until": until}
    if max_iterations is not None:
        data["maxIterations"] = max_iterations
    return {"id": id, "type": "loop", "data": data}


def ends(run: Run) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for e in run.events:
        if e.type == "step_end":
            out.setdefault(e.node_id, []).append(e.extra["status"])
    return out


# ---------------------------------------------------------------------------- variables
VARS = (
    {"name": "topic", "value": "cats", "type": "string"},
    {"name": "count", "value": "2", "type": "number", "description": "how many"},
    {"name": "loud", "value": False, "type": "boolean"},
    {"name": "cfg", "value": '{"items": [{"name": "first"}]}', "type": "json"},
)


async def test_variable_defaults_fill_the_prompt_with_exact_events() -> None:
    wf = flow(
        [_start_vars(*VARS), agent("a", "Write {{count}} lines on {{topic}} (loud: ${loud}, {{cfg.items[0].name}})")],
        [link("s", "a")],
    )
    run = Run(wf, Recorder())
    assert run.variables == {"topic": "cats", "count": 2, "loud": False, "cfg": {"items": [{"name": "first"}]}}
    assert await run.start() == RunStatus.COMPLETED
    assert seq(run, ends=True) == [
        (SYS, "run_status", "running"),
        ("s", "step_start", "Start"),
        ("s", "step_end", "done"),
        ("a", "step_start", "a"),
        ("a", "start_prompt", "Write 2 lines on cats (loud: false, first)"),
        ("a", "llm_response", "a(Write 2 lines on cats (loud: false, first))"),
        ("a", "step_end", "done"),
        (SYS, "run_status", "completed"),
    ]


async def test_run_arguments_override_defaults_and_are_coerced() -> None:
    wf = flow([_start_vars(*VARS), agent("a", "{{topic}}/{{count}}/{{loud}}")], [link("s", "a")])
    run = Run(wf, Recorder(), variables={"topic": "dogs", "count": "3.5", "loud": "yes", "extra": "kept"})
    restored = Run.restore(json.loads(json.dumps(run.snapshot())), Recorder())  # a resume keeps the arguments
    assert restored.variables == run.variables
    assert run.variables == {
        "topic": "dogs",
        "count": 3.5,
        "loud": True,
        "cfg": {"items": [{"name": "first"}]},
        "extra": "kept",
    }
    await run.start()
    assert run.records["a"].input == "dogs/3.5/true"


@pytest.mark.parametrize(
    "given, message",
    [
        ({}, "The variable 'who' is required"),
        ({"who": "x", "n": "many"}, "The variable 'n' (number) cannot take the value given: 'many' is not a number"),
        ({"who": "x", "j": "{broken"}, "The variable 'j' (json) cannot take the value given"),
    ],
)
def test_bad_or_missing_variable_refuses_the_run(given: dict[str, str], message: str) -> None:
    wf = flow(
        [
            _start_vars(
                {"name": "who", "required": True}, {"name": "n", "type": "number"}, {"name": "j", "type": "json"}
            ),
            agent("a"),
        ],
        [link("s", "a")],
    )
    with pytest.raises(VariableError) as err:
        Run(wf, Recorder(), variables=given)
    assert message in str(err.value)


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "editor.launcher", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )


def test_cli_var_overrides_required_missing_and_coercion_failure(tmp_path: Path) -> None:
    path = tmp_path / "v.flow.json"
    path.write_text(
        json.dumps(
            {
                "nodes": [
                    _start_vars({"name": "who", "required": True}, {"name": "n", "value": 1, "type": "number"}),
                    agent("a", "hi {{who}} x{{n}}"),
                ],
                "connections": [link("s", "a")],
            }
        )
    )
    res = _cli("run", str(path), "--provider", "echo", "--jsonl", "--no-store", "--var", "who=Ann", "--var", "n=4")
    assert res.returncode == 0, res.stderr
    prompts = [json.loads(line)["content"] for line in res.stdout.splitlines() if '"start_prompt"' in line]
    assert prompts == ["hi Ann x4"]
    res = _cli("run", str(path), "--provider", "echo", "--jsonl", "--no-store")
    assert res.returncode == 2 and "'who' is required" in res.stderr and res.stdout == ""
    res = _cli("run", str(path), "--provider", "echo", "--no-store", "--var", "who=Ann", "--var", "n=lots")
    assert res.returncode == 2 and "'n' (number)" in res.stderr and "'lots' is not a number" in res.stderr
    res = _cli("run", str(path), "--provider", "echo", "--no-store", "--var", "oops")
    assert res.returncode == 2 and "NAME=VALUE" in res.stderr


# ---------------------------------------------------------------------------- templates
async def test_output_var_keeps_structure_and_whole_field_reference_keeps_type() -> None:
    from engine import NodeData, NodeSpec, register_node_spec, unregister_node_spec

    class ProbeData(NodeData):
        value: Any = None

    class Probe(NodeSpec):
        kind = "probe_df"
        data_model = ProbeData

        async def execute(self, ctx: Any, node: Any, value: Any) -> Any:
            return ctx.resolve_data(node, value).value.get("value"), "output"

    register_node_spec(Probe())
    try:
        wf = parse_workflow(
            {
                "nodes": [
                    _start_vars({"name": "cfg", "value": {"a": [1, 2]}, "type": "json"}),
                    {"id": "p", "type": "probe_df", "data": {"value": "{{cfg}}", "outputVar": "got"}},
                    {"id": "q", "type": "probe_df", "data": {"value": "${got.a[-1]} and {{ got }} {{nope.x}} ${also}"}},
                    {"id": "r", "type": "probe_df", "data": {"value": "{{got.a[1]}}"}},
                ],
                "connections": [link("s", "p"), link("p", "q"), link("q", "r")],
            }
        )
        run = Run(wf, Recorder())
        assert await run.start() == RunStatus.COMPLETED
        assert run.outputs["p"] == {"a": [1, 2]} and run.variables["got"] == {"a": [1, 2]}
        assert run.outputs["q"] == '2 and {"a":[1,2]} {{nope.x}} ${also}'  # unresolved stays as written
        assert run.outputs["r"] == 2  # a whole-field reference keeps its type
        issues = [(i.code, i.message) for i in validate(wf)]
        assert [c for c, _m in issues if c == "unknown_reference"] == ["unknown_reference", "unknown_reference"]
        assert any("'{{nope.x}}'" in m for _c, m in issues) and any("'${also}'" in m for _c, m in issues)
    finally:
        unregister_node_spec("probe_df")


async def test_builtins_input_run_and_workflow_name() -> None:
    wf = parse_workflow(
        {
            "name": "WF",
            "nodes": [start(text="in"), agent("a", "{{input}}|${PREVIOUS_OUTPUT}|{{workflow.name}}|{{run.id}}")],
            "connections": [link("s", "a")],
        }
    )
    run = Run(wf, Recorder(), run_id="r1")
    await run.start()
    assert run.records["a"].input == "in|in|WF|r1"


async def test_legacy_previous_output_unchanged_after_an_approval() -> None:
    wf = flow(
        [start(text="draft"), approval("ap"), agent("a", "x {{PREVIOUS_OUTPUT}} y {{PREVIOUS_OUTPUT}}")],
        [link("s", "ap"), link("ap", "a", "approve")],
    )
    run = Run(wf, Recorder())
    await run.start()
    await run.resume("approve", "fine")
    assert run.records["a"].input == "x draft y draft"


async def test_secrets_are_sent_but_masked_in_every_event_and_record(monkeypatch) -> None:
    monkeypatch.setenv("FLOWDESK_DF_SECRET", "s3cr3t-value")
    wf = flow(
        [
            start(text="t"),
            agent("a", "key={{secrets.FLOWDESK_DF_SECRET}} env=${env.FLOWDESK_DF_SECRET}"),
            approval("ap"),
            agent("z"),
        ],
        [link("s", "a"), link("a", "ap"), link("ap", "z", "approve")],
    )
    rec = Recorder()
    run = Run(wf, rec)
    assert await run.start() == RunStatus.PAUSED
    assert rec.calls == [("a", "key=s3cr3t-value env=s3cr3t-value")]  # what is sent is the real value
    assert seq(run)[3:5] == [("a", "start_prompt", "key=•••• env=••••"), ("a", "llm_response", "a(key=•••• env=••••)")]
    everything = json.dumps([e.to_wire() for e in run.events]) + json.dumps(run.snapshot())
    everything += json.dumps({k: tuple(v) for k, v in run.records.items()})
    assert "s3cr3t" not in everything


async def test_a_streamed_answer_that_echoes_a_secret_shows_it_masked_even_split_across_pieces(monkeypatch) -> None:
    monkeypatch.setenv("FLOWDESK_DF_SECRET", "s3cr3t-value")
    wf = flow([start(text="t"), agent("a", "key={{secrets.FLOWDESK_DF_SECRET}}")], [link("s", "a")])
    with FakeLLMServer() as server:
        # "you sent s3cr3t-value, ok" in pieces of 5: the secret arrives cut in three
        server.push(openai_text("you sent s3cr3t-value, ok", pieces=5, pause=0.02))
        run = Run(wf, _openai(server), delta_interval=0.0)
        assert await run.start() == RunStatus.COMPLETED
        assert "key=s3cr3t-value" in server.requests[0].body.decode()
    deltas = [e.content for e in run.events if e.type == "llm_delta"]
    assert len(deltas) >= 3
    assert "".join(deltas) == "you sent ••••, ok"
    assert all("s3c" not in d and "value" not in d for d in deltas)
    assert [e.content for e in run.events if e.type == "llm_response"] == ["you sent ••••, ok"]


async def test_a_subagents_prompt_is_resolved_with_the_calls_input_and_its_secrets_masked(monkeypatch) -> None:
    monkeypatch.setenv("FLOWDESK_DF_SECRET", "s3cr3t-value")
    s = start(text="hello")
    s["data"]["variables"] = [{"name": "topic", "value": "cats"}]
    child = agent("c", "about {{topic}}: {{PREVIOUS_OUTPUT}} [{{secrets.FLOWDESK_DF_SECRET}}]", name="Child")
    wf = flow([s, agent("p", "", subagents=True), child], [link("s", "p"), link("p", "c", "subagent")])
    run = Run(wf, EchoProvider())
    assert await run.start() == RunStatus.COMPLETED
    ends = [e for e in run.events if e.type == "subagent_call_end"]
    assert [e.extra["message"] if "message" in e.extra else e.content for e in ends] == ["about cats: hello [••••]"]
    assert "s3cr3t" not in json.dumps([e.to_wire() for e in run.events])


async def test_approval_note_and_decision_after_approve_and_reject() -> None:
    def make() -> Run:
        wf = flow(
            [
                start(text="draft"),
                approval("ap"),
                agent("yes", "ok {{APPROVAL_DECISION}}: {{APPROVAL_NOTE}}"),
                agent("no", "revise {{PREVIOUS_OUTPUT}} per: {{APPROVAL_NOTE}} ({{APPROVAL_DECISION}})"),
            ],
            [link("s", "ap"), link("ap", "yes", "approve"), link("ap", "no", "reject")],
        )
        return Run(wf, Recorder())

    run = make()
    await run.start()
    await run.resume("reject", "shorter please")
    assert run.records["no"].input == "revise draft per: shorter please (reject)"
    assert ends(run) == {"s": ["done"], "ap": ["done"], "no": ["done"]}
    run = make()
    await run.start()
    await run.resume("approve", "")
    assert run.records["yes"].input == "ok approve: "


# ---------------------------------------------------------------------------- step policies
def _openai(server: FakeLLMServer) -> OpenAIProvider:
    return OpenAIProvider(
        base_url=server.base_url,
        api_key="k",
        http=HttpSettings(connectTimeout=1, readTimeout=5, maxRetries=2, retryBaseDelay=0.01, retryMaxDelay=0.02),
    )


async def test_retry_against_the_flaky_server_three_attempts_two_step_retry() -> None:
    wf = flow(
        [start(text="go"), _policy(agent("a"), errorMode="retry", maxRetries=3, retryDelayMs=10)], [link("s", "a")]
    )
    with FakeLLMServer() as server:
        server.handler = flaky_handler(2, "finally")
        run = Run(wf, _openai(server))
        assert await run.start() == RunStatus.COMPLETED
        assert len(server.requests) == 3
    assert [(n, t) for n, t, _c in seq(run, ends=True)] == [
        (SYS, "run_status"),
        ("s", "step_start"),
        ("s", "step_end"),
        ("a", "step_start"),
        ("a", "start_prompt"),
        ("a", "llm_error"),
        ("a", "step_retry"),
        ("a", "start_prompt"),
        ("a", "llm_error"),
        ("a", "step_retry"),
        ("a", "start_prompt"),
        ("a", "llm_response"),
        ("a", "step_end"),
        (SYS, "run_status"),
    ]
    retries = [e.extra for e in run.events if e.type == "step_retry"]
    assert [(r["attempt"], r["maxAttempts"], r["delayMs"]) for r in retries] == [(2, 4, 10), (3, 4, 20)]
    assert "flaky failure" in retries[0]["error"]
    assert run.outputs["a"] == "finally"
    from engine import RunState

    first_retry = next(i for i, e in enumerate(run.events) if e.type == "step_retry")
    state = RunState.of(wf, run.events[: first_retry + 1])
    assert state.states["a"] == "retrying"
    assert (state.details["a"].attempt, state.details["a"].max_attempts) == (2, 4)
    assert RunState.of(wf, run.events).states["a"] == "done"


async def test_a_429_under_a_node_retry_policy_is_retried_by_the_node_only() -> None:
    # issue 30: the node's policy is the only retry layer (the provider's own retries are off)
    wf = flow([start(text="go"), _policy(agent("a"), errorMode="retry", retryDelayMs=10)], [link("s", "a")])
    with FakeLLMServer() as server:
        server.push(error_reply(429, "slow down", retry_after="0"), openai_text("ok"))
        run = Run(wf, _openai(server))
        assert await run.start() == RunStatus.COMPLETED
        assert len(server.requests) == 2
    assert len([e for e in run.events if e.type == "step_retry"]) == 1


async def test_retry_exhausted_fails_the_run() -> None:
    wf = flow(
        [start(text="go"), _policy(agent("a"), errorMode="retry", maxRetries=1, retryDelayMs=1), agent("b")],
        [link("s", "a"), link("a", "b")],
    )
    run = Run(wf, Recorder(fail={"a": "boom"}))
    assert await run.start() == RunStatus.FAILED
    assert [(n, t) for n, t, _c in seq(run, ends=True)][3:] == [
        ("a", "step_start"),
        ("a", "start_prompt"),
        ("a", "llm_error"),
        ("a", "step_retry"),
        ("a", "start_prompt"),
        ("a", "llm_error"),
        ("a", "step_end"),
        ("a", "error"),
        (SYS, "run_status"),
    ]
    assert run.error == "Agent 'a' failed: boom" and str(run.outcomes["a"]) == "failed"


async def test_retry_exhausted_follows_the_error_branch_when_linked() -> None:
    wf = flow(
        [
            start(text="go"),
            _policy(agent("a"), errorMode="retry", maxRetries=1, retryDelayMs=1),
            agent("b"),
            agent("fix", "handle: {{PREVIOUS_OUTPUT}}"),
        ],
        [link("s", "a"), link("a", "b"), link("a", "fix", "error")],
    )
    run = Run(wf, Recorder(fail={"a": "boom"}))
    assert await run.start() == RunStatus.COMPLETED
    end = next(e for e in run.events if e.type == "step_end" and e.node_id == "a")
    assert (
        end.content == "Agent 'a' failed: boom" and end.extra["status"] == "failed" and end.extra["handle"] == "error"
    )
    assert run.records["fix"].input == "handle: Agent 'a' failed: boom" and "b" not in run.outputs
    assert not [e for e in run.events if e.type == "error"]
    from engine import RunState

    state = RunState.of(wf, run.events)
    assert state.states["a"] == "failed" and ("a", "error", "fix") in state.links


async def test_skip_goes_on_with_null_and_successors_get_empty_text() -> None:
    wf = flow(
        [start(text="go"), _policy(agent("a"), errorMode="skip"), agent("b", "got [{{PREVIOUS_OUTPUT}}]")],
        [link("s", "a"), link("a", "b")],
    )
    run = Run(wf, Recorder(fail={"a": "boom"}))
    assert await run.start() == RunStatus.COMPLETED
    assert seq(run, ends=True)[3:] == [
        ("a", "step_start", "a"),
        ("a", "start_prompt", "go"),
        ("a", "llm_error", "boom"),
        ("a", "step_skipped", "Agent 'a' failed: boom"),
        ("a", "step_end", "skipped"),
        ("b", "step_start", "b"),
        ("b", "start_prompt", "got []"),
        ("b", "llm_response", "b(got [])"),
        ("b", "step_end", "done"),
        (SYS, "run_status", "completed"),
    ]
    assert run.outputs["a"] is None and str(run.outcomes["a"]) == "skipped"


async def test_timeout_of_200_ms_against_a_slow_server_fails_within_a_second() -> None:
    wf = flow([start(text="go"), _policy(agent("a"), timeoutMs=200)], [link("s", "a")])
    with FakeLLMServer() as server:
        server.push(openai_plain("late") if False else error_reply(200, "x"))
        server.handler = lambda rec: openai_text("late", pause=5)
        run = Run(wf, _openai(server))
        t0 = time.monotonic()
        assert await run.start() == RunStatus.FAILED
        took = time.monotonic() - t0
    assert took < 1.0, took
    assert run.error == "'a' timed out after 200 ms"
    assert [t for _n, t, _c in seq(run, ends=True)][-4:] == ["start_prompt", "step_end", "error", "run_status"]


# ---------------------------------------------------------------------------- join
async def test_join_after_a_fan_out_of_three_runs_once_in_link_order() -> None:
    # the slowest branch is first in the join's links: the list follows the links, not arrival
    wf = flow(
        [
            start(text="x"),
            agent("r1"),
            agent("r2"),
            agent("r3"),
            join("j", outputVar="all"),
            agent("after", "{{__fanout[0]}} + {{PREVIOUS_OUTPUT}}"),
        ],
        [
            link("s", "r1"),
            link("s", "r2"),
            link("s", "r3"),
            link("r1", "j"),
            link("r3", "j"),
            link("r2", "j"),
            link("j", "after"),
        ],
    )
    run = Run(wf, Recorder(delays={"r1": 0.05, "r3": 0.02}))
    assert await run.start() == RunStatus.COMPLETED
    j = [(t, c) for n, t, c in seq(run, ends=True) if n == "j"]
    assert j == [
        ("join_wait", "1 of 3 arrived"),
        ("join_wait", "2 of 3 arrived"),
        ("step_start", "Join"),
        ("node_output", '["r1(x)", "r3(x)", "r2(x)"]'),
        ("step_end", "done"),
    ]
    assert run.outputs["j"] == ["r1(x)", "r3(x)", "r2(x)"] and run.variables["all"] == run.outputs["j"]
    assert run.records["after"].input == 'r1(x) + ["r1(x)", "r3(x)", "r2(x)"]'  # the agent's input as text
    assert run.visits["after"] == 1


async def test_join_in_text_mode() -> None:
    wf = flow(
        [start(text="x"), agent("a"), agent("b"), join("j", mode="text", separator=" | ")],
        [link("s", "a"), link("s", "b"), link("a", "j"), link("b", "j")],
    )
    run = Run(wf, Recorder())
    await run.start()
    assert run.outputs["j"] == "a(x) | b(x)"


async def test_join_behind_an_if_whose_other_branch_is_not_taken() -> None:
    wf = flow(
        [start(text="go left"), cond("c", ("contains", "left")), agent("l"), agent("r"), join("j"), agent("z")],
        [
            link("s", "c"),
            link("c", "l", "condition-0"),
            link("c", "r", "false"),
            link("l", "j"),
            link("r", "j"),
            link("j", "z"),
        ],
    )
    run = Run(wf, Recorder())
    assert await run.start() == RunStatus.COMPLETED
    assert run.outputs["j"] == ["l(go left)"] and run.outputs["z"] == 'z(["l(go left)"])'
    assert "r" not in run.outputs


async def test_join_with_a_branch_paused_at_an_approval_waits_and_fires_after_resume_in_a_new_process(tmp_path) -> None:
    wf = flow(
        [start(text="x"), agent("fast"), approval("ap"), agent("slow"), join("j"), agent("z")],
        [
            link("s", "fast"),
            link("s", "ap"),
            link("ap", "slow", "approve"),
            link("fast", "j"),
            link("slow", "j"),
            link("j", "z"),
        ],
    )
    run = Run(wf, Recorder())
    assert await run.start() == RunStatus.PAUSED
    assert "j" not in run.outputs and [e.content for e in run.events if e.type == "join_wait"] == ["1 of 2 arrived"]
    snap = run.snapshot()
    assert snap["joins"] == {"j": {"arrived": [[0, "fast(x)"]]}}
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snap))
    code = (
        "import asyncio, json, sys\n"
        "from engine import Run, EchoProvider\n"
        "run = Run.restore(json.load(open(sys.argv[1])), EchoProvider())\n"
        "print(asyncio.run(run.resume('approve')))\n"
        "print(json.dumps(run.outputs['j']))\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["completed", json.dumps(["fast(x)", "x"])]


# ---------------------------------------------------------------------------- loop
async def test_loop_until_met_at_iteration_3() -> None:
    class Counter(Recorder):
        async def complete(self, inv, ctx):  # type: ignore[no-untyped-def]
            self.calls.append((inv.node_id, inv.user_content))
            from engine import LLMResult

            n = len(self.calls)
            return LLMResult(text=f"draft {n}" + (" APPROVED" if n == 3 else ""))

    wf = flow(
        [start(text="x"), loop("L", until="approved"), agent("w", "try {{iteration}}"), agent("z")],
        [link("s", "L"), link("L", "w", "body"), link("w", "L"), link("L", "z", "done")],
    )
    rec = Counter()
    run = Run(wf, rec)
    assert await run.start() == RunStatus.COMPLETED
    assert [c for _n, c in rec.calls] == ["try 1", "try 2", "try 3", "draft 3 APPROVED"]
    checks = [(e.content, e.extra) for e in run.events if e.type == "loop_check"]
    assert checks == [
        ("iteration 1: not matched", {"iteration": 1, "matched": False}),
        ("iteration 2: not matched", {"iteration": 2, "matched": False}),
        ("iteration 3: matched", {"iteration": 3, "matched": True}),
    ]
    assert [(t, c) for n, t, c in seq(run, ends=True) if n == "L"] == [
        ("step_start", "Loop"),
        ("node_output", "x"),
        ("step_end", "done"),
        ("step_start", "Loop"),
        ("loop_check", "iteration 1: not matched"),
        ("node_output", "draft 1"),
        ("step_end", "done"),
        ("step_start", "Loop"),
        ("loop_check", "iteration 2: not matched"),
        ("node_output", "draft 2"),
        ("step_end", "done"),
        ("step_start", "Loop"),
        ("loop_check", "iteration 3: matched"),
        ("node_output", "draft 3 APPROVED"),
        ("step_end", "done"),
    ]
    from engine import RunState

    state = RunState.of(wf, run.events)
    assert state.details["L"].iteration == 3 and ("L", "done", "z") in state.links


async def test_loop_capped_by_max_iterations_never_trips_the_visit_guard() -> None:
    wf = flow(
        [start(text="x"), loop("L", until="never", max_iterations=30), agent("w", "{{iteration}}"), agent("z")],
        [link("s", "L"), link("L", "w", "body"), link("w", "L"), link("L", "z", "done")],
    )
    run = Run(wf, EchoProvider(), max_visits=5)
    assert await run.start() == RunStatus.COMPLETED
    checks = [e.extra for e in run.events if e.type == "loop_check"]
    assert len(checks) == 30 and checks[-1] == {"iteration": 30, "matched": False}
    assert run.outputs["z"] == "30"


async def test_nested_loops_each_with_its_own_iteration() -> None:
    wf = flow(
        [
            start(text="x"),
            loop("outer", max_iterations=2),
            loop("inner", max_iterations=3),
            agent("w", "{{iteration}}"),
            agent("o", "outer {{iteration}}"),
        ],
        [
            link("s", "outer"),
            link("outer", "inner", "body"),
            link("inner", "w", "body"),
            link("w", "inner"),
            link("inner", "o", "done"),
            link("o", "outer"),
        ],
    )
    rec = Recorder()
    run = Run(wf, rec)
    assert await run.start() == RunStatus.COMPLETED
    assert [c for _n, c in rec.calls] == ["1", "2", "3", "outer 1", "1", "2", "3", "outer 2"]


def test_validator_rules_for_join_and_loop() -> None:
    wf = flow(
        [start(text="x"), agent("a"), agent("b"), agent("c"), loop("L"), loop("M"), agent("w"), agent("v")],
        [
            link("s", "a"),
            link("s", "b"),
            link("a", "c"),
            link("b", "c"),
            link("c", "L"),
            link("L", "w", "done"),
            link("w", "M"),
            link("M", "v", "body"),
        ],
    )
    issues = {(i.code, i.node_ids[0]) for i in validate(wf)}
    assert ("fan_in_without_join", "c") in issues
    assert ("loop_no_body", "L") in issues
    assert ("loop_body_no_return", "M") in issues
    # a loop's returns and a join's branches are not fan-ins; a loop whose body comes back is fine
    ok = flow(
        [start(text="x"), agent("a"), agent("b"), join("j"), loop("L"), agent("w")],
        [
            link("s", "a"),
            link("s", "b"),
            link("a", "j"),
            link("b", "j"),
            link("j", "L"),
            link("L", "w", "body"),
            link("w", "L"),
        ],
    )
    assert [i.code for i in validate(ok)] == []


async def test_snapshot_inside_a_loop_body_resumes_with_its_counter() -> None:
    wf = flow(
        [start(text="x"), loop("L", max_iterations=2), approval("ap"), agent("w", "{{iteration}} {{APPROVAL_NOTE}}")],
        [link("s", "L"), link("L", "ap", "body"), link("ap", "w", "approve"), link("w", "L")],
    )
    run = Run(wf, Recorder())
    assert await run.start() == RunStatus.PAUSED
    await run.resume("approve", "n1")
    assert run.status == RunStatus.PAUSED
    snap = json.loads(json.dumps(run.snapshot()))
    assert snap["loops"] == {"L": 2} and snap["pending"]["frame"]["loops"] == ["L"]
    assert snap["variables"] == {}
    again = Run.restore(snap, Recorder())
    assert await again.resume("approve", "n2") == RunStatus.COMPLETED
    assert again.records["w"].input == "2 n2"


async def test_the_panel_sample_runs_with_echo() -> None:
    from engine import load_workflow

    wf = load_workflow(ROOT / "samples" / "panel.flow.json")
    assert [i.code for i in validate(wf)] == []
    run = Run(wf, EchoProvider())
    assert await run.start() == RunStatus.COMPLETED
    assert len(run.outputs["reviews"].split("\n\n---\n\n")) == 3  # three reviews joined, once
    assert [e.extra for e in run.events if e.type == "loop_check"] == [{"iteration": 1, "matched": True}]
    assert "Round 1. Revise this draft" in run.records["reviser"].input
    assert run.records["final"].input.startswith("Final announcement:\n\nRound 1.")


async def test_the_start_nodes_own_text_resolves_its_templates_but_a_given_input_is_taken_as_it_is():
    from engine import EchoProvider, Run, parse_workflow

    wf = parse_workflow(
        {
            "nodes": [
                {
                    "id": "s",
                    "type": "start",
                    "x": 0,
                    "y": 0,
                    "data": {"initialInput": "Topic: {{topic}}", "variables": [{"name": "topic", "value": "owls"}]},
                },
                {
                    "id": "a",
                    "type": "agent",
                    "x": 1,
                    "y": 0,
                    "data": {"agentName": "A", "userPrompt": "", "model": "m"},
                },
            ],
            "connections": [{"source": "s", "target": "a", "sourceHandle": "output", "targetHandle": "input"}],
        }
    )
    run = Run(wf, EchoProvider(), variables={"topic": "bats"})
    assert await run.start() == "completed"
    assert run.outputs["s"] == "Topic: bats"
    given = Run(wf, EchoProvider(), initial_input="{{topic}} stays")
    assert await given.start() == "completed"
    assert given.outputs["s"] == "{{topic}} stays"
