"""Re-running without paying twice (docs/design.md "Re-running, editing, comparing"): runs from a node
reusing recorded executions, pinned outputs and edits at an approval, against a request-counting
fake OpenAI-compatible server (real sockets)."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine import Run, RunRecorder, RunState, RunStatus, RunStore, make_resolver, parse_workflow
from tests.engine.flows import agent, approval, link, start
from tests.fakes.openai_server import FakeLLMServer, Recorded, openai_plain

ROOT = Path(__file__).resolve().parents[2]


def echo_handler(rec: Recorded):
    """Answers each chat request with the user message it got, upper-cased (so inputs carry on)."""
    messages = (rec.json or {}).get("messages") or [{}]
    return openai_plain(f"[{messages[-1].get('content', '')}]", usage=(4, 2))


def chain(n: int = 10, prompts: dict[int, str] | None = None, pinned: dict[int, str] | None = None) -> dict:
    prompts = prompts or {}
    nodes = [start("s", "topic")]
    for i in range(1, n + 1):
        node = agent(f"a{i}", prompts.get(i, f"step {i}: {{{{PREVIOUS_OUTPUT}}}}"))
        if pinned and i in pinned:
            node["data"]["pinnedOutput"] = pinned[i]
        nodes.append(node)
    links = [link("s", "a1")] + [link(f"a{i}", f"a{i + 1}") for i in range(1, n)]
    return {"name": "chain", "nodes": nodes, "connections": links}


def cli_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a `flowdesk` run in a test: this checkout, its own history, a test key."""
    return {
        "PYTHONPATH": str(ROOT),
        "FLOWDESK_DATA_DIR": str(tmp_path),
        "OPENAI_API_KEY": "test-key",
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }


def run_recorded(store: RunStore, wf_dict: dict, base_url: Any, **kwargs) -> Run:
    """A recorded run of ``wf_dict`` against the fake server at ``base_url`` (or that provider)."""
    wf = parse_workflow(wf_dict)
    provider = make_resolver("openai", base_url=base_url) if isinstance(base_url, str) else base_url
    run = Run(wf, provider, store=store, **kwargs)
    rec = RunRecorder(store, run, workflow_path="/flows/chain.flow.json")
    asyncio.run(run.start())
    rec.settled()
    rec.close()
    return run


@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    with FakeLLMServer() as srv:
        srv.handler = echo_handler
        yield srv


def kinds(run: Run, type_: str) -> list[str]:
    return [e.node_id for e in run.events if e.type == type_]


