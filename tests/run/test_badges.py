"""Run badges read from the reducer: a join taken from the cache in a run from a node waits for
nothing, so it carries no "2 of 3 in" (it kept the count its reused branches had delivered)."""

from __future__ import annotations

from editor.run.badges import run_badges
from engine import RunState, parse_workflow
from engine.store import RunStore

from ..engine.test_store import recorded_run


def _panel():
    nodes = [{"id": "s", "type": "start", "data": {"initialInput": "draft"}}]
    nodes += [{"id": f"r{i}", "type": "agent", "data": {"agentName": f"Reviewer {i}"}} for i in range(3)]
    nodes += [{"id": "j", "type": "join", "data": {}}, {"id": "w", "type": "agent", "data": {"agentName": "Writer"}}]
    conns = [{"source": "s", "target": f"r{i}"} for i in range(3)]
    conns += [{"source": f"r{i}", "target": "j"} for i in range(3)] + [{"source": "j", "target": "w"}]
    return parse_workflow({"nodes": nodes, "connections": conns})


def test_a_join_reused_in_a_run_from_a_node_has_no_waiting_badge(tmp_path):
    store = RunStore(tmp_path / "runs.db")
    wf = _panel()
    first = recorded_run(store, wf)
    assert first.status == "completed"
    again = recorded_run(store, wf, reuse_from=first.run_id, start_at="w")
    assert again.status == "completed"
    state = RunState.of(wf, again.events)
    assert state.states["j"] == "cached" and state.states["w"] == "done"
    assert state.details["j"].expected == 3  # its reused branches were counted in
    assert "j" not in run_badges(state), run_badges(state)
    store.close()
