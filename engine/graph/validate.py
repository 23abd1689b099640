"""Validation of a workflow: one function for the editor's preflight and the runtime.

``validate(workflow)`` returns every :class:`Issue` (stable ``code``, ``severity``,
the node ids concerned, a message a user understands). Errors block a run; warnings
are shown but do not. ``check_connection(...)`` answers, for one link a user is
dragging, whether it would be accepted and if not why; pass it a :class:`GraphIndex`
built once at the start of the drag so each call is O(1)-ish.

Rules (docs/design.md, "Validation"):
* exactly one start node;
* connections name existing nodes and handles those nodes have;
* subagent links: agent -> agent, source has ``tools.subagents``, target handle ``input``,
  no self-link, no cycle, at most one parent, the target takes part in no execution edge;
* start has an outgoing execution edge and something is reachable from it;
* a reachable if has a condition or false branch; a reachable approval has approve or reject.

What an issue is lives in ``engine.graph.issues``; the data-flow (reference) checks in
``engine.graph.dataflow_checks``; execution cycles in ``engine.graph.cycles``.
"""

from __future__ import annotations

from collections import defaultdict

from engine.flows.cron import check_cron, schedule_of
from engine.flows.grammar import TriggerPatternError, compile_trigger, trigger_text
from engine.graph.cycles import Components, check_exec_cycles
from engine.graph.dataflow_checks import check_data_flow
from engine.graph.index import GraphIndex
from engine.graph.issues import (
    ConnectionCheck,
    Issue,
    Severity,
    errors_only,
    node_label,
    spec_of,
    subagents_on,
    tool_capable,
)
from engine.graph.legacy import LEGACY_HANDLES, current_handle
from engine.graph.model import Node, Workflow, gc_paused
from engine.nodes import COMMON_HANDLE_LABELS, SPECS, spec_for

__all__ = ["Issue", "Severity", "GraphIndex", "ConnectionCheck", "validate", "check_connection", "errors_only"]


def _valid_source_handle(node: Node, handle: str) -> bool:
    """Whether ``node`` has the output ``handle`` (the kind's spec answers; unknown kinds have none)."""
    spec = spec_of(node)
    return spec is not None and spec.has_output(node.data, handle)


def handle_label(node: Node | None, handle: str) -> str:
    if node is not None:
        spec = spec_of(node)
        if spec is not None:
            return spec.handle_label(node.data, handle)
        if handle.startswith("condition-"):
            return handle
    return COMMON_HANDLE_LABELS.get(handle, handle)


class _Checks:
    """What a spec's ``check(node, checks)`` reports to: ``error``/``warning`` for the node at hand."""

    __slots__ = ("index", "web_search_available", "_add", "node", "library", "path", "workflow_id", "workflow")

    def __init__(
        self,
        index: GraphIndex,
        web_search_available: bool | None,
        add,
        library=None,
        path=None,
        workflow_id: str | None = None,
    ) -> None:
        self.index = index
        self.web_search_available = web_search_available
        self._add = add
        self.node: Node | None = None
        # For rules that look at other flows (flow/action nodes, flows as tools): the flow
        # library (None: the user's default library), this workflow's file and library id.
        self.library = library
        self.path = path
        self.workflow_id = workflow_id
        # The workflow being checked (its ``permissions``: what its steps may reach).
        self.workflow: Workflow | None = None

    def label(self, node: Node) -> str:
        return node_label(node)

    def error(self, code: str, message: str, node_ids: tuple[str, ...] | None = None) -> None:
        self._add(Issue(code, Severity.ERROR, node_ids or (self.node.id,), message))  # type: ignore[union-attr]

    def warning(self, code: str, message: str, node_ids: tuple[str, ...] | None = None) -> None:
        self._add(Issue(code, Severity.WARNING, node_ids or (self.node.id,), message))  # type: ignore[union-attr]


