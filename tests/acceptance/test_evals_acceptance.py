"""Acceptance tests for "Evaluations" (DESIGN.md), written from its names only.

`flowdesk eval` is run as a real subprocess; the fake OpenAI-compatible server plays the two
agents of the workflow under test and the judge, and counts what was asked of it.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.conftest import agent_node, answer, chats, link, model_args, start, user_text, write
from tests.fakes.openai_server import FakeLLMServer, Recorded, Reply

DRAFT, POLISH = "You draft.", "You polish."
JSON_ANSWER = '{"name": "Ada", "n": 2}'


def system_of(rec: Recorded) -> str:
    return rec.system_prompt


def model(rec: Recorded) -> Reply:
    """draft: "draft of INPUT"; polish: "Polished: TEXT" (JSON when asked, "ok" when terse);
    anything else is the judge: PASS for a rubric saying GOOD, FAIL for BAD."""
    system, text = system_of(rec), user_text(rec)
    if system.startswith(DRAFT):
        body = text.removeprefix("Draft: ")
        return answer(rec, f"draft of {body}", delay=0.5 if "SLOW" in body else 0.0)
    if system.startswith(POLISH):
        if "Be terse." in system:
            return answer(rec, "ok")
        if "JSON" in text:
            return answer(rec, JSON_ANSWER)
        return answer(rec, f"Polished: {text}")
    everything = json.dumps(rec.json)
    if "GOOD" in everything:
        return answer(rec, "PASS the reply fits the rubric")
    if "BAD" in everything:
        return answer(rec, "FAIL the reply does not fit the rubric")
    return answer(rec, "neither")


def workflow(tests: list[dict[str, Any]] | None = None, polish: str = POLISH) -> dict[str, Any]:
    flow: dict[str, Any] = {
        "name": "Support",
        "nodes": [
            start(initial="default input"),
            agent_node("draft", DRAFT, "Draft: {{PREVIOUS_OUTPUT}}"),
            {**agent_node("polish", polish, "{{PREVIOUS_OUTPUT}}"), "x": 750},
        ],
        "connections": [link("start", "draft"), link("draft", "polish")],
    }
    if tests is not None:
        flow["tests"] = tests
    return flow


def case(name: str, input: str, *expect: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "input": input, "expect": list(expect)}


def e(type_: str, value: Any = None, **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": type_, **more}
    if value is not None:
        out["value"] = value
    return out


@pytest.fixture
def llm(server: FakeLLMServer) -> FakeLLMServer:
    server.handler = model
    return server


def evaluate(fd: Any, server: FakeLLMServer, path: Path, *extra: str, code: int | None = None) -> dict[str, Any]:
    done = fd("eval", str(path), "--json", *model_args(server), "--model", "gpt-4o-mini", *extra)
    if code is not None:
        assert done.code == code, done
    result = json.loads(done.out)
    result["_exit"] = done.code
    return result


def by_name(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["name"]: c for c in result["cases"]}


# (case name, input, expectation, passes?)
EXPECTATIONS: list[tuple[str, str, dict[str, Any], bool]] = [
    ("contains-pass", "hi", e("contains", "Polished"), True),
    ("contains-fail", "hi", e("contains", "Nope"), False),
    ("notContains-pass", "hi", e("notContains", "Nope"), True),
    ("notContains-fail", "hi", e("notContains", "Polished"), False),
    ("equals-pass", "hi", e("equals", "Polished: draft of hi"), True),
    ("equals-fail", "hi", e("equals", "something else"), False),
    ("regex-pass", "hi", e("regex", r"^Polished: draft of \w+$"), True),
    ("regex-fail", "hi", e("regex", r"^draft"), False),
    ("node-pass", "hi", e("equals", "draft of hi", node="draft"), True),
    ("node-fail", "hi", e("contains", "Polished", node="draft"), False),
    (
        "jsonSchema-pass",
        "JSON please",
        e("jsonSchema", {"type": "object", "required": ["name"], "properties": {"n": {"type": "number"}}}),
        True,
    ),
    ("jsonSchema-fail", "JSON please", e("jsonSchema", {"type": "object", "required": ["missing"]}), False),
    ("jsonSchema-not-json", "hi", e("jsonSchema", {"type": "object"}), False),
    ("maxLatencyMs-pass", "hi", e("maxLatencyMs", 60000), True),
    ("maxLatencyMs-fail", "SLOW hi", e("maxLatencyMs", 300), False),
    ("maxTokens-pass", "hi", e("maxTokens", 36), True),  # two requests of 11 + 7 tokens
    ("maxTokens-fail", "hi", e("maxTokens", 35), False),
    ("maxTokens-node-pass", "hi", e("maxTokens", 18, node="polish"), True),
    ("maxTokens-node-fail", "hi", e("maxTokens", 17, node="polish"), False),
    ("maxCost-pass", "hi", e("maxCost", 10.0), True),
    ("maxCost-fail", "hi", e("maxCost", 0), False),
    ("judge-pass", "hi", e("judge", rubric="GOOD: a polished reply"), True),
    ("judge-fail", "hi", e("judge", rubric="BAD: a reply in French"), False),
]


def test_every_expectation_type_passes_and_fails(fd, llm, home):
    path = write(home / "work" / "support.flow.json", workflow([case(n, i, x) for n, i, x, _ in EXPECTATIONS]))
    result = evaluate(fd, llm, path, code=1)
    assert set(result) >= {"evalId", "passRate", "cases", "regressed", "improved"}
    cases = by_name(result)
    assert set(cases) == {n for n, *_ in EXPECTATIONS}
    for name, _, expect, passes in EXPECTATIONS:
        got = cases[name]
        assert set(got) >= {"name", "passed", "failures", "durationMs", "tokens", "cost", "runId"}, name
        assert got["passed"] is passes, (name, got)
        if passes:
            assert got["failures"] == [], (name, got)
        else:
            assert len(got["failures"]) == 1, (name, got)
            failure = got["failures"][0]
            assert set(failure) >= {"type", "expected", "actual"}, (name, failure)
            assert failure["type"] == expect["type"], (name, failure)
    passed = sum(1 for *_, p in EXPECTATIONS if p)
    assert result["passRate"] == pytest.approx(passed / len(EXPECTATIONS), abs=1e-3)
    # Failures carry what was expected and what came.
    assert cases["contains-fail"]["failures"][0]["expected"] == "Nope"
    assert cases["contains-fail"]["failures"][0]["actual"] == "Polished: draft of hi"
    assert cases["maxTokens-fail"]["failures"][0]["actual"] == 36
    assert cases["contains-pass"]["tokens"] == 36
    assert cases["maxCost-fail"]["cost"] > 0
    assert cases["maxLatencyMs-fail"]["durationMs"] >= 300
    assert result["regressed"] == [] and result["improved"] == []
    # Each case is a stored run.
    runs = fd("runs", "--json", "--limit", "100").out
    assert all(c["runId"] in runs for c in result["cases"])


def test_judge_uses_the_evals_model_unless_the_expectation_names_one(fd, llm, home):
    tests = [
        case("default-model", "hi", e("judge", rubric="GOOD: polished")),
        case("own-model", "hi", e("judge", rubric="GOOD: also polished", model="judge-model")),
    ]
    path = write(home / "work" / "support.flow.json", workflow(tests))
    result = evaluate(fd, llm, path, code=0)
    assert result["passRate"] == 1
    judged = [r for r in chats(llm) if not system_of(r).startswith((DRAFT, POLISH))]
    models = sorted((r.json or {}).get("model") for r in judged)
    assert models == ["gpt-4o-mini", "judge-model"]


def test_tests_jsonl_beside_the_workflow(fd, llm, home):
    path = write(home / "work" / "support.flow.json", workflow())
    lines = [case("one", "a", e("contains", "draft of a")), case("two", "b", e("contains", "draft of b"))]
    (home / "work" / "support.tests.jsonl").write_text("\n".join(json.dumps(c) for c in lines) + "\n")
    result = evaluate(fd, llm, path, code=0)
    assert sorted(by_name(result)) == ["one", "two"]
    assert result["passRate"] == 1


def test_exit_codes(fd, llm, home):
    ok = write(home / "work" / "ok.flow.json", workflow([case("fine", "hi", e("contains", "Polished"))]))
    assert fd("eval", str(ok), *model_args(llm)).code == 0
    bad = write(home / "work" / "bad.flow.json", workflow([case("wrong", "hi", e("contains", "Nope"))]))
    done = fd("eval", str(bad), *model_args(llm))
    assert done.code == 1, done
    assert "wrong" in done.out and "Nope" in done.out, "the table names the case and the failed expectation"
    # Usage errors: no such file, no cases, an unknown expectation type, an unreadable --cases.
    assert fd("eval", str(home / "work" / "missing.flow.json"), *model_args(llm)).code == 2
    none = write(home / "work" / "none.flow.json", workflow())
    done = fd("eval", str(none), *model_args(llm))
    assert done.code == 2, done
    odd = write(home / "work" / "odd.flow.json", workflow([case("odd", "hi", e("sounds-like", "x"))]))
    done = fd("eval", str(odd), *model_args(llm))
    assert done.code == 2, done
    assert "sounds-like" in done.out + done.err
    done = fd("eval", str(ok), "--cases", str(home / "work" / "nope.jsonl"), *model_args(llm))
    assert done.code == 2, done
    for d in (done,):
        assert "Traceback" not in d.err


def test_second_eval_after_editing_the_last_node_reruns_only_it(fd, llm, home):
    tests = [case(f"c{i}", f"question {i}", e("contains", "Polished")) for i in range(3)]
    path = write(home / "work" / "support.flow.json", workflow(tests))
    first = evaluate(fd, llm, path, code=0)
    assert len(chats(llm)) == 6, "two model requests per case"
    write(path, workflow(tests, polish=POLISH + " Kindly."))
    before = len(chats(llm))
    second = evaluate(fd, llm, path, code=0)
    new = chats(llm)[before:]
    assert len(new) == 3, "exactly one model request per case"
    assert all(system_of(r).startswith(POLISH) for r in new), "only the edited last node asked"
    assert sorted(user_text(r) for r in new) == [f"draft of question {i}" for i in range(3)]
    assert second["evalId"] != first["evalId"]
    # Unchanged: a third eval asks nothing at all.
    before = len(chats(llm))
    evaluate(fd, llm, path, code=0)
    assert len(chats(llm)) == before


def test_baseline_names_regressed_and_improved(fd, llm, home):
    tests = [
        case("keeps-polish", "hi", e("contains", "Polished")),
        case("wants-short", "hi", e("notContains", "Polished")),
        case("stable", "hi", e("contains", "draft of hi", node="draft")),
    ]
    path = write(home / "work" / "support.flow.json", workflow(tests))
    first = evaluate(fd, llm, path, code=1)
    assert by_name(first)["wants-short"]["passed"] is False
    write(path, workflow(tests, polish=POLISH + " Be terse."))
    second = evaluate(fd, llm, path, "--baseline", first["evalId"], code=1)
    assert second["regressed"] == ["keeps-polish"]
    assert second["improved"] == ["wants-short"]
    # The table says it too.
    done = fd("eval", str(path), *model_args(llm), "--baseline", first["evalId"])
    assert done.code == 1
    assert "keeps-polish" in done.out


def test_junit_xml_counts(fd, llm, home):
    tests = [
        case("a", "hi", e("contains", "Polished")),
        case("b", "hi", e("contains", "Nope")),
        case("c", "hi", e("equals", "wrong")),
        case("d", "hi", e("regex", "draft")),
    ]
    path = write(home / "work" / "support.flow.json", workflow(tests))
    out = home / "work" / "report.xml"
    done = fd("eval", str(path), *model_args(llm), "--junit", str(out))
    assert done.code == 1, done
    root = ET.parse(out).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    assert len(suites) == 1
    suite = suites[0]
    assert int(suite.get("tests")) == 4
    assert int(suite.get("failures")) == 2
    cases = suite.findall("testcase")
    assert sorted(c.get("name") for c in cases) == ["a", "b", "c", "d"]
    failed = sorted(c.get("name") for c in cases if c.find("failure") is not None)
    assert failed == ["b", "c"]


def test_case_vars_and_input(fd, llm, home):
    flow = workflow()
    flow["nodes"][0]["data"]["variables"] = [{"name": "tone", "type": "string", "value": "plain"}]
    flow["nodes"][1]["data"]["userPrompt"] = "Draft: {{PREVIOUS_OUTPUT}} in a {{tone}} tone"
    flow["tests"] = [
        {"name": "formal", "input": "hi", "vars": {"tone": "formal"}, "expect": [e("contains", "formal tone")]},
        {"name": "default", "input": "hi", "expect": [e("contains", "plain tone")]},
    ]
    path = write(home / "work" / "support.flow.json", flow)
    result = evaluate(fd, llm, path, code=0)
    assert result["passRate"] == 1


# ----------------------------------------------------------------------------- deeper probes
def test_judge_failure_keeps_its_reason_and_an_odd_answer_fails(fd, llm, home):
    tests = [
        case("judged-bad", "hi", e("judge", rubric="BAD: French only")),
        case("judged-odd", "hi", e("judge", rubric="an unclear rubric")),
    ]
    path = write(home / "work" / "support.flow.json", workflow(tests))
    result = evaluate(fd, llm, path, code=1)
    cases = by_name(result)
    bad = cases["judged-bad"]["failures"][0]
    assert bad["type"] == "judge"
    assert "does not fit" in json.dumps(bad), "the judge's one-line reason is kept"
    odd = cases["judged-odd"]
    assert odd["passed"] is False and "neither" in json.dumps(odd["failures"])


def test_a_failing_run_fails_its_case(fd, llm, home):
    flow = workflow([case("boom", "hi", e("contains", "x"))])
    flow["nodes"][2]["data"]["model"] = "gpt-4o-mini"
    flow["nodes"].append(
        {"id": "crash", "type": "code", "x": 900, "y": 0, "data": {"language": "python", "code": "1 / 0", "inputs": {}}}
    )
    flow["connections"].append(link("polish", "crash"))
    path = write(home / "work" / "support.flow.json", flow)
    result = evaluate(fd, llm, path, code=1)
    got = by_name(result)["boom"]
    assert got["passed"] is False and got["failures"], got


def test_equals_with_a_json_value(fd, llm, home):
    tests = [
        case("json-equal", "JSON please", e("equals", {"name": "Ada", "n": 2})),
        case("json-differs", "JSON please", e("equals", {"name": "Ada", "n": 3})),
    ]
    path = write(home / "work" / "support.flow.json", workflow(tests))
    cases = by_name(evaluate(fd, llm, path, code=1))
    assert cases["json-equal"]["passed"] is True
    assert cases["json-differs"]["passed"] is False


def test_tests_list_and_jsonl_both_read(fd, llm, home):
    path = write(home / "work" / "support.flow.json", workflow([case("listed", "a", e("contains", "draft of a"))]))
    (home / "work" / "support.tests.jsonl").write_text(
        "# a comment\n\n" + json.dumps(case("from-file", "b", e("contains", "draft of b"))) + "\n"
    )
    result = evaluate(fd, llm, path, code=0)
    assert sorted(by_name(result)) == ["from-file", "listed"]


def test_bad_jsonl_line_is_named(fd, llm, home):
    path = write(home / "work" / "support.flow.json", workflow())
    (home / "work" / "support.tests.jsonl").write_text(
        json.dumps(case("ok", "a", e("contains", "a"))) + "\n{not json\n"
    )
    done = fd("eval", str(path), *model_args(llm))
    assert done.code == 2, done
    assert "2" in done.err + done.out and "Traceback" not in done.err


def test_csv_cases_with_expect(fd, llm, home):
    path = write(home / "work" / "support.flow.json", workflow())
    data = home / "work" / "inputs.csv"
    data.write_text("name,input\nfirst,alpha\nsecond,beta\n")
    done = fd("eval", str(path), "--cases", str(data), "--expect", "contains:Polished", "--json", *model_args(llm))
    assert done.code == 0, done
    result = json.loads(done.out)
    assert sorted(by_name(result)) == ["first", "second"]


def test_reused_nodes_are_graded_as_they_were_made(fd, llm, home):
    tests = [case("budget", "hi", e("maxTokens", 36)), case("tight", "hi", e("maxTokens", 35))]
    path = write(home / "work" / "support.flow.json", workflow(tests))
    evaluate(fd, llm, path, code=1)
    write(path, workflow(tests, polish=POLISH + " Kindly."))
    second = by_name(evaluate(fd, llm, path, code=1))
    assert second["budget"]["passed"] is True and second["tight"]["passed"] is False
    assert second["budget"]["tokens"] == 36


def test_a_changed_case_input_runs_both_nodes(fd, llm, home):
    tests = [case("c", "one", e("contains", "Polished"))]
    path = write(home / "work" / "support.flow.json", workflow(tests))
    evaluate(fd, llm, path, code=0)
    write(path, workflow([case("c", "two", e("contains", "Polished"))]))
    before = len(chats(llm))
    evaluate(fd, llm, path, code=0)
    assert len(chats(llm)) - before == 2


def test_baseline_by_prefix_and_unknown_baseline(fd, llm, home):
    path = write(home / "work" / "support.flow.json", workflow([case("c", "hi", e("contains", "Polished"))]))
    first = evaluate(fd, llm, path, code=0)
    again = evaluate(fd, llm, path, "--baseline", first["evalId"][:8], code=0)
    assert again["regressed"] == [] and again["improved"] == []
    done = fd("eval", str(path), "--baseline", "zzzz-no-such-eval", *model_args(llm))
    assert done.code == 2, done


def test_concurrency_one(fd, llm, home):
    tests = [case(f"c{i}", f"q{i}", e("contains", "Polished")) for i in range(3)]
    path = write(home / "work" / "support.flow.json", workflow(tests))
    done = fd("eval", str(path), "--concurrency", "1", "--json", *model_args(llm))
    assert done.code == 0, done
    times = sorted((r.started, r.ended or r.started) for r in chats(llm))
    assert all(a[1] <= b[0] + 0.05 for a, b in zip(times, times[1:])), "one request at a time"
    done = fd("eval", str(path), "--concurrency", "0", *model_args(llm))
    assert done.code == 2, done


def test_duplicate_case_names_are_refused(fd, llm, home):
    tests = [case("same", "a", e("contains", "a")), case("same", "b", e("contains", "b"))]
    path = write(home / "work" / "support.flow.json", workflow(tests))
    done = fd("eval", str(path), *model_args(llm))
    assert done.code == 2, done
    assert "same" in done.out + done.err


def test_judge_tokens_are_apart_from_the_runs(fd, llm, home):
    tests = [case("both", "hi", e("judge", rubric="GOOD: polished"), e("maxTokens", 36))]
    path = write(home / "work" / "support.flow.json", workflow(tests))
    got = by_name(evaluate(fd, llm, path, code=0))["both"]
    assert got["passed"] is True
    assert got["tokens"] == 36, "the judge's tokens are not the run's"


def test_a_workflow_that_does_not_validate_fails_the_eval(fd, llm, home):
    flow = workflow([case("c", "hi", e("contains", "x"))])
    flow["connections"].append(
        {"source": "draft", "target": "ghost", "sourceHandle": "output", "targetHandle": "input"}
    )
    path = write(home / "work" / "support.flow.json", flow)
    done = fd("eval", str(path), *model_args(llm))
    assert done.code == 1, done
    assert chats(llm) == []


def test_a_case_var_breaking_a_rule_is_refused(fd, llm, home):
    flow = workflow([{"name": "bad-var", "input": "hi", "vars": {"tone": "shouty"}, "expect": [e("contains", "x")]}])
    flow["nodes"][0]["data"]["variables"] = [
        {"name": "tone", "type": "string", "value": "plain", "enum": ["plain", "formal"]}
    ]
    path = write(home / "work" / "support.flow.json", flow)
    done = fd("eval", str(path), "--json", *model_args(llm))
    assert done.code in (1, 2), done
    assert chats(llm) == [], "refused before anything runs"
    assert "tone" in done.out + done.err


def test_junit_all_passing(fd, llm, home):
    path = write(home / "work" / "support.flow.json", workflow([case("a", "hi", e("contains", "Polished"))]))
    out = home / "work" / "ok.xml"
    assert fd("eval", str(path), *model_args(llm), "--junit", str(out)).code == 0
    suite = ET.parse(out).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    assert int(suite.get("tests")) == 1 and int(suite.get("failures")) == 0


def test_contains_is_case_sensitive_and_regex_takes_flags(fd, llm, home):
    tests = [
        case("lower", "hi", e("contains", "polished")),
        case("flagged", "hi", e("regex", "(?i)^polished")),
    ]
    path = write(home / "work" / "support.flow.json", workflow(tests))
    cases = by_name(evaluate(fd, llm, path, code=1))
    assert cases["lower"]["passed"] is False and cases["flagged"]["passed"] is True


def test_a_new_case_is_neither_regressed_nor_improved(fd, llm, home):
    path = write(home / "work" / "support.flow.json", workflow([case("old", "hi", e("contains", "Polished"))]))
    first = evaluate(fd, llm, path, code=0)
    write(path, workflow([case("old", "hi", e("contains", "Polished")), case("new", "hi", e("contains", "Nope"))]))
    second = evaluate(fd, llm, path, "--baseline", first["evalId"], code=1)
    assert second["regressed"] == [] and second["improved"] == []


def test_reused_slow_node_still_counts_its_latency(fd, llm, home):
    tests = [case("slow", "SLOW hi", e("maxLatencyMs", 300))]
    path = write(home / "work" / "support.flow.json", workflow(tests))
    assert by_name(evaluate(fd, llm, path, code=1))["slow"]["passed"] is False
    write(path, workflow(tests, polish=POLISH + " Kindly."))
    before = len(chats(llm))
    again = by_name(evaluate(fd, llm, path, code=1))["slow"]
    assert len(chats(llm)) - before == 1
    assert again["passed"] is False and again["durationMs"] >= 300


def test_cases_run_concurrently_by_default(fd, llm, home):
    tests = [case(f"c{i}", f"SLOW {i}", e("contains", "Polished")) for i in range(4)]
    path = write(home / "work" / "support.flow.json", workflow(tests))
    done = fd("eval", str(path), "--json", "--junit", str(home / "work" / "r.xml"), *model_args(llm))
    assert done.code == 0, done
    drafts = [r for r in chats(llm) if system_of(r).startswith(DRAFT)]
    assert len(drafts) == 4
    first_end = min(r.ended or r.started for r in drafts)
    assert sum(1 for r in drafts if r.started < first_end) >= 2, "several cases at once"
    assert (home / "work" / "r.xml").exists() and json.loads(done.out)["passRate"] == 1


def test_csv_variables_and_tests_expect(fd, llm, home):
    flow = workflow()
    flow["nodes"][0]["data"]["variables"] = [{"name": "tone", "type": "string", "value": "plain"}]
    flow["nodes"][1]["data"]["userPrompt"] = "Draft: {{PREVIOUS_OUTPUT}} in a {{tone}} tone"
    flow["testsExpect"] = [{"type": "contains", "value": "tone"}]
    path = write(home / "work" / "support.flow.json", flow)
    data = home / "work" / "rows.csv"
    data.write_text("name,input,tone\nr1,hello,formal\nr2,bye,warm\n")
    done = fd("eval", str(path), "--cases", str(data), "--expect", "contains:formal", "--json", *model_args(llm))
    result = json.loads(done.out)
    cases = by_name(result)
    assert cases["r1"]["passed"] is True
    assert cases["r2"]["passed"] is False, "--expect applies to every row"
    assert done.code == 1
