"""Comparing two runs (``flowdesk diff A B``, the history's compare view): no Qt.

:func:`diff_workflows` names the nodes added, removed and changed (which data fields) between
two workflows; :func:`word_diff` is a word-level difference of two texts as a list of
``(op, text)`` pieces (``equal``/``insert``/``delete``) that a view renders; :func:`diff_runs`
puts both together for two stored runs, with per node each run's status, output, duration,
tokens and cost (from :class:`engine.RunState`, the one reducer every view reads).
"""

from __future__ import annotations

import difflib
import re
from typing import Any

from engine.graph.model import Workflow
from engine.run.costs import format_cost, readable_prices, run_costs
from engine.run.events import format_duration
from engine.run.state import RunState

__all__ = ["diff_workflows", "word_diff", "diff_runs", "diff_states", "format_diff", "run_usage"]

_TOKEN = re.compile(r"\s+|[^\s]+")
_DISPLAY_ONLY = frozenset({"collapsed"})


def word_diff(a: str | None, b: str | None) -> list[tuple[str, str]]:
    """``a`` → ``b`` word by word: ``[(op, text)]`` with op ``equal``, ``delete`` or ``insert``
    (whitespace kept, so joining the equal and insert pieces gives ``b``)."""
    wa, wb = _TOKEN.findall(a or ""), _TOKEN.findall(b or "")
    out: list[tuple[str, str]] = []
    matcher = difflib.SequenceMatcher(None, wa, wb, autojunk=False)
    for opcode, i1, i2, j1, j2 in matcher.get_opcodes():
        op: str = opcode
        if op == "equal":
            out.append(("equal", "".join(wa[i1:i2])))
            continue
        if op in ("delete", "replace"):
            out.append(("delete", "".join(wa[i1:i2])))
        if op in ("insert", "replace"):
            out.append(("insert", "".join(wb[j1:j2])))
    merged: list[tuple[str, str]] = []
    for op, text in out:
        if not text:
            continue
        if merged and merged[-1][0] == op:
            merged[-1] = (op, merged[-1][1] + text)
        else:
            merged.append((op, text))
    return merged


def _node_data(node: Any) -> dict[str, Any]:
    return {k: v for k, v in node.data.model_dump(mode="json").items() if k not in _DISPLAY_ONLY}


def diff_workflows(a: Workflow, b: Workflow) -> dict[str, Any]:
    """``{added, removed, changed: {node id: [field, ...]}, linksAdded, linksRemoved}`` from a to b."""
    na, nb = {n.id: n for n in a.nodes}, {n.id: n for n in b.nodes}
    changed: dict[str, list[str]] = {}
    for nid in na.keys() & nb.keys():
        x, y = na[nid], nb[nid]
        da, db = _node_data(x), _node_data(y)
        fields = sorted(k for k in da.keys() | db.keys() if da.get(k) != db.get(k))
        if x.type != y.type:
            fields.insert(0, "type")
        if fields:
            changed[nid] = fields
    la = {(c.source, c.sourceHandle or "output", c.target) for c in a.connections}
    lb = {(c.source, c.sourceHandle or "output", c.target) for c in b.connections}
    return {
        "added": sorted(nb.keys() - na.keys()),
        "removed": sorted(na.keys() - nb.keys()),
        "changed": dict(sorted(changed.items())),
        "linksAdded": [list(x) for x in sorted(lb - la)],
        "linksRemoved": [list(x) for x in sorted(la - lb)],
    }


def _tokens(usage: dict[str, Any] | None) -> dict[str, int] | None:
    if not usage:
        return None
    p, c = usage.get("prompt_tokens"), usage.get("completion_tokens")
    return {"prompt": p if isinstance(p, int) else 0, "completion": c if isinstance(c, int) else 0}


def run_usage(state: RunState) -> dict[str, int]:
    """The run's token totals ``{"prompt", "completion", "total"}`` (every call each node made:
    a loop's iterations, subagent calls and the flows it ran included)."""
    p = c = 0
    nested = [d for child in state.children.values() for d in child.details.values()]  # flows it ran
    for d in [*state.details.values(), *nested]:
        t = _tokens(d.total_usage or d.usage)
        if t:
            p += t["prompt"]
            c += t["completion"]
    return {"prompt": p, "completion": c, "total": p + c}


