"""Routing and structured answers over real HTTP (docs/design.md, "Conditions, routing and
structured answers"): the router with a fake OpenAI-compatible server (the right route, an
unknown label → ``false``), an agent's ``responseFormat`` (valid, invalid then valid after one
retry, invalid twice fails the step, ``{{answer.field}}`` downstream), Anthropic's forced tool,
and the echo provider's deterministic choices."""

from __future__ import annotations

import json

from engine import EchoProvider, Run, RunStatus, parse_workflow, spec_for, validate
from tests.fakes.anthropic_server import anthropic_plain, anthropic_tool_use
from tests.fakes.openai_server import openai_plain, openai_text
from tests.llm.conftest import agent, make_run

ROUTES = [
    {"label": "billing", "description": "Invoices, payments and refunds."},
    {"label": "tech", "description": "Crashes, errors and bugs in the app."},
]
SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer"},
        "kind": {"type": "string", "enum": ["trip", "stay"]},
    },
    "required": ["city", "days"],
}


def router_flow(text: str = "My invoice is wrong", routes: list | None = None):
    nodes = [
        {"id": "s", "type": "start", "data": {"initialInput": text}},
        {"id": "r", "type": "router", "data": {"routes": routes or ROUTES, "model": "gpt-4o-mini"}},
        agent("b", "Billing", user="billing: {{PREVIOUS_OUTPUT}}"),
        agent("t", "Tech"),
        agent("o", "Other"),
    ]
    links = [("s", "r", "output"), ("r", "b", "route-0"), ("r", "t", "route-1"), ("r", "o", "false")]
    return parse_workflow(
        {
            "nodes": nodes,
            "connections": [
                {"source": a, "target": b, "sourceHandle": h, "targetHandle": "input"} for a, b, h in links
            ],
        }
    )


def ran(run: Run) -> list[str]:
    return [e.node_id for e in run.events if e.type == "llm_response"]


async def test_router_follows_the_route_the_model_chose(server, fast):
    server.push(
        openai_text(json.dumps({"label": "tech", "reason": "The app crashes."}), pieces=2), openai_plain("fixed")
    )
    run = make_run(router_flow("The app crashes on start"), server, fast)
    assert await run.start() == RunStatus.COMPLETED
    assert ran(run) == ["t"]
    choice = [e for e in run.events if e.type == "route_choice"]
    assert len(choice) == 1 and choice[0].extra["label"] == "tech" and choice[0].extra["reason"] == "The app crashes."
    assert choice[0].extra["handle"] == "route-1"
    # one request, constrained to the labels by a JSON schema with an enum
    body = server.requests[0].json
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["schema"]["properties"]["label"]["enum"] == ["billing", "tech"]
    assert body["messages"][1]["content"] == "The app crashes on start"
    # the router passes its input on; the canvas knows which route was taken
    assert run.outputs["r"] == "The app crashes on start"
    from engine import RunState

    state = RunState(run.workflow)
    state.apply_many(run.events)
    assert ("r", "route-1", "t") in state.links


async def test_router_unknown_label_follows_false(server, fast):
    server.push(openai_plain(json.dumps({"label": "sales", "reason": "Wants to buy."})), openai_plain("ok"))
    run = make_run(router_flow("I want to buy ten"), server, fast)
    assert await run.start() == RunStatus.COMPLETED
    assert ran(run) == ["o"]
    choice = [e for e in run.events if e.type == "route_choice"][0]
    assert choice.extra["handle"] == "false" and choice.extra["label"] == "sales"
    assert len(server.requests) == 2  # no retry for the router


async def test_router_on_echo_chooses_deterministically():
    for text, expected in (
        ("My invoice total is wrong", "b"),
        ("The app shows an error", "t"),
        ("The invoice app", "b"),  # a tie (invoice, app): the first of the two
        ("Bugs and crashes, errors everywhere", "t"),
        ("Hello there", "b"),
    ):  # none: the first
        run = Run(router_flow(text), EchoProvider())
        assert await run.start() == RunStatus.COMPLETED
        assert ran(run) == [expected], text
    # the reason says why, in one short line (not the input again)
    choice = [e for e in run.events if e.type == "route_choice"][0]
    assert choice.extra["reason"] == "echo: no choice shares a word with the input, so the first one (billing)"
    run = Run(router_flow("The app shows an error"), EchoProvider())
    await run.start()
    choice = [e for e in run.events if e.type == "route_choice"][0]
    assert choice.extra["reason"] == "echo: the input shares 'app', 'error' with tech"


def test_router_handles_labels_and_checks():
    wf = router_flow()
    node = wf.node("r")
    spec = spec_for("router")
    assert spec.outputs(node.data) == ("route-0", "route-1", "false")
    assert spec.handle_label(node.data, "route-1") == "tech"
    bad = parse_workflow(
        {
            "nodes": [
                {"id": "s", "type": "start"},
                {"id": "r", "type": "router", "data": {"routes": [{"label": "a"}, {"label": "A"}, {"label": " "}]}},
            ],
            "connections": [{"source": "s", "target": "r"}],
        }
    )
    codes = {i.code for i in validate(bad) if i.severity == "error"}
    assert {"router_duplicate_label", "router_empty_label"} <= codes


