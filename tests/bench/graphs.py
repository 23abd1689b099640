"""Deterministic large workflows for the benchmarks.

``big_graph()`` is the 10,000-node graph of the performance issue: 9,500 execution
nodes (agents, conditions, approvals) joined by 15,000 execution links, plus a
500-agent subagent forest hanging under agents that have subagents turned on.
"""

from __future__ import annotations

import random
from typing import Any


def big_graph_dict(n_exec: int = 9_500, n_links: int = 15_000, n_sub: int = 500, seed: int = 7) -> dict[str, Any]:
    rnd = random.Random(seed)
    nodes: list[dict[str, Any]] = [{"id": "start", "type": "start", "x": 0, "y": 0, "data": {"initialInput": "go"}}]
    kinds: list[str] = ["start"]
    for i in range(1, n_exec):
        r = rnd.random()
        kind = "if" if r < 0.1 else "approval" if r < 0.13 else "agent"
        x, y = (i % 100) * 320, (i // 100) * 200
        if kind == "agent":
            data: dict[str, Any] = {
                "agentName": f"Agent {i}",
                "systemPrompt": "You help.",
                "userPrompt": "{{PREVIOUS_OUTPUT}}",
                "model": "gpt-4o-mini",
                "reasoningEffort": "low",
                "tools": {"web_search": False, "subagents": False},
            }
        elif kind == "if":
            data = {"conditions": [{"operator": "contains", "value": "yes"}, {"operator": "equal", "value": "no"}]}
        else:
            data = {"prompt": f"Approve step {i}?"}
        nodes.append({"id": f"n{i}", "type": kind, "x": x, "y": y, "data": data})
        kinds.append(kind)
    ids = [n["id"] for n in nodes]

    def handle(i: int) -> str:
        k = kinds[i]
        if k == "if":
            return rnd.choice(["condition-0", "condition-1", "false"])
        if k == "approval":
            return rnd.choice(["approve", "reject"])
        return "output"

    conns: list[dict[str, Any]] = []
    seen: set[tuple[str, str, str]] = set()
    for i in range(n_exec - 1):  # a spine so everything is reachable
        h = "condition-0" if kinds[i] == "if" else "approve" if kinds[i] == "approval" else "output"
        conns.append({"source": ids[i], "target": ids[i + 1], "sourceHandle": h, "targetHandle": "input"})
        seen.add((ids[i], h, ids[i + 1]))
    while len(conns) < n_links:
        a = rnd.randrange(0, n_exec - 1)
        b = rnd.randrange(max(1, a - 50), min(n_exec, a + 200))
        if a == b:
            continue
        h = handle(a)
        key = (ids[a], h, ids[b])
        if key in seen:
            continue
        seen.add(key)
        conns.append({"source": ids[a], "target": ids[b], "sourceHandle": h, "targetHandle": "input"})
    # Subagent forest: 50 parents (existing agents) with trees of 10 subagents each.
    parents = [i for i in range(1, n_exec) if kinds[i] == "agent"][:: max(1, n_exec // 60)][:50]
    sub_id = 0
    for p in parents:
        nodes[p]["data"]["tools"]["subagents"] = True
        tree: list[str] = [ids[p]]
        for _ in range(n_sub // len(parents)):
            sid = f"sub{sub_id}"
            sub_id += 1
            parent = rnd.choice(tree)
            nodes.append(
                {
                    "id": sid,
                    "type": "agent",
                    "x": 0,
                    "y": 0,
                    "data": {
                        "agentName": f"Sub {sid}",
                        "systemPrompt": "Helper.",
                        "userPrompt": "",
                        "model": "m",
                        "reasoningEffort": "low",
                        "tools": {"web_search": False, "subagents": True},
                    },
                }
            )
            conns.append({"source": parent, "target": sid, "sourceHandle": "subagent", "targetHandle": "input"})
            tree.append(sid)
    return {"name": "Big graph", "version": 1, "nodes": nodes, "connections": conns}
