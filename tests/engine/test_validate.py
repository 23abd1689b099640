"""Validation rules of docs/design.md (engine.graph.validate), each with a failing and a passing case.

Every test builds a small workflow through ``parse_workflow`` (the loader a file goes
through), runs ``validate`` and asserts the issue's ``code``, ``severity`` and ``node_ids``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from engine import (
    GraphIndex,
    Issue,
    Severity,
    Workflow,
    check_connection,
    errors_only,
    load_workflow,
    parse_workflow,
    validate,
)

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
ERROR, WARNING = Severity.ERROR, Severity.WARNING


# ---------------------------------------------------------------------------------------
# Builders


def start(node_id: str = "s", text: str = "hi") -> dict[str, Any]:
    return {"id": node_id, "type": "start", "data": {"initialInput": text}}


def agent(node_id: str, *, subagents: bool = False, model: str = "gpt-4o-mini", name: str = "") -> dict[str, Any]:
    return {
        "id": node_id,
        "type": "agent",
        "data": {
            "agentName": name or node_id.upper(),
            "model": model,
            "tools": {"web_search": False, "subagents": subagents},
        },
    }


def if_node(node_id: str, *values: str) -> dict[str, Any]:
    return {"id": node_id, "type": "if", "data": {"conditions": [{"operator": "contains", "value": v} for v in values]}}


def approval(node_id: str) -> dict[str, Any]:
    return {"id": node_id, "type": "approval", "data": {"prompt": "OK?"}}


def link(
    source: str, target: str, handle: str | None = "output", target_handle: str | None = "input"
) -> dict[str, Any]:
    out: dict[str, Any] = {"source": source, "target": target}
    if handle is not None:
        out["sourceHandle"] = handle
    if target_handle is not None:
        out["targetHandle"] = target_handle
    return out


def sub(parent: str, child: str, target_handle: str | None = "input") -> dict[str, Any]:
    return link(parent, child, "subagent", target_handle)


def flow(nodes: list[dict[str, Any]], connections: list[dict[str, Any]]) -> Workflow:
    return parse_workflow({"nodes": nodes, "connections": connections})


def codes(issues: list[Issue]) -> list[str]:
    return [i.code for i in issues]


def only(issues: list[Issue], code: str) -> Issue:
    found = [i for i in issues if i.code == code]
    assert len(found) == 1, f"expected one {code}, got {issues}"
    return found[0]


def assert_clean(wf: Workflow) -> None:
    issues = validate(wf)
    assert issues == [], issues


def assert_no_errors(wf: Workflow) -> None:
    assert errors_only(validate(wf)) == []


# ---------------------------------------------------------------------------------------
# Start node


def test_minimal_flow_is_clean() -> None:
    assert_clean(flow([start(), agent("a")], [link("s", "a")]))


def test_no_start() -> None:
    issue = only(validate(flow([agent("a"), agent("b")], [link("a", "b")])), "no_start")
    assert (issue.severity, issue.node_ids) == (ERROR, ())
    assert "Start" in issue.message


def test_multiple_starts() -> None:
    wf = flow([start("s1"), start("s2"), agent("a")], [link("s1", "a"), link("s2", "a")])
    issue = only(validate(wf), "multiple_starts")
    assert (issue.severity, set(issue.node_ids)) == (ERROR, {"s1", "s2"})


def test_one_start_passes() -> None:
    assert "multiple_starts" not in codes(validate(flow([start("s1"), agent("a")], [link("s1", "a")])))


# ---------------------------------------------------------------------------------------
# Connections: endpoints and handles


def test_missing_source_node() -> None:
    issues = validate(flow([start(), agent("a")], [link("s", "a"), link("ghost", "a")]))
    issue = only(issues, "missing_source")
    assert (issue.severity, issue.node_ids, issue.connection_index) == (ERROR, ("a",), 1)
    assert "ghost" in issue.message


def test_missing_target_node() -> None:
    issues = validate(flow([start(), agent("a")], [link("s", "a"), link("a", "ghost")]))
    issue = only(issues, "missing_target")
    assert (issue.severity, issue.node_ids, issue.connection_index) == (ERROR, ("a",), 1)


def test_start_linked_only_to_missing_node() -> None:
    """A link to a node that does not exist reaches nothing (and does not crash the validator)."""
    issues = validate(flow([start(), agent("a")], [link("s", "ghost")]))
    assert only(issues, "missing_target").node_ids == ("s",)
    nothing = only(issues, "nothing_reachable")
    assert (nothing.severity, nothing.node_ids) == (ERROR, ("s",))


def test_existing_endpoints_pass() -> None:
    issues = validate(flow([start(), agent("a")], [link("s", "a")]))
    assert not {"missing_source", "missing_target"} & set(codes(issues))


@pytest.mark.parametrize(
    ("nodes", "bad_link", "node_id"),
    [
        ([start(), agent("a")], link("s", "a", "approve"), "s"),
        ([start(), agent("a"), agent("b")], link("a", "b", "false"), "a"),
        ([start(), if_node("i", "x"), agent("b")], link("i", "b", "condition-1"), "i"),
        ([start(), if_node("i", "x"), agent("b")], link("i", "b", "output"), "i"),
        ([start(), if_node("i"), agent("b")], link("i", "b", "true"), "i"),  # legacy true needs a condition
        ([start(), approval("p"), agent("b")], link("p", "b", "output"), "p"),
    ],
)
def test_invalid_source_handle(nodes: list[dict[str, Any]], bad_link: dict[str, Any], node_id: str) -> None:
    links = [bad_link] if bad_link["source"] == "s" else [link("s", nodes[1]["id"]), bad_link]
    wf = flow(nodes, links)
    issue = only(validate(wf), "invalid_source_handle")
    assert (issue.severity, issue.node_ids) == (ERROR, (node_id,))


@pytest.mark.parametrize("handle", ["condition-0", "true", "false"])
def test_valid_if_source_handles(handle: str) -> None:
    wf = flow([start(), if_node("i", "x"), agent("b")], [link("s", "i"), link("i", "b", handle)])
    assert_clean(wf)


def test_source_handle_absent_means_output() -> None:
    assert_clean(flow([start(), agent("a")], [link("s", "a", None, None)]))


@pytest.mark.parametrize(
    ("target", "target_handle"),
    [
        (agent("a"), "output"),
        (if_node("a", "x"), "condition-0"),
        (approval("a"), "approve"),
        (agent("a"), "foo"),
    ],
)
def test_invalid_target_handle(target: dict[str, Any], target_handle: str) -> None:
    wf = flow([start(), target, agent("z")], [link("s", "a", "output", target_handle)])
    issue = only(validate(wf), "invalid_target_handle")
    assert (issue.severity, issue.node_ids) == (ERROR, ("a",))


def test_link_into_start_is_invalid_target() -> None:
    wf = flow([start(), agent("a")], [link("s", "a"), link("a", "s")])
    issue = only(validate(wf), "invalid_target_handle")
    assert (issue.severity, issue.node_ids) == (ERROR, ("s",))


def test_output_to_input_link_from_a_node_of_unknown_type_is_checked() -> None:
    """Output-to-input links skip the rules only when they join a start or agent to a step."""
    wf = flow([start(), agent("a"), {"id": "w", "type": "webhook"}], [link("s", "a"), link("w", "a"), link("a", "w")])
    issues = validate(wf)
    assert codes(errors_only(issues)) == ["unknown_node_type", "invalid_source_handle"]
    assert only(issues, "invalid_source_handle").connection_index == 1


def test_repeated_link_to_a_missing_node_is_reported_as_missing_not_as_repeated() -> None:
    issues = validate(flow([start(), agent("a")], [link("s", "a"), link("a", "ghost"), link("a", "ghost")]))
    assert codes(issues) == ["missing_target", "missing_target"]
    assert [i.connection_index for i in issues] == [1, 2]


# ---------------------------------------------------------------------------------------
# Subagent links


def research(*extra_links: dict[str, Any], extra_nodes: tuple[dict[str, Any], ...] = ()) -> Workflow:
    """start -> lead (subagents on) -> writer; lead has children c1, c2."""
    nodes = [start(), agent("lead", subagents=True), agent("c1"), agent("c2"), agent("writer"), *extra_nodes]
    links = [link("s", "lead"), sub("lead", "c1"), sub("lead", "c2"), link("lead", "writer"), *extra_links]
    return flow(nodes, links)


def test_subagent_tree_is_clean() -> None:
    assert_clean(research())


def test_subagent_target_handle_absent_is_input() -> None:
    assert_clean(flow([start(), agent("p", subagents=True), agent("c")], [link("s", "p"), sub("p", "c", None)]))


@pytest.mark.parametrize(
    ("nodes", "bad"),
    [
        ([start(), agent("p", subagents=True), if_node("c", "x")], sub("p", "c")),
        ([start(), agent("p", subagents=True), approval("c")], sub("p", "c")),
        ([start(), if_node("p", "x"), agent("c")], sub("p", "c")),
        ([start(), agent("p", subagents=True)], sub("p", "s")),
    ],
)
def test_subagent_link_needs_agents_at_both_ends(nodes: list[dict[str, Any]], bad: dict[str, Any]) -> None:
    wf = flow(nodes, [link("s", "p"), bad])
    issue = only(validate(wf), "subagent_not_agent")
    assert (issue.severity, issue.node_ids) == (ERROR, (bad["source"], bad["target"]))


def test_subagent_link_from_agent_with_tool_off() -> None:
    wf = flow([start(), agent("p", subagents=False), agent("c")], [link("s", "p"), sub("p", "c")])
    issue = only(validate(wf), "subagent_tools_off")
    assert (issue.severity, issue.node_ids) == (ERROR, ("p",))


@pytest.mark.parametrize("handle", ["output", "subagent", "x"])
def test_subagent_target_handle_must_be_input(handle: str) -> None:
    wf = flow([start(), agent("p", subagents=True), agent("c")], [link("s", "p"), sub("p", "c", handle)])
    issue = only(validate(wf), "subagent_target_handle")
    assert (issue.severity, issue.node_ids) == (ERROR, ("c",))


def test_subagent_self_link() -> None:
    wf = flow([start(), agent("p", subagents=True), agent("c")], [link("s", "p"), sub("p", "c"), sub("p", "p")])
    issue = only(validate(wf), "subagent_self_link")
    assert (issue.severity, issue.node_ids) == (ERROR, ("p",))


def test_subagent_cycle_names_the_nodes() -> None:
    wf = flow(
        [
            start(),
            agent("p", subagents=True, name="Planner"),
            agent("a", subagents=True, name="Alpha"),
            agent("b", subagents=True, name="Beta"),
            agent("c", subagents=True, name="Gamma"),
        ],
        [link("s", "p"), sub("p", "a"), sub("a", "b"), sub("b", "c"), sub("c", "a")],
    )
    issues = validate(wf)
    issue = only(issues, "subagent_cycle")
    assert issue.severity == ERROR
    assert set(issue.node_ids) == {"a", "b", "c"}
    for name in ("Alpha", "Beta", "Gamma"):
        assert name in issue.message
    assert "Planner" not in issue.message


def test_two_node_subagent_cycle() -> None:
    wf = flow(
        [start(), agent("x", subagents=True), agent("y", subagents=True)],
        [link("s", "x"), sub("x", "y"), sub("y", "x")],
    )
    issue = only(validate(wf), "subagent_cycle")
    assert set(issue.node_ids) == {"x", "y"}


def test_dense_subagent_tangle_is_reported_quickly() -> None:
    """Every agent a subagent of every other: one issue per tangle, not one per simple cycle."""
    ids = [f"a{i}" for i in range(12)]
    links = [sub(p, c) for p in ids for c in ids if p != c]
    wf = flow([start(), *[agent(i, subagents=True) for i in ids]], [link("s", "a0"), *links])
    issues = validate(wf)
    assert codes(issues).count("subagent_cycle") == 1


def test_subagent_multiple_parents() -> None:
    wf = flow(
        [start(), agent("p1", subagents=True), agent("p2", subagents=True), agent("c")],
        [link("s", "p1"), link("p1", "p2"), sub("p1", "c"), sub("p2", "c")],
    )
    issue = only(validate(wf), "subagent_multiple_parents")
    assert (issue.severity, issue.node_ids) == (ERROR, ("c", "p1", "p2"))


def test_subagent_target_in_execution_edge() -> None:
    wf = research(link("writer", "c1"))
    issue = only(validate(wf), "subagent_in_execution")
    assert (issue.severity, issue.node_ids) == (ERROR, ("c1",))


def test_subagent_target_with_outgoing_execution_edge() -> None:
    wf = research(link("c2", "writer"))
    issue = only(validate(wf), "subagent_in_execution")
    assert (issue.severity, issue.node_ids) == (ERROR, ("c2",))


def test_nested_subagent_chain_is_allowed() -> None:
    wf = flow(
        [start(), agent("p", subagents=True), agent("c", subagents=True), agent("g", subagents=True), agent("gg")],
        [link("s", "p"), sub("p", "c"), sub("c", "g"), sub("g", "gg")],
    )
    assert_clean(wf)


# ---------------------------------------------------------------------------------------
# Reachability and branches


def test_start_without_outgoing_edge() -> None:
    issues = validate(flow([start(), agent("a"), agent("b")], [link("a", "b")]))
    issue = only(issues, "start_no_output")
    assert (issue.severity, issue.node_ids) == (ERROR, ("s",))


def test_start_with_only_a_subagent_like_link_has_no_execution_edge() -> None:
    issues = validate(flow([start(), agent("a")], [sub("s", "a")]))
    assert only(issues, "start_no_output").node_ids == ("s",)


def test_start_alone() -> None:
    assert only(validate(flow([start()], [])), "start_no_output").severity == ERROR


def test_nothing_reachable_from_start() -> None:
    """Start's only edge goes back into start: there is an edge, but it reaches nothing."""
    issues = validate(flow([start(), agent("a")], [link("s", "s")]))
    issue = only(issues, "nothing_reachable")
    assert (issue.severity, issue.node_ids) == (ERROR, ("s",))
    assert "start_no_output" not in codes(issues)


