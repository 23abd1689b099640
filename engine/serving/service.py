"""The headless run service behind ``flowdesk serve`` and ``flowdesk mcp serve``.

One :class:`RunService` starts a library flow's run in the run store the desktop and
``flowdesk run`` use, follows its events, answers its pause and cancels it. Both servers call
it; neither holds run state of its own.

Why every answer goes through the store: a run paused here may be answered in the desktop (or
by ``flowdesk resume``) and the other way round. So a run that pauses is let go of at once (its
snapshot is stored with the pause, its recorder closed, as ``flowdesk run`` does when it exits
paused), and a decision always *claims* the run in the store (one conditional UPDATE: two
answers at once cannot both win), restores it from its snapshot and resumes it, whichever
process paused it. A run that is running is driven by the process that runs it; only that
process can cancel it.

Events are read back from the store (``seq`` numbers, gapless per run), never from memory: a
follower sees the same log, whichever process writes it; the recorder of a run driven here
wakes the followers when it commits, and they look again every :data:`POLL_SECONDS` for runs
driven elsewhere.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.errors import FlowdeskError
from engine.flows.inbox import local_items
from engine.flows.library import FlowLibrary, LibraryFlow
from engine.graph.index import GraphIndex
from engine.graph.model import Workflow, WorkflowLoadError
from engine.graph.validate import validate
from engine.graph.variables import VariableError, run_variables
from engine.llm.config import split_url_credentials
from engine.llm.discovery import default_provider_problem, describe, needs_default_provider, survey
from engine.llm.registry import NoProviderConfigured, ProviderConfigError, make_resolver
from engine.nodes.approval import normalise_decision
from engine.run.events import RunEvent, RunStatus
from engine.run.scheduler import Run
from engine.run.state import RunState
from engine.store import RunRecorder, RunStore, StoreError
from engine.store.queries import mask_url_passwords

__all__ = [
    "RunService",
    "ServiceError",
    "RunView",
    "POLL_SECONDS",
    "FINAL_STATUSES",
    "resume_command",
]

log = logging.getLogger(__name__)

POLL_SECONDS = 0.25  # how often a follower looks for events written by another process
FINAL_STATUSES = frozenset({"completed", "failed", "cancelled", "interrupted"})
_FINISHED_KEPT = 512  # results of runs that ended here, kept for GET /runs/{id}


class ServiceError(FlowdeskError, ValueError):
    """A request the service refuses; ``status`` is the HTTP status that says why (404 not
    found, 409 not in a state that allows it, 422 bad input), the message names the cause."""

    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


@dataclass(slots=True)
class RunView:
    """A run as the servers show it (``GET /runs/{id}``)."""

    run_id: str
    status: str
    output: Any
    variables: dict[str, Any]
    waiting_for_input: bool
    current_node_id: str | None
    flow: str = ""
    error: str | None = None
    prompt: str | None = None
    options: list[str] | None = None  # the decisions it takes besides approve and reject

    def to_json(self) -> dict[str, Any]:
        return {
            "runId": self.run_id,
            "status": self.status,
            "output": self.output,
            "vars": self.variables,
            "waitingForInput": self.waiting_for_input,
            "currentNodeId": self.current_node_id,
            "flow": self.flow,
            "error": self.error,
            "prompt": self.prompt,
            "options": list(self.options or ()),
        }


def resume_command(run_id: str) -> str:
    """The command line that answers a paused run (said to whoever started it)."""
    return f"flowdesk resume {run_id} --decide approve   (or --decide reject:NOTE)"


@dataclass(slots=True)
class _Live:
    """A run this process drives now: its run, recorder and the task of its current phase."""

    run: Run
    recorder: RunRecorder | None
    task: asyncio.Task[RunStatus]
    flow: str


class RunService:
    """Start, follow, answer and cancel runs of a library's flows (see the module docstring).

    ``provider``/``model``/``base_url``: as ``flowdesk run`` takes them (None: each agent's own,
    or the configured default provider). Must be used on one event loop (the server's)."""

    def __init__(
        self,
        library: FlowLibrary,
        store: RunStore,
        *,
        provider: str | None = None,
        model: str | None = None,
        base_url: str | None = None,
        max_visits: int = 25,
    ) -> None:
        self.library = library
        self.store = store
        self.provider, self.model, self.base_url = provider, model, base_url
        self.max_visits = max_visits
        # ProviderConfigError here (an unknown provider): the command refuses to start.
        self.resolver = make_resolver(provider, model=model, base_url=base_url)
        self._live: dict[str, _Live] = {}
        self._finished: OrderedDict[str, tuple[Any, dict[str, Any]]] = OrderedDict()
        self._wakers: dict[str, set[asyncio.Event]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        #: called (on the loop) with (run_id, status) when a phase driven here ends
        self.on_settled: list[Callable[[str, str], None]] = []

    # ------------------------------------------------------------------ flows
    def flows(self) -> list[LibraryFlow]:
        """The enabled, readable flows of the library, in library order."""
        return [f for f in self.library.flows() if f.enabled and not f.error]

    def flow(self, flow_id: str) -> LibraryFlow:
        found = next((f for f in self.flows() if f.id == flow_id), None)
        if found is None:
            raise ServiceError(404, f"There is no enabled flow '{flow_id}' in the library (see GET /flows).")
        return found

    def _workflow(self, flow: LibraryFlow) -> Workflow:
        try:
            return self.library.load_path(flow.path)
        except (WorkflowLoadError, FlowdeskError, OSError) as err:
            raise ServiceError(422, f"The flow '{flow.id}' cannot be read: {err}") from None

    # ------------------------------------------------------------------ starting
    async def start(
        self,
        flow_id: str,
        *,
        input: str | None = None,
        variables: Mapping[str, Any] | None = None,
        given_as: str | None = "a variable of the request",
    ) -> str:
        """Start a run of library flow ``flow_id``; its id. The run goes on in the background
        (:meth:`wait` waits for it to pause or end). ``given_as`` says how this caller gives a
        variable (a missing required one is refused naming it, not the command line's ``--var``;
        None: the caller cannot give one, as a schedule)."""
        self._loop = asyncio.get_running_loop()
        flow = self.flow(flow_id)
        wf = self._workflow(flow)
        arguments = dict(variables or {})
        try:
            run_variables(wf, arguments, give=None if given_as is None else f"as {given_as}")
        except VariableError as err:
            raise ServiceError(422, str(err)) from None
        errors = [i for i in validate(wf, library=self.library, path=str(flow.path)) if i.is_error]
        if errors:
            listed = "; ".join(f"{i.message} ({i.code})" for i in errors[:5])
            raise ServiceError(422, f"The flow '{flow_id}' has {len(errors)} error(s): {listed}")
        if not self.provider and not self.base_url and needs_default_provider(wf):
            problem = default_provider_problem()
            if problem is not None:
                text = describe(survey()) if isinstance(problem, NoProviderConfigured) else str(problem)
                raise ServiceError(422, text)
        meta = {k: v for k, v in (("provider", self.provider), ("model", self.model)) if v}
        if self.base_url:
            meta["baseUrl"] = split_url_credentials(self.base_url)[0]
        run = Run(
            wf,
            self.resolver,
            initial_input=input,
            max_visits=self.max_visits,
            check=False,
            meta=meta,
            keep_events=False,
            variables=arguments,
            path=str(flow.path),
            library=self.library,
            store=self.store,
        )
        recorder = self._recorder(run, new=True, workflow_path=str(flow.path))
        self._drive(run, recorder, run.start(), wf.display_name())
        await asyncio.sleep(0)  # the run starts; its row is then written before its id is given out,
        if recorder is not None:  # so GET /runs lists it at once
            await asyncio.to_thread(recorder.flush)
        return run.run_id

    def _recorder(self, run: Run, *, new: bool, workflow_path: str | None = None) -> RunRecorder | None:
        run_id = run.run_id
        loop = self._loop

        def committed(_events: list[RunEvent], _ok: bool) -> None:  # on the store's writer thread
            if loop is not None and not loop.is_closed():
                try:
                    loop.call_soon_threadsafe(self._wake, run_id)
                except RuntimeError:
                    pass

        try:
            return RunRecorder(self.store, run, workflow_path=workflow_path, new=new, on_commit=committed)
        except StoreError as err:
            raise ServiceError(503, f"The run history cannot be written: {err}") from None

    def _drive(self, run: Run, recorder: RunRecorder | None, phase: Any, flow: str) -> None:
        task = asyncio.ensure_future(self._phase(run, recorder, phase))
        self._live[run.run_id] = _Live(run, recorder, task, flow)

    async def _phase(self, run: Run, recorder: RunRecorder | None, phase: Any) -> RunStatus:
        """Run one phase (start or resume) to its pause or end, then let the run go: a paused
        run lives on in the store only (see the module docstring)."""
        try:
            status = await phase
        except Exception as err:  # a bug in a kind must not leave the run running for ever
            log.exception("run %s failed unexpectedly", run.run_id)
            if not run.status.is_final:
                run.cancel(f"The run stopped on an unexpected error: {err}")
                await run.wait()
            status = run.status
        if recorder is not None:
            recorder.settled()
        if status.is_final:
            self._finished[run.run_id] = (run.result, dict(run.variables))
            while len(self._finished) > _FINISHED_KEPT:
                self._finished.popitem(last=False)
        if recorder is not None:
            await asyncio.to_thread(recorder.close)
        self._live.pop(run.run_id, None)
        self._wake(run.run_id)
        for callback in list(self.on_settled):
            try:
                callback(run.run_id, str(status))
            except Exception:  # a listener's bug is not the run's
                log.exception("on_settled listener failed")
        return status

    # ------------------------------------------------------------------ waiting and reading
    async def wait(self, run_id: str) -> RunView:
        """Wait until the phase driven here ends (the run paused or ended); the run then."""
        live = self._live.get(run_id)
        if live is not None:
            await asyncio.shield(live.task)
        return await self.get(run_id)

    async def get(self, run_id: str) -> RunView:
        """:meth:`view` from the event loop: a live run is read here, a stored one on a thread."""
        if run_id in self._live:
            return self.view(run_id)
        return await asyncio.to_thread(self.view, run_id)

    def view(self, run_id: str) -> RunView:
        """The run now (``GET /runs/{id}``); 404 when the store has no such run."""
        live = self._live.get(run_id)
        if live is not None:
            run = live.run
            return RunView(
                run.run_id,
                str(run.status),
                run.result,
                mask_url_passwords(dict(run.variables)),
                run.waiting_for_input,
                run.current_node_id,
                live.flow,
                run.error,
                run.waiting_prompt() if run.waiting_for_input else None,
                [d for d in run.decisions() if d not in ("approve", "reject")] if run.waiting_for_input else None,
            )
        info = self._info(run_id)
        snap = self.store.snapshot_of(info.id) if info.status == "paused" else None
        if snap is not None:
            output, variables = snap.get("result"), snap.get("variables") or {}
        elif info.id in self._finished:
            output, variables = self._finished[info.id]
        else:
            output, variables = self._stored_output(info.id), info.arguments or {}
        prompt, options = None, None
        if info.waiting and info.current_node:
            prompt, options = self._prompt(info.id, info.current_node)
        return RunView(
            info.id,
            info.status,
            output,
            mask_url_passwords(dict(variables)),
            info.waiting,
            info.current_node,
            info.workflow_name,
            info.error,
            prompt,
            options,
        )

    def _info(self, run_id: str) -> Any:
        try:
            info = self.store.get_run(run_id) or self.store.find_run(run_id)
        except StoreError as err:
            raise ServiceError(503, f"The run history cannot be read: {err}") from None
        if info is None:
            raise ServiceError(404, f"There is no run '{run_id}' in the run history.")
        return info

    def _stored_output(self, run_id: str) -> Any:
        """The output of a run that ended in another process, from its log: the last output of
        a node with no outgoing execution link (as ``Run.result`` is), else the last answer."""
        try:
            wf = self.store.workflow_of(run_id)
            state = RunState.of(wf, self.store.iter_events(run_id))
        except (StoreError, WorkflowLoadError, ValueError):
            return None
        out = GraphIndex.of(wf).steps_out
        ends = [
            (d.ended or 0.0, d.output)
            for nid, d in state.details.items()
            if d.output is not None and not out.get(nid) and not state.path
        ]
        return max(ends, key=lambda e: e[0])[1] if ends else state.final_output

    def _prompt(self, run_id: str, node_id: str) -> tuple[str | None, list[str] | None]:
        """The prompt and options of the approval a stored run waits at (its ``wait_input``)."""
        try:
            asked = self.store.last_event_of(run_id, "wait_input")
        except StoreError:
            return None, None
        if asked is None or asked.node_id != node_id:
            return None, None
        options = (asked.extra or {}).get("options") if asked.extra_json else None
        return asked.content, [str(o) for o in options] if isinstance(options, list) else None

    def list_runs(self, *, flow: str | None = None, status: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        try:
            runs = self.store.list_runs(workflow=flow, status=status, limit=limit)
            counts = self.store.event_counts(r.id for r in runs)  # to_json leaves it 0: one query per page
            return [{**r.to_json(), "eventCount": counts.get(r.id, 0)} for r in runs]
        except StoreError as err:
            raise ServiceError(503, f"The run history cannot be read: {err}") from None

    # ------------------------------------------------------------------ answering, cancelling
    async def decide(self, run_id: str, decision: Any, note: str | None = None, *, output: Any = None) -> str:
        """Answer a paused run's approval, wherever it paused; the run goes on in the background.
        A decision the approval does not take is refused (422) before the run is claimed."""
        self._loop = asyncio.get_running_loop()
        if not isinstance(decision, str) or not decision.strip():
            raise ServiceError(422, "a decision must be 'approve', 'reject' or one of the approval's options")
        await self._settling(run_id)

        def check(run: Run) -> None:
            if run.overdue():  # past its deadline: the resume takes the approval's onTimeout
                return
            try:
                normalise_decision(decision, note, options=run.decisions())
            except ValueError as err:
                raise ServiceError(422, str(err)) from None

        run, recorder = self._take_up(run_id, check)
        self._drive(run, recorder, run.resume(decision, note, output=output), run.workflow.display_name())
        return run.run_id

    async def _settling(self, run_id: str) -> None:
        """A run of this process that has just paused is let go of (stored) before it is answered."""
        live = self._live.get(run_id)
        if live is not None and live.run.status is RunStatus.PAUSED:
            await asyncio.shield(live.task)

    def _take_up(self, run_id: str, check: Callable[[Run], None] | None = None) -> tuple[Run, RunRecorder | None]:
        """Restore a paused run from its stored snapshot, ``check`` it, then claim it in the store
        (409 when it is not paused, or another process is resuming it)."""
        live = self._live.get(run_id)
        if live is not None:
            raise ServiceError(409, f"Run {run_id} is {live.run.status}, not waiting for a decision.")
        info = self._info(run_id)
        if info.status != "paused":
            raise ServiceError(409, f"Run {info.id} is {info.status}, not waiting for a decision.")
        snap = self.store.snapshot_of(info.id)
        if snap is None:
            raise ServiceError(409, f"Run {info.id} is paused but its state was not saved; it cannot be resumed.")
        meta = snap.get("meta") or {}
        try:
            resolver = (
                self.resolver
                if self.provider or self.model or self.base_url
                else make_resolver(meta.get("provider"), model=meta.get("model"), base_url=meta.get("baseUrl"))
            )
            wf = self.store.workflow_of(info.id)
            run = Run.restore(snap, resolver, workflow=wf, check=False, library=self.library)
        except ProviderConfigError as err:
            raise ServiceError(422, str(err)) from None
        except (StoreError, WorkflowLoadError, ValueError, KeyError, TypeError) as err:
            raise ServiceError(409, f"Run {info.id} cannot be restored from its saved state: {err}") from None
        if check is not None:
            check(run)
        try:
            self.store.claim_for_resume(info.id)
        except StoreError as err:
            raise ServiceError(409, str(err)) from None
        return run, self._recorder(run, new=False)

    async def cancel(self, run_id: str) -> str:
        """Cancel a run driven here, or a paused one (claimed in the store first)."""
        self._loop = asyncio.get_running_loop()
        await self._settling(run_id)
        live = self._live.get(run_id)
        if live is not None:
            live.run.cancel("Cancelled over the API.")
            return run_id
        info = self._info(run_id)
        if info.status in FINAL_STATUSES:
            raise ServiceError(409, f"Run {info.id} has already ended ({info.status}).")
        if info.status != "paused":
            raise ServiceError(
                409, f"Run {info.id} is {info.status} in another process; cancel it there (it is not driven here)."
            )
        run, recorder = self._take_up(info.id)
        run.cancel("Cancelled over the API.")
        self._drive(run, recorder, run.wait(), run.workflow.display_name())
        return info.id

    async def expire_due(self) -> list[str]:
        """Paused runs whose approval's deadline has passed take its ``onTimeout`` decision and go
        on here: those paused by this server (let go of at the pause) and those whose process is
        gone; a live process that paused a run waits for its deadline itself. Their ids."""
        self._loop = asyncio.get_running_loop()
        now = time.time()
        try:
            items = await asyncio.to_thread(local_items, self.store)
        except StoreError as err:
            log.warning("paused runs could not be read: %s", err)
            return []
        done = []
        for item in items:
            if item.deadline is None or item.deadline > now or item.run_id in self._live:
                continue
            if await asyncio.to_thread(self.store.owner_alive, item.run_id):
                continue
            try:
                run, recorder = self._take_up(item.run_id)
            except ServiceError as err:  # answered or claimed meanwhile
                log.info("run %s did not time out here: %s", item.run_id, err)
                continue
            self._drive(run, recorder, run.expire(), run.workflow.display_name())
            done.append(item.run_id)
        return done

    async def expire_forever(self, interval: float = 1.0, recover_every: int = 5) -> None:
        """:meth:`expire_due` every ``interval`` seconds until cancelled (a server's background
        job); every ``recover_every`` rounds, runs left ``running`` by a process that died are
        marked ``interrupted`` (``RunStore.recover``), so their event streams end."""
        rounds = 0
        while True:
            try:
                await self.expire_due()
                rounds += 1
                if rounds % recover_every == 0:
                    await asyncio.to_thread(self.store.recover)
            except Exception:  # one bad run must not stop the others from timing out later
                log.exception("approval timeouts could not be taken")
            await asyncio.sleep(interval)

    def abandon(self, run_id: str, reason: str) -> None:
        """Cancel a run still running here, now (synchronous: its caller is being cancelled); a
        paused one stays paused in the store."""
        live = self._live.get(run_id)
        if live is not None and live.run.status is RunStatus.RUNNING:
            live.run.cancel(reason)

    # ------------------------------------------------------------------ following events
    def _wake(self, run_id: str) -> None:
        for event in self._wakers.get(run_id, ()):
            event.set()

    async def follow(self, run_id: str, after: int = -1) -> AsyncIterator[tuple[int, RunEvent] | None]:
        """The run's events after sequence number ``after``, as ``(seq, event)``, read from the
        store as they are committed; ``None`` now and then while nothing comes (a keep-alive
        tick). Ends once the run has ended and every event is read; stays while it is paused."""
        if run_id not in self._live:  # (a run just started here may have no stored row yet)
            run_id = (await asyncio.to_thread(self._info, run_id)).id
        wake = asyncio.Event()
        self._wakers.setdefault(run_id, set()).add(wake)
        try:
            seq = after + 1
            while True:
                wake.clear()
                events = await asyncio.to_thread(self.store.events, run_id, offset=seq, limit=500)
                for ev in events:
                    yield seq, ev
                    seq += 1
                if len(events) == 500:
                    continue
                if run_id not in self._live:
                    status = await asyncio.to_thread(self._status, run_id)
                    if status in FINAL_STATUSES:
                        rest = await asyncio.to_thread(self.store.events, run_id, offset=seq)
                        for ev in rest:
                            yield seq, ev
                            seq += 1
                        return
                try:
                    await asyncio.wait_for(wake.wait(), POLL_SECONDS)
                except TimeoutError:
                    yield None
        finally:
            wakers = self._wakers.get(run_id)
            if wakers is not None:
                wakers.discard(wake)
                if not wakers:
                    self._wakers.pop(run_id, None)

    def _status(self, run_id: str) -> str:
        info = self.store.get_run(run_id)
        return info.status if info is not None else "failed"

    # ------------------------------------------------------------------ shutting down
    async def close(self) -> None:
        """Cancel the runs still running here (a paused run stays paused in the store)."""
        for live in list(self._live.values()):
            if live.run.status is RunStatus.RUNNING:
                live.run.cancel("The server stopped.")
        for live in list(self._live.values()):
            try:
                await asyncio.wait_for(asyncio.shield(live.task), 10)
            except (TimeoutError, asyncio.CancelledError):
                pass
