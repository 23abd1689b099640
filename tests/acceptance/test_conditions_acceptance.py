"""Acceptance: conditions, routing and structured answers, as an outside user sees them.

Written from the design's names only (the `if` operators and their rules, the `router` kind
with `routes`, `route-<i>`/`false` and `route_choice`, an agent's `responseFormat`, a `loop`
walking a list with `over`), driving the `flowdesk` command as a real subprocess: the offline
`echo` provider, or the fake OpenAI-compatible server scripting the model's answers.

To stay fast, the condition cases share a few runs: each input gets one workflow in which
every case is its own `if` node fed by Start, each of its handles leading to its own marker
(a `join` with one link, which needs no model); which markers ran says which handle each
condition followed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.conftest import answer, chats
from tests.acceptance.support import CliResult, Home, chain, cli, link, payload, start_node
from tests.fakes.openai_server import FakeLLMServer, free_port

# ----------------------------------------------------------------------------- helpers

TEXT = "  Order #42 shipped to Paris  "
EXACT = "The Quick Brown Fox"
NUMBER = " 42 "
BLANK = "   "
JSONTEXT = '{"items": [{"name": "Widget", "price": 12.5}], "status": "OK"}'


def cond(operator: str, value: str | None = None, path: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"operator": operator}
    if value is not None:
        c["value"] = value
    if path is not None:
        c["path"] = path
    return c


# Each case: (name, input, conditions or legacy data, handles to link, expected handle).
# `None` as the expected handle: no marker runs.
CASES: dict[str, list[tuple[str, str, Any, list[str] | None, str]]] = {
    "contains": [
        ("c_second", TEXT, [cond("contains", "refund"), cond("contains", "  PARIS ")], None, "condition-1"),
        ("c_first_wins", TEXT, [cond("contains", "order"), cond("contains", "paris")], None, "condition-0"),
        ("c_empty", TEXT, [cond("contains", ""), cond("contains", "   "), cond("contains", "zzz")], None, "false"),
        ("c_none", TEXT, [cond("contains", "refund")], None, "false"),
    ],
    "equal": [
        ("e_trim", EXACT, [cond("equal", "quick"), cond("equal", "  THE QUICK BROWN FOX ")], None, "condition-1"),
        ("e_empty", BLANK, [cond("equal", ""), cond("equal", "  ")], None, "false"),
        ("e_none", EXACT, [cond("equal", "the quick brown")], None, "false"),
    ],
    "legacy": [
        # an old file: the first condition's handle is `true`
        ("l_true", TEXT, [cond("contains", "shipped")], ["true", "false"], "true"),
        # an old file: `condition` (a string) is a `contains` condition
        ("l_string", TEXT, {"condition": "PARIS"}, ["condition-0", "false"], "condition-0"),
    ],
    "notContains": [
        ("n_second", TEXT, [cond("notContains", "order"), cond("notContains", "refund")], None, "condition-1"),
        ("n_empty", TEXT, [cond("notContains", ""), cond("notContains", "  ")], None, "false"),
    ],
    "startsWith_endsWith": [
        ("s_trim", TEXT, [cond("startsWith", "paris"), cond("startsWith", "ORDER #4")], None, "condition-1"),
        ("s_none", TEXT, [cond("startsWith", "shipped")], None, "false"),
        ("x_trim", TEXT, [cond("endsWith", "order"), cond("endsWith", "TO PARIS")], None, "condition-1"),
        ("x_none", TEXT, [cond("endsWith", "shipped")], None, "false"),
        ("s_empty", TEXT, [cond("startsWith", ""), cond("endsWith", "  ")], None, "false"),
    ],
    "regex": [
        ("r_ci", TEXT, [cond("regex", r"^\d+$"), cond("regex", r"#\d+\s+SHIPPED")], None, "condition-1"),
        ("r_search", TEXT, [cond("regex", "paris")], None, "condition-0"),
        ("r_original", TEXT, [cond("regex", r"^\s+order")], None, "condition-0"),
        ("r_none", TEXT, [cond("regex", r"refund|\bcancel")], None, "false"),
    ],
    "isEmpty": [
        ("i_blank", BLANK, [cond("isEmpty")], None, "condition-0"),
        ("i_text", TEXT, [cond("isEmpty")], None, "false"),
    ],
    "gt_lt": [
        ("g_num", NUMBER, [cond("gt", "100"), cond("gt", "41.5")], None, "condition-1"),
        ("g_strict", NUMBER, [cond("gt", "42"), cond("lt", "42"), cond("lt", "42.5")], None, "condition-2"),
        ("g_text", TEXT, [cond("gt", "1"), cond("lt", "1000000")], None, "false"),
        ("g_blank", BLANK, [cond("lt", "1"), cond("gt", "-1")], None, "false"),
        ("g_padded", NUMBER, [cond("gt", " 41.5 "), cond("lt", "50")], None, "condition-0"),
    ],
    "path": [
        ("p_equal", JSONTEXT, [cond("equal", "ok", ".status")], None, "condition-0"),
        (
            "p_index_gt",
            JSONTEXT,
            [cond("gt", "100", ".items[0].price"), cond("gt", "12", ".items[0].price")],
            None,
            "condition-1",
        ),
        # "price" is in the whole text but not in the name: the path looks at the value only
        (
            "p_value_only",
            JSONTEXT,
            [cond("contains", "price", ".items[0].name"), cond("contains", "WIDG", ".items[0].name")],
            None,
            "condition-1",
        ),
        ("p_lt_none", JSONTEXT, [cond("lt", "10", ".items[0].price")], None, "false"),
        ("p_missing", JSONTEXT, [cond("isEmpty", path=".nothing[3]")], None, "condition-0"),
        ("p_list", JSONTEXT, [cond("contains", "widget", ".items")], None, "condition-0"),
    ],
}


def handles_of(conditions: Any, linked: list[str] | None) -> list[str]:
    if linked is not None:
        return linked
    return [f"condition-{i}" for i in range(len(conditions))] + ["false"]


def marker(node_id: str, x: int = 600, y: int = 0) -> dict[str, Any]:
    """A node that needs no model and whose step shows that a branch reached it."""
    return {"id": node_id, "type": "join", "x": x, "y": y, "data": {}}


def ran(res: CliResult, node: str) -> int:
    return len(res.of_type("step_start", node))


def condition_flow(initial: str) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = [start_node(initial=initial)]
    links = []
    for group in CASES.values():
        for name, text, conditions, linked, _want in group:
            if text != initial:
                continue
            data = conditions if isinstance(conditions, dict) else {"conditions": conditions}
            nodes.append({"id": f"if_{name}", "type": "if", "x": 300, "y": 80 * len(nodes), "data": data})
            links.append(link("start", f"if_{name}"))
            for handle in handles_of(conditions, linked):
                mid = f"m_{name}_{handle}"
                nodes.append(marker(mid, y=80 * len(nodes)))
                links.append(link(f"if_{name}", mid, handle))
    return {"name": "conditions", "version": 1, "nodes": nodes, "connections": links}


@pytest.fixture(scope="module")
def condition_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, CliResult]:
    """One echo run per input; every case of that input is an `if` node of that run."""
    home = Home(tmp_path_factory.mktemp("conditions"))
    out: dict[str, CliResult] = {}
    for k, initial in enumerate([TEXT, EXACT, NUMBER, BLANK, JSONTEXT]):
        res = home.run(home.write(f"c{k}.flow.json", condition_flow(initial)), timeout=120)
        assert res.rc == 0, f"the run of input {initial!r} did not complete: {res.combined[-3000:]}"
        out[initial] = res
    return out


# ----------------------------------------------------------------------------- conditions


@pytest.mark.parametrize("group", list(CASES))
def test_if_operator_follows_the_first_matching_condition(group: str, condition_runs: dict[str, CliResult]) -> None:
    """Every case of one operator: exactly the expected handle's marker ran."""
    wrong = []
    for name, text, conditions, linked, want in CASES[group]:
        res = condition_runs[text]
        took = [h for h in handles_of(conditions, linked) if ran(res, f"m_{name}_{h}")]
        if took != [want]:
            wrong.append(f"{name}: input {text!r}, conditions {conditions}: expected {want!r}, followed {took}")
    assert not wrong, "\n".join(wrong)


