"""What a node kind is: :class:`NodeSpec`, and what its ``execute`` gets and gives back.

A spec is one object per kind (``start``, ``agent``, ``if``, ``approval``, and any plug-in
kind). Everything the engine and the editor need to know about a kind is asked of it:

* ``data_model``: the pydantic class of the node's ``data`` (a :class:`NodeData`
  subclass; unknown fields are kept, as everywhere in the format);
* ports: ``inputs`` (the input handles, ``()`` for a node nothing links into) and
  ``outputs(data)`` (the output handles in drawing order, which may depend on the data);
* ``label``, ``description``, ``icon``, ``color``, ``category``: how the kind is shown;
* ``check(node, checks)``: its own validation rules (graph rules stay in ``validate``);
* ``execute(ctx, node, value)``: what a step does. It returns ``(output, handle)`` where
  ``handle`` is the output handle whose links are followed (a tuple of handles for
  several, ``None`` for none), or a :class:`PauseRequest` to wait for a person; it raises
  :class:`NodeError` when the step fails. All I/O of a run happens inside ``execute``.

Specs are plain objects: a subclass sets class attributes and overrides what it needs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from enum import StrEnum
from typing import Any, ClassVar, Literal, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict, Field, field_validator

from engine.errors import FlowdeskError
from engine.graph.templates import TemplateScope, resolve_json_text, resolve_templates_masked

__all__ = [
    "NodeData",
    "PolicyData",
    "NodeSpec",
    "PauseRequest",
    "NodeError",
    "NodeOutcome",
    "PaletteEntry",
    "as_text",
    "fill_prompt",
    "COMMON_HANDLE_LABELS",
    "ERROR_MODES",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_RETRY_DELAY_MS",
    "ERROR_HANDLE",
    "BranchFrame",
    "resolve_for_step",
    "json_text_body",
]


class NodeLike(Protocol):
    """What a spec reads of a node (``engine.graph.model.Node`` is one): typed here as a
    protocol so that this module, which ``model`` imports, does not import ``model`` back."""

    id: str
    type: str

    @property
    def data(self) -> Any: ...

    @property
    def title(self) -> str: ...


def is_none(value: Any) -> bool:
    """The ``exclude_if`` of optional known fields: left out of the file when None."""
    return value is None


# Optional known fields (name, provider, sourceHandle, ...) are left out of the file when
# they are None (``Field(default=None, exclude_if=is_none)``): AgentFlow reads an absent field
# and a null one alike. Checked per field by pydantic-core, this keeps saving 2-3x faster than
# a Python serializer per model.


class _Loose(BaseModel):
    """Base for every model: unknown fields kept (null values included)."""

    model_config = ConfigDict(extra="allow", validate_assignment=False, populate_by_name=True)


class NodeData(_Loose):
    """Data common to every node type: ``collapsed`` (display only) and ``outputVar`` (the
    name of the run variable the node's output is stored under after each step; absent or
    empty: not stored)."""

    collapsed: bool | None = Field(default=None, exclude_if=is_none)
    outputVar: str | None = Field(default=None, exclude_if=is_none)

    @field_validator("outputVar", mode="before")
    @classmethod
    def _output_var(cls, v: Any) -> Any:
        if isinstance(v, str):
            return v.strip() or None
        return v


#: Step policy defaults (docs/design.md, "Step policies").
ERROR_MODES = ("fail", "skip", "retry")
DEFAULT_MAX_RETRIES = 3
DEFAULT_RETRY_DELAY_MS = 1000
ERROR_HANDLE = "error"


class PolicyData(NodeData):
    """Data of a node kind that does work (``NodeSpec.works``): its step policy.

    ``timeoutMs`` (one attempt's limit; absent or 0: none), ``errorMode`` (``fail`` default,
    ``skip``, ``retry``), ``maxRetries`` (more attempts with ``retry``; default 3) and
    ``retryDelayMs`` (before the first retry, doubling; default 1000). Absent fields are left
    out of the file (their defaults apply), so AgentFlow files round-trip unchanged.
    """

    timeoutMs: int | None = Field(default=None, exclude_if=is_none, ge=0)
    errorMode: Literal["fail", "skip", "retry"] | None = Field(default=None, exclude_if=is_none)
    maxRetries: int | None = Field(default=None, exclude_if=is_none, ge=0)
    retryDelayMs: int | None = Field(default=None, exclude_if=is_none, ge=0)

    @field_validator("errorMode", mode="before")
    @classmethod
    def _error_mode(cls, v: Any) -> Any:
        if isinstance(v, str):
            v = v.strip().lower()
            return {"": None, "continue": "skip", "ignore": "skip", "stop": "fail"}.get(v, v)
        return v

    @field_validator("timeoutMs", "maxRetries", "retryDelayMs", mode="before")
    @classmethod
    def _whole(cls, v: Any) -> Any:
        if isinstance(v, float) and v.is_integer():
            return int(v)
        if isinstance(v, str):
            v = v.strip()
            return int(v) if v.isdigit() else (None if not v else v)
        return v


class NodeOutcome(StrEnum):
    """How a node's last step ended (``Run.outcomes``; ``NodeRecord.outcome``)."""

    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"


