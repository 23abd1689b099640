"""Imported flows run: an AnythingLLM agent flow and a TypeAgent step recipe against the local
web server, with the echo provider (the agent's answer is its prompt, templates resolved)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from engine import EchoProvider, Run, RunStatus, apply_arguments, import_flow, parse_workflow
from tests.fakes.web_server import WebServer, json_answer, text_answer

FIX = Path(__file__).resolve().parents[1] / "fixtures" / "imports"
PAGE = (
    "<html><head><title>Crash on save</title><style>p{}</style></head><body><nav>Home · Issues</nav>"
    "<main><h1>Crash on save</h1><p>Saving a flow with 10,000 nodes crashes the editor.</p></main></body></html>"
)


def imported(name: str, **arguments):
    wf = parse_workflow(import_flow(json.loads((FIX / name).read_text())).workflow)
    return apply_arguments(wf, arguments)


def run(wf) -> Run:
    r = Run(wf, EchoProvider())
    status = asyncio.run(r.start())
    assert status == RunStatus.COMPLETED, r.error
    return r


@pytest.fixture
def web():
    with WebServer() as server:
        yield server


def test_anythingllm_flow_runs_against_local_servers(web) -> None:
    web.route(
        "/api/search",
        lambda req: json_answer(
            {
                "items": [
                    {"title": "Crash on save", "url": web.url("/issues/1")},
                    {"title": "Typo", "url": web.url("/issues/2")},
                ]
            }
        ),
    )
    web.route("/issues/1", text_answer(PAGE, content_type="text/html; charset=utf-8"))
    wf = imported("anythingllm_issue_digest.json", trackerUrl=web.url("/api"), apiToken="test-token")
    r = run(wf)
    req = web.last("/api/search")
    assert req.method == "POST" and req.query == [("project", "flowdesk")]
    assert req.json == {"project": "flowdesk", "state": "open", "limit": 5}
    assert req.headers["x-project"] == "flowdesk" and req.headers["authorization"] == "Bearer test-token"
    answer = [e.content for e in r.events if e.type == "llm_response"][-1]
    assert answer.startswith('Summarise the open issues of flowdesk for a stand-up. The first one is "Crash on save"')
    assert "Saving a flow with 10,000 nodes crashes the editor." in answer and "Home · Issues" not in answer
    assert [e.type for e in r.events if e.type.startswith("http_")] == ["http_request", "http_response"] * 2


def test_direct_output_stops_at_its_block(web) -> None:
    web.route("/latest", json_answer({"base": "EUR", "rates": {"USD": 1.08}}))
    wf = imported("anythingllm_direct_output.json", ratesUrl=web.url(""))
    r = run(wf)
    assert web.last("/latest").query == [("base", "EUR"), ("symbols", "USD")]
    ran = {e.node_id for e in r.events if e.type == "step_start"}
    assert ran == {"n1", "n2"}  # the later agent and fetch blocks are kept but never run
    assert r.outputs["n2"] == {"base": "EUR", "rates": {"USD": 1.08}}


def test_typeagent_recipe_runs_fetch_then_llm(web) -> None:
    web.route("/changelog", text_answer(PAGE, content_type="text/html; charset=utf-8"))
    wf = imported("typeagent_page_digest.recipe.json", url=web.url("/changelog"))
    r = run(wf)
    answer = [e.content for e in r.events if e.type == "llm_response"][-1]
    assert answer.startswith("List the release dates in this page as JSON.\n\n")
    assert "Saving a flow with 10,000 nodes crashes the editor." in answer