def test_if_logs_logic_check_for_its_evaluation(condition_runs: dict[str, CliResult]) -> None:
    missing = []
    for group in CASES.values():
        for name, text, *_ in group:
            if not condition_runs[text].of_type("logic_check", f"if_{name}"):
                missing.append(name)
    assert not missing, f"no logic_check logged by: {missing}"


def test_bad_regex_and_non_number_are_refused_before_the_run(tmp_path: Path) -> None:
    home = Home(tmp_path)
    doc = chain(
        "bad",
        [
            start_node(initial="x"),
            {"id": "rx", "type": "if", "data": {"conditions": [cond("regex", "(unclosed")]}},
            marker("after_rx"),
        ],
    )
    doc["nodes"].append({"id": "num", "type": "if", "x": 300, "y": 300, "data": {"conditions": [cond("gt", "ten")]}})
    doc["nodes"].append(marker("after_num", y=300))
    doc["connections"] += [link("start", "num"), link("num", "after_num", "condition-0")]
    doc["connections"] = [c for c in doc["connections"] if c["target"] != "after_rx"] + [
        link("rx", "after_rx", "condition-0")
    ]
    path = home.write("bad.flow.json", doc)
    checked = home.validate(path)
    assert checked.rc != 0, checked.combined
    assert "rx" in checked.combined and "num" in checked.combined, checked.combined
    res = home.run(path)
    assert res.rc != 0 and not res.of_type("step_start", "after_rx"), res.combined