def check_connection(
    workflow: Workflow | GraphIndex,
    source: str,
    source_handle: str | None,
    target: str,
    target_handle: str | None = "input",
) -> ConnectionCheck:
    """Would the link ``source.source_handle -> target.target_handle`` be accepted? If not, why."""
    index = workflow if isinstance(workflow, GraphIndex) else GraphIndex.of(workflow)
    src = index.nodes.get(source)
    tgt = index.nodes.get(target)
    if src is None:
        return ConnectionCheck(False, f"The source node '{source}' does not exist.")
    if tgt is None:
        return ConnectionCheck(False, f"The target node '{target}' does not exist.")
    sh = source_handle or "output"
    th = target_handle or "input"
    if not _valid_source_handle(src, current_handle(sh)):  # (a handle given in code may use a legacy name)
        return ConnectionCheck(False, f"{src.title} has no '{sh}' output.")
    if sh == "subagent":
        if not tool_capable(src) or not tool_capable(tgt):
            return ConnectionCheck(False, "Subagent links connect an agent to another agent.")
        if not subagents_on(src):
            return ConnectionCheck(False, f"{node_label(src)} does not have subagents turned on.")
        if th != "input":
            return ConnectionCheck(False, "A subagent link must end at the agent's input.")
        if source == target:
            return ConnectionCheck(False, "An agent cannot be its own subagent.")
        parents = index.sub_parents.get(target, [])
        if parents and source not in parents:
            other = index.nodes.get(parents[0])
            return ConnectionCheck(
                False,
                f"{node_label(tgt)} is already a subagent of {node_label(other, parents[0])}; a subagent has one parent.",
            )
        if source in parents:
            return ConnectionCheck(False, "These agents are already linked.")
        if index.in_execution(target):
            return ConnectionCheck(
                False, f"{node_label(tgt)} is a step of the flow; a subagent takes part in no execution link."
            )
        if index.sub_reaches(target, source):
            return ConnectionCheck(
                False, f"This link would make a subagent cycle ({node_label(src)} is already below {node_label(tgt)})."
            )
        return ConnectionCheck(True)
    # execution link
    tspec = spec_of(tgt)
    if tspec is None:
        return ConnectionCheck(False, f"{node_label(tgt)} is of unknown type '{tgt.type}' and takes no input.")
    if not tspec.inputs:
        return ConnectionCheck(False, tspec.no_input_message or f"{node_label(tgt)} has no input.")
    if th not in tspec.inputs:
        return ConnectionCheck(False, f"{node_label(tgt)} has no '{th}' input.")
    if index.sub_parents.get(target):
        parent = index.nodes.get(index.sub_parents[target][0])
        return ConnectionCheck(
            False,
            f"{node_label(tgt)} is a subagent of {node_label(parent, index.sub_parents[target][0])}; "
            "subagents are called as tools, not run as steps.",
        )
    if index.sub_parents.get(source):
        return ConnectionCheck(
            False, f"{node_label(src)} is a subagent; subagents are called as tools, not run as steps."
        )
    sh = current_handle(sh)
    if (source, sh, target, th) in index.keys or any(
        (source, old, target, th) in index.keys for old, new in LEGACY_HANDLES.items() if new == sh
    ):
        return ConnectionCheck(False, "These handles are already connected.")
    return ConnectionCheck(True)


def _is_entry(node: Node) -> bool:
    spec = spec_of(node)
    return spec is not None and spec.entry


def _reachable(index: GraphIndex, start: str) -> set[str]:
    """Existing nodes reachable from ``start`` along execution links (links to missing nodes skipped)."""
    seen = {start}
    stack = [start]
    out = index.exec_out
    nodes = index.nodes
    while stack:
        for nxt in out.get(stack.pop(), ()):
            if nxt not in seen and nxt in nodes:
                seen.add(nxt)
                stack.append(nxt)
    return seen


def _subagent_cycle(children: dict[str, list[str]], nodes: dict[str, Node]) -> bool:
    """Whether the subagent links between existing nodes (self-links aside) form a cycle:
    peel the nodes nothing links to until none is left (acyclic) or some remain."""
    indegree: dict[str, int] = {}
    for parent, kids in children.items():
        if parent in nodes:
            for child in kids:
                if child != parent and child in nodes:
                    indegree[child] = indegree.get(child, 0) + 1
    ready = [p for p in children if p in nodes and p not in indegree]
    while ready:
        parent = ready.pop()
        for child in children.get(parent, ()):
            if child != parent and child in indegree:
                left = indegree[child] - 1
                if left:
                    indegree[child] = left
                else:
                    del indegree[child]
                    ready.append(child)
    return bool(indegree)


