"""Problems name nodes by the titles the canvas shows, numbering duplicates, never by ids;
so does the Run button's tooltip when an error keeps it disabled."""

from __future__ import annotations

from editor.panels.problems import describe_issue, node_labels
from engine import Workflow, validate

from .conftest import agent, flow, link, open_flow, start, write_flow

IDS = ("n7", "n9", "a3", "ap1")


def graph() -> dict:
    nodes = [
        start(),
        agent("n7", 200, 0, "Writer", subagents=True),
        agent("n9", 400, 0, "Writer"),
        {
            "id": "a3",
            "type": "agent",
            "x": 600,
            "y": 0,
            "data": {"agentName": "", "model": "gpt-4o-mini", "tools": {"subagents": True}},
        },
        {"id": "ap1", "type": "approval", "x": 800, "y": 0, "data": {"prompt": "ok?"}},
    ]
    # Writer (1) has subagents on but none linked; n9 -> ap1 leaves the approval with no branch;
    # the unnamed agent (subagents on, none linked) is unreachable; a link enters the Start node
    # (an error) and makes a loop of Writer → Writer → Start.
    return flow(nodes, [link("start", "n7"), link("n7", "n9"), link("n9", "ap1"), link("n9", "start")])


def test_duplicate_titles_are_numbered_in_canvas_order():
    wf = Workflow.model_validate(graph())
    labels = node_labels(wf)
    assert labels["n7"] == "Writer (1)" and labels["n9"] == "Writer (2)"
    assert labels["a3"] == "Agent" and labels["ap1"] == "Approval" and labels["start"] == "Start"


def test_problems_and_the_run_tooltip_use_titles_not_ids(qtbot, window, tmp_path):
    data = graph()
    wf = Workflow.model_validate(data)
    issues = validate(wf)
    assert any("a3" in i.message for i in issues)  # the validator quotes an id the user cannot see
    for issue in issues:
        text = describe_issue(issue, wf)
        assert not any(f"'{nid}'" in text for nid in IDS), text
        if issue.code == "execution_cycle_no_exit":
            assert "Writer (1)" in text and "Writer (2)" in text, text
    open_flow(window, write_flow(tmp_path, data))
    window.validation.run_validation()
    texts = [window.problems.list.item(i).text() for i in range(window.problems.list.count())]
    assert texts and not any(f"'{nid}'" in t for t in texts for nid in IDS), texts
    assert any("Writer (1)" in t for t in texts), texts
    assert any("“Agent”" in t for t in texts), texts
    tip = window.act_run.toolTip()
    assert tip.startswith("Cannot run:") and not any(f"'{nid}'" in tip for nid in IDS), tip


def test_the_run_tooltip_names_the_shortcut_the_menu_shows(qtbot, window, tmp_path):
    open_flow(window, write_flow(tmp_path, flow([start(), agent("a", 200, 0, "A")], [link("start", "a")])))
    window.validation.run_validation()
    assert window.act_run.isEnabled()
    assert "F5" in window.act_run.toolTip() and "Ctrl+R" not in window.act_run.toolTip()
    assert window.act_run.shortcut().toString() == "F5"


def test_the_canvas_badges_name_nodes_by_title_too(qtbot, window, tmp_path):
    open_flow(window, write_flow(tmp_path, graph()))
    window.validation.run_validation()
    texts = [item.issue_text for item in window.scene.node_items.values() if item.issue_text]
    assert texts and not any(f"'{nid}'" in t for t in texts for nid in IDS), texts