# ----------------------------------------------------------------------------- router

ROUTES = [
    {"label": "billing", "description": "Invoices, payments and refunds."},
    {"label": "tech", "description": "Crashes, errors and bugs in the app."},
]


def router_flow(initial: str) -> dict[str, Any]:
    nodes = [
        start_node(initial=initial),
        {"id": "triage", "type": "router", "x": 250, "y": 0, "data": {"routes": ROUTES}},
        marker("to_billing", y=0),
        marker("to_tech", y=100),
        marker("to_none", y=200),
    ]
    links = [
        link("start", "triage"),
        link("triage", "to_billing", "route-0"),
        link("triage", "to_tech", "route-1"),
        link("triage", "to_none", "false"),
    ]
    return {"name": "router", "version": 1, "nodes": nodes, "connections": links}


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    with FakeLLMServer() as s:
        yield s


def model_home(tmp_path: Path) -> Home:
    home = Home(tmp_path)
    for key in list(home.env):
        if key.upper().endswith("_PROXY") or key in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
            home.env.pop(key)
    return home


def run_model(home: Home, path: Path, server: FakeLLMServer, *extra: str) -> CliResult:
    return cli(
        "run",
        str(path),
        "--provider",
        "openai",
        "--base-url",
        server.base_url,
        "--jsonl",
        *extra,
        env=home.env,
        cwd=home.root,
        timeout=120,
    )