def schedule_issues(workflow: Workflow) -> list[Issue]:
    """A warning when the flow's ``schedule`` cannot be used (not a cron expression, or croniter
    missing): the flow still runs by hand, but would silently never start on its own."""
    found = schedule_of(workflow)
    problem = check_cron(found[0]) if found is not None else None
    if problem is None:
        return []
    return [
        Issue("schedule_invalid", Severity.WARNING, (), f"This flow will not start on its own: {problem.rstrip('.')}.")
    ]


def trigger_issues(workflow: Workflow) -> list[Issue]:
    """Errors for malformed trigger patterns: each names the pattern and the position."""
    raw = getattr(workflow, "triggers", None)
    if raw is None:
        raw = (workflow.model_extra or {}).get("triggers")
    if raw is None:
        return []
    if not isinstance(raw, list):
        return [Issue("trigger_invalid", Severity.ERROR, (), "The workflow's triggers must be a list of patterns.")]

    out = []
    for i, item in enumerate(raw):
        pattern = trigger_text(item)
        if pattern is None:
            out.append(Issue("trigger_invalid", Severity.ERROR, (), f"Trigger {i + 1} is not a pattern (text)."))
            continue
        try:
            compile_trigger(pattern)
        except TriggerPatternError as err:
            shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."  # a 10,000-character one stays readable
            out.append(
                Issue(
                    "trigger_invalid",
                    Severity.ERROR,
                    (),
                    f"Trigger {i + 1} '{shown}' is malformed at character {err.position + 1}: {err.reason.rstrip('.')}.",
                )
            )
    return out


def validate(
    workflow: Workflow, *, web_search_available: bool | None = None, library=None, path=None, warnings: bool = True
) -> list[Issue]:
    """Every issue of ``workflow``, errors first in rule order, then warnings.

    ``web_search_available=False`` adds a warning for agents that use web search when no
    search backend is configured (``None``: not checked). ``library`` (an
    :class:`engine.FlowLibrary`; None: the user's default library) and ``path`` (the
    workflow's file) are what ``flow``/``action`` nodes and agents' ``tools.flows`` are
    resolved against (a missing flow, a flow that reaches itself, a flow offered as a tool
    that can wait for an approval).

    ``warnings=False``: the errors alone, what decides whether a run may start (``flowdesk
    run``); the passes that can only warn (data flow) are skipped: a third of the time at
    10,000 nodes.
    """
    with gc_paused():
        return _validate(workflow, web_search_available, library, path, warnings)


