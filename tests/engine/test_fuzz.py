"""Hypothesis fuzzing of the loader and the validator.

Any JSON value (or any bytes) given to the loader gives either a Workflow or the typed
WorkflowLoadError, never another exception; validate() on anything that loaded returns a
list of Issue without raising; check_connection() answers for any pair of ids.
"""

from __future__ import annotations

import json
from typing import Any

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import (
    ConnectionCheck,
    GraphIndex,
    Issue,
    Workflow,
    WorkflowLoadError,
    check_connection,
    dumps_workflow,
    loads_workflow,
    parse_workflow,
    validate,
)
from engine.graph.model import source_handles

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)

# Values biased toward the workflow shape, so the fuzzing gets past the first checks.
ids = st.one_of(st.sampled_from(["s", "a", "b", "c", "i", "p", "ghost"]), st.integers(0, 3), json_values)
node_types = st.one_of(
    st.sampled_from(["start", "agent", "if", "approval", "input", "end", "webhook", ""]), json_values
)
handles = st.one_of(
    st.none(),
    st.sampled_from(
        [
            "output",
            "input",
            "subagent",
            "condition-0",
            "condition-1",
            "condition-x",
            "true",
            "false",
            "approve",
            "reject",
        ]
    ),
    json_values,
)
text_or_any = st.one_of(st.text(max_size=8), json_values)
conditions = st.lists(
    st.fixed_dictionaries(
        {},
        optional={
            "operator": st.one_of(st.sampled_from(["equal", "contains", "equals", "regex"]), json_values),
            "value": text_or_any,
        },
    ),
    max_size=3,
)
node_data = st.one_of(
    st.none(),
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "initialInput": text_or_any,
            "agentName": text_or_any,
            "systemPrompt": text_or_any,
            "userPrompt": text_or_any,
            "model": st.one_of(st.sampled_from(["", "gpt-4o"]), json_values),
            "reasoningEffort": text_or_any,
            "prompt": text_or_any,
            "collapsed": st.one_of(st.booleans(), json_values),
            "tools": st.one_of(
                st.fixed_dictionaries(
                    {}, optional={"web_search": st.booleans(), "subagents": st.one_of(st.booleans(), json_values)}
                ),
                json_values,
            ),
            "conditions": st.one_of(conditions, json_values),
            "condition": text_or_any,
            "extra": json_values,
        },
    ),
)
nodes = st.fixed_dictionaries(
    {},
    optional={
        "id": ids,
        "type": node_types,
        "data": node_data,
        "x": st.one_of(st.integers(-(10**6), 10**6), st.floats(allow_nan=False, allow_infinity=False), json_values),
        "y": st.one_of(st.integers(-(10**6), 10**6), json_values),
        "unknown": json_values,
    },
)
connections = st.fixed_dictionaries(
    {},
    optional={
        "source": ids,
        "target": ids,
        "sourceHandle": handles,
        "targetHandle": handles,
        "id": json_values,
    },
)
workflow_shaped = st.fixed_dictionaries(
    {},
    optional={
        "nodes": st.one_of(st.lists(nodes, max_size=6), json_values),
        "connections": st.one_of(st.lists(connections, max_size=8), json_values),
        "name": text_or_any,
        "description": text_or_any,
        "version": json_values,
        "logs": json_values,
        "workflow": json_values,
    },
)
# Mostly well-formed graphs, for the validator.
good_nodes = st.fixed_dictionaries(
    {
        "id": st.sampled_from(["s", "a", "b", "c", "i", "p"]),
        "type": st.sampled_from(["start", "agent", "if", "approval", "input", "end"]),
        "data": st.fixed_dictionaries(
            {},
            optional={
                "tools": st.fixed_dictionaries({"subagents": st.booleans()}),
                "conditions": st.lists(
                    st.fixed_dictionaries(
                        {"operator": st.sampled_from(["equal", "contains"]), "value": st.sampled_from(["", "x", " "])}
                    ),
                    max_size=2,
                ),
                "condition": st.sampled_from(["", "yes"]),
                "model": st.sampled_from(["", "m"]),
            },
        ),
    }
)
good_connections = st.fixed_dictionaries(
    {
        "source": st.sampled_from(["s", "a", "b", "c", "i", "p", "ghost"]),
        "target": st.sampled_from(["s", "a", "b", "c", "i", "p", "ghost"]),
    },
    optional={"sourceHandle": handles, "targetHandle": st.sampled_from(["input", "output", None])},
)
good_workflows = st.fixed_dictionaries(
    {"nodes": st.lists(good_nodes, max_size=7), "connections": st.lists(good_connections, max_size=12)}
)


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