def lists_in(value: Any) -> Iterator[list[Any]]:
    if isinstance(value, list):
        yield value
        for v in value:
            yield from lists_in(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from lists_in(v)


def test_router_follows_the_label_the_model_names(tmp_path: Path, llm: FakeLLMServer) -> None:
    home = model_home(tmp_path)
    llm.handler = lambda rec: answer(rec, json.dumps({"label": "tech", "reason": "The app crashes."}))
    res = run_model(home, home.write("r.flow.json", router_flow("My app crashes on start")), llm)
    assert res.rc == 0, res.combined
    assert [ran(res, n) for n in ("to_billing", "to_tech", "to_none")] == [0, 1, 0], res.combined
    assert len(chats(llm)) == 1, "one request per routing step"
    # the request is constrained to the labels: both are offered as the allowed values
    body = chats(llm)[0].json
    assert any(sorted(map(str, lst)) == ["billing", "tech"] for lst in lists_in(body)), json.dumps(body)[:3000]
    choices = res.of_type("route_choice", "triage")
    assert len(choices) == 1, res.combined
    got = payload(choices[0])
    assert got.get("label") == "tech" and got.get("reason") == "The app crashes.", choices[0]


def test_router_unknown_label_follows_false_without_retry(tmp_path: Path, llm: FakeLLMServer) -> None:
    home = model_home(tmp_path)
    llm.handler = lambda rec: answer(rec, json.dumps({"label": "sales", "reason": "Wants to buy more."}))
    res = run_model(home, home.write("r.flow.json", router_flow("I want a quote")), llm)
    assert res.rc == 0, res.combined
    assert [ran(res, n) for n in ("to_billing", "to_tech", "to_none")] == [0, 0, 1], res.combined
    assert len(chats(llm)) == 1, f"no retry expected, got {len(chats(llm))} requests"
    assert res.of_type("route_choice", "triage"), res.combined


def test_router_chosen_route_receives_the_routers_input(tmp_path: Path, llm: FakeLLMServer) -> None:
    home = model_home(tmp_path)
    llm.handler = lambda rec: answer(rec, json.dumps({"label": "billing", "reason": "An invoice."}))
    res = run_model(home, home.write("r.flow.json", router_flow("Invoice 7 is wrong")), llm)
    assert res.rc == 0, res.combined
    assert [ran(res, n) for n in ("to_billing", "to_tech", "to_none")] == [1, 0, 0], res.combined
    out = res.of_type("node_output", "to_billing")
    assert out and "Invoice 7 is wrong" in str(out[-1].get("content")), res.combined
    assert "Invoice 7 is wrong" in json.dumps(chats(llm)[0].json), "the input is what the model is asked about"


def test_router_offline_echo_is_deterministic(tmp_path: Path) -> None:
    home = Home(tmp_path)
    path = home.write("r.flow.json", router_flow("The app crashes with errors"))
    first, second = home.run(path), home.run(path)
    for res in (first, second):
        assert res.rc == 0, res.combined
        assert [ran(res, n) for n in ("to_billing", "to_tech", "to_none")] == [0, 1, 0], res.combined
        assert res.of_type("route_choice", "triage"), res.combined


# ----------------------------------------------------------------------------- structured answers

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
    "required": ["city", "days"],
}


def structured_flow() -> dict[str, Any]:
    plan = {
        "id": "plan",
        "type": "agent",
        "data": {
            "agentName": "Planner",
            "systemPrompt": "Plan a trip.",
            "userPrompt": "{{PREVIOUS_OUTPUT}}",
            "model": "gpt-4o-mini",
            "tools": {"web_search": False, "subagents": False},
            "outputVar": "answer",
            "responseFormat": {"type": "json_schema", "schema": SCHEMA},
        },
    }
    use = {
        "id": "use",
        "type": "agent",
        "data": {
            "agentName": "Writer",
            "systemPrompt": "Write.",
            "userPrompt": "City={{answer.city}} days={{answer.days}}",
            "model": "gpt-4o-mini",
            "tools": {"web_search": False, "subagents": False},
        },
    }
    return chain("structured", [start_node(initial="A short trip to France"), plan, use])


def scripted(llm: FakeLLMServer, plan_answers: list[str]) -> None:
    """Answers for the planner in order; the writer's request (no schema) gets 'written'."""
    queue = list(plan_answers)

    def handle(rec):
        if "Write." in rec.system_prompt:
            return answer(rec, "written")
        return answer(rec, queue.pop(0) if queue else "still not json")

    llm.handler = handle


def planner_requests(llm: FakeLLMServer) -> list[Any]:
    return [r for r in chats(llm) if "Write." not in r.system_prompt]


def writer_requests(llm: FakeLLMServer) -> list[Any]:
    return [r for r in chats(llm) if "Write." in r.system_prompt]


def test_structured_valid_answer_is_parsed_and_usable_downstream(tmp_path: Path, llm: FakeLLMServer) -> None:
    home = model_home(tmp_path)
    scripted(llm, ['{"city": "Paris", "days": 3}'])
    res = run_model(home, home.write("s.flow.json", structured_flow()), llm)
    assert res.rc == 0, res.combined
    assert len(planner_requests(llm)) == 1
    body = planner_requests(llm)[0].json or {}
    assert (body.get("response_format") or {}).get("type") == "json_schema", json.dumps(body)[:2000]
    writer = writer_requests(llm)
    assert len(writer) == 1, res.combined
    user = "\n".join(m.get("content") or "" for m in writer[0].json["messages"] if m.get("role") == "user")
    assert "City=Paris days=3" in user, user


