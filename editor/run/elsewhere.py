"""Noticing that a run paused here was answered in another process, and saying so.

A run the window shows paused at an approval is in the run history too, where another
process may answer it meanwhile: ``flowdesk resume RUN --decide approve``, the HTTP API of
``flowdesk serve``, another window's Inbox. That process claims the run in the store and
continues it; the window's copy must then stop offering a decision (it would only be refused)
and say where the run went.

* :class:`StoreWatch` asks the store every second (``RunStore.holder_of``: one indexed row)
  while the bridge shows its run paused, recorded and idle, and says ``moved_on`` once the run
  is no longer paused there, another process holds it, or it has new events. The first look
  at start is the baseline: a run taken up from the store may be held by a process still alive.
  A run on a Temporal server is not in the store: the server is its one source of truth, so
  the watch only calls the bridge back every second (:meth:`StoreWatch.poll`), which follows
  the run there (``RemoteRun.follow``: at once back when nothing moved).
* :class:`ElsewhereNotice` is the console's whole-width line that says what happened, with
  *Open in Run history* when the window can open a stored run (its ``open_requested``).

* :class:`AnsweredElsewhere`, a part of :class:`~editor.run.bridge.RunBridge` (kept here with
  the rest of it): when to watch, following a remote run on, and letting a local run go.

The bridge owns the watch and the run; the console shows the notice.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QSizePolicy, QToolButton, QWidget

from engine import Run, RunEvent, RunStatus, StoreError

__all__ = [
    "AnsweredElsewhere",
    "StoreWatch",
    "ElsewhereNotice",
    "elsewhere_text",
    "remote_text",
    "drop_waiting",
    "WATCH_MS",
]

log = logging.getLogger(__name__)

WATCH_MS = 1000  # between two looks at the store while a run waits here

_ENDED = {
    "completed": "it has completed since",
    "failed": "it has failed since",
    "cancelled": "it was cancelled there",
    "interrupted": "it was interrupted there",
}


def remote_text(address: str) -> str:
    """What a run on a Temporal server did when another client answered its approval."""
    return (
        f"This approval was answered elsewhere (on the Temporal server at {address}); the run is "
        "followed here as it goes on there."
    )


def elsewhere_text(holder: Any) -> str:
    """What happened to the run, in a sentence, from what the store knows now (``holder``: a
    ``RunHolder``, or None when the run was deleted from the history)."""
    if holder is None:
        return "This run was deleted from the run history elsewhere; nothing waits for a decision here any more."
    if holder.owner_pid == os.getpid() and holder.owner_host == socket.gethostname():
        by = "in another window of this app"
    else:
        by = f"by {holder.owner}"
    if holder.status == "paused":
        how = "it now waits for its next approval there"
    elif holder.status == "running":
        how = "the run goes on there"
    else:
        how = _ENDED.get(holder.status, f"it is {holder.status} now")
    return f"This approval was answered elsewhere ({by}); {how}. Open it from Run history to see how it went."


def drop_waiting(state: Any) -> None:
    """A run let go of: in its ``RunState`` nothing waits for a decision any more (its approval
    nodes show what they did before, not a wait that is no longer here)."""
    state.pending_approvals.clear()
    for node_id, node_state in list(state.states.items()):
        if node_state in ("waiting", "queued"):
            del state.states[node_id]


class StoreWatch(QObject):
    """Looks at one run's row every :data:`WATCH_MS` while started; ``moved_on(text)`` once."""

    moved_on = Signal(str)  # what happened (elsewhere_text)

    def __init__(self, busy: Callable[[], bool], parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._busy = busy  # an operation in flight here: its own writes are not news
        self._timer = QTimer(self)
        self._timer.setInterval(WATCH_MS)
        self._timer.timeout.connect(self._look)
        self._store: Any = None
        self.run_id: str | None = None
        self._baseline: Any = None
        self._poll: Callable[[], None] | None = None

    @property
    def watching(self) -> bool:
        return self._timer.isActive()

    def watch(self, store: Any, run_id: str) -> None:
        """Watch ``run_id`` in ``store`` from now on (what it is now is the baseline)."""
        self.stop()
        try:
            baseline = store.holder_of(run_id)
        except StoreError as err:  # a history that cannot be read now: nothing to watch
            log.warning("run %s: not watched: %s", run_id, err)
            return
        self._store, self.run_id, self._baseline = store, run_id, baseline
        self._timer.start()
        if baseline is None or baseline.status != "paused":  # gone already (claimed before the pause was seen)
            QTimer.singleShot(0, self, self._look)

    def poll(self, run_id: str, look: Callable[[], None]) -> None:
        """Call ``look()`` every :data:`WATCH_MS` while idle, until stopped (a remote run)."""
        self.stop()
        self.run_id, self._poll = run_id, look
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()
        self._store = self._baseline = self._poll = None

    def _look(self) -> None:
        store, run_id, before = self._store, self.run_id, self._baseline
        if self._poll is not None and not self._busy():
            self._poll()
        if store is None or run_id is None or self._busy():
            return
        try:
            now = store.holder_of(run_id)
        except StoreError:  # locked for a moment, or gone: look again next time
            return
        if (
            now is not None
            and before is not None
            and now.status == "paused"
            and (now.owner_pid, now.owner_host, now.events) == (before.owner_pid, before.owner_host, before.events)
        ):
            return
        self.stop()
        self.moved_on.emit(elsewhere_text(now))


class ElsewhereNotice(QFrame):
    """The console's line under its header: the run shown was answered elsewhere."""

    open_requested = Signal(str)  # run id: open it in the run history

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("elsewhereNotice")
        self.setStyleSheet(
            "QFrame#elsewhereNotice { background: #1e3a5f; border: 1px solid #3b82f6; border-radius: 4px; }"
            " QLabel { color: #dbeafe; background: transparent; }"
        )
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 4, 4, 4)
        self.label = QLabel()
        self.label.setObjectName("elsewhereText")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        row.addWidget(self.label, 1)
        self.open_button = QToolButton()
        self.open_button.setObjectName("openElsewhereRun")
        self.open_button.setText("Open in Run history")
        self.open_button.setToolTip("Show this run as the run history has it now, read-only")
        self.open_button.setStyleSheet("QToolButton { color: #93c5fd; font-weight: bold; }")
        self.open_button.clicked.connect(lambda: self.open_requested.emit(self.run_id or ""))
        self.open_button.setVisible(False)
        row.addWidget(self.open_button, 0, Qt.AlignmentFlag.AlignVCenter)
        dismiss = QToolButton()
        dismiss.setObjectName("dismissElsewhere")
        dismiss.setText("Dismiss")
        dismiss.clicked.connect(self.hide)
        row.addWidget(dismiss, 0, Qt.AlignmentFlag.AlignVCenter)
        self.run_id: str | None = None
        self._offers_open = False
        self.setVisible(False)

    def set_offers_open(self, offers: bool) -> None:
        """Whether *Open in Run history* is offered (the window can open a stored run)."""
        self._offers_open = offers
        self.open_button.setVisible(offers and self.run_id is not None)

    def show_for(self, run_id: str | None, text: str) -> None:
        self.run_id = run_id
        self.label.setText(f"⇄ {text}")
        self.open_button.setVisible(self._offers_open and run_id is not None)
        self.setVisible(True)

    @property
    def text(self) -> str:
        return self.label.text() if self.isVisible() else ""


