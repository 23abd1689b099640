"""Every expectation type passes and fails (docs/evals.md); cases are read from their files with
bad lines named by their line number."""

from __future__ import annotations

import json

import pytest

from engine.evals import (
    CaseError,
    Expectation,
    Observed,
    cases_file_for,
    check,
    parse_case,
    parse_expect_option,
    parse_verdict,
    read_cases_file,
    write_cases_file,
)
from engine.evals.report import failure_line

OBS = Observed(
    output='{"answer": "Paris", "score": 3}',
    outputs={"draft": "Hello Paris", "final": '{"answer": "Paris", "score": 3}'},
    duration_ms=120.0,
    node_ms={"draft": 40.0},
    tokens=300,
    node_tokens={"draft": 100},
    cost=0.02,
    node_cost={"draft": 0.005},
)

SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}

CASES = [
    # (expectation, passes)
    ({"type": "contains", "value": "Paris"}, True),
    ({"type": "contains", "value": "Rome"}, False),
    ({"type": "contains", "value": "Hello", "node": "draft"}, True),
    ({"type": "notContains", "value": "Rome"}, True),
    ({"type": "notContains", "value": "Paris"}, False),
    ({"type": "equals", "value": "Hello Paris", "node": "draft"}, True),
    ({"type": "equals", "value": "Hello Rome", "node": "draft"}, False),
    ({"type": "equals", "value": {"answer": "Paris", "score": 3}}, True),
    ({"type": "equals", "value": {"answer": "Rome"}}, False),
    ({"type": "regex", "value": r"score\": \d"}, True),
    ({"type": "regex", "value": r"^Hello \w+$", "node": "draft"}, True),
    ({"type": "regex", "value": r"^\d+$"}, False),
    ({"type": "jsonSchema", "value": SCHEMA}, True),
    ({"type": "jsonSchema", "value": {"type": "object", "required": ["city"]}}, False),
    ({"type": "jsonSchema", "value": SCHEMA, "node": "draft"}, False),  # not JSON
    ({"type": "maxLatencyMs", "value": 200}, True),
    ({"type": "maxLatencyMs", "value": 100}, False),
    ({"type": "maxLatencyMs", "value": 30, "node": "draft"}, False),
    ({"type": "maxTokens", "value": 300}, True),
    ({"type": "maxTokens", "value": 299}, False),
    ({"type": "maxTokens", "value": 100, "node": "draft"}, True),
    ({"type": "maxTokens", "value": 99, "node": "draft"}, False),
    ({"type": "maxCost", "value": 0.05}, True),
    ({"type": "maxCost", "value": 0.01}, False),
    ({"type": "maxCost", "value": 0.001, "node": "draft"}, False),
]


@pytest.mark.parametrize(
    "obj,passes", CASES, ids=[f"{o['type']}-{'pass' if p else 'fail'}-{i}" for i, (o, p) in enumerate(CASES)]
)
def test_each_expectation_type_passes_and_fails(obj, passes) -> None:
    exp = parse_case({"name": "c", "expect": [obj]}, "test").expect[0]
    failure = check(exp, OBS)
    assert (failure is None) is passes, failure
    if failure is not None:
        assert failure.type == obj["type"]
        assert failure.actual not in (None, "")


def test_a_failure_names_the_actual_value() -> None:
    f = check(Expectation("contains", "Rome"), OBS)
    assert f is not None and f.to_json() == {"type": "contains", "expected": "Rome", "actual": OBS.output}
    f = check(Expectation("maxTokens", 10), OBS)
    assert f is not None and f.to_json() == {"type": "maxTokens", "expected": 10, "actual": 300}


def test_an_expectation_on_a_node_that_gave_nothing_fails_saying_so() -> None:
    f = check(Expectation("contains", "x", node="nowhere"), OBS)
    assert f is not None and "nowhere" in f.actual


@pytest.mark.parametrize(
    "text,verdict,reason",
    [
        ("PASS\nIt answers politely.", True, "It answers politely."),
        ("FAIL: it is rude", False, "it is rude"),
        ("**PASS** - fine", True, "fine"),
        ("fail. missing the order number", False, "missing the order number"),
        ("I think it is fine", None, "I think it is fine"),
    ],
)
def test_judge_verdicts(text, verdict, reason) -> None:
    assert parse_verdict(text) == (verdict, reason)


