"""``flowdesk eval`` against a request-counting fake OpenAI-compatible server (real sockets):
the judge answering PASS and FAIL, reuse of the last eval's recorded outputs (one request per
case after the last prompt changed), ``--baseline``, JUnit XML and the exit codes."""

from __future__ import annotations

import asyncio
import json
import os
import pty
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from engine import RunStore, parse_workflow
from engine.evals import EvalHistory, parse_case, run_eval
from engine.evals.report import format_table
from tests.fakes.openai_server import FakeLLMServer, Recorded, openai_plain

ROOT = Path(__file__).resolve().parents[2]


def handler(rec: Recorded):
    """Agents get their user message back in brackets; the judge answers PASS unless the output
    it grades holds 'rude'."""
    body = rec.json or {}
    messages = body.get("messages") or [{}]
    system = next((m.get("content", "") for m in messages if m.get("role") == "system"), "")
    user = messages[-1].get("content", "")
    if "grade the output" in system:
        graded = user.split("Output to grade:", 1)[-1]
        if "rude" in graded:
            return openai_plain("FAIL\nThe reply is rude to the customer.", usage=(20, 5))
        return openai_plain("PASS\nPolite and on topic.", usage=(20, 5))
    return openai_plain(f"[{user}]", usage=(4, 2))


def flow(last_prompt: str = "final: {{PREVIOUS_OUTPUT}}") -> dict:
    def agent(node_id: str, prompt: str) -> dict:
        return {
            "id": node_id,
            "type": "agent",
            "data": {"agentName": node_id, "userPrompt": prompt, "model": "fake-model", "tools": {}},
        }

    return {
        "name": "chain",
        "nodes": [
            {"id": "s", "type": "start", "data": {"initialInput": ""}},
            agent("a1", "draft: {{PREVIOUS_OUTPUT}}"),
            agent("a2", last_prompt),
        ],
        "connections": [
            {"source": "s", "target": "a1", "sourceHandle": "output", "targetHandle": "input"},
            {"source": "a1", "target": "a2", "sourceHandle": "output", "targetHandle": "input"},
        ],
    }


CASES = [
    {"name": "hello", "input": "hello", "expect": [{"type": "contains", "value": "hello"}]},
    {"name": "bye", "input": "bye", "expect": [{"type": "contains", "value": "final: "}]},
    {"name": "order", "input": "order 12", "expect": [{"node": "a1", "type": "regex", "value": r"order \d+"}]},
]


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with FakeLLMServer() as srv:
        srv.handler = handler
        yield srv


def cli_env(tmp_path: Path) -> dict[str, str]:
    return {
        "PYTHONPATH": str(ROOT),
        "FLOWDESK_DATA_DIR": str(tmp_path / "data"),
        "FLOWDESK_CONFIG_DIR": str(tmp_path / "config"),
        "OPENAI_API_KEY": "test-key",
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }


def flowdesk(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args],
        capture_output=True,
        text=True,
        env=cli_env(tmp_path),
        cwd=tmp_path,
        timeout=120,
    )


