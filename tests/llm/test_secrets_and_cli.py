"""API keys never leak (workflow files, run events, snapshots, logs, CLI output), and the
headless CLI runs the research sample against the fake OpenAI-compatible server."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

from engine import Run, RunStatus, dumps_workflow, save_workflow
from engine.cli import main as cli_main
from engine.llm.base import tool_name_for
from engine.llm.registry import make_resolver
from tests.fakes.openai_server import error_reply, free_port, openai_text, openai_tool_calls

from .conftest import agent, flow

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sk-flowdesk-TOPSECRET-0123456789abcdef"


def _research_handler(rec):
    """Answers for samples/research.flow.json, recognised by each agent's system prompt."""
    system, results = rec.system_prompt, rec.tool_results
    if system.startswith("You lead a small research team"):
        if not results:
            return openai_tool_calls(
                [
                    (tool_name_for("Fact finder", "facts"), {"input": "facts please"}),
                    (tool_name_for("Skeptic", "skeptic"), {"input": "risks please"}),
                ]
            )
        return openai_text("Notes: " + " / ".join(results), pieces=4)
    if system.startswith("You list concrete"):
        return openai_text("- fact one\n- fact two")
    if system.startswith("You list the strongest"):
        return openai_text("- risk one")
    if system.startswith("You write clear"):
        return openai_text("Brief: local is private; cloud is bigger.", pieces=5)
    return error_reply(400, "unexpected agent")


async def test_no_key_in_workflow_events_snapshot_or_logs(server, fast, monkeypatch, caplog, tmp_path, isolated_config):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    caplog.set_level(logging.DEBUG)  # httpx, httpcore and flowdesk at their chattiest
    server.handler = _research_handler
    from engine import load_workflow

    wf = load_workflow(ROOT / "samples" / "research.flow.json")
    run = Run(wf, make_resolver("openai", base_url=server.base_url, **fast))
    assert await run.start() == RunStatus.COMPLETED, run.error
    assert all(r.headers.get("authorization") == f"Bearer {SECRET}" for r in server.requests)  # the key was used

    wire = json.dumps([e.to_wire() for e in run.events])
    assert "Brief: local is private" in wire and SECRET not in wire
    assert SECRET not in json.dumps(run.snapshot())
    saved = tmp_path / "saved.flow.json"
    save_workflow(wf, saved)
    assert "Lead researcher" in saved.read_text()
    assert SECRET not in saved.read_text() and SECRET not in dumps_workflow(wf)
    assert caplog.records and SECRET not in caplog.text
    assert all(SECRET not in p.read_text(errors="replace") for p in isolated_config.rglob("*") if p.is_file())


async def test_key_echoed_by_the_server_is_redacted(server, fast, monkeypatch, caplog):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    caplog.set_level(logging.DEBUG)
    server.push(error_reply(401, f"Incorrect API key provided: {SECRET}. Find your key at example.org"))
    run = Run(flow(agent("a", "A")), make_resolver("openai", base_url=server.base_url, **fast))
    assert await run.start() == RunStatus.FAILED
    error = next(e for e in run.events if e.type == "llm_error").content
    assert error.startswith("Authentication failed") and "Incorrect API key provided" in error
    assert SECRET not in json.dumps([e.to_wire() for e in run.events]) and SECRET not in (run.error or "")
    assert SECRET not in caplog.text


