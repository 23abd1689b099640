"""Variable rules (pattern, enum, min/max inclusive, pathMustExist from the cwd) refuse a run
before it starts (exit 2, the variable and the rule's field named); `run --json`; the final
variables kept in the run record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine import RunState, RunStore
from engine.graph.variables import coerce_variable


def flow(tmp_path: Path, **rules) -> Path:
    var = {"name": "x", "type": rules.pop("type", "string"), **rules}
    wf = {
        "name": "Rules",
        "nodes": [
            {"id": "s", "type": "start", "data": {"initialInput": "in {{x}}", "variables": [var]}},
            {
                "id": "a",
                "type": "agent",
                "data": {"agentName": "A", "userPrompt": "got {{x}}", "model": "m", "outputVar": "answer"},
            },
        ],
        "connections": [{"source": "s", "target": "a", "sourceHandle": "output", "targetHandle": "input"}],
    }
    path = tmp_path / "rules.flow.json"
    path.write_text(json.dumps(wf))
    return path


@pytest.mark.parametrize(
    ("rules", "value", "field"),
    [
        ({"pattern": "[a-z]+"}, "abc1", "pattern"),
        ({"enum": ["red", "green"]}, "blue", "enum"),
        ({"type": "number", "min": 1, "max": 5}, "0", "min"),
        ({"type": "number", "min": 1, "max": 5}, "6", "max"),
        ({"pathMustExist": True}, "nope.txt", "pathMustExist"),
    ],
)
def test_each_rule_refuses_the_run_naming_the_variable_and_rule(cli, tmp_path, rules, value, field) -> None:
    path = flow(tmp_path, **rules)
    res = cli("run", str(path), "--provider", "echo", "--var", f"x={value}", "--no-store")
    assert res.code == 2, res
    assert "'x'" in res.err and f"({field})" in res.err, res.err
    assert "Traceback" not in res.err


@pytest.mark.parametrize(
    ("rules", "value"),
    [
        ({"pattern": "[a-z]+"}, "abc"),
        ({"enum": ["red", "green"]}, "green"),
        ({"type": "number", "min": 1, "max": 5}, "1"),  # inclusive
        ({"type": "number", "min": 1, "max": 5}, "5"),
        ({"pathMustExist": True}, "here.txt"),  # relative to the cwd
    ],
)
def test_values_keeping_the_rules_run(cli, tmp_path, rules, value) -> None:
    (tmp_path / "here.txt").write_text("hi")
    path = flow(tmp_path, **rules)
    res = cli("run", str(path), "--provider", "echo", "--var", f"x={value}", "--no-store")
    assert res.code == 0, res


def test_run_json_prints_the_result_and_the_record_keeps_the_vars(cli, tmp_path) -> None:
    path = flow(tmp_path, enum=["red", "green"])
    res = cli("run", str(path), "--provider", "echo", "--var", "x=red", "--json")
    assert res.code == 0, res
    out = json.loads(res.out)
    assert set(out) == {"runId", "status", "output", "vars", "results"}
    assert out["status"] == "completed"
    assert out["output"] == "got red"
    assert out["vars"] == {"x": "red", "answer": "got red"}
    assert [r["nodeId"] for r in out["results"]] == ["s", "a"]
    assert {"nodeId", "status", "durationMs", "output"} == set(out["results"][1])
    assert out["results"][1]["status"] == "done" and out["results"][1]["output"] == "got red"
    assert isinstance(out["results"][1]["durationMs"], int)
    store = RunStore()
    try:
        info = store.find_run(out["runId"])
        state = RunState.of(store.workflow_of(info.id), store.iter_events(info.id))
    finally:
        store.close()
    assert state.vars == {"x": "red", "answer": "got red"}
    store = RunStore()
    try:
        assert store.final_variables(out["runId"]) == {"x": "red", "answer": "got red"}
    finally:
        store.close()
    shown = cli("show", out["runId"][:8])  # the history on the command line says them too
    assert shown.code == 0 and "variables at the end: x=red, answer=got red" in shown.out, shown


@pytest.mark.parametrize(
    ("value", "kind", "said"),
    [(True, "number", "true is not a number"), ({"a": 1}, "boolean", '{"a": 1} is not true or false')],
)
def test_a_value_of_the_wrong_type_is_named_as_written_not_as_python(value, kind, said) -> None:
    with pytest.raises(ValueError) as err:
        coerce_variable(value, kind)
    assert str(err.value) == said


def test_a_bad_pattern_is_a_validation_error(cli, tmp_path) -> None:
    path = flow(tmp_path, pattern="([")
    res = cli("validate", str(path))
    assert res.code == 1 and "variable_rule_invalid" in res.out, res