def test_if_reachable_with_no_branch() -> None:
    wf = flow([start(), if_node("i", "x")], [link("s", "i")])
    issue = only(validate(wf), "if_no_branch")
    assert (issue.severity, issue.node_ids) == (ERROR, ("i",))


def test_if_with_branch_to_missing_node_has_no_branch() -> None:
    wf = flow([start(), if_node("i", "x")], [link("s", "i"), link("i", "ghost", "false")])
    assert only(validate(wf), "if_no_branch").node_ids == ("i",)


def test_unreachable_if_without_branch_is_not_an_error() -> None:
    wf = flow([start(), agent("a"), if_node("i", "x")], [link("s", "a")])
    assert "if_no_branch" not in codes(validate(wf))
    assert_no_errors(wf)


@pytest.mark.parametrize("handle", ["condition-0", "false", "true"])
def test_if_with_only_one_branch_is_allowed(handle: str) -> None:
    assert_clean(flow([start(), if_node("i", "x"), agent("a")], [link("s", "i"), link("i", "a", handle)]))


def test_approval_reachable_with_no_branch() -> None:
    wf = flow([start(), agent("a"), approval("p")], [link("s", "a"), link("a", "p")])
    issue = only(validate(wf), "approval_no_branch")
    assert (issue.severity, issue.node_ids) == (ERROR, ("p",))


