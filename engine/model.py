"""Workflow model: nodes, connections and their per-type data, plus load/save.

The on-disk format is AgentFlow's ``{nodes, connections}`` JSON, optionally with
``name``, ``description`` and ``version``. Invariants:

* Unknown fields (on the workflow, a node, a node's data or a connection) are kept
  and written back on save (``extra="allow"`` everywhere).
* Node ids read from a file are kept as they are.
* Legacy shapes are normalised on load (see :func:`normalise_legacy`).
* Anything that is not a workflow graph raises :class:`WorkflowLoadError` whose
  message says what is wrong and where (``nodes[3].type missing``); never another
  exception, never a silently empty workflow.
* Saving is atomic: a temporary file in the same folder, fsynced, then renamed.
"""

from __future__ import annotations

import json
import os
import tempfile
import uuid
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, SerializeAsAny, ValidationError, field_validator, model_validator

__all__ = [
    "NODE_TYPES",
    "Condition",
    "NodeData",
    "StartData",
    "AgentData",
    "AgentTools",
    "IfData",
    "ApprovalData",
    "Node",
    "Connection",
    "Workflow",
    "WorkflowLoadError",
    "load_workflow",
    "loads_workflow",
    "parse_workflow",
    "save_workflow",
    "dumps_workflow",
    "new_id",
    "source_handles",
    "accepts_input",
]

NODE_TYPES = ("start", "agent", "if", "approval")

DEFAULT_SYSTEM_PROMPT = "You are a helpful assistant."
DEFAULT_REASONING_EFFORT = "low"


class WorkflowLoadError(ValueError):
    """A file or value could not be read as a workflow.

    ``where`` is the location inside the document (``nodes[3].type``) or ``""``;
    ``path`` is the file, when there is one.
    """

    def __init__(self, message: str, *, where: str = "", path: str | os.PathLike[str] | None = None):
        self.where = where
        self.path = str(path) if path is not None else None
        self.reason = message
        text = f"{where}: {message}" if where and not message.startswith(where) else message
        if self.path:
            text = f"{self.path}: {text}"
        super().__init__(text)


class _Loose(BaseModel):
    """Base for every model: unknown fields kept, assignment validated."""

    model_config = ConfigDict(extra="allow", validate_assignment=False, populate_by_name=True)


class Condition(_Loose):
    operator: Literal["equal", "contains"] = "contains"
    value: str = ""

    @field_validator("operator", mode="before")
    @classmethod
    def _operator(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = v.strip().lower()
            return {"equals": "equal", "eq": "equal", "==": "equal", "includes": "contains"}.get(v, v)
        return v

    @field_validator("value", mode="before")
    @classmethod
    def _value(cls, v: Any) -> Any:
        if v is None:
            return ""
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float)):
            return str(v)
        return v


class NodeData(_Loose):
    """Data common to every node type (display-only fields)."""

    collapsed: bool | None = None


