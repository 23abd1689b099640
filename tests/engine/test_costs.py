"""Costs are priced by the model that answered (the llm_response's ``model``), not by the model a
node names: a dry run with echo or a run on the embedded model costs nothing; a dated snapshot
takes its model's price; a model without a price counts tokens and no cost. Every call is paid
for: a subagent's calls and each iteration of a loop."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import Run, RunState, parse_workflow, run_costs
from engine.llm.echo import EchoProvider
from engine.run.costs import price_of
from engine.store import RunStore

from .test_store import recorded_run

PRICES = {"gpt-4o-mini": (0.15, 0.6), "claude-sonnet-4-5": (3.0, 15.0), "echo": (0.0, 0.0)}


def _flow():
    return parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "a question of some length"}},
                {"id": "a", "type": "agent", "data": {"agentName": "A", "model": "gpt-4o-mini"}},
            ],
            "connections": [{"source": "s", "target": "a"}],
        }
    )


def test_a_dry_run_with_echo_costs_nothing_whatever_model_the_node_names(tmp_path):
    wf = _flow()
    store = RunStore(tmp_path / "runs.db")
    run = recorded_run(store, wf)
    response = next(e for e in run.events if e.type == "llm_response")
    assert response.extra["model"] == "echo" and response.extra["usage"]["completion_tokens"] > 0
    assert json.loads(response.to_json())["model"] == "echo"  # in the wire form too
    state = RunState.of(wf, run.events)
    assert state.details["a"].model == "echo"
    costs = run_costs(state, wf, PRICES)
    assert costs["nodes"]["a"]["model"] == "echo" and costs["nodes"]["a"]["cost"] == 0.0
    assert costs["total"]["cost"] == 0.0 and costs["total"]["tokens"] > 0 and costs["total"]["unpriced"] == []
    # the history prices it the same way, from the stored events
    answered = {nid: model for nid, (_p, _c, model) in store.answers_by_node([run.run_id])[run.run_id].items()}
    assert answered == {"a": "echo"}
    store.close()


def test_the_model_that_answered_prices_the_call():
    # a dated snapshot takes its model's price (OpenAI's and Anthropic's forms)
    assert price_of(PRICES, "gpt-4o-mini-2024-07-18", "gpt-4o-mini") == ("gpt-4o-mini", (0.15, 0.6))
    assert price_of(PRICES, "claude-sonnet-4-5-20250929", "") == ("claude-sonnet-4-5", (3.0, 15.0))
    # a model a local server answered with (LM Studio, Ollama): no price, whatever the node asked for
    assert price_of(PRICES, "qwen2.5-7b-instruct", "gpt-4o-mini") == ("qwen2.5-7b-instruct", None)
    # no model in the response (an older log): the node's own model
    assert price_of(PRICES, None, "gpt-4o-mini") == ("gpt-4o-mini", (0.15, 0.6))


def test_a_response_without_a_model_is_priced_by_the_nodes_model():
    from engine import RunEvent

    wf = _flow()
    events = [
        RunEvent("s", "step_start", "Start", timestamp=1.0),
        RunEvent("a", "step_start", "A", timestamp=1.0),
        RunEvent(
            "a",
            "llm_response",
            "answer",
            timestamp=2.0,
            extra={"usage": {"prompt_tokens": 1_000_000, "completion_tokens": 0}},
        ),
    ]
    costs = run_costs(RunState.of(wf, events), wf, PRICES)
    assert costs["nodes"]["a"]["model"] == "gpt-4o-mini" and costs["total"]["cost"] == pytest.approx(0.15)


def _research():
    from engine import load_workflow

    return load_workflow(Path(__file__).resolve().parents[2] / "samples" / "research.flow.json")


def test_subagent_calls_count_their_tokens_live_and_stored(tmp_path):
    """A lead agent's two subagent calls are paid for too: each subagent_call_end carries the
    call's usage and model (in the log, the store and the wire form), and the totals count them."""
    wf = _research()
    store = RunStore(tmp_path / "runs.db")
    run = recorded_run(store, wf)
    ends = [e for e in run.events if e.type == "subagent_call_end"]
    assert {e.extra["subagentNodeId"] for e in ends} == {"facts", "skeptic"}
    assert all(e.extra["model"] == "echo" and e.extra["usage"]["completion_tokens"] > 0 for e in ends)
    assert all("usage" in e.to_wire() for e in ends)
    live = RunState.of(wf, run.events)
    for e in ends:  # each subagent was called once
        assert live.details[e.extra["subagentNodeId"]].total_usage == e.extra["usage"]
    costs = run_costs(live, wf, PRICES)
    assert {"lead", "facts", "skeptic", "writer"} <= set(costs["nodes"])
    every_call = sum(
        e.extra["usage"]["prompt_tokens"] + e.extra["usage"]["completion_tokens"]
        for e in run.events
        if e.type in ("llm_response", "subagent_call_end")
    )
    assert costs["total"]["tokens"] == every_call
    # the same from the store: the events read back, and the history's per-node sums
    stored = RunState.of(wf, store.events(run.run_id))
    assert run_costs(stored, wf, PRICES)["total"]["tokens"] == every_call
    usage = store.usage_by_node([run.run_id])[run.run_id]
    assert set(usage) == {"lead", "facts", "skeptic", "writer"}
    assert sum(p + c for p, c in usage.values()) == every_call
    assert store.answers_by_node([run.run_id])[run.run_id]["facts"][2] == "echo"
    store.close()


