"""The ``if`` node's operators beyond AgentFlow's two (docs/design.md, "Conditions, routing and
structured answers"): each operator run through a real ``Run``, ``path`` into JSON, the labels,
and the validation errors for a bad regex, a non-number and a bad path."""

from __future__ import annotations

import pytest

from engine import EchoProvider, Run, RunStatus, parse_workflow, spec_for, validate
from tests.engine.flows import agent, link, start


def _if(conds: list[dict]) -> dict:
    return {"id": "c", "type": "if", "data": {"conditions": conds}}


async def _branch(text: str, cond: dict) -> str:
    wf = parse_workflow(
        {
            "nodes": [start(text=text), _if([cond]), agent("yes"), agent("no")],
            "connections": [link("s", "c"), link("c", "yes", "condition-0"), link("c", "no", "false")],
        }
    )
    run = Run(wf, EchoProvider())
    assert await run.start() == RunStatus.COMPLETED
    ran = [e.node_id for e in run.events if e.type == "llm_response"]
    assert len(ran) == 1
    return ran[0]


@pytest.mark.parametrize(
    "operator,value,text,branch",
    [
        ("notContains", "refund", "all good", "yes"),
        ("notContains", "Refund", "I want a REFUND", "no"),
        ("notContains", "", "anything", "no"),  # an empty value never matches
        ("startsWith", "hello", "  Hello world", "yes"),
        ("startsWith", "world", "hello world", "no"),
        ("endsWith", "WORLD", "hello world  ", "yes"),
        ("endsWith", "hello", "hello world", "no"),
        ("regex", r"order\s+#\d+", "Your ORDER  #123 shipped", "yes"),
        ("regex", r"^\d+$", "12a", "no"),
        ("isEmpty", "", "   ", "yes"),
        ("isEmpty", "", "x", "no"),
        ("gt", "5", " 7.5 ", "yes"),
        ("gt", "5", "5", "no"),
        ("gt", "5", "seven", "no"),  # a text that is not a number never matches
        ("lt", "10", "-3", "yes"),
        ("lt", "10", "10", "no"),
    ],
)
async def test_each_new_operator(operator: str, value: str, text: str, branch: str) -> None:
    assert await _branch(text, {"operator": operator, "value": value}) == branch


@pytest.mark.parametrize(
    "operator,value,text,branch",
    [
        ("contains", "refund", "I want a REFUND now", "yes"),
        ("contains", "  Refund ", "i want a refund", "yes"),
        ("equal", "yes", "YES", "yes"),
        ("equal", "yes", " yes", "no"),  # AgentFlow's equal: the text is not trimmed
        ("equal", " Yes ", "yes", "yes"),
        ("contains", "", "anything", "no"),
    ],
)
async def test_agentflow_operators_keep_their_rules(operator: str, value: str, text: str, branch: str) -> None:
    assert await _branch(text, {"operator": operator, "value": value}) == branch


@pytest.mark.parametrize(
    "path,operator,value,branch",
    [
        (".order.total", "gt", "100", "yes"),
        (".order.total", "lt", "100", "no"),
        (".order.items[1].name", "equal", "Pen", "yes"),
        ("order.items[0].name", "startsWith", "boo", "yes"),  # a leading key may omit its dot
        (".order.items[-1].name", "endsWith", "en", "yes"),
        (".order.note", "isEmpty", "", "yes"),
        (".order.missing", "isEmpty", "", "yes"),  # nothing there: empty
        (".order.missing", "contains", "x", "no"),
        (".order.items", "contains", "pen", "yes"),  # a list or object is tested as JSON text
        (".order.total", "regex", r"^1\d\d\.5$", "yes"),
    ],
)
async def test_path_looks_into_a_json_previous_output(path: str, operator: str, value: str, branch: str) -> None:
    text = '{"order": {"total": 150.5, "note": "", "items": [{"name": "Book"}, {"name": "Pen"}]}}'
    assert await _branch(text, {"operator": operator, "value": value, "path": path}) == branch


async def test_path_on_text_that_is_not_json_finds_nothing() -> None:
    assert await _branch("plain words", {"operator": "contains", "value": "plain", "path": ".a"}) == "no"


def test_a_bad_pattern_or_a_non_number_value_never_matches() -> None:
    # (validation refuses such a flow before it runs; the rule holds anyway)
    from engine.nodes.if_ import Condition, condition_matches

    assert condition_matches(Condition(operator="regex", value="[unclosed"), "[unclosed") is False
    assert condition_matches(Condition(operator="lt", value="ten"), "3") is False


def _wf(conds: list[dict]):
    return parse_workflow(
        {"nodes": [start(), _if(conds), agent("a")], "connections": [link("s", "c"), link("c", "a", "condition-0")]}
    )


def test_labels_and_operator_names() -> None:
    wf = _wf(
        [
            {"operator": "isEmpty"},
            {"operator": "GT", "value": 5},
            {"operator": "regex", "value": "a+"},
            {"operator": "notcontains", "value": "x", "path": ".a[0]"},
        ]
    )
    data = wf.node("c").data
    assert [c.operator for c in data.conditions] == ["isEmpty", "gt", "regex", "notContains"]
    spec = spec_for("if")
    assert [spec.handle_label(data, f"condition-{i}") for i in range(4)] == [
        "Condition 1: isEmpty",
        "Condition 2: gt 5",
        "Condition 3: regex 'a+'",
        "Condition 4: .a[0] notContains 'x'",
    ]
    # the file keeps what was written; path only when set
    dumped = wf.node("c").model_dump(mode="json", exclude_none=True)["data"]["conditions"]
    assert dumped[0] == {"operator": "isEmpty", "value": ""} and dumped[3]["path"] == ".a[0]"


def test_validation_errors_for_a_bad_regex_a_non_number_and_a_bad_path() -> None:
    issues = validate(
        _wf(
            [
                {"operator": "regex", "value": "(unclosed"},
                {"operator": "gt", "value": "ten"},
                {"operator": "lt", "value": ""},
                {"operator": "equal", "value": "x", "path": ".a[b"},
                {"operator": "isEmpty"},
                {"operator": "gt", "value": "1e3"},
            ]
        )
    )
    errors = [(i.code, i.message) for i in issues if i.severity == "error"]
    codes = [c for c, _m in errors]
    assert codes == ["condition_bad_regex", "condition_not_a_number", "condition_not_a_number", "condition_bad_path"]
    assert "Condition 1" in errors[0][1] and "(unclosed" in errors[0][1]
    assert "'ten' is not a number" in errors[1][1]
    # isEmpty takes no value: no "empty value" warning for it
    assert not [i for i in issues if i.code == "empty_condition_value"]


async def test_logic_check_describes_the_new_operators() -> None:
    wf = parse_workflow(
        {
            "nodes": [
                start(text='{"n": 3}'),
                _if([{"operator": "gt", "value": "5", "path": ".n"}, {"operator": "lt", "value": "5", "path": ".n"}]),
                agent("a"),
            ],
            "connections": [link("s", "c"), link("c", "a", "condition-1")],
        }
    )
    run = Run(wf, EchoProvider())
    await run.start()
    assert [e.content for e in run.events if e.type == "logic_check"] == [
        "Condition 1: .n gt 5 → no match",
        "Condition 2: .n lt 5 → matched",
    ]
    assert [e.node_id for e in run.events if e.type == "llm_response"] == ["a"]
