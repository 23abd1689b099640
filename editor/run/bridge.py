"""RunBridge: the one place where engine run events become Qt signals.

The engine runs on the Qt event loop through qasync: ``start()`` and ``resume()`` create
asyncio tasks on the running loop (never threads, never a nested loop), so the window
stays responsive whatever the run does.

Invariants
* The engine calls :meth:`_on_event` synchronously as it emits; that method only appends
  to a buffer (and arms a timer). Views receive events in order, in batches, through
  ``events_batched`` at most every :attr:`flush_interval_ms` (16 ms: a frame; streamed
  text alone, already gathered in frames by the run, on the next turn of the loop), at most
  ``max_batch`` at a time (a larger backlog follows on the next turns of the loop),
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
* While a recorded (or taken up) run waits here, idle, the store is watched every second:
  once another process claimed it (or it ended, or went), the run is let go of, never continued
  here (``answered_elsewhere(text)``): no approval is offered any more; a new run can start.
* The store's waits (commit after a pause or the end, closing the recorder) happen in a
  worker thread; the engine itself never leaves the event loop's thread.
* qasync's ``run_forever`` does not install asyncio's async-generator hooks, so a
  streamed HTTP response left unfinished (cancel) would be finalised by the garbage
  collector outside the loop ("async generator ignored GeneratorExit"). ``start()``
  installs the running loop's hooks when none are set, as ``BaseEventLoop.run_forever``
  does, so such generators are closed on the loop.

Its parts live in their own modules: the buffer, its flush timer and the store gate
(``delivery``), the deadline of an approval that times out (``deadline``), what the
approval cards show (``approval_requests``) and the loop's async-generator hooks
(``loop_hooks``) and noticing a run answered in another process (``elsewhere``). This module
owns the run and its signals.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, Signal

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
)

from .approval_requests import ApprovalRequest, approval_requests
from .deadline import ApprovalDeadline
from .delivery import EventDelivery
from .elsewhere import AnsweredElsewhere, StoreWatch
from .loop_hooks import ensure_asyncgen_hooks

__all__ = ["RunBridge", "ApprovalRequest"]

log = logging.getLogger(__name__)

_APPROVAL_EVENTS = frozenset({"wait_input", "approval_queued", "input_received"})


class RunBridge(AnsweredElsewhere, QObject):
    """Starts, resumes and cancels one run at a time and turns its events into signals."""

    events_batched = Signal(list)  # list[RunEvent], in emission order
    status_changed = Signal(str)  # RunStatus value
    run_started = Signal(str)  # run id
    run_finished = Signal(str)  # final status: completed, failed or cancelled
    approvals_changed = Signal()
    node_states_changed = Signal(dict)  # {node_id: "running"|"done"|"failed"|"waiting"|"queued"|"skipped"|"cancelled"}
    links_followed = Signal(object)  # frozenset[(source, sourceHandle, target)]
    error_occurred = Signal(str)  # a problem outside the run (cannot start, store failure)
    answered_elsewhere = Signal(str)  # the paused run went on in another process: let go of (what happened)

    def __init__(
        self, parent: QObject | None = None, *, flush_interval_ms: int = 16, delta_interval: float = 0.016
    ) -> None:
        super().__init__(parent)
        # The buffer of events, its flush timer and the store gate (see delivery.py).
        self._delivery = EventDelivery(self._deliver, self, flush_interval_ms=flush_interval_ms)
        # What the engine calls as it emits (the run's listener): it only buffers.
        self._on_event = self._delivery.on_event
        self.delta_interval = delta_interval
        self.run: Run | None = None
        # What start() makes: the local Run, or a drop-in such as engine.RemoteRun (a run on a
        # Temporal server, same surface), set by whoever offers "Run on".
        self.run_factory: Any = Run
        self.run_state = RunState()
        self._wait_prompts: dict[str, str] = {}  # node id -> the prompt of its last wait_input (subflows)
        self._deadline = ApprovalDeadline(self._time_out)  # of the pending approval, if it times out
        self._task: asyncio.Task | None = None
        self._decision_queued = False  # a decision waits for the operation that paused to finish
        self._finished_emitted = True
        self._claim: RunStore | None = None  # a paused run taken from this store, not yet claimed
        self._claim_problem = ""  # why the last claim in the store failed (said by resume)
        self._watch = StoreWatch(lambda: self.is_busy, self)  # of the paused run, in the store
        self._watch.moved_on.connect(self._let_go_elsewhere)

    # ------------------------------------------------------------------ delivery (delivery.py)
    @property
    def flush_interval_ms(self) -> int:
        return self._delivery.flush_interval_ms

    @property
    def _recorder(self) -> RunRecorder | None:
        """The recorder of the run followed (its commits gate delivery), if it is recorded."""
        return self._delivery.recorder

    @_recorder.setter
    def _recorder(self, recorder: RunRecorder | None) -> None:
        self._delivery.recorder = recorder

    @property
    def _gated(self) -> bool:
        return self._delivery.gated

    @_gated.setter
    def _gated(self, gated: bool) -> None:
        self._delivery.gated = gated

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
        return approval_requests(self.run, self._wait_prompts)

    # ------------------------------------------------------------------ approvals that time out
    def _time_out(self, run: Any) -> bool:
        """The pending approval's deadline (see deadline.py): the run takes its onTimeout
        decision. False: not yet (an operation still settling, or a clock a little behind)."""
        if run is not self.run or run.status != RunStatus.PAUSED or not shiboken6.isValid(self):
            return True
        if self.is_busy or not run.overdue():
            return False
        taken_from_store = self._claim is not None
        self._watch.stop()
        if self._claim_stored(run) and (taken_from_store or self._claim_own(run)):
            self._task = asyncio.ensure_future(self._drive(run, run.expire()))
        return True

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
        self._watch.stop()
        self.run = run
        self._delivery.reset()
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
        self._delivery.reset()
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
        self._deadline.arm(run)
        self._watch_store(run)
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
            self._claim_problem = str(err)
            self.error_occurred.emit(self._claim_problem)
            self._watch.watch(store, run.run_id)  # it is not paused there: let go of it next
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
            self._claim_problem = f"{err} It was answered elsewhere: open it from Run history to see how it went."
            self.error_occurred.emit(self._claim_problem)
            self._watch.watch(recorder.store, run.run_id)  # it is not paused there: let go of it next
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
        self._claim_problem = ""
        self._watch.stop()  # the claim below says whether another process was first
        if not self._claim_stored(run) or (not taken_from_store and not self._claim_own(run)):
            # the reason itself: the caller shows this message last, over the signal's
            raise RunStateError(self._claim_problem or "this run could not be taken up from the run history")
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
        self._watch.stop()
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
        self._watch.stop()
        if recorder is not None and not storing:
            try:
                recorder.close()
            except Exception as err:  # StoreError: the pause was committed at settled()
                log.error("run %s: %s", run.run_id, err)
        self._delivery.release()
        self._claim = None
        self._finished_emitted = True
        self.run = None
        self.run_state.reset()
        self.approvals_changed.emit()
        self.node_states_changed.emit({})
        self.links_followed.emit(frozenset())
        return True

    def _new_recorder(self, store: RunStore, run: Run, **kwargs: Any) -> RunRecorder:
        """Record ``run`` in ``store``; from now on an event is shown once it is committed."""
        self._delivery.committed = self._delivery.delivered = 0  # before the recorder commits
        recorder = RunRecorder(store, run, on_commit=self._committed_batch, **kwargs)
        self._delivery.gate(recorder)
        return recorder

    def _committed_batch(self, events: list[RunEvent], recorded: bool) -> None:
        # On the store's writer thread (or the one closing it): only a count, read by flush().
        self._delivery.committed_batch(events, recorded)

    # ------------------------------------------------------------------ engine side
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
            self._deadline.arm(run)
            self._watch_store(run)
        if run.status.is_final and not self._finished_emitted:
            self._finished_emitted = True
            run.remove_listener(self._on_event)
            if recorder is not None:
                await asyncio.to_thread(recorder.close)
                if not shiboken6.isValid(self):
                    return
                self._delivery.ungate()
                if recorder.error is not None:
                    self.error_occurred.emit(str(recorder.error))
                if self._recorder is recorder:
                    self._recorder = None
            self.flush()
            self.run_finished.emit(str(run.status))

    # ------------------------------------------------------------------ flushing
    def flush(self, limit: int | None = None) -> None:
        """Deliver the buffered events now (at most ``limit`` of them; all when None)."""
        self._delivery.flush(limit)

    def _deliver(self, batch: list[RunEvent]) -> None:
        """Feed ``batch`` to the run state, then emit what changed (in the order the docstring says)."""
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
                if t == "wait_input" and not ev.path:  # a subflow's approval: its prompt, asked at the flow node
                    self._wait_prompts[ev.node_id] = ev.content
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


def default_resolver_factory() -> Callable[..., Any]:
    """The provider registry's default resolver (each node's provider, else the configured default)."""

    return make_resolver()
