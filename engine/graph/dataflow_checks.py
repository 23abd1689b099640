"""Validation of data flow: the template references in node data (docs/design.md, "Data flow:
variables and templates").

:func:`check_data_flow` walks every string of every node's data that may hold a reference
(``{{...}}``, ``${...}``) and warns about a reference to a variable nothing sets, a node that
is not upstream, or a value that cannot have arrived yet (inside an execution cycle, see
``engine.graph.cycles``). Node data is read through the models' ``__dict__`` (validation runs
after every edit, on files of thousands of nodes).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import Any

from pydantic import BaseModel

from engine.graph.cycles import Components
from engine.graph.index import GraphIndex
from engine.graph.issues import Issue, Severity, node_label
from engine.graph.model import Node
from engine.graph.templates import TEMPLATE_BUILTINS, find_references
from engine.nodes import SPECS, spec_for

__all__ = ["check_data_flow"]


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


def check_data_flow(index: GraphIndex, add, components: Components) -> None:
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
        spec = SPECS.get(n.type)  # fields holding code run as written (NodeSpec.verbatim) hold no references
        verbatim = spec.verbatim if spec is not None else ()
        for k, x in reversed(fields.items()):
            if x is None or k in verbatim:
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
                    f"{node_label(nodes[nid])} refers to '{ref.raw}' in {field_name}, but nothing is named "
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
                f"{node_label(fan_node)} has {len(fan_in)} incoming branches and runs once per arrival; put a Join "
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
                    f"{node_label(n)}: its Body branch never leads back to the loop, so it runs only once.",
                )
            )
