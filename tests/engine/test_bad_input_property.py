"""Property: any JSON text (lone surrogates, huge numbers, odd shapes included) given to load,
validate, save and run (with the run store) ends in a typed error or works; never another
exception, never a hang."""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine import EchoProvider, Run, WorkflowLoadError, dumps_workflow, loads_workflow, save_workflow, validate
from engine.store import RunRecorder, RunStore

# Text, and text with lone surrogates (in ids, types and handles, where they broke save and run).
texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=12) | st.sampled_from(
    ["s", "a", "b", "", " ", "output", "true", "false", "approve", "reject", "condition-0", "subagent", "input"]
)
bad_texts = st.sampled_from(["\ud800", "x\udfff", "\udc80y"]) | st.text(
    st.characters(categories=("Cs",)), min_size=1, max_size=3
)
any_texts = st.one_of(texts, texts, texts, bad_texts)
ids = st.one_of(st.sampled_from(["s", "a", "b", "c"]), st.sampled_from(["s", "a", "b", "c"]), texts, bad_texts)
kinds = st.sampled_from(
    ["start", "agent", "if", "approval", "start", "agent", "if", "approval", "st\ud800art", "", "unknown"]
)


class Raw:
    """A JSON number written as given (a 5,000-digit integer cannot pass through json.dumps)."""

    def __init__(self, text: str) -> None:
        self.text = text


numbers = (
    st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(4000, 6000).map(lambda n: Raw("9" * n))
    | st.sampled_from([Raw("1e999"), Raw("-1e400")])
)
plain_numbers = st.integers(-(10**6), 10**6) | st.floats(allow_nan=False, allow_infinity=False)
scalars = st.none() | st.booleans() | numbers | any_texts
json_values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(any_texts, inner, max_size=4), max_leaves=12
)
# Inside a workflow, mostly values that load, so that validate, save and run are reached too.
plain_values = st.recursive(
    st.none() | st.booleans() | plain_numbers | texts,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3),
    max_leaves=6,
)


def workflow_docs(ids, kinds, handles, texts, values):
    """Workflow-shaped documents built from these strategies."""
    conditions = st.lists(
        st.fixed_dictionaries({"operator": st.sampled_from(["equal", "contains"]) | texts, "value": texts}), max_size=3
    )
    node_data = st.fixed_dictionaries(
        {},
        optional={
            "initialInput": texts | values,
            "agentName": texts,
            "userPrompt": texts,
            "systemPrompt": texts,
            "model": texts,
            "prompt": texts,
            "conditions": conditions | values,
            "tools": st.fixed_dictionaries(
                {}, optional={"web_search": st.booleans() | values, "subagents": st.booleans()}
            ),
            "extra": values,
        },
    )
    nodes = st.fixed_dictionaries(
        {"id": ids, "type": kinds, "data": node_data | values},
        optional={
            "position": st.fixed_dictionaries({"x": plain_numbers, "y": plain_numbers}) | values,
            "width": plain_numbers,
        },
    )
    connections = st.fixed_dictionaries(
        {"source": ids, "target": ids},
        optional={"id": ids, "sourceHandle": handles | st.none(), "targetHandle": handles},
    )
    return st.fixed_dictionaries(
        {"nodes": st.lists(nodes, max_size=6), "connections": st.lists(connections, max_size=6)},
        optional={"name": texts, "version": values},
    )


good_handles = st.sampled_from(["output", "input", "true", "false", "approve", "reject", "condition-0", "subagent"])
# Anything: lone surrogates in ids, types, handles and text; huge numbers; odd shapes.
documents = st.one_of(
    workflow_docs(ids, kinds, st.one_of(good_handles, texts, bad_texts), any_texts, plain_values),
    json_values,
    st.fixed_dictionaries({"nodes": json_values, "connections": json_values}),
)
# Graphs that mostly load, so that validate, save and run are reached often.
graphs = workflow_docs(
    st.sampled_from(["s", "a", "b", "c"]) | texts,
    st.sampled_from(["start", "agent", "if", "approval", "unknown"]),
    good_handles | texts,
    texts,
    plain_values,
)


def encode(value: object) -> str:
    """JSON text of ``value``: surrogates as \\u escapes (as a file would hold them), Raw numbers as is."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{encode(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(encode(v) for v in value) + "]"
    return json.dumps(value)


_store_dir = tempfile.TemporaryDirectory(prefix="flowdesk-prop-")
_store = RunStore(Path(_store_dir.name) / "runs.db")


async def _run(wf) -> None:
    run = Run(wf, EchoProvider(), max_visits=3, keep_events=False)
    recorder = RunRecorder(_store, run)
    try:
        status = await asyncio.wait_for(run.start(), 10)
        recorder.settled()
        assert run.status == status
    finally:
        recorder.close()
    assert recorder.error is None, recorder.error


def _check(doc: object) -> None:
    text = encode(doc)
    try:
        wf = loads_workflow(text)
    except WorkflowLoadError:
        return
    validate(wf)
    saved = dumps_workflow(wf)
    with tempfile.TemporaryDirectory() as d:
        save_workflow(wf, Path(d) / "w.flow.json")
    again = loads_workflow(saved)  # what was saved loads back
    assert [n.id for n in again.nodes] == [n.id for n in wf.nodes]
    asyncio.run(_run(wf))


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents)
def test_any_json_loads_validates_saves_and_runs_or_fails_typed(doc: object) -> None:
    _check(doc)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs)
def test_any_graph_validates_saves_and_runs(doc: object) -> None:
    _check(doc)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_load_or_fail_typed(data: bytes) -> None:
    try:
        loads_workflow(data)
    except WorkflowLoadError:
        pass