@pytest.mark.parametrize("handle", ["approve", "reject"])
def test_approval_with_only_one_branch_is_allowed(handle: str) -> None:
    assert_clean(flow([start(), approval("p"), agent("a")], [link("s", "p"), link("p", "a", handle)]))


def test_unreachable_nodes_are_not_errors() -> None:
    wf = flow([start(), agent("a"), agent("lonely"), approval("p")], [link("s", "a")])
    issues = validate(wf)
    assert errors_only(issues) == []
    warning = only(issues, "unreachable")
    assert (warning.severity, set(warning.node_ids)) == (WARNING, {"lonely", "p"})


# ---------------------------------------------------------------------------------------
# Execution cycles


def test_execution_cycle_with_exit_is_clean() -> None:
    """A retry loop: an if sends failures back to the writer and successes on."""
    wf = flow(
        [start(), agent("w"), if_node("i", "done"), agent("out")],
        [link("s", "w"), link("w", "i"), link("i", "out", "condition-0"), link("i", "w", "false")],
    )
    assert_clean(wf)


def test_execution_cycle_ending_at_an_unconnected_branch_is_clean() -> None:
    """The if's false branch is not linked: when the condition fails the loop just ends."""
    wf = flow(
        [start(), agent("w"), if_node("i", "again")], [link("s", "w"), link("w", "i"), link("i", "w", "condition-0")]
    )
    assert_clean(wf)


