"""A condition's value (and path) is a template like any string of a node's data
(docs/design.md, "Data flow: variables and templates"): resolved when the step runs, and
not refused by the validator as "not a number" or "not a regex" while it is a reference."""

from __future__ import annotations

import pytest

from engine import EchoProvider, Run, RunStatus, parse_workflow, validate
from tests.engine.flows import agent, link


def _wf(text: str, conds: list[dict], variables: list[dict]) -> dict:
    return {
        "nodes": [
            {"id": "s", "type": "start", "data": {"initialInput": text, "variables": variables}},
            {"id": "c", "type": "if", "data": {"conditions": conds}},
            agent("yes"),
            agent("no"),
        ],
        "connections": [link("s", "c"), link("c", "yes", "condition-0"), link("c", "no", "false")],
    }


VARS = [
    {"name": "limit", "value": 40, "type": "number"},
    {"name": "word", "value": "Paris", "type": "string"},
    {"name": "doc", "value": {"key": "status"}, "type": "json"},
]


@pytest.mark.parametrize(
    "text,cond,branch",
    [
        ("42", {"operator": "gt", "value": "{{limit}}"}, "yes"),
        ("39", {"operator": "gt", "value": "{{limit}}"}, "no"),
        ("42", {"operator": "lt", "value": "{{ limit }}"}, "no"),
        ("shipped to paris", {"operator": "endsWith", "value": "{{word}}"}, "yes"),
        ("shipped to PARIS", {"operator": "regex", "value": "to {{word}}$"}, "yes"),
        ("Paris", {"operator": "equal", "value": "${word}"}, "yes"),
        ('{"status": "ok"}', {"operator": "equal", "value": "ok", "path": ".{{doc.key}}"}, "yes"),
        ("{{nope}}", {"operator": "equal", "value": "{{nope}}"}, "yes"),  # unresolved: as written
    ],
)
async def test_condition_value_is_resolved_when_the_step_runs(text: str, cond: dict, branch: str) -> None:
    wf = parse_workflow(_wf(text, [cond], VARS))
    assert not [i for i in validate(wf) if i.severity == "error"]
    run = Run(wf, EchoProvider())
    assert await run.start() == RunStatus.COMPLETED
    assert [e.node_id for e in run.events if e.type == "llm_response"] == [branch]
    said = str([e.content for e in run.events if e.type == "logic_check"][0])
    if "nope" not in text:  # the check names the value that was compared
        assert "{{" not in said and "${" not in said, said


def test_a_written_out_bad_number_or_regex_is_still_refused() -> None:
    wf = parse_workflow(_wf("x", [{"operator": "gt", "value": "ten"}, {"operator": "regex", "value": "(x"}], VARS))
    codes = [i.code for i in validate(wf) if i.severity == "error"]
    assert codes == ["condition_not_a_number", "condition_bad_regex"]


async def test_a_secret_in_a_condition_is_masked_in_logic_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FD_TEST_PASSPHRASE", "Hunter2-xyz")
    wf = parse_workflow(_wf("hunter2-xyz", [{"operator": "equal", "value": "{{secrets.FD_TEST_PASSPHRASE}}"}], VARS))
    run = Run(wf, EchoProvider())
    assert await run.start() == RunStatus.COMPLETED
    assert [e.node_id for e in run.events if e.type == "llm_response"] == ["yes"]
    said = " ".join(str(e.content) for e in run.events if e.type == "logic_check")
    assert "Hunter2" not in said and "hunter2" not in said.lower(), said