def test_structured_output_is_the_parsed_value(tmp_path: Path, llm: FakeLLMServer) -> None:
    home = model_home(tmp_path)
    scripted(llm, ['{"city": "Rome", "days": 2}'])
    res = cli(
        "run",
        str(home.write("s.flow.json", structured_flow())),
        "--provider",
        "openai",
        "--base-url",
        llm.base_url,
        "--json",
        env=home.env,
        cwd=home.root,
        timeout=120,
    )
    assert res.rc == 0, res.combined
    doc = json.loads(res.stdout[res.stdout.find("{") :])
    plan = [r for r in doc["results"] if r["nodeId"] == "plan"]
    assert plan and plan[0]["output"] == {"city": "Rome", "days": 2}, doc
    assert doc["vars"].get("answer") == {"city": "Rome", "days": 2}, doc["vars"]


@pytest.mark.parametrize(
    "bad",
    ["Sure! Paris, for three days.", '{"city": "Paris"}', '{"city": "Paris", "days": "three"}'],
    ids=["not-json", "missing-field", "wrong-type"],
)
def test_structured_invalid_then_valid_retries_once(tmp_path: Path, llm: FakeLLMServer, bad: str) -> None:
    home = model_home(tmp_path)
    scripted(llm, [bad, '{"city": "Oslo", "days": 4}'])
    res = run_model(home, home.write("s.flow.json", structured_flow()), llm)
    assert res.rc == 0, res.combined
    plans = planner_requests(llm)
    assert len(plans) == 2, f"one retry expected, got {len(plans)} planner requests"
    # the retry carries something the first request did not (the error, the bad answer)
    assert json.dumps(plans[1].json["messages"]) != json.dumps(plans[0].json["messages"])
    if bad == '{"city": "Paris"}':  # the error sent back names the missing field
        first = json.dumps(plans[0].json["messages"])
        added = [m for m in plans[1].json["messages"] if m.get("role") != "system" and json.dumps(m) not in first]
        assert "days" in json.dumps(added), added
    user = "\n".join(
        m.get("content") or "" for m in writer_requests(llm)[0].json["messages"] if m.get("role") == "user"
    )
    assert "City=Oslo days=4" in user, user


def test_structured_invalid_twice_fails_the_step(tmp_path: Path, llm: FakeLLMServer) -> None:
    home = model_home(tmp_path)
    scripted(llm, ['{"city": "Paris"}', "no json here"])
    res = run_model(home, home.write("s.flow.json", structured_flow()), llm)
    assert res.rc != 0, res.combined
    assert len(planner_requests(llm)) == 2, f"{len(planner_requests(llm))} planner requests"
    assert not writer_requests(llm), "the next node must not run"
    statuses = [e.get("content") for e in res.of_type("run_status")]
    assert statuses and statuses[-1] == "failed", statuses
    ends = [payload(e) for e in res.of_type("step_end", "plan")]
    assert ends and ends[-1].get("status") == "failed", res.combined


def test_structured_echo_output_feeds_a_path_condition(tmp_path: Path) -> None:
    """Offline: echo builds an answer from the schema; an `if` with `path` reads the field."""
    home = Home(tmp_path)
    doc = structured_flow()
    doc["nodes"] = doc["nodes"][:2]
    doc["connections"] = doc["connections"][:1]
    doc["nodes"] += [
        {
            "id": "check",
            "type": "if",
            "x": 500,
            "y": 0,
            "data": {"conditions": [cond("gt", "5", ".days"), cond("lt", "1", ".days")]},
        },
        marker("big", y=0),
        marker("small", y=100),
        marker("neither", y=200),
    ]
    doc["connections"] += [
        link("plan", "check"),
        link("check", "big", "condition-0"),
        link("check", "small", "condition-1"),
        link("check", "neither", "false"),
    ]
    res = home.run(home.write("s.flow.json", doc))
    assert res.rc == 0, res.combined
    # echo's numbers are 0: the second condition matches
    assert [ran(res, n) for n in ("big", "small", "neither")] == [0, 1, 0], res.combined


# ----------------------------------------------------------------------------- loop over


