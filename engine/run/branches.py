"""A run's live branches: one asyncio task each, where each one is, and waiting until none is.

docs/design.md, "Run model (runtime semantics)". A *branch* walks a path of the graph in one
task (the walk is the scheduler's ``Run._branch``); :class:`Branches` starts those tasks,
keeps where each one is while it waits (its node, input, whether that node's visit is counted,
where it came from, its frame), cancels them, and tells when none is left (``wait_idle``).

Invariants: ``at`` holds exactly the tasks started and not yet taken out (a branch takes itself
out when it ends: see :meth:`spawn_all`); ``idle`` is set exactly when ``at`` is empty (once
the run has met its event loop). The walk writes ``at[task]`` itself on its hot path, so
``at`` is a plain dict the scheduler reads directly.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable
from typing import Any

from engine.run.context import BRANCH, BranchFrame

__all__ = ["Branches", "Where"]

#: Where a branch is: (node id, input, whether that node's visit is counted, where it came
#: from, its frame).
Where = tuple[str, Any, bool, "str | None", "BranchFrame | None"]


class Branches:
    """The live branch tasks of one run, their event loop, the run's lock and its idle event."""

    __slots__ = ("at", "idle", "lock", "loop", "_walk")

    def __init__(self, walk: Callable[[str, Any, str | None, list[asyncio.Task]], Any]) -> None:
        self.at: dict[asyncio.Task, Where] = {}
        self.idle: asyncio.Event | None = None
        self.lock: asyncio.Lock | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._walk = walk  # walk(node id, input, where it came from, [its own task]): one branch

    def on_loop(self) -> None:
        """Meet the running event loop (the lock and the idle event are made on the first)."""
        self.loop = asyncio.get_running_loop()
        if self.lock is None:
            self.lock = asyncio.Lock()
            self.idle = asyncio.Event()
            self.idle.set()

    async def wait_idle(self) -> None:
        assert self.idle is not None
        while self.at:
            await self.idle.wait()

    def spawn_all(self, targets: Any, value: Any, src: str | None, frame: Any = False) -> None:
        """A new branch at each of ``targets`` (a fan-out: the lookups made once for all), in
        ``frame`` (False: the current branch's), each in a context of its own."""
        tasks = self.at
        if not tasks:
            assert self.idle is not None
            self.idle.clear()
        given = frame is not False
        if not given:
            frame = BRANCH.get()
        context = None  # (None: the task copies the current one, whose frame it is)
        assert self.loop is not None
        create = self.loop.create_task
        walk = self._walk
        for target in targets:
            if given:
                context = contextvars.copy_context()
                context.run(BRANCH.set, frame)
            # The branch takes itself out of ``at`` when it ends (the walk's ``finally``): no done
            # callback, which would cost one more event-loop callback per branch. It learns its
            # task from ``own`` (filled in before its first step), cheaper than
            # asyncio.current_task(), a Python function in 3.11.
            own: list[asyncio.Task] = []
            task = create(walk(target, value, src, own), context=context)
            own.append(task)
            tasks[task] = (target, value, False, src, frame)

    def settled(self) -> bool:
        """Whether no branch is left (the idle event is then set)."""
        if self.at:
            return False
        assert self.idle is not None
        self.idle.set()
        return True

    def cancel(self, keep: asyncio.Task | None, ended: Callable[[asyncio.Task], None]) -> None:
        """Cancel every branch but ``keep``; ``ended(task)`` takes each out once it is done."""
        for t in list(self.at):
            if t is not keep:
                t.cancel()
                # A task cancelled before its first step never enters the walk, so its own
                # ``finally`` cannot take it out of ``at``; this callback does (once either way).
                t.add_done_callback(ended)

    def nodes(self) -> set[str]:
        """The nodes where a branch is in flight."""
        return {where[0] for task, where in self.at.items() if not task.done()}

    def in_flight(self) -> list[Where]:
        """Where each branch is, but the one running now (on its way out of an approval) and
        those that are done: what a checkpoint keeps as deferred work."""
        try:
            current = asyncio.current_task()
        except RuntimeError:
            current = None
        return [where for task, where in list(self.at.items()) if task is not current and not task.done()]
