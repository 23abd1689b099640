"""``loop`` with ``over`` (docs/design.md, "More node kinds"): a loop that walks a list, each
round's item as ``{{item}}`` (its number as ``{{iteration}}``), following ``done`` with the list of
what came back; a pause inside a round resumed from a snapshot in a new process."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from engine import EchoProvider, Run, RunState, RunStatus, validate
from engine.cli.printer import Printer

from .flows import Recorder, agent, approval, flow, link, start

ROOT = Path(__file__).resolve().parents[2]


def walk(id: str, over: str, **data: object) -> dict:
    return {"id": id, "type": "loop", "data": {"over": over, **data}}


def walk_flow(body: list[dict] | None = None, links: list[dict] | None = None, **data: object):
    return flow(
        [
            start(text="go"),
            walk("L", "{{rows}}", **data),
            *(body or [agent("w", "item {{item}} #{{iteration}}")]),
            agent("z", "all: {{PREVIOUS_OUTPUT}}"),
        ],
        [link("s", "L"), *(links or [link("L", "w", "body"), link("w", "L")]), link("L", "z", "done")],
    )


async def test_loop_over_three_items_collects_each_rounds_result() -> None:
    wf = walk_flow()
    assert [i.code for i in validate(wf) if i.severity == "error"] == []
    rec = Recorder()
    run = Run(wf, rec, variables={"rows": ["a", "b", "c"]})
    assert await run.start() == RunStatus.COMPLETED
    assert [c for n, c in rec.calls if n == "w"] == ["item a #1", "item b #2", "item c #3"]
    collected = ["w(item a #1)", "w(item b #2)", "w(item c #3)"]
    assert run.outputs["L"] == collected
    assert rec.calls[-1] == ("z", "all: " + json.dumps(collected))
    assert [e.extra for e in run.events if e.type == "loop_check"] == [
        {"iteration": i, "matched": False, "total": 3} for i in (1, 2, 3)
    ]
    state = RunState.of(wf, run.events)
    assert ("L", "done", "z") in state.links and state.details["L"].iteration == 3


async def test_loop_over_json_text_a_cap_and_an_empty_list() -> None:
    rec = Recorder()
    run = Run(walk_flow(maxIterations=2), rec, variables={"rows": '[{"n": 1}, {"n": 2}, {"n": 3}]'})
    assert await run.start() == RunStatus.COMPLETED
    assert [c for n, c in rec.calls if n == "w"] == ['item {"n":1} #1', 'item {"n":2} #2']  # capped at 2
    empty = Run(walk_flow(), Recorder(), variables={"rows": []})
    assert await empty.start() == RunStatus.COMPLETED
    assert empty.outputs["L"] == [] and empty.outputs["z"] == "z(all: [])"


async def test_loop_over_something_that_is_not_a_list_fails_clearly() -> None:
    run = Run(walk_flow(), Recorder(), variables={"rows": "just words"})
    assert await run.start() == RunStatus.FAILED
    errors = [e.content for e in run.events if e.type == "error"]
    assert errors and "not a list" in errors[0] and "just words" in errors[0]


async def test_a_pause_inside_a_round_resumes_in_a_new_process(tmp_path) -> None:
    wf = walk_flow(
        [approval("ap"), agent("w", "{{item}}-{{iteration}}")],
        [link("L", "ap", "body"), link("ap", "w", "approve"), link("w", "L")],
    )
    run = Run(wf, EchoProvider(), variables={"rows": ["x", "y", "z"]})
    assert await run.start() == RunStatus.PAUSED
    assert await run.resume("approve") == RunStatus.PAUSED  # round 2 waits now
    snap = json.loads(json.dumps(run.snapshot()))
    assert snap["loops"]["L"]["iteration"] == 2 and snap["loops"]["L"]["results"] == ["x-1"]
    path = tmp_path / "snap.json"
    path.write_text(json.dumps(snap))
    code = (
        "import asyncio, json, sys\n"
        "from engine import Run, EchoProvider\n"
        "async def main():\n"
        "    run = Run.restore(json.load(open(sys.argv[1])), EchoProvider())\n"
        "    print(await run.resume('approve'))\n"
        "    print(await run.resume('approve'))\n"
        "    print(json.dumps(run.outputs['L']))\n"
        "asyncio.run(main())\n"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.splitlines() == ["paused", "completed", json.dumps(["x-1", "y-2", "z-3"])]


def test_the_loop_file_keeps_over_only_when_set() -> None:
    wf = walk_flow()
    assert wf.node("L").model_dump(mode="json", exclude_none=True)["data"]["over"] == "{{rows}}"
    plain = flow([start(), {"id": "L", "type": "loop", "data": {"maxIterations": 2}}], [link("s", "L")])
    assert "over" not in plain.node("L").model_dump(mode="json", exclude_none=True)["data"]


async def test_the_cli_log_says_which_item_came_back() -> None:
    """``flowdesk run``'s log line of a walk's loop_check names the item and the list's length
    (not "go on" on the last round, when the loop is in fact done)."""
    wf = walk_flow()
    out = io.StringIO()
    printer = Printer(out, wf, jsonl=False)
    run = Run(wf, EchoProvider(), variables={"rows": ["a", "b", "c"]}, keep_events=True)
    printer.follow(run)
    assert await run.start() == RunStatus.COMPLETED
    printer.finish()
    text = out.getvalue()
    assert "item 1 of 3 done" in text and "item 3 of 3 done" in text and "go on" not in text
