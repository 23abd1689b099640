"""The Inbox: every run waiting for a decision (this window's, other processes', Temporal's), answered here.

The controller owns the Inbox dock's list: it refreshes on its own (every few seconds, and as
soon as a run of this window pauses or is answered), and answers what the panel asks:

* a run live in this process (the console's, or a run window's) through its bridge, as its
  approval card would;
* a stored run of another process (``flowdesk run`` paused, a server's run) with
  ``engine.answer_stored``: claimed in the run history, restored from its snapshot (as the
  history's resume does) and continued here, recorded, until it pauses again or ends;
* a run on a Temporal server through ``RemoteRun`` (the answer goes to the server).

Approvals that time out: stored runs past their deadline whose process is gone take their
``onTimeout`` decision when listed (``engine.expire_overdue``); live ones time out in their bridge.

A tray notification (QSystemTrayIcon) says when a new run starts waiting, unless turned off
(the panel's "Notify me", setting ``inbox/notify``, on by default).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

import shiboken6
from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QDockWidget, QMainWindow, QSystemTrayIcon

from engine import InboxItem, RemoteRun, RunStateError, RunStore, answer_stored, expire_overdue, inbox_items

from ..panels.inbox import InboxPanel
from ..resources import icon_path
from ..window.settings import settings

__all__ = ["InboxController", "NOTIFY_KEY"]

log = logging.getLogger(__name__)

NOTIFY_KEY = "inbox/notify"
REFRESH_MS = 3000
TEMPORAL_EVERY = 5  # refreshes between two looks at the Temporal server (it costs a connection)

Status = Callable[[str, int], None]


class InboxController(QObject):
    refreshed = Signal(list)  # list[InboxItem], after each refresh
    answered = Signal(str, str)  # run id, the status it reached (after an answer given here)
    notified = Signal(str, str)  # title, message: a tray notification was shown

    def __init__(
        self,
        frame: QMainWindow,
        panel: InboxPanel,
        dock: QDockWidget,
        store: RunStore | None,
        bridges: Callable[[], list[Any]],
        open_run: Callable[[InboxItem], None],
        status: Status,
    ) -> None:
        super().__init__(frame)
        self._frame = frame
        self.panel = panel
        self.dock = dock
        self.store = store
        self._bridges = bridges  # the run bridges of this process (console, run windows)
        self._open_run = open_run
        self._status = status
        self._seen: set[str] | None = None  # run ids listed last time (None: not listed yet)
        self._busy = False
        self._again = False
        self._ticks = 0
        self._remote: list[InboxItem] = []
        self.tray: QSystemTrayIcon | None = None
        panel.set_notify(self.notify_enabled)
        panel.notify_changed.connect(self.set_notify)
        panel.refresh_requested.connect(self.refresh)
        panel.answer_requested.connect(self.answer)
        panel.open_requested.connect(self._open)
        self.timer = QTimer(self)
        self.timer.setInterval(REFRESH_MS)
        self.timer.timeout.connect(self.refresh)
        self.timer.start()
        QTimer.singleShot(0, self, self.refresh)

    # ------------------------------------------------------------------ settings
    @property
    def notify_enabled(self) -> bool:
        return str(settings().value(NOTIFY_KEY, "true")).lower() in ("true", "1")

    def set_notify(self, on: bool) -> None:
        settings().setValue(NOTIFY_KEY, "true" if on else "false")
        self.panel.set_notify(on)

    def _temporal(self) -> tuple[str, str] | None:
        s = settings()
        address = str(s.value("run/temporalAddress", "") or "").strip()
        return (address, str(s.value("run/temporalNamespace", "") or "default")) if address else None

    # ------------------------------------------------------------------ listing
    def refresh(self) -> None:
        """List again (on the event loop; a refresh asked while one runs follows it)."""
        if self._busy:
            self._again = True
            return
        try:
            loop = asyncio.get_event_loop()
        except RuntimeError:
            return
        if not loop.is_running():
            return
        self._busy = True
        asyncio.ensure_future(self._refresh())

    def _live(self) -> dict[str, Any]:
        out = {}
        for bridge in self._bridges():
            run = getattr(bridge, "run", None)
            if run is not None and not run.status.is_final:
                out[run.run_id] = bridge
        return out

    async def _refresh(self) -> None:
        try:
            items = await self._gather()
        except Exception as err:  # a store that cannot be read now: said once, tried again later
            log.warning("inbox: %s", err)
            items = None
        finally:
            self._busy = False
        if not shiboken6.isValid(self) or items is None:
            return
        self._show(items)
        if self._again:
            self._again = False
            self.refresh()

    async def _gather(self) -> list[InboxItem]:
        if self.store is not None:
            await expire_overdue(self.store, live=list(self._live()))
        local = await inbox_items(self.store) if self.store is not None else []
        server = self._temporal()
        if server is not None and (self._ticks % TEMPORAL_EVERY == 0 or not self._remote):
            self._remote = await inbox_items(None, temporal=server[0], namespace=server[1], on_problem=log.info)
        elif server is None:
            self._remote = []
        self._ticks += 1
        return sorted(local + self._remote, key=lambda i: i.waiting_since)

    def _show(self, items: list[InboxItem]) -> None:
        ids = {i.run_id for i in items}
        fresh = [i for i in items if self._seen is not None and i.run_id not in self._seen]
        self._seen = ids
        self.panel.set_items(items)
        n = len(items)
        self.dock.setWindowTitle(f"Inbox ({n})" if n else "Inbox")
        if fresh and self.notify_enabled:
            first = fresh[0]
            more = f" (and {len(fresh) - 1} more)" if len(fresh) > 1 else ""
            self._notify(f"Waiting for your decision: {first.flow}", f"{first.prompt}{more}")
        self.refreshed.emit(items)

    def _notify(self, title: str, message: str) -> None:
        if self.tray is None and QSystemTrayIcon.isSystemTrayAvailable():
            self.tray = QSystemTrayIcon(QIcon(icon_path("app")), self)
            self.tray.setToolTip("Flowdesk")
            self.tray.messageClicked.connect(self._show_dock)
            self.tray.show()
        if self.tray is not None:
            self.tray.showMessage(title, message, QSystemTrayIcon.MessageIcon.Information, 8000)
        else:  # no system tray (some Linux desktops): the status bar says it instead
            self._status(f"{title} — {message}", 8000)
        self.notified.emit(title, message)

    def _show_dock(self) -> None:
        self.dock.show()
        self.dock.raise_()
        self._frame.raise_()
        self._frame.activateWindow()

    # ------------------------------------------------------------------ answering
    def _item(self, run_id: str) -> InboxItem | None:
        return next((i for i in self.panel.items if i.run_id == run_id), None)

    def _open(self, run_id: str) -> None:
        item = self._item(run_id)
        if item is not None:
            self._open_run(item)

    def answer(self, run_id: str, decision: str, note: str) -> None:
        item = self._item(run_id)
        if item is None:
            self.panel.answer_failed()
            return
        bridge = self._live().get(run_id)
        if bridge is not None:  # live in this process: as its own approval card answers it
            try:
                bridge.resume(decision, note)
            except RunStateError as err:
                self._failed(run_id, str(err))
                return
            self._status(f"Run {run_id[:8]} answered: {decision}.", 4000)
            QTimer.singleShot(300, self, self.refresh)
            return
        asyncio.ensure_future(self._answer_elsewhere(item, decision, note))

    async def _answer_elsewhere(self, item: InboxItem, decision: str, note: str) -> None:
        try:
            if item.where == "temporal":
                server = self._temporal()
                namespace = server[1] if server is not None else "default"
                run = await RemoteRun.fetch(item.run_id, address=item.server or "", namespace=namespace)
                status = await run.resume(decision, note)
            else:
                if self.store is None:
                    raise RunStateError("no run history is open")
                status = await answer_stored(self.store, item.run_id, decision, note)
        except Exception as err:  # claimed elsewhere, a decision it does not take, a server gone
            if shiboken6.isValid(self):
                self._failed(item.run_id, str(err))
            return
        if not shiboken6.isValid(self):
            return
        self._status(f"Run {item.run_id[:8]} of {item.flow} answered ({decision}): {status}.", 5000)
        self.answered.emit(item.run_id, str(status))
        self.refresh()

    def _failed(self, run_id: str, message: str) -> None:
        self._status(f"Run {run_id[:8]} could not be answered: {message}", 8000)
        self.panel.answer_failed()
        self.refresh()
