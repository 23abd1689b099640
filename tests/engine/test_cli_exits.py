"""How `flowdesk run` ends (issue 30, items 3, 11, 12): every ended run prints its id, a closed
pipe ends it quietly, and Ctrl+C at any moment of its start is a quiet cancel (exit 4)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"


def env_for(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "NO_COLOR": "1",
        "PYTHONPATH": str(ROOT),
        "FLOWDESK_DATA_DIR": str(tmp_path / "data"),
        "FLOWDESK_CONFIG_DIR": str(tmp_path / "config"),
    }


def flowdesk(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "engine.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env_for(tmp_path),
        stdin=subprocess.DEVNULL,
    )


def loop_flow(tmp_path: Path) -> Path:
    path = tmp_path / "loop.flow.json"
    path.write_text(
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
    return path


def printed_id(stderr: str, status: str) -> str:
    m = re.search(rf"^flowdesk: run ([0-9a-f]{{32}}) {re.escape(status)}", stderr, re.M)
    assert m, stderr
    return m.group(1)


# ----------------------------------------------------------------------------- item 3
def test_a_failed_run_prints_its_id_for_show_and_repair(tmp_path: Path) -> None:
    res = flowdesk(tmp_path, "run", str(loop_flow(tmp_path)), "--provider", "echo", "--max-visits", "3")
    assert res.returncode == 1, res.stderr
    run_id = printed_id(res.stderr, "failed:")
    assert f"flowdesk show {run_id[:8]}" in res.stderr and f"flowdesk repair {run_id[:8]}" in res.stderr
    shown = flowdesk(tmp_path, "show", run_id[:8])
    assert shown.returncode == 0 and "failed" in shown.stdout


def test_a_failed_run_without_the_store_still_names_itself(tmp_path: Path) -> None:
    res = flowdesk(tmp_path, "run", str(loop_flow(tmp_path)), "--provider", "echo", "--max-visits", "3", "--no-store")
    assert res.returncode == 1
    printed_id(res.stderr, "failed:")
    assert "flowdesk show" not in res.stderr  # nothing recorded to show


def slow_echo_script(tmp_path: Path, delay: float = 30) -> Path:
    """The command line with the echo provider answering after ``delay`` seconds."""
    script = tmp_path / "slow.py"
    script.write_text(
        "import sys\n"
        "from engine.llm import registry\n"
        "from engine.llm.echo import EchoProvider\n"
        f"registry._FACTORIES['echo'] = lambda **_: EchoProvider(delay={delay})\n"
        "from engine.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    return script


def test_a_cancelled_run_prints_its_id(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [
            sys.executable,
            str(slow_echo_script(tmp_path)),
            "run",
            str(SAMPLES / "hello.flow.json"),
            "--provider",
            "echo",
            "--jsonl",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env_for(tmp_path),
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        if '"start_prompt"' in line:
            break
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 4, err
    run_id = printed_id(err, "cancelled")
    assert f"flowdesk show {run_id[:8]}" in err
    assert flowdesk(tmp_path, "show", run_id).returncode == 0


# ----------------------------------------------------------------------------- item 11
@pytest.mark.parametrize("store", [["--no-store"], []])
def test_run_into_a_closed_pipe_ends_quietly(tmp_path: Path, store: list[str]) -> None:
    """`flowdesk run ... | head -3`: the reader leaves while the run goes on."""
    script = slow_echo_script(tmp_path, delay=1)
    cmd = f"{sys.executable} {script} run {SAMPLES / 'hello.flow.json'} --provider echo {' '.join(store)} | head -3"
    res = subprocess.run(
        ["bash", "-c", cmd + '; echo "codes=${PIPESTATUS[*]}" >&2'],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env_for(tmp_path),
    )
    assert len(res.stdout.splitlines()) == 3
    assert "Traceback" not in res.stderr and "BrokenPipe" not in res.stderr and "Exception ignored" not in res.stderr
    assert "codes=141 0" in res.stderr, res.stderr  # 128 + SIGPIPE, as a shell reports it
    if store:
        return
    listed = json.loads(flowdesk(tmp_path, "runs", "--json").stdout)["runs"]
    # recorded, ended: cancelled when the reader left mid-run (nobody reads it), or completed when
    # the recorder's last batch (printed once committed) was the first write to find the pipe closed
    assert len(listed) == 1 and listed[0]["status"] in ("cancelled", "completed")


# ----------------------------------------------------------------------------- item 12
def _start_up_time() -> float:
    """How long this (possibly busy) machine's interpreter takes to reach a line of ours: Python's
    own start-up (site, the editable install's finder) is out of any program's reach."""
    times = []
    for _ in range(3):
        t0 = time.monotonic()
        subprocess.run(
            [sys.executable, "-c", "import editor"], cwd=ROOT, check=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
        )
        times.append(time.monotonic() - t0)
    return max(times)  # the slowest of three: a busy moment (parallel tests) must not cut it short


def _interrupt_run_after(tmp_path: Path, delay: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "editor.launcher", "run", str(SAMPLES / "hello.flow.json"), "--provider", "echo"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env_for(tmp_path),
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    return proc


@pytest.mark.parametrize("delay_ms", [0, 20, 50, 100])
def test_ctrl_c_in_the_first_tenth_of_a_second_of_run_exits_4_without_a_traceback(
    tmp_path: Path, delay_ms: int
) -> None:
    start_up = _start_up_time()
    ours = max(3 * start_up, start_up + 0.05)  # from the first line of ours on (busy machines swing)
    for _ in range(3):
        proc = _interrupt_run_after(tmp_path, ours + delay_ms / 1000)
        out, err = proc.communicate(timeout=30)
        assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
        if proc.returncode == 0:  # the whole run was quicker than the delay
            assert "completed" in err
        else:
            assert proc.returncode == 4, (proc.returncode, err)
            assert "cancelled" in err


def test_ctrl_c_before_the_interpreter_runs_is_no_traceback(tmp_path: Path) -> None:
    """At once (0 ms): the interpreter has not started; the process ends as any program Ctrl+C
    stops (killed by SIGINT, 130 in a shell), or, once it runs, as cancelled."""
    for _ in range(3):
        proc = _interrupt_run_after(tmp_path, 0)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode in (-signal.SIGINT, 4), (proc.returncode, err)
        assert "Traceback" not in err