class StartData(NodeData):
    initialInput: str = ""

    @field_validator("initialInput", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v


class AgentTools(_Loose):
    web_search: bool = False
    subagents: bool = False


class AgentData(NodeData):
    agentName: str = ""
    systemPrompt: str = ""
    userPrompt: str = ""
    model: str = ""
    reasoningEffort: str = ""
    tools: AgentTools = Field(default_factory=AgentTools)
    provider: str | None = None

    @field_validator("agentName", "systemPrompt", "userPrompt", "model", "reasoningEffort", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v

    @field_validator("tools", mode="before")
    @classmethod
    def _tools(cls, v: Any) -> Any:
        return {} if v is None else v


class IfData(NodeData):
    conditions: list[Condition] = Field(default_factory=list)


class ApprovalData(NodeData):
    prompt: str = ""

    @field_validator("prompt", mode="before")
    @classmethod
    def _none_is_empty(cls, v: Any) -> Any:
        return "" if v is None else v


DATA_CLASSES: dict[str, type[NodeData]] = {
    "start": StartData,
    "agent": AgentData,
    "if": IfData,
    "approval": ApprovalData,
}


class Node(_Loose):
    id: str
    type: str
    x: float = 0.0
    y: float = 0.0
    # SerializeAsAny: dump the typed subclass (AgentData, ...), not just the declared NodeData fields.
    data: SerializeAsAny[NodeData] = Field(default_factory=NodeData)

    @field_validator("id", mode="before")
    @classmethod
    def _id(cls, v: Any) -> Any:
        # Numeric ids are accepted (some generators write them); kept as their text.
        if isinstance(v, int) and not isinstance(v, bool):
            return str(v)
        if isinstance(v, str) and not v:
            raise ValueError("must not be empty")
        return v

    @field_validator("x", "y", mode="before")
    @classmethod
    def _coord(cls, v: Any) -> Any:
        return 0.0 if v is None else v

    @model_validator(mode="before")
    @classmethod
    def _typed_data(cls, values: Any) -> Any:
        if isinstance(values, dict):
            data = values.get("data")
            kind = DATA_CLASSES.get(values.get("type"))  # type: ignore[arg-type]
            if data is None:
                values = {**values, "data": (kind or NodeData)()}
            elif isinstance(data, dict) and kind is not None:
                values = {**values, "data": kind.model_validate(data)}
            elif isinstance(data, dict):
                values = {**values, "data": NodeData.model_validate(data)}
        return values

    # Convenience accessors (typed views of data) -------------------------------------------
    @property
    def title(self) -> str:
        if self.type == "agent":
            name = getattr(self.data, "agentName", "")
            return name or "Agent"
        return {"start": "Start", "if": "Condition", "approval": "Approval"}.get(self.type, self.type)


class Connection(_Loose):
    source: str
    target: str
    sourceHandle: str | None = None
    targetHandle: str | None = None

    @field_validator("source", "target", mode="before")
    @classmethod
    def _ids(cls, v: Any) -> Any:
        if isinstance(v, int) and not isinstance(v, bool):
            return str(v)
        return v

    @property
    def is_subagent(self) -> bool:
        return self.sourceHandle == "subagent"

    @property
    def handle(self) -> str:
        """The source handle with the default filled in."""
        return self.sourceHandle or "output"

    def key(self) -> tuple[str, str, str, str]:
        return (self.source, self.sourceHandle or "output", self.target, self.targetHandle or "input")


class Workflow(_Loose):
    name: str | None = None
    description: str | None = None
    version: int | None = None
    nodes: list[Node] = Field(default_factory=list)
    connections: list[Connection] = Field(default_factory=list)

    FORMAT_VERSION: ClassVar[int] = 1

    def node_map(self) -> dict[str, Node]:
        return {n.id: n for n in self.nodes}

    def node(self, node_id: str) -> Node | None:
        for n in self.nodes:
            if n.id == node_id:
                return n
        return None

    def display_name(self) -> str:
        return self.name or "Untitled workflow"


# ---------------------------------------------------------------------------------------
# Handles


def source_handles(node: Node) -> list[str]:
    """Source handles a node has, in drawing order (legacy ``true`` not included)."""
    if node.type == "start":
        return ["output"]
    if node.type == "agent":
        tools = getattr(node.data, "tools", None)
        return ["output", "subagent"] if tools is not None and tools.subagents else ["output"]
    if node.type == "if":
        conds = getattr(node.data, "conditions", [])
        return [f"condition-{i}" for i in range(len(conds))] + ["false"]
    if node.type == "approval":
        return ["approve", "reject"]
    return []


def accepts_input(node: Node) -> bool:
    return node.type in ("agent", "if", "approval")


# ---------------------------------------------------------------------------------------
# Loading


def new_id(prefix: str = "node", taken: set[str] | dict[str, Any] | None = None) -> str:
    """A fresh id in AgentFlow's style that is not in ``taken``."""
    while True:
        candidate = f"{prefix}_{uuid.uuid4().hex[:12]}"
        if not taken or candidate not in taken:
            return candidate


def normalise_legacy(raw: dict[str, Any]) -> dict[str, Any]:
    """Apply DESIGN.md's legacy normalisation to a raw (already structurally checked) dict.

    * node type ``input`` -> ``approval``;
    * ``end`` nodes dropped with their connections;
    * ``if.data.condition`` (string) -> ``conditions: [{operator: contains, value}]`` when
      ``conditions`` is absent or empty (the legacy key is removed);
    * source handle ``true`` on an if node -> ``condition-0``.
    """
    nodes = []
    dropped: set[Any] = set()
    if_ids: set[Any] = set()
    for node in raw["nodes"]:
        kind = node.get("type")
        if kind == "end":
            dropped.add(node.get("id"))
            continue
        if kind == "input":
            node = {**node, "type": "approval"}
        elif kind == "if":
            if_ids.add(node.get("id"))
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
    for conn in raw["connections"]:
        if conn.get("source") in dropped or conn.get("target") in dropped:
            continue
        if conn.get("sourceHandle") == "true" and conn.get("source") in if_ids:
            conn = {**conn, "sourceHandle": "condition-0"}
        connections.append(conn)
    return {**raw, "nodes": nodes, "connections": connections}


def _where(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part in DATA_CLASSES or part in ("NodeData",) or str(part).startswith("function-"):
            continue  # pydantic's internal union/validator labels
        else:
            out += f".{part}" if out else str(part)
    return out


_MESSAGES = {
    "missing": "missing",
    "string_type": "must be a string",
    "float_parsing": "must be a number",
    "float_type": "must be a number",
    "int_parsing": "must be a whole number",
    "int_type": "must be a whole number",
    "bool_parsing": "must be true or false",
    "bool_type": "must be true or false",
    "list_type": "must be a list",
    "dict_type": "must be an object",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "literal_error": "is not one of the allowed values",
    "finite_number": "must be a finite number",
}


def _pydantic_error(err: ValidationError, path: str | os.PathLike[str] | None) -> WorkflowLoadError:
    first = err.errors(include_url=False)[0]
    where = _where(tuple(first.get("loc", ())))
    kind = first.get("type", "")
    msg = _MESSAGES.get(kind) or str(first.get("msg", "is invalid"))
    if kind == "literal_error" and "expected" in first.get("ctx", {}):
        msg = f"must be {first['ctx']['expected']}"
    if kind == "value_error":
        msg = str(first.get("msg", "")).removeprefix("Value error, ")
    count = err.error_count()
    if count > 1:
        msg += f" (and {count - 1} more problem{'s' if count > 2 else ''})"
    return WorkflowLoadError(msg, where=where, path=path)


def parse_workflow(raw: Any, *, path: str | os.PathLike[str] | None = None) -> Workflow:
    """Turn a decoded JSON value into a :class:`Workflow` or raise :class:`WorkflowLoadError`."""
    if not isinstance(raw, dict):
        kind = type(raw).__name__ if raw is not None else "null"
        kind = {"list": "a list", "str": "a string", "int": "a number", "float": "a number", "bool": "a boolean"}.get(kind, kind)
        raise WorkflowLoadError(f"not a workflow: the top level is {kind}, expected an object with 'nodes' and 'connections'", path=path)
    if "nodes" not in raw:
        if "logs" in raw or ("workflow" in raw and isinstance(raw.get("workflow"), dict)):
            raise WorkflowLoadError(
                "not a workflow graph: this looks like a run record (it has 'logs'/'workflow' but no 'nodes'); "
                "open it from run history instead", path=path)
        raise WorkflowLoadError("not a workflow graph: no 'nodes' list", where="nodes", path=path)
    if not isinstance(raw["nodes"], list):
        raise WorkflowLoadError("must be a list", where="nodes", path=path)
    conns = raw.get("connections")
    if conns is None:
        if raw["nodes"]:
            raise WorkflowLoadError("missing", where="connections", path=path)
        conns = []
    if not isinstance(conns, list):
        raise WorkflowLoadError("must be a list", where="connections", path=path)
    raw = {**raw, "connections": conns}
    for i, node in enumerate(raw["nodes"]):
        if not isinstance(node, dict):
            raise WorkflowLoadError("must be an object", where=f"nodes[{i}]", path=path)
        for key in ("id", "type"):
            if key not in node:
                raise WorkflowLoadError("missing", where=f"nodes[{i}].{key}", path=path)
        if not isinstance(node["type"], str):
            raise WorkflowLoadError("must be a string", where=f"nodes[{i}].type", path=path)
        if "data" in node and node["data"] is not None and not isinstance(node["data"], dict):
            raise WorkflowLoadError("must be an object", where=f"nodes[{i}].data", path=path)
    for i, conn in enumerate(conns):
        if not isinstance(conn, dict):
            raise WorkflowLoadError("must be an object", where=f"connections[{i}]", path=path)
        for key in ("source", "target"):
            if key not in conn:
                raise WorkflowLoadError("missing", where=f"connections[{i}].{key}", path=path)
    raw = normalise_legacy(raw)
    try:
        return Workflow.model_validate(raw)
    except ValidationError as err:
        # Locations refer to the normalised lists; end nodes removed can shift indices,
        # which is rare enough that the message still points close to the problem.
        raise _pydantic_error(err, path) from None
    except (TypeError, ValueError, RecursionError) as err:  # defensive: odd values inside extras
        raise WorkflowLoadError(f"cannot be read: {err}", path=path) from None


def loads_workflow(text: str | bytes, *, path: str | os.PathLike[str] | None = None) -> Workflow:
    try:
        raw = json.loads(text)
    except UnicodeDecodeError as err:
        raise WorkflowLoadError(f"not a text file ({err.reason})", path=path) from None
    except json.JSONDecodeError as err:
        raise WorkflowLoadError(f"not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}", path=path) from None
    except RecursionError:
        raise WorkflowLoadError("not a workflow: JSON nested too deeply", path=path) from None
    return parse_workflow(raw, path=path)


def load_workflow(path: str | os.PathLike[str]) -> Workflow:
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise WorkflowLoadError("file not found", path=p) from None
    except IsADirectoryError:
        raise WorkflowLoadError("is a folder, not a file", path=p) from None
    except OSError as err:
        raise WorkflowLoadError(f"cannot be read: {err.strerror or err}", path=p) from None
    return loads_workflow(data, path=p)


def workflow_to_dict(workflow: Workflow) -> dict[str, Any]:
    """The JSON value written to disk (None fields are left out; unknown fields kept)."""
    return workflow.model_dump(mode="json", exclude_none=True)


def dumps_workflow(workflow: Workflow, *, indent: int | None = 2) -> str:
    return json.dumps(workflow_to_dict(workflow), indent=indent, ensure_ascii=False) + ("\n" if indent else "")


def atomic_write_text(path: str | os.PathLike[str], text: str) -> None:
    """Write ``text`` to ``path`` atomically: temp file in the same folder, fsync, rename.

    On any failure (disk full, permission) the original file is untouched and the
    temporary file removed; the OSError propagates to the caller.
    """
    p = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=str(p.parent) or ".")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            mode = os.stat(p).st_mode & 0o777
            os.chmod(tmp, mode)
        except FileNotFoundError:
            os.chmod(tmp, 0o644)
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def save_workflow(workflow: Workflow, path: str | os.PathLike[str]) -> None:
    atomic_write_text(path, dumps_workflow(workflow))
