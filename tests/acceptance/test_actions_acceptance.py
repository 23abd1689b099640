"""Acceptance: the `http` and `fetch` kinds as a user meets them (issue 30, items 1 and 7, and
DESIGN.md's permissions), driven through `flowdesk run` against a real server on 127.0.0.1.

A JSON body written as text with templates must stay JSON: a whole-string reference keeps its
value's type, a reference inside a longer string is JSON-escaped (quotes, newlines). Steps
reach only what `permissions.network` grants, every redirect hop included. A server that never
finishes is cut off by `timeoutMs`, or by the default whole-request deadline of the settings.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import pytest

from tests.acceptance.support import CliResult, Home, chain, payload, start_node, var
from tests.acceptance.web_server import RecordingServer

ANSWER = 'He said "hi"\nthen left\t(tab) \\ done'


@pytest.fixture(scope="module")
def site() -> Iterator[RecordingServer]:
    with RecordingServer() as server:
        yield server


def http(node_id: str, url: str, *, method: str = "POST", body: Any = None, **data: Any) -> dict[str, Any]:
    node_data: dict[str, Any] = {"method": method, "url": url, **data}
    if body is not None:
        node_data.update(bodyType="json", body=body)
    return {"id": node_id, "type": "http", "data": node_data}


def fetch(node_id: str, url: str, **data: Any) -> dict[str, Any]:
    return {"id": node_id, "type": "fetch", "data": {"url": url, **data}}


def fan_out(name: str, nodes: list[dict[str, Any]], **top: Any) -> dict[str, Any]:
    """Start, then every node on its own branch (one failing does not stop the others)."""
    doc = chain(name, [start_node([var("unused")]), *nodes], **top)
    doc["connections"] = [
        {"source": "start", "target": n["id"], "sourceHandle": "output", "targetHandle": "input"} for n in nodes
    ]
    return doc


def step_errors(res: CliResult, node: str) -> str:
    """What the run said about a node that failed or was skipped."""
    return "\n".join(
        json.dumps(payload(e)) + " " + json.dumps(e.get("content"))
        for e in res.events
        if e.get("nodeId") == node and e.get("type") in ("step_skipped", "error", "step_end", "permission_denied")
    )


# --------------------------------------------------------------------------- JSON bodies
@pytest.fixture(scope="module")
def body_run(site: RecordingServer, tmp_path_factory: pytest.TempPathFactory) -> tuple[Home, CliResult]:
    """One run posting every kind of templated JSON body to the server."""
    home = Home(tmp_path_factory.mktemp("bodies"))
    base = site.base
    doc = chain(
        "Bodies",
        [
            start_node(
                [
                    var("tags", ["x"], "json"),
                    var("answer", "", "string"),
                    var("count", 0, "number"),
                    var("flag", True, "boolean"),
                    var("raw", "[1, 2]", "string"),
                    var("empty", None, "json"),
                ]
            ),
            http("listbody", f"{base}/echo/list", body='{"tags": "{{tags}}", "n": 2}'),
            http("quoted", f"{base}/echo/quoted", body='{"text": "{{answer}}", "wrapped": "said: {{answer}}"}'),
            http("objbody", f"{base}/echo/object", body={"tags": "{{tags}}", "count": "{{count}}", "t": "{{answer}}"}),
            {
                "id": "writer",
                "type": "agent",
                "data": {
                    "agentName": "Writer",
                    "userPrompt": 'Line one "quoted"\nline two {{answer}}',
                    "model": "gpt-4o-mini",
                    "tools": {"web_search": False, "subagents": False},
                },
            },
            http("modelbody", f"{base}/echo/model", body='{"summary": "{{PREVIOUS_OUTPUT}}", "n": "{{count}}"}'),
            {
                "id": "formbody",
                "type": "http",
                "data": {
                    "method": "POST",
                    "url": f"{base}/echo/form",
                    "bodyType": "form",
                    "formData": [{"key": "said", "value": "{{answer}}"}, {"key": "n", "value": "{{count}}"}],
                    "query": [{"key": "q", "value": "a b&c"}],
                },
            },
            http("unchecked", f"{base}/status500", method="GET", failOnStatus=False, outputVar="unchecked"),
            http("bare", f"{base}/echo/bare", body='{"n": {{count}}, "tags": {{tags}}, "flag": {{flag}}}'),
            http(
                "stringy", f"{base}/echo/stringy", body='{"raw": "{{raw}}", "missing": "{{nope}}", "none": "{{empty}}"}'
            ),
        ],
    )
    path = home.write("bodies.flow.json", doc)
    res = home.run(
        path, "--var", 'tags=["red", "green", "a \\"quoted\\" tag"]', "--var", f"answer={ANSWER}", "--var", "count=3"
    )
    return home, res


def test_json_text_body_whole_reference_to_a_list_stays_a_list(body_run, site):
    _home, res = body_run
    assert res.rc == 0, res.combined
    (seen,) = site.at("/echo/list")
    assert seen.json() == {"tags": ["red", "green", 'a "quoted" tag'], "n": 2}
    assert "application/json" in seen.headers.get("Content-Type", "")


def test_json_text_body_value_with_quotes_and_newlines_is_escaped(body_run, site):
    _home, res = body_run
    assert res.rc == 0, res.combined
    (seen,) = site.at("/echo/quoted")
    assert seen.json() == {"text": ANSWER, "wrapped": "said: " + ANSWER}


def test_json_object_body_references_keep_their_types(body_run, site):
    (seen,) = site.at("/echo/object")
    assert seen.json() == {"tags": ["red", "green", 'a "quoted" tag'], "count": 3, "t": ANSWER}


def test_json_text_body_carrying_a_model_answer_with_quotes_and_newlines_is_valid(body_run, site):
    _home, res = body_run
    assert res.rc == 0, res.combined
    assert res.of_type("llm_response", "writer"), res.combined
    (seen,) = site.at("/echo/model")
    body = seen.json()
    assert body["n"] == 3
    assert '"quoted"' in body["summary"] and "\n" in body["summary"], body


def test_json_text_body_bare_references_insert_numbers_lists_and_booleans(body_run, site):
    (seen,) = site.at("/echo/bare")
    assert seen.json() == {"n": 3, "tags": ["red", "green", 'a "quoted" tag'], "flag": True}


def test_json_text_body_whole_reference_to_a_string_stays_a_string_and_unknown_stays_as_written(body_run, site):
    (seen,) = site.at("/echo/stringy")
    assert seen.json() == {"raw": "[1, 2]", "missing": "{{nope}}", "none": None}


def test_form_body_and_query_rows_are_encoded(body_run, site):
    (seen,) = site.at("/echo/form")
    assert parse_qs(seen.body.decode()) == {"said": [ANSWER], "n": ["3"]}, seen.body
    assert parse_qs(seen.query) == {"q": ["a b&c"]}, seen.query


def test_fail_on_status_off_gives_status_reason_and_body(body_run):
    _home, res = body_run
    outputs = [e for e in res.events if e.get("nodeId") == "unchecked" and e.get("type") == "node_output"]
    assert outputs, [e.get("type") for e in res.events if e.get("nodeId") == "unchecked"]
    out = payload(outputs[-1]) or json.loads(outputs[-1]["content"])
    assert out.get("status") == 500 and out.get("body") == "broken today" and out.get("reason"), out


# --------------------------------------------------------------------------- permissions
@pytest.fixture(scope="module")
def permission_run(site: RecordingServer, tmp_path_factory: pytest.TempPathFactory) -> CliResult:
    home = Home(tmp_path_factory.mktemp("perms"))
    base = site.base
    other = f"http://localhost:{site.port}"
    doc = fan_out(
        "Bounded",
        [
            http("granted", f"{base}/echo/granted", method="GET", errorMode="skip"),
            http("elsewhere", "http://api.example.invalid/echo/never", method="GET", errorMode="skip"),
            http("hop", f"{base}/hop?to={other}/echo/after-hop", method="GET", errorMode="skip"),
            fetch("page", f"{other}/page", errorMode="skip"),
        ],
        permissions={"network": [f"127.0.0.1:{site.port}"]},
    )
    return home.run(home.write("bounded.flow.json", doc))


def test_http_step_inside_permissions_network_reaches_its_host(permission_run, site):
    assert permission_run.rc == 0, permission_run.combined
    assert site.at("/echo/granted")
    assert [e for e in permission_run.of_type("step_end", "granted") if payload(e).get("status") == "done"]


def test_http_step_outside_permissions_network_fails_permission_denied(permission_run):
    said = step_errors(permission_run, "elsewhere")
    assert "permission_denied" in said and "api.example.invalid" in said, permission_run.combined
    denied = [payload(e) for e in permission_run.of_type("permission_denied", "elsewhere")]
    assert denied and denied[0].get("field") in ("network", "permissions.network"), denied


def test_redirect_hop_to_a_host_not_granted_is_refused_before_it_is_sent(permission_run, site):
    said = step_errors(permission_run, "hop")
    assert "permission_denied" in said and "localhost" in said, permission_run.combined
    assert site.at("/hop") and not site.at("/echo/after-hop")


def test_fetch_step_outside_permissions_network_is_never_sent(permission_run, site):
    said = step_errors(permission_run, "page")
    assert "permission_denied" in said, permission_run.combined
    assert not [s for s in site.seen if s.path == "/page" and s.host.startswith("localhost")]


def test_validate_warns_about_a_literal_url_on_a_host_not_granted(site, tmp_path):
    home = Home(tmp_path)
    doc = fan_out(
        "Warned",
        [http("elsewhere", "http://api.example.invalid/x", method="GET")],
        permissions={"network": ["127.0.0.1"]},
    )
    res = home.validate(home.write("warned.flow.json", doc), "--json")
    assert res.rc == 0, res.combined
    assert "permission_network" in res.stdout, res.combined


# --------------------------------------------------------------------------- deadlines
@pytest.fixture(scope="module")
def drip_run(site: RecordingServer, tmp_path_factory: pytest.TempPathFactory) -> tuple[CliResult, float]:
    """A server that never finishes, asked by http and fetch with and without `timeoutMs` (the
    default deadline set to 3 s in the settings)."""
    home = Home(tmp_path_factory.mktemp("drip"))
    (home.root / "config" / "settings.json").write_text(json.dumps({"webRequests": {"deadline": 3}}))
    url = f"{site.base}/drip"
    doc = fan_out(
        "Dripping",
        [
            http("http_timeout", url, method="GET", timeoutMs=1500, errorMode="skip"),
            fetch("fetch_timeout", url, timeoutMs=1500, errorMode="skip"),
            http("http_default", url, method="GET", errorMode="skip"),
            fetch("fetch_default", url, errorMode="skip"),
        ],
    )
    began = time.monotonic()
    res = home.run(home.write("drip.flow.json", doc), timeout=90)
    return res, time.monotonic() - began


@pytest.mark.parametrize("node", ["http_timeout", "fetch_timeout"])
def test_timeout_ms_cuts_off_a_server_dripping_one_byte_at_a_time(drip_run, node):
    res, took = drip_run
    assert res.rc == 0, res.combined
    said = step_errors(res, node)
    assert "timed out after 1500 ms" in said, said
    assert took < 40, f"the run took {took:.0f} s"


@pytest.mark.parametrize("node", ["http_default", "fetch_default"])
def test_default_whole_request_deadline_cuts_off_a_dripping_server(drip_run, node):
    res, took = drip_run
    said = step_errors(res, node)
    assert [e for e in res.of_type("step_end", node) if payload(e).get("status") == "skipped"], said
    assert "deadline" in said.lower() or "timed out" in said.lower(), said
    assert took < 40, f"the run took {took:.0f} s"


def test_default_request_deadline_setting_is_documented():
    """A user who meets the deadline must be able to find the setting that moves it."""
    root = Path(__file__).resolve().parents[2]
    text = (root / "README.md").read_text() + "".join(p.read_text() for p in (root / "docs").glob("*.md"))
    assert "webRequests" in text, "the default whole-request deadline's setting is not in README.md or docs/"


# --------------------------------------------------------------------------- hostile servers
@pytest.fixture(scope="module")
def hostile_run(site: RecordingServer, tmp_path_factory: pytest.TempPathFactory) -> tuple[CliResult, float]:
    """Servers that misbehave, each met by its own branch (skipped on failure, so every branch
    reports), and a node retried twice against a server that always answers 500."""
    home = Home(tmp_path_factory.mktemp("hostile"))
    base = site.base
    nodes = [
        http("to_data", f"{base}/hop?to=data:text/plain,hello", method="GET", errorMode="skip"),
        http("no_location", f"{base}/no-location", method="GET", errorMode="skip"),
        http(
            "unicode_header",
            f"{base}/echo/unicode",
            method="GET",
            headers=[{"key": "X-Note", "value": "héllo ✓"}],
            errorMode="skip",
        ),
        http("deep_json", f"{base}/deep-json", method="GET", errorMode="skip"),
        fetch("deep_html", f"{base}/deep-html", errorMode="skip"),
        http("retried", f"{base}/status500/retried", method="GET", errorMode="retry", maxRetries=2, retryDelayMs=50),
        {
            "id": "recovered",
            "type": "agent",
            "data": {"agentName": "Recovered", "userPrompt": "recovered: {{input}}", "model": "echo"},
        },
    ]
    doc = fan_out("Hostile", nodes)
    doc["connections"] = [c for c in doc["connections"] if c["target"] != "recovered"]
    doc["connections"].append(
        {"source": "retried", "target": "recovered", "sourceHandle": "error", "targetHandle": "input"}
    )
    began = time.monotonic()
    res = home.run(home.write("hostile.flow.json", doc), timeout=120)
    return res, time.monotonic() - began


def python_repr_in(text: str) -> list[str]:
    """Raw Python exception reprs a user should never read."""
    names = ("InvalidURL(", "UnicodeEncodeError(", "RecursionError", "Traceback", "KeyError(", "TypeError(")
    return [n for n in names if n in text]


def test_hostile_servers_end_the_run_quickly_without_a_traceback(hostile_run):
    res, took = hostile_run
    assert res.rc == 0, res.combined[-3000:]
    assert "Traceback" not in res.combined
    assert took < 60, f"{took:.0f} s"


@pytest.mark.parametrize("node", ["to_data", "no_location", "unicode_header", "deep_json", "deep_html"])
def test_hostile_server_is_reported_in_a_sentence_not_a_python_repr(hostile_run, node):
    res, _ = hostile_run
    said = step_errors(res, node)
    assert said, f"nothing said about {node}"
    assert not python_repr_in(said), said


def test_redirect_without_location_is_not_reported_as_a_cut_connection(hostile_run):
    res, _ = hostile_run
    said = step_errors(res, "no_location")
    assert "cut" not in said.lower(), said
    assert "location" in said.lower() or "redirect" in said.lower() or "302" in said, said


def test_node_retried_twice_sends_at_most_three_requests(hostile_run, site):
    res, _ = hostile_run
    retries = [payload(e) for e in res.of_type("step_retry", "retried")]
    assert len(retries) == 2, retries
    assert len(site.at("/status500/retried")) == 3, f"{len(site.at('/status500/retried'))} requests for 2 retries"
    assert res.of_type("llm_response", "recovered"), "the error branch did not run"