def loop_flow(
    items: Any,
    body_extra: list[dict[str, Any]] | None = None,
    prompt: str = "item={{item}} #{{iteration}}",
    **loop_data: Any,
) -> dict[str, Any]:
    """Start (variable `rows`) -> loop over {{rows}} -> body -> back; done -> `finish`."""
    nodes = [
        start_node(variables=[{"name": "rows", "value": items, "type": "json", "description": "rows"}], initial="go"),
        {
            "id": "each",
            "type": "loop",
            "x": 250,
            "y": 0,
            "data": {"over": "{{rows}}", "outputVar": "collected", **loop_data},
        },
    ]
    body = {
        "id": "body",
        "type": "agent",
        "x": 500,
        "y": 100,
        "data": {
            "agentName": "Body",
            "systemPrompt": "s",
            "userPrompt": prompt,
            "model": "m",
            "tools": {"web_search": False, "subagents": False},
        },
    }
    links = [link("start", "each")]
    first = "body"
    if body_extra:
        nodes += body_extra
        first = body_extra[0]["id"]
        links += [link("each", first, "body")]
        links += [link(body_extra[-1]["id"], "body", body_extra[-1].get("_out", "output"))]
        for n in body_extra:
            n.pop("_out", None)
    else:
        links.append(link("each", "body", "body"))
    nodes += [body, marker("finish", y=300)]
    links += [link("body", "each"), link("each", "finish", "done")]
    return {"name": "walk", "version": 1, "nodes": nodes, "connections": links}


def finish_list(res: CliResult) -> Any:
    out = res.of_type("node_output", "finish")
    assert out, res.combined[-3000:]
    value = json.loads(out[-1]["content"])  # a join's list of what arrived: [the loop's list]
    return value[0]


def test_loop_over_three_items_collects_each_rounds_result(tmp_path: Path) -> None:
    home = Home(tmp_path)
    res, doc = home.run_json(home.write("w.flow.json", loop_flow(["a", "b", "c"])))
    assert res.rc == 0, res.combined
    assert doc["vars"].get("collected") == ["item=a #1", "item=b #2", "item=c #3"], doc["vars"]
    finish = [r for r in doc["results"] if r["nodeId"] == "finish"]
    assert finish and finish[0]["output"] == [["item=a #1", "item=b #2", "item=c #3"]], doc["results"]


def test_loop_over_is_capped_by_max_iterations_and_ignores_until(tmp_path: Path) -> None:
    home = Home(tmp_path)
    res = home.run(home.write("w.flow.json", loop_flow(["a", "b", "c", "d"], maxIterations=3, until="item=a")))
    assert res.rc == 0, res.combined
    assert ran(res, "body") == 3, res.combined
    assert len(res.of_type("loop_check", "each")) == 3, res.combined
    assert finish_list(res) == ["item=a #1", "item=b #2", "item=c #3"]


def test_loop_over_pause_in_a_round_resumes_in_new_processes(tmp_path: Path) -> None:
    home = Home(tmp_path)
    gate = {"id": "gate", "type": "approval", "x": 400, "y": 200, "data": {"prompt": "ok?"}, "_out": "approve"}
    path = home.write("w.flow.json", loop_flow(["a", "b", "c"], body_extra=[gate]))
    res = home.run(path)
    assert res.rc != 0 or res.of_type("wait_input"), res.combined
    match = re.search(r"\b([0-9a-f]{32})\b", res.stderr)
    assert match and res.of_type("wait_input", "gate"), res.combined
    run_id = match.group(1)
    rounds = [res]
    for _ in range(3):
        step = cli(
            "resume",
            run_id,
            "--decide",
            "approve",
            "--provider",
            "echo",
            "--jsonl",
            env=home.env,
            cwd=home.root,
            timeout=120,
        )
        rounds.append(step)
        if step.of_type("node_output", "finish"):
            break
        assert step.of_type("wait_input", "gate"), step.combined
    last = rounds[-1]
    assert len(rounds) == 4, f"expected a pause per round, got {len(rounds) - 1} resumes"
    assert finish_list(last) == ["item=a #1", "item=b #2", "item=c #3"]
    statuses = [e.get("content") for e in last.of_type("run_status")]
    assert statuses and statuses[-1] == "completed", statuses


def test_loop_over_items_may_be_objects(tmp_path: Path) -> None:
    home = Home(tmp_path)
    rows = [{"name": "Ann", "age": 30}, {"name": "Bob", "age": 41}, {"name": "Cy", "age": 52}]
    res, doc = home.run_json(home.write("w.flow.json", loop_flow(rows, prompt="{{item.name}} is {{item.age}}")))
    assert res.rc == 0, res.combined
    assert doc["vars"].get("collected") == ["Ann is 30", "Bob is 41", "Cy is 52"], doc["vars"]


