"""The ``web-brief`` sample runs offline against the project's own fixtures served on 127.0.0.1
(what the README's "Acting and composing flows" section tells a user to do)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from engine import load_workflow, validate
from tests.fakes.web_server import WebServer, text_answer

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
SAMPLE = ROOT / "samples" / "web-brief.flow.json"


def test_the_sample_validates_clean() -> None:
    assert validate(load_workflow(SAMPLE), path=SAMPLE) == []


def test_the_sample_fetches_a_page_calls_an_api_and_hands_both_to_an_agent(tmp_path: Path) -> None:
    with WebServer() as web:
        web.route(
            "/pages/python-secrets.html",
            text_answer((FIXTURES / "pages" / "python-secrets.html").read_bytes(), content_type="text/html"),
        )
        web.route(
            "/api/releases.json",
            text_answer((FIXTURES / "api" / "releases.json").read_bytes(), content_type="application/json"),
        )
        env = {
            **os.environ,
            "FLOWDESK_DATA_DIR": str(tmp_path / "data"),
            "FLOWDESK_CONFIG_DIR": str(tmp_path / "config"),
        }
        res = subprocess.run(
            [
                sys.executable,
                "-m",
                "engine.cli",
                "run",
                str(SAMPLE),
                "--provider",
                "echo",
                "--jsonl",
                "--var",
                f"base={web.url('')}",
            ],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr
    events = [json.loads(line) for line in res.stdout.splitlines() if line.startswith("{")]
    api = [e["type"] for e in events if e["nodeId"] == "api"]
    assert api[:4] == ["step_start", "http_request", "http_response", "node_output"]
    (answer,) = [e["content"] for e in events if e["type"] == "llm_response" and e["nodeId"] == "writer"]
    assert "The newest release: Python 3.13 (2024-10-07)" in answer
    assert "cryptographically strong" in answer  # the page's text reached the agent
    assert "<script" not in answer