def test_approval_loop_with_unconnected_reject_is_clean() -> None:
    wf = flow([start(), agent("w"), approval("p")], [link("s", "w"), link("w", "p"), link("p", "w", "approve")])
    assert_clean(wf)


def test_execution_cycle_with_no_way_out_warns() -> None:
    wf = flow(
        [start(), agent("a"), agent("b"), agent("c")], [link("s", "a"), link("a", "b"), link("b", "c"), link("c", "a")]
    )
    issues = validate(wf)
    assert errors_only(issues) == []  # cycles are allowed
    issue = only(issues, "execution_cycle_no_exit")
    assert (issue.severity, issue.node_ids) == (WARNING, ("a", "b", "c"))


def test_agent_self_loop_warns() -> None:
    wf = flow([start(), agent("a")], [link("s", "a"), link("a", "a")])
    assert only(validate(wf), "execution_cycle_no_exit").node_ids == ("a",)


def test_agent_link_out_of_a_loop_does_not_end_it() -> None:
    """An agent follows every link, so its extra link out does not stop the loop."""
    wf = flow(
        [start(), agent("a"), agent("b"), agent("side")],
        [link("s", "a"), link("a", "b"), link("b", "a"), link("b", "side")],
    )
    assert only(validate(wf), "execution_cycle_no_exit").node_ids == ("a", "b")


