"""``flowdesk worker``: a Temporal worker that runs Flowdesk runs and their model calls."""

from __future__ import annotations

import asyncio
import logging
import signal
from datetime import timedelta
from typing import Any

from temporalio.client import Client
from temporalio.worker import UnsandboxedWorkflowRunner, Worker, WorkflowRunner

from engine.nodes import load_plugins
from engine.temporal import DEFAULT_NAMESPACE, DEFAULT_TASK_QUEUE
from engine.temporal.activities import agent_call, find_flow, run_step
from engine.temporal.converter import DATA_CONVERTER
from engine.temporal.workflow import FlowdeskRunWorkflow

__all__ = ["make_worker", "run_worker", "connect", "workflow_runner"]

log = logging.getLogger("flowdesk.worker")


def workflow_runner() -> WorkflowRunner:
    """How the worker (and a replay of a run's history) runs ``FlowdeskRun``: without Temporal's
    workflow sandbox.

    The sandbox re-imports a workflow's modules per run and checks calls that are not
    deterministic, except in modules passed through it; everything the workflow runs is the
    engine, which had to be passed through whole (its scheduler reads time and makes ids only
    through the clock and id source the workflow gives it, and kinds' own steps run as
    activities), so the sandbox checked nothing of ours while it cost a third of the worker's
    time: an ``exec`` of compiled code for every payload and every activation. Measured with
    ``bench_temporal`` (200 runs, one worker), 1.3-1.5x the runs per second without it.
    Determinism is checked where it matters, by replaying real runs' histories with this
    runner (``tests/temporal``)."""
    return UnsandboxedWorkflowRunner()


async def connect(address: str, namespace: str = DEFAULT_NAMESPACE) -> Client:
    return await Client.connect(address, namespace=namespace, data_converter=DATA_CONVERTER)


def make_worker(client: Client, *, task_queue: str = DEFAULT_TASK_QUEUE, concurrency: int = 10) -> Worker:

    # Plug-in node kinds are loaded here, once: steps of their kinds then run on this worker as
    # on a desktop that has them installed.
    for warning in load_plugins():
        log.warning("%s", warning)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[FlowdeskRunWorkflow],
        activities=[agent_call, run_step, find_flow],
        workflow_runner=workflow_runner(),
        max_concurrent_activities=max(1, concurrency),
        max_concurrent_workflow_tasks=max(2, concurrency),
        # Heartbeats reach the server at least every 2 s, so a cancelled step hears of it soon.
        max_heartbeat_throttle_interval=timedelta(seconds=2),
        default_heartbeat_throttle_interval=timedelta(seconds=2),
    )


async def run_worker(
    address: str,
    *,
    namespace: str = DEFAULT_NAMESPACE,
    task_queue: str = DEFAULT_TASK_QUEUE,
    concurrency: int = 10,
    ready: Any = None,
) -> None:
    client = await connect(address, namespace)
    worker = make_worker(client, task_queue=task_queue, concurrency=concurrency)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):  # stop taking tasks; in-flight steps go to other workers
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread, or not supported
            pass
    async with worker:
        if ready is not None:
            ready()
        await stop.wait()
