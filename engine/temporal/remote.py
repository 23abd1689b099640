"""``RemoteRun``: a run on a Temporal server, seen through the same surface as :class:`engine.Run`.

What a view of a run reads and calls (``run_id``, ``workflow``, ``status``, ``error``,
``pending_approval``, ``pending_input()``, ``queued_approval_inputs()``, listeners,
``start()``/``resume()``/``cancel()``/``wait()``) works the same on a remote run, so the
desktop's console, canvas states and approval cards show it with no code of their own:
``start()`` submits the run and passes its events to the listeners as the server records
them, until it pauses or ends; ``resume()`` answers the pending approval (the ``approve``
update) and follows again; ``cancel()`` asks the server to cancel it and ``wait()`` follows
it to its end. The events are the server's (``events`` query), in order, each once.

Importable without the ``temporal`` extra: ``temporalio`` is needed only when a method
talks to the server (:class:`~engine.temporal.TemporalUnavailable` says how to install it).
"""

from __future__ import annotations

import asyncio
import atexit
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from engine.graph.model import Workflow
from engine.graph.variables import run_variables
from engine.nodes.approval import option_labels
from engine.run.events import RunEvent, RunStatus
from engine.run.scheduler import RunStateError, normalise_decision, uuid_ids
from engine.temporal import DEFAULT_NAMESPACE, DEFAULT_TASK_QUEUE, require_temporal, split_address

__all__ = ["RemoteRun", "on_temporal_server"]


class _ServerThread:
    """Where every remote run of this process talks to Temporal: one asyncio loop in a thread
    of its own, with one connected client per server and namespace.

    The SDK completes its calls from threads of its own Rust core (``call_soon_threadsafe`` on
    the loop that made the call). Made on the desktop's loop (qasync), that would have those
    threads emit Qt signals, and leave calls still in flight when a window's loop is closed
    and dropped. Made here instead, they only ever reach this plain asyncio loop; callers
    await the results on their own loop (``asyncio.wrap_future``: delivered on the caller's
    thread, cancelled with the caller's task). The clients live as long as the process and
    are let go by :meth:`shutdown` (at exit, in the main thread, with the interpreter whole).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._clients: dict[tuple[str, str], Any] = {}

    def _started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def serve() -> None:
                    asyncio.set_event_loop(loop)
                    loop.call_soon(ready.set)
                    loop.run_forever()

                thread = threading.Thread(target=serve, name="flowdesk-temporal", daemon=True)
                thread.start()
                ready.wait()
                self._loop, self._thread = loop, thread
                atexit.register(self.shutdown)
            return self._loop

    async def run(self, address: str, namespace: str, work: Callable[[Any], Awaitable[Any]]) -> Any:
        """``await work(client)`` on the server thread; its result (or exception) here."""
        require_temporal()
        loop = self._started()

        async def go() -> Any:
            key = (address, namespace)
            client = self._clients.get(key)
            if client is None:
                from engine.temporal.client import connect

                client = self._clients[key] = await connect(address, namespace)
            return await work(client)

        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(go(), loop))

    def shutdown(self, timeout: float = 5.0) -> None:
        """Stop the thread (what is in flight is cancelled) and let the clients go."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return

        async def stop() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            self._clients.clear()
            loop.stop()

        try:
            loop.call_soon_threadsafe(lambda: loop.create_task(stop()))
        except RuntimeError:  # already closed
            return
        thread.join(timeout)
        if not thread.is_alive():
            loop.close()
        import gc

        gc.collect()


_server = _ServerThread()


async def _on_server(address: str, namespace: str, work: Callable[[Any], Awaitable[Any]]) -> Any:
    return await _server.run(address, namespace, work)


async def on_temporal_server(
    address: str, work: Callable[[Any], Awaitable[Any]], namespace: str = DEFAULT_NAMESPACE
) -> Any:
    """``await work(client)`` on the thread that talks to the server at ``address`` (HOST:PORT):
    whoever asks from a window's loop (the Inbox) never has the SDK's threads call it back."""
    return await _on_server(split_address(address), namespace, work)


