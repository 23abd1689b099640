"""Running the open document: the Run action (and Run from Here), the console's run shown on
the canvas and in the inspector's Run tab, pinned outputs, and the room an approval card gets.

Run state lives in the console, apart from the document, and is never undoable. The canvas
shows the console's run only on the document that run belongs to (``run_doc``: the serial of
the document Run was pressed on, or a stored run was taken up on); when another document
replaces it, ``document_replacing`` lets the run go.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDockWidget, QMainWindow, QTabWidget

from engine import errors_only

from ..canvas.scene import CanvasScene
from ..editing import WorkflowDocument
from ..first_run import offer_setup
from ..history.panel import HistoryPanel
from ..issue_text import describe_issue
from ..panels.inspector import InspectorPanel
from ..run.console import RunConsole
from ..run.details import NodeRunDetails
from ..window.run_on import remote_run_factory
from ..window.settings import text_setting
from .session import DocumentSession
from .validation import ValidationController

Status = Callable[[str, int], None]

CONSOLE_SHARE = 0.34  # of the window's height, the run console's when a run starts


class RunActions:
    """The window's run actions, which this controller enables and explains."""

    def __init__(self, run: QAction, run_from: QAction, run_only: QAction) -> None:
        self.run, self.run_from, self.run_only = run, run_from, run_only


