"""The research sample through the CLI against a real OpenAI-compatible server, when one is
running locally: set ``FLOWDESK_TEST_OPENAI_URL`` (for example ``http://127.0.0.1:8000/v1``
for llama.cpp's ``llama-server -m <a GGUF model>``, or Ollama at ``http://127.0.0.1:11434/v1``). Skipped
otherwise, so the suite never needs a network or a model."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

URL = os.environ.get("FLOWDESK_TEST_OPENAI_URL")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not URL, reason="FLOWDESK_TEST_OPENAI_URL is not set (no real OpenAI-compatible server)")
def test_research_sample_against_a_real_server(isolated_config):
    env = dict(os.environ, FLOWDESK_CONFIG_DIR=str(isolated_config), PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-m", "editor.launcher", "run", "samples/research.flow.json", "--base-url", URL, "--jsonl"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert events[-1]["type"] == "run_status" and events[-1]["content"] == "completed"
    responses = [e for e in events if e["type"] == "llm_response"]
    assert {e["nodeId"] for e in responses} == {"lead", "writer"} and all(e["content"].strip() for e in responses)
    assert any(e["type"] == "llm_delta" for e in events)