def test_if_whose_every_branch_loops_back_warns() -> None:
    wf = flow(
        [start(), agent("w"), if_node("i", "x")],
        [link("s", "w"), link("w", "i"), link("i", "w", "condition-0"), link("i", "w", "false")],
    )
    assert only(validate(wf), "execution_cycle_no_exit").node_ids == ("i", "w")


def test_unreachable_cycle_is_not_warned() -> None:
    wf = flow([start(), agent("a"), agent("x"), agent("y")], [link("s", "a"), link("x", "y"), link("y", "x")])
    assert "execution_cycle_no_exit" not in codes(validate(wf))


def test_loops_linked_one_to_another_are_warned_one_by_one() -> None:
    """Three loops, the last linking into the second after it is done: each is its own component."""
    wf = flow(
        [start(), agent("a"), agent("b"), agent("c"), agent("d"), agent("e"), agent("f")],
        [
            link("s", "a"),
            link("a", "b"),
            link("b", "a"),
            link("b", "c"),
            link("c", "d"),
            link("d", "c"),
            link("b", "e"),
            link("e", "f"),
            link("f", "e"),
            link("e", "c"),
        ],
    )
    loops = [i.node_ids for i in validate(wf) if i.code == "execution_cycle_no_exit"]
    assert sorted(loops) == [("a", "b"), ("c", "d"), ("e", "f")]


# ---------------------------------------------------------------------------------------
# Content warnings


def test_agent_with_empty_model_warns() -> None:
    wf = flow([start(), agent("a", model="  ")], [link("s", "a")])
    issues = validate(wf)
    issue = only(issues, "agent_no_model")
    assert (issue.severity, issue.node_ids) == (WARNING, ("a",))
    assert errors_only(issues) == []


def test_agent_with_model_does_not_warn() -> None:
    assert_clean(flow([start(), agent("a", model="llama3")], [link("s", "a")]))


def test_if_condition_with_empty_value_warns() -> None:
    wf = flow([start(), if_node("i", "yes", " "), agent("a")], [link("s", "i"), link("i", "a", "false")])
    issue = only(validate(wf), "empty_condition_value")
    assert (issue.severity, issue.node_ids) == (WARNING, ("i",))
    assert "Condition 2" in issue.message


def test_warnings_come_after_errors_and_serialise() -> None:
    wf = flow([start(), agent("a", model=""), if_node("i")], [link("s", "a"), link("a", "i")])
    issues = validate(wf)
    severities = [i.severity for i in issues]
    assert severities == sorted(severities, key=lambda s: s != ERROR)
    assert {"if_no_branch", "agent_no_model"} <= set(codes(issues))
    as_json = only(issues, "if_no_branch").to_json()
    assert as_json == {"code": "if_no_branch", "severity": "error", "nodeIds": ["i"], "message": as_json["message"]}


def test_unknown_node_type_and_duplicate_ids_are_errors() -> None:
    wf = flow([start(), agent("a"), {"id": "a", "type": "agent"}, {"id": "w", "type": "webhook"}], [link("s", "a")])
    issues = validate(wf)
    assert only(issues, "duplicate_node_id").node_ids == ("a",)
    assert only(issues, "unknown_node_type").node_ids == ("w",)


# ---------------------------------------------------------------------------------------
# Samples


