"""Executing a run for ``run`` and ``resume``: the run driven to its end with the approvals
answered in order (or their deadlines waited for), recorded as it goes and printed once
committed, Ctrl+C a cancel, a reader that went away (``| head``) a quiet exit 141, and the
way out said when the model provider could not serve the run. (Split from
:mod:`engine.cli.run`, which prepares a run: its file, arguments, provider and store.)
"""

from __future__ import annotations

import asyncio
import json
import os
import select
import signal
import stat
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from engine.cli import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, EXIT_OUTPUT_CLOSED, EXIT_PAUSED, EXIT_USAGE
from engine.cli.printer import Printer, print_err
from engine.llm.config import settings_path
from engine.llm.registry import provider_models
from engine.run.events import RunStatus, format_duration
from engine.store import RunRecorder, StoreError

__all__ = ["execute"]


class _Output:
    """What the command does when the reader of the printed run goes away (``flowdesk run ... |
    head -5``; the printer notices the closed pipe): as a Unix tool dies of SIGPIPE, nothing
    more is written (stdout points to /dev/null, so no flush at exit fails either) and the run
    is cancelled: nobody reads it. The command then exits 141, quietly."""

    def __init__(self, printer: Printer, run: Any) -> None:
        self.printer = printer
        self.run = run
        self.loop: asyncio.AbstractEventLoop | None = None  # set once the run's loop runs
        printer.on_broken = self._reader_gone
        self._pipe = _pipe_poller()  # None unless stdout is a pipe (only a pipe's reader can leave)

    @property
    def closed(self) -> bool:
        return self.printer.broken

    def committed(self, events: list[Any], recorded: bool) -> None:
        self.printer.committed(events, recorded)

    def reader_left(self) -> bool:
        """Whether the reader of a piped stdout has gone. Asked as well as the printer's
        BrokenPipeError: a big write that the reader's leaving cuts short returns the part
        written, and Python reports no error."""
        if self.closed:
            return True
        if self._pipe is None:
            return False
        try:
            gone = any(events & (select.POLLERR | select.POLLHUP) for _fd, events in self._pipe.poll(0))
        except (OSError, ValueError):
            return False
        if gone:
            self.printer.broken = True
            self._reader_gone()
        return gone

    async def watch_reader(self, every: float = 0.25) -> None:
        """While the run runs, look whether the reader has gone: a run waiting on a slow step
        writes nothing, so the printer alone would not notice ``| head`` leaving."""
        while self._pipe is not None and not self.reader_left():
            await asyncio.sleep(every)

    def _reader_gone(self) -> None:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):
            pass
        loop = self.loop
        if loop is not None and not loop.is_closed():  # (this may be the store's writer thread)
            try:
                loop.call_soon_threadsafe(self.run.cancel, "The output was closed: nobody reads the run any more.")
            except RuntimeError:  # the loop has just closed: the run is over anyway
                pass


def _pipe_poller() -> select.poll | None:
    """A poll object watching stdout, when stdout is a pipe (poll reports POLLERR on a pipe whose
    read end is closed); None otherwise."""
    try:
        fd = sys.stdout.fileno()
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            return None
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
    except (OSError, ValueError, AttributeError):  # no real stdout: nothing to watch
        return None
    return poller


async def _drive(
    run: Any,
    decisions: list[tuple[str, str]],
    recorder: Any,
    *,
    resume_first: bool,
    first_output: str | None = None,
    output: _Output | None = None,
    first_arguments: Any = None,
) -> int:
    """Start (or resume) a run and answer its approvals in order; returns the exit code."""
    loop = asyncio.get_running_loop()
    watching = None
    if output is not None:
        output.loop = loop
        watching = loop.create_task(output.watch_reader())
    try:
        loop.add_signal_handler(signal.SIGINT, run.cancel)
        loop.add_signal_handler(signal.SIGTERM, run.cancel)
    except (NotImplementedError, RuntimeError):  # not on the main thread / not supported
        pass
    try:
        return await _answer_in_order(run, decisions, recorder, resume_first, first_output, output, first_arguments)
    finally:
        if watching is not None:
            watching.cancel()


