"""What a run did, derived from its events only: the one run-state reducer (no Qt).

Every view of a run reads it: the live console and the canvas (fed event by event by the
editor's run bridge), a stored run's view and the run history (fed a stored log at once),
the CLI's printer and the exports. The same events therefore always give the same picture.

Feed events in order with :meth:`RunState.apply` (or :meth:`RunState.apply_many`); read:

* ``states``: node id → one of :data:`NODE_STATES` for every node an event touched;
  :meth:`RunState.state_of` answers ``idle`` for the others and :meth:`RunState.node_states`
  gives every node of the workflow. When the run ends, nodes never reached become
  ``skipped``; nodes still ``running`` become ``cancelled`` (run cancelled) or ``failed``
  (run failed); approvals still ``waiting``/``queued`` become ``cancelled`` or ``skipped``.
* ``links``: the links followed, ``(source, sourceHandle, target)`` with the handle as the
  workflow has it (a missing handle is ``"output"``). A node that ends offers its target(s) on
  the handle its event names (``llm_response`` → ``output``; ``logic_check``'s
  ``conditionIndex``/``matched`` → ``condition-<i>``/``false``; ``input_received``'s
  ``handle`` → ``approve``/``reject``/an option's label); the target's next ``step_start`` takes the oldest
  offer. Offers made while the run was paused count only once their target really starts.
  A subagent call marks its ``subagent`` link followed.
* ``details``: per node the last input, output, start/end, duration, token usage, error and
  visits (:class:`NodeDetails`).
* ``pending_approvals``: approval nodes waiting for a decision, in the order they will be
  asked (the one asked now first).
* ``status`` (a :class:`RunStatus` value; ``pending`` before any event), ``error``,
  ``final_output``, ``started_at``, ``ended_at``.
* ``calls``/``call_roots``: the subagent call tree (:class:`SubagentCall`, by call id).
* ``provider_problem``: set when a step's model provider could not serve at all (its server
  did not answer, or it is not configured: an ``llm_error`` with ``providerUnavailable``), or
  has no such model (``modelUnavailable``): ``{node, message, provider, model}``
  (``provider``: its id, None when unknown; ``model``: the missing model, None for a
  provider that could not serve); None otherwise.
  A nested run's problem is its parent's too.

Events whose run path differs from this state's go to a nested :class:`RunState` in
``children`` (nested runs never collide). ``llm_delta`` (the hot path of a stream) changes
nothing and costs one comparison. ``states_dirty``/``links_dirty`` are set when states or
links change, for a view that repaints only then (it clears them).

Beside it: the state words and :class:`NodeDetails` (engine/run/node_details.py), the call
tree and :class:`SubagentCall` (engine/run/call_log.py), what reached a node (engine/run/passed.py);
their names are importable from here.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

from engine.graph.index import GraphIndex
from engine.graph.model import Workflow
from engine.nodes import SPECS, spec_for
from engine.run.call_log import SubagentCall, call_tree, hang, on_listed_call
from engine.run.events import SYSTEM_NODE, EventType, RunEvent, RunStatus
from engine.run.node_details import (
    CACHED,
    CANCELLED,
    DONE,
    FAILED,
    IDLE,
    NODE_STATES,
    QUEUED,
    RETRYING,
    RUNNING,
    SKIPPED,
    WAITING,
    Link,
    NodeDetails,
    count_usage,
)
from engine.run.passed import Passed

__all__ = [
    "RunState",
    "NodeDetails",
    "SubagentCall",
    "NODE_STATES",
    "Link",
    "IDLE",
    "RUNNING",
    "DONE",
    "FAILED",
    "WAITING",
    "QUEUED",
    "CANCELLED",
    "SKIPPED",
    "RETRYING",
    "CACHED",
]

_DELTA = EventType.LLM_DELTA.value
_STATUS = EventType.RUN_STATUS.value
_STEP_START = EventType.STEP_START.value
_START_PROMPT = EventType.START_PROMPT.value
_LLM_RESPONSE = EventType.LLM_RESPONSE.value
_NODE_OUTPUT = EventType.NODE_OUTPUT.value
_LLM_ERROR = EventType.LLM_ERROR.value
_ERROR = EventType.ERROR.value
_LOGIC_CHECK = EventType.LOGIC_CHECK.value
_WAIT_INPUT = EventType.WAIT_INPUT.value
_QUEUED = EventType.APPROVAL_QUEUED.value
_INPUT_RECEIVED = EventType.INPUT_RECEIVED.value
_FLOW_START = EventType.FLOW_CALL_START.value
_FLOW_END = EventType.FLOW_CALL_END.value
_FLOW_CALLS = (_FLOW_START, _FLOW_END, EventType.FLOW_CALL_ERROR.value)
_TOOL_START = EventType.TOOL_CALL_START.value
_TOOL_END = EventType.TOOL_CALL_END.value
_TOOL_CALLS = (_TOOL_START, _TOOL_END, EventType.TOOL_CALL_ERROR.value)
_CALL_START = EventType.SUBAGENT_CALL_START.value
_CALL_END = EventType.SUBAGENT_CALL_END.value
_CALL_ERROR = EventType.SUBAGENT_CALL_ERROR.value
_CACHE_HIT = EventType.CACHE_HIT.value
_STEP_PINNED = EventType.STEP_PINNED.value
_STEP_END = EventType.STEP_END.value
_STEP_RETRY = EventType.STEP_RETRY.value
_STEP_SKIPPED = EventType.STEP_SKIPPED.value
_LOOP_CHECK = EventType.LOOP_CHECK.value
_JOIN_WAIT = EventType.JOIN_WAIT.value
_ROUTE_CHOICE = EventType.ROUTE_CHOICE.value


@dataclass
class RunState:
    """Feed it a run's events in order; read the fields listed in the module's docstring."""

    workflow: Workflow | None = None
    initial_input: str | None = None
    path: str = ""
    states: dict[str, str] = field(default_factory=dict)
    links: set[Link] = field(default_factory=set)
    details: dict[str, NodeDetails] = field(default_factory=dict)
    status: str = RunStatus.PENDING
    final_output: str | None = None
    error: str | None = None
    started_at: float | None = None
    ended_at: float | None = None
    pending_approvals: list[str] = field(default_factory=list)
    calls: dict[str, SubagentCall] = field(default_factory=dict)
    call_roots: list[str] = field(default_factory=list)
    children: dict[str, RunState] = field(default_factory=dict)
    provider_problem: dict[str, Any] | None = None
    #: The run's final variables (its ending ``run_status`` event's ``vars``), None before it ends.
    vars: dict[str, Any] | None = None
    states_dirty: bool = False
    links_dirty: bool = False

    def __post_init__(self) -> None:
        self._kinds: dict[str, str] = {}
        # the workflow's GraphIndex (read only): (source, handle) -> links; target -> the links into
        # it, in the workflow's order; (parent, child) of the subagent links
        self._out: Mapping[tuple[str, str], Sequence[Link]] = {}
        self._in: Mapping[str, Sequence[Link]] = {}
        self._sub_links: AbstractSet[tuple[str, str]] = frozenset()
        self._offers: dict[str, deque[Link]] = {}  # target -> links offered to it, oldest first
        self._checked: set[str] = set()  # loops whose last event was a loop_check
        if self.workflow is not None:
            self._index(self.workflow)

    def _index(self, workflow: Workflow) -> None:
        self._kinds = {n.id: n.type for n in workflow.nodes}
        index = GraphIndex.of(workflow)
        self._out, self._in, self._sub_links = index.links_by_handle, index.links_into, index.subagent_pairs

    def reset(self, workflow: Workflow | None = None, initial_input: str | None = None) -> None:
        """Forget everything and start over for a new run (of ``workflow``)."""
        self.workflow = workflow
        self.initial_input = initial_input
        self.states.clear()
        self.links.clear()
        self.details.clear()
        self.pending_approvals.clear()
        self.calls.clear()
        self.call_roots.clear()
        self.children.clear()
        self._offers = {}
        self._checked = set()
        self.status = RunStatus.PENDING
        self.final_output = self.error = None
        self.vars = None
        self.started_at = self.ended_at = None
        self._kinds, self._out, self._in, self._sub_links = {}, {}, {}, set()
        if workflow is not None:
            self._index(workflow)
        self.states_dirty = self.links_dirty = True

    @classmethod
    def of(cls, workflow: Workflow | None, events: Iterable[RunEvent], *, initial_input: str | None = None) -> RunState:
        """The state after ``events`` (a stored or finished run)."""
        state = cls(workflow, initial_input)
        state.apply_many(events)
        return state

    # ------------------------------------------------------------------ reading
    def state_of(self, node_id: str) -> str:
        return self.states.get(node_id, IDLE)

    def node_states(self) -> dict[str, str]:
        """Every node of the workflow (``idle`` when no event touched it), and any other node touched."""
        out = {nid: IDLE for nid in self._kinds}
        out.update(self.states)
        return out

    def nodes_in(self, state: str) -> set[str]:
        return {nid for nid, s in self.node_states().items() if s == state}

    @property
    def visits(self) -> dict[str, int]:
        return {nid: d.visits for nid, d in self.details.items() if d.visits}

    @property
    def outputs(self) -> dict[str, str]:
        return {nid: d.output for nid, d in self.details.items() if d.output is not None}

    @property
    def errors(self) -> dict[str, str]:
        return {nid: d.error for nid, d in self.details.items() if d.error}

    @property
    def waiting_for(self) -> str | None:
        """The approval asked now, or None."""
        return self.pending_approvals[0] if self.pending_approvals else None

    @property
    def is_final(self) -> bool:
        return self.status in (RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.CANCELLED)

    def node_details(self, node_id: str) -> dict[str, Any]:
        """The node's details (:class:`NodeDetails` as a dict) and its ``state``. A step that logs
        no input of its own (a condition, an approval, a join, a loop, an HTTP request...) has
        :meth:`passed_input` as its input; a condition, which passes it on, as its output too."""
        d = self.details.get(node_id)
        out = (d or NodeDetails(node_id)).to_dict()
        out["state"] = self.states.get(node_id)
        if d is not None and d.input is None and d.visits:
            passed = self.passed_input(node_id)
            if passed is not None:
                out["input"] = passed
                if not out["output"] and self._kinds.get(node_id) == "if":
                    out["output"] = passed
        return out

    def passed_input(self, node_id: str) -> str | None:
        """What reached ``node_id`` along the links the run followed: the output of the step that
        reached it last (looking through conditions and approvals, which pass their input on);
        for a join, its branches' outputs as a JSON list, in link order. None when unknown
        (engine/run/passed.py)."""
        return Passed(self._kinds, self._in, self.links, self.details).input_of(node_id)

    def call_tree(self) -> list[tuple[SubagentCall, int]]:
        """Every subagent call in tree order (depth-first, calls in start order), with its level."""
        return call_tree(self.calls, self.call_roots)

    # ------------------------------------------------------------------ feeding
    def apply_many(self, events: Iterable[RunEvent]) -> None:
        apply = self.apply
        for ev in events:
            if ev.type != _DELTA:
                apply(ev)

    def _set(self, node_id: str, state: str) -> None:
        if self.states.get(node_id) != state:
            self.states[node_id] = state
            self.states_dirty = True

    def _detail(self, node_id: str) -> NodeDetails:
        d = self.details.get(node_id)
        if d is None:
            d = self.details[node_id] = NodeDetails(node_id)
        return d

    def _offer(self, node_id: str, handle: str) -> None:
        for link in self._out.get((node_id, handle), ()):
            offers = self._offers.get(link[2])
            if offers is None:
                self._offers[link[2]] = deque((link,))
            else:
                offers.append(link)

    def _not_pending(self, node_id: str) -> None:
        if node_id in self.pending_approvals:
            self.pending_approvals.remove(node_id)

    def apply(self, ev: RunEvent) -> None:
        """Take one event into account (events must come in emission order)."""
        t = ev.type
        if t == _DELTA:
            return
        path = ev.path
        if path and path != self.path:
            child = self.children.get(path)
            if child is None:
                child = self.children[path] = RunState(path=path)
            child.apply(ev)
            if t == _LLM_ERROR and child.provider_problem is not None and self.provider_problem is None:
                self.provider_problem = child.provider_problem  # a nested run's step: the run's problem too
            return
        nid = ev.node_id
        if t == _STEP_START:
            offers = self._offers.get(nid)
            if offers:
                self.links.add(offers.popleft())
                self.links_dirty = True
            d = self._detail(nid)
            d.visits += 1
            d.started, d.ended, d.error = ev.timestamp, None, None
            d.attempt = d.max_attempts = 0
            d.outcome = None
            d.cached_from, d.pinned = None, False
            if _is_entry(self._kinds.get(nid)):  # a start node logs nothing else: it is done at once
                out = self.initial_input
                if out is None and self.workflow is not None:
                    node = self.workflow.node(nid)
                    out = getattr(node.data, "initialInput", "") if node is not None else ""
                d.output, d.ended = out or "", ev.timestamp
                self._set(nid, DONE)
                self._offer(nid, "output")
            else:
                self._set(nid, RUNNING)
        elif t == _START_PROMPT:
            self._detail(nid).input = ev.content
        elif t == _LLM_RESPONSE:
            d = self._detail(nid)
            d.output, d.ended = ev.content, ev.timestamp
            extra = (ev.extra or {}) if ev.extra_json else {}
            usage = extra.get("usage")
            d.usage = usage if isinstance(usage, dict) else None
            model = extra.get("model")
            d.model = model if isinstance(model, str) and model else None
            count_usage(d, d.usage)
            self.final_output = ev.content
            self._set(nid, DONE)
            self._offer(nid, "output")
        elif t == _NODE_OUTPUT:  # a kind that logs no output of its own (a plug-in's): done, its handle followed
            d = self._detail(nid)
            d.output, d.ended = ev.content, ev.timestamp
            self._set(nid, DONE)
            extra = ev.extra or {}
            listed = extra.get("handles")
            handles = listed if isinstance(listed, list) else [extra.get("handle")]
            for handle in handles:
                if isinstance(handle, str):
                    self._offer(nid, handle)
            if handles == ["body"]:  # a loop going round: its first iteration, or the one after its check
                d.iteration = d.iteration + 1 if nid in self._checked else 1
                self._checked.discard(nid)
        elif t == _STEP_END:
            extra = ev.extra or {}
            status = extra.get("status")
            d = self._detail(nid)
            d.outcome = status if isinstance(status, str) else None
            d.ended = d.ended or ev.timestamp
            if status == "failed" and extra.get("handle") == "error":  # failed, followed its error links
                d.error = ev.content
                d.output = ev.content
                self._set(nid, FAILED)
                self._offer(nid, "error")
            elif status == "failed":
                d.error = d.error or ev.content
                self._set(nid, FAILED)
        elif t == _STEP_RETRY:
            extra = ev.extra or {}
            d = self._detail(nid)
            attempt, most = extra.get("attempt"), extra.get("maxAttempts")
            d.attempt = attempt if isinstance(attempt, int) else d.attempt + 1
            d.max_attempts = most if isinstance(most, int) else d.max_attempts
            d.error = ev.content
            self._set(nid, RETRYING)
        elif t == _STEP_SKIPPED:
            d = self._detail(nid)
            d.error, d.output, d.ended = ev.content, None, ev.timestamp
            self._set(nid, SKIPPED)
            self._offer(nid, "output")
        elif t == _LOOP_CHECK:
            extra = ev.extra or {}
            d = self._detail(nid)
            iteration = extra.get("iteration")
            if isinstance(iteration, int):
                d.iteration = iteration
            total = extra.get("total")
            if isinstance(total, int) and not isinstance(total, bool):
                d.total = total
            self._checked.add(nid)
        elif t == _ROUTE_CHOICE:  # a router's model request: its tokens count like a response's
            extra = ev.extra or {}
            d = self._detail(nid)
            usage, model = extra.get("usage"), extra.get("model")
            d.usage = usage if isinstance(usage, dict) else None
            count_usage(d, d.usage)
            if isinstance(model, str) and model:
                d.model = model
        elif t == _JOIN_WAIT:
            extra = ev.extra or {}
            d = self._detail(nid)
            delivered, expected = extra.get("delivered"), extra.get("expected")
            d.delivered = delivered if isinstance(delivered, int) else d.delivered + 1
            d.expected = expected if isinstance(expected, int) else d.expected
            # the links that delivered are followed; their offers wait for the join's step
            offers = self._offers.get(nid)
            if offers:
                self.links.add(offers.popleft())
                self.links_dirty = True
        elif t == _STATUS:
            self._on_status(ev)
        elif t == _LLM_ERROR or t == _ERROR:
            if t == _LLM_ERROR and ev.extra_json and 'Unavailable"' in ev.extra_json:
                extra = ev.extra or {}
                if extra.get("providerUnavailable") is True or extra.get("modelUnavailable") is True:
                    provider, model = extra.get("provider"), extra.get("model")
                    self.provider_problem = {
                        "node": nid,
                        "message": ev.content,
                        "provider": provider if isinstance(provider, str) else None,
                        "model": model if isinstance(model, str) else None,
                    }
            if nid != SYSTEM_NODE:
                d = self._detail(nid)
                if t == _LLM_ERROR or not d.error:  # the model's own message, not the run's summary
                    d.error = ev.content
                d.ended = d.ended or ev.timestamp
                self._set(nid, FAILED)
        elif t == _LOGIC_CHECK:
            extra = ev.extra or {}
            index = extra.get("conditionIndex")
            if extra.get("matched") and isinstance(index, int):
                handle = f"condition-{index}"
            elif "conditionIndex" in extra and index is None:  # no condition matched: the else branch
                handle = "false"
            else:
                return
            d = self._detail(nid)
            # A condition passes on what it received (the runtime's output for it): that is its
            # output; the branch it chose is the link offered, shown on the canvas.
            d.output, d.ended = (d.input if d.input is not None else ""), ev.timestamp
            self._set(nid, DONE)
            self._offer(nid, handle)
        elif t == _WAIT_INPUT:
            self._not_pending(nid)
            self.pending_approvals.insert(0, nid)
            self._set(nid, WAITING)
        elif t == _QUEUED:
            if nid not in self.pending_approvals:
                self.pending_approvals.append(nid)
            self._set(nid, QUEUED)
        elif t == _INPUT_RECEIVED:
            self._not_pending(nid)
            d = self._detail(nid)
            d.output, d.ended = ev.content, ev.timestamp
            self._set(nid, DONE)
            extra = (ev.extra or {}) if ev.extra_json else {}
            handle = extra.get("handle")
            if extra.get("edited"):
                d.review = {
                    "decision": handle,
                    "note": extra.get("note", ""),
                    "output": extra.get("output"),
                    "original": extra.get("original"),
                }
            if isinstance(handle, str):  # approve, reject or an option's label
                self._offer(nid, handle)
        elif t == _CALL_START or t == _CALL_END or t == _CALL_ERROR:
            self._on_call(ev)
        elif t in _FLOW_CALLS:
            on_listed_call(self.calls, self.call_roots, ev, _FLOW_START, _FLOW_END, "flow")
        elif t in _TOOL_CALLS:
            on_listed_call(self.calls, self.call_roots, ev, _TOOL_START, _TOOL_END, "tool")
        elif t == _CACHE_HIT or t == _STEP_PINNED:  # not run: a recorded or pinned output flows on
            d = self._detail(nid)
            extra = ev.extra or {}
            kind = self._kinds.get(nid)
            handle = extra.get("handle")
            # shown as a run of the kind shows it: an approval's decision; a condition's output is what
            # it passes on (the recorded output itself)
            if kind == "approval" and handle in ("approve", "reject"):
                d.output = json.dumps({"decision": handle, "note": ""})
            else:
                d.output = ev.content
            d.ended = ev.timestamp
            if t == _CACHE_HIT:
                d.cached_from = extra.get("fromRun") if isinstance(extra.get("fromRun"), str) else ""
                self._set(nid, CACHED)
            else:
                d.pinned = True
                self._set(nid, DONE)
            if self._kinds.get(nid) == "agent":
                self.final_output = ev.content
            listed = extra.get("handles")
            handles = listed if isinstance(listed, list) else [extra.get("handle")]
            for handle in handles:
                if isinstance(handle, str):
                    self._offer(nid, handle)

    def _on_call(self, ev: RunEvent) -> None:
        fields = ev.extra or {}
        child = fields.get("subagentNodeId")
        if not isinstance(child, str):
            return
        t, message = ev.type, ev.content
        d = self._detail(child)
        call_id = fields.get("callId")
        call = self.calls.get(call_id) if isinstance(call_id, str) else None
        if t == _CALL_START:
            parent = fields.get("parentNodeId") or ev.node_id
            if (parent, child) in self._sub_links and (parent, "subagent", child) not in self.links:
                self.links.add((parent, "subagent", child))
                self.links_dirty = True
            d.visits += 1
            d.started, d.ended, d.input, d.error = ev.timestamp, None, message, None
            self._set(child, RUNNING)
            if isinstance(call_id, str):
                parent_call = fields.get("parentCallId")
                depth = fields.get("depth")
                call = self.calls[call_id] = SubagentCall(
                    call_id,
                    parent_call if isinstance(parent_call, str) else None,
                    parent,
                    child,
                    str(fields.get("subagentName") or child),
                    depth if isinstance(depth, int) else 1,
                    input=message,
                    started=ev.timestamp,
                )
                hang(self.calls, self.call_roots, call)
                # calls logged before their parent call hang under the step until it shows up
                for orphan in [c for c in self.call_roots if self.calls[c].parent_call_id == call_id]:
                    self.call_roots.remove(orphan)
                    call.children.append(orphan)
        elif t == _CALL_END:
            d.output, d.ended = message, ev.timestamp
            usage, model = fields.get("usage"), fields.get("model")
            if isinstance(usage, dict):  # the call's tokens (a call logged before they were: none)
                d.usage = usage
                count_usage(d, usage)
            if isinstance(model, str) and model:
                d.model = model
            self._set(child, DONE)
            if call is not None:
                call.output, call.ended, call.state = message, ev.timestamp, DONE
                call.usage = usage if isinstance(usage, dict) else None
        else:
            d.error, d.ended = message, ev.timestamp
            self._set(child, FAILED)
            if call is not None:
                call.error, call.ended, call.state = message, ev.timestamp, FAILED

    def _on_status(self, ev: RunEvent) -> None:
        try:
            status = RunStatus(ev.content)
        except ValueError:
            return
        self.status = status
        if status == RunStatus.RUNNING and self.started_at is None:
            self.started_at = ev.timestamp
        if not status.is_final:
            return
        self.ended_at = ev.timestamp
        detail = (ev.extra or {}).get("detail") if ev.extra_json else None
        final_vars = (ev.extra or {}).get("vars") if ev.extra_json else None
        if isinstance(final_vars, dict):
            self.vars = final_vars
        if status != RunStatus.COMPLETED:
            self.error = detail if isinstance(detail, str) else self.error
        self.pending_approvals.clear()
        interrupted = CANCELLED if status == RunStatus.CANCELLED else FAILED
        for nid, state in list(self.states.items()):
            if state == RUNNING or state == RETRYING:
                self._set(nid, interrupted)
                d = self._detail(nid)
                d.error = d.error or ("Cancelled." if interrupted == CANCELLED else "Not finished.")
                d.ended = d.ended or ev.timestamp
            elif state in (WAITING, QUEUED):
                self._set(nid, CANCELLED if status == RunStatus.CANCELLED else SKIPPED)
        for call in self.calls.values():
            if call.state == RUNNING:
                call.state, call.ended = FAILED, call.ended or ev.timestamp
        for nid in self._kinds:
            if nid not in self.states:
                self._set(nid, SKIPPED)

    def __repr__(self) -> str:
        return (
            f"RunState({self.status}, {len(self.states)} nodes touched, {len(self.links)} links, "
            f"{len(self.pending_approvals)} approvals pending)"
        )


def _is_entry(kind: str | None) -> bool:
    """Whether a node of ``kind`` is where a run begins (the kind's spec says so)."""
    if kind is None:
        return False
    spec = SPECS.get(kind) or spec_for(kind)
    return spec is not None and spec.entry