@pytest.mark.parametrize("sample", sorted(SAMPLES.glob("*.flow.json")), ids=lambda p: p.name)
def test_samples_validate_clean(sample: Path) -> None:
    issues = validate(load_workflow(sample))
    if importlib.util.find_spec("pydantic_monty") is None:  # said of the code sample without the extra
        issues = [i for i in issues if i.code != "code_extra_missing"]
    assert issues == []


def test_there_are_samples() -> None:
    assert len(list(SAMPLES.glob("*.flow.json"))) >= 3


# ---------------------------------------------------------------------------------------
# check_connection


def drag_flow() -> Workflow:
    """start -> lead(subagents) -> if -> approval -> done; lead has child 'kid'; 'free' is a loose agent;
    'root' -> 'leaf' is a subagent tree not yet used by any step."""
    return flow(
        [
            start(),
            agent("lead", subagents=True),
            agent("kid", subagents=True),
            agent("other", subagents=True),
            if_node("i", "x"),
            approval("p"),
            agent("done"),
            agent("free"),
            agent("root", subagents=True),
            agent("leaf", subagents=True),
        ],
        [
            link("s", "lead"),
            sub("lead", "kid"),
            link("lead", "i"),
            link("i", "p", "condition-0"),
            link("p", "done", "approve"),
            sub("root", "leaf"),
        ],
    )


ACCEPTED = [
    ("lead", "output", "free", "input"),
    ("lead", "output", "free", None),
    ("lead", None, "free", "input"),
    ("kid", "subagent", "free", "input"),  # nested subagent chain
    ("lead", "subagent", "free", "input"),
    ("lead", "subagent", "root", "input"),  # a whole subagent tree under an agent
    ("i", "false", "done", "input"),
    ("i", "true", "free", "input"),
    ("p", "reject", "lead", "input"),  # execution cycles are allowed
    ("done", "output", "done", "input"),  # even a self loop
]

REFUSED = [
    # (source, handle, target, target handle, words in the reason)
    ("other", "subagent", "kid", "input", "already a subagent"),  # second parent
    ("done", "output", "kid", "input", "subagent"),  # execution link into a subagent
    ("kid", "output", "done", "input", "subagent"),  # execution link out of a subagent
    ("lead", "output", "s", "input", "Start"),  # into start
    ("leaf", "subagent", "root", "input", "cycle"),  # subagent cycle
    ("lead", "subagent", "lead", "input", "own subagent"),  # self link
    ("lead", "output", "i", "input", "already connected"),  # duplicate link
    ("i", "true", "p", "input", "already connected"),  # legacy twin of condition-0
    ("lead", "subagent", "kid", "input", "already linked"),  # duplicate subagent link
    ("lead", "approve", "free", "input", "approve"),  # unknown source handle
    ("i", "condition-3", "free", "input", "condition-3"),  # unknown source handle
    ("lead", "output", "free", "output", "output"),  # unknown target handle
    ("done", "subagent", "free", "input", "subagents"),  # subagents tool off
    ("lead", "subagent", "i", "input", "agent"),  # subagent target not an agent
    ("lead", "subagent", "free", "output", "input"),  # subagent must end at input
    ("lead", "subagent", "done", "input", "step of the flow"),  # target already in execution
    ("ghost", "output", "free", "input", "does not exist"),
    ("lead", "output", "ghost", "input", "does not exist"),
]


@pytest.mark.parametrize(("source", "handle", "target", "target_handle"), ACCEPTED)
def test_check_connection_accepts(source: str, handle: str | None, target: str, target_handle: str | None) -> None:
    result = check_connection(drag_flow(), source, handle, target, target_handle)
    assert result.ok and bool(result), result.reason
    assert result.reason == ""


@pytest.mark.parametrize(("source", "handle", "target", "target_handle", "words"), REFUSED)
def test_check_connection_refuses_with_reason(
    source: str, handle: str, target: str, target_handle: str, words: str
) -> None:
    result = check_connection(drag_flow(), source, handle, target, target_handle)
    assert not result.ok and not bool(result)
    assert words.lower() in result.reason.lower()


def test_check_connection_with_prebuilt_index_gives_the_same_answers() -> None:
    wf = drag_flow()
    index = GraphIndex(wf)
    for source, handle, target, target_handle, *_ in [*ACCEPTED, *REFUSED]:
        assert check_connection(index, source, handle, target, target_handle) == check_connection(
            wf, source, handle, target, target_handle
        )


