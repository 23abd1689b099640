"""How the editor names nodes in messages: by title (an agent's name, a node's label), never by
ids the canvas does not show. :func:`describe_issue` rewrites the validator's message (which
may quote ids) with :func:`node_labels`, which numbers duplicate titles ("Writer (1)",
"Writer (2)", left to right on the canvas). Used by the Problems list, the Run button's
tooltip and the canvas's issue badges alike."""

from __future__ import annotations

from engine import Issue, Workflow


def node_title(node) -> str:
    """What the canvas calls a node: its label if it has one, else its title (agent name)."""
    label = getattr(node.data, "label", None)
    return label.strip() if isinstance(label, str) and label.strip() else node.title


def node_labels(workflow: Workflow | None) -> dict[str, str]:
    """Node id -> the name to show the user: the node's title, numbered where titles repeat
    ("Writer (1)", "Writer (2)", in canvas order: left to right, then top to bottom)."""
    if workflow is None:
        return {}
    by_title: dict[str, list] = {}
    for node in workflow.nodes:
        by_title.setdefault(node_title(node), []).append(node)
    out: dict[str, str] = {}
    for title, nodes in by_title.items():
        if len(nodes) == 1:
            out[nodes[0].id] = title
            continue
        for i, node in enumerate(sorted(nodes, key=lambda n: (n.x, n.y)), 1):
            out[node.id] = f"{title} ({i})"
    return out


def describe_issue(issue: Issue, workflow: Workflow | None, labels: dict[str, str] | None = None) -> str:
    """The issue's message naming its nodes by their (disambiguated) titles, not their ids."""
    message = issue.message
    if workflow is None:
        return message
    labels = node_labels(workflow) if labels is None else labels
    mentioned = ambiguous = False
    for nid in dict.fromkeys(issue.node_ids):
        name = labels.get(nid)
        node = workflow.node(nid)
        if name is None or node is None:
            continue
        title = node_title(node)
        for quoted in (f"Agent '{nid}'", f"'{nid}'", f"'{node.title}'", f"'{title}'"):
            if quoted in message:
                message = message.replace(quoted, f"“{name}”", 1)
                mentioned = True
                break
        else:
            if name in message:
                mentioned = True
            elif name != title:  # a repeated title quoted bare ("Writer → Writer"): say which
                ambiguous = True
    if (ambiguous or not mentioned) and issue.node_ids:
        names = [labels[n] for n in dict.fromkeys(issue.node_ids) if n in labels]
        if names:
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            body = message.rstrip()
            end = "." if body.endswith(".") else ""
            message = f"{body.removesuffix('.')} ({shown}){end}"
    return message


def issue_tooltips(issues: list[Issue], workflow: Workflow | None) -> dict[str, tuple[str | None, str]]:
    """Each node's issues as its card shows them: node id -> (the worst severity, "error" or
    "warning"; the tooltip, one "Error: ..." or "Warning: ..." line per issue)."""
    per_node: dict[str, list[Issue]] = {}
    for issue in issues:
        for nid in issue.node_ids:
            per_node.setdefault(nid, []).append(issue)
    labels = node_labels(workflow) if per_node else {}
    return {
        nid: (
            "error" if any(i.is_error for i in mine) else "warning",
            "\n".join(f"{'Error' if i.is_error else 'Warning'}: {describe_issue(i, workflow, labels)}" for i in mine),
        )
        for nid, mine in per_node.items()
    }