def write_flow(tmp_path: Path, wf: dict, cases: list[dict]) -> Path:
    path = tmp_path / "chain.flow.json"
    path.write_text(json.dumps(wf), encoding="utf-8")
    (tmp_path / "chain.tests.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    return path


def evaluate(store, wf: dict, cases: list[dict], base_url: str, **kw):
    return asyncio.run(
        run_eval(
            parse_workflow(wf),
            [parse_case(c, "t") for c in cases],
            path="/flows/chain.flow.json",
            provider="openai",
            base_url=base_url,
            store=store,
            **kw,
        )
    )


def test_judge_answers_pass_and_fail_with_its_reason_and_tokens_apart(server, tmp_path) -> None:
    store = RunStore(tmp_path / "runs.db")
    cases = [
        {"name": "polite", "input": "thanks", "expect": [{"type": "judge", "rubric": "The reply is polite."}]},
        {"name": "rude", "input": "you are rude", "expect": [{"type": "judge", "rubric": "The reply is polite."}]},
    ]
    result = evaluate(store, flow(), cases, server.base_url)
    polite, rude = result.cases
    assert polite.passed and polite.judges[0]["reason"] == "Polite and on topic."
    assert not rude.passed
    assert rude.failures[0].type == "judge" and rude.failures[0].reason == "The reply is rude to the customer."
    assert polite.judge_tokens == rude.judge_tokens == 25
    assert polite.tokens == 12  # two agent calls of (4, 2): the judge's tokens are not the run's
    judged = [r for r in server.requests if "grade the output" in json.dumps(r.json)]
    assert len(judged) == 2
    assert result.pass_rate == 0.5


def test_a_second_eval_after_editing_the_last_node_makes_one_request_per_case(server, tmp_path) -> None:
    store = RunStore(tmp_path / "runs.db")
    first = evaluate(store, flow(), CASES, server.base_url)
    assert first.all_passed and len(server.requests) == 2 * len(CASES)
    server.requests.clear()
    second = evaluate(store, flow("rewritten: {{PREVIOUS_OUTPUT}}"), CASES, server.base_url)
    assert len(server.requests) == len(CASES)  # exactly one model request per case: the last node's
    assert all(c.cache_hits == 2 for c in second.cases)  # start and a1 reused
    # tokens count reused outputs as they were made; spent tokens only the last node's call
    assert [(c.tokens, c.spent_tokens) for c in second.cases] == [(12, 6)] * len(CASES)
    assert [c.name for c in second.cases if not c.passed] == ["bye"]  # "final: " is gone
    history = EvalHistory(store)
    listed = history.list(workflow_path="/flows/chain.flow.json")
    assert [e.id for e in listed] == [second.eval_id, first.eval_id]
    assert listed[0].passed == 2 and listed[1].passed == 3
    run_ids = {c.run_id for c in second.cases}
    assert all(store.get_run(r) is not None for r in run_ids)  # each case a stored run
    # nothing changed: nothing is asked, and maxTokens still grades the outputs' real tokens
    server.requests.clear()
    capped = [
        dict(c, expect=[{"type": "maxTokens", "value": 10}, {"node": "a1", "type": "maxTokens", "value": 6}])
        for c in CASES
    ]
    third = evaluate(store, flow("rewritten: {{PREVIOUS_OUTPUT}}"), capped, server.base_url)
    assert server.requests == []
    assert [c.spent_tokens for c in third.cases] == [0] * len(CASES)
    assert [[f.to_json() for f in c.failures] for c in third.cases] == [
        [{"type": "maxTokens", "expected": 10, "actual": 12}]
    ] * len(CASES)


def test_cli_baseline_names_the_regression_junit_and_exit_codes(server, tmp_path) -> None:
    path = write_flow(tmp_path, flow(), CASES)
    base = ["--provider", "openai", "--base-url", server.base_url]
    first = flowdesk(tmp_path, "eval", str(path), *base, "--json")
    assert first.returncode == 0, first.stderr
    doc = json.loads(first.stdout)
    assert set(doc) >= {"evalId", "passRate", "cases", "regressed", "improved"}
    assert doc["passRate"] == 1.0
    case = doc["cases"][0]
    assert set(case) >= {"name", "passed", "failures", "durationMs", "tokens", "cost", "runId"}
    path.write_text(json.dumps(flow("rewritten: {{PREVIOUS_OUTPUT}}")), encoding="utf-8")
    server.requests.clear()
    junit = tmp_path / "out.xml"
    second = flowdesk(
        tmp_path, "eval", str(path), *base, "--json", "--baseline", doc["evalId"][:8], "--junit", str(junit)
    )
    assert second.returncode == 1, second.stderr
    assert len(server.requests) == len(CASES)
    doc2 = json.loads(second.stdout)
    assert doc2["regressed"] == ["bye"] and doc2["improved"] == []
    bye = next(c for c in doc2["cases"] if c["name"] == "bye")
    assert bye["failures"][0]["type"] == "contains" and bye["failures"][0]["expected"] == "final: "
    assert bye["failures"][0]["actual"].startswith("[rewritten: ")
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("3", "1")
    failed = [tc.get("name") for tc in suite.iter("testcase") if tc.find("failure") is not None]
    assert failed == ["bye"]
    # The table, without --json: the failed expectation with its actual value, the regression
    table = flowdesk(tmp_path, "eval", str(path), *base, "--baseline", doc["evalId"])
    assert table.returncode == 1
    assert "bye" in table.stdout and "FAIL" in table.stdout and "[rewritten: " in table.stdout
    assert "regressed: bye" in table.stdout and "2/3 passed" in table.stdout


@pytest.mark.parametrize(
    "setup,args,message",
    [
        ("nocases", [], "has no test cases"),
        ("ok", ["--concurrency", "0"], "--concurrency must be at least 1"),
        ("ok", ["--baseline", "nope"], "there is no eval 'nope'"),
        ("badline", [], "line 2"),
        ("ok", ["--cases", "missing.jsonl"], "no such file"),
        ("badnode", [], "names node 'ghost'"),
        ("ok", ["--junit", "/no/such/folder/x.xml"], "does not exist"),
    ],
)
def test_usage_errors_exit_2_with_a_clear_message(tmp_path, setup, args, message) -> None:
    cases = {
        "nocases": [],
        "ok": CASES,
        "badline": CASES[:1],
        "badnode": [{"name": "x", "expect": [{"node": "ghost", "type": "contains", "value": "a"}]}],
    }[setup]
    path = write_flow(tmp_path, flow(), cases)
    if setup == "badline":
        with open(tmp_path / "chain.tests.jsonl", "a", encoding="utf-8") as f:
            f.write("{oops\n")
    done = flowdesk(tmp_path, "eval", str(path), "--provider", "echo", *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert message in done.stderr
    assert "Traceback" not in done.stderr


def test_a_file_that_is_not_a_workflow_exits_2(tmp_path) -> None:
    bad = tmp_path / "x.flow.json"
    bad.write_text("{not json", encoding="utf-8")
    done = flowdesk(tmp_path, "eval", str(bad), "--provider", "echo")
    assert done.returncode == 2 and "Traceback" not in done.stderr


def test_echo_sample_passes_four_of_five_offline(tmp_path) -> None:
    done = flowdesk(tmp_path, "eval", str(ROOT / "samples" / "evals.flow.json"), "--provider", "echo", "--json")
    assert done.returncode == 1, done.stderr
    doc = json.loads(done.stdout)
    assert doc["passRate"] == 0.8
    assert [c["name"] for c in doc["cases"] if not c["passed"]] == ["apology"]


def test_a_model_with_no_price_shows_no_cost_rather_than_dollar_zero(server, tmp_path) -> None:
    """``fake-model`` has no price: the table shows no cost ("—", as the history does) and the
    JSON names the model, on the first eval and on one that reuses the recorded outputs."""
    store = RunStore(tmp_path / "runs.db")
    capped = [{"name": "cheap", "input": "hi", "expect": [{"type": "maxCost", "value": 0.5}]}]
    for _ in range(2):
        result = evaluate(store, flow(), capped, server.base_url)
        (case,) = result.cases
        assert case.passed and case.unpriced == ["fake-model"]  # counted 0, as docs/evals.md says
        assert result.to_json()["cases"][0]["unpriced"] == ["fake-model"]
    assert case.cache_hits == 3  # the second eval asked nothing: the unknown price was kept
    table = format_table(result)
    assert "—" in table and "no price known for fake-model" in table


def test_the_progress_bar_is_drawn_on_a_terminal_and_cleared(tmp_path) -> None:
    """On a terminal (a real pty as stderr) the bar counts the cases, then is blanked before the table."""
    primary, secondary = pty.openpty()
    try:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "engine.cli",
                "eval",
                str(ROOT / "samples" / "evals.flow.json"),
                "--provider",
                "echo",
            ],
            stdout=subprocess.PIPE,
            stderr=secondary,
            text=True,
            env=cli_env(tmp_path),
            cwd=tmp_path,
            timeout=120,
        )
        os.close(secondary)
        secondary = -1
        drawn = b""
        while True:
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # the pty's other end is closed: all was read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(primary)
        if secondary != -1:
            os.close(secondary)
    text = drawn.decode()
    assert done.returncode == 1
    assert "0/5 cases" in text and "5/5 cases  1 failed" in text
    last = text.rsplit("\r", 2)
    assert last[-1] == "" and last[-2].strip() == ""  # the bar's line blanked
    assert "cases" not in done.stdout and "4/5 passed" in done.stdout  # the table alone on stdout


def test_a_dataset_with_no_expectations_says_so(tmp_path) -> None:
    """A CSV of inputs given no --expect grades nothing but the runs completing: the user is told."""
    path = write_flow(tmp_path, flow(), [])
    (tmp_path / "rows.csv").write_text("name,input\nfirst,hello\n", encoding="utf-8")
    done = flowdesk(tmp_path, "eval", str(path), "--provider", "echo", "--cases", "rows.csv")
    assert done.returncode == 0, done.stderr
    assert "no case has an expectation" in done.stderr and "--expect" in done.stderr
    given = flowdesk(
        tmp_path, "eval", str(path), "--provider", "echo", "--cases", "rows.csv", "--expect", "contains:hello"
    )
    assert given.returncode == 0 and "no case has an expectation" not in given.stderr
