"""Legacy shapes of the file format and what loading makes of them (docs/design.md, "Legacy
normalisation").

:func:`normalise_legacy` rewrites a raw workflow dict (already structurally checked) before the
model reads it: ``input`` nodes become ``approval``, ``end`` nodes are dropped with their links,
an ``if`` node's single ``condition`` becomes its ``conditions`` list and its ``true`` handle
``condition-0``, and React Flow's ``position`` becomes ``x``/``y``. This is the one place
that applies the legacy rules, and the only module outside the kinds' own that names kinds:
:mod:`engine.graph.model` calls it from ``parse_workflow``; the graph index and
``check_connection`` read a handle given in code through :func:`current_handle`.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LEGACY_HANDLES", "current_handle", "normalise_legacy", "normalise_with_origins"]


#: Legacy source handle names and what loading renames them to (an if node's ``true`` is its
#: first condition). The one statement of the rule: loading applies it, and the graph index and
#: ``check_connection`` read a handle given in code through :func:`current_handle`.
LEGACY_HANDLES = {"true": "condition-0"}


def current_handle(handle: str) -> str:
    """``handle`` under its current name (``true`` -> ``condition-0``; others unchanged)."""
    return LEGACY_HANDLES.get(handle, handle) if handle.__class__ is str else handle


def normalise_legacy(raw: dict[str, Any]) -> dict[str, Any]:
    """Apply the legacy normalisation (docs/design.md, "Legacy normalisation") (see :func:`normalise_with_origins`)."""
    return normalise_with_origins(raw)[0]


def normalise_with_origins(raw: dict[str, Any]) -> tuple[dict[str, Any], list[int], list[int]]:
    """Apply the legacy normalisation (docs/design.md, "Legacy normalisation") to a raw (already structurally checked) dict.

    * node type ``input`` -> ``approval``;
    * ``end`` nodes dropped with their connections;
    * ``if.data.condition`` (string) -> ``conditions: [{operator: contains, value}]`` when
      ``conditions`` is absent or empty (the legacy key is removed);
    * source handle ``true`` on an if node -> ``condition-0``;
    * React Flow's ``position: {x, y}`` -> ``x``/``y`` when the node has neither.

    Also returns, for each kept node and connection, its index in the file, so that error
    locations name the file's ``nodes[3]`` even when end nodes before it were dropped.
    Ids are compared as text (an id written 5 and a link to "5" name the same node).
    """
    nodes = []
    node_origin: list[int] = []
    dropped: set[str] = set()
    if_ids: set[str] = set()
    for i, node in enumerate(raw["nodes"]):
        kind = node.get("type")
        if kind == "end":
            dropped.add(str(node.get("id")))
            continue
        node_origin.append(i)
        if "x" not in node and "y" not in node and isinstance(node.get("position"), dict):
            node = _from_position(node)
        if kind == "input":
            node = {**node, "type": "approval"}
        elif kind == "if":
            if_ids.add(str(node.get("id")))
            data = node.get("data")
            if isinstance(data, dict) and "condition" in data:
                data = dict(data)
                legacy = data.pop("condition")
                if not data.get("conditions") and isinstance(legacy, (str, int, float)) and str(legacy).strip():
                    data["conditions"] = [{"operator": "contains", "value": str(legacy)}]
                elif not data.get("conditions"):
                    data.setdefault("conditions", [])
                node = {**node, "data": data}
        nodes.append(node)
    connections = []
    conn_origin: list[int] = []
    for i, conn in enumerate(raw["connections"]):
        if dropped and (str(conn.get("source")) in dropped or str(conn.get("target")) in dropped):
            continue
        handle = conn.get("sourceHandle")
        if isinstance(handle, str) and handle in LEGACY_HANDLES and str(conn.get("source")) in if_ids:
            conn = {**conn, "sourceHandle": LEGACY_HANDLES[handle]}
        connections.append(conn)
        conn_origin.append(i)
    return {**raw, "nodes": nodes, "connections": connections}, node_origin, conn_origin


def _from_position(node: dict[str, Any]) -> dict[str, Any]:
    """React Flow's ``position: {x, y}`` (Flowise, Langflow, many generators) as the node's ``x``/``y``.

    Read only when the node has neither ``x`` nor ``y``; the ``position`` key is dropped, so a save
    writes ``x``/``y`` once. A coordinate that is not a number is left for the usual check to name.
    """
    position = node["position"]
    node = {k: v for k, v in node.items() if k != "position"}
    for axis in ("x", "y"):
        if axis in position:
            node[axis] = position[axis]
    return node