class RunController(QObject):
    """Connects the run console to the window's document, canvas, inspector and history."""

    run_requested = Signal()  # Run was pressed (whether or not a run started)
    title_changed = Signal()  # whether a run waits for a decision changed (the title says so)
    nodes_requested = Signal(list)  # list[str]: show these nodes (a console entry was activated)

    def __init__(
        self,
        frame: QMainWindow,
        session: DocumentSession,
        document: WorkflowDocument,
        scene: CanvasScene,
        console: RunConsole,
        console_dock: QDockWidget,
        inspector: InspectorPanel,
        inspector_tabs: QTabWidget,
        details: NodeRunDetails,
        history: HistoryPanel,
        validation: ValidationController,
        store: Any,
        console_maximised: Callable[[], bool],
        status: Status,
    ) -> None:
        super().__init__(frame)
        self._frame = frame  # the dock layout's owner (resizeDocks) and the dialogs' parent
        self.session = session
        self.document = document
        self.scene = scene
        self.console = console
        self.console_dock = console_dock
        self.inspector = inspector
        self.inspector_tabs = inspector_tabs
        self.details = details
        self.history = history
        self.validation = validation
        self.store = store
        self._console_maximised = console_maximised
        self._status = status
        self.actions: RunActions | None = None
        self.run_doc: int | None = None  # the serial of the document the console's run belongs to
        self.waiting_for_input = False
        self._run_from: tuple[str, bool] | None = None
        # (the console's height before it grew for an approval card, as resizeDocks takes it, and
        # the height it grew to)
        self._approval_room: tuple[int, int] | None = None
        # The console's height once Run gave it room: an approval card's own minimum height can
        # grow the dock before the card asks for more, and deciding goes back to this height.
        self._console_at_run: int | None = None
        details.pin_requested.connect(self.pin_output)
        details.unpin_requested.connect(self.unpin_output)
        console.set_store(store)
        console.node_states_changed.connect(lambda _states: self.show_run_states())
        console.links_followed.connect(lambda _links: self.show_run_states())
        console.run_badges_changed.connect(lambda _b: self.show_run_states())
        console.node_activated.connect(self._run_entry_activated)
        console.waiting_for_input_changed.connect(self._on_waiting_changed)
        console.run_started.connect(self._run_started)
        console.run_finished.connect(self._run_finished)
        console.status_changed.connect(self._run_status_changed)
        console.approval_room_wanted.connect(self._room_for_approval)
        console.answered_elsewhere.connect(self._run_answered_elsewhere)
        console.offers_provider_choice = True
        validation.checked.connect(self.update_run_action)

    def use_actions(self, actions: RunActions) -> None:
        """The window's Run actions (made after this controller): the console's Run button is
        the window's Run action. It used to start the console's own copy of the workflow, set at
        the previous F5, so after an edit it ran the old graph."""
        self.actions = actions
        actions.run.setIconText("▶ Run")
        self.console.run_button.removeAction(self.console.run_action)  # else two actions: a menu arrow
        self.console.run_button.setDefaultAction(actions.run)

    def run_in_progress(self) -> bool:
        """A run is going (not waiting at a pause): closing its document stops it."""
        bridge = self.console.bridge
        return bridge.is_active and bridge.status != "paused"

    # ------------------------------------------------------------------ the Run action
    def update_run_action(self) -> None:
        if self.actions is None:
            return
        act_run = self.actions.run
        has_document = self.session.has_document
        errors = errors_only(self.validation.issues) if has_document else []
        busy = self.console.bridge.is_active
        ok = has_document and not errors and not busy
        for a in (act_run, self.actions.run_from, self.actions.run_only):
            a.setEnabled(ok)
        if busy:  # F5 would do nothing: say why, and how to stop the run
            waiting = self.console.status == "paused"
            act_run.setToolTip(
                "A run is waiting for approval (answer it in the run console, or Shift+F5 cancels it)"
                if waiting
                else "A run is in progress (Shift+F5 cancels it)"
            )
        elif not has_document:
            act_run.setToolTip("Open a workflow to run it")
        elif errors:
            act_run.setToolTip(f"Cannot run: {describe_issue(errors[0], self.document.workflow)}")
        else:
            # the shortcut the Run menu shows (F5; Ctrl+R works too)
            act_run.setToolTip("Run the workflow (F5)")

    def run(self) -> None:
        if not self.session.has_document:
            return
        remote = remote_run_factory()  # Run On: a Temporal server's workers, with their own providers
        if remote is None and offer_setup(self._frame, self.document.workflow, text_setting("run/provider"), self.run):
            return  # no provider yet: the set-up dialog asks, then runs
        self.console.set_run_factory(remote)
        if remote is not None:
            self._status(f"Running on the Temporal server at {remote.keywords['address']}.", 6000)
        dock = self.console_dock
        dock.show()
        dock.raise_()
        # Room for the log and an approval card, the canvas keeping most of the window (at least
        # ~55 % of its height; at 0.52 a 1000 px window left the canvas ~270 px once the menus, the
        # toolbar and the tab bars were counted). The view frames the graph again as it shrinks
        # (if it was framed), so no node ends up cut off; an approval card may grow it for a while.
        want = min(460, int(self._frame.height() * CONSOLE_SHARE))
        if dock.height() < want and not dock.isFloating():
            self._frame.resizeDocks([dock], [want], Qt.Orientation.Vertical)
        self._console_at_run = None
        QTimer.singleShot(0, self, self._note_console_height)
        # The console runs a deep copy: edits made during the run do not reach it.
        workflow = self.document.workflow
        rerun, self._run_from = self._run_from, None
        start: dict[str, Any] = {}
        if rerun is not None:
            node_id, only = rerun
            if only:  # run only this node: its outgoing execution links cut in the copy that runs
                workflow = workflow.model_copy(deep=True)
                workflow.connections = [
                    c for c in workflow.connections if c.source != node_id or c.sourceHandle == "subagent"
                ]
            start = {"start_at": node_id, "reuse_from": self._reuse_source()}
        self.console.set_workflow(workflow, self.document.path)
        previous, self.run_doc = self.run_doc, self.session.serial
        if self.console.start_run(**start) is None:
            self.run_doc = previous  # nothing started: the run shown before stays as it was
        self.run_requested.emit()

    def run_from_node(self, node_id: str | None = None, only: bool = False) -> None:
        """Run from ``node_id`` (the selected node when None): upstream nodes reuse the outputs
        recorded in the document's last run when nothing they depend on changed ("from cache");
        ``only``: stop after that node."""
        if node_id is None:
            ids = self.scene.selected_node_ids()
            if len(ids) != 1:
                self._status("Select one node to run from it.", 4000)
                return
            node_id = ids[0]
        self._run_from = (node_id, only)
        self.run()

    def _reuse_source(self) -> str | None:
        """The run a run from a node reuses: the document's last run in the history."""
        if self.store is None:
            return None
        try:
            return self.store.last_run_of(
                workflow_path=self.document.path, workflow_name=self.document.workflow.display_name()
            )
        except Exception:  # a history that cannot be read: every node runs
            return None

    # ------------------------------------------------------------------ pins
    def pin_output(self, node_id: str, value: Any) -> None:
        """Pin ``value`` as the node's output (one undo step; saved in the file as ``pinnedOutput``)."""
        self.document.set_node_field(node_id, "pinnedOutput", value, merge=False)
        self.update_node_run_details()

    def unpin_output(self, node_id: str) -> None:
        node = self.document.node(node_id)
        if node is None:
            return
        data = node.data.model_dump()
        if data.pop("pinnedOutput", None) is not None or "pinnedOutput" in node.data.model_dump():
            self.document.edit_node_data(node_id, data, None)
        self.update_node_run_details()

    # ------------------------------------------------------------------ a document replaced
    def document_replacing(self, workflow: Any, opened: Any) -> None:
        """Runs belong to their document: the console shows none for the new one. A paused run
        stays paused in the run history; a running one was asked about (``maybe_save``)."""
        paused = self.console.bridge.status == "paused" and self.console.bridge.is_active
        if opened is not None and opened.names is not None:
            self.console.use_names(opened.names)
        self.console.clear(workflow)  # nothing of the old document is kept there
        self.run_doc = None
        self.inspector_tabs.setCurrentWidget(self.inspector)  # no run to show on the new document
        if paused:
            self._status("The paused run stays in Run history; resume it from there.", 6000)

    # ------------------------------------------------------------------ the console's run on the canvas
    def _room_for_approval(self, lack: int) -> None:
        """A short window cut the approval card: the run console grows by what the card lacks,
        up to two thirds of the window (the canvas keeps the rest), so the text under review
        can be read where the decision is made."""
        dock = self.console_dock
        if dock.isFloating() or not dock.isVisible() or self._console_maximised():
            return
        limit = int(self._frame.height() * 2 / 3)
        want = min(dock.height() + lack, limit)
        if want <= dock.height():
            return
        if self._approval_room:
            back_to = self._approval_room[0]
        else:
            back_to = min(dock.height(), self._console_at_run or dock.height())
        self._frame.resizeDocks([dock], [want], Qt.Orientation.Vertical)

        def grown() -> None:
            # The height to go back to once nothing waits (unless the user resizes the console
            # meanwhile), as resizeDocks counts it: with the bottom docks' tab bar, which the
            # dock's own height leaves out.
            self._approval_room = (back_to + want - dock.height(), dock.height())
            self.console.fit_approvals()

        QTimer.singleShot(0, self, grown)

    def _give_back_room(self, room: tuple[int, int], tries: int = 4) -> None:
        """Back to the height the console had before the card grew it (``room``: that height as
        resizeDocks takes it, and the height it grew to), unless the user resized it meanwhile.
        The decided card, and a run header that is still busy, keep a minimum height for a
        moment after the decision: the dock is asked again, a few times, until it got there."""
        dock = self.console_dock
        if self._approval_room is not None or dock.isFloating() or not dock.isVisible():
            return
        before = dock.height()
        self._frame.resizeDocks([dock], [room[0]], Qt.Orientation.Vertical)
        if tries > 1:
            QTimer.singleShot(60, self, lambda: self._retry_give_back(room, before, tries - 1))

    def _retry_give_back(self, room: tuple[int, int], asked_at: int, tries: int) -> None:
        dock = self.console_dock
        target = room[0] - (room[1] - asked_at) if asked_at == room[1] else room[0]
        if dock.height() > target and dock.height() != asked_at:  # moved, but not all the way
            self._give_back_room((room[0], dock.height()), tries)

    def _note_console_height(self) -> None:
        if self.console_dock.isVisible() and not self.console_dock.isFloating():
            self._console_at_run = self.console_dock.height()

    def _on_waiting_changed(self, waiting: bool) -> None:
        room = self._approval_room
        if room is not None and not waiting:  # decided: the console goes back, unless the user resized it
            self._approval_room = None
            # Once the decided card has left the layout: until then its minimum height holds the dock.
            if self.console_dock.height() == room[1]:
                QTimer.singleShot(0, self, lambda: self._give_back_room(room))
        self.waiting_for_input = waiting
        self.title_changed.emit()
        self.update_run_action()

    def show_run_states(self) -> None:
        """The console's run on the canvas, in the words the engine's reducer gives its nodes
        (:meth:`~editor.canvas.projected_scene.ProjectedScene.show_run`)."""
        if not self.run_on_canvas():
            self.scene.clear_run_states()
            self.inspector.set_run_errors({})
        else:
            self.scene.show_run(self.console.run_state, self.console.run_badges())
            self.inspector.set_run_errors(self.console.run_state.errors)  # a code page marks its failing line
        self.update_node_run_details()

    def run_on_canvas(self) -> bool:
        """The console's run belongs to the document on the canvas."""
        return self.session.has_document and self.run_doc is not None and self.run_doc == self.session.serial

    def _run_entry_activated(self, node_id: str) -> None:
        if node_id in self.scene.node_items:
            self.nodes_requested.emit([node_id])

    def sync_console_selection(self) -> None:
        ids = self.scene.selected_node_ids()
        if len(ids) == 1:
            self.console.show_node(ids[0])
        self.update_node_run_details()

    def update_node_run_details(self) -> None:
        ids = self.scene.selected_node_ids()
        pinned_node = self.document.node(ids[0]) if len(ids) == 1 and self.session.has_document else None
        self.details.set_pin(
            pinned_node.id if pinned_node else None,
            getattr(pinned_node.data, "pinnedOutput", None) if pinned_node else None,
        )
        if len(ids) != 1 or not self.run_on_canvas():
            self.details.set_details(None)
            return
        node = self.document.node(ids[0])
        details = self.console.node_details(ids[0])
        self.details.set_details(details or None, node.title if node else ids[0])

    def _run_started(self, _run_id: str) -> None:
        self.history.refresh()
        self.update_run_action()
        if self.run_on_canvas():
            # Watching a run: the inspector shows what the selected node did (Edit is one click away).
            self.inspector_tabs.setCurrentWidget(self.details)

    def _run_status_changed(self, status: str) -> None:
        self.update_node_run_details()
        if status in ("running", "paused"):
            # The recorder writes the run's row from its own thread, so at run_started it may
            # not be stored yet and the history missed it (a paused run then stayed unlisted,
            # with nothing to refresh the list). At a pause the row is committed; "running"
            # comes with the first events, by when it normally is (the panel then keeps
            # polling while its page shows a running run).
            self.history.refresh()

    def _run_answered_elsewhere(self, _text: str) -> None:
        """The paused run went on in another process: the console let it go (and says so)."""
        self.update_run_action()
        self.history.refresh()
        self.title_changed.emit()
        self._status("The run's approval was answered elsewhere: see the run console.", 6000)

    def _run_finished(self, status: str) -> None:
        self.update_run_action()
        self.history.refresh()
        self.title_changed.emit()
        self._status(f"Run {status}", 5000)