async def test_a_node_in_a_loop_is_paid_for_every_iteration():
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "a draft"}},
                {"id": "rounds", "type": "loop", "data": {"maxIterations": 3, "until": "never said"}},
                {"id": "reviser", "type": "agent", "data": {"agentName": "Reviser", "userPrompt": "Revise: {{input}}"}},
                {"id": "final", "type": "agent", "data": {"agentName": "Final"}},
            ],
            "connections": [
                {"source": "s", "target": "rounds"},
                {"source": "rounds", "target": "reviser", "sourceHandle": "body"},
                {"source": "reviser", "target": "rounds"},
                {"source": "rounds", "target": "final", "sourceHandle": "done"},
            ],
        }
    )
    run = Run(wf, EchoProvider())
    await run.start()
    assert run.status == "completed", run.error
    responses = [e for e in run.events if e.type == "llm_response" and e.node_id == "reviser"]
    assert len(responses) == 3  # 'until' never matches: the loop runs its 3 rounds
    state = RunState.of(wf, run.events)
    paid = sum(e.extra["usage"]["completion_tokens"] for e in responses)
    assert state.details["reviser"].total_usage["completion_tokens"] == paid
    assert state.details["reviser"].usage == responses[-1].extra["usage"]  # the last call's, as shown on the step
    assert run_costs(state, wf, PRICES)["nodes"]["reviser"]["completion"] == paid


def test_a_flow_nodes_nested_run_counts_for_that_node(tmp_path):
    """The calls a subflow makes are paid for too: they count for the flow node that ran it,
    in the console's totals (the reducer's nested states) as in the history's sums."""
    sub = tmp_path / "greet.flow.json"
    sub.write_text(
        json.dumps(
            {
                "nodes": [
                    {"id": "s", "type": "start", "data": {"initialInput": "hi"}},
                    {"id": "greeter", "type": "agent", "data": {"agentName": "Greeter"}},
                ],
                "connections": [{"source": "s", "target": "greeter"}],
            }
        )
    )
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "hello"}},
                {"id": "f", "type": "flow", "data": {"flow": "greet.flow.json"}},
                {"id": "a", "type": "agent", "data": {"agentName": "After"}},
            ],
            "connections": [{"source": "s", "target": "f"}, {"source": "f", "target": "a"}],
        }
    )
    store = RunStore(tmp_path / "runs.db")
    run = recorded_run(store, wf, path=str(tmp_path / "main.flow.json"))
    assert run.status == "completed", run.error
    responses = [e for e in run.events if e.type == "llm_response"]
    assert [e.node_id for e in responses] == ["greeter", "a"] and responses[0].path  # the nested one has a path
    every_call = sum(e.extra["usage"]["prompt_tokens"] + e.extra["usage"]["completion_tokens"] for e in responses)
    costs = run_costs(RunState.of(wf, run.events), wf, PRICES)
    assert set(costs["nodes"]) == {"f", "a"} and costs["total"]["tokens"] == every_call
    assert costs["nodes"]["f"]["cost"] == 0.0  # answered by echo
    from engine import run_usage

    assert run_usage(RunState.of(wf, run.events))["total"] == every_call
    assert sum(p + c for p, c in store.usage_by_node([run.run_id])[run.run_id].values()) == every_call
    store.close()


def test_a_routers_model_request_counts_in_tokens_and_costs(tmp_path):
    """A router makes one model request: its tokens and model (on its route_choice) count in the
    node's details, the run's totals and the history, like an agent's response."""
    wf = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start", "data": {"initialInput": "my invoice is wrong"}},
                {"id": "r", "type": "router", "data": {"routes": [{"label": "billing"}, {"label": "tech"}]}},
                {"id": "a", "type": "agent", "data": {"agentName": "A"}},
            ],
            "connections": [{"source": "s", "target": "r"}, {"source": "r", "target": "a", "sourceHandle": "route-0"}],
        }
    )
    store = RunStore(tmp_path / "runs.db")
    run = recorded_run(store, wf)
    choice = next(e for e in run.events if e.type == "route_choice")
    assert choice.extra["model"] == "echo" and choice.extra["usage"]["prompt_tokens"] > 0
    router_tokens = choice.extra["usage"]["prompt_tokens"] + choice.extra["usage"]["completion_tokens"]
    state = RunState.of(wf, run.events)
    assert state.details["r"].tokens == router_tokens and state.details["r"].model == "echo"
    every_call = sum(
        e.extra["usage"]["prompt_tokens"] + e.extra["usage"]["completion_tokens"]
        for e in run.events
        if e.type in ("llm_response", "route_choice")
    )
    assert run_costs(state, wf, PRICES)["total"]["tokens"] == every_call
    assert sum(store.usage_by_node([run.run_id])[run.run_id]["r"]) == router_tokens
    assert store.answers_by_node([run.run_id])[run.run_id]["r"][2] == "echo"
    store.close()
