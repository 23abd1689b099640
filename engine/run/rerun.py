"""Re-running without paying twice: pinned outputs and recorded node executions.

docs/design.md, "Re-running, editing, comparing" (normative). The runtime asks one hook per
step (the scheduler's step hook, None for a plain run, so a plain run pays one attribute test
per step; the hook talks to the run through its :class:`~engine.run.context.RunContext`):

* a node whose data holds ``pinnedOutput`` does not run: ``step_pinned`` and the pinned
  value flow on (on the node's first output, or ``pinnedHandle`` when the data names one);
* in a run "from here" (``Run(..., reuse_from=..., start_at=NODE)``), every node that is not
  NODE nor downstream of it reuses the output recorded for it in the chosen earlier run when
  the execution key still matches (``cache_hit`` with ``fromRun``); otherwise it runs, and
  everything downstream of it runs fresh too;
* when executions are recorded (a :class:`engine.RunRecorder` asks for them), each step that
  ended with an output hands ``(node id, key, output, handle)`` to the recorder, which stores
  it once in the run store (keyed by :func:`execution_key`), shared by every run that made it.

The key hashes the node's kind, its data (``pinnedOutput``/display fields left out), its
input, the run's variables at that step (templates in the data resolve against them, so a
changed variable counts as changed data) and the run's provider and model override
(``Run.meta``): an agent's own model and provider are part of its data. It is made of two
parts, the node's (kind and data) and the step's (input, variables, provider and model): a
recorded step stores only the step's part, as ``i`` + its digest; the node's part is made
again from the run's stored workflow when a later run asks for the recording. So recording
costs a step one short hash, not a serialisation of the node's data.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from engine.graph.index import GraphIndex
from engine.nodes.base import as_text
from engine.run.events import EventType

__all__ = [
    "RecordedExecution",
    "StepHook",
    "execution_key",
    "downstream_of",
    "PINNED_FIELD",
    "CACHE_HIT",
    "STEP_PINNED",
]

PINNED_FIELD = "pinnedOutput"
PINNED_HANDLE_FIELD = "pinnedHandle"
CACHE_HIT = EventType.CACHE_HIT.value
STEP_PINNED = EventType.STEP_PINNED.value
# Data fields that do not change what a node does (display only), left out of its key.
_NOT_IN_KEY = frozenset({PINNED_FIELD, PINNED_HANDLE_FIELD, "collapsed", "label", "note"})


class RecordedExecution(NamedTuple):
    """One node's recorded execution in an earlier run: its key, output, handle and that run."""

    key: str
    output: Any
    handle: Any
    run_id: str


def _data_json(node: Any) -> bytes:
    """The node's data as JSON (display-only fields left out) for its execution key; made at
    every step of a recorded run, so by pydantic's serializer directly when nothing is left out."""
    data = node.data
    if not hasattr(data, "model_dump_json"):
        return json.dumps(
            {k: v for k, v in dict(data or {}).items() if k not in _NOT_IN_KEY}, sort_keys=True, default=str
        ).encode()
    extra = data.__pydantic_extra__
    drop = {k for k in _NOT_IN_KEY if (extra and k in extra) or getattr(data, k, None) is not None}
    if drop:
        return data.model_dump_json(exclude=drop).encode()
    return type(data).__pydantic_serializer__.to_json(data)


def _node_digest(kind: str, data_json: bytes) -> str:
    """The node's part of an execution key: its kind and data."""
    h = hashlib.blake2b(digest_size=20)
    h.update(kind.encode("utf-8", "backslashreplace") + b"\0")
    h.update(data_json)
    return h.hexdigest()


def _run_part(provider: Any, model: Any) -> Any:
    """The hash state every step's part of a run starts from: the run's provider and model."""
    h = hashlib.blake2b(digest_size=20)
    h.update(f"{provider or ''}\0{model or ''}\0".encode("utf-8", "backslashreplace"))
    return h


