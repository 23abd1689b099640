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

The panel's parts: the list, filters and paging (here), its widgets and actions
(``panel_ui``), what it does with a run
(``actions``), export and import (``transfer``), the status pill (``badge``) and opening
the store at start-up (``store_open``).
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import (
    QEvent,
    QItemSelection,
    QItemSelectionModel,
    QModelIndex,
    QObject,
    QPoint,
    Qt,
    QTimer,
    QUrl,
    Signal,
    Slot,
)
from PySide6.QtGui import QDesktopServices, QFontMetrics, QKeyEvent, QPalette
from PySide6.QtWidgets import QMenu, QWidget

from engine import RunInfo, RunStore, StoreError, WorkflowLoadError, data_dir, stored_run_costs

from .actions import RunActions, warn
from .compare import CompareWindow
from .model import (
    COL_COST,
    COL_DURATION,
    COL_EVENTS,
    COL_STARTED,
    COL_STATUS,
    COL_WORKFLOW,
    REMOTE_BADGE,
    RUN_ROLE,
    RunHistoryModel,
)
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
        return self.workflow_combo.currentData()

    @property
    def status_filter(self) -> str | None:
        return self.status_combo.currentData()

    def set_filters(self, *, workflow: str | None = None, status: str | None = None) -> None:
        """Show only the runs of ``workflow`` and/or with ``status`` (None: all); back to the first page."""
        for combo, value in ((self.workflow_combo, workflow), (self.status_combo, status)):
            i = combo.findData(value)
            if i < 0 and combo is self.workflow_combo and value is not None:
                combo.blockSignals(True)
                combo.addItem(value, value)
                combo.blockSignals(False)
                i = combo.count() - 1
            combo.blockSignals(True)
            combo.setCurrentIndex(max(i, 0))
            combo.blockSignals(False)
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
        if rows and not getattr(self, "_badge_room", False):  # room for the badge before the name
            self._badge_room = True
            header = self.table.horizontalHeader()
            header.resizeSection(
                COL_WORKFLOW,
                header.sectionSize(COL_WORKFLOW) + self.table.fontMetrics().horizontalAdvance(REMOTE_BADGE) + 24,
            )
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
        current = self.table.currentIndex()
        current_id = self.model.data(current, RUN_ROLE).id if current.isValid() and keep_selection else None
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
        self._fill_workflows(names, wf)
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
        self._restore_selection(selected, current_id)
        self._update_actions()
        self._schedule_poll(runs)

    def _link_colour(self) -> str:
        # The palette's link blue is unreadable on the purple banner of a dark theme.
        dark = self.palette().color(QPalette.ColorRole.Window).lightness() < 128
        return "#cdb8ff" if dark else "#5a2fc2"

    def _fill_workflows(self, names: list[str], current: str | None) -> None:
        combo = self.workflow_combo
        have = [combo.itemData(i) for i in range(1, combo.count())]
        if have == names:
            return
        combo.blockSignals(True)
        combo.clear()
        combo.addItem("All workflows", None)
        for n in names:
            if n:  # an empty name cannot be filtered on (the store treats "" as "all")
                combo.addItem(n, n)
        i = combo.findData(current) if current is not None else 0
        if i < 0:  # the filter's workflow has no runs left: keep it chosen, it simply lists none
            combo.addItem(current, current)
            i = combo.count() - 1
        combo.setCurrentIndex(i)
        combo.blockSignals(False)

    def _restore_selection(self, run_ids: list[str], current_id: str | None) -> None:
        sel = self.table.selectionModel()
        sel.clearSelection()
        selection = QItemSelection()
        for rid in run_ids:
            row = self.model.row_of(rid)
            if row >= 0:
                selection.select(self.model.index(row, 0), self.model.index(row, self.model.columnCount() - 1))
        if not selection.isEmpty():
            sel.select(selection, QItemSelectionModel.SelectionFlag.ClearAndSelect)
        row = self.model.row_of(current_id) if current_id else -1
        if row >= 0:
            sel.setCurrentIndex(self.model.index(row, 0), QItemSelectionModel.SelectionFlag.NoUpdate)

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

    # ================================================================ compare
    def previous_run_of(self, run_id: str) -> str | None:
        """The run of the same workflow started just before ``run_id`` (None when it is the first)."""
        store = self._store
        info = store.get_run(run_id) if store is not None else None
        if info is None:
            return None
        older = [
            r
            for r in store.list_runs(workflow=info.workflow_name, limit=200)
            if (r.started_at, r.id) < (info.started_at, info.id)
        ]
        return older[0].id if older else None

    def compare_runs(self, run_a: str | None = None, run_b: str | None = None) -> Any:
        """Open the compare view of two runs (default: the two selected, oldest first, or the
        selected one and the run before it). Returns the window (None when it cannot)."""

        store = self._store
        if store is None:
            return None
        if run_a is None or run_b is None:
            runs = sorted(self.selected_runs(), key=lambda r: (r.started_at, r.id))
            if len(runs) == 2:
                run_a, run_b = runs[0].id, runs[1].id
            elif len(runs) == 1:
                run_b = runs[0].id
                run_a = self.previous_run_of(run_b)
                if run_a is None:
                    warn(
                        self,
                        "Compare runs",
                        "This is the first run of its workflow: there is no previous run to "
                        "compare it with. Select two runs to compare them.",
                    )
                    return None
            else:
                return None
        try:
            wa, wb = store.workflow_of(run_a), store.workflow_of(run_b)
            ea, eb = store.events(run_a), store.events(run_b)
        except (StoreError, WorkflowLoadError, ValueError) as err:
            warn(self, "Compare runs", f"The runs cannot be read: {err}")
            return None
        win = CompareWindow(run_a, wa, ea, run_b, wb, eb)
        self.compare_windows = [w for w in getattr(self, "compare_windows", []) if w.isVisible()] + [win]
        win.show()
        return win

    def compare_from_menu(self) -> Any:
        """Run ▸ Compare Runs: the selected runs (two, or one and the run before it); with none
        selected, the newest local run listed and the run before it."""
        runs = self.selected_runs()
        if len(runs) in (1, 2) and not any(self.is_remote(r) for r in runs):
            return self.compare_runs()
        newest = next(
            (
                r
                for r in (self.model.run_at(i) for i in range(self.model.rowCount()))
                if r is not None and not self.is_remote(r)
            ),
            None,
        )
        previous = self.previous_run_of(newest.id) if newest is not None else None
        if newest is None or previous is None:
            warn(
                self,
                "Compare runs",
                "There are not two runs to compare yet: run the workflow twice, or select "
                "two runs in Run history (View ▸ Run history) and choose Compare.",
            )
            return None
        return self.compare_runs(previous, newest.id)

    # ================================================================ selection
    def selected_runs(self) -> list[RunInfo]:
        rows = sorted({i.row() for i in self.table.selectionModel().selectedRows()})
        return [r for r in (self.model.run_at(i) for i in rows) if r is not None]

    def selected_run_ids(self) -> list[str]:
        return [r.id for r in self.selected_runs()]

    def select_run(self, run_id: str) -> bool:
        """Select the run if it is on the current page."""
        row = self.model.row_of(run_id)
        if row < 0:
            return False
        self.table.selectRow(row)
        self.table.setCurrentIndex(self.model.index(row, 0))
        return True

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

    def _context_menu(self, pos: QPoint) -> None:
        index = self.table.indexAt(pos)
        if index.isValid() and not self.table.selectionModel().isRowSelected(index.row(), QModelIndex()):
            self.table.selectRow(index.row())
        menu = QMenu(self)
        menu.addAction(self.open_action)
        menu.addAction(self.open_version_action)
        menu.addAction(self.run_again_action)
        menu.addAction(self.resume_action)
        menu.addAction(self.compare_action)
        menu.addSeparator()
        menu.addAction(self.export_jsonl_action)
        menu.addAction(self.export_agentflow_action)
        menu.addAction(self.import_action)
        menu.addSeparator()
        menu.addAction(self.delete_action)
        menu.addSeparator()
        for action in getattr(self, "extra_actions", ()):  # other docks' actions on a run (Tests: add as case)
            menu.addAction(action)
        menu.addAction(self.refresh_action)
        menu.popup(self.table.viewport().mapToGlobal(pos))

    def _size_columns(self) -> None:
        table = self.table
        fm = table.fontMetrics()
        bold = table.font()
        bold.setBold(True)
        # the status pill: 6 px in, 8 px padding each side, and a few pixels to spare
        widths = {
            COL_STATUS: QFontMetrics(bold).horizontalAdvance("Waiting for approval") + 36,
            COL_WORKFLOW: fm.horizontalAdvance("Support reply review") + 12,
            COL_STARTED: fm.horizontalAdvance("0000-00-00 00:00") + 16,
            COL_DURATION: fm.horizontalAdvance("00 min 00 s") + 16,
            COL_EVENTS: fm.horizontalAdvance("Events") + 24,
            COL_COST: fm.horizontalAdvance("12,345 · $0.0000") + 16,
        }
        header = table.horizontalHeader()
        for col, w in widths.items():
            header.resizeSection(col, w)

    def showEvent(self, event: Any) -> None:
        super().showEvent(event)
        if not getattr(self, "_columns_sized", False):
            # The application style sheet sets the font size when the panel is polished, after
            # it was built: measured before, "Waiting for approval" was elided in its pill.
            self._columns_sized = True
            self._size_columns()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        # When the window is not active the actions' shortcuts do not fire; the table's own
        # keys still must (Enter would otherwise only emit `activated`).
        if obj is self.table.viewport() and event.type() == QEvent.Type.Resize:
            width = self.table.width()
            for col, minimum in self._wide_columns.items():
                self.table.setColumnHidden(col, width < minimum)
        if obj is self.table and event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            key = event.key()
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and event.modifiers() in (
                Qt.KeyboardModifier.NoModifier,
                Qt.KeyboardModifier.KeypadModifier,
            ):
                if self.open_action.isEnabled():
                    self.open_run()
                return True
            if key == Qt.Key.Key_Delete and event.modifiers() == Qt.KeyboardModifier.NoModifier:
                if self.delete_action.isEnabled():
                    self.delete_runs()
                return True
        return super().eventFilter(obj, event)

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
