"""Costs are priced by the model that answered (the llm_response's ``model``), not by the model a
node names: a dry run with echo or a run on the embedded model costs nothing; a dated snapshot
takes its model's price; a model without a price counts tokens and no cost."""

from __future__ import annotations

import json

import pytest

from engine import Run, RunState, parse_workflow, run_costs
from engine.costs import price_of
from engine.llm.echo import EchoProvider
from engine.store import RunRecorder, RunStore

PRICES = {"gpt-4o-mini": (0.15, 0.6), "claude-sonnet-4-5": (3.0, 15.0), "echo": (0.0, 0.0)}


def _flow():
    return parse_workflow({
        "nodes": [{"id": "s", "type": "start", "data": {"initialInput": "a question of some length"}},
                  {"id": "a", "type": "agent", "data": {"agentName": "A", "model": "gpt-4o-mini"}}],
        "connections": [{"source": "s", "target": "a"}]})


async def test_a_dry_run_with_echo_costs_nothing_whatever_model_the_node_names(tmp_path):
    wf = _flow()
    store = RunStore(tmp_path / "runs.db")
    run = Run(wf, EchoProvider())
    recorder = RunRecorder(store, run)
    await run.start()
    recorder.settled()
    recorder.close()
    response = next(e for e in run.events if e.type == "llm_response")
    assert response.extra["model"] == "echo" and response.extra["usage"]["completion_tokens"] > 0
    assert json.loads(response.to_json())["model"] == "echo"  # in the wire form too
    state = RunState.of(wf, run.events)
    assert state.details["a"].model == "echo"
    costs = run_costs(state, wf, PRICES)
    assert costs["nodes"]["a"]["model"] == "echo" and costs["nodes"]["a"]["cost"] == 0.0
    assert costs["total"]["cost"] == 0.0 and costs["total"]["tokens"] > 0 and costs["total"]["unpriced"] == []
    # the history prices it the same way, from the stored events
    assert store.answered_models([run.run_id]) == {run.run_id: {"a": "echo"}}
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
    events = [RunEvent("s", "step_start", "Start", timestamp=1.0),
              RunEvent("a", "step_start", "A", timestamp=1.0),
              RunEvent("a", "llm_response", "answer", timestamp=2.0,
                       extra={"usage": {"prompt_tokens": 1_000_000, "completion_tokens": 0}})]
    costs = run_costs(RunState.of(wf, events), wf, PRICES)
    assert costs["nodes"]["a"]["model"] == "gpt-4o-mini" and costs["total"]["cost"] == pytest.approx(0.15)
