"""What a run did at each node: :class:`StepLog`, and as the run's readers see it,
:class:`NodeRecord` and the views ``Run.records`` and ``Run.outcomes`` (read only).

:class:`StepLog` is what a run's steps leave behind them: how each node's last step ended when
it ended otherwise than done (``outcomes``), what each agent step did (``records``: plain
tuples, which the cyclic GC does not track), and the run's step hook (pinned outputs, reused
and recorded executions: engine/run/rerun.py; None for a plain run, whose steps ask nothing).
The scheduler's walk writes ``outcomes`` and reads ``hook`` directly; kinds reach the rest
through ``RunContext`` (``set_outcome``, ``step_recorded``, ``records``). :class:`StepRecords`
is the part of ``Run`` that shows a run's step log to its readers (``records``, ``outcomes``,
``record_executions``): a base class with no state of its own, reading the attributes named in
its annotations."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from engine.nodes.base import NodeOutcome
from engine.run.rerun import StepHook

__all__ = ["NodeRecord", "OutcomeView", "RecordView", "StepLog", "StepRecords"]

_DONE_TEXT = str(NodeOutcome.DONE)


class NodeRecord(NamedTuple):
    """What happened at an agent node the last time it ran (for the inspector's run tab).

    An immutable tuple of plain values (replaced, not mutated, when the step ends), so
    a long run's records are not tracked by the cyclic garbage collector. ``outcome`` is
    the node's :class:`~engine.NodeOutcome` (``Run.outcomes``), None while it runs.
    """

    input: str
    output: str | None = None
    started: float = 0.0
    ended: float | None = None
    usage: dict[str, int] | None = None
    error: str | None = None
    outcome: NodeOutcome | None = None

    @property
    def duration(self) -> float | None:
        return None if self.ended is None else self.ended - self.started


class OutcomeView(Mapping):
    """A read-only view of the nodes' outcomes: the recorded ones, else done for a node with an output."""

    __slots__ = ("_recorded", "_outputs")

    def __init__(self, recorded: dict[str, NodeOutcome], outputs: dict[str, Any]) -> None:
        self._recorded = recorded
        self._outputs = outputs

    def __getitem__(self, node_id: str) -> NodeOutcome:
        outcome = self._recorded.get(node_id)
        if outcome is not None:
            return outcome
        if node_id in self._outputs:
            return NodeOutcome.DONE
        raise KeyError(node_id)

    def __iter__(self) -> Iterator[str]:
        yield from self._outputs
        for node_id in self._recorded:
            if node_id not in self._outputs:
                yield node_id

    def __len__(self) -> int:
        return len(self._outputs) + sum(1 for n in self._recorded if n not in self._outputs)

    def texts(self) -> dict[str, str]:
        """The outcomes as text, in this view's order (as a snapshot keeps them), made without
        a lookup per node."""
        texts = dict.fromkeys(self._outputs, _DONE_TEXT)
        for node_id, outcome in self._recorded.items():
            texts[node_id] = str(outcome)
        return texts


class RecordView(Mapping):
    """A read-only view of a run's records as :class:`NodeRecord` tuples.

    A raw record holds the usage as the ``llm_response`` event's extra JSON text
    (``{"usage": {...}, "model": ...}``), decoded here.
    """

    __slots__ = ("_raw", "_outcomes")

    def __init__(self, raw: dict[str, tuple], outcomes: Mapping[str, NodeOutcome]) -> None:
        self._raw = raw
        self._outcomes = outcomes

    def __getitem__(self, node_id: str) -> NodeRecord:
        inp, out, started, ended, usage_json, error = self._raw[node_id]
        usage = json.loads(usage_json).get("usage") if usage_json else None
        return NodeRecord(inp, out, started, ended, usage, error, self._outcomes.get(node_id))

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


class StepLog:
    """What a run's steps left (see the module docstring)."""

    __slots__ = ("outcomes", "records", "hook", "any_pinned")

    def __init__(self, any_pinned: bool) -> None:
        # How each node's last step ended when not done: done is a node with an output and no
        # entry here (so the hot path of a step writes nothing more than its output).
        self.outcomes: dict[str, NodeOutcome] = {}
        self.records: dict[str, tuple] = {}
        self.hook: StepHook | None = None
        self.any_pinned = any_pinned  # (some node's output is pinned: a hook is then needed)

    def set_outcome(self, node_id: str, outcome: NodeOutcome) -> None:
        self.outcomes[node_id] = outcome

    def step_recorded(self, node: Any, value: Any, output: Any, handle: Any) -> None:
        """A step produced ``output`` (the hook records it for later runs from a node)."""
        if self.hook is not None:
            self.hook.after(node, value, output, handle)

    def record_executions(self, ctx: Any, callback: Callable[[str, str, Any, Any], None]) -> None:
        """Call ``callback`` for each step that ends with an output (see ``Run.record_executions``)."""
        if self.hook is None:
            self.hook = StepHook(ctx, any_pinned=self.any_pinned)
        self.hook.recorders.append(callback)

    def outcome_view(self, outputs: dict[str, Any]) -> OutcomeView:
        return OutcomeView(self.outcomes, outputs)


class StepRecords:
    """A run's step log as its readers see it (see the module docstring)."""

    __slots__ = ()

    # What this reads of the run (its slots and fields are made by Run and RunFields).
    _log: StepLog
    _ctx: Any  # (its RunContext)
    outputs: dict[str, Any]

    def record_executions(self, callback: Callable[[str, str, Any, Any], None]) -> None:
        """Call ``callback(node_id, key, output, handle)`` for each step that ends with an output
        (a reused one included); the run store's recorder keeps them for later runs from a node.
        ``key`` is the step's part of its execution key (``engine.run.rerun``: ``i`` + a digest); the
        store makes the full key again from the run's workflow when a later run reuses it."""
        self._log.record_executions(self._ctx, callback)

    @property
    def records(self) -> Mapping[str, NodeRecord]:
        """What each agent node did the last time it ran, by node id."""
        return RecordView(self._log.records, self.outcomes)

    @property
    def outcomes(self) -> Mapping[str, NodeOutcome]:
        """How each node's last step ended (done, failed, cancelled; skipped with later policies), by node id."""
        return self._log.outcome_view(self.outputs)