class RemoteRun:
    """A run of ``workflow`` on the Temporal server at ``address`` (workers run it)."""

    def __init__(
        self,
        workflow: Workflow,
        provider: Any = None,
        *,
        address: str,
        namespace: str = DEFAULT_NAMESPACE,
        task_queue: str = DEFAULT_TASK_QUEUE,
        run_id: str | None = None,
        initial_input: str | None = None,
        max_visits: int = 25,
        meta: dict[str, Any] | None = None,
        options: dict[str, Any] | None = None,
        variables: dict[str, Any] | None = None,
        path: str | None = None,
        **_local_only: Any,
    ) -> None:
        # ``provider`` and local-only options (delta_interval, ...) are accepted for a drop-in
        # swap with Run and not used: the workers resolve providers with their own keys.
        self.workflow = workflow
        self.address = split_address(address)
        self.namespace = namespace
        self.task_queue = task_queue
        self.run_id = run_id or uuid_ids()
        self.initial_input = initial_input
        self.max_visits = max_visits
        self.meta = dict(meta or {})
        self.options = dict(options or {})
        self.path = str(path) if path is not None else None  # where its flow steps' relative references point
        # Checked here as Run checks them (VariableError names the first bad one); sent as given.

        run_variables(workflow, variables)
        self.arguments = dict(variables or {})
        self.status = RunStatus.PENDING
        self.error: str | None = None
        self.records: dict[str, Any] = {}  # node records live on the server; views use the events
        self.outputs: dict[str, Any] = {}
        self._pending: str | None = None
        self._pending_input: Any = None
        self._queued: list[tuple[str, Any]] = []
        self._next = 0
        self._listeners: list[Callable[[RunEvent], None]] = []
        self.events: list[RunEvent] | None = None  # kept only by fetch()
        self._cancel_task: asyncio.Task | None = None

    @classmethod
    def attach(cls, workflow: Workflow, run_id: str, *, address: str, namespace: str = DEFAULT_NAMESPACE) -> RemoteRun:
        """A run already on the server (started elsewhere), to follow, answer or cancel."""
        run = cls(workflow, address=address, namespace=namespace, run_id=run_id)
        run.status = RunStatus.RUNNING
        return run

    @classmethod
    async def fetch(cls, run_id: str, *, address: str, namespace: str = DEFAULT_NAMESPACE) -> RemoteRun:
        """A run on the server as it is now: its workflow (as it runs there), ``events`` (all so
        far, in order), ``status``, ``error`` and pending approval. Raises TemporalUnavailable
        (no extra, no server, no such run)."""
        from engine.temporal.client import definition

        address = split_address(address)
        workflow = await _on_server(address, namespace, lambda client: definition(client, run_id))
        remote = cls.attach(workflow, run_id, address=address, namespace=namespace)
        remote.events = []
        remote.add_listener(remote.events.append)
        remote._take(await remote._follow_state(settle=False))
        return remote

    @staticmethod
    async def list_server_runs(
        address: str, *, namespace: str = DEFAULT_NAMESPACE, limit: int = 50
    ) -> list[dict[str, Any]]:
        """The runs on the server (Temporal's visibility API), newest first: ``{id, status,
        workflowName, initialInput, pending, startedAt, duration, taskQueue}`` each (flow
        steps' child runs are left out: they show in their parent's log)."""
        from engine.temporal.client import list_runs

        return await on_temporal_server(address, lambda client: list_runs(client, limit=limit), namespace)

    # ------------------------------------------------------------------ listeners
    def add_listener(self, callback: Callable[[RunEvent], None]) -> None:
        self._listeners.append(callback)

    def remove_listener(self, callback: Callable[[RunEvent], None]) -> None:
        try:
            self._listeners.remove(callback)
        except ValueError:
            pass

    def _emit(self, ev: RunEvent) -> None:
        for cb in list(self._listeners):
            cb(ev)

    # ------------------------------------------------------------------ what views read
    @property
    def pending_approval(self) -> str | None:
        return self._pending

    @property
    def waiting_for_input(self) -> bool:
        return self._pending is not None

    @property
    def queued_approvals(self) -> list[str]:
        return [n for n, _ in self._queued]

    def pending_input(self) -> Any:
        return self._pending_input

    def queued_approval_inputs(self) -> list[tuple[str, Any]]:
        return list(self._queued)

    # ------------------------------------------------------------------ operations
    async def on_server(self, work: Callable[[Any], Awaitable[Any]]) -> Any:
        """Run ``work(client)`` on the thread that talks to this run's server."""
        return await _on_server(self.address, self.namespace, work)

    async def _follow_state(self, settle: bool = True) -> Any:
        """The run's events after the last one seen, passed to the listeners here (the caller's
        loop and thread) as they come, until it pauses or ends (``settle=False``: until the
        events so far are passed)."""
        from engine.temporal.client import follow

        return await follow(None, self.run_id, self._emit, after=self._next, settle=settle, handle=_ServerHandle(self))

    async def _follow(self) -> RunStatus:
        return self._take(await self._follow_state())

    def _take(self, state: Any) -> RunStatus:
        self._next = state.next
        try:
            self.status = RunStatus(state.status)
        except ValueError:
            pass
        self.error = state.error
        self._pending = state.pending if self.status == RunStatus.PAUSED else None
        self._pending_input = state.pending_input if self._pending else None
        self._queued = state.queued if self._pending else []
        return self.status

    async def start(self) -> RunStatus:
        """Submit the run, then follow it until it pauses or ends."""
        if self.status != RunStatus.PENDING:
            raise RunStateError(f"this run has already started (status {self.status})")
        from engine.temporal.client import submit

        try:
            await self.on_server(
                lambda client: submit(
                    client,
                    self.workflow,
                    run_id=self.run_id,
                    initial_input=self.initial_input,
                    max_visits=self.max_visits,
                    meta=self.meta,
                    task_queue=self.task_queue,
                    options=self.options,
                    variables=self.arguments,
                    path=self.path,
                )
            )
        except Exception as err:  # no server, no extra: the run did not start, and says why
            self.status = RunStatus.FAILED
            self.error = f"The run could not be sent to the Temporal server at {self.address}: {err}"
            raise RunStateError(self.error) from None
        self.status = RunStatus.RUNNING
        return await self._follow()

    async def resume(
        self, decision: Any, note: str | None = None, output: Any = None, arguments: Any = None
    ) -> RunStatus:
        """Answer the pending approval on the server and follow the run until it pauses or ends."""
        node = self.workflow.node(self._pending or "") if self._pending else None
        answer = normalise_decision(decision, note, options=option_labels(node.data) if node is not None else ())
        if self.status != RunStatus.PAUSED or self._pending is None:
            raise RunStateError(f"this run is not waiting for input (status {self.status})")
        from engine.temporal.client import answer as send_answer

        try:
            pending = self._pending
            await self.on_server(
                lambda client: send_answer(
                    client,
                    self.run_id,
                    answer["decision"],
                    answer["note"],
                    node_id=pending,
                    output=output,
                    arguments=arguments,
                )
            )
        except Exception as err:  # refused by the workflow (answered elsewhere meanwhile), or unreachable
            raise RunStateError(f"the server did not take the answer: {getattr(err, 'message', None) or err}") from None
        return await self._follow()

    async def follow(self) -> RunStatus:
        """Show what the run did so far and follow it until it pauses or ends (a run from ``attach``)."""
        return await self._follow()

    def cancel(self, reason: str = "Cancelled by the user.") -> None:
        """Ask the server to cancel the run (its in-flight model calls are closed); ``wait()`` follows it to its end."""
        if self.status.is_final or self._cancel_task is not None:
            return
        from engine.temporal.client import cancel as send_cancel

        async def go() -> None:
            await self.on_server(lambda client: send_cancel(client, self.run_id))

        self._cancel_task = asyncio.ensure_future(go())

    async def wait(self) -> RunStatus:
        """After ``cancel()``: follow the run until the server has ended it."""
        if self._cancel_task is not None:
            await self._cancel_task
        from engine.temporal.client import POLL_EVERY

        while not self.status.is_final:
            await self._follow()
            if self.status == RunStatus.PAUSED:
                if self._cancel_task is None:
                    break
                await asyncio.sleep(POLL_EVERY)  # the server has not ended it yet
        return self.status


class _ServerHandle:
    """The run's workflow handle as ``client.follow`` uses it, its queries made on the server thread."""

    def __init__(self, run: RemoteRun) -> None:
        self.run = run
        self._progress: Any = None

    async def query(self, name: str, *args: Any) -> Any:
        remote = self.run
        return await remote.on_server(lambda client: client.get_workflow_handle(remote.run_id).query(name, *args))

    async def wait_progress(self, seen: int) -> bool:
        """Until the run may have new events (a long poll of its history, on the server thread)."""
        from engine.temporal.client import ProgressWatch

        if self._progress is None:
            self._progress = ProgressWatch(self.run.run_id)
        progress = self._progress
        return await self.run.on_server(lambda client: progress.wait(client, seen))
