"""The Deno host: run a JavaScript/TypeScript function in its own sandboxed Deno process.

Used by the ``code`` kind (JavaScript/TypeScript), the ``script`` kind (TaskFlow recipes) and
the ``browser`` kind (WebFlow scripts). The interface below is stable.

``await run_deno(source, *, entry="execute", arguments=(), api_methods={}, access=None,
timeout_ms=30_000, memory_mb=256, on_log=None, typescript=True, line_offset=0)``

``source``
    Module text that defines the function ``entry`` (``async function execute(api, params)
    {...}``); it is not exported, the host adds ``export default execute`` at its end (so the
    lines of ``source`` are the lines of the module). Its top-level code may hold helpers.
``arguments``
    JSON values: the function is called ``entry(api, *arguments)``.
``api_methods``
    ``{name: callable}``; each becomes ``api.name(...args)`` on the JavaScript side, a
    promise of what the callable returns (sync or async; called with the JSON arguments the
    script passed, positionally). The script's call crosses the process pipe as
    ``{id, method, args}`` and the reply comes back as ``{id, result}`` or ``{id, error}``;
    an exception raised by the callable rejects the script's promise with its message, and
    when the script lets it through, the same exception (e.g.
    :class:`~engine.graph.permissions.PermissionDenied`) is raised by ``run_deno``.
``access``
    An :class:`~engine.graph.permissions.Access`: the process gets ``--allow-net=`` its hosts
    and ``--allow-read=`` its folders, nothing else (no write, run, env, ffi, sys); ``None``
    grants nothing. Deno's own refusal of something else is raised as ``permission_denied``.
``timeout_ms``, ``memory_mb``
    The process is killed at the deadline (:class:`~engine.code.errors.CodeTimeout`); V8's
    heap is limited to ``memory_mb`` and a watchdog kills the process when its resident memory
    goes ``RSS_SLACK_MB`` past it (typed arrays live outside V8's heap), with an address-space
    backstop (``RLIMIT_DATA``): :class:`~engine.code.errors.CodeMemoryError`, whose message says
    "memory".
``on_log(stream, text)``
    Each line the script writes to stdout/stderr (``console.log``/``console.error``):
    ``stream`` is ``"stdout"`` or ``"stderr"``.
``line_offset``
    Lines before the user's own first line in ``source`` (a wrapper's header): error lines
    are reported minus it.

Returns the function's return value (``undefined`` → None). Raises
:class:`~engine.code.errors.CodeError` (``line N: Name: message``) when it throws, when its
value is not plain JSON, or when the process dies; :class:`~engine.code.errors.CodeUnavailable`
when Deno is not installed (the ``code`` extra).

Why a process per call and a FIFO: one script cannot see another's state, and the process is
killed and reaped whatever happens (end, failure, timeout, cancellation of the run). The
protocol does not use stdout: the harness (engine/code/deno_harness.py) opens the FIFO and
revokes its own write permission before the user's code is even imported, so a script that
prints protocol-looking lines only produces log text. Deno always runs with ``--no-remote
--no-npm --no-config --no-lock`` (else ``import("npm:…")`` downloads from the registry even
without net permission) and a ``DENO_DIR`` in Flowdesk's data folder. The RSS watchdog reads
``/proc`` and the backstop uses ``prlimit``: both are Linux's; elsewhere V8's heap limit and the
deadline remain, and Windows (no FIFOs) is refused with a message for now.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import re
import shutil
import signal
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from engine.code.deno_harness import HARNESS
from engine.code.errors import EXTRA_HINT, CodeError, CodeMemoryError, CodeTimeout, CodeUnavailable
from engine.graph.permissions import Access, PermissionDenied, host_and_port
from engine.nodes.base import NodeError
from engine.paths import data_dir

try:  # POSIX only: the address-space backstop
    import resource
except ImportError:  # pragma: no cover - Windows
    resource = None  # type: ignore[assignment]

__all__ = ["run_deno", "deno_binary", "deno_available", "deno_flags", "RSS_SLACK_MB"]

#: Resident memory a Deno process may use past ``memory_mb`` (its own runtime: ~50 MB idle).
RSS_SLACK_MB = 160
#: Address space past ``memory_mb`` (V8 reserves ~512 MB of code range at start).
DATA_SLACK_MB = 1024
#: How often the watchdog reads the process's resident memory.
WATCH_INTERVAL_S = 0.02
#: At most this much log text per run (then one "(output truncated)" line).
MAX_LOG_BYTES = 1 << 20

ApiMethod = Callable[..., Any]
LogSink = Callable[[str, str], None]


def deno_binary() -> str | None:
    """The Deno executable of the ``deno`` wheel (else one on PATH), or None."""
    env = os.environ.get("FLOWDESK_DENO")
    if env:
        return env if os.path.isfile(env) else None
    try:
        import deno  # the `code` extra's wheel ships the binary

        return str(deno.find_deno_bin())
    except (ImportError, FileNotFoundError):
        return shutil.which("deno")


def deno_available() -> bool:
    return deno_binary() is not None


def deno_flags(access: Access | None, memory_mb: int, channel: str) -> list[str]:
    """The ``deno run`` flags for a sandboxed process (before the main module)."""
    flags = [
        "run",
        "--no-remote",
        "--no-npm",
        "--no-config",
        "--no-lock",
        "--no-prompt",
        f"--v8-flags=--max-old-space-size={max(16, int(memory_mb))}",
        f"--allow-write={channel}",
    ]
    if access is not None:
        hosts = access.network_hosts()
        if hosts is None:
            flags.append("--allow-net")
        elif hosts:
            flags.append("--allow-net=" + ",".join(_deno_hosts(hosts)))
        if access.open:
            flags.append("--allow-read")
        else:
            folders = [str(f) for f in access.folders()]
            if folders:
                flags.append("--allow-read=" + ",".join(folders))
    return flags


def _deno_hosts(entries: Sequence[str]) -> list[str]:
    """``permissions.network`` entries as ``--allow-net`` takes them: ``host`` or ``host:port``
    (a URL's scheme and path dropped; a port only when the entry names one)."""
    out = []
    for entry in entries:
        host, port = host_and_port(entry)
        if not host:
            continue
        named_port = ":" in entry.split("://")[-1].split("/")[0]
        host = f"[{host}]" if ":" in host else host  # an IPv6 address
        item = f"{host}:{port}" if named_port and port is not None else host
        if item not in out:
            out.append(item)
    return out


_DENO_REFUSAL = re.compile(r'Requires (\w+) access(?: to "?([^",]+)"?)?', re.I)


def _refusal(message: str) -> NodeError | None:
    """Deno's own refusal (``NotCapable: Requires net access to "h:80"``) as permission_denied."""
    found = _DENO_REFUSAL.search(message)
    if not found:
        return None
    kind, target = found.group(1).lower(), found.group(2) or ""
    if kind == "net":
        host, port = host_and_port(target)
        shown = f"{host}:{port}" if port not in (None, 80, 443) else host
        return PermissionDenied(f"network access to {shown or target!r}", "network")
    if kind == "read":
        return PermissionDenied(f"file access to {target!r}", "files")
    what = {"write": f"writing {target!r}", "run": f"running the program {target!r}", "env": "environment variables"}
    return NodeError(
        f"permission_denied: {what.get(kind, f'{kind} access to {target!r}')} is never allowed in the sandbox"
    )


def _rss_mb(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0.0


class _Session:
    """One Deno process: its pipes, the calls in flight and how it ended."""

    def __init__(self, api_methods: Mapping[str, ApiMethod], on_log: LogSink | None) -> None:
        self.api_methods = api_methods
        self.on_log = on_log
        self.done: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self.proc: asyncio.subprocess.Process | None = None
        self.call_errors: list[BaseException] = []
        self.tasks: set[asyncio.Task[Any]] = set()
        self.logged = 0
        self.stderr_tail: list[str] = []

    def end(self, message: dict[str, Any]) -> None:
        if not self.done.done():
            self.done.set_result(message)

    def log(self, stream: str, text: str) -> None:
        if stream == "stderr":
            self.stderr_tail = (self.stderr_tail + [text])[-20:]
        if self.on_log is None or self.logged > MAX_LOG_BYTES:
            return
        self.logged += len(text)
        self.on_log(stream, text if self.logged <= MAX_LOG_BYTES else "(output truncated)")

    async def pump(self, reader: asyncio.StreamReader, stream: str) -> None:
        pending = b""
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                self.log(stream, line.decode("utf-8", "replace").rstrip("\r"))
            if len(pending) > 65536:
                self.log(stream, pending.decode("utf-8", "replace"))
                pending = b""
        if pending:
            self.log(stream, pending.decode("utf-8", "replace"))

    async def read_channel(self, reader: asyncio.StreamReader) -> None:
        while True:
            line = await reader.readline()
            if not line:
                return
            try:
                message = json.loads(line)
            except ValueError:
                continue
            if not isinstance(message, dict):
                continue
            if message.get("type") == "call":
                task = asyncio.create_task(self.answer(message))
                self.tasks.add(task)
                task.add_done_callback(self.tasks.discard)
            elif message.get("type") in ("result", "error"):
                self.end(message)

    async def answer(self, message: dict[str, Any]) -> None:
        call_id, method = message.get("id"), str(message.get("method") or "")
        raw = message.get("args")
        args: list[Any] = raw if isinstance(raw, list) else []
        reply: dict[str, Any] = {"id": call_id}
        fn = self.api_methods.get(method)
        try:
            if fn is None:
                raise NodeError(f"the api has no method {method!r}")
            result = fn(*args)
            if inspect.isawaitable(result):
                result = await result
            reply["result"] = result
            text = json.dumps(reply, ensure_ascii=False)
        except asyncio.CancelledError:
            raise
        except Exception as err:  # the script's promise is rejected with the message
            self.call_errors.append(err)
            text = json.dumps({"id": call_id, "error": str(err) or type(err).__name__}, ensure_ascii=False)
        proc = self.proc
        if proc is not None and proc.stdin is not None and not proc.stdin.is_closing():
            with contextlib.suppress(ConnectionError, RuntimeError):
                proc.stdin.write(text.encode() + b"\n")
                await proc.stdin.drain()

    async def watch(self, pid: int, limit_mb: float, memory_mb: int) -> None:
        while True:
            await asyncio.sleep(WATCH_INTERVAL_S)
            if _rss_mb(pid) > limit_mb:
                self.end({"type": "memory", "memory_mb": memory_mb})
                return


async def run_deno(
    source: str,
    *,
    entry: str = "execute",
    arguments: Sequence[Any] = (),
    api_methods: Mapping[str, ApiMethod] | None = None,
    access: Access | None = None,
    timeout_ms: int = 30_000,
    memory_mb: int = 256,
    on_log: LogSink | None = None,
    typescript: bool = True,
    line_offset: int = 0,
) -> Any:
    """Run ``entry(api, *arguments)`` defined by ``source`` in a sandboxed Deno process (see the
    module docstring) and return its value."""
    binary = deno_binary()
    if binary is None:
        raise CodeUnavailable(f"JavaScript and TypeScript run in Deno, which is not installed: {EXTRA_HINT}.")
    if not hasattr(os, "mkfifo"):  # pragma: no cover - Windows
        raise CodeUnavailable("JavaScript and TypeScript steps need a POSIX system (Linux or macOS) for now.")
    if not re.fullmatch(r"[A-Za-z_$][\w$]*", entry):
        raise NodeError(f"the entry {entry!r} is not a JavaScript function name")
    methods = dict(api_methods or {})
    deno_dir = data_dir() / "deno"
    deno_dir.mkdir(parents=True, exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="flowdesk-deno-"))
    user = "user.ts" if typescript else "user.js"
    (folder / user).write_text(
        f'{source}\n;export default (typeof {entry} === "function" ? {entry} : undefined);\n', encoding="utf-8"
    )
    (folder / "main.js").write_text(HARNESS.replace("{USER}", user), encoding="utf-8")
    channel = folder / "channel"
    os.mkfifo(channel, 0o600)
    read_fd = os.open(channel, os.O_RDONLY | os.O_NONBLOCK)
    keep_fd = os.open(channel, os.O_WRONLY | os.O_NONBLOCK)  # no EOF before the process opens it
    env = {"DENO_DIR": str(deno_dir), "NO_COLOR": "1", "DENO_NO_UPDATE_CHECK": "1", "DENO_NO_PROMPT": "1"}
    if "SYSTEMROOT" in os.environ:  # pragma: no cover - Windows needs it
        env["SYSTEMROOT"] = os.environ["SYSTEMROOT"]
    session = _Session(methods, on_log)
    loop = asyncio.get_running_loop()
    transport = None
    proc = None
    try:
        proc = await asyncio.create_subprocess_exec(
            binary,
            *deno_flags(access, memory_mb, str(channel)),
            str(folder / "main.js"),
            str(channel),
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            cwd=str(folder),
            env=env,
            start_new_session=True,
        )
        session.proc = proc
        if resource is not None and hasattr(resource, "prlimit"):  # Linux
            with contextlib.suppress(OSError, ValueError):
                limit = (int(memory_mb) + DATA_SLACK_MB) << 20
                resource.prlimit(proc.pid, resource.RLIMIT_DATA, (limit, limit))
        channel_reader = asyncio.StreamReader(limit=1 << 28)
        transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(channel_reader), os.fdopen(read_fd, "rb", buffering=0)
        )
        read_fd = -1
        assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
        start = {
            "type": "start",
            "methods": sorted(methods),
            "arguments": list(arguments),
            "missing": f"the script defines no function named {entry}",
        }
        proc.stdin.write(json.dumps(start, ensure_ascii=False).encode() + b"\n")
        workers = [
            asyncio.create_task(session.read_channel(channel_reader)),
            asyncio.create_task(session.pump(proc.stdout, "stdout")),
            asyncio.create_task(session.pump(proc.stderr, "stderr")),
            asyncio.create_task(session.watch(proc.pid, memory_mb + RSS_SLACK_MB, memory_mb)),
        ]
        exited = asyncio.create_task(proc.wait())
        try:
            waiting: list[asyncio.Future[Any]] = [session.done, exited]
            await asyncio.wait(waiting, timeout=max(0.05, timeout_ms / 1000), return_when="FIRST_COMPLETED")
            timed_out = not session.done.done() and not exited.done()
            if exited.done() and not session.done.done():
                with contextlib.suppress(asyncio.TimeoutError):  # its last message may still be in the pipe
                    await asyncio.wait_for(asyncio.shield(session.done), 0.2)
        finally:
            _kill(proc)
            with contextlib.suppress(asyncio.TimeoutError, ProcessLookupError):
                await asyncio.wait_for(exited, 5)
            # what the process printed last is still in the pipes: read it to the end
            await asyncio.wait(workers[1:3], timeout=1.0)
            for task in (*workers, *session.tasks):
                task.cancel()
            await asyncio.gather(*workers, *session.tasks, return_exceptions=True)
        if not session.done.done():
            if timed_out:
                raise CodeTimeout(
                    f"the code did not finish within its time limit ({_seconds(timeout_ms)}) and was stopped"
                )
            raise _crash(session, memory_mb)
        return _outcome(session, session.done.result(), line_offset, memory_mb)
    finally:
        if proc is not None:
            _kill(proc)
        if transport is not None:
            transport.close()
        for fd in (read_fd, keep_fd):
            if fd >= 0:
                with contextlib.suppress(OSError):
                    os.close(fd)
        shutil.rmtree(folder, ignore_errors=True)


