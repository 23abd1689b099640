"""The run history panel: past and paused runs, one page at a time, and what to do with them.

Concept: a standalone widget the main window docks. It reads the :class:`engine.store.RunStore`
directly (a page of 50 runs is a couple of indexed queries, well under a frame), and hands
everything that needs the rest of the application back as signals:
* ``run_opened(run_id, workflow, events, info)`` — show this past run read-only (console log,
  canvas states: derived by :class:`engine.RunState`);
* ``workflow_version_requested(workflow, run_id)`` — open the workflow that ran as a new document;
* ``run_again_requested(workflow, run_id)`` — the same, then run it with that run's input and arguments;
* ``resume_requested(run_id)`` — the run is paused with a saved state; the owner of runs resumes it.

Runs on a Temporal server (``set_remote_server``): listed on the first page with the local
ones, newest first, each with a "Temporal" badge (``remote``); opened through ``run_opened``
like a stored run (see :mod:`.remote`). Delete, export, resume and compare are for local runs.

Invariants: the panel never blocks on the database for more than one page; it never raises
from a user action (every :class:`StoreError`, file or format error ends in a message); with
no usable store it shows "Run history unavailable: <reason>" instead of the table and the
application keeps working. Deleting skips runs that are still running (their recorder would
lose its row). Files are written with :func:`engine.atomic_write_text`.

The panel's parts: the list and paging (here), its widgets and actions (``panel_ui``), the
filter row (``filters``), the table with its keys, context menu and selection
(``runs_table``), what it does with a run (``actions``), comparing two runs (``comparing``),
export and import (``transfer``), the status pill (``badge``) and opening the store at
start-up (``store_open``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer, QUrl, Signal, Slot
from PySide6.QtGui import QAction, QDesktopServices, QPalette
from PySide6.QtWidgets import QWidget

from engine import RunInfo, RunStore, StoreError, data_dir, stored_run_costs

from .actions import RunActions, warn
from .comparing import RunComparer
from .model import RUN_ROLE, RunHistoryModel
from .panel_ui import STATUS_FILTERS, setup_ui
from .remote import RemoteRuns
from .store_open import open_store_for_gui
from .transfer import RunTransfer

__all__ = ["HistoryPanel", "open_store_for_gui", "PAGE_SIZE", "STATUS_FILTERS"]

log = logging.getLogger(__name__)

PAGE_SIZE = 50
PAGE_TABLE, PAGE_EMPTY, PAGE_UNAVAILABLE = range(3)


class HistoryPanel(RunActions, RunTransfer, QWidget):
    """Runs list with pagination, filters and actions. Dock it; connect its three signals."""

    #: ``(run_id, workflow that ran, its events in order, its RunInfo)``
    run_opened = Signal(str, object, list, object)
    #: ``(workflow that ran, run_id)``: open this version as a new, unsaved document
    workflow_version_requested = Signal(object, str)
    run_again_requested = Signal(object, str)
    #: ``run_id`` of a paused run whose state is saved: resume it (the console asks for the decision)
    resume_requested = Signal(str)
    #: a paused run on the Temporal server to take up: (run id, HOST:PORT, namespace)
    remote_resume_requested = Signal(str, str, str)

    def __init__(
        self,
        store: RunStore | None = None,
        parent: QWidget | None = None,
        *,
        unavailable_reason: str | None = None,
        page_size: int = PAGE_SIZE,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("HistoryPanel")
        self._store: RunStore | None = None
        self._store_path: str | os.PathLike[str] | None = None
        self._reason = ""
        self.page_size = page_size
        self._offset = 0
        self._total = 0
        self._paused_total = 0
        self._last_dir = str(Path.home())
        #: milliseconds between refreshes while the shown page has running runs (0: never)
        self.auto_refresh_interval = 3000

        self.model = RunHistoryModel(self)
        self._remote: Any = None  # RemoteRuns of the configured Temporal server, if any
        self._remote_rows: list[RunInfo] = []
        self._remote_note = ""
        self._comparer = RunComparer(self, self.is_remote)
        setup_ui(self)
        self._message_timer = QTimer(self, singleShot=True, interval=8000)
        self._message_timer.timeout.connect(lambda: self._message.setVisible(False))
        self._poll_timer = QTimer(self, singleShot=True)
        self._poll_timer.timeout.connect(self._poll)
        self.set_store(store, reason=unavailable_reason)

    # ================================================================ store
    @property
    def store(self) -> RunStore | None:
        return self._store

    @property
    def unavailable_reason(self) -> str:
        """Why there is no history ("" when the store is usable)."""
        return "" if self.is_available else self._reason

    @property
    def is_available(self) -> bool:
        return self._store is not None and self.stack.currentIndex() != PAGE_UNAVAILABLE

    def set_store(
        self, store: RunStore | None, *, reason: str | None = None, path: str | os.PathLike[str] | None = None
    ) -> None:
        """Use this store (None: show the unavailable state with ``reason``)."""
        self._store = store
        self.model.final_vars = store.final_variables if store is not None else None
        if store is not None:
            self._store_path = store.path
        elif path is not None:
            self._store_path = path
        self._reason = reason or ("" if store else "no run history was opened.")
        self._offset = 0
        if store is None:
            self._show_unavailable(self._reason)
        else:
            self.refresh()

    @Slot()
    def retry(self) -> None:
        """Try to open the store again (after the user moved a damaged file away, closed another program...)."""
        if self._store is None:
            try:
                store = RunStore(self._store_path)
                store.recover()
            except StoreError as err:
                self._show_unavailable(str(err))
                return
            self.set_store(store)
        else:
            self.refresh()

    def _show_unavailable(self, reason: str) -> None:
        self._reason = reason
        text = reason.strip()
        self.unavailable_label.setText(f"<b>Run history unavailable:</b> {_html(text)}")
        self.stack.setCurrentIndex(PAGE_UNAVAILABLE)
        self.model.set_page([])
        self._total = 0
        self.paused_banner.setVisible(False)
        self.range_label.setText("")
        for w in (self.filter_bar, self.toolbar, self.pager):
            w.setVisible(False)
        self._update_actions()

    def _show_folder(self) -> None:
        if self._store is not None:
            path = Path(self._store.path)
        else:
            try:
                path = Path(self._store_path) if self._store_path is not None else data_dir() / "runs.db"
            except Exception:  # noqa: BLE001 - no folder to show is not worth an error dialog
                return
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(path.parent)))

    def _fail(self, err: StoreError, doing: str) -> None:
        """A store error during an action: say so; if the store is unusable now, show that state."""
        log.warning("%s: %s", doing, err)
        warn(self, "Run history", f"{doing} failed.\n\n{err}")

    # ================================================================ paging and filters
    @property
    def page_offset(self) -> int:
        return self._offset

    @property
    def total(self) -> int:
        """How many runs match the filters."""
        return self._total

    @property
    def workflow_filter(self) -> str | None:
        return self.filter_bar.workflow

    @property
    def status_filter(self) -> str | None:
        return self.filter_bar.status

    def set_filters(self, *, workflow: str | None = None, status: str | None = None) -> None:
        """Show only the runs of ``workflow`` and/or with ``status`` (None: all); back to the first page."""
        self.filter_bar.set(workflow=workflow, status=status)
        self._filters_changed()

    def _filters_changed(self, *_: Any) -> None:
        self._offset = 0
        self.refresh()

    def _show_paused(self, *_: Any) -> None:
        self.set_filters(workflow=None, status="paused")

    @Slot()
    def next_page(self) -> None:
        if self._offset + self.page_size < self._total:
            self._offset += self.page_size
            self._reload(keep_selection=False)

    @Slot()
    def previous_page(self) -> None:
        if self._offset > 0:
            self._offset = max(0, self._offset - self.page_size)
            self._reload(keep_selection=False)

    def range_text(self) -> str:
        if self._total == 0:
            return "No runs"
        first = self._offset + 1
        last = min(self._offset + self.model.rowCount(), self._total)
        noun = "run" if self._total == 1 else "runs"
        return f"{first}–{last} of {self._total:,} {noun}"

    # ================================================================ refresh
    @Slot()
    def refresh(self) -> None:
        """Reload the filters' choices, the total and the current page from the store.

        The main window calls this when a run starts or ends. Keeps the page (clamped to
        the last one) and the selected runs that are still on it. The Temporal server's runs
        (if one is set) are listed again too; they join the page when they arrive.
        """
        self._reload(keep_selection=True)
        if self._remote is not None:
            self._remote.refresh()

    # ================================================================ runs on a Temporal server
    @property
    def remote_server(self) -> str | None:
        """HOST:PORT of the Temporal server whose runs are listed (None: none)."""
        return self._remote.address if self._remote is not None else None

    @property
    def remote_runs(self) -> Any:
        """The :class:`~editor.history.remote.RemoteRuns` in use (None without a server)."""
        return self._remote

    def set_remote_server(self, address: str | None, namespace: str = "default") -> None:
        """List the runs of the Temporal server at ``address`` too (None or "": local runs only)."""
        address = (address or "").strip() or None
        if self._remote is not None:
            if address == self._remote.address and (namespace or "default") == self._remote.namespace:
                return
            self._remote.close()
            self._remote.deleteLater()
            self._remote = None
        self._remote_rows = []
        self._remote_note = ""
        if address is not None:
            self._remote = RemoteRuns(address, namespace, limit=self.page_size, parent=self)
            self._remote.listed.connect(self._remote_listed)
            self._remote.unavailable.connect(self._remote_unavailable)
            self._remote.opened.connect(self.run_opened)
            self._remote.open_failed.connect(
                lambda run_id, why: warn(
                    self,
                    "Open run",
                    f"Run {run_id} on the Temporal server at {self.remote_server} cannot be read:\n\n{why}",
                )
            )
        self.refresh()

    def remote_row(self, run_id: str) -> Any:
        """The listed run ``run_id`` of the Temporal server (None: not one of them)."""
        return next((r for r in self._remote_rows if r.id == run_id), None)

    def is_remote(self, run: RunInfo | None) -> bool:
        return getattr(run, "server", None) is not None and bool(getattr(run, "server", ""))

    def _remote_listed(self, rows: list) -> None:
        self._remote_rows = list(rows)
        self._remote_note = ""
        if rows:  # room for the badge before the name
            self.runs_table.make_badge_room()
        self._reload(keep_selection=True)

    def _remote_unavailable(self, why: str) -> None:
        self._remote_rows = []
        if why != self._remote_note:
            self._remote_note = why
            self.show_message(why)
        self._reload(keep_selection=True)

    def _remote_page(self, wf: str | None, status: str | None) -> list[RunInfo]:
        """The server's runs that join this page: on the first page, those the filters let through."""
        if self._offset or not self._remote_rows:
            return []
        return [
            r
            for r in self._remote_rows
            if (wf is None or r.workflow_name == wf) and (status is None or r.status == status)
        ]

    def _reload(self, keep_selection: bool) -> None:
        store = self._store
        if store is None:
            self._show_unavailable(self._reason or "no run history was opened.")
            return
        selected = self.selected_run_ids() if keep_selection else []
        current_id = self.runs_table.current_run_id() if keep_selection else None
        wf, status = self.workflow_filter, self.status_filter
        try:
            names = store.workflow_names()
            total = store.count_runs(workflow=wf, status=status)
            if self._offset >= total and total:
                self._offset = (total - 1) // self.page_size * self.page_size
            runs = store.list_runs(workflow=wf, status=status, limit=self.page_size, offset=self._offset)
            counts = store.event_counts([r.id for r in runs])
            costs = self._run_costs(store, runs)
            paused = store.count_runs(status="paused")
            remote = self._remote_page(wf, status)
            if remote:  # merged by start time, newest first (the store's order)
                runs = sorted(runs + remote, key=lambda r: r.started_at, reverse=True)
                total += len(remote)
                counts.update({r.id: r.event_count for r in remote if r.event_count})
            names = sorted(set(names) | {r.workflow_name for r in self._remote_rows if r.workflow_name})
        except StoreError as err:
            log.warning("run history: %s", err)
            self._show_unavailable(str(err))
            return
        for w in (self.filter_bar, self.toolbar, self.pager):
            w.setVisible(True)
        self.filter_bar.fill_workflows(names, wf)
        self._total = total
        self._paused_total = paused
        self.model.set_page(runs, counts, costs)
        self.range_label.setText(self.range_text())
        if runs:
            self.stack.setCurrentIndex(PAGE_TABLE)
        else:
            filtered = wf is not None or status is not None
            self.empty_label.setText(
                "No runs match these filters." if filtered else "No runs yet.\nRuns appear here as soon as they start."
            )
            self.stack.setCurrentIndex(PAGE_EMPTY)
        if paused and status != "paused":
            self.paused_banner.setText(
                f"<b>{paused} run{'s are' if paused != 1 else ' is'} waiting for approval.</b> "
                f"&nbsp;<a href='#paused' style='color: {self._link_colour()}'>Show {'them' if paused != 1 else 'it'}</a>"
            )
            self.paused_banner.setVisible(True)
        else:
            self.paused_banner.setVisible(False)
        self.runs_table.restore_selection(selected, current_id)
        self._update_actions()
        self._schedule_poll(runs)

    def _link_colour(self) -> str:
        # The palette's link blue is unreadable on the purple banner of a dark theme.
        dark = self.palette().color(QPalette.ColorRole.Window).lightness() < 128
        return "#cdb8ff" if dark else "#5a2fc2"

    def _schedule_poll(self, runs: list[RunInfo]) -> None:
        # Runs of another process (the CLI) change state on their own: follow them while shown.
        if self.auto_refresh_interval > 0 and any(r.status == "running" for r in runs):
            self._poll_timer.start(self.auto_refresh_interval)
        else:
            self._poll_timer.stop()

    def _poll(self) -> None:
        if self.isVisible() and self._store is not None:
            self._recover()  # a run whose process died meanwhile (a killed CLI) becomes interrupted
            self.refresh()

    def _recover(self) -> None:
        try:
            if self._store is not None:
                self._store.recover()
        except StoreError as err:  # the refresh that follows shows the state
            log.warning("run history: %s", err)

    def _run_costs(self, store: RunStore, runs: list[RunInfo]) -> dict[str, tuple[int, float | None]]:
        """Tokens and cost of each listed run (prices from the provider catalogue)."""

        models_of = getattr(self, "_models_of", None)
        if models_of is None:
            models_of = self._models_of = {}
        return stored_run_costs(store, [r.id for r in runs], models_of=models_of)

    # ================================================================ compare (comparing.py)
    @property
    def compare_windows(self) -> list[Any]:
        """The compare windows opened (those closed are dropped when the next one opens)."""
        return self._comparer.windows

    def previous_run_of(self, run_id: str) -> str | None:
        """The run of the same workflow started just before ``run_id`` (None when it is the first)."""
        return self._comparer.previous_run_of(self._store, run_id)

    def compare_runs(self, run_a: str | None = None, run_b: str | None = None) -> Any:
        """Open the compare view of two runs (default: the two selected, oldest first, or the
        selected one and the run before it). Returns the window (None when it cannot)."""
        return self._comparer.compare(self._store, self.selected_runs(), run_a, run_b)

    def compare_from_menu(self) -> Any:
        """Run ▸ Compare Runs: the selected runs (two, or one and the run before it); with none
        selected, the newest local run listed and the run before it."""
        listed = [self.model.run_at(i) for i in range(self.model.rowCount())]
        return self._comparer.from_menu(self._store, self.selected_runs(), listed)

    # ================================================================ selection (runs_table.py)
    def selected_runs(self) -> list[RunInfo]:
        return self.runs_table.selected_runs()

    def selected_run_ids(self) -> list[str]:
        return [r.id for r in self.selected_runs()]

    def select_run(self, run_id: str) -> bool:
        """Select the run if it is on the current page."""
        return self.runs_table.select_run(run_id)

    def _one(self, run_id: str | None) -> str | None:
        if run_id:
            return run_id
        runs = self.selected_runs()
        if len(runs) == 1:
            return runs[0].id
        current = self.table.currentIndex()
        if not runs and current.isValid():
            return self.model.data(current, RUN_ROLE).id
        return None

    def _update_actions(self, *_: Any) -> None:
        ok = self._store is not None and self.stack.currentIndex() != PAGE_UNAVAILABLE
        runs = self.selected_runs() if ok else []
        one = len(runs) == 1
        local = one and not self.is_remote(runs[0])
        self.open_action.setEnabled(one)
        for a in (
            self.open_version_action,
            self.run_again_action,
            self.export_jsonl_action,
            self.export_agentflow_action,
        ):
            a.setEnabled(local)
        self._export_button.setEnabled(local)
        self.resume_action.setEnabled(one and runs[0].status == "paused")
        self.compare_action.setEnabled(len(runs) in (1, 2) and not any(self.is_remote(r) for r in runs))
        self.compare_action.setText("Compare" if len(runs) == 2 else "Compare with Previous Run")
        self.delete_action.setEnabled(any(r.status != "running" and not self.is_remote(r) for r in runs))
        self.import_action.setEnabled(ok)
        self.prev_action.setEnabled(ok and self._offset > 0)
        self.next_action.setEnabled(ok and self._offset + self.page_size < self._total)

    def _menu_actions(self) -> list[QAction | None]:
        """The table's context menu (None: a separator), with other docks' actions on a run
        (``extra_actions``: Tests' "add as case")."""
        return [
            self.open_action,
            self.open_version_action,
            self.run_again_action,
            self.resume_action,
            self.compare_action,
            None,
            self.export_jsonl_action,
            self.export_agentflow_action,
            self.import_action,
            None,
            self.delete_action,
            None,
            *getattr(self, "extra_actions", ()),
            self.refresh_action,
        ]

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if not getattr(self, "_columns_sized", False):
            # The application style sheet sets the font size when the panel is polished, after
            # it was built: measured before, "Waiting for approval" was elided in its pill.
            self._columns_sized = True
            self.runs_table.size_columns()

    # ================================================================ messages
    def show_message(self, text: str) -> None:
        """A short, passive note under the list (export done, run imported...)."""
        self._message.setText(text)
        self._message.setVisible(True)
        self._message_timer.start()

    @property
    def message(self) -> str:
        return self._message.text() if self._message.isVisible() else ""

    # ================================================================ actions
    def _require_store(self) -> RunStore | None:
        if self._store is None:
            warn(self, "Run history", f"Run history unavailable: {self._reason}")
        return self._store


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
