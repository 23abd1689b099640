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
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from engine.flows.grammar import TriggerPatternError, compile_trigger, trigger_text
from engine.graph.index import GraphIndex
from engine.graph.model import LEGACY_HANDLES, Node, Workflow, current_handle, gc_paused, source_handles
from engine.graph.templates import TEMPLATE_BUILTINS, find_references
from engine.nodes import COMMON_HANDLE_LABELS, SPECS, NodeSpec, spec_for

__all__ = ["Issue", "Severity", "GraphIndex", "ConnectionCheck", "validate", "check_connection", "errors_only"]


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


@dataclass(frozen=True, slots=True)
class Issue:
    code: str
    severity: Severity
    node_ids: tuple[str, ...]
    message: str
    connection_index: int | None = None

    @property
    def is_error(self) -> bool:
        return self.severity == Severity.ERROR

    def to_json(self) -> dict:
        out: dict[str, Any] = {
            "code": self.code,
            "severity": str(self.severity),
            "nodeIds": list(self.node_ids),
            "message": self.message,
        }
        if self.connection_index is not None:
            out["connectionIndex"] = self.connection_index
        return out


@dataclass(frozen=True, slots=True)
class ConnectionCheck:
    ok: bool
    reason: str = ""

    def __bool__(self) -> bool:
        return self.ok


def _spec(node: Node) -> NodeSpec | None:
    return SPECS.get(node.type) or spec_for(node.type)


def _label(node: Node | None, node_id: str = "") -> str:
    if node is None:
        return f"'{node_id}'"
    spec = _spec(node)
    return spec.describe(node) if spec is not None else f"'{node.title}'"


def _valid_source_handle(node: Node, handle: str) -> bool:
    """Whether ``node`` has the output ``handle`` (the kind's spec answers; unknown kinds have none)."""
    spec = _spec(node)
    return spec is not None and spec.has_output(node.data, handle)


def _subagents_on(node: Node) -> bool:
    spec = _spec(node)
    return spec is not None and spec.subagents_on(node.data)


def _tool_capable(node: Node) -> bool:
    spec = _spec(node)
    return spec is not None and spec.tool_capable


def handle_label(node: Node | None, handle: str) -> str:
    if node is not None:
        spec = _spec(node)
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
        return _label(node)

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
        if not _tool_capable(src) or not _tool_capable(tgt):
            return ConnectionCheck(False, "Subagent links connect an agent to another agent.")
        if not _subagents_on(src):
            return ConnectionCheck(False, f"{_label(src)} does not have subagents turned on.")
        if th != "input":
            return ConnectionCheck(False, "A subagent link must end at the agent's input.")
        if source == target:
            return ConnectionCheck(False, "An agent cannot be its own subagent.")
        parents = index.sub_parents.get(target, [])
        if parents and source not in parents:
            other = index.nodes.get(parents[0])
            return ConnectionCheck(
                False, f"{_label(tgt)} is already a subagent of {_label(other, parents[0])}; a subagent has one parent."
            )
        if source in parents:
            return ConnectionCheck(False, "These agents are already linked.")
        if index.in_execution(target):
            return ConnectionCheck(
                False, f"{_label(tgt)} is a step of the flow; a subagent takes part in no execution link."
            )
        if index.sub_reaches(target, source):
            return ConnectionCheck(
                False, f"This link would make a subagent cycle ({_label(src)} is already below {_label(tgt)})."
            )
        return ConnectionCheck(True)
    # execution link
    tspec = _spec(tgt)
    if tspec is None:
        return ConnectionCheck(False, f"{_label(tgt)} is of unknown type '{tgt.type}' and takes no input.")
    if not tspec.inputs:
        return ConnectionCheck(False, tspec.no_input_message or f"{_label(tgt)} has no input.")
    if th not in tspec.inputs:
        return ConnectionCheck(False, f"{_label(tgt)} has no '{th}' input.")
    if index.sub_parents.get(target):
        parent = index.nodes.get(index.sub_parents[target][0])
        return ConnectionCheck(
            False,
            f"{_label(tgt)} is a subagent of {_label(parent, index.sub_parents[target][0])}; "
            "subagents are called as tools, not run as steps.",
        )
    if index.sub_parents.get(source):
        return ConnectionCheck(False, f"{_label(src)} is a subagent; subagents are called as tools, not run as steps.")
    sh = current_handle(sh)
    if (source, sh, target, th) in index.keys or any(
        (source, old, target, th) in index.keys for old, new in LEGACY_HANDLES.items() if new == sh
    ):
        return ConnectionCheck(False, "These handles are already connected.")
    return ConnectionCheck(True)


