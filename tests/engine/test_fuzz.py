"""Hypothesis fuzzing of the loader and the validator.

Any JSON value (or any bytes) given to the loader gives either a Workflow or the typed
WorkflowLoadError, never another exception; validate() on anything that loaded returns a
list of Issue without raising; check_connection() answers for any pair of ids.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import (ConnectionCheck, GraphIndex, Issue, Workflow, WorkflowLoadError, check_connection,
                    dumps_workflow, loads_workflow, parse_workflow, validate)

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=12))
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.text(max_size=8), children, max_size=4)),
    max_leaves=20,
)

# Values biased toward the workflow shape, so the fuzzing gets past the first checks.
ids = st.one_of(st.sampled_from(["s", "a", "b", "c", "i", "p", "ghost"]), st.integers(0, 3), json_values)
node_types = st.one_of(st.sampled_from(["start", "agent", "if", "approval", "input", "end", "webhook", ""]),
                       json_values)
handles = st.one_of(st.none(), st.sampled_from(["output", "input", "subagent", "condition-0", "condition-1",
                                                "condition-x", "true", "false", "approve", "reject"]), json_values)
text_or_any = st.one_of(st.text(max_size=8), json_values)
conditions = st.lists(st.fixed_dictionaries({}, optional={
    "operator": st.one_of(st.sampled_from(["equal", "contains", "equals", "regex"]), json_values),
    "value": text_or_any}), max_size=3)
node_data = st.one_of(
    st.none(), json_values,
    st.fixed_dictionaries({}, optional={
        "initialInput": text_or_any, "agentName": text_or_any, "systemPrompt": text_or_any,
        "userPrompt": text_or_any, "model": st.one_of(st.sampled_from(["", "gpt-4o"]), json_values),
        "reasoningEffort": text_or_any, "prompt": text_or_any, "collapsed": st.one_of(st.booleans(), json_values),
        "tools": st.one_of(st.fixed_dictionaries({}, optional={"web_search": st.booleans(),
                                                               "subagents": st.one_of(st.booleans(), json_values)}),
                           json_values),
        "conditions": st.one_of(conditions, json_values), "condition": text_or_any,
        "extra": json_values,
    }),
)
nodes = st.fixed_dictionaries({}, optional={
    "id": ids, "type": node_types, "data": node_data,
    "x": st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False), json_values),
    "y": st.one_of(st.integers(-10**6, 10**6), json_values),
    "unknown": json_values,
})
connections = st.fixed_dictionaries({}, optional={
    "source": ids, "target": ids, "sourceHandle": handles, "targetHandle": handles, "id": json_values,
})
workflow_shaped = st.fixed_dictionaries({}, optional={
    "nodes": st.one_of(st.lists(nodes, max_size=6), json_values),
    "connections": st.one_of(st.lists(connections, max_size=8), json_values),
    "name": text_or_any, "description": text_or_any, "version": json_values, "logs": json_values,
    "workflow": json_values,
})
# Mostly well-formed graphs, for the validator.
good_nodes = st.fixed_dictionaries({
    "id": st.sampled_from(["s", "a", "b", "c", "i", "p"]),
    "type": st.sampled_from(["start", "agent", "if", "approval", "input", "end"]),
    "data": st.fixed_dictionaries({}, optional={
        "tools": st.fixed_dictionaries({"subagents": st.booleans()}),
        "conditions": st.lists(st.fixed_dictionaries({"operator": st.sampled_from(["equal", "contains"]),
                                                      "value": st.sampled_from(["", "x", " "])}), max_size=2),
        "condition": st.sampled_from(["", "yes"]), "model": st.sampled_from(["", "m"]),
    }),
})
good_connections = st.fixed_dictionaries(
    {"source": st.sampled_from(["s", "a", "b", "c", "i", "p", "ghost"]),
     "target": st.sampled_from(["s", "a", "b", "c", "i", "p", "ghost"])},
    optional={"sourceHandle": handles, "targetHandle": st.sampled_from(["input", "output", None])},
)
good_workflows = st.fixed_dictionaries({"nodes": st.lists(good_nodes, max_size=7),
                                        "connections": st.lists(good_connections, max_size=12)})


def check_loaded(wf: Workflow) -> None:
    """Whatever loaded validates without raising, and saves to text that loads again."""
    issues = validate(wf)
    assert isinstance(issues, list) and all(isinstance(i, Issue) for i in issues)
    for issue in issues:
        json.dumps(issue.to_json())
    again = loads_workflow(dumps_workflow(wf))
    assert [n.id for n in again.nodes] == [n.id for n in wf.nodes]


def parse_or_typed_error(raw: Any) -> Workflow | None:
    try:
        wf = parse_workflow(raw)
    except WorkflowLoadError as err:
        assert str(err)
        return None
    assert isinstance(wf, Workflow)
    check_loaded(wf)
    return wf


@FUZZ
@given(json_values)
def test_any_json_value_parses_or_raises_typed_error(raw: Any) -> None:
    parse_or_typed_error(raw)
    try:
        loads_workflow(json.dumps(raw))
    except WorkflowLoadError:
        pass


@FUZZ
@given(workflow_shaped)
def test_workflow_shaped_values_parse_or_raise_typed_error(raw: dict[str, Any]) -> None:
    parse_or_typed_error(raw)
    try:
        check_loaded(loads_workflow(json.dumps(raw).encode("utf-8")))
    except WorkflowLoadError:
        pass


@FUZZ
@given(good_workflows)
def test_validate_and_check_connection_never_raise(raw: dict[str, Any]) -> None:
    wf = parse_or_typed_error(raw)
    if wf is None:
        return
    index = GraphIndex(wf)
    for source in ["s", "a", "i", "ghost"]:
        for target in ["a", "b", "p", "s"]:
            for handle in ["output", "subagent", "condition-0", "true", "approve"]:
                answer = check_connection(index, source, handle, target, "input")
                assert isinstance(answer, ConnectionCheck)
                assert answer.ok or answer.reason


@FUZZ
@given(st.binary(max_size=200))
def test_random_bytes_load_or_raise_typed_error(data: bytes) -> None:
    try:
        wf = loads_workflow(data)
    except WorkflowLoadError:
        return
    check_loaded(wf)


@FUZZ
@given(st.text(max_size=200))
def test_random_text_loads_or_raises_typed_error(text: str) -> None:
    try:
        wf = loads_workflow(text)
    except WorkflowLoadError:
        return
    check_loaded(wf)