def _step_digest(run_part: Any, value: Any, variables: Mapping[str, Any] | None) -> str:
    """The step's part of an execution key: its input and the run's variables (and, through
    ``run_part``, the run's provider and model)."""
    h = run_part.copy()
    h.update(_value_bytes(value))
    if variables:  # templates resolve against them: a changed variable is changed data
        h.update(
            b"\0v"
            + json.dumps(variables, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8", "backslashreplace")
        )
    return h.hexdigest()


def combine_key(node_digest: str, step_digest: str) -> str:
    """An execution key from its node's part and its step's part."""
    return hashlib.blake2b(f"{node_digest}:{step_digest}".encode("ascii"), digest_size=20).hexdigest()


#: A recorded step's stored key that holds only the step's part (see the module's doc).
STEP_DIGEST_MARK = "i"


def node_digest(node: Any) -> str:
    """The node's part of its execution keys (its kind and data)."""
    return _node_digest(node.type, _data_json(node))


def stored_key(node_part: str, stored: str) -> str:
    """The full key of a recorded step from what the store kept (``i`` + the step's part) and
    the node's part (:func:`node_digest` of the node as the recording run had it); a stored
    full key (recordings of older versions) is returned as it is."""
    if stored.startswith(STEP_DIGEST_MARK):
        return combine_key(node_part, stored[len(STEP_DIGEST_MARK) :])
    return stored


def _value_bytes(value: Any) -> bytes:
    if value.__class__ is str:
        return b"s" + value.encode("utf-8", "backslashreplace")
    return b"j" + json.dumps(value, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8", "backslashreplace")


def execution_key(
    kind: str,
    data: Mapping[str, Any],
    value: Any,
    provider: Any = None,
    model: Any = None,
    variables: Mapping[str, Any] | None = None,
) -> str:
    """The execution key of one step: a hash of kind, data (display fields left out), input, the
    run's variables, and the run's provider and model override."""
    return combine_key(
        _node_digest(kind, _data_json(_Holder(data))), _step_digest(_run_part(provider, model), value, variables)
    )


class _Holder:
    __slots__ = ("data",)

    def __init__(self, data: Any) -> None:
        self.data = data


def pinned_value(node: Any) -> tuple[bool, Any]:
    """(whether the node is pinned, its pinned output): ``pinnedOutput`` is an extra field of the data."""
    extra = getattr(node.data, "__pydantic_extra__", None)
    value = extra.get(PINNED_FIELD) if extra else None
    return value is not None, value


def any_pinned_node(workflow: Any) -> bool:
    """Whether any node of ``workflow`` holds a pinned output (a plain run makes no step hook)."""
    return any(
        extra.get(PINNED_FIELD) is not None
        for extra in [getattr(n.data, "__pydantic_extra__", None) for n in workflow.nodes]
        if extra
    )


def downstream_of(workflow: Any, node_ids: Any) -> set[str]:
    """The nodes reachable from ``node_ids`` along execution links (themselves included)."""
    return GraphIndex.of(workflow).downstream(node_ids)


class StepHook:
    """What the runtime asks before and after each step of a run that pins, reuses or records."""

    def __init__(
        self,
        ctx: Any,
        *,
        reuse: Mapping[str, tuple[RecordedExecution, ...]] | None = None,
        start_at: str | None = None,
        any_pinned: bool = True,
    ) -> None:
        self.ctx = ctx  # the run's RunContext
        self.reuse: dict[str, tuple[RecordedExecution, ...]] = dict(reuse or {})
        self.fresh: set[str] = downstream_of(ctx.workflow, [start_at]) if start_at else set()
        self.recorders: list[Callable[[str, str, Any, Any], None]] = []
        self.pinned: dict[str, Any] = {}
        if any_pinned:  # (the run knows whether any node is pinned)
            for node in ctx.workflow.nodes:
                on, value = pinned_value(node)
                if on:
                    self.pinned[node.id] = value
        # node id -> the node's part of its key (made once per node per run, in reruns only)
        self._node_part: dict[str, str] = {}
        meta = ctx.meta or {}
        self._run_part = _run_part(meta.get("provider"), meta.get("model"))
        self.hits = 0
        self._replayed: dict[str, set[int]] = {}  # node id -> which of its recorded steps this run reused
        # Whether before() can give a step's result (a pinned node, a recording to reuse): a run
        # that only records (every run with a run store) does not ask it at every step.
        self.supplies = bool(self.pinned or self.reuse)

    @property
    def active(self) -> bool:
        return bool(self.pinned or self.reuse or self.recorders)

    def step_digest(self, value: Any) -> str:
        """The step's part of the key of a step with input ``value`` (see :func:`execution_key`)."""
        return _step_digest(self._run_part, value, getattr(self.ctx, "variables", None))

    def _keyed(self, node: Any, value: Any) -> Any:
        """What a step's key takes as its input: the Start node receives nothing, but outputs
        the run's given input, so that input is its key's input (else a run with another
        input, an eval case whose input was edited, would reuse the old output)."""
        if value is None and node.type == "start":
            given = getattr(self.ctx, "initial_input", None)
            if given is not None:
                return {"initialInput": given}
        return value

    def key(self, node: Any, value: Any, step: str | None = None) -> str:
        """:func:`execution_key` of this step; the node's part is made once per run."""
        part = self._node_part.get(node.id)
        if part is None:
            part = self._node_part[node.id] = node_digest(node)
        return combine_key(part, step or self.step_digest(value))

    def before(self, spec: Any, node: Any, value: Any) -> tuple[Any, Any] | None:
        """The step's result without running it (pinned or reused), or None: run it."""
        node_id = node.id
        if node_id in self.pinned:
            output = self.pinned[node_id]
            handle = getattr(node.data, PINNED_HANDLE_FIELD, None)
            if not isinstance(handle, str):
                outs = spec.outputs(node.data)
                handle = outs[0] if outs else "output"
            self.ctx.emit(node_id, STEP_PINNED, as_text(output), {"handle": handle})
            if output.__class__ is str:
                self.ctx.last_text_output = output
            return output, handle
        steps = self.reuse.get(node_id)
        if steps is None or node_id in self.fresh:
            return None
        value = self._keyed(node, value)
        step = self.step_digest(value)
        key = self.key(node, value, step)
        # The node's first recorded step with this key not reused yet in this run (a loop's node
        # and body have one an iteration, taken in order: a loop whose body gives back what it got
        # goes round as recorded; a node reached by two branches finds each, whichever comes first;
        # a node reached more often than recorded reuses its last matching step again).
        if len(steps) == 1:  # (most nodes ran once)
            recorded = steps[0]
            if recorded.key != key:
                return None
        else:
            matching = [i for i, rec in enumerate(steps) if rec.key == key]
            if not matching:
                return None
            used = self._replayed.setdefault(node_id, set())
            i = next((i for i in matching if i not in used), matching[-1])  # (all used: the last again)
            used.add(i)
            recorded = steps[i]
        self.hits += 1
        handle = recorded.handle
        if isinstance(handle, list):
            handle = tuple(handle)
        extra: dict[str, Any] = {"fromRun": recorded.run_id}
        extra["handle" if handle is None or isinstance(handle, str) else "handles"] = (
            handle if handle is None or isinstance(handle, str) else list(handle)
        )
        self.ctx.emit(node_id, CACHE_HIT, as_text(recorded.output), extra)
        if recorded.output.__class__ is str:
            self.ctx.last_text_output = recorded.output
        spec.replayed(self.ctx, node, handle)  # the run's own state (a loop's iteration), as if it had run
        if self.recorders:  # the reused execution belongs to this run too (a later run may reuse it)
            for rec in self.recorders:
                rec(node_id, STEP_DIGEST_MARK + step, recorded.output, handle)
        return recorded.output, handle

    def after(self, node: Any, value: Any, output: Any, handle: Any) -> None:
        """A step ran and produced ``output`` on ``handle``: recorded; in a rerun, its downstream runs fresh."""
        node_id = node.id
        if self.reuse and node_id not in self.fresh:
            # It ran again (its data or input changed): nothing downstream of it may be reused.
            self.fresh |= downstream_of(self.ctx.workflow, [node_id])
        if self.recorders:  # the step's part only: the node's is made again from the stored workflow
            key = STEP_DIGEST_MARK + self.step_digest(self._keyed(node, value))
            for rec in self.recorders:
                rec(node_id, key, output, handle)


def reuse_map(reuse_from: Any, store: Any = None) -> tuple[dict[str, tuple[RecordedExecution, ...]], str | None]:
    """The recorded executions a run from a node may reuse, by node (each node's steps in the
    order they ran: a loop's steps ran once an iteration), and the run they came from.

    ``reuse_from``: None (nothing), a run id (its executions in ``store``, which the caller
    gives: the run passes the user's run store when it was given none), or a mapping node id ->
    :class:`RecordedExecution` (or ``{key, output, handle, runId}``), or a sequence of them (the
    node's steps).
    """
    if reuse_from is None:
        return {}, None
    if isinstance(reuse_from, str):
        if store is None:  # (the run passes its store, or the user's: this module does not import the store)
            raise ValueError("a run id to reuse needs the run store that holds it")
        return store.recorded_steps(reuse_from), reuse_from
    if not isinstance(reuse_from, Mapping):
        raise TypeError("reuse_from must be a run id or a mapping of node ids to recorded executions")
    out: dict[str, tuple[RecordedExecution, ...]] = {}
    run_ids = set()
    for node_id, recs in reuse_from.items():
        steps = []
        for rec in (recs,) if isinstance(recs, (RecordedExecution, Mapping)) else recs:
            if not isinstance(rec, RecordedExecution):
                rec = RecordedExecution(rec["key"], rec.get("output"), rec.get("handle"), rec.get("runId", ""))
            steps.append(rec)
            run_ids.add(rec.run_id)
        out[node_id] = tuple(steps)
    return out, (run_ids.pop() if len(run_ids) == 1 else None)