class NodeError(FlowdeskError):
    """A step failed; ``str(err)`` is the message the run's ``error`` event shows."""


class PauseRequest:
    """Returned by ``execute`` to stop here until a person decides (approve or reject).

    The run pauses at the node (or queues it behind a pending approval); ``resume()``
    then follows the output handle named by the decision with the value that arrived.
    """

    __slots__ = ("prompt", "extra")

    def __init__(self, prompt: str = "", extra: dict[str, Any] | None = None) -> None:
        self.prompt = prompt
        #: Fields of the ``wait_input`` event beside the prompt (a tool call's: ``{kind: "tool_call", ...}``).
        self.extra = extra


class PaletteEntry:
    """One entry of the editor's palette: a kind, or a variant of it with other starting data."""

    __slots__ = ("key", "kind", "label", "description", "icon", "data")

    def __init__(self, key: str, kind: str, label: str, description: str, icon: str, data: dict[str, Any]) -> None:
        self.key = key
        self.kind = kind
        self.label = label
        self.description = description
        self.icon = icon
        self.data = data

    def __repr__(self) -> str:
        return f"PaletteEntry({self.key!r}, kind={self.kind!r})"


COMMON_HANDLE_LABELS = {
    "output": "output",
    "approve": "Approve",
    "reject": "Reject",
    "false": "Else",
    "subagent": "Subagents",
    "error": "On error",
    "body": "Body",
    "done": "Done",
}


class BranchFrame(NamedTuple):
    """What a branch carries besides its value (per branch: one asyncio task's context).

    ``decision``/``note``: of the approval this branch passed most recently (None before any);
    ``loops``: the ids of the loops whose body the branch is in, innermost last; ``fanout``:
    the last join's list on this branch (None before any).
    """

    decision: str | None = None
    note: str | None = None
    loops: tuple[str, ...] = ()
    fanout: Any = None

    def to_json(self) -> dict[str, Any]:
        return {"decision": self.decision, "note": self.note, "loops": list(self.loops), "fanout": self.fanout}

    @classmethod
    def from_json(cls, data: Any) -> BranchFrame | None:
        if not isinstance(data, dict):
            return None
        return cls(data.get("decision"), data.get("note"), tuple(data.get("loops") or ()), data.get("fanout"))