def structured_flow(schema: dict | None = None):
    first = agent("a", "Planner")
    first["data"]["responseFormat"] = {"type": "json_schema", "schema": schema or SCHEMA}
    first["data"]["outputVar"] = "answer"
    nxt = agent("n", "Next", user="Go to {{answer.city}} for {{answer.days}} days")
    return parse_workflow(
        {
            "nodes": [{"id": "s", "type": "start", "data": {"initialInput": "Plan a trip"}}, first, nxt],
            "connections": [{"source": "s", "target": "a"}, {"source": "a", "target": "n"}],
        }
    )


async def test_structured_answer_valid_flows_on_as_a_value(server, fast):
    server.push(openai_text(json.dumps({"city": "Lyon", "days": 3}), pieces=2), openai_plain("done"))
    run = make_run(structured_flow(), server, fast)
    assert await run.start() == RunStatus.COMPLETED
    assert run.outputs["a"] == {"city": "Lyon", "days": 3}
    fmt = server.requests[0].json["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["schema"] == SCHEMA
    assert "JSON schema" in server.requests[0].json["messages"][0]["content"]
    assert server.requests[1].json["messages"][1]["content"] == "Go to Lyon for 3 days"
    assert not [e for e in run.events if e.type == "structured_retry"]


async def test_structured_answer_invalid_then_valid_retries_once(server, fast):
    server.push(
        openai_plain("Sure! Lyon, 3 days."), openai_plain(json.dumps({"city": "Lyon", "days": 3})), openai_plain("done")
    )
    run = make_run(structured_flow(), server, fast)
    assert await run.start() == RunStatus.COMPLETED
    retries = [e for e in run.events if e.type == "structured_retry"]
    assert len(retries) == 1 and "not JSON" in retries[0].extra["error"]
    assert "not valid" in server.requests[1].json["messages"][1]["content"]
    assert run.outputs["a"] == {"city": "Lyon", "days": 3}
    assert server.requests[2].json["messages"][1]["content"] == "Go to Lyon for 3 days"
    usage = [e.extra["usage"] for e in run.events if e.type == "llm_response" and e.node_id == "a"][0]
    assert usage == {"prompt_tokens": 10, "completion_tokens": 6}  # both attempts counted


async def test_structured_answer_invalid_twice_fails_the_step(server, fast):
    server.push(openai_plain(json.dumps({"city": "Lyon"})), openai_plain(json.dumps({"city": "Lyon", "days": "3"})))
    run = make_run(structured_flow(), server, fast)
    assert await run.start() == RunStatus.FAILED
    errors = [e.content for e in run.events if e.type == "llm_error"]
    assert len(errors) == 1 and "twice" in errors[0] and "days should be integer" in errors[0]
    assert "n" not in run.outputs and len(server.requests) == 2


async def test_structured_answer_through_anthropic_tool_use(server, fast):
    server.push(anthropic_tool_use([("structured_answer", {"city": "Oslo", "days": 2})]), anthropic_plain("x"))
    wf = structured_flow()
    wf.node("a").data.provider = "anthropic"
    run = make_run(wf, server, fast, provider="anthropic")
    assert await run.start() == RunStatus.COMPLETED
    body = server.requests[0].json
    assert body["tool_choice"] == {"type": "tool", "name": "structured_answer"}
    assert body["tools"][0]["input_schema"] == SCHEMA
    assert run.outputs["a"] == {"city": "Oslo", "days": 2}
    assert server.requests[1].json["messages"][0]["content"] == "Go to Oslo for 2 days"


async def test_structured_answer_on_echo_is_built_from_the_schema():
    run = Run(structured_flow(), EchoProvider())
    assert await run.start() == RunStatus.COMPLETED
    assert run.outputs["a"] == {"city": "Plan a trip", "days": 0, "kind": "trip"}


def test_a_response_format_without_a_schema_is_an_error():
    wf = structured_flow()
    wf.node("a").data.responseFormat = {"type": "json_schema"}
    assert "agent_bad_response_format" in [i.code for i in validate(wf) if i.severity == "error"]


def test_the_schema_subset_checks_type_properties_required_enum_items():
    from engine import SchemaError, parse_json_answer, schema_errors

    schema = {
        "type": "object",
        "required": ["tags"],
        "additionalProperties": False,
        "properties": {
            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
            "n": {"type": "number"},
        },
    }
    assert schema_errors({"tags": ["a", "b"], "n": 1.5}, schema) == []
    assert schema_errors({"tags": ["a", "c"], "n": True, "x": 1}, schema) == [
        'tags[1] should be one of ["a", "b"], not "c"',
        "n should be number, not true",
        "the answer has fields the schema does not allow: x",
    ]
    assert parse_json_answer('```json\n{"tags": []}\n```', schema) == {"tags": []}
    try:
        parse_json_answer("{}", schema)
    except SchemaError as err:
        assert str(err) == "the answer lacks the required field 'tags'"
    else:  # pragma: no cover
        raise AssertionError("no error")
