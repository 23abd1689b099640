"""Tokens to the screen: the command line and the run console (issue 32).

    python -m tests.bench.bench_tokens [--json] [--quick]

* ``cli``: a paced fake OpenAI server on 127.0.0.1 (``tests/fakes/openai_server.py``, real
  sockets and SSE) streams 200 tokens 20 ms apart, with a 1 s pause after token 100, to one
  agent run by ``flowdesk run --jsonl`` (a separate process), with the run store and without.
  Per token: the time from the server writing it to the CLI's line holding it reaching this
  process (both wall clocks of this machine). Targets, with the store: p99 <= 40 ms, max <= 100 ms.
* ``console``: the same stream through the run console (RunBridge, log model, QListView) in
  this process, recorded in a run store: per token, from the server writing it to the first
  paint of the log view's viewport after the console received it (offscreen Qt), three rounds
  (``--quick``: one). Same targets.
The CLI's cost per node (a 10,000-agent chain, whole process) is ``bench_cli``'s.

The figures are measured in one run of this script, not asserted: see docs/performance.md.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from tests.bench.common import parse_args, report  # noqa: E402
from tests.fakes.openai_server import FakeLLMServer, Reply, _chunk, sse  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TOKENS = 200
GAP = 0.020
PAUSE_AFTER = 100  # tokens before the pause
PAUSE = 1.0
_TOKEN = re.compile(r"t(\d{3}) ")


def paced_reply() -> Reply:
    """The stream: a role frame, then token i as ``t{i:03d} `` (frame i + 1), then the end."""
    events: list[bytes | float] = [_chunk({"role": "assistant", "content": ""})]
    for i in range(TOKENS):
        if i:
            events.append(PAUSE if i == PAUSE_AFTER else GAP)
        events.append(_chunk({"content": f"t{i:03d} "}))
    events.append(_chunk({}, "stop"))
    events.append(
        sse(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "model": "fake-model",
                "choices": [],
                "usage": {"prompt_tokens": 5, "completion_tokens": TOKENS, "total_tokens": TOKENS + 5},
            }
        )
    )
    return Reply(events=events)


def one_agent_file(folder: str) -> str:
    path = os.path.join(folder, "one.flow.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(
            {
                "name": "tokens",
                "nodes": [
                    {"id": "s", "type": "start", "data": {"initialInput": "go"}},
                    {"id": "a", "type": "agent", "data": {"agentName": "Writer", "model": "fake-model"}},
                ],
                "connections": [{"source": "s", "target": "a"}],
            },
            f,
        )
    return path


def _env(data: str) -> dict[str, str]:
    return {**os.environ, "FLOWDESK_DATA_DIR": data, "PYTHONPATH": str(ROOT)}


def latencies(printed: dict[int, float], sent: list[float]) -> dict[str, Any]:
    """Milliseconds from each token's frame written to its showing (token i is frame i + 1)."""
    ms = [(printed[i] - sent[i + 1]) * 1000 for i in range(TOKENS) if i in printed and i + 1 < len(sent)]
    ms.sort()
    if not ms:
        return {"tokens": 0}
    return {
        "tokens": len(ms),
        "median_ms": statistics.median(ms),
        "p99_ms": ms[min(len(ms) - 1, int(len(ms) * 0.99))],
        "max_ms": ms[-1],
        "before_pause_ms": (printed[PAUSE_AFTER - 1] - sent[PAUSE_AFTER]) * 1000
        if PAUSE_AFTER - 1 in printed
        else None,
    }


def cli_tokens(store: bool) -> dict[str, Any]:
    with FakeLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.handler = lambda rec: paced_reply()
        cmd = [
            sys.executable,
            "-m",
            "engine.cli",
            "run",
            one_agent_file(tmp),
            "--provider",
            "openai",
            "--base-url",
            server.base_url,
            "--jsonl",
        ] + ([] if store else ["--no-store"])
        proc = subprocess.Popen(
            cmd, cwd=ROOT, env=_env(tmp), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, bufsize=0
        )
        assert proc.stdout is not None
        printed: dict[int, float] = {}
        rest = b""
        fd = proc.stdout.fileno()
        while True:
            chunk = os.read(fd, 1 << 16)
            now = time.time()
            if not chunk:
                break
            *lines, rest = (rest + chunk).split(b"\n")
            for line in lines:
                ev = json.loads(line)
                if ev.get("type") == "llm_delta":
                    for m in _TOKEN.findall(ev.get("content", "")):
                        printed.setdefault(int(m), now)
        proc.wait(30)
        sent = list(server.requests[0].sent)
    return {"path": "cli --jsonl" + (" (store)" if store else " --no-store"), **latencies(printed, sent)}


def console_tokens() -> dict[str, Any]:
    import qasync
    from PySide6.QtCore import QEvent, QObject
    from PySide6.QtWidgets import QApplication

    from editor.run.console import RunConsole
    from engine import RunStore, load_workflow, make_resolver

    app = QApplication.instance() or QApplication(sys.argv[:1])
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    printed: dict[int, float] = {}
    waiting: list[int] = []

    class PaintWatch(QObject):
        def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt override)
            if event.type() == QEvent.Type.Paint and waiting:
                now = time.time()
                for i in waiting:
                    printed.setdefault(i, now)
                waiting.clear()
            return False

    with FakeLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.handler = lambda rec: paced_reply()
        store = RunStore(os.path.join(tmp, "runs.db"))
        console = RunConsole()
        console.resize(1100, 700)
        console.show()
        watch = PaintWatch()
        console.view.viewport().installEventFilter(watch)
        console.set_workflow(load_workflow(one_agent_file(tmp)))
        console.set_store(store)
        console.set_resolver_factory(lambda: make_resolver("openai", base_url=server.base_url))

        def received(batch: list) -> None:
            for ev in batch:
                if ev.type == "llm_delta":
                    waiting.extend(int(m) for m in _TOKEN.findall(ev.content))

        console.bridge.events_batched.connect(received)

        async def body() -> str:
            finished = asyncio.get_running_loop().create_future()
            console.run_finished.connect(lambda s: finished.done() or finished.set_result(s))
            await asyncio.sleep(0.2)
            console.start_run()
            return await finished

        with loop:
            status = loop.run_until_complete(body())
        assert status == "completed", status
        sent = list(server.requests[0].sent)
        console.close()
        store.close()
    return {"path": "run console (store)", **latencies(printed, sent)}


def main() -> int:
    args = parse_args(__doc__ or "")
    rounds = 1 if args.quick else 3  # the console shares this process with the server: its spread is the machine's
    rows = [cli_tokens(store=True), cli_tokens(store=False)] + [console_tokens() for _ in range(rounds)]
    report("Token to screen: 200 tokens 20 ms apart, a 1 s pause after token 100 (ms from the socket)", rows, args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
