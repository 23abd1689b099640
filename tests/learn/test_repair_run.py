"""`flowdesk run … --repair`: a run failing on a wrong URL (a real HTTP server on 127.0.0.1),
the fake model's patch, and the run from the failed node completing with upstream steps
reused (the upstream agent makes no second request)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.fakes.openai_server import error_reply, openai_plain, openai_text
from tests.fakes.web_server import WebServer, json_answer


@pytest.fixture
def web():
    with WebServer() as w:
        w.route("/right", json_answer({"ok": True, "items": [1, 2]}))
        yield w


def workflow(url: str) -> dict:
    return {
        "name": "Fetch and use",
        "nodes": [
            {"id": "s", "type": "start", "data": {"initialInput": "go"}},
            {
                "id": "prep",
                "type": "agent",
                "data": {"agentName": "Prep", "systemPrompt": "You are Prep.", "model": "fake-model"},
            },
            {"id": "get", "type": "http", "data": {"method": "GET", "url": url}},
        ],
        "connections": [
            {"source": "s", "target": "prep", "sourceHandle": "output", "targetHandle": "input"},
            {"source": "prep", "target": "get", "sourceHandle": "output", "targetHandle": "input"},
        ],
    }


def test_run_repair_fixes_the_url_and_runs_from_the_failed_node(cli, server, web, isolated: Path) -> None:
    counts = {"prep": 0, "repair": 0}

    def handler(rec):
        system = rec.system_prompt or ""
        if system == "You are Prep.":
            counts["prep"] += 1
            return openai_text("prepared")
        if "repair one failing node" in system:
            counts["repair"] += 1
            return openai_plain(json.dumps({"patch": {"url": web.url("/right")}, "reason": "the path was wrong"}))
        return error_reply(400, "unexpected")

    server.handler = handler
    path = isolated / "fetch.flow.json"
    path.write_text(json.dumps(workflow(web.url("/wrong"))))
    res = cli("run", str(path), "--base-url", server.base_url, "--model", "fake-model", "--repair", "--yes", "--json")
    assert res.code == 0, res
    assert counts == {"prep": 1, "repair": 1}  # the upstream agent was reused, not asked again
    assert "the path was wrong" in res.err and "/wrong" in res.err and "/right" in res.err
    out = json.loads(res.out)
    assert out["status"] == "completed" and out["output"] == {"ok": True, "items": [1, 2]}
    saved = json.loads(path.read_text())
    assert saved["nodes"][2]["data"]["url"] == web.url("/right")


def test_without_yes_nothing_is_applied_when_not_confirmed(cli, server, web, isolated: Path, monkeypatch) -> None:
    server.handler = lambda rec: (
        openai_plain(json.dumps({"patch": {"url": web.url("/right")}, "reason": "wrong"}))
        if "repair one failing node" in (rec.system_prompt or "")
        else openai_text("prepared")
    )
    path = isolated / "fetch.flow.json"
    path.write_text(json.dumps(workflow(web.url("/wrong"))))
    before = path.read_text()
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    res = cli("run", str(path), "--base-url", server.base_url, "--model", "fake-model", "--repair")
    assert res.code == 1 and "not applied" in res.err
    assert path.read_text() == before