def _seconds(ms: int) -> str:
    return f"{ms / 1000:g} s"


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    try:  # the whole group; Popen.kill would reap it behind asyncio's child watcher
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError, AttributeError):
        with contextlib.suppress(ProcessLookupError):
            proc.kill()


def _crash(session: _Session, memory_mb: int) -> CodeError:
    """The process ended without a result: V8 out of memory, the script's ``Deno.exit``, a crash."""
    tail = "\n".join(session.stderr_tail)
    if re.search(r"out of memory|allocation failed|heap limit", tail, re.I):
        return CodeMemoryError(f"the code went past its memory limit ({memory_mb} MB) and was stopped")
    last = next((ln.strip() for ln in reversed(session.stderr_tail) if ln.strip()), "")
    code = session.proc.returncode if session.proc is not None else None
    return CodeError(
        f"the code's process ended before returning a value (exit status {code})" + (f": {last}" if last else "")
    )


def _outcome(session: _Session, message: dict[str, Any], line_offset: int, memory_mb: int) -> Any:
    kind = message.get("type")
    if kind == "result":
        return message.get("value")
    if kind == "memory":
        raise CodeMemoryError(f"the code went past its memory limit ({message['memory_mb']} MB) and was stopped")
    text = str(message.get("message") or "")
    name = str(message.get("name") or "Error")
    for err in session.call_errors:  # an api method's failure the script let through
        if isinstance(err, NodeError) and str(err) and str(err) in text:
            raise err
    refused = _refusal(text) if name in ("NotCapable", "PermissionDenied") else None
    if refused is not None:
        raise refused
    if name == "TypeError" and text.startswith("SyntaxError: "):  # a module that does not parse
        name, text = "SyntaxError", text[len("SyntaxError: ") :]
    text = "\n".join(ln for ln in text.splitlines() if not re.match(r"\s*\d*\s*\|", ln)).strip()
    line = message.get("line")
    line = int(line) - line_offset if isinstance(line, int) and line > line_offset else None
    if re.search(r"allocation failed|out of memory", text, re.I):
        raise CodeMemoryError(f"{name}: {text} (the code went past its memory limit of {memory_mb} MB)", line)
    raise CodeError(f"{name}: {text}" if text else name, line)
