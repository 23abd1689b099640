"""The CLI contract: exit codes and --jsonl output of `flowdesk validate` and `flowdesk run`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"


def flowdesk(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "editor.launcher", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "NO_COLOR": "1"},
    )


def jsonl(out: str) -> list[dict]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def test_validate_exit_codes(tmp_path: Path) -> None:
    ok = flowdesk("validate", str(SAMPLES / "hello.flow.json"))
    assert ok.returncode == 0 and "0 errors" in ok.stdout
    bad = tmp_path / "bad.flow.json"
    bad.write_text(json.dumps({"nodes": [{"id": "a", "type": "agent", "data": {}}], "connections": []}))
    res = flowdesk("validate", str(bad), "--json")
    assert res.returncode == 1
    issues = json.loads(res.stdout)["issues"]
    assert {"code", "severity", "nodeIds", "message"} <= set(issues[0])
    assert "no_start" in [i["code"] for i in issues]
    broken = tmp_path / "broken.flow.json"
    broken.write_text("{not json")
    res = flowdesk("validate", str(broken))
    assert res.returncode == 2 and "not valid JSON" in res.stderr and "Traceback" not in res.stderr
    res = flowdesk("validate", str(tmp_path / "missing.flow.json"))
    assert res.returncode == 2 and "file not found" in res.stderr


def test_run_hello_jsonl_in_emission_order() -> None:
    res = flowdesk("run", str(SAMPLES / "hello.flow.json"), "--provider", "echo", "--jsonl", "--input", "ping")
    assert res.returncode == 0, res.stderr
    events = jsonl(res.stdout)
    assert [(e["nodeId"], e["type"]) for e in events] == [
        ("system", "run_status"),
        ("start", "step_start"),
        ("start", "step_end"),
        ("greeter", "step_start"),
        ("greeter", "start_prompt"),
        ("greeter", "llm_response"),
        ("greeter", "step_end"),
        ("system", "run_status"),
    ]
    assert all(set(e) >= {"timestamp", "nodeId", "type", "content"} for e in events)
    assert events[-3]["content"] == "ping" and events[-1]["content"] == "completed"
    stamps = [e["timestamp"] for e in events]
    assert stamps == sorted(stamps)


def test_run_paused_without_decision_exits_3() -> None:
    res = flowdesk("run", str(SAMPLES / "review.flow.json"), "--provider", "echo", "--jsonl")
    assert res.returncode == 3
    events = jsonl(res.stdout)
    assert events[-2]["type"] == "wait_input" and events[-1]["content"] == "paused"
    assert "--decide" in res.stderr


def test_run_decisions_applied_in_order() -> None:
    res = flowdesk(
        "run", str(SAMPLES / "review.flow.json"), "--provider", "echo", "--jsonl", "--decide", "reject:promise less"
    )
    assert res.returncode == 0, res.stderr
    events = jsonl(res.stdout)
    received = [e for e in events if e["type"] == "input_received"]
    assert json.loads(received[0]["content"]) == {"decision": "reject", "note": "promise less"}
    assert [e["nodeId"] for e in events if e["type"] == "llm_response"] == ["triage", "revise"]


def test_run_readable_log() -> None:
    res = flowdesk("run", str(SAMPLES / "review.flow.json"), "--provider", "echo", "--decide", "approve")
    assert res.returncode == 0
    assert "Send reply · llm_response" in res.stdout and "\033[" not in res.stdout


def test_run_failed_and_usage_exit_codes(tmp_path: Path) -> None:
    bad = tmp_path / "bad.flow.json"
    bad.write_text(json.dumps({"nodes": [{"id": "s", "type": "start"}], "connections": []}))
    res = flowdesk("run", str(bad), "--provider", "echo")
    assert res.returncode == 1 and "start_no_output" in res.stderr
    assert flowdesk("run", str(SAMPLES / "hello.flow.json"), "--provider", "nope").returncode == 2
    assert flowdesk("run", str(SAMPLES / "hello.flow.json"), "--decide", "maybe").returncode == 2
    assert flowdesk("run", str(tmp_path / "none.flow.json"), "--provider", "echo").returncode == 2
    loop = tmp_path / "loop.flow.json"
    loop.write_text(
        json.dumps(
            {
                "nodes": [
                    {"id": "s", "type": "start"},
                    {"id": "a", "type": "agent", "data": {"model": "m"}},
                    {"id": "b", "type": "agent", "data": {"model": "m"}},
                ],
                "connections": [
                    {"source": "s", "target": "a"},
                    {"source": "a", "target": "b"},
                    {"source": "b", "target": "a"},
                ],
            }
        )
    )
    res = flowdesk("run", str(loop), "--provider", "echo", "--max-visits", "3", "--jsonl")
    assert res.returncode == 1
    assert jsonl(res.stdout)[-1]["content"] == "failed"


def test_run_ctrl_c_exits_4(tmp_path: Path) -> None:
    # A slow echo: patch the provider registry in the child through a tiny wrapper script.
    script = tmp_path / "slow.py"
    script.write_text(
        "import sys\n"
        "from engine.llm import registry\n"
        "from engine.llm.echo import EchoProvider\n"
        "registry._FACTORIES['echo'] = lambda **_: EchoProvider(delay=30)\n"
        "from engine.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, str(script), "run", str(SAMPLES / "hello.flow.json"), "--provider", "echo", "--jsonl"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if '"start_prompt"' in line:
            break
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=10)
    assert proc.returncode == 4, err
    assert time.monotonic() - t0 < 3
    assert json.loads(rest.splitlines()[-1])["content"] == "cancelled"


@pytest.mark.parametrize("sample", ["hello", "review", "research"])
def test_samples_validate_clean(sample: str) -> None:
    res = flowdesk("validate", str(SAMPLES / f"{sample}.flow.json"), "--json")
    assert res.returncode == 0 and json.loads(res.stdout) == {"issues": []}


def test_version_prints_the_installed_version_without_a_display() -> None:
    from importlib import metadata

    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    res = subprocess.run(
        [sys.executable, "-m", "editor.launcher", "--version"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        env=env,
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == f"flowdesk {metadata.version('flowdesk')}"


def test_the_summary_says_what_the_run_spent() -> None:
    """The line after a finished run counts every model call (the lead's two subagent calls
    included) and prices them as the console does: echo answered, so $0."""
    res = flowdesk("run", str(ROOT / "samples" / "research.flow.json"), "--provider", "echo")
    assert res.returncode == 0, res.stderr
    summary = next(line for line in res.stdout.splitlines() if line.strip().startswith("nodes:"))
    assert "5 done" in summary and " · tokens " in summary and summary.endswith(" · $0"), summary
    res = flowdesk("run", str(ROOT / "samples" / "research.flow.json"), "--provider", "echo", "--jsonl")
    events = jsonl(res.stdout)
    spent = sum(
        e["usage"]["prompt_tokens"] + e["usage"]["completion_tokens"]
        for e in events
        if e["type"] in ("llm_response", "subagent_call_end")
    )
    assert f"tokens {spent:,}" in summary