def loops_without_exit(wf: Workflow) -> set[frozenset[str]]:
    """The rule for execution_cycle_no_exit, straight from networkx: among the nodes reachable
    from the one start, every cycle (strongly connected component) in which no if or approval
    has a branch that leaves it."""
    nodes: dict[str, Any] = {}
    for n in wf.nodes:
        nodes.setdefault(n.id, n)
    starts = [n.id for n in nodes.values() if n.type == "start"]
    if len(starts) != 1:
        return set()
    links = [
        (c.source, c.sourceHandle or "output", c.target)
        for c in wf.connections
        if c.sourceHandle != "subagent" and c.source in nodes and c.target in nodes
    ]
    g = nx.DiGraph()
    g.add_nodes_from(nodes)
    g.add_edges_from((s, t) for s, _h, t in links)
    reached = g.subgraph(nx.descendants(g, starts[0]) | {starts[0]})

    def leaves(nid: str, comp: set[str]) -> bool:
        back = {"condition-0" if h == "true" else h for s, h, t in links if s == nid and t in comp}
        return any(h not in back for h in source_handles(nodes[nid]))

    found = set()
    for comp in nx.strongly_connected_components(reached):
        if len(comp) == 1 and not reached.has_edge(next(iter(comp)), next(iter(comp))):
            continue
        if not any(nodes[nid].type in ("if", "approval") and leaves(nid, comp) for nid in comp):
            found.add(frozenset(comp))
    return found


@st.composite
def looping_workflows(draw: st.DrawFn) -> Workflow:
    """A start and a row of up to 12 steps, mostly linked one to the next, plus links between near
    neighbours either way: several loops, with and without exits, one leading into another."""
    kinds = draw(st.lists(st.sampled_from(["agent", "agent", "agent", "if", "approval"]), min_size=1, max_size=12))
    ids = ["s"] + [f"n{k}" for k in range(len(kinds))]
    nodes: list[dict[str, Any]] = [{"id": "s", "type": "start"}]
    for node_id, kind in zip(ids[1:], kinds):
        data = {"conditions": [{"value": "x"}] * draw(st.integers(0, 2))} if kind == "if" else {}
        nodes.append({"id": node_id, "type": kind, "data": data})
    handles = st.sampled_from(
        ["output", "condition-0", "condition-1", "true", "false", "approve", "reject", "subagent"]
    )
    row = [(k, draw(handles), 1) for k in range(len(kinds)) if draw(st.integers(0, 9))]
    extra = draw(st.lists(st.tuples(st.integers(0, len(kinds)), handles, st.integers(-3, 3)), max_size=10))
    links = [
        {"source": ids[k], "sourceHandle": h, "target": ids[k + step] if 0 <= k + step < len(ids) else "ghost"}
        for k, h, step in [*row, *extra]
    ]
    return parse_workflow({"nodes": nodes, "connections": links})


@FUZZ
@given(looping_workflows())
def test_loop_warnings_match_networkx(wf: Workflow) -> None:
    warned = [frozenset(i.node_ids) for i in validate(wf) if i.code == "execution_cycle_no_exit"]
    assert len(warned) == len(set(warned))
    assert set(warned) == loops_without_exit(wf)


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