def _cli(args: list[str], env_extra: dict[str, str], cfg: Path) -> subprocess.CompletedProcess:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.endswith("_API_KEY") and not k.endswith("_BASE_URL") and "proxy" not in k.lower()
    }
    env.update({"FLOWDESK_CONFIG_DIR": str(cfg), "FLOWDESK_TESTING": "1", "PYTHONPATH": str(ROOT)}, **env_extra)
    return subprocess.run(
        [sys.executable, "-m", "editor.launcher", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=30
    )


def test_cli_runs_the_research_sample_against_the_fake_server(server, isolated_config):
    server.handler = _research_handler
    proc = _cli(
        ["run", "samples/research.flow.json", "--provider", "openai", "--base-url", server.base_url, "--jsonl"],
        {"OPENAI_API_KEY": SECRET},
        isolated_config,
    )
    assert proc.returncode == 0, proc.stderr
    assert SECRET not in proc.stdout and SECRET not in proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    kinds = [e["type"] for e in events]
    assert kinds[-1] == "run_status" and events[-1]["content"] == "completed"
    assert "llm_delta" in kinds
    responses = {e["nodeId"]: e for e in events if e["type"] == "llm_response"}
    assert set(responses) == {"lead", "writer"}
    assert responses["lead"]["content"] == "Notes: - fact one\n- fact two / - risk one"
    assert responses["writer"]["content"] == "Brief: local is private; cloud is bigger."
    assert responses["writer"]["usage"] == {"prompt_tokens": 11, "completion_tokens": 7}
    subs = [json.loads(e["content"]) for e in events if e["type"].startswith("subagent_call_")]
    assert sorted((s["type"], s["subagentNodeId"]) for s in subs) == [
        ("subagent_call_end", "facts"),
        ("subagent_call_end", "skeptic"),
        ("subagent_call_start", "facts"),
        ("subagent_call_start", "skeptic"),
    ]
    assert all(s["depth"] == 1 and s["parentNodeId"] == "lead" and s["parentCallId"] is None for s in subs)
    assert all(e["timestamp"].endswith("Z") for e in events)
    # the run was recorded in the run store (and settings folder): no key in any file there
    for folder in (os.environ.get("FLOWDESK_DATA_DIR"), str(isolated_config)):
        for p in Path(folder or isolated_config).rglob("*"):
            if p.is_file():
                assert SECRET.encode() not in p.read_bytes(), p


def test_cli_without_a_key_says_how_to_configure(capsys):
    code = cli_main(["run", str(ROOT / "samples" / "hello.flow.json"), "--provider", "openai"])
    assert code == 2
    err = capsys.readouterr().err
    assert "OPENAI_API_KEY" in err and "keyring" in err


def test_cli_connection_refused_fails_with_the_url(capsys):
    url = f"http://127.0.0.1:{free_port()}/v1"
    code = cli_main(["run", str(ROOT / "samples" / "hello.flow.json"), "--provider", "openai", "--base-url", url])
    assert code == 1
    err = capsys.readouterr().err
    assert "Could not connect to" in err and url in err
    # and the way out: another provider, or a default in the settings file
    assert "provider 'openai' could not serve the run" in err and "--provider echo for a dry run" in err


def test_cli_failure_of_another_kind_gives_no_provider_hint(server, capsys):
    server.push(error_reply(400, "model 'nope' not found"))
    code = cli_main(
        [
            "run",
            str(ROOT / "samples" / "hello.flow.json"),
            "--provider",
            "openai",
            "--base-url",
            server.base_url,
            "--no-store",
        ]
    )
    assert code == 1
    err = capsys.readouterr().err
    assert "not found" in err and "could not serve the run" not in err


def test_cli_validate_warns_when_web_search_has_no_backend(tmp_path, capsys, monkeypatch):
    path = tmp_path / "search.flow.json"
    save_workflow(flow(agent("a", "A", web_search=True)), path)
    assert cli_main(["validate", str(path)]) == 0
    assert "web_search_unconfigured" in capsys.readouterr().out
    monkeypatch.setenv("FLOWDESK_SEARXNG_URL", "http://127.0.0.1:8888")
    assert cli_main(["validate", str(path)]) == 0
    assert "web_search_unconfigured" not in capsys.readouterr().out


def test_cli_model_the_local_server_lacks_lists_the_ones_it_has(capsys, isolated_config):
    from engine.llm.config import settings_path
    from tests.fakes.openai_server import FakeLLMServer, local_server_handler

    with FakeLLMServer() as srv:
        srv.handler = local_server_handler(("llama3.2", "qwen2.5"), answer="Hello!", strict=True)
        settings_path().write_text(json.dumps({"providers": {"ollama": {"base_url": srv.base_url}}}))
        hello = str(ROOT / "samples" / "hello.flow.json")
        assert cli_main(["run", hello, "--provider", "ollama", "--no-store"]) == 1
        err = capsys.readouterr().err
        assert "provider 'ollama' has no model" in err and "--model NAME (it lists: llama3.2, qwen2.5)" in err
        # and with one of them, every agent is answered
        assert cli_main(["run", hello, "--provider", "ollama", "--model", "llama3.2", "--no-store"]) == 0
