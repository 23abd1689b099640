"""Running from the main window: the Run action, the run console, the canvas's run states,
the inspector's Run tab, the run history (open, resume, reopen a version) and the provider menu.

Run state lives in the console, apart from the document, and is never undoable. The canvas
shows the console's run only on the document that run belongs to (see ``_run_on_canvas``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QActionGroup
from PySide6.QtWidgets import QMessageBox

from engine import RunStatus, Workflow, errors_only

from ..first_run import EACH_AGENTS_OWN, Choice, offer_choice, offer_model_choice, offer_setup
from ..history.panel import open_store_for_gui
from ..issue_text import describe_issue
from ..run.console import LONG_INPUT
from ..run_view import RunViewWindow
from .run_on import RunOnMixin, remote_run_factory
from .settings import settings, text_setting


class RunWiringMixin(RunOnMixin):
    """Connects the run console and the run history to the window, canvas and inspector."""

    def _update_run_action(self) -> None:
        errors = errors_only(self.issues) if self._has_document else []
        busy = self.run_console.bridge.is_active
        ok = self._has_document and not errors and not busy
        self.act_run.setEnabled(ok)
        for a in (getattr(self, "act_run_from", None), getattr(self, "act_run_only", None)):
            if a is not None:
                a.setEnabled(ok)
        if busy:  # F5 would do nothing: say why, and how to stop the run
            waiting = self.run_console.status == "paused"
            self.act_run.setToolTip("A run is waiting for approval (answer it in the run console, or Shift+F5 "
                                    "cancels it)" if waiting else "A run is in progress (Shift+F5 cancels it)")
        elif not self._has_document:
            self.act_run.setToolTip("Open a workflow to run it")
        elif errors:
            self.act_run.setToolTip(f"Cannot run: {describe_issue(errors[0], self.document.workflow)}")
        else:
            # the shortcut the Run menu shows (F5; Ctrl+R works too)
            self.act_run.setToolTip("Run the workflow (F5)")

    def _run(self) -> None:
        if not self._has_document:
            return
        remote = remote_run_factory()  # Run On: a Temporal server's workers, with their own providers
        if remote is None and offer_setup(self, self.document.workflow, text_setting("run/provider"),
                                          self._run):
            return  # no provider yet: the set-up dialog asks, then runs
        self.run_console.set_run_factory(remote)
        if remote is not None:
            self.statusBar().showMessage(f"Running on the Temporal server at {remote.keywords['address']}.", 6000)
        self.run_console_dock.show()
        self.run_console_dock.raise_()
        # Room for the log and an approval card, the canvas keeping the larger part. The view
        # frames the graph again as it shrinks (if it was framed), so no node ends up cut off.
        want = min(460, int(self.height() * 0.52))
        if self.run_console_dock.height() < want and not self.run_console_dock.isFloating():
            self.resizeDocks([self.run_console_dock], [want], Qt.Orientation.Vertical)
        # The console runs a deep copy: edits made during the run do not reach it.
        workflow = self.document.workflow
        rerun, self._run_from = getattr(self, "_run_from", None), None
        start: dict[str, Any] = {}
        if rerun is not None:
            node_id, only = rerun
            if only:  # run only this node: its outgoing execution links cut in the copy that runs
                workflow = workflow.model_copy(deep=True)
                workflow.connections = [c for c in workflow.connections
                                        if c.source != node_id or c.sourceHandle == "subagent"]
            start = {"start_at": node_id, "reuse_from": self._reuse_source()}
        self.run_console.set_workflow(workflow, self.document.path)
        previous, self._run_doc = self._run_doc, self._doc_serial
        if self.run_console.start_run(**start) is None:
            self._run_doc = previous  # nothing started: the run shown before stays as it was
        self.run_requested.emit()

    def pin_output(self, node_id: str, value: Any) -> None:
        """Pin ``value`` as the node's output (one undo step; saved in the file as ``pinnedOutput``)."""
        self.document.set_node_field(node_id, "pinnedOutput", value, merge=False)
        self._update_node_run_details()

    def unpin_output(self, node_id: str) -> None:
        node = self.document.node(node_id)
        if node is None:
            return
        data = node.data.model_dump()
        if data.pop("pinnedOutput", None) is not None or "pinnedOutput" in node.data.model_dump():
            self.document.edit_node_data(node_id, data, None)
        self._update_node_run_details()

    def run_from_node(self, node_id: str | None = None, only: bool = False) -> None:
        """Run from ``node_id`` (the selected node when None): upstream nodes reuse the outputs
        recorded in the document's last run when nothing they depend on changed ("from cache");
        ``only``: stop after that node."""
        if node_id is None:
            ids = self.scene.selected_node_ids()
            if len(ids) != 1:
                self.statusBar().showMessage("Select one node to run from it.", 4000)
                return
            node_id = ids[0]
        self._run_from = (node_id, only)
        self._run()

    def _reuse_source(self) -> str | None:
        """The run a run from a node reuses: the document's last run in the history."""
        store = getattr(self, "store", None)
        if store is None:
            return None
        try:
            return store.last_run_of(workflow_path=self.document.path,
                                     workflow_name=self.document.workflow.display_name())
        except Exception:  # a history that cannot be read: every node runs
            return None

    def _wire_running(self) -> None:
        console = self.run_console
        self.node_run_details.pin_requested.connect(self.pin_output)
        self.node_run_details.unpin_requested.connect(self.unpin_output)
        # The console's Run button is the window's Run action: it used to start the console's
        # own copy of the workflow, set at the previous F5, so after an edit it ran the old
        # graph (and before the first run it was disabled while F5 worked).
        self.act_run.setIconText("▶ Run")
        console.run_button.removeAction(console.run_action)  # else two actions: a menu arrow
        console.run_button.setDefaultAction(self.act_run)
        self.store = open_store_for_gui(self, panel=self.history)
        console.set_store(self.store)
        console.set_resolver_factory(self._resolver_factory)
        self.command_windows: list[Any] = []
        self._run_states: dict[str, str] = {}
        self._run_links: set = set()
        self._waiting_for_input = False
        # (the console's height before it grew for an approval card, as resizeDocks takes it, and
        # the height it grew to)
        self._approval_room: tuple[int, int] | None = None
        # The canvas shows the console's run only on the document that run belongs to: the one
        # Run was pressed on, or the one a stored run was taken up on. Opening another file
        # (or New) gives the document a new serial, and the old run is no longer painted there.
        self._doc_serial = 0
        self._run_doc: int | None = None
        console.node_states_changed.connect(self._on_run_states)
        console.links_followed.connect(self._on_run_links)
        console.run_badges_changed.connect(lambda _b: self._show_run_states())
        console.node_activated.connect(self._run_entry_activated)
        console.waiting_for_input_changed.connect(self._on_waiting_changed)
        console.run_started.connect(self._run_started)
        console.run_finished.connect(self._run_finished)
        console.status_changed.connect(self._run_status_changed)
        console.provider_choice_requested.connect(lambda: self.choose_provider())
        console.approval_room_wanted.connect(self._room_for_approval)
        console.offers_provider_choice = True
        self.history.run_opened.connect(self.open_run_view)
        self.history.workflow_version_requested.connect(self.open_workflow_version)
        self.history.run_again_requested.connect(self.run_workflow_version_again)
        self.history.resume_requested.connect(self._resume_stored_run)
        self.history.remote_resume_requested.connect(self._resume_remote_run)
        self.sync_remote_history()
        self.scene.selectionChanged.connect(self._sync_console_selection)

    # ------------------------------------------------------------------ command bar (Ctrl+K)
    def open_command_bar(self) -> None:
        bar = getattr(self, "command_bar", None)
        if bar is None:
            from .command_bar import CommandBar

            bar = self.command_bar = CommandBar(self, resolver_factory=self._resolver_factory)
            bar.run_requested.connect(self.run_command_choice)
            bar.open_requested.connect(lambda path: self.open_path(path))
        bar.popup()

    def run_command_choice(self, choice: Any) -> Any:
        """Run a library flow picked in the command bar, in a run window of its own."""
        from engine import LibraryError, WorkflowLoadError, load_workflow

        from .command_bar import CommandRunWindow

        try:
            workflow = load_workflow(choice.flow.path)
        except (WorkflowLoadError, LibraryError) as err:
            self.statusBar().showMessage(f"Cannot run {choice.flow.name}: {err}", 8000)
            return None
        win = CommandRunWindow(choice, workflow, store=self.store, resolver_factory=self._resolver_factory)
        # a provider that cannot serve: the same choice as in the main console, then this window runs again
        win.console.offers_provider_choice = True
        win.console.provider_choice_requested.connect(lambda w=win: self.choose_provider(w.console, w.start))
        self.command_windows.append(win)
        win.destroyed.connect(lambda _=None, w=win: self.command_windows.remove(w) if w in self.command_windows
                              else None)
        win.show()
        if win.start() is None:
            self.statusBar().showMessage(f"{choice.flow.name} could not start; see its run window", 8000)
        else:
            self.statusBar().showMessage(f"Running {choice.flow.name} in its own window", 5000)
        return win

    def _resolver_factory(self) -> Any:
        from engine import make_resolver

        provider = text_setting("run/provider") or None
        model = text_setting("run/model") or None  # for every agent (Run ▸ LLM Provider)
        return make_resolver(provider, model=model)

    def _fill_provider_menu(self) -> None:
        from engine import available_providers

        menu = self.provider_menu
        menu.clear()
        current = text_setting("run/provider")
        group = QActionGroup(menu)
        hints = {"echo": "echo — offline, answers with its prompt (for trying a flow)"}
        choices = [("", "Each agent's own, else the default")] + [(p, hints.get(p, p)) for p in available_providers()]
        for value, label in choices:
            a = menu.addAction(label)
            a.setData(value)
            a.setCheckable(True)
            a.setChecked(value == current)
            group.addAction(a)
            a.triggered.connect(lambda _=False, v=value: settings().setValue("run/provider", v))
        menu.addSeparator()
        model = text_setting("run/model")
        a = menu.addAction(f"Model for Every Agent: {model or EACH_AGENTS_OWN}…")
        a.setObjectName("chooseModel")
        a.triggered.connect(lambda _=False: self.choose_model())

    def choose_provider(self, console: Any = None, run_again: Any = None) -> None:
        """A run's model provider could not serve: offer the providers this computer has (the
        first run's dialog), then run again with the one chosen. ``console``: the run console
        that asked (the main one when None); ``run_again``: how it runs again (Run when None)."""
        console = console or self.run_console
        header = console.header
        problem = header.provider_problem or {}
        if problem.get("model"):  # the provider answered, without that model: one of its own for every agent
            self.choose_model(header.provider_reason, run_again or self._run, problem.get("provider"),
                              parent=console.window())
            return
        offer_choice(console.window(), header.provider_reason or "Its provider did not answer.",
                     lambda choice: self._provider_chosen(choice, run_again or self._run))

    def choose_model(self, reason: str | None = None, run_again: Any = None, provider: str | None = None,
                     parent: Any = None) -> None:
        """The model every agent of the runs started here uses (``run/model``, as ``--model`` on the
        command line), from those the run's provider has; runs again after a failed run."""
        from engine import ProviderConfigError, default_provider

        if provider is None:
            provider = text_setting("run/provider") or None
        if provider is None:
            try:
                provider = default_provider()
            except ProviderConfigError as err:
                self.statusBar().showMessage(f"No provider to list models of: {err}", 8000)
                return
        current = text_setting("run/model")

        def chosen(model: str) -> None:
            settings().setValue("run/model", model)
            self.statusBar().showMessage(f"Every agent now asks for {model} (Run ▸ LLM Provider changes it)." if model
                                         else "Each agent asks for its own model again.", 10000)
            if run_again is not None:
                run_again()

        offer_model_choice(parent or self, provider, current, reason, chosen)

    def _provider_chosen(self, choice: Choice, run_again: Any) -> None:
        # The dialog made it the default provider. A provider forced for every run (Run ▸ LLM
        # Provider) is what failed, if one is set: the choice replaces it, or it would fail again.
        if text_setting("run/provider"):
            settings().setValue("run/provider", choice.provider_id)
            self.statusBar().showMessage(f"Runs now use {choice.provider_id} (Run ▸ LLM Provider changes it).", 10000)
        run_again()

    def open_provider_settings(self) -> None:
        from ..panels.provider_settings import ProviderSettingsDialog

        dialog = ProviderSettingsDialog(self, store=getattr(self, "store", None))
        if dialog.exec():
            self.statusBar().showMessage("Provider settings saved.", 4000)
            self._search_backend = self._web_search_available()  # it may have changed
            self.run_validation()

    def _on_run_states(self, states: dict) -> None:
        self._run_states = dict(states)
        self._show_run_states()

    def _on_run_links(self, links: Any) -> None:
        self._run_links = set(links)
        self._show_run_states()

    def _room_for_approval(self, lack: int) -> None:
        """A short window cut the approval card: the run console grows by what the card lacks,
        up to two thirds of the window (the canvas keeps the rest), so the text under review
        can be read where the decision is made."""
        dock = self.run_console_dock
        if dock.isFloating() or not dock.isVisible() or self._console_max_state is not None:
            return
        limit = int(self.height() * 2 / 3)
        want = min(dock.height() + lack, limit)
        if want <= dock.height():
            return
        back_to = self._approval_room[0] if self._approval_room else dock.height()
        self.resizeDocks([dock], [want], Qt.Orientation.Vertical)

        def grown() -> None:
            # The height to go back to once nothing waits (unless the user resizes the console
            # meanwhile), as resizeDocks counts it: with the bottom docks' tab bar, which the
            # dock's own height leaves out.
            self._approval_room = (back_to + want - dock.height(), dock.height())
            self.run_console.fit_approvals()

        QTimer.singleShot(0, self, grown)

    def _on_waiting_changed(self, waiting: bool) -> None:
        room = self._approval_room
        if room is not None and not waiting:  # decided: the console goes back, unless the user resized it
            self._approval_room = None
            if self.run_console_dock.height() == room[1]:
                self.resizeDocks([self.run_console_dock], [room[0]], Qt.Orientation.Vertical)
        self._waiting_for_input = waiting
        self._update_title()
        self._update_run_action()

    def _show_run_states(self) -> None:
        # "skipped" (not reached) and "cancelled" come from the console; the canvas dims the
        # first and shows the second as not reached either.
        if not self._run_on_canvas():
            self.scene.clear_run_states()
        else:
            errors = self.run_console.node_errors()  # a node skipped after an error shows as skipped
            states = {k: ("not_reached" if v == "cancelled" or (v == "skipped" and k not in errors) else v)
                      for k, v in self._run_states.items()}
            self.scene.set_run_states(states, self._run_links, errors,
                                      self.run_console.run_badges())
        self._update_node_run_details()

    def _run_on_canvas(self) -> bool:
        """The console's run belongs to the document on the canvas."""
        return self._has_document and self._run_doc is not None and self._run_doc == self._doc_serial

    def _run_entry_activated(self, node_id: str) -> None:
        if node_id in self.scene.node_items:
            self.show_nodes([node_id])

    def _sync_console_selection(self) -> None:
        ids = self.scene.selected_node_ids()
        if len(ids) == 1:
            self.run_console.show_node(ids[0])
        self._update_node_run_details()

    def _update_node_run_details(self) -> None:
        ids = self.scene.selected_node_ids()
        pinned_node = self.document.node(ids[0]) if len(ids) == 1 and self._has_document else None
        self.node_run_details.set_pin(pinned_node.id if pinned_node else None,
                                      getattr(pinned_node.data, "pinnedOutput", None) if pinned_node else None)
        if len(ids) != 1 or not self._run_on_canvas():
            self.node_run_details.set_details(None)
            return
        node = self.document.node(ids[0])
        details = self.run_console.node_details(ids[0])
        self.node_run_details.set_details(details or None, node.title if node else ids[0])

    def _run_started(self, _run_id: str) -> None:
        self.history.refresh()
        self._update_run_action()
        if self._run_on_canvas():
            # Watching a run: the inspector shows what the selected node did (Edit is one click away).
            self.inspector_tabs.setCurrentWidget(self.node_run_details)

    def _run_status_changed(self, status: str) -> None:
        self._update_node_run_details()
        if status in ("running", "paused"):
            # The recorder writes the run's row from its own thread, so at run_started it may
            # not be stored yet and the history missed it (a paused run then stayed unlisted,
            # with nothing to refresh the list). At a pause the row is committed; "running"
            # comes with the first events, by when it normally is (the panel then keeps
            # polling while its page shows a running run).
            self.history.refresh()

    def _run_finished(self, status: str) -> None:
        self._update_run_action()
        self.history.refresh()
        self._update_title()
        self.statusBar().showMessage(f"Run {status}", 5000)

    def _resume_stored_run(self, run_id: str) -> None:
        """Take up a paused stored run where its own workflow is shown. Runs belong to their
        document: when the open document is the graph that ran, in the window's console on
        that canvas; with no document open, that workflow is opened (as an untitled copy, like
        a sample); when another workflow is open, in a window of its own showing the run's
        workflow read-only, with its approval card, input and title."""
        workflow = None
        if self.store is not None:
            try:
                workflow = self.store.workflow_of(run_id)
            except Exception:  # StoreError, an unreadable workflow: the console says why below
                workflow = None
        if workflow is not None and self._has_document and not _same_graph(workflow, self.document.workflow):
            self._resume_in_own_window(run_id, workflow)
            return
        self.run_console_dock.show()
        self.run_console_dock.raise_()
        if self.run_console.bridge.is_active:
            self.run_console.open_paused_run(run_id)  # refused, with the reason in the console
            return
        previous = self._run_doc
        if workflow is not None and not self._has_document:
            self._replace_document(workflow.model_copy(deep=True), None)
            self.statusBar().showMessage(f"Opened the workflow of run {run_id[:8]} to resume it; "
                                         "Save As to keep it.", 6000)
        same = workflow is not None and self._has_document and _same_graph(workflow, self.document.workflow)
        self._run_doc = self._doc_serial if same else None
        if not self.run_console.open_paused_run(run_id):
            self._run_doc = previous
        self._show_run_states()

    def _resume_remote_run(self, run_id: str, address: str, namespace: str = "default") -> Any:
        """Take up a paused run on the Temporal server in a window of its own (its workflow as it
        runs there, read-only, with its approval card): the answer goes to the server."""
        for open_win in self.run_windows:
            if open_win.run_id == run_id and open_win.live:
                open_win.show()
                open_win.raise_()
                return None
        self.statusBar().showMessage(f"Reading run {run_id[:8]} from the Temporal server at {address}…", 4000)

        async def take_up() -> Any:
            from engine import RemoteRun

            try:
                run = await RemoteRun.fetch(run_id, address=address, namespace=namespace)
            except Exception as err:  # TemporalUnavailable: no server, no such run
                QMessageBox.warning(self, "Resume run", f"Run {run_id[:8]} on the Temporal server at {address} "
                                                         f"cannot be read:\n\n{err}")
                return None
            if run.status != RunStatus.PAUSED:
                QMessageBox.information(self, "Resume run", f"Run {run_id[:8]} is {run.status} on the Temporal "
                                                            "server now, not waiting for approval.")
                self.history.refresh()
                return None
            return self._show_live_run_window(RunViewWindow(run_id, run.workflow, [], self.history.remote_row(run_id),
                                                            remote_run=run))

        return asyncio.ensure_future(take_up())

    def _resume_in_own_window(self, run_id: str, workflow: Workflow) -> None:
        for open_win in self.run_windows:
            if open_win.run_id == run_id and open_win.live:
                open_win.show()
                open_win.raise_()
                open_win.activateWindow()
                return
        info = self.store.get_run(run_id) if self.store is not None else None
        self._show_live_run_window(RunViewWindow(run_id, workflow, [], info, store=self.store,
                                                 resolver_factory=self._resolver_factory))

    def _show_live_run_window(self, win: RunViewWindow) -> RunViewWindow:
        """Show a window that takes up a paused run (kept in ``run_windows`` while open)."""
        win.version_requested.connect(self.open_workflow_version)
        win.console.run_finished.connect(lambda _s: self.history.refresh())
        win.destroyed.connect(lambda _=None, w=win: self.run_windows.remove(w) if w in self.run_windows else None)
        self.run_windows.append(win)
        win.show()
        win.raise_()
        win.activateWindow()
        return win

    def open_run_view(self, run_id: str, workflow: Workflow, events: list, info: Any) -> None:
        """Show a stored run read-only, on the workflow snapshot that actually ran."""
        for open_win in self.run_windows:
            if open_win.run_id == run_id and not open_win.live:  # already open: bring it forward instead of a second copy
                open_win.show()
                open_win.raise_()
                open_win.activateWindow()
                return
        win = RunViewWindow(run_id, workflow, events, info, store=self.store)
        win.version_requested.connect(self.open_workflow_version)
        win.destroyed.connect(lambda _=None, w=win: self.run_windows.remove(w) if w in self.run_windows else None)
        self.run_windows.append(win)
        win.show()

    def open_workflow_version(self, workflow: Workflow, run_id: str = "") -> bool:
        """Open the workflow that a stored run used as a new, unsaved document (False: the user
        kept the open one)."""
        if not self.maybe_save():
            return False
        self._replace_document(workflow.model_copy(deep=True), None)
        self.document.undo_stack.resetClean()
        given = self._give_run_its_input(run_id)
        self.raise_()
        self.activateWindow()
        self.statusBar().showMessage(f"Opened the workflow of run {run_id[:8]} as a new document"
                                     + (" with its input and arguments" if given else "") + "; Save As to keep it.",
                                     6000)
        return True

    def run_workflow_version_again(self, workflow: Workflow, run_id: str = "") -> bool:
        """History ▸ Run Again: the workflow as it ran, opened as a new document with that run's
        input and arguments (as Open this version does), then run. False when it did not start
        (unsaved changes kept, or the workflow has errors now: the Problems panel says which)."""
        if not self.open_workflow_version(workflow, run_id):
            return False  # the user kept the open document (Cancel in the save prompt)
        self.run_validation()
        if not self.act_run.isEnabled():
            return False
        self.act_run.trigger()
        return True

    def _give_run_its_input(self, run_id: str) -> bool:
        """The run console set as run ``run_id`` was: its initial input in the box (when it was not
        the Start node's own text) and its arguments in the form, so Run runs it again as it was."""
        store = getattr(self, "store", None)
        info = store.get_run(run_id) if store is not None and run_id else None
        if info is None or not (info.arguments or info.initial_input):
            return False
        console = self.run_console
        console.set_workflow(self.document.workflow, None)  # the form's fields, made now
        start = self.document.workflow.start_node()
        own = (getattr(start.data, "initialInput", "") if start is not None else "") or ""
        if info.initial_input and info.initial_input != own and len(info.initial_input) <= LONG_INPUT:
            console.input_edit.setPlainText(info.initial_input)
        console.arguments.set_values(info.arguments or {})
        return True


def _same_graph(a: Workflow, b: Workflow) -> bool:
    """The same nodes (ids and types) and links: a run of ``a`` can be shown on ``b``."""
    return ({(n.id, n.type) for n in a.nodes} == {(n.id, n.type) for n in b.nodes}
            and {c.key() for c in a.connections} == {c.key() for c in b.connections})