def test_accepted_connections_validate_without_new_errors() -> None:
    """What check_connection accepts, validate accepts once added (the two agree)."""
    for source, handle, target, target_handle in ACCEPTED:
        wf = drag_flow()
        raw = wf.model_dump(mode="json")
        raw["connections"].append(link(source, target, handle, target_handle))
        assert errors_only(validate(parse_workflow(raw))) == [], (source, handle, target)


@pytest.mark.parametrize("twice", [link("s", "a"), link("s", "a", None, None), sub("a", "b")])
def test_duplicate_link_warns(twice: dict[str, Any]) -> None:
    """Validate warns about what check_connection refuses as a duplicate (subagent links included)."""
    base = [link("s", "a", "output", "input"), sub("a", "b")]
    wf = flow([start(), agent("a", subagents=True), agent("b")], [*base, twice])
    issue = only(validate(wf), "duplicate_connection")
    assert (issue.severity, issue.node_ids, issue.connection_index) == (WARNING, (twice["source"], twice["target"]), 2)
    assert errors_only(validate(wf)) == []
    assert_clean(flow([start(), agent("a", subagents=True), agent("b")], base))


def test_graph_index_views_built_on_first_use() -> None:
    wf = flow(
        [start(), agent("a", subagents=True), agent("b"), agent("c")],
        [link("s", "a"), link("a", "b"), sub("a", "c"), link("s", "b")],
    )
    index = GraphIndex(wf)
    assert index.exec_out == {"s": ["a", "b"], "a": ["b"]}
    assert index.exec_in == {"a": ["s"], "b": ["a", "s"]}
    assert index.exec_links_from == {"s": [wf.connections[0], wf.connections[3]], "a": [wf.connections[1]]}
    assert (index.sub_children, index.sub_parents) == ({"a": ["c"]}, {"c": ["a"]})
    assert [index.in_execution(n) for n in ("s", "a", "b", "c")] == [True, True, True, False]


def test_graph_index_exec_out_handles_normalises_legacy_true() -> None:
    """The shared adjacency by handle: (handle, handle as written, target), in file order."""
    wf = flow(
        [start(), if_node("i", "x", "y"), agent("a", subagents=True), agent("b"), agent("c")],
        [
            link("s", "i", None),
            link("i", "a", "true"),
            link("i", "b", "condition-1"),
            link("i", "a", "false"),
            sub("a", "c"),
            link("a", "b"),
        ],
    )
    assert wf.connections[1].sourceHandle == "condition-0"  # loading already renames it ...
    wf.connections[1].sourceHandle = "true"  # ... a workflow built in code may still say it
    index = GraphIndex(wf)
    assert index.exec_out_handles == {
        "s": (("output", "output", "i"),),
        "i": (("condition-0", "true", "a"), ("condition-1", "condition-1", "b"), ("false", "false", "a")),
        "a": (("output", "output", "b"),),
    }


def test_issue_order_does_not_depend_on_the_hash_seed() -> None:
    # Unbranched ifs/approvals and loops with no way out used to follow set order, which
    # changes between processes (PYTHONHASHSEED): the Problems list reordered per launch.
    import os
    import subprocess
    import sys
    from pathlib import Path

    script = (
        "import json\n"
        "from engine import parse_workflow, validate\n"
        "nodes=[{'id':'s','type':'start'}]\n"
        "links=[]\n"
        "for i in range(12):\n"
        "    nodes.append({'id':f'c{i}','type':'if' if i%2 else 'approval','data':{'conditions':[]}})\n"
        "    links.append({'source':'s','target':f'c{i}'})\n"
        "for i in range(6):\n"
        "    a,b=f'l{i}a',f'l{i}b'\n"
        "    nodes += [{'id':a,'type':'agent'},{'id':b,'type':'agent'}]\n"
        "    links += [{'source':'s','target':a},{'source':a,'target':b},{'source':b,'target':a}]\n"
        "print(json.dumps([i.to_json() for i in validate(parse_workflow({'nodes':nodes,'connections':links}))]))\n"
    )
    root = Path(__file__).resolve().parents[2]
    outs = set()
    for seed in ("0", "1", "2", "3"):
        proc = subprocess.run(
            [sys.executable, "-c", script],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)},
        )
        outs.add(proc.stdout)
    assert len(outs) == 1
    codes = [i["code"] for i in __import__("json").loads(outs.pop())]
    assert codes.count("execution_cycle_no_exit") == 6 and len([c for c in codes if c.endswith("_no_branch")]) == 12
