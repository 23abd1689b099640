"""The graph index is built once per workflow, kept on it, and rebuilt when its links change.

``GraphIndex.of(workflow)`` is what validation, the run-state reducer and re-running use; a
kept index must never describe a workflow whose nodes or links were added, removed,
reordered or replaced since (the editor's document edits that way).
"""

from __future__ import annotations

import copy
import json
import pickle
import subprocess
import sys

from engine import Connection, GraphIndex, Node, validate
from tests.engine.test_validate import agent, flow, if_node, link, start, sub


def _wf():
    return flow(
        [start(), if_node("i", "x", "y"), agent("a", subagents=True), agent("b"), agent("c")],
        [
            link("s", "i", None),
            link("i", "a", "condition-0"),
            link("i", "b", "condition-1"),
            link("i", "a", "false"),
            sub("a", "c"),
            link("a", "b"),
        ],
    )


def test_the_index_is_built_once_and_kept_on_the_workflow() -> None:
    wf = _wf()
    index = GraphIndex.of(wf)
    assert GraphIndex.of(wf) is index and index.workflow is wf
    validate(wf)
    assert GraphIndex.of(wf) is index  # validation used the same one


def test_an_edit_of_nodes_or_links_makes_a_new_index() -> None:
    wf = _wf()
    first = GraphIndex.of(wf)
    wf.connections.append(Connection(source="b", target="c"))
    second = GraphIndex.of(wf)
    assert second is not first and second.exec_out["b"] == ["c"]
    wf.connections[-1] = Connection(source="b", target="a")  # replaced in place, same length
    third = GraphIndex.of(wf)
    assert third is not second and third.exec_out["b"] == ["a"]
    wf.connections[:] = list(reversed(wf.connections))  # reordered
    assert GraphIndex.of(wf) is not third
    wf.nodes.append(Node(id="d", type="agent"))
    assert "d" in GraphIndex.of(wf).nodes
    del wf.nodes[-1]
    assert "d" not in GraphIndex.of(wf).nodes


def test_copies_do_not_share_the_index() -> None:
    wf = _wf()
    index = GraphIndex.of(wf)
    for other in (wf.model_copy(), wf.model_copy(deep=True), copy.deepcopy(wf), pickle.loads(pickle.dumps(wf))):
        assert GraphIndex.of(other) is not index and GraphIndex.of(other).workflow is other
    assert GraphIndex.of(wf) is index
    assert "_graph_index" not in json.loads(wf.model_dump_json())


def test_the_views_the_runtime_and_the_reducer_read() -> None:
    index = GraphIndex.of(_wf())
    assert index.steps_out == {
        "s": (("output", "i"),),
        "i": (("condition-0", "a"), ("condition-1", "b"), ("false", "a")),
        "a": (("output", "b"),),
    }
    assert index.links_by_handle[("i", "condition-1")] == (("i", "condition-1", "b"),)
    assert index.links_into["a"] == (("i", "condition-0", "a"), ("i", "false", "a"))
    assert index.subagent_pairs == {("a", "c")}
    assert index.downstream(["a"]) == {"a", "b"}
    assert index.downstream(["s"]) == {"s", "i", "a", "b"}


def test_importing_the_engine_loads_no_submodule() -> None:
    """``import engine`` is cheap: every public name is loaded on first use."""
    code = "import sys, engine; print(sorted(m for m in sys.modules if m.startswith('engine')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['engine', 'engine.errors']"


def test_the_model_loads_a_kind_only_when_a_node_of_it_is_read() -> None:
    """The registry names the built-in kinds; the model finds a data class through it."""
    code = (
        "import sys, engine.graph.model as m\n"
        "kinds = lambda: sorted(k for k in sys.modules\n"
        "                       if k.startswith('engine.nodes.') and k != 'engine.nodes.base')\n"
        "print(kinds())\n"
        "m.parse_workflow({'nodes': [{'id': 's', 'type': 'start'}], 'connections': []})\n"
        "print(kinds())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[:2] == ["[]", "['engine.nodes.start']"]


def test_validating_and_exporting_an_agent_load_none_of_the_run_layer() -> None:
    """The agent kind's declaration (engine/nodes/agent.py) is all that loading, validating
    and exporting an agent node need: its step (agent_step.py), the providers' tool loop and
    HTTP client, MCP and the flow library stay unloaded until a run or a tool check needs them."""
    code = (
        "import sys\n"
        "from engine import export_anythingllm, parse_workflow, validate\n"
        "wf = parse_workflow({'nodes': [{'id': 's', 'type': 'start'},\n"
        "                               {'id': 'a', 'type': 'agent', 'data': {'model': 'm', 'userPrompt': 'hi'}}],\n"
        "                     'connections': [{'source': 's', 'target': 'a'}]})\n"
        "assert validate(wf) == [], validate(wf)\n"
        "export_anythingllm(wf)\n"
        "run_layer = ('asyncio', 'httpx', 'engine.nodes.agent_step', 'engine.nodes.agent_tools',\n"
        "             'engine.flows.library', 'engine.mcp.calls', 'engine.llm.tools', 'engine.run.events')\n"
        "print(sorted(m for m in run_layer if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