def test_loop_over_an_empty_list_follows_done_at_once(tmp_path: Path) -> None:
    home = Home(tmp_path)
    res = home.run(home.write("w.flow.json", loop_flow([])))
    assert res.rc == 0, res.combined
    assert ran(res, "body") == 0, res.combined
    assert finish_list(res) == []


# ----------------------------------------------------------------------------- non-text outputs


def test_if_reads_null_as_empty_and_structured_output_as_json(tmp_path: Path) -> None:
    """A skipped step's null output is "" (isEmpty matches, `equal ""` never does); a structured
    output is tested as its JSON text."""
    home = Home(tmp_path)
    broken = {
        "id": "fetcher",
        "type": "http",
        "x": 200,
        "y": 0,
        "data": {"method": "GET", "url": f"http://127.0.0.1:{free_port()}/x", "errorMode": "skip"},
    }
    plan = structured_flow()["nodes"][1]
    checks = {
        "if_null": [cond("equal", ""), cond("contains", "null"), cond("isEmpty")],
        "if_json": [cond("contains", "zzz"), cond("contains", '"days"')],
    }
    nodes = [start_node(initial="Trip"), broken, plan]
    links = [link("start", "fetcher"), link("start", "plan"), link("fetcher", "if_null"), link("plan", "if_json")]
    for node_id, conditions in checks.items():
        nodes.append({"id": node_id, "type": "if", "x": 400, "y": 0, "data": {"conditions": conditions}})
        for handle in handles_of(conditions, None):
            nodes.append(marker(f"m_{node_id}_{handle}"))
            links.append(link(node_id, f"m_{node_id}_{handle}", handle))
    res = home.run(home.write("n.flow.json", {"name": "n", "version": 1, "nodes": nodes, "connections": links}))
    assert res.rc == 0, res.combined
    assert res.of_type("step_skipped", "fetcher"), res.combined
    took = {n: [h for h in handles_of(c, None) if ran(res, f"m_{n}_{h}")] for n, c in checks.items()}
    assert took == {"if_null": ["condition-2"], "if_json": ["condition-1"]}, took


def test_loop_over_reads_json_text_of_a_list(tmp_path: Path) -> None:
    home = Home(tmp_path)
    doc = loop_flow([])
    doc["nodes"][0]["data"]["variables"] = [{"name": "rows", "value": "", "type": "string", "description": "rows"}]
    res, out = home.run_json(home.write("w.flow.json", doc), "--var", 'rows=["x", "y", "z"]')
    assert res.rc == 0, res.combined
    assert out["vars"].get("collected") == ["item=x #1", "item=y #2", "item=z #3"], out["vars"]


def test_condition_values_are_templates(tmp_path: Path) -> None:
    """Templates are resolved in every string of a node's data when it runs: a condition's
    value may name a variable (a text one, and a number one for `gt`)."""
    home = Home(tmp_path)
    variables = [
        {"name": "word", "value": "paris", "type": "string", "description": "w"},
        {"name": "limit", "value": 40, "type": "number", "description": "l"},
    ]
    problems = []
    for name, initial, conditions in [
        ("text", "  Order #42 shipped to Paris  ", [cond("endsWith", "{{word}}"), cond("contains", "order")]),
        ("number", "42", [cond("gt", "{{limit}}"), cond("contains", "4")]),
    ]:
        nodes = [start_node(variables=variables, initial=initial)]
        nodes += [{"id": "check", "type": "if", "x": 300, "y": 0, "data": {"conditions": conditions}}]
        nodes += [marker("first"), marker("second"), marker("neither")]
        links = [link("start", "check"), link("check", "first", "condition-0")]
        links += [link("check", "second", "condition-1"), link("check", "neither", "false")]
        res = home.run(home.write(f"{name}.flow.json", {"name": name, "nodes": nodes, "connections": links}))
        took = [n for n in ("first", "second", "neither") if ran(res, n)]
        if res.rc != 0 or took != ["first"]:
            problems.append(f"{name}: exit {res.rc}, followed {took}: {res.stderr.strip()[-300:]}")
    assert not problems, "\n".join(problems)