class NodeSpec:
    """A node kind. Subclass it, set the class attributes, override what differs.

    Class attributes:
      ``kind`` (the ``type`` written in the file), ``data_model``, ``label``,
      ``description``, ``icon`` (an icon name; the editor falls back to a generic glyph),
      ``color`` (accent colour, ``#rrggbb``), ``category`` (palette group),
      ``in_palette``, ``inputs``, ``chooses`` (the node follows exactly one of its outputs,
      so a loop through it can end there and it must have a branch linked), ``entry``
      (a run begins here; exactly one per workflow), ``tool_capable`` (can call and be
      called as a subagent tool; only agents), ``handle_labels`` (names of fixed handles),
      ``works`` (the node does work: its data is a :class:`PolicyData` with a step policy, and
      it has the ``error`` source handle, which ``outputs`` does not list: the canvas draws it
      apart; ``has_output(data, "error")`` is true), ``through_run`` (a working kind whose
      ``execute`` does its I/O only through the run: see the attribute).
    """

    kind: ClassVar[str] = ""
    data_model: ClassVar[type[NodeData]] = NodeData
    label: ClassVar[str] = ""
    description: ClassVar[str] = ""
    icon: ClassVar[str] = ""
    color: ClassVar[str] = "#5b6478"
    width: ClassVar[float] = 232.0  # on the canvas, in scene units
    category: ClassVar[str] = "Steps"
    in_palette: ClassVar[bool] = True
    inputs: ClassVar[tuple[str, ...]] = ("input",)
    chooses: ClassVar[bool] = False
    entry: ClassVar[bool] = False
    tool_capable: ClassVar[bool] = False
    handle_labels: ClassVar[dict[str, str]] = {}
    works: ClassVar[bool] = False
    #: For a kind that ``works``: whether ``execute`` reaches the outside world only through the
    #: run (model calls through ``ctx.resolve``, nested runs through ``ctx.child_run``), so a
    #: durable engine (Temporal, docs/design.md "Scale-out") runs it inside its scheduler and makes the
    #: model call or the nested run the remote part. False (the default): its whole ``execute``
    #: does I/O and runs as one remote activity, with a context that has no graph nor child runs.
    through_run: ClassVar[bool] = False
    #: The run gathers the arrivals of all incoming links before a step (``join``): ``execute``
    #: then gets the list of delivered values in link order.
    gathers: ClassVar[bool] = False
    #: Whether ``execute`` emits events that say what the step produced (the built-ins do:
    #: ``llm_response``, ``logic_check``...). When False the run emits ``node_output`` after
    #: the step (content: the output as text; extra: ``{"handle": ...}``, the handle followed).
    reports_output: ClassVar[bool] = False
    #: Why a link cannot enter a node of this kind (when ``inputs`` is empty).
    no_input_message: ClassVar[str] = ""
    #: For ``chooses`` kinds: the error when a reachable node has no branch linked (code, message
    #: with ``{label}``).
    no_branch: ClassVar[tuple[str, str]] = ("no_branch", "{label} has no branch connected.")
    #: Data fields holding source code that runs as written (a JavaScript `${x}` is the code's
    #: own template literal): validation reads no template references in them.
    verbatim: ClassVar[tuple[str, ...]] = ()
    #: Set by the registry when the spec is registered (read on validation's hot path):
    #: whether ``check`` is overridden, ``plain_output()``, and whether ``input`` is an input.
    has_check: bool = False
    plain_out: bool = False
    takes_input: bool = False

    # ---------------------------------------------------------------- ports
    def outputs(self, data: NodeData) -> tuple[str, ...]:
        """Output handles in drawing order (the legacy ``true`` is never listed)."""
        return ("output",)

    def has_output(self, data: NodeData, handle: str) -> bool:
        """Whether a link may leave from ``handle`` (may accept more than ``outputs`` lists:
        ``error`` on a kind that ``works``)."""
        return handle in self.outputs(data) or (handle == ERROR_HANDLE and self.works)

    def plain_output(self) -> bool:
        """Whether ``output`` is always one of this kind's handles (lets validation skip most links)."""
        return "output" in self.outputs(self.data_model())

    def subagents_on(self, data: NodeData) -> bool:
        """Whether a ``tool_capable`` node calls the agents linked below it."""
        return False

    def handle_label(self, data: NodeData, handle: str) -> str:
        return self.handle_labels.get(handle) or COMMON_HANDLE_LABELS.get(handle, handle)

    # ---------------------------------------------------------------- naming
    def title(self, data: NodeData) -> str:
        """The node's title on the canvas and in messages."""
        return self.label or self.kind

    def describe(self, node: NodeLike) -> str:
        """How messages name a node of this kind (quoted title)."""
        return f"'{self.title(node.data)}'"

    def summary(self, data: NodeData) -> list[tuple[str, bool]]:
        """Preview lines under the title on the canvas: (text, muted)."""
        return []

    def palette_entries(self) -> list[PaletteEntry]:
        if not self.in_palette:
            return []
        return [
            PaletteEntry(
                self.kind, self.kind, self.label or self.kind, self.description, self.icon or self.kind, self.new_data()
            )
        ]

    def new_data(self) -> dict[str, Any]:
        """The data of a node created from the palette (the model's defaults)."""
        return self.data_model().model_dump(mode="json", exclude_none=True)

    # ---------------------------------------------------------------- rules and running
    def check(self, node: NodeLike, checks: Any) -> None:
        """Add this node's own issues: ``checks.error(code, message)`` / ``checks.warning(...)``."""

    def pause_prompt(self, data: NodeData) -> str:
        """The message shown while a run waits at a node of this kind (see :class:`PauseRequest`)."""
        return "Approve or reject to continue."

    async def execute(
        self, ctx: Any, node: NodeLike, value: Any
    ) -> tuple[Any, str | tuple[str, ...] | None] | PauseRequest:
        raise NodeError(f"Nodes of type '{self.kind}' cannot run.")

    def replayed(self, ctx: Any, node: NodeLike, handle: Any) -> None:
        """A step of this node was not run but reused from an earlier run (``cache_hit``, with
        ``handle``): a kind whose steps change the run's own state (a loop's iteration) does
        that here. Most kinds have nothing to do."""

    # ---------------------------------------------------------------- the kind's part of a run
    # What a kind means to the scheduler, asked of the spec (engine.run.scheduler knows no kind):
    #: Where a snapshot keeps this kind's per-node state (``RunContext.state``): a top-level key
    #: holding ``{node id: state_to_json(state)}``; None: the kind keeps no state.
    state_key: ClassVar[str | None] = None
    #: Whether the key is written even when no node of the kind holds state.
    state_always: ClassVar[bool] = False

    def state_to_json(self, state: Any) -> Any:
        """A node's state as a JSON value (for a snapshot)."""
        return state

    def state_from_json(self, ctx: Any, data: Any) -> Any:
        """A node's state read back from a snapshot (``ctx``: the restored run's context)."""
        return data

    def arrive(self, ctx: Any, node: NodeLike, src: str | None, value: Any) -> Any:
        """For a kind that ``gathers``: an arrival from ``src``; the value the step gets when the
        node fires now, else ``ctx.WAITING`` (the branch ends; ``release`` may fire it later)."""
        return value

    def release(self, ctx: Any, node_id: str, live: set[str]) -> tuple[Any, BranchFrame | None] | None:
        """For a kind that ``gathers`` and holds arrivals: called when work ends somewhere (``live``:
        the nodes still in flight or waiting); ``(value, frame)`` fires the node now, None waits."""
        return None

    def answered(
        self, ctx: Any, node: NodeLike, arrived: Any, flowing: Any, answer: dict[str, Any], now: float, waited_ms: int
    ) -> tuple[Any, str, BranchFrame | None] | None:
        """The answer to this node's pause (:class:`PauseRequest`): ``(output, handle, frame)`` to go
        on along ``handle`` in ``frame``, or None to take the step again (the kind has kept the
        answer in its state). ``flowing``: the value that goes on (the reviewer's edit, else
        ``arrived``); ``now``: when the answer came, ``waited_ms`` how long the run waited; the
        branch's frame (``ctx.frame``) is the one the pause was asked in. The default takes the
        step again."""
        return None

    def waiting_prompt(self, ctx: Any, node: NodeLike) -> str:
        """What a run paused at this node asks."""
        return self.pause_prompt(node.data)

    def pause_extra(self, ctx: Any, node: NodeLike) -> dict[str, Any] | None:
        """The ``wait_input`` fields of a pause at this node besides its prompt (None: none)."""
        return None

    def answer_problem(self, ctx: Any, node: NodeLike, answer: dict[str, Any]) -> str | None:
        """Why ``answer`` cannot answer this node's pause (None: it can); the run stays paused."""
        if "arguments" in answer:
            return "only a tool call's approval takes arguments"
        return None

    def decisions(self, ctx: Any, node: NodeLike) -> tuple[str, ...]:
        """The decisions a run paused at this node takes (``resume``): approve and reject, and an
        approval's option labels."""
        return ("approve", "reject")

    def pause_deadline(self, ctx: Any, node: NodeLike, since: float) -> tuple[float, str] | None:
        """When a pause at this node, asked at ``since`` (the run's clock), times out and the
        decision it then takes: ``(deadline, decision)``; None: it waits for ever."""
        return None

    def cancelled(self, ctx: Any, node_id: str, state: Any, reason: str) -> None:
        """The run was cancelled (``reason``) while this node held ``state`` (a nested run to cancel)."""

    def __repr__(self) -> str:
        return f"<NodeSpec {self.kind!r}>"