def _validate(
    workflow: Workflow, web_search_available: bool | None, library=None, path=None, warnings: bool = True
) -> list[Issue]:
    issues: list[Issue] = []
    add = issues.append
    E, W = Severity.ERROR, Severity.WARNING
    index = GraphIndex.of(workflow)
    nodes = index.nodes

    for dup in index.duplicate_ids:
        add(Issue("duplicate_node_id", E, (dup,), f"Two nodes share the id '{dup}'; ids must be unique."))
    for issue in trigger_issues(workflow):
        add(issue)

    # One pass over the nodes: unknown types, start nodes, node ids by role for the link
    # checks, and the content warnings (held back: they come after every other issue).
    # The kind's spec is looked up once per node; its own rules (``check``) add content issues.
    starts: list[Node] = []
    outputs: set[str] = set()  # nodes that always have an ``output`` handle
    steps: set[str] = set()  # nodes with an ``input`` handle
    choices: set[str] = set()  # nodes that follow one of their outputs (if, approval)
    content: list[Issue] = []
    checks = _Checks(index, web_search_available, content.append, library, path, getattr(workflow, "id", None))
    checks.workflow = workflow
    specs = SPECS
    for nid, n in nodes.items():
        kind = n.type
        spec = specs.get(kind) or spec_for(kind)
        if spec is None:
            add(Issue("unknown_node_type", E, (nid,), f"Node '{nid}' has an unknown type '{kind}'."))
            continue
        if spec.plain_out:
            outputs.add(nid)
        if spec.takes_input:
            steps.add(nid)
        if spec.chooses:
            choices.add(nid)
        if spec.entry:
            starts.append(n)
        if spec.has_check:
            checks.node = n
            try:
                spec.check(n, checks)
            except Exception as err:  # a plug-in's rule must not break validation
                content.append(
                    Issue("node_check_failed", W, (nid,), f"The rules of {node_label(n)} could not be checked: {err!r}")
                )

    if not starts:
        add(Issue("no_start", E, (), "The workflow has no Start node; add one where the run should begin."))
    elif len(starts) > 1:
        add(
            Issue(
                "multiple_starts",
                E,
                tuple(n.id for n in starts),
                f"The workflow has {len(starts)} Start nodes; keep exactly one.",
            )
        )

    # Connections: endpoints and handles.
    links = index._links
    # Repeated links (a warning, so listed after the errors whichever pass finds it). Only
    # when some link repeats another is the index's key set smaller than the link list, so
    # most graphs skip the search.
    if len(index.keys) < len(links):
        seen_keys: set[tuple[str, str, str, str]] = set()
        for i, key in enumerate(links):  # subagent links too: check_connection refuses both
            source, _sh, target, _th = key
            if key in seen_keys and source in nodes and target in nodes:
                add(
                    Issue(
                        "duplicate_connection",
                        W,
                        (source, target),
                        f"{node_label(nodes[source])} and {node_label(nodes[target])} are linked twice the same way.",
                        i,
                    )
                )
            seen_keys.add(key)
    # Most links go from a start or agent's output to a step's input, which breaks no rule:
    # one quick pass picks out the others, and only those go through the rules (in file
    # order, which is the order of their issues).
    to_check = [
        i
        for i, (source, sh, target, th) in enumerate(links)
        if sh != "output" or th != "input" or source not in outputs or target not in steps
    ]
    # Execution links out of if and approval nodes, as (handle, target), for the loop check;
    # and which of those nodes have a branch (a link from a handle they have).
    choice_links: dict[str, list[tuple[str, str]]] = defaultdict(list)
    branched: set[str] = set()
    for i in to_check:
        source, sh, target, th = links[i]
        src, tgt = nodes.get(source), nodes.get(target)
        if src is None:
            add(
                Issue(
                    "missing_source",
                    E,
                    tuple(x for x in (target,) if x in nodes),
                    f"Link {i + 1} starts at a node that does not exist ('{source}').",
                    i,
                )
            )
        if tgt is None:
            add(
                Issue(
                    "missing_target",
                    E,
                    tuple(x for x in (source,) if x in nodes),
                    f"Link {i + 1} ends at a node that does not exist ('{target}').",
                    i,
                )
            )
        if src is None or tgt is None:
            continue
        if sh == "subagent":
            _check_subagent_link(source, target, th, src, tgt, index, i, add)
            continue
        handle = current_handle(sh)  # (a handle set in code after loading may use a legacy name)
        valid = _valid_source_handle(src, handle)
        if source in choices:
            choice_links[source].append((handle, target))
            if valid:
                branched.add(source)
        if not valid:
            add(
                Issue(
                    "invalid_source_handle",
                    E,
                    (source,),
                    f"A link leaves {node_label(src)} from '{sh}', which that node does not have.",
                    i,
                )
            )
        tspec = specs.get(tgt.type) or spec_for(tgt.type)
        if tspec is not None and th not in tspec.inputs:
            add(
                Issue(
                    "invalid_target_handle",
                    E,
                    (target,),
                    f"A link enters {node_label(tgt)} at '{th}', which that node does not have.",
                    i,
                )
            )

    # Subagent structure: in execution, multiple parents, cycles (networkx names the nodes).
    for target, parents in index.sub_parents.items():
        if target not in nodes:
            continue
        real = [p for p in parents if p in nodes and p != target]
        if len(set(real)) > 1:
            add(
                Issue(
                    "subagent_multiple_parents",
                    E,
                    (target, *dict.fromkeys(real)),
                    f"{node_label(nodes[target])} is a subagent of {len(set(real))} agents; a subagent has one parent.",
                )
            )
        if index.in_execution(target):
            add(
                Issue(
                    "subagent_in_execution",
                    E,
                    (target,),
                    f"{node_label(nodes[target])} is a subagent but also has execution links; subagents are called "
                    "as tools, not run as steps.",
                )
            )
    if index.sub_children and _subagent_cycle(index.sub_children, nodes):
        # networkx (imported only here: the usual subagent forest has no cycle, which the
        # dict pass above tells) names one cycle per tangle.
        import networkx as nx

        g = nx.DiGraph()
        for parent, children in index.sub_children.items():
            for child in children:
                if parent != child and parent in nodes and child in nodes:
                    g.add_edge(parent, child)
        # One cycle per strongly connected component: enumerating every simple cycle is
        # exponential in a dense tangle, and one named cycle is enough to fix it.
        for comp in nx.strongly_connected_components(g):
            if len(comp) < 2:
                continue
            cycle = [u for u, _v in nx.find_cycle(g.subgraph(comp))]
            names = " → ".join(nodes[n].title for n in (*cycle, cycle[0]))
            add(Issue("subagent_cycle", E, tuple(cycle), f"Subagent links form a cycle: {names}."))

    # Reachability from start
    components = Components(index)  # the execution cycles', for the data-flow checks
    if len(starts) == 1:
        start = starts[0]
        if not index.exec_out.get(start.id):
            add(
                Issue(
                    "start_no_output", E, (start.id,), "Start is not connected to anything; link it to the first step."
                )
            )
            reachable = {start.id}
        else:
            reachable = _reachable(index, start.id)
            if len(reachable) == 1:
                add(Issue("nothing_reachable", E, (start.id,), "Nothing can be reached from Start."))
        # In file order (not the reachable set's, which changes with the hash seed per process).
        for nid in [nid for nid in nodes if nid in choices and nid not in branched and nid in reachable]:
            n = nodes[nid]
            code, message = spec_of(n).no_branch  # type: ignore[union-attr]
            add(Issue(code, E, (nid,), message.format(label=node_label(n))))
        components = Components(index, check_exec_cycles(index, reachable, choice_links, add), reachable)
        unreachable = [
            nid
            for nid, n in nodes.items()
            if nid not in reachable and not index.sub_parents.get(nid) and not _is_entry(n)
        ]
        if unreachable and len(reachable) > 1:
            add(
                Issue(
                    "unreachable",
                    W,
                    tuple(unreachable),
                    f"{len(unreachable)} node{'s are' if len(unreachable) > 1 else ' is'} not reachable from Start "
                    "and will not run.",
                )
            )

    if warnings:
        check_data_flow(index, content.append, components)
        content.extend(schedule_issues(workflow))
    # A kind's own rule may say what a graph rule said already (a loop with no branch at all:
    # "no Body branch" from both): each problem is listed, and counted, once.
    said = {(i.code, i.node_ids) for i in issues}
    issues += [i for i in content if (i.code, i.node_ids) not in said]
    issues.sort(key=lambda x: x.severity != Severity.ERROR)
    return issues if warnings else [i for i in issues if i.is_error]


def _check_subagent_link(
    source: str, target: str, th: str, src: Node, tgt: Node, index: GraphIndex, i: int, add
) -> None:
    E = Severity.ERROR
    if not tool_capable(src) or not tool_capable(tgt):
        add(
            Issue(
                "subagent_not_agent",
                E,
                (source, target),
                f"A subagent link joins {node_label(src)} to {node_label(tgt)}; both ends must be agents.",
                i,
            )
        )
        return
    if not subagents_on(src):
        add(
            Issue(
                "subagent_tools_off",
                E,
                (source,),
                f"{node_label(src)} has a subagent link but its subagents tool is off.",
                i,
            )
        )
    if th != "input":
        add(
            Issue(
                "subagent_target_handle",
                E,
                (target,),
                f"A subagent link enters {node_label(tgt)} at '{th}'; it must end at the input.",
                i,
            )
        )
    if source == target:
        add(Issue("subagent_self_link", E, (source,), f"{node_label(src)} is linked as its own subagent.", i))