@pytest.mark.parametrize(
    "obj,message",
    [
        ({"name": "a", "expect": [{"type": "startsWith", "value": "x"}]}, "not an expectation type"),
        ({"name": "a", "expect": [{"type": "regex", "value": "("}]}, "not a valid regular expression"),
        ({"name": "a", "expect": [{"type": "maxTokens", "value": "lots"}]}, "needs a number"),
        ({"name": "a", "expect": [{"type": "judge"}]}, "needs a 'rubric'"),
        ({"name": "a", "expect": [{"type": "jsonSchema", "value": "x"}]}, "JSON schema"),
        ({"name": "a", "vars": [1]}, "'vars' must be an object"),
        ({"input": "x"}, "no 'name'"),
    ],
)
def test_bad_cases_are_refused_with_the_reason(obj, message) -> None:
    with pytest.raises(CaseError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_case(obj, "here")


def test_jsonl_beside_the_flow_and_a_bad_line_named(tmp_path) -> None:
    flow = tmp_path / "support.flow.json"
    assert cases_file_for(flow) == tmp_path / "support.tests.jsonl"
    path = cases_file_for(flow)
    path.write_text(
        json.dumps({"name": "one", "input": "hi", "expect": [{"type": "contains", "value": "hi"}]})
        + "\n\n# a comment\n{not json}\n",
        encoding="utf-8",
    )
    with pytest.raises(CaseError, match=r"line 4: not valid JSON"):
        read_cases_file(path)
    path.write_text(
        json.dumps({"name": "one", "expect": [{"type": "contains", "value": "hi"}]})
        + "\n"
        + json.dumps({"name": "two", "expect": [{"type": "nope"}]})
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(CaseError, match=r"line 2 \(case 'two'\), expectation 1"):
        read_cases_file(path)


def test_cases_round_trip_through_jsonl(tmp_path) -> None:
    cases = [
        parse_case(
            {"name": "a", "input": "x", "vars": {"tone": "calm"}, "expect": [{"type": "equals", "value": "y"}]}, "t"
        ),
        parse_case({"name": "b", "expect": [{"type": "judge", "rubric": "polite", "model": "m"}], "tags": ["x"]}, "t"),
    ]
    path = tmp_path / "f.tests.jsonl"
    write_cases_file(path, cases)
    again = read_cases_file(path)
    assert [c.to_json() for c in again] == [c.to_json() for c in cases]
    assert again[1].to_json()["tags"] == ["x"]  # unknown fields kept


def test_csv_rows_take_the_expectation_given(tmp_path) -> None:
    path = tmp_path / "data.csv"
    path.write_text("name,input,tone\nfirst,hello,calm\n,bye,warm\n", encoding="utf-8")
    cases = read_cases_file(path, [parse_expect_option("contains:hello")])
    assert [(c.name, c.input, c.vars) for c in cases] == [
        ("first", "hello", {"tone": "calm"}),
        ("row 3", "bye", {"tone": "warm"}),
    ]
    assert all(c.expect[0].type == "contains" and c.expect[0].value == "hello" for c in cases)
    bad = tmp_path / "bad.csv"
    bad.write_text("input\na,b\n", encoding="utf-8")
    with pytest.raises(CaseError, match="row 2"):
        read_cases_file(bad)


def test_expect_option_forms() -> None:
    assert parse_expect_option("maxTokens:500").to_json() == {"type": "maxTokens", "value": 500}
    assert parse_expect_option("draft.contains:hi").to_json() == {"node": "draft", "type": "contains", "value": "hi"}
    assert parse_expect_option("judge:is polite").rubric == "is polite"
    assert parse_expect_option('{"type": "regex", "value": "a+"}').value == "a+"
    with pytest.raises(CaseError):
        parse_expect_option("maxCost:cheap")


def test_json_schema_without_the_jsonschema_package_uses_the_engines_checker(monkeypatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "jsonschema", None)  # import jsonschema -> ImportError
    assert check(Expectation("jsonSchema", SCHEMA), OBS) is None
    failure = check(Expectation("jsonSchema", {"type": "object", "required": ["city"]}), OBS)
    assert failure is not None and "city" in failure.actual


def test_max_cost_counts_a_model_with_no_price_as_free() -> None:
    """As docs/evals.md says: a local server's model (Ollama's have no price) costs nothing."""
    obs = Observed(output="x", outputs={"draft": "x"}, cost=0.0, node_unpriced={"draft": "llama3.2"})
    assert obs.unpriced == ["llama3.2"]
    assert check(Expectation("maxCost", 0.0), obs) is None
    assert check(Expectation("maxCost", 0.0, node="draft"), obs) is None


def test_a_failure_line_quotes_values_as_written_not_as_python_reprs() -> None:
    line = failure_line(check(Expectation("regex", r"order \d+"), Observed(output="it's order x")))
    assert line == r"""regex 'order \d+': got 'it's order x'"""