def _node_side(state: RunState, nid: str) -> dict[str, Any]:
    d = state.details.get(nid)
    return {
        "status": state.state_of(nid),
        "output": d.output if d else None,
        "duration": d.duration if d else None,
        "tokens": _tokens(d.total_usage or d.usage) if d else None,
        "cachedFrom": d.cached_from if d else None,
    }


def diff_states(wa: Workflow, sa: RunState, wb: Workflow, sb: RunState) -> dict[str, Any]:
    """The comparison of two runs given their workflows and reduced states."""
    workflow = diff_workflows(wa, wb)
    order: list[str] = [n.id for n in wa.nodes]
    order += [n.id for n in wb.nodes if n.id not in set(order)]
    titles = {n.id: n.title for n in wa.nodes}
    titles.update({n.id: n.title for n in wb.nodes})
    nodes: list[dict[str, Any]] = []
    for nid in order:
        a, b = _node_side(sa, nid), _node_side(sb, nid)
        same = a["output"] == b["output"]
        nodes.append(
            {
                "nodeId": nid,
                "title": titles.get(nid, nid),
                "a": a,
                "b": b,
                "changed": nid in workflow["changed"] or nid in workflow["added"] or nid in workflow["removed"],
                "outputChanged": not same,
                "outputDiff": [] if same else [list(p) for p in word_diff(a["output"], b["output"])],
            }
        )

    prices = readable_prices()
    ca, cb = run_costs(sa, wa, prices), run_costs(sb, wb, prices)
    for n in nodes:
        n["a"]["cost"] = (ca["nodes"].get(n["nodeId"]) or {}).get("cost")
        n["b"]["cost"] = (cb["nodes"].get(n["nodeId"]) or {}).get("cost")
    return {
        "workflow": workflow,
        "nodes": nodes,
        "totals": {
            "a": {"status": str(sa.status), "tokens": run_usage(sa), "cost": ca["total"]["cost"]},
            "b": {"status": str(sb.status), "tokens": run_usage(sb), "cost": cb["total"]["cost"]},
        },
    }


def diff_runs(store: Any, run_a: str, run_b: str) -> dict[str, Any]:
    """The comparison of two stored runs (``flowdesk diff --json``)."""
    out: dict[str, Any] = {"a": run_a, "b": run_b}
    wa, wb = store.workflow_of(run_a), store.workflow_of(run_b)
    sa = RunState.of(wa, store.iter_events(run_a))
    sb = RunState.of(wb, store.iter_events(run_b))
    out.update(diff_states(wa, sa, wb, sb))
    for side, rid in (("a", run_a), ("b", run_b)):
        info = store.get_run(rid)
        if info is not None:
            out["totals"][side]["duration"] = info.duration
    return out


def _fmt_side(s: dict[str, Any]) -> str:
    dur = format_duration(s["duration"] if isinstance(s.get("duration"), (int, float)) else None, "-")
    tok = s.get("tokens")
    return f"{s['status']}, {dur}" + (f", {tok['prompt'] + tok['completion']} tok" if tok else "")


def format_diff(result: dict[str, Any]) -> str:
    """A readable comparison: workflow changes, then per node status/duration/tokens and the output diff."""
    lines = [f"runs {result['a'][:12]} → {result['b'][:12]}"]
    wf = result["workflow"]
    for label, key in (("added", "added"), ("removed", "removed")):
        if wf[key]:
            lines.append(f"nodes {label}: {', '.join(wf[key])}")
    for nid, fields in wf["changed"].items():
        lines.append(f"node {nid} changed: {', '.join(fields)}")
    if not (wf["added"] or wf["removed"] or wf["changed"] or wf["linksAdded"] or wf["linksRemoved"]):
        lines.append("workflow unchanged")
    for n in result["nodes"]:
        mark = "*" if n["changed"] else " "
        lines.append(f"{mark} {n['title']} [{n['nodeId']}]: {_fmt_side(n['a'])}  →  {_fmt_side(n['b'])}")
        if n["outputChanged"]:
            text = "".join(
                t if op == "equal" else (f"[-{t}-]" if op == "delete" else f"{{+{t}+}}") for op, t in n["outputDiff"]
            )
            lines.append("    " + text.replace("\n", "\n    "))
    ta, tb = result["totals"]["a"], result["totals"]["b"]

    lines.append(
        f"tokens: {ta['tokens']['total']} → {tb['tokens']['total']}; "
        f"cost: {format_cost(ta.get('cost'))} → {format_cost(tb.get('cost'))}"
    )
    return "\n".join(lines)