async def _answer_in_order(
    run: Any,
    decisions: list[tuple[str, str]],
    recorder: Any,
    resume_first: bool,
    first_output: str | None,
    output: _Output | None,
    first_arguments: Any,
) -> int:
    try:
        if resume_first:
            word, note = decisions.pop(0)
            status = await _answer(run, word, note, first_output, first_arguments)
        else:
            status = await run.start()
        if recorder:
            recorder.settled()
        while status == RunStatus.PAUSED:
            if output is not None and output.reader_left():
                return EXIT_OUTPUT_CLOSED
            if not decisions:
                timeout = run.pause_timeout()
                if timeout is not None:  # the approval times out: wait for its deadline here
                    if await _wait_deadline(run, timeout, recorder):
                        return EXIT_PAUSED  # answered by another process meanwhile: it goes on there
                    status = await run.expire() if run.status == RunStatus.PAUSED else await run.wait()
                    if recorder:
                        recorder.settled()
                    continue
                node = run.pending_approval
                extra = getattr(run, "waiting_extra", lambda: None)() or {}
                if extra.get("kind") == "tool_call":
                    tool = f"{extra['server']}/{extra.get('tool')}" if extra.get("server") else extra.get("tool")
                    print_err(
                        f"run {run.run_id} is paused at '{node}': its call of '{tool}' with "
                        f"{json.dumps(extra.get('arguments'), ensure_ascii=False)} waits for approval "
                        "(--arguments JSON on resume calls it with other arguments)"
                    )
                else:
                    print_err(f"run {run.run_id} is paused at approval '{node}' waiting for a decision")
                if recorder:
                    print_err(
                        f"continue it with: flowdesk resume {run.run_id} --decide {_choices(run)}   (or reject:NOTE)"
                    )
                else:
                    print_err(f"pass --decide {_choices(run)}[:NOTE] to answer it")
                return EXIT_PAUSED
            word, note = decisions.pop(0)
            status = await _answer(run, word, note, None)
            if recorder:
                recorder.settled()
    except ValueError as err:  # a decision the approval does not take: the run stays paused
        print_err(str(err))
        if recorder:
            print_err(f"the run is paused; continue it with: flowdesk resume {run.run_id} --decide {_choices(run)}")
        return EXIT_USAGE
    if output is not None and output.reader_left():  # `| head`: the reader left; say nothing more
        return EXIT_OUTPUT_CLOSED
    # Every ended run names itself (README: "its id is printed when it ends"): the id is what
    # `show` and `repair` take.
    log = f" (its log: flowdesk show {run.run_id[:8]})" if recorder else ""
    if status == RunStatus.COMPLETED:
        print_err(f"run {run.run_id} completed{log}")
        return EXIT_OK
    if status == RunStatus.CANCELLED:
        print_err(f"run {run.run_id} cancelled{log}")
        return EXIT_CANCELLED
    print_err(f"run {run.run_id} failed: {run.error}")
    if recorder:
        print_err(
            f"its log: flowdesk show {run.run_id[:8]}; a fix proposed by the model: flowdesk repair {run.run_id[:8]}"
        )
    return EXIT_FAILED


def _choices(run: Any) -> str:
    return "|".join(run.decisions())


async def _answer(run: Any, word: str, note: str, output: Any, arguments: Any = None) -> RunStatus:
    """Resume with a decision, unless the approval's deadline has passed: it then takes its
    ``onTimeout`` decision (said so) and ``word`` is not used."""
    timeout = run.pause_timeout() if hasattr(run, "pause_timeout") else None
    if timeout is not None and run.overdue():
        when = datetime.fromtimestamp(timeout[0]).strftime("%Y-%m-%d %H:%M:%S")
        print_err(
            f"the approval '{run.pending_approval}' timed out at {when}: it takes '{timeout[1]}' "
            f"(the decision '{word}' is not used)"
        )
        return await run.expire()
    if arguments is not None:  # a tool call's arguments, edited
        return await run.resume(word, note, output=output, arguments=arguments)
    return await run.resume(word, note, output=output)


