"""What validation reports, and how its messages name a node.

:class:`Issue` (a stable ``code``, a :class:`Severity`, the node ids concerned, a message a user
understands), :class:`ConnectionCheck` (the verdict on one link being dragged), and
:func:`errors_only`; with the spec lookups the rules share (:func:`spec_of`,
:func:`node_label`: a node as messages name it, quoted; :func:`subagents_on`,
:func:`tool_capable`). The rules themselves are in ``engine.graph.validate`` (graph and kinds),
``engine.graph.dataflow_checks`` (references) and ``engine.graph.cycles`` (execution cycles).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from engine.graph.model import Node
from engine.nodes import SPECS, NodeSpec, spec_for

__all__ = [
    "Severity",
    "Issue",
    "ConnectionCheck",
    "errors_only",
    "spec_of",
    "node_label",
    "subagents_on",
    "tool_capable",
]


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


def spec_of(node: Node) -> NodeSpec | None:
    return SPECS.get(node.type) or spec_for(node.type)


def node_label(node: Node | None, node_id: str = "") -> str:
    if node is None:
        return f"'{node_id}'"
    spec = spec_of(node)
    return spec.describe(node) if spec is not None else f"'{node.title}'"


def subagents_on(node: Node) -> bool:
    spec = spec_of(node)
    return spec is not None and spec.subagents_on(node.data)


def tool_capable(node: Node) -> bool:
    spec = spec_of(node)
    return spec is not None and spec.tool_capable


def errors_only(issues: Iterable[Issue]) -> list[Issue]:
    return [i for i in issues if i.severity == Severity.ERROR]