def _is_entry(node: Node) -> bool:
    spec = _spec(node)
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


def validate(workflow: Workflow, *, web_search_available: bool | None = None, library=None, path=None) -> list[Issue]:
    """Every issue of ``workflow``, errors first in rule order, then warnings.

    ``web_search_available=False`` adds a warning for agents that use web search when no
    search backend is configured (``None``: not checked). ``library`` (an
    :class:`engine.FlowLibrary`; None: the user's default library) and ``path`` (the
    workflow's file) are what ``flow``/``action`` nodes and agents' ``tools.flows`` are
    resolved against (a missing flow, a flow that reaches itself, a flow offered as a tool
    that can wait for an approval).
    """
    with gc_paused():
        return _validate(workflow, web_search_available, library, path)


def _validate(workflow: Workflow, web_search_available: bool | None, library=None, path=None) -> list[Issue]:
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
                    Issue("node_check_failed", W, (nid,), f"The rules of {_label(n)} could not be checked: {err!r}")
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
                        f"{_label(nodes[source])} and {_label(nodes[target])} are linked twice the same way.",
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
                    f"A link leaves {_label(src)} from '{sh}', which that node does not have.",
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
                    f"A link enters {_label(tgt)} at '{th}', which that node does not have.",
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
                    f"{_label(nodes[target])} is a subagent of {len(set(real))} agents; a subagent has one parent.",
                )
            )
        if index.in_execution(target):
            add(
                Issue(
                    "subagent_in_execution",
                    E,
                    (target,),
                    f"{_label(nodes[target])} is a subagent but also has execution links; subagents are called "
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
    components = _Components(index)  # the execution cycles', for the data-flow checks
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
            code, message = _spec(n).no_branch  # type: ignore[union-attr]
            add(Issue(code, E, (nid,), message.format(label=_label(n))))
        components = _Components(index, _check_exec_cycles(index, reachable, choice_links, add), reachable)
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

    _check_data_flow(index, content.append, components)
    # A kind's own rule may say what a graph rule said already (a loop with no branch at all:
    # "no Body branch" from both): each problem is listed, and counted, once.
    said = {(i.code, i.node_ids) for i in issues}
    issues += [i for i in content if (i.code, i.node_ids) not in said]
    issues.sort(key=lambda x: x.severity != Severity.ERROR)
    return issues


@lru_cache(maxsize=4096)
def _references(text: str) -> tuple[Any, ...]:
    """The template references in ``text``, by text: node data repeats the same few prompts
    ("{{PREVIOUS_OUTPUT}}") across thousands of nodes, validated after every edit."""
    return tuple(find_references(text))


#: Nesting depth after which the walk of node data goes on with an explicit stack (pasted
#: JSON can be nested deeper than the interpreter's recursion limit).
_DEEP = 100


def _strings_into(value: Any, where: tuple[Any, ...], out: list, depth: int, tag: Any) -> None:
    """Append ``(tag, field path, text)`` to ``out`` for every string in ``value`` (node data:
    models read through their ``__dict__``, cheaper than dumping each node's data on every
    validation; dicts, lists, tuples) that may hold a reference, a ``{{`` or a ``${``.

    Order (the order of the warnings): a container's members last to first (a model's
    fields, then its extra fields), each member's own strings before the next member's.
    Past ``_DEEP`` levels the walk goes on with an explicit stack, in the same order."""
    if isinstance(value, BaseModel):
        fields = value.__dict__
        extra = value.__pydantic_extra__
        if extra:
            fields = {**fields, **extra}
        members: Iterable[tuple[Any, Any]] = reversed(fields.items())
    elif isinstance(value, dict):
        members = reversed(value.items())
    elif isinstance(value, (list, tuple)):
        members = zip(range(len(value) - 1, -1, -1), reversed(value))
    else:
        return
    for k, x in members:
        if x is None:
            continue
        cls = x.__class__
        if cls is str:
            # C-level tests: most strings hold no brace at all
            if "{" in x and ("{{" in x or "${" in x):
                out.append((tag, (*where, k), x))
        elif cls is bool or cls is int or cls is float:
            continue
        elif isinstance(x, str):
            if "{{" in x or "${" in x:
                out.append((tag, (*where, k), x))
        elif depth < _DEEP:
            _strings_into(x, (*where, k), out, depth + 1, tag)
        else:
            _strings_deep(x, (*where, k), out, tag)


def _strings_deep(value: Any, where: tuple[Any, ...], out: list, tag: Any) -> None:
    """:func:`_strings_into` with an explicit stack instead of recursion (same order)."""
    stack: list[tuple[tuple[Any, ...], Any]] = [(where, value)]
    while stack:
        where, v = stack.pop()
        if isinstance(v, str):
            if "{{" in v or "${" in v:
                out.append((tag, where, v))
            continue
        if isinstance(v, BaseModel):
            fields = v.__dict__
            extra = v.__pydantic_extra__
            if extra:
                fields = {**fields, **extra}
            stack.extend(((*where, k), x) for k, x in fields.items() if x is not None and x.__class__ is not bool)
        elif isinstance(v, dict):
            stack.extend(((*where, k), x) for k, x in v.items())
        elif isinstance(v, (list, tuple)):
            stack.extend(((*where, i), x) for i, x in enumerate(v))


@lru_cache(maxsize=256)
def _class_has_variables(cls: type) -> bool:
    """Whether a data class answers ``variables`` itself (a property, say), asked once per class."""
    return hasattr(cls, "variables")


def _check_data_flow(index: GraphIndex, add, components: _Components) -> None:
    """Data-flow warnings (docs/design.md, "Data flow", "More node kinds"): a reference to a name that
    is neither a declared variable, an ``outputVar`` nor a built-in; a node other than a join or a
    loop that several branches lead into; a loop body that never returns to its loop.

    One pass over the nodes reads each node's data once (names declared, strings that may hold
    references, loops); the cycle components come from the pass that found the execution cycles."""
    W = Severity.WARNING
    nodes = index.nodes
    known: set[str] = set(TEMPLATE_BUILTINS)
    found: list[tuple[str, tuple[Any, ...], str]] = []  # (node id, field path, text that may hold references)
    add_found = found.append
    loops: list[tuple[str, Node]] = []
    has_variables = _class_has_variables
    plain_classes: set[type] = set()  # data classes with no ``variables`` of their own
    for nid, n in nodes.items():
        data = n.data
        output_var = data.outputVar
        if output_var:
            known.add(output_var)
        fields = data.__dict__
        extra = data.__pydantic_extra__
        # getattr(data, "variables", None) without pydantic's slow miss path on the many data
        # classes that have no such field
        declared = fields.get("variables")
        if declared is None:
            if extra:
                declared = extra.get("variables")
            if declared is None:
                cls = data.__class__
                if cls not in plain_classes:
                    if has_variables(cls):
                        declared = getattr(data, "variables", None)
                    else:
                        plain_classes.add(cls)
        if declared:
            for var in declared:
                name = getattr(var, "name", "")
                if name:
                    known.add(name)
        # The data's own fields, read as _strings_into reads them (inlined: this runs for
        # every node; strings with no "{" cost one C-level test); nested values go through it.
        if extra:
            fields = {**fields, **extra}
        for k, x in reversed(fields.items()):
            if x is None:
                continue
            cls = x.__class__
            if cls is str:
                if "{" in x and ("{{" in x or "${" in x):
                    add_found((nid, (k,), x))
            elif cls is bool or cls is int or cls is float:
                continue
            elif isinstance(x, str):
                if "{{" in x or "${" in x:
                    add_found((nid, (k,), x))
            else:
                _strings_into(x, (k,), found, 1, nid)
        if n.type == "loop":
            loops.append((nid, n))
    unknown_in: dict[str, tuple[Any, ...]] = {}  # text -> its references to unknown names, first of each name
    for nid, where, text in found:
        unknown = unknown_in.get(text)
        if unknown is None:
            said: set[str] = set()
            picked = []
            for ref in _references(text):
                if ref.name in known or ref.name in said:
                    continue
                said.add(ref.name)
                picked.append(ref)
            unknown = unknown_in[text] = tuple(picked)
        for ref in unknown:
            field_name = ".".join(str(w) for w in where) or "data"
            add(
                Issue(
                    "unknown_reference",
                    W,
                    (nid,),
                    f"{_label(nodes[nid])} refers to '{ref.raw}' in {field_name}, but nothing is named "
                    f"'{ref.name}' (not a Start variable, an output variable or a built-in); it stays as written.",
                )
            )
    comps: dict[str, int] | None = None  # the cycles' components, made when first needed
    specs = SPECS
    for nid, sources in index.exec_in.items():
        if len(sources) < 2:
            continue
        # links coming back round a cycle through this node are later arrivals, not a fan-in
        # (a source linking into this node and reachable from it: the two share a cycle;
        # reachability per fan-in node, walked each time, made validation quadratic).
        # Asked first: on a graph with cycles it rules out most nodes before their kind is read.
        if comps is None:
            comps = components.comps
        comp = comps.get(nid)
        if comp is None:
            fan_in = list(dict.fromkeys(sources))
        else:
            fan_in = [s for s in dict.fromkeys(sources) if comps.get(s) != comp]
        if len(fan_in) < 2:
            continue
        fan_node = nodes.get(nid)
        if fan_node is None:
            continue
        kind = fan_node.type
        spec = specs.get(kind) or spec_for(kind)
        if spec is None or spec.gathers or kind == "loop":
            continue
        add(
            Issue(
                "fan_in_without_join",
                W,
                (nid, *fan_in),
                f"{_label(fan_node)} has {len(fan_in)} incoming branches and runs once per arrival; put a Join "
                "before it to run it once with all their outputs.",
            )
        )
    for nid, n in loops:
        body = [t for h, _raw, t in index.exec_out_handles.get(nid, ()) if h == "body"]
        if body and not any(t == nid or components.same(nid, t) for t in body):
            add(
                Issue(
                    "loop_body_no_return",
                    W,
                    (nid,),
                    f"{_label(n)}: its Body branch never leads back to the loop, so it runs only once.",
                )
            )


class _Components:
    """Node -> the number of its strongly connected component along execution links, for the
    nodes :func:`_strong_components` leaves after the acyclic peel; the nodes of one cycle
    share a number. Made on first use, from the components the execution-cycle check found
    among the nodes reachable from Start (``found``, with ``reachable``) and one more pass
    over the other nodes only: a cycle lies wholly inside or wholly outside what is reachable
    (everything a reachable node links to is reachable), so the two together are the
    components of the whole graph."""

    __slots__ = ("_index", "_found", "_reachable", "_comps")

    def __init__(
        self, index: GraphIndex, found: list[list[str]] | None = None, reachable: set[str] | None = None
    ) -> None:
        self._index = index
        self._found = found
        self._reachable = reachable
        self._comps: dict[str, int] | None = None

    @property
    def comps(self) -> dict[str, int]:
        comps = self._comps
        if comps is None:
            index = self._index
            comps = self._comps = {}
            groups: Iterable[list[str]]
            if self._found is None or self._reachable is None:
                groups = _strong_components(index, index.nodes)
            else:
                reachable = self._reachable
                rest = [nid for nid in index.nodes if nid not in reachable]
                groups = self._found if not rest else (*self._found, *_strong_components(index, rest))
            for i, members in enumerate(groups):
                for member in members:
                    comps[member] = i
        return comps

    def same(self, a: str, b: str) -> bool:
        """Whether ``b`` is reachable from ``a`` and back: one strongly connected component."""
        comps = self.comps
        ca = comps.get(a)
        return ca is not None and ca == comps.get(b)


def _strong_components(index: GraphIndex, among: Iterable[str]) -> Iterator[list[str]]:
    """The strongly connected components of the execution links between the nodes ``among``,
    once the acyclic part is peeled off; roots are taken in file order, so the components and
    their members come in the same order whatever the hash seed of the process."""
    out = index.exec_out
    # Peel off the acyclic part first (Kahn): a node no remaining node links to is on no
    # cycle. On the usual acyclic flow this settles everything in one cheap pass.
    indegree = dict.fromkeys(among, 0)
    for nid in indegree:
        for nxt in out.get(nid, ()):
            if nxt in indegree:
                indegree[nxt] += 1
    ready = [nid for nid, d in indegree.items() if d == 0]
    while ready:
        nid = ready.pop()
        del indegree[nid]
        for nxt in out.get(nid, ()):
            if nxt in indegree:
                left = indegree[nxt] - 1
                indegree[nxt] = left
                if not left:
                    ready.append(nxt)
    if not indegree:
        return
    rest = indegree  # what is left: nodes on a cycle or downstream of one
    # Iterative Tarjan on what is left (networkx would need a copy of the subgraph); the
    # node being visited, its link iterator and its low link are locals, and only the
    # frames of its ancestors are on ``work``.
    # A node whose component is done gets a number above every other, so a link to it never
    # lowers a low link: that stands in for an "on the stack" set.
    finished = len(rest)
    number: dict[str, int] = {}
    stack: list[str] = []
    counter = 0
    for root in [nid for nid in index.nodes if nid in rest]:
        if root in number:
            continue
        number[root] = low = counter
        counter += 1
        stack.append(root)
        node = root
        it = iter(out.get(root, ()))
        work: list[tuple[str, Iterator[str], int]] = []
        while True:
            for nxt in it:
                seen = number.get(nxt)
                if seen is None:
                    if nxt in rest:  # descend
                        work.append((node, it, low))
                        node = nxt
                        it = iter(out.get(nxt, ()))
                        number[nxt] = low = counter
                        counter += 1
                        stack.append(nxt)
                        break
                elif seen < low:
                    low = seen
            else:  # every link of node followed
                if low == number[node]:
                    comp = []
                    while True:
                        w = stack.pop()
                        number[w] = finished
                        comp.append(w)
                        if w == node:
                            break
                    yield comp
                if not work:
                    break
                child_low = low
                node, it, low = work.pop()
                if child_low < low:
                    low = child_low


def _check_subagent_link(
    source: str, target: str, th: str, src: Node, tgt: Node, index: GraphIndex, i: int, add
) -> None:
    E = Severity.ERROR
    if not _tool_capable(src) or not _tool_capable(tgt):
        add(
            Issue(
                "subagent_not_agent",
                E,
                (source, target),
                f"A subagent link joins {_label(src)} to {_label(tgt)}; both ends must be agents.",
                i,
            )
        )
        return
    if not _subagents_on(src):
        add(
            Issue(
                "subagent_tools_off",
                E,
                (source,),
                f"{_label(src)} has a subagent link but its subagents tool is off.",
                i,
            )
        )
    if th != "input":
        add(
            Issue(
                "subagent_target_handle",
                E,
                (target,),
                f"A subagent link enters {_label(tgt)} at '{th}'; it must end at the input.",
                i,
            )
        )
    if source == target:
        add(Issue("subagent_self_link", E, (source,), f"{_label(src)} is linked as its own subagent.", i))


def _check_exec_cycles(
    index: GraphIndex, reachable: set[str], choice_links: dict[str, list[tuple[str, str]]], add
) -> list[list[str]]:
    """Warn about execution cycles (reachable from start) that no link leaves. Returns the
    components found (the data-flow checks reuse them)."""
    found = []
    for comp in _strong_components(index, reachable):
        found.append(comp)
        _maybe_warn_cycle(comp, index, choice_links, add)
    return found


def _maybe_warn_cycle(comp: list[str], index: GraphIndex, choice_links: dict[str, list[tuple[str, str]]], add) -> None:
    """Warn when a loop can never end by itself.

    An agent follows all of its links, so an agent's link out of the loop does not end it
    (the loop goes on beside the branch that left). Only a choice ends a loop: an if or
    approval in it with some branch (handle) that does not lead back into the loop, either
    because it leads elsewhere or because nothing is linked to it (the branch just ends).
    """
    if len(comp) == 1 and comp[0] not in index.exec_out.get(comp[0], ()):
        return  # not a cycle
    members = set(comp)
    for nid in comp:
        node = index.nodes[nid]
        spec = _spec(node)
        if spec is None or not spec.chooses:
            continue
        loops_back: set[str] = set()
        for handle, target in choice_links.get(nid, ()):
            if target in members:
                loops_back.add(handle)
        if any(h not in loops_back for h in source_handles(node)):
            return
    names = " → ".join(index.nodes[n].title for n in comp[:6]) + (" …" if len(comp) > 6 else "")
    add(
        Issue(
            "execution_cycle_no_exit",
            Severity.WARNING,
            tuple(sorted(comp)),
            f"These steps form a loop with no way out: {names}. The run stops at the visit limit.",
        )
    )


def errors_only(issues: Iterable[Issue]) -> list[Issue]:
    return [i for i in issues if i.severity == Severity.ERROR]
