"""What the library knows of one flow: :class:`LibraryFlow`, its parameters, triggers, pausing.

The fields of a library entry are read from the flow's workflow here: its parameters (the
Start node's ``variables``, :func:`flow_parameters`), its trigger patterns and the learned ones
(:func:`flow_triggers`, :func:`learned_triggers`), and whether a run of it can wait for a person
(:func:`workflow_can_pause`, following the flows it runs through a library). The folders, the
scan, saving and seeding are :mod:`engine.flows.library`'s, which re-exports these names.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from engine.errors import FlowdeskError
from engine.flows.grammar import trigger_text
from engine.graph.model import Workflow
from engine.graph.variables import has_no_value


class FlowLookup(Protocol):
    """What :func:`workflow_can_pause` needs of a library (a :class:`engine.flows.library.FlowLibrary`)."""

    def resolve(
        self, ref: str, *, base: str | os.PathLike[str] | None = None, by_name: bool = True
    ) -> LibraryFlow | None: ...

    def load_path(self, path: str | os.PathLike[str]) -> Workflow: ...


__all__ = [
    "FLOW_SUFFIX",
    "LibraryError",
    "FlowParameter",
    "LibraryFlow",
    "flow_parameters",
    "flow_triggers",
    "learned_triggers",
    "workflow_can_pause",
]

FLOW_SUFFIX = ".flow.json"


class LibraryError(FlowdeskError):
    """A library operation failed (a flow not found, a file that cannot be written); the message names it."""


@dataclass(frozen=True, slots=True)
class FlowParameter:
    """One parameter of a library flow: a Start variable (``type``: string, number, boolean, json)."""

    name: str
    type: str = "string"
    description: str = ""
    required: bool = False
    value: Any = None  # the default

    @property
    def has_default(self) -> bool:
        return not has_no_value(self.value)

    @property
    def must_be_given(self) -> bool:
        """Required and without a default: a caller (a model, an MCP client) must give it. A
        required variable with a default takes the default, as a run does."""
        return self.required and not self.has_default

    def json_schema(self) -> dict[str, Any]:
        kind = {"number": "number", "boolean": "boolean", "json": None}.get(self.type, "string")
        schema: dict[str, Any] = {"type": kind} if kind else {}
        # The default is said in words: strict structured-output schemas refuse "default".
        default = f"Default: {json.dumps(self.value, ensure_ascii=False)}." if self.has_default else ""
        description = " ".join(part for part in (self.description.strip(), default) if part)
        if description:
            schema["description"] = description
        return schema

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "description": self.description,
            "required": self.required,
            "value": self.value,
        }


@dataclass(slots=True)
class LibraryFlow:
    """One flow of the library (read from its file)."""

    id: str
    name: str
    path: Path
    description: str = ""
    parameters: list[FlowParameter] = field(default_factory=list)
    triggers: list[str] = field(default_factory=list)
    #: the triggers stored as learned (``{"pattern", "learned": true}``), a subset of ``triggers``
    learned: list[str] = field(default_factory=list)
    enabled: bool = True
    can_pause: bool = False  # it holds an approval (directly or through flows it runs)
    error: str | None = None  # why the file could not be read
    #: ``{runs, lastRun, created}`` from the library's index (lastRun/created: epoch seconds or None)
    usage: dict[str, Any] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        return self.path.parent

    def parameters_schema(self) -> dict[str, Any]:
        """The JSON schema of the flow's parameters (a tool's ``parameters``)."""
        return {
            "type": "object",
            "properties": {p.name: p.json_schema() for p in self.parameters},
            "required": [p.name for p in self.parameters if p.must_be_given],
        }

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "description": self.description,
            "parameters": [p.to_json() for p in self.parameters],
            "triggers": list(self.triggers),
            "learned": list(self.learned),
            "enabled": self.enabled,
            "usage": dict(self.usage),
            "canPause": self.can_pause,
            "path": str(self.path),
        }
        if self.error:
            out["error"] = self.error
        return out


def flow_parameters(workflow: Workflow) -> list[FlowParameter]:
    """The Start node's ``variables`` as parameters (entries without a name are skipped)."""
    start = workflow.start_node()
    if start is None:
        return []
    raw = getattr(start.data, "variables", None)
    if raw is None and start.data.model_extra:
        raw = start.data.model_extra.get("variables")
    out: list[FlowParameter] = []
    for v in raw or ():
        if hasattr(v, "model_dump"):
            v = v.model_dump()
        if not isinstance(v, dict) or not isinstance(v.get("name"), str) or not v["name"].strip():
            continue
        kind = v.get("type") if v.get("type") in ("string", "number", "boolean", "json") else "string"
        out.append(
            FlowParameter(
                v["name"].strip(), str(kind), str(v.get("description") or ""), bool(v.get("required")), v.get("value")
            )
        )
    return out


def _raw_triggers(workflow: Workflow) -> list[Any]:
    raw = (
        (workflow.model_extra or {}).get("triggers")
        if getattr(workflow, "triggers", None) is None
        else workflow.triggers
    )
    return list(raw) if isinstance(raw, list) else []


def flow_triggers(workflow: Workflow) -> list[str]:
    return [p for p in (trigger_text(t) for t in _raw_triggers(workflow)) if p is not None]


def learned_triggers(workflow: Workflow) -> list[str]:
    return [
        t["pattern"] for t in _raw_triggers(workflow) if isinstance(t, dict) and t.get("learned") and trigger_text(t)
    ]


_PAUSING_KINDS = ("approval",)


def _asks_before_tools(node: Any) -> bool:
    """An agent one of whose tools asks for approval before a call (docs/design.md, "Approving
    tool calls"): an MCP entry or a flow entry with ``approve: "ask"``, or a subagent's own."""
    data = node.data
    if str(getattr(data, "approve", "") or "").lower() == "ask":
        return True
    tools = getattr(data, "tools", None)
    entries = [*(getattr(tools, "mcp", None) or ()), *(getattr(tools, "flows", None) or ())]
    return any(isinstance(e, dict) and str(e.get("approve") or "").lower() == "ask" for e in entries)


def workflow_can_pause(
    workflow: Workflow,
    library: FlowLookup | None = None,
    *,
    base: str | os.PathLike[str] | None = None,
    _seen: set[str] | None = None,
) -> bool:
    """Whether a run of ``workflow`` can wait for a person: it has an approval node, an agent
    with a tool that asks before each call (``approve: "ask"``), or a ``flow``/``action`` node
    runs a flow that can (looked up in ``library``)."""
    seen = _seen if _seen is not None else set()
    for node in workflow.nodes:
        if node.type in _PAUSING_KINDS or _asks_before_tools(node):
            return True
    if library is None:
        return False
    for node in workflow.nodes:
        ref = _node_flow_ref(node)
        if not ref:
            continue
        entry = library.resolve(ref, base=base, by_name=node.type == "action")
        if entry is None or entry.error or str(entry.path) in seen:
            continue
        seen.add(str(entry.path))
        try:
            child = library.load_path(entry.path)
        except LibraryError:
            continue
        if workflow_can_pause(child, library, base=entry.path, _seen=seen):
            return True
    return False


def _node_flow_ref(node: Any) -> str:
    """The flow a ``flow`` node names (``flow``), or an ``action`` node's action name."""
    if node.type == "flow":
        return str(getattr(node.data, "flow", "") or "").strip()
    if node.type == "action":
        return str(getattr(node.data, "action", "") or "").strip()
    return ""
