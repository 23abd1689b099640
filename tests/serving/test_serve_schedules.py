"""``flowdesk serve`` runs what must happen while it is up: the library's schedules (a cron with
a seconds field fires every two seconds here, so the test waits seconds, not a minute), and
approvals that time out (``timeoutMs`` / ``onTimeout``), including a run paused by a process
that has ended; an approval's ``options`` are decisions over the API."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.serving.conftest import ROOT, Served, _agent, _link, _start, env_for, served, write_flow

pytest.importorskip("fastapi", reason="flowdesk serve needs the 'serve' extra (FastAPI): pip install -e '.[serve]'")
pytest.importorskip("croniter", reason="schedules need the 'serve' extra (croniter): pip install -e '.[serve]'")
httpx = pytest.importorskip("httpx")

TICK = {
    "id": "tick",
    "name": "Tick",
    "schedule": "* * * * * */2",
    "nodes": [_start([]), _agent("beat", "tick")],
    "connections": [_link("start", "beat")],
}


def approval(flow_id: str, **data: Any) -> dict[str, Any]:
    links = [_link("start", "ask"), _link("ask", "yes", "approve"), _link("ask", "no", "reject")]
    if "options" in data:
        links.append(_link("ask", "later", "Later"))
    return {
        "id": flow_id,
        "name": flow_id.title(),
        "nodes": [
            _start([]),
            {"id": "ask", "type": "approval", "x": 200, "y": 0, "data": {"prompt": "Go?", **data}},
            _agent("yes", "approved [{{APPROVAL_NOTE}}]", 400),
            _agent("no", "rejected", 400, 100),
            _agent("later", "later [{{APPROVAL_NOTE}}]", 400, 200),
        ],
        "connections": links,
    }


@pytest.fixture(scope="module")
def dirs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("serve-schedules")
    library, data = root / "library", root / "data"
    library.mkdir()
    data.mkdir()
    write_flow(library, TICK)
    write_flow(library, approval("choose", options=["Later"]))
    write_flow(library, approval("hurry", timeoutMs=1500, onTimeout="approve"))
    return library, data


@pytest.fixture(scope="module")
def api(dirs: tuple[Path, Path]) -> Iterator[Served]:
    library, data = dirs
    with served(["serve", "--port", "0", "--library", str(library), "--provider", "echo"], data) as server:
        yield server


def wait_for(c: httpx.Client, run_id: str, status: str, timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        body = c.get(f"/runs/{run_id}").json()
        if body["status"] == status:
            return body
        assert time.monotonic() < deadline, body
        time.sleep(0.1)


def test_a_scheduled_flow_starts_on_time_under_serve(api: Served) -> None:
    with httpx.Client(base_url=api.url, timeout=30) as c:
        deadline = time.monotonic() + 30
        runs: list[dict[str, Any]] = []
        while time.monotonic() < deadline and len(runs) < 2:
            runs = [r for r in c.get("/runs", params={"flow": "Tick"}).json() if r["status"] == "completed"]
            time.sleep(0.2)
    assert len(runs) >= 2, "the two-second schedule did not fire twice in 30 s"


def test_an_option_is_a_decision_over_the_api(api: Served) -> None:
    with httpx.Client(base_url=api.url, timeout=30) as c:
        run_id = c.post("/flows/choose/runs", json={}).json()["runId"]
        paused = wait_for(c, run_id, "paused")
        assert paused["options"] == ["Later"]
        wrong = c.post(f"/runs/{run_id}/decision", json={"decision": "Someday"})
        assert wrong.status_code == 422 and "'Later'" in wrong.json()["detail"]
        assert c.post(f"/runs/{run_id}/decision", json={"decision": "later", "note": "next week"}).status_code == 200
        assert wait_for(c, run_id, "completed")["output"] == "later [next week]"


def test_an_approval_times_out_under_serve_even_when_paused_by_a_process_that_ended(
    api: Served, dirs: tuple[Path, Path]
) -> None:
    library, data = dirs
    with httpx.Client(base_url=api.url, timeout=30) as c:
        run_id = c.post("/flows/hurry/runs", json={}).json()["runId"]
        assert wait_for(c, run_id, "paused")["currentNodeId"] == "ask"
        assert wait_for(c, run_id, "completed", timeout=20)["output"] == "approved []"
        events = c.get(f"/runs/{run_id}/events").text
        assert '"timedOut": true' in events
        # paused by `flowdesk run`, which then exits (it would otherwise wait for the deadline itself)
        proc = subprocess.Popen(
            [sys.executable, "-m", "engine.cli", "run", str(library / "hurry.flow.json"), "--provider", "echo"],
            cwd=ROOT,
            env=env_for(data),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 20
            cli_run = None
            while cli_run is None and time.monotonic() < deadline:
                paused = c.get("/runs", params={"status": "paused", "flow": "Hurry"}).json()
                cli_run = paused[0]["id"] if paused else None
                time.sleep(0.05)
            assert cli_run is not None
        finally:
            proc.kill()
            proc.wait()
        assert wait_for(c, cli_run, "completed", timeout=20)["output"] == "approved []"


def test_a_scheduled_flow_that_cannot_start_is_said_plainly(tmp_path: Path) -> None:
    """A scheduled flow with a required variable and no default: serve says why, once a fire,
    in a sentence (no traceback), and a cron that is not one is said once."""
    library, data = tmp_path / "library", tmp_path / "data"
    library.mkdir()
    data.mkdir()
    needy = {
        **TICK,
        "id": "needy",
        "name": "Needy",
        "nodes": [_start([{"name": "who", "type": "string", "required": True}]), _agent("beat", "hi {{who}}")],
    }
    write_flow(library, needy)
    write_flow(library, {**TICK, "id": "typo", "name": "Typo", "schedule": "every minute"})
    with served(["serve", "--port", "0", "--library", str(library), "--provider", "echo"], data) as server:
        time.sleep(5)  # two or three fire times of the two-second cron
        log = server.stop()
    assert "Traceback" not in log
    assert (
        "the scheduled flow 'Needy' could not start: The variable 'who' is required and has no value "
        "(give it a default on the Start node)." in log
    )
    assert log.count("the flow 'Typo' will not start on its own: the schedule 'every minute'") == 1
