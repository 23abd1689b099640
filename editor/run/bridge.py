"""RunBridge: the one place where engine run events become Qt signals.

The engine runs on the Qt event loop through qasync: ``start()`` and ``resume()`` create
asyncio tasks on the running loop (never threads, never a nested loop), so the window
stays responsive whatever the run does.

Invariants
* The engine calls :meth:`_on_event` synchronously as it emits; that method only appends
  to a buffer (and arms a timer). Views receive events in order, in batches, through
  ``events_batched`` at most every :attr:`flush_interval_ms` (16 ms: a frame; streamed
  text alone, already gathered in frames by the run, on the next turn of the loop), at most
  :attr:`max_batch` at a time (a larger backlog follows on the next turns of the loop),
  and all at once when a run settles (paused or ended), so a settled run is fully shown.
* What the run did is derived by the engine's one reducer, :attr:`run_state`
  (:class:`engine.RunState`), fed in each flush before any signal; widgets read it (and
  the other accessors here), never the engine's ``Run`` itself.
* While a run is recorded, an event is delivered only once the store has committed it
  (the recorder's ``on_commit`` count, see :meth:`_committed_batch`): what the window
  painted survives a kill of the app. Streamed text (``llm_delta``) right after the
  committed events goes with them, without waiting for its own commit (its step's start
  is committed); a delta held behind an event not committed yet asks the store to commit
  now (``RunRecorder.commit_soon``).
* In each flush, ``events_batched`` comes first, then ``status_changed`` (when the status
  changed), ``node_states_changed`` / ``links_followed`` (when they changed) and
  ``approvals_changed`` (when an approval was reached, queued or answered).
* ``run_finished(status)`` is emitted exactly once per run, after its last events have
  been flushed and the run is recorded (when a store was given).
* At most one engine operation (start or resume) is in flight; ``resume()`` while one
  is, or while nothing waits for input, raises :class:`RunStateError`.
* ``cancel()`` calls ``Run.cancel()``, which cancels every branch task and so closes open
  HTTP requests; a cancelled run settles on the next turns of the loop.
* The run works on a deep copy of the workflow: edits made on the canvas during a run
  do not reach it.
* A paused run taken up from the store (``open_paused``) is claimed there only when a
  decision or a cancel comes, so merely looking at it never steals it from another process.
* The store's waits (commit after a pause or the end, closing the recorder) happen in a
  worker thread; the engine itself never leaves the event loop's thread.
* qasync's ``run_forever`` does not install asyncio's async-generator hooks, so a
  streamed HTTP response left unfinished (cancel) would be finalised by the garbage
  collector outside the loop ("async generator ignored GeneratorExit"). ``start()``
  installs the running loop's hooks when none are set, as ``BaseEventLoop.run_forever``
  does, so such generators are closed on the loop.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, QTimer, Signal

from engine import (
    FlowdeskError,
    Run,
    RunEvent,
    RunRecorder,
    RunState,
    RunStateError,
    RunStatus,
    RunStore,
    StoreError,
    Workflow,
    as_text,
    make_resolver,
    option_labels,
)

__all__ = ["RunBridge", "ApprovalRequest"]

log = logging.getLogger(__name__)

_APPROVAL_EVENTS = frozenset({"wait_input", "approval_queued", "input_received"})


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """One approval waiting for a decision: the first in ``approvals()`` is the active one."""

    node_id: str
    title: str
    prompt: str
    input_text: str  # the output under review
    active: bool
    #: A tool call waiting for approval: ``{kind: "tool_call", tool, server?, arguments, schema, ...}``.
    tool_call: dict | None = None
    options: tuple[str, ...] = ()  # decisions besides approve/reject (an approval's option labels)
    deadline: float | None = None  # when the approval takes on_timeout (epoch seconds; active card only)
    on_timeout: str | None = None


class RunBridge(QObject):
    """Starts, resumes and cancels one run at a time and turns its events into signals."""

    events_batched = Signal(list)  # list[RunEvent], in emission order
    status_changed = Signal(str)  # RunStatus value
    run_started = Signal(str)  # run id
    run_finished = Signal(str)  # final status: completed, failed or cancelled
    approvals_changed = Signal()
    node_states_changed = Signal(dict)  # {node_id: "running"|"done"|"failed"|"waiting"|"queued"|"skipped"|"cancelled"}
    links_followed = Signal(object)  # frozenset[(source, sourceHandle, target)]
    error_occurred = Signal(str)  # a problem outside the run (cannot start, store failure)

    def __init__(
        self, parent: QObject | None = None, *, flush_interval_ms: int = 16, delta_interval: float = 0.016
    ) -> None:
        super().__init__(parent)
        self.flush_interval_ms = flush_interval_ms
        self.max_batch = 5000  # events per timed flush; the rest follows on the next turn of the loop
        self.delta_interval = delta_interval
        self.run: Run | None = None
        # What start() makes: the local Run, or a drop-in such as engine.RemoteRun (a run on a
        # Temporal server, same surface), set by whoever offers "Run on".
        self.run_factory: Any = Run
        self.run_state = RunState()
        self._wait_prompts: dict[str, str] = {}  # node id -> the prompt of its last wait_input (subflows)
        self._timeout_handle: asyncio.TimerHandle | None = None  # the pending approval's deadline
        self._recorder: RunRecorder | None = None
        self._buffer: list[RunEvent] = []
        self._armed = False
        # Delivery waits for the store: events committed (counted on the writer thread) and
        # delivered, since the recorder was made; _gated while a recorder records this run.
        self._committed = 0
        self._delivered = 0
        self._gated = False
        self._task: asyncio.Task | None = None
        self._decision_queued = False  # a decision waits for the operation that paused to finish
        self._finished_emitted = True
        self._claim: RunStore | None = None  # a paused run taken from this store, not yet claimed
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(flush_interval_ms)
        self._timer.timeout.connect(self._flush_some)

    # ------------------------------------------------------------------ state
    @property
    def status(self) -> str:
        return str(self.run.status) if self.run is not None else str(RunStatus.PENDING)

    @property
    def is_active(self) -> bool:
        """A run exists and has not ended (running or paused)."""
        return self.run is not None and not self.run.status.is_final and not self._finished_emitted

    @property
    def is_busy(self) -> bool:
        """An engine operation (start or resume) is in flight."""
        return self._task is not None and not self._task.done()

    def approvals(self) -> list[ApprovalRequest]:
        """The pending approval (active) then the queued ones, in the order they will be asked."""
        run = self.run
        if run is None or run.pending_approval is None:
            return []
        items = [(run.pending_approval, run.pending_input())]
        items += run.queued_approval_inputs()
        out = []
        for i, (node_id, value) in enumerate(items):
            node = run.workflow.node(node_id)
            prompt = (
                (getattr(node.data, "prompt", "") if node is not None else "")
                or self._wait_prompts.get(node_id)
                or "Approve or reject to continue."
            )
            call = None
            if i == 0:
                extra = getattr(run, "waiting_extra", lambda: None)()
                if isinstance(extra, dict) and extra.get("kind") == "tool_call":
                    call = extra
                    prompt = run.waiting_prompt() or prompt
            timeout = run.pause_timeout() if i == 0 and hasattr(run, "pause_timeout") else None
            if i == 0 and hasattr(run, "decisions"):
                options = tuple(d for d in run.decisions() if d not in ("approve", "reject"))
            else:
                options = tuple(option_labels(node.data)) if node is not None and node.type == "approval" else ()
            out.append(
                ApprovalRequest(
                    node_id,
                    node.title if node is not None else node_id,
                    prompt,
                    as_text(value),
                    i == 0,
                    tool_call=call,
                    options=options,
                    deadline=timeout[0] if timeout else None,
                    on_timeout=timeout[1] if timeout else None,
                )
            )
        return out

    # ------------------------------------------------------------------ approvals that time out
    def _arm_timeout(self, run: Any) -> None:
        """At the pending approval's deadline the run takes its onTimeout decision (docs/design.md:
        the run takes it; a run taken up after its deadline takes it at once)."""
        if self._timeout_handle is not None:
            self._timeout_handle.cancel()
            self._timeout_handle = None
        timeout = run.pause_timeout() if hasattr(run, "pause_timeout") else None  # (a remote run: the server's timer)
        if timeout is None or run.status != RunStatus.PAUSED:
            return
        delay = max(0.0, timeout[0] - time.time())
        self._timeout_handle = asyncio.get_event_loop().call_later(delay, self._time_out, run)

    def _time_out(self, run: Any) -> None:
        self._timeout_handle = None
        if run is not self.run or run.status != RunStatus.PAUSED or not shiboken6.isValid(self):
            return
        if self.is_busy or not run.overdue():  # an operation still settling, or a clock a little behind
            self._timeout_handle = asyncio.get_event_loop().call_later(0.2, self._time_out, run)
            return
        taken_from_store = self._claim is not None
        if not self._claim_stored(run) or (not taken_from_store and not self._claim_own(run)):
            return
        self._task = asyncio.ensure_future(self._drive(run, run.expire()))

    # ------------------------------------------------------------------ requests
    def start(
        self,
        workflow: Workflow,
        initial_input: str | None,
        resolver: Any,
        store: RunStore | None = None,
        workflow_path: str | None = None,
        *,
        run_id: str | None = None,
        variables: dict[str, Any] | None = None,
        start_at: str | None = None,
        reuse_from: Any = None,
    ) -> str:
        """Start a run of ``workflow`` and return its id; the run proceeds on the event loop.

        ``variables`` are the run's arguments (name -> value, coerced by the engine); a run the
        engine refuses (a required variable missing, a value that does not coerce) raises its error.
        ``start_at``/``reuse_from``: a run from a node, reusing the outputs recorded in an
        earlier run (a run id in ``store``) for the nodes upstream of it (see ``engine.Run``)."""
        if self.is_active:
            raise RunStateError("a run is already in progress; cancel it first")
        ensure_asyncgen_hooks(asyncio.get_event_loop())
        wf = workflow.model_copy(deep=True)
        extra: dict[str, Any] = {} if variables is None else {"variables": variables}
        if workflow_path:  # flow nodes name other flows relative to this file, as `flowdesk run` resolves them
            extra["path"] = workflow_path
        if start_at is not None:
            extra.update(start_at=start_at, reuse_from=reuse_from, store=store)
        try:
            run = self.run_factory(
                wf, resolver, run_id=run_id, initial_input=initial_input, delta_interval=self.delta_interval, **extra
            )
        except (ValueError, StoreError) as err:
            if isinstance(err, FlowdeskError):
                raise
            raise RunStateError(str(err)) from None
        self.run = run
        self._buffer.clear()
        self._gated = False
        self.run_state.reset(wf, initial_input)
        self._finished_emitted = False
        self._claim = None
        run.add_listener(self._on_event)
        self._recorder = None
        if store is not None:
            try:
                self._recorder = self._new_recorder(store, run, workflow_path=workflow_path)
            except StoreError as err:
                log.error("%s", err)
                self.error_occurred.emit(str(err))
        self.run_started.emit(run.run_id)
        self._task = asyncio.ensure_future(self._drive(run, run.start()))
        return run.run_id

    def open_paused(self, store: RunStore, run_id: str, resolver: Any) -> Run:
        """Take up a paused run from the store (for example after the app restarted).

        The run is restored from its snapshot and waits for a decision; the store is claimed
        (so another process cannot resume it too) only when a decision or a cancel comes.
        The caller shows the stored events; the run state is fed with them here."""
        if self.is_active:
            raise RunStateError("a run is already in progress; cancel it first")
        info = store.get_run(run_id)
        if info is None:
            raise RunStateError(f"There is no run '{run_id}' in the run history.")
        snap = store.snapshot_of(run_id)
        if info.status != RunStatus.PAUSED or snap is None:
            raise RunStateError(f"Run {run_id} is {info.status}, not a paused run that can be resumed.")
        workflow = store.workflow_of(run_id)
        run = Run.restore(snap, resolver, workflow=workflow, check=False, delta_interval=self.delta_interval)
        return self._take_up(run, workflow, store.iter_events(run_id), claim=store)

    def adopt_remote(self, run: Any) -> Any:
        """Take up a run on a Temporal server (a ``RemoteRun`` from ``RemoteRun.fetch``, its events
        so far in ``run.events``): its states and approval cards are shown, and an answer goes to
        the server, which the run then follows to its next pause or its end."""
        if self.is_active:
            raise RunStateError("a run is already in progress; cancel it first")
        return self._take_up(run, run.workflow, run.events or [], claim=None)

    def _take_up(self, run: Any, workflow: Workflow, events: Any, *, claim: RunStore | None) -> Any:
        """Show a run that is already under way (its events so far) and follow it from here;
        ``claim``: the store to claim it in before it continues (a stored paused run)."""
        ensure_asyncgen_hooks(asyncio.get_event_loop())
        self.run = run
        self._buffer.clear()
        self._gated = False
        self.run_state.reset(workflow, run.initial_input)
        self.run_state.apply_many(events)
        self.run_state.states_dirty = self.run_state.links_dirty = False
        self._finished_emitted = False
        self._recorder = None
        self._claim = claim
        run.add_listener(self._on_event)
        self.run_started.emit(run.run_id)
        self.node_states_changed.emit(dict(self.run_state.states))
        self.links_followed.emit(frozenset(self.run_state.links))
        self.status_changed.emit(str(run.status))
        self.approvals_changed.emit()
        self._arm_timeout(run)
        return run

    def _claim_stored(self, run: Run) -> bool:
        """Before continuing a run taken from the store: claim it there and record what follows."""
        store, self._claim = self._claim, None
        if store is None:
            return True
        try:
            store.claim_for_resume(run.run_id)
            self._recorder = self._new_recorder(store, run, new=False)
        except StoreError as err:
            self.error_occurred.emit(str(err))
            return False
        return True

    def _claim_own(self, run: Run) -> bool:
        """A run started here and paused is in the run history too, where another process (the
        HTTP API, an inbox, ``flowdesk resume``) may have answered it meanwhile: claim it there
        before going on, so two processes never continue one run. Not while the pause is still
        being stored (nobody else can have answered it yet)."""
        recorder = self._recorder
        if recorder is None or self.is_busy:
            return True
        try:
            recorder.store.claim_for_resume(run.run_id)
        except StoreError as err:
            self.error_occurred.emit(f"{err} It was answered elsewhere: open it from Run history to see how it went.")
            return False
        return True

    def resume(self, decision: str, note: str = "", output: str | None = None, arguments: Any = None) -> None:
        """Answer the active approval with ``decision`` ("approve" or "reject") and ``note``;
        ``output``: the reviewer's edit of the output under review (what flows on)."""
        run = self.run
        if run is None or run.status != RunStatus.PAUSED or run.pending_approval is None:
            raise RunStateError("no approval is waiting for a decision")
        if self._decision_queued:
            raise RunStateError("a decision on this approval is already being carried out")
        taken_from_store = self._claim is not None  # claimed by _claim_stored; else maybe started here
        if not self._claim_stored(run) or (not taken_from_store and not self._claim_own(run)):
            raise RunStateError("this run could not be taken up from the run history (see the message above)")
        # A decision that comes while the operation that paused is still finishing (the approval
        # is shown once its events are committed, before start() returns and the pause is
        # stored) follows that operation, rather than being refused.
        previous = self._task if self.is_busy else None
        self._decision_queued = True
        self._task = asyncio.ensure_future(
            self._drive(run, self._resume_after(previous, run, decision, note, output, arguments))
        )

    async def _resume_after(
        self,
        previous: asyncio.Task | None,
        run: Run,
        decision: str,
        note: str,
        output: str | None = None,
        arguments: Any = None,
    ) -> RunStatus:
        try:
            if previous is not None:
                await asyncio.wait({previous})
        finally:
            self._decision_queued = False
        if arguments is not None:  # (a tool call's edited arguments)
            return await run.resume(decision, note, output=output, arguments=arguments)
        return await run.resume(decision, note, output=output)

    def cancel(self) -> None:
        """Stop the run now: its branch tasks (and their HTTP requests) are cancelled."""
        run = self.run
        if run is None or run.status.is_final:
            return
        if self._claim is not None:
            self._claim_stored(run)  # so the store learns that the run was cancelled
        run.cancel()
        if not self.is_busy:  # paused: nothing in flight, the run ends once wait() returns (at once when local)
            self._task = asyncio.ensure_future(self._drive(run, run.wait()))

    def release(self) -> bool:
        """Let go of a paused run without answering it: it stays paused in the run history
        (its snapshot was stored at the pause), to be resumed from there. False (nothing
        done) unless a run is paused with nothing in flight and recorded (or taken from the
        store), since otherwise letting go would lose it."""
        run = self.run
        if run is None or run.status != RunStatus.PAUSED or self._finished_emitted:
            return False
        # Paused while its start or resume is still finishing (siblings running on, or the
        # pause being stored): let go of it now; the operation's task records the rest and
        # closes the recorder when it ends (``_drive``/``_settle``).
        storing = self.is_busy
        recorder, claim = self._recorder, self._claim
        if recorder is None and claim is None:
            return False
        run.remove_listener(self._on_event)
        if recorder is not None and not storing:
            try:
                recorder.close()
            except Exception as err:  # StoreError: the pause was committed at settled()
                log.error("run %s: %s", run.run_id, err)
        self._recorder = None
        self._claim = None
        self._buffer.clear()
        self._gated = False
        self._committed = self._delivered = 0
        self._finished_emitted = True
        self.run = None
        self.run_state.reset()
        self.approvals_changed.emit()
        self.node_states_changed.emit({})
        self.links_followed.emit(frozenset())
        return True

    def _new_recorder(self, store: RunStore, run: Run, **kwargs: Any) -> RunRecorder:
        self._committed = self._delivered = 0
        recorder = RunRecorder(store, run, on_commit=self._committed_batch, **kwargs)
        self._gated = True
        return recorder

    def _committed_batch(self, events: list[RunEvent], recorded: bool) -> None:
        # On the store's writer thread (or the one closing it): only a count, read by flush().
        # Events that could not be written are released too (the error is reported).
        self._committed += len(events)

    def _ungate(self) -> None:
        """The recorder is closed (or failed): whatever is buffered is shown."""
        self._gated = False

    # ------------------------------------------------------------------ engine side
    def _on_event(self, ev: RunEvent) -> None:
        self._buffer.append(ev)
        if not self._armed:
            self._armed = True
            # Streamed text comes already gathered in frames (the run's delta_interval): it is
            # shown on the next turn of the loop rather than a frame later again.
            self._timer.start(0 if ev.type == "llm_delta" else self.flush_interval_ms)

    async def _drive(self, run: Run, operation: Any) -> None:
        recorder = self._recorder
        try:
            await operation
        except RunStateError as err:
            self.error_occurred.emit(str(err))
        except asyncio.CancelledError:
            run.cancel()
            raise
        except Exception as err:  # an engine bug must not take the window down
            log.exception("run %s failed unexpectedly", run.run_id)
            self.error_occurred.emit(f"The run stopped on an internal error: {err!r}")
            run.cancel(f"Internal error: {err!r}")
        if run is self.run:
            await self._settle(run)
        elif recorder is not None and recorder is not self._recorder:  # let go of (release) meanwhile
            try:
                await asyncio.to_thread(recorder.settled)
                await asyncio.to_thread(recorder.close)
            except Exception as err:  # StoreError: the pause itself was committed when it happened
                log.error("run %s: %s", run.run_id, err)

    async def _settle(self, run: Run) -> None:
        """After start()/resume() returned (or a paused run was cancelled): record, show, finish.

        The store's commit waits on its writer thread, so it is awaited in a worker thread:
        the window keeps painting even when the disk is slow. The operation stays "busy"
        meanwhile: a decision that comes now waits for it (see resume)."""
        recorder = self._recorder
        if recorder is not None:
            try:
                await asyncio.to_thread(recorder.settled)
            except Exception as err:  # StoreError, or a snapshot raced by a cancel: the run goes on
                log.error("run %s: not recorded: %s", run.run_id, err)
                self.error_occurred.emit(str(err))
            if not shiboken6.isValid(self):
                # The window (this bridge with it) closed while the store committed: the record
                # is finished, and nothing is left to show.
                if run.status.is_final or run is not self.run:
                    try:
                        await asyncio.to_thread(recorder.close)
                    except Exception as err:  # StoreError: what was committed stays
                        log.error("run %s: %s", run.run_id, err)
                return
            if run is not self.run:  # let go of (release) while its pause was being stored
                try:
                    await asyncio.to_thread(recorder.close)
                except Exception as err:  # StoreError: the pause itself was committed
                    log.error("run %s: %s", run.run_id, err)
                return
        self.flush()
        self.approvals_changed.emit()
        if run.status == RunStatus.PAUSED:
            self._arm_timeout(run)
        if run.status.is_final and not self._finished_emitted:
            self._finished_emitted = True
            run.remove_listener(self._on_event)
            if recorder is not None:
                await asyncio.to_thread(recorder.close)
                if not shiboken6.isValid(self):
                    return
                self._ungate()
                if recorder.error is not None:
                    self.error_occurred.emit(str(recorder.error))
                if self._recorder is recorder:
                    self._recorder = None
            self.flush()
            self.run_finished.emit(str(run.status))

    # ------------------------------------------------------------------ flushing
    def _flush_some(self) -> None:
        # A huge backlog is delivered in slices, with the event loop turning in between, so
        # one flush never freezes the window for long.
        self.flush(self.max_batch)
        if self._buffer and not self._armed:
            self._armed = True
            # Waiting for the store's next commit, or a backlog sliced: the next turn of the loop.
            self._timer.start(self.flush_interval_ms if self._ready() == 0 else 0)

    def _ready(self) -> int | None:
        """How many buffered events may be delivered (None: all): the committed ones, and the
        streamed text right after them (deltas delivered before their commit make the count
        of committed ones fall below the delivered ones for a while)."""
        recorder = self._recorder
        if not self._gated or (
            recorder is not None and recorder.error is not None
        ):  # a failing store holds nothing back
            return None
        buffer = self._buffer
        ready = min(len(buffer), max(0, self._committed - self._delivered))
        while ready < len(buffer) and buffer[ready].type == "llm_delta":
            ready += 1
        return ready

    def flush(self, limit: int | None = None) -> None:
        """Deliver the buffered events now (at most ``limit`` of them; all when None)."""
        self._timer.stop()
        self._armed = False
        if not self._buffer:
            return
        ready = self._ready()
        if ready is not None:
            limit = ready if limit is None else min(limit, ready)
            recorder = self._recorder
            if recorder is not None and ready < len(self._buffer) and self._buffer[-1].type == "llm_delta":
                recorder.commit_soon()  # streamed text waits behind an event not committed yet
            if limit == 0:
                if not self._armed:  # the writer commits within its interval: look again then
                    self._armed = True
                    self._timer.start(self.flush_interval_ms)
                return
        if limit is not None and len(self._buffer) > limit:
            batch, self._buffer = self._buffer[:limit], self._buffer[limit:]
        else:
            batch, self._buffer = self._buffer, []
        self._delivered += len(batch)
        state = self.run_state
        before = state.status
        approvals = False
        apply = state.apply
        delta = "llm_delta"
        for ev in batch:
            t = ev.type
            if t != delta:
                apply(ev)
                if not approvals and t in _APPROVAL_EVENTS:
                    approvals = True
                if t == "wait_input" and not ev.path:
                    self._wait_prompts[ev.node_id] = (
                        ev.content
                    )  # a subflow's approval: its prompt, asked at the flow node
        self.events_batched.emit(batch)
        if state.status != before:
            self.status_changed.emit(str(state.status))
        if state.states_dirty:
            state.states_dirty = False
            self.node_states_changed.emit(dict(state.states))
        if state.links_dirty:
            state.links_dirty = False
            self.links_followed.emit(frozenset(state.links))
        if approvals:
            self.approvals_changed.emit()

    def node_states(self) -> dict[str, str]:
        return dict(self.run_state.states)

    def followed_links(self) -> frozenset[tuple[str, str, str]]:
        return frozenset(self.run_state.links)

    # ------------------------------------------------------------------ what widgets read
    @property
    def run_id(self) -> str | None:
        return self.run.run_id if self.run is not None else None

    @property
    def error(self) -> str | None:
        """Why the run failed or was cancelled (None otherwise)."""
        return self.run.error if self.run is not None else None

    @property
    def pending_approval(self) -> str | None:
        """The approval node waiting for a decision now (None when none is)."""
        return self.run.pending_approval if self.run is not None else None

    @property
    def is_paused(self) -> bool:
        return self.run is not None and self.run.status == RunStatus.PAUSED

    @property
    def workflow(self) -> Workflow | None:
        """The workflow the run works on (a copy of the one Run was pressed on)."""
        return self.run.workflow if self.run is not None else None

    @property
    def initial_input(self) -> str | None:
        return self.run.initial_input if self.run is not None else None

    def node_details(self, node_id: str) -> dict[str, Any]:
        """Last input, output, duration, tokens and error of a node in the current run."""
        details = self.run_state.node_details(node_id)
        run = self.run
        record = run.records.get(node_id) if run is not None else None
        if record is not None:  # the engine's own record is authoritative for agent steps
            details.update(
                input=record.input,
                output=record.output if record.output is not None else details["output"],
                started=record.started,
                ended=record.ended,
                duration=record.duration,
                usage=record.usage or details["usage"],
                error=record.error or details["error"],
            )
        if run is not None and run.pending_approval == node_id:
            details["input"] = as_text(run.pending_input())
        return details


def ensure_asyncgen_hooks(loop: asyncio.AbstractEventLoop) -> None:
    """Let ``loop`` finalise async generators (qasync does not install the hooks itself)."""
    hooks = sys.get_asyncgen_hooks()
    if hooks.finalizer is None and hasattr(loop, "_asyncgen_finalizer_hook"):
        sys.set_asyncgen_hooks(
            firstiter=loop._asyncgen_firstiter_hook,  # type: ignore[attr-defined]
            finalizer=loop._asyncgen_finalizer_hook,
        )  # type: ignore[attr-defined]


def default_resolver_factory() -> Callable[..., Any]:
    """The provider registry's default resolver (each node's provider, else the configured default)."""

    return make_resolver()