async def _wait_deadline(run: Any, timeout: tuple[float, str], recorder: Any) -> bool:
    """Wait until the pending approval's deadline (said once); True when another process
    answered the run meanwhile (it is no longer paused in the run history)."""
    deadline, decision = timeout
    when = datetime.fromtimestamp(deadline).strftime("%H:%M:%S")
    left = max(0.0, deadline - time.time())
    print_err(
        f"run {run.run_id} is paused at approval '{run.pending_approval}' until {when} "
        f"(in {format_duration(left)}); then it takes '{decision}'"
        + (f". Answer it meanwhile with: flowdesk resume {run.run_id} --decide {_choices(run)}" if recorder else "")
    )
    store = recorder.store if recorder else None
    while run.status == RunStatus.PAUSED:
        left = deadline - time.time()
        if left <= 0:
            return False
        await asyncio.sleep(min(1.0, left))
        if store is not None:
            try:
                info = store.get_run(run.run_id)
            except StoreError:
                continue
            if info is not None and info.status != "paused":
                print_err(f"run {run.run_id} was answered by another process; it goes on there")
                return True
    return False


def execute(
    run: Any,
    store: Any,
    decisions: list[tuple[str, str]],
    printer: Printer,
    *,
    workflow_path: str | None = None,
    resume_first: bool = False,
    first_output: str | None = None,
    first_arguments: Any = None,
) -> int:
    recorder = None
    output = _Output(printer, run)
    if store is not None:
        try:
            recorder = RunRecorder(
                store, run, workflow_path=workflow_path, new=not resume_first, on_commit=output.committed
            )
        except StoreError as err:
            print_err(f"warning: {err} The run is not recorded.")
    printer.follow(run, recorder)  # printed as it happens, or once committed while recorded
    code = EXIT_CANCELLED
    try:
        with _sigint_kept():
            code = asyncio.run(
                _drive(
                    run,
                    decisions,
                    recorder,
                    resume_first=resume_first,
                    first_output=first_output,
                    output=output,
                    first_arguments=first_arguments,
                )
            )
    except KeyboardInterrupt:
        code = EXIT_CANCELLED
    finally:
        with _interrupts_ignored():  # a second Ctrl+C must not cut the last batch's commit
            if recorder:
                recorder.close()
        printer.finish()
    if code != EXIT_USAGE and output.reader_left():  # the reader left (`| head`), even as the run ended
        return EXIT_OUTPUT_CLOSED
    problem = printer.state.provider_problem
    if code == EXIT_FAILED and problem is not None:  # the way out, rather than only the error
        who = f"provider '{problem['provider']}'" if problem.get("provider") else "the model provider"
        if problem.get("model"):  # it answered, without that model: one of its own serves every agent
            models = provider_models(problem["provider"]) if problem.get("provider") else []
            print_err(
                f"{who} has no model '{problem['model']}': choose one it has for every agent with --model NAME"
                + (f" (it lists: {', '.join(models[:8])}{', ...' if len(models) > 8 else ''})" if models else "")
            )
        else:
            print_err(
                f"{who} could not serve the run: start its server or set it up, or choose another with "
                f"--provider NAME (--provider echo for a dry run; a default can be set as defaultProvider "
                f"in {settings_path()})"
            )
    if recorder is not None and recorder.error is not None:
        lost = f"{recorder.lost} event{'s' if recorder.lost != 1 else ''}" if recorder.lost else "the run's state"
        where = (
            "the run's history is not fully recorded"
            if recorder.row_written
            else "the run is not in the run history at all"
        )
        print_err(f"{where}: {lost} could not be written. {recorder.error}")
        if code in (EXIT_OK, EXIT_PAUSED):  # a run that cannot be looked at or resumed later did not succeed
            return EXIT_FAILED
    return code


@contextmanager
def _sigint_kept() -> Iterator[None]:
    """Ctrl+C's handler given back as it was once the run's loop has closed (the loop resets it to
    Python's KeyboardInterrupt, a traceback in the instant before the command exits; the
    ``flowdesk`` launcher's is a quiet cancel)."""
    try:
        before = signal.getsignal(signal.SIGINT)
    except ValueError:
        before = None
    try:
        yield
    finally:
        if before is not None and before is not signal.getsignal(signal.SIGINT):
            try:
                signal.signal(signal.SIGINT, before)
            except (ValueError, TypeError):  # not the main thread, or a handler set outside Python
                pass


@contextmanager
def _interrupts_ignored() -> Iterator[None]:
    """SIGINT ignored meanwhile (on the main thread; elsewhere signals are not ours to set)."""
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