def as_text(value: Any) -> str:
    """A node output as text: strings as is, None as "", anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def fill_prompt(user_prompt: str, previous: str) -> str:
    """An agent's user content: ``{{PREVIOUS_OUTPUT}}`` replaced, or ``previous`` itself when the prompt is empty."""
    if not user_prompt or user_prompt.isspace():
        return previous
    return user_prompt.replace("{{PREVIOUS_OUTPUT}}", previous)


def resolve_for_step(ctx: Any, node: Any, value: Any = None) -> tuple[dict[str, Any], list[str]]:
    """The node's data with templates resolved, and the secret values that went into it.

    Uses the run's variables and built-ins when the run offers them (``ctx.resolve_data``,
    from the data-flow work), else resolves against the environment and the keyring only.
    """
    resolver = getattr(ctx, "resolve_data", None)
    scoper = getattr(ctx, "scope", None)
    if resolver is not None:
        resolved = resolver(node, value)
        data = dict(getattr(resolved, "value", resolved))
        secrets = list(getattr(resolved, "secrets", ()) or ())
        scope = scoper(node, value) if scoper is not None else None
    else:
        scope = TemplateScope(
            variables=dict(getattr(ctx, "variables", None) or {}), builtins={"PREVIOUS_OUTPUT": value, "input": value}
        )
        res = resolve_templates_masked(node.data.model_dump(mode="json", exclude_none=True), scope)
        data, secrets = dict(res.value), list(res.secrets)
    if scope is not None:
        secrets += json_text_body(node.data, data, scope)
    return data, secrets


def json_text_body(raw: Any, data: dict[str, Any], scope: TemplateScope) -> list[str]:
    """A JSON body written as text (``bodyType: json``, or ``text`` sent as JSON) is resolved
    JSON-aware (:func:`~engine.graph.templates.resolve_json_text`) into ``data["body"]``: a
    whole ``"{{tags}}"`` keeps its list, a model's answer inside a string is escaped. Returns
    the secrets that went into it."""
    body = getattr(raw, "body", None) if not isinstance(raw, Mapping) else raw.get("body")
    if not isinstance(body, str) or ("{{" not in body and "${" not in body):
        return []
    kind = str(data.get("bodyType") or "").lower()
    if kind == "text":
        headers = data.get("headers") or []
        rows = (
            headers.items()
            if isinstance(headers, Mapping)
            else ((r.get("key"), r.get("value")) for r in headers if isinstance(r, Mapping))
        )
        if not any(str(k or "").strip().lower() == "content-type" and "json" in str(v or "").lower() for k, v in rows):
            return []
    elif kind != "json":
        return []
    res = resolve_json_text(body, scope)
    data["body"] = res.value
    return list(res.secrets)