def test_run_from_node_9_after_its_prompt_changed_reuses_eight(server, tmp_path) -> None:
    store = RunStore(tmp_path / "runs.db")
    first = run_recorded(store, chain(), server.base_url)
    assert first.status == RunStatus.COMPLETED
    assert len(server.requests) == 10
    server.requests.clear()

    changed = chain(prompts={9: "step nine, rewritten: {{PREVIOUS_OUTPUT}}"})
    again = run_recorded(store, changed, server.base_url, reuse_from=first.run_id, start_at="a9")
    assert again.status == RunStatus.COMPLETED
    assert len(server.requests) == 2
    hits = kinds(again, "cache_hit")
    assert hits == ["s", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8"]
    assert [e for e in again.events if e.type == "cache_hit"][1].extra["fromRun"] == first.run_id
    # the exact sequence for a reused node and the fresh ones
    seq = [(e.node_id, e.type) for e in again.events if e.node_id in ("a8", "a9")]
    assert seq == [
        ("a8", "step_start"),
        ("a8", "cache_hit"),
        ("a8", "step_end"),
        ("a9", "step_start"),
        ("a9", "start_prompt"),
        ("a9", "llm_response"),
        ("a9", "step_end"),
    ]
    assert again.outputs["a8"] == first.outputs["a8"]
    state = RunState.of(again.workflow, again.events)
    assert state.state_of("a3") == "cached" and state.details["a3"].cached_from == first.run_id
    assert state.state_of("a9") == "done"
    assert ("a8", "output", "a9") in state.links


def test_changed_node_3_runs_again_with_everything_downstream(server, tmp_path) -> None:
    store = RunStore(tmp_path / "runs.db")
    first = run_recorded(store, chain(), server.base_url)
    server.requests.clear()
    changed = chain(prompts={3: "step three, rewritten: {{PREVIOUS_OUTPUT}}"})
    again = run_recorded(store, changed, server.base_url, reuse_from=first.run_id, start_at="a9")
    assert len(server.requests) == 8
    assert kinds(again, "cache_hit") == ["s", "a1", "a2"]
    assert kinds(again, "llm_response") == [f"a{i}" for i in range(3, 11)]


def test_a_node_whose_output_did_not_change_still_makes_its_downstream_run(server, tmp_path) -> None:
    # a3's prompt changed but the server answers the same: downstream still runs (its data changed upstream)
    store = RunStore(tmp_path / "runs.db")
    first = run_recorded(store, chain(4), server.base_url)
    server.handler = lambda rec: openai_plain("same", usage=(1, 1))
    server.requests.clear()
    again = run_recorded(
        store,
        chain(4, prompts={2: "other {{PREVIOUS_OUTPUT}}"}),
        server.base_url,
        reuse_from=first.run_id,
        start_at="a4",
    )
    assert kinds(again, "cache_hit") == ["s", "a1"]
    assert len(server.requests) == 3


def test_reuse_across_a_process_restart(server, tmp_path) -> None:
    db = tmp_path / "runs.db"
    flow = tmp_path / "chain.flow.json"
    flow.write_text(json.dumps(chain(5)))
    env = cli_env(tmp_path)
    base = [sys.executable, "-m", "engine.cli", "run", str(flow), "--provider", "openai", "--base-url", server.base_url]
    res = subprocess.run(base, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert len(server.requests) == 5
    assert db.exists()
    store = RunStore(db)
    assert store.cache_stats()["entries"] == 6  # the start node and five agents
    server.requests.clear()
    # a new process: run from a5, reusing the document's last run (the default)
    res = subprocess.run(
        base + ["--from", "a5", "--jsonl"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    lines = [json.loads(x) for x in res.stdout.splitlines() if x.strip()]
    assert [x["nodeId"] for x in lines if x["type"] == "cache_hit"] == ["s", "a1", "a2", "a3", "a4"]
    assert len(server.requests) == 1
    # stored once however many runs share them
    assert store.cache_stats()["entries"] == 6
    assert store.count_runs() == 2


def test_pinned_node_makes_no_request(server, tmp_path) -> None:
    wf = parse_workflow(chain(3, pinned={2: "PINNED"}))
    run = Run(wf, make_resolver("openai", base_url=server.base_url))
    assert asyncio.run(run.start()) == RunStatus.COMPLETED
    assert len(server.requests) == 2
    assert [(e.node_id, e.type) for e in run.events if e.node_id == "a2"] == [
        ("a2", "step_start"),
        ("a2", "step_pinned"),
        ("a2", "step_end"),
    ]
    assert run.outputs["a2"] == "PINNED"
    assert "PINNED" in server.requests[-1].json["messages"][-1]["content"]
    state = RunState.of(wf, run.events)
    assert state.state_of("a2") == "done" and state.details["a2"].pinned
    # saved in the file
    from engine import dumps_workflow

    assert json.loads(dumps_workflow(wf))["nodes"][2]["data"]["pinnedOutput"] == "PINNED"


def test_cache_is_bounded_least_recently_used_first_and_clearable(server, tmp_path) -> None:
    store = RunStore(tmp_path / "runs.db")
    store.set_cache_limit(10_000)
    first = run_recorded(store, chain(3), server.base_url)
    stats = store.cache_stats()
    assert stats["entries"] == 4 and 0 < stats["bytes"] <= 10_000
    store.set_cache_limit(stats["bytes"] - 1)  # one must go: the least recently used
    assert store.cache_stats()["entries"] == 3
    assert len(store.recorded_executions(first.run_id)) == 3
    assert store.clear_cache() == 3
    assert store.cache_stats() == {"entries": 0, "bytes": 0, "limit": stats["bytes"] - 1}


def test_edit_before_approving_sends_the_edited_text_and_keeps_both(server, tmp_path) -> None:
    wf = parse_workflow(
        {
            "nodes": [
                start("s", "topic"),
                agent("a1", "draft: {{PREVIOUS_OUTPUT}}"),
                approval("ok"),
                agent("a2", "polish: {{PREVIOUS_OUTPUT}}"),
            ],
            "connections": [link("s", "a1"), link("a1", "ok"), link("ok", "a2", "approve")],
        }
    )
    store = RunStore(tmp_path / "runs.db")
    run = Run(wf, make_resolver("openai", base_url=server.base_url))
    rec = RunRecorder(store, run)

    async def go() -> None:
        assert await run.start() == RunStatus.PAUSED
        rec.settled()
        assert await run.resume("approve", "fixed a word", output="THE EDITED DRAFT") == RunStatus.COMPLETED

    asyncio.run(go())
    rec.close()
    original = run.outputs["a1"]
    assert server.requests[-1].json["messages"][-1]["content"] == "polish: THE EDITED DRAFT"
    ev = next(e for e in run.events if e.type == "input_received")
    assert json.loads(ev.content) == {"decision": "approve", "note": "fixed a word", "edited": True}
    assert ev.extra == {
        "handle": "approve",
        "note": "fixed a word",
        "edited": True,
        "output": "THE EDITED DRAFT",
        "original": original,
    }
    # the stored record and its export keep both
    stored = RunState.of(wf, store.events(run.run_id))
    assert stored.details["ok"].review == {
        "decision": "approve",
        "note": "fixed a word",
        "output": "THE EDITED DRAFT",
        "original": original,
    }
    wire = [json.loads(x) for x in store.export_jsonl(run.run_id)]
    got = next(w for w in wire if w["type"] == "input_received")
    assert got["edited"] is True and got["original"] == original and got["output"] == "THE EDITED DRAFT"


def test_flowdesk_diff_json_names_changed_nodes_and_output_differences(server, tmp_path, monkeypatch) -> None:
    from engine.cli import main as cli_main

    store = RunStore(tmp_path / "runs.db")
    first = run_recorded(store, chain(3), server.base_url)
    second = run_recorded(store, chain(3, prompts={2: "changed {{PREVIOUS_OUTPUT}}"}), server.base_url)
    import contextlib
    import io

    monkeypatch.setenv("FLOWDESK_DATA_DIR", str(tmp_path))  # (restored after: the session's own folder)
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli_main(["diff", first.run_id, second.run_id[:10], "--json"]) == 0
    result = json.loads(buf.getvalue())
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert cli_main(["diff", first.run_id, second.run_id]) == 0
    assert "node a2 changed: userPrompt" in buf.getvalue()
    # durations read as everywhere else: a step of the fake server takes milliseconds, not "0.00s"
    assert re.search(r"a1 \[a1\]: done, \d+ ms, \d+ tok  →  done, \d+ ms", buf.getvalue()), buf.getvalue()
    assert result["workflow"]["changed"] == {"a2": ["userPrompt"]}
    assert result["workflow"]["added"] == [] and result["workflow"]["removed"] == []
    by_id = {n["nodeId"]: n for n in result["nodes"]}
    assert not by_id["a1"]["outputChanged"] and by_id["a1"]["a"]["status"] == "done"
    assert by_id["a2"]["changed"] and by_id["a2"]["outputChanged"]
    ops = [op for op, _ in by_id["a2"]["outputDiff"]]
    assert "delete" in ops and "insert" in ops
    assert "".join(t for op, t in by_id["a2"]["outputDiff"] if op != "delete") == second.outputs["a2"]
    assert by_id["a3"]["outputChanged"] and not by_id["a3"]["changed"]
    assert by_id["a2"]["b"]["tokens"] == {"prompt": 4, "completion": 2}
    assert result["totals"]["a"]["tokens"]["total"] == 18


def test_resume_with_an_edited_output_from_the_cli(server, tmp_path) -> None:
    flow = tmp_path / "review.flow.json"
    flow.write_text(
        json.dumps(
            {
                "nodes": [
                    start("s", "topic"),
                    agent("a1", "draft {{PREVIOUS_OUTPUT}}"),
                    approval("ok"),
                    agent("a2", "polish: {{PREVIOUS_OUTPUT}}"),
                ],
                "connections": [link("s", "a1"), link("a1", "ok"), link("ok", "a2", "approve")],
            }
        )
    )
    edited = tmp_path / "edited.txt"
    edited.write_text("hand-fixed draft")
    env = cli_env(tmp_path)
    res = subprocess.run(
        [sys.executable, "-m", "engine.cli", "run", str(flow), "--provider", "openai", "--base-url", server.base_url],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 3, res.stderr
    run_id = RunStore(tmp_path / "runs.db").list_runs()[0].id
    res = subprocess.run(
        [
            sys.executable,
            "-m",
            "engine.cli",
            "resume",
            run_id,
            "--decide",
            "approve",
            "--output",
            f"@{edited}",
            "--base-url",
            server.base_url,
            "--provider",
            "openai",
            "--jsonl",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    assert server.requests[-1].json["messages"][-1]["content"] == "polish: hand-fixed draft"
    got = next(json.loads(x) for x in res.stdout.splitlines() if '"input_received"' in x)
    assert got["edited"] is True and got["output"] == "hand-fixed draft" and got["original"] == "[draft topic]"


def test_token_and_cost_totals_per_node_and_run_with_user_prices(server, tmp_path, monkeypatch) -> None:
    from engine import model_prices, run_costs

    monkeypatch.setenv("FLOWDESK_CONFIG_DIR", str(tmp_path / "cfg"))
    (tmp_path / "cfg").mkdir()
    assert model_prices()["gpt-4o-mini"] == (0.15, 0.6)  # the catalogue's
    # a user price, in settings.json, for the model that answers the chain's calls (the chain
    # asks for "m"; the server answers as "fake-model", and that is what is paid for)
    (tmp_path / "cfg" / "settings.json").write_text(
        json.dumps(
            {"providers": {"openai": {"models": [{"id": "fake-model", "price": {"input": 1.0, "output": 2.0}}]}}}
        )
    )
    prices = model_prices()
    assert prices["fake-model"] == (1.0, 2.0)
    store = RunStore(tmp_path / "runs.db")
    first = run_recorded(store, chain(3), server.base_url)
    state = RunState.of(first.workflow, store.events(first.run_id))
    costs = run_costs(state, first.workflow, prices)
    assert costs["nodes"]["a1"] == {
        "prompt": 4,
        "completion": 2,
        "model": "fake-model",
        "cost": (4 * 1.0 + 2 * 2.0) / 1e6,
    }
    assert costs["total"]["tokens"] == 18 and costs["total"]["cost"] == pytest.approx(24 / 1e6)
    # a run from a3 reusing a1, a2: only a3's tokens are paid
    again = run_recorded(store, chain(3), server.base_url, reuse_from=first.run_id, start_at="a3")
    state = RunState.of(again.workflow, store.events(again.run_id))
    assert run_costs(state, again.workflow, prices)["total"]["tokens"] == 6
    assert store.usage_by_node([again.run_id]) == {again.run_id: {"a3": (4, 2)}}


def repair_handler(patch: dict, reason: str = "the model name does not exist"):
    """Chat requests: a repair request gets ``{"patch", "reason"}``; model 'bad-model' is refused (404);
    anything else is echoed."""
    from tests.fakes.openai_server import error_reply

    def handle(rec: Recorded):
        body = rec.json or {}
        if "You repair one failing node" in json.dumps(body.get("messages", [])):
            return openai_plain("```json\n" + json.dumps({"patch": patch, "reason": reason}) + "\n```", usage=(50, 10))
        if body.get("model") == "bad-model":
            return error_reply(404, "The model `bad-model` does not exist", code="model_not_found")
        return echo_handler(rec)

    return handle


def test_repair_patches_a_bad_model_name_and_the_rerun_from_the_node_completes(server, tmp_path) -> None:
    from engine.flows.repair import apply_repair, failed_node, propose_repair

    server.handler = repair_handler({"model": "good-model"})
    store = RunStore(tmp_path / "runs.db")
    flow = chain(4)
    flow["nodes"][3]["data"]["model"] = "bad-model"  # a3
    first = run_recorded(store, flow, server.base_url)
    assert first.status == RunStatus.FAILED
    state = RunState.of(first.workflow, store.events(first.run_id))
    node_id, input_text, error = failed_node(state)
    assert node_id == "a3" and "bad-model" in error
    resolver = make_resolver("openai", base_url=server.base_url)
    proposal = asyncio.run(propose_repair(resolver(None), first.workflow, node_id, input_text, error))
    assert proposal.changes == [("model", "bad-model", "good-model")]
    assert proposal.reason == "the model name does not exist"
    repaired = apply_repair(first.workflow, proposal)
    assert first.workflow.node("a3").data.model == "bad-model"  # a copy
    server.requests.clear()
    again = Run(
        repaired, make_resolver("openai", base_url=server.base_url), store=store, reuse_from=first.run_id, start_at="a3"
    )
    rec = RunRecorder(store, again)
    assert asyncio.run(again.start()) == RunStatus.COMPLETED
    rec.close()
    assert kinds(again, "cache_hit") == ["s", "a1", "a2"]
    assert len(server.requests) == 2


def test_an_invalid_repair_is_refused_with_the_reason(server) -> None:
    from engine.flows.repair import RepairError, parse_repair

    wf = parse_workflow(chain(2))
    with pytest.raises(RepairError, match="does not have: colour"):
        parse_repair(wf, "a1", json.dumps({"patch": {"colour": "red"}, "reason": "x"}))
    with pytest.raises(RepairError, match="not valid: tools"):
        parse_repair(wf, "a1", json.dumps({"patch": {"tools": "yes please"}, "reason": "x"}))
    with pytest.raises(RepairError, match="not JSON"):
        parse_repair(wf, "a1", "I would change the model")
    with pytest.raises(RepairError, match="changes nothing"):
        parse_repair(wf, "a1", json.dumps({"patch": {"model": "m"}, "reason": "x"}))


def test_flowdesk_repair_apply_writes_the_file_atomically(server, tmp_path) -> None:
    server.handler = repair_handler({"model": "good-model"})
    flow = chain(2)
    flow["nodes"][2]["data"]["model"] = "bad-model"
    path = tmp_path / "chain.flow.json"
    path.write_text(json.dumps(flow))
    env = cli_env(tmp_path)
    base = [sys.executable, "-m", "engine.cli"]
    res = subprocess.run(
        base + ["run", str(path), "--provider", "openai", "--base-url", server.base_url],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 1
    run_id = RunStore(tmp_path / "runs.db").list_runs()[0].id
    repair = base + ["repair", run_id[:10], "--provider", "openai", "--base-url", server.base_url]
    res = subprocess.run(
        repair + ["--apply"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, input="n\n"
    )
    assert res.returncode == 0 and "nothing written" in res.stderr
    assert 'model: "bad-model" → "good-model"' in res.stdout
    assert json.loads(path.read_text())["nodes"][2]["data"]["model"] == "bad-model"
    res = subprocess.run(
        repair + ["--apply"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60, input="y\n"
    )
    assert res.returncode == 0, res.stderr
    assert json.loads(path.read_text())["nodes"][2]["data"]["model"] == "good-model"
    res = subprocess.run(
        base + ["run", str(path), "--provider", "openai", "--base-url", server.base_url, "--from", "a2"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr


def test_reusing_a_run_gives_that_runs_own_outputs_when_an_unchanged_node_answered_differently(
    server, tmp_path
) -> None:
    """Two full runs of one unchanged chain whose model answers differently each time: the
    execution keys are equal, but a run from a node reusing the second run gets the second
    run's outputs (what its console showed), not the first's."""
    store = RunStore(tmp_path / "runs.db")
    answers = iter(range(1000))
    server.handler = lambda rec: openai_plain(f"answer {next(answers)}", usage=(1, 1))
    first = run_recorded(store, chain(3), server.base_url)
    second = run_recorded(store, chain(3), server.base_url)
    assert first.outputs["a2"] != second.outputs["a2"]
    again = run_recorded(store, chain(3), server.base_url, reuse_from=second.run_id, start_at="a3")
    assert kinds(again, "cache_hit") == ["s", "a1", "a2"]
    assert again.outputs["a2"] == second.outputs["a2"]
    assert {k: v.output for k, v in store.recorded_executions(first.run_id).items()} == first.outputs
    # equal outputs are stored once: the start's input in every run, the reused ones of the third
    assert store.cache_stats()["entries"] == 1 + 3 + 3 + 1


def test_outputs_recorded_by_schema_4_are_kept_with_their_keys(tmp_path) -> None:
    """Migrated recordings keep their full keys (the key is made in two parts since; an old key
    matches no new step, so the first run from a node after the upgrade runs its upstream once)."""
    import sqlite3

    from engine.store import MIGRATIONS

    db = tmp_path / "runs.db"
    conn = sqlite3.connect(db)
    conn.executescript(";".join(MIGRATIONS[:4]))
    conn.execute("PRAGMA user_version = 4")
    conn.execute(
        "INSERT INTO runs (id, workflow_name, workflow_json, status, started_at) VALUES "
        "('r4', 'Old', '{\"nodes\": [], \"connections\": []}', 'completed', 1700000000)"
    )
    conn.execute("INSERT INTO executions VALUES ('k1', 'shello', 'output', 6, 1700000001)")
    conn.execute("INSERT INTO run_executions VALUES ('r4', 'a1', 'k1')")
    conn.commit()
    conn.close()
    store = RunStore(db)
    recorded = store.recorded_executions("r4")
    assert list(recorded) == ["a1"]
    assert (recorded["a1"].key, recorded["a1"].output, recorded["a1"].handle) == ("k1", "hello", "output")
    assert store.cache_stats()["entries"] == 1
    store.delete_run("r4")
    assert store.cache_stats()["entries"] == 0


def test_a_node_recorded_several_times_in_a_run_is_reused_with_its_last_output(tmp_path) -> None:
    """A node in a loop ends once per iteration: the recording keeps each, and a later run reuses
    the last (recorded in a second batch too, as a long run's steps are)."""
    from engine import parse_workflow as parse

    store = RunStore(tmp_path / "runs.db")
    store.create_run("r1", parse(chain(1)), status="completed")
    with store._transaction() as conn:
        store._put_executions(
            conn, "r1", [("a1", "k-first", "first", "output"), ("a1", "k-second", "second", "output")]
        )
    with store._transaction() as conn:
        store._put_executions(conn, "r1", [("s", "k-s", "topic", "output"), ("a1", "k-third", "third", "output")])
    recorded = store.recorded_executions("r1")
    assert (recorded["a1"].key, recorded["a1"].output) == ("k-third", "third")
    assert recorded["s"].output == "topic"
    assert store.cache_stats()["entries"] == 4


def looped(reviser_prompt: str = "revise: {{PREVIOUS_OUTPUT}}") -> dict:
    """start -> draft -> a loop of two rounds (the reviser its body) -> publish."""
    return {
        "name": "looped",
        "nodes": [
            start("s", "topic"),
            agent("draft", "draft: {{PREVIOUS_OUTPUT}}"),
            {"id": "rounds", "type": "loop", "data": {"maxIterations": 2, "until": "never said"}},
            agent("reviser", reviser_prompt),
            agent("publish", "publish: {{PREVIOUS_OUTPUT}}"),
        ],
        "connections": [
            link("s", "draft"),
            link("draft", "rounds"),
            link("rounds", "reviser", "body"),
            link("reviser", "rounds"),
            link("rounds", "publish", "done"),
        ],
    }


def test_a_run_from_a_node_after_a_loop_reuses_every_round(server, tmp_path) -> None:
    """Each round of a loop is a recorded step of the loop node and of its body: a run from the
    node after the loop finds every one by its key, in order, and pays only for that node."""
    store = RunStore(tmp_path / "runs.db")
    first = run_recorded(store, looped(), server.base_url)
    assert first.status == RunStatus.COMPLETED
    assert kinds(first, "llm_response") == ["draft", "reviser", "reviser", "publish"]
    server.requests.clear()

    again = run_recorded(store, looped(), server.base_url, reuse_from=first.run_id, start_at="publish")
    assert again.status == RunStatus.COMPLETED
    assert len(server.requests) == 1
    assert kinds(again, "cache_hit") == ["s", "draft", "rounds", "reviser", "rounds", "reviser", "rounds"]
    assert [e.extra["handle"] for e in again.events if e.type == "cache_hit" and e.node_id == "rounds"] == [
        "body",
        "body",
        "done",
    ]
    assert again.outputs["publish"] == first.outputs["publish"]
    # every step is kept, in order; the node's last one is what recorded_executions gives
    steps = store.recorded_steps(first.run_id)
    assert {node: len(recs) for node, recs in steps.items()} == {
        "s": 1,
        "draft": 1,
        "rounds": 3,
        "reviser": 2,
        "publish": 1,
    }
    assert store.recorded_executions(first.run_id)["rounds"] == steps["rounds"][-1]


def test_flowdesk_run_from_after_a_loop_pays_for_that_node_only(server, tmp_path) -> None:
    flow = tmp_path / "looped.flow.json"
    flow.write_text(json.dumps(looped()))
    env = cli_env(tmp_path)
    args = [sys.executable, "-m", "engine.cli", "run", str(flow), "--provider", "openai", "--base-url", server.base_url]
    res = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert len(server.requests) == 4
    res = subprocess.run(
        args + ["--from", "publish", "--jsonl"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    assert len(server.requests) == 5
    hits = [json.loads(x)["nodeId"] for x in res.stdout.splitlines() if '"cache_hit"' in x]
    assert hits == ["s", "draft", "rounds", "reviser", "rounds", "reviser", "rounds"]


def test_a_loop_whose_body_changed_runs_its_rounds_as_a_fresh_run_would(server, tmp_path) -> None:
    """The loop's first step is reused (its input did not change) and counted as iteration 1, so
    the changed body runs twice, as in a fresh run, not three times."""
    store = RunStore(tmp_path / "runs.db")
    first = run_recorded(store, looped(), server.base_url)
    server.requests.clear()

    changed = looped("revise it again: {{PREVIOUS_OUTPUT}}")
    again = run_recorded(store, changed, server.base_url, reuse_from=first.run_id, start_at="publish")
    fresh = run_recorded(store, changed, server.base_url)
    assert again.status == fresh.status == RunStatus.COMPLETED
    assert kinds(again, "cache_hit") == ["s", "draft", "rounds"]
    assert kinds(again, "llm_response") == ["reviser", "reviser", "publish"]
    assert [e.extra["iteration"] for e in again.events if e.type == "loop_check"] == [1, 2]
    assert again.outputs["publish"] == fresh.outputs["publish"]


def test_a_loop_whose_body_gives_back_what_it_got_replays_its_rounds_in_order(tmp_path) -> None:
    """Every round of this loop has the same input, so its steps share one key: the run from the
    node after it takes them in the order they ran (body, body, body, then done)."""
    from engine import EchoProvider

    wf_dict = looped("")  # an empty prompt: echo answers with the input itself
    wf_dict["nodes"][2]["data"]["maxIterations"] = 3
    store = RunStore(tmp_path / "runs.db")
    first = run_recorded(store, wf_dict, EchoProvider())
    assert kinds(first, "llm_response") == ["draft", "reviser", "reviser", "reviser", "publish"]
    again = run_recorded(store, wf_dict, EchoProvider(), reuse_from=first.run_id, start_at="publish")
    assert again.status == RunStatus.COMPLETED
    assert [e.extra["handle"] for e in again.events if e.type == "cache_hit" and e.node_id == "rounds"] == [
        "body",
        "body",
        "body",
        "done",
    ]
    assert kinds(again, "llm_response") == ["publish"]