class AnsweredElsewhere:
    """The part of :class:`~editor.run.bridge.RunBridge` that notices its paused run answered
    elsewhere: it watches the run while it waits here idle (``_watch_store``, called where the
    bridge arms an approval's deadline), lets a local run go (never continuing it: the other
    process owns it now) and follows a remote one on. Its state is the bridge's."""

    run: Any
    run_state: Any
    is_busy: bool
    answered_elsewhere: Any  # the bridge's Signal(str)
    approvals_changed: Any
    node_states_changed: Any
    _watch: StoreWatch
    _recorder: Any
    _claim: Any
    _task: asyncio.Task | None
    _deadline: Any
    _delivery: Any
    _finished_emitted: bool
    _on_event: Callable[[RunEvent], None]
    _decision_queued: bool
    _settle: Callable[[Any], Any]
    _drive: Callable[[Any, Any], Any]

    def _watch_store(self, run: Any) -> None:
        """Watch the paused ``run`` where it is kept: the store it is recorded in (or was taken
        up from), or its Temporal server (``follow``, the one source of truth there)."""
        store = self._recorder.store if self._recorder is not None else self._claim
        if run.status != RunStatus.PAUSED:
            return
        if store is not None:
            self._watch.watch(store, run.run_id)
        elif not isinstance(run, Run) and hasattr(run, "follow"):
            self._watch.poll(run.run_id, lambda: self._look_remote(run))

    def _look_remote(self, run: Any) -> None:
        if run is self.run and run.status == RunStatus.PAUSED and not self.is_busy:
            self._task = asyncio.ensure_future(self._follow_remote(run))

    async def _follow_remote(self, run: Any) -> None:
        """Has another client answered the remote run? Follow it on to its next pause or end if
        so (its events shown as they come); at once back if not."""
        seen: list[RunEvent] = []
        run.add_listener(seen.append)
        try:
            await run.follow()
        except Exception as err:  # the server out of reach for a moment: looked at again later
            log.info("run %s: not followed: %s", run.run_id, err)
        finally:
            run.remove_listener(seen.append)
        if run is not self.run:
            return
        if seen or run.status != RunStatus.PAUSED:
            if any(e.type == "input_received" for e in seen):
                self.answered_elsewhere.emit(remote_text(getattr(run, "address", "?")))
            await self._settle(run)
        elif not self._watch.watching and not self._decision_queued:  # cancelled meanwhile: to its end
            await self._drive(run, run.wait())

    def _let_go_elsewhere(self, text: str) -> None:
        """The paused run went on in another process (``text`` says how): let go of it, never to
        continue it here (the store is the other's now); its log stays, nothing waits here."""
        run, recorder = self.run, self._recorder
        if run is None or run.run_id != self._watch.run_id or run.status != RunStatus.PAUSED or self.is_busy:
            return
        self._deadline.disarm()
        run.remove_listener(self._on_event)
        try:
            if recorder is not None:
                recorder.close()  # nothing is left to write: the pause was committed
        except Exception as err:  # StoreError
            log.error("run %s: %s", run.run_id, err)
        self._delivery.release()
        self._claim = None
        self._finished_emitted = True
        self.run = None
        drop_waiting(self.run_state)  # what the run did here stays; its waiting approvals go
        self.approvals_changed.emit()
        self.node_states_changed.emit(dict(self.run_state.states))
        self.answered_elsewhere.emit(text)
