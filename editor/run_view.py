"""RunViewWindow: a stored run, read-only, on the workflow snapshot that actually ran.

Opened from the run history. The canvas shows the run's node states and the links it
followed, the console replays its log, and a side panel shows the selected node's last
input and output. What the run did is derived from its events by the engine's one reducer
(:class:`engine.RunState`, the console's), exactly as for a live run, so the stored run
looks as the live one did. Nothing here edits anything: the canvas takes clicks for selection only, and
"Open this version as a new document" hands the workflow to the main window.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsSceneMouseEvent,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from engine import RunState, Workflow

from .canvas.scene import CanvasScene
from .canvas.view import CanvasView
from .editing import WorkflowDocument
from .run.console import RunConsole
from .run.details import NodeRunDetails
from .screen_fit import fit_resize


class ReadOnlyScene(CanvasScene):
    """A canvas scene that only selects: no moves, no links, no edits, no context menu."""

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        item = self.node_item_at(event.scenePos())
        if event.button() == Qt.MouseButton.LeftButton:
            self.clearSelection()
            if item is not None:
                item.setSelected(True)
        event.accept()

    def mouseMoveEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        event.accept()

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        event.accept()

    def mouseDoubleClickEvent(self, event: QGraphicsSceneMouseEvent) -> None:
        event.accept()

    def keyPressEvent(self, event) -> None:  # no Delete, no collapse toggles
        event.ignore()

    def contextMenuEvent(self, event) -> None:
        event.accept()

    def rebuild(self) -> None:
        super().rebuild()
        for item in self.node_items.values():
            self._prepare_item(item)

    def _prepare_item(self, item) -> None:
        item.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIsMovable, False)


def _given_text(info: Any, limit: int | None = 160, sep: str = " · ") -> str:
    """What a stored run was given: "Input: … · Arguments: topic=…" (each part on one line, cut
    at ``limit`` characters)."""
    parts = []
    initial = getattr(info, "initial_input", None)
    if initial:
        parts.append(f"Input: {initial}")
    arguments = getattr(info, "arguments_text", "")
    if arguments:
        parts.append(f"Arguments: {arguments}")
    if limit is None:
        return sep.join(parts)
    flat = [" ".join(p.split()) for p in parts]
    return sep.join(p if len(p) <= limit else p[: limit - 1] + "…" for p in flat)


class RunViewWindow(QMainWindow):
    version_requested = Signal(object, str)  # (workflow, run_id): open it as a new document

    def __init__(
        self,
        run_id: str,
        workflow: Workflow,
        events: list,
        info: Any = None,
        *,
        store: Any = None,
        resolver_factory: Any = None,
        remote_run: Any = None,
        parent: QWidget | None = None,
    ) -> None:
        """``resolver_factory`` given: the run is a paused one, taken up here to be answered
        (its own workflow, read-only, with its approval card and input) instead of replayed;
        ``remote_run``: a paused run on a Temporal server (``RemoteRun.fetch``), taken up so."""
        super().__init__(parent)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setObjectName("runViewWindow")
        self.run_id = run_id
        self.workflow = workflow
        status = getattr(info, "status", "") or ""
        self.live = resolver_factory is not None or remote_run is not None
        self._status = status
        self._update_title(False)
        self.document = WorkflowDocument(workflow.model_copy(deep=True), None, parent=self)
        self.scene = ReadOnlyScene(self.document, self)
        self.view = CanvasView(self.scene)
        self.view.setAcceptDrops(False)  # palette drops would be accepted and then dropped on the floor
        self.console = RunConsole()
        self.console.set_store(store)
        self.console.run_action.setEnabled(False)
        self.console.run_action.setShortcut(QKeySequence())
        self.console.cancel_action.setShortcut(QKeySequence())
        for widget in (self.console.input_edit, self.console.run_button, self.console.cancel_button):
            widget.hide()  # a stored run is looked at here, not started
        if self.live:
            self.console.cancel_button.show()
        self.details = NodeRunDetails()

        banner = QWidget()
        banner.setObjectName("runBanner")
        row = QHBoxLayout(banner)
        row.setContentsMargins(10, 6, 10, 6)
        started = getattr(info, "started_at", None)
        when = f" · started {datetime.fromtimestamp(started).strftime('%Y-%m-%d %H:%M:%S')}" if started else ""
        self.banner_label = QLabel(
            f"<b>Run {run_id[:8]}</b> of “{workflow.display_name()}” · {status}{when} · "
            "read-only: the workflow as it was when it ran"
        )
        self.banner_label.setTextFormat(Qt.TextFormat.RichText)
        # What the run was given: its initial input and the variables it started with (arguments)
        self.given_label = QLabel(_given_text(info))
        self.given_label.setObjectName("hint")
        self.given_label.setToolTip(_given_text(info, limit=None, sep="\n"))
        self.given_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)  # long: clipped
        self.given_label.setVisible(bool(self.given_label.text()))
        texts = QVBoxLayout()
        texts.setSpacing(2)
        texts.addWidget(self.banner_label)
        texts.addWidget(self.given_label)
        open_button = QPushButton("Open this version as a new document")
        open_button.setObjectName("openVersionButton")
        open_button.clicked.connect(lambda: self.version_requested.emit(self.workflow, self.run_id))
        row.addLayout(texts, 1)
        row.addWidget(open_button)
        self.open_button = open_button

        top = QSplitter(Qt.Orientation.Horizontal)
        top.addWidget(self.view)
        top.addWidget(self.details)
        top.setStretchFactor(0, 4)
        top.setStretchFactor(1, 1)
        top.setSizes([960, 340])
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(top)
        split.addWidget(self.console)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 2)
        split.setSizes([520, 380])
        central = QWidget()
        col = QVBoxLayout(central)
        col.setContentsMargins(0, 0, 0, 0)
        col.setSpacing(0)
        col.addWidget(banner)
        col.addWidget(split, 1)
        self.setCentralWidget(central)
        fit_resize(self, 1300, 900)

        if self.live:
            if resolver_factory is not None:
                self.console.set_resolver_factory(resolver_factory)
            self.console.node_states_changed.connect(lambda _s: self._paint())
            self.console.links_followed.connect(lambda _l: self._paint())
            self.console.waiting_for_input_changed.connect(self._update_title)
            self.console.status_changed.connect(self._status_changed)
            self.console.run_finished.connect(self._status_changed)
            if remote_run is not None:
                self.console.take_up_remote(remote_run)
            else:
                self.console.open_paused_run(run_id)
            self._update_title(bool(self.console.approvals.cards))
        else:
            self.console.replay(workflow, events, run_id=run_id, status=status or None)
        server = getattr(info, "server", "") or ""
        if server:  # a run of a Temporal server: the console's badge names it, as for a live remote run
            self.console.header.set_run_id(run_id, server)
            self.banner_label.setText(
                self.banner_label.text().replace(" · read-only", f" · on Temporal {server} · read-only", 1)
            )
        self._paint()
        self.console.node_activated.connect(self._select_node)
        self.scene.selectionChanged.connect(self._selection_changed)

    def _paint(self) -> None:
        # the canvas's words from the engine's reducer, as the main window paints a live run
        self.scene.show_run(self.run_state, self.console.run_badges())

    def _status_changed(self, status: str) -> None:
        self._status = status
        self._update_title(bool(self.console.approvals.cards))

    def _update_title(self, waiting: bool) -> None:
        mark = "⏸ Waiting for approval — " if waiting else ""
        status = f" · {self._status}" if self._status else ""
        self.setWindowTitle(
            f"{mark}Run {self.run_id[:8]} · {self.workflow.display_name()}{status} (read-only) — Flowdesk"
        )

    @property
    def run_state(self) -> RunState:
        """What the stored run did (node states, links, details), derived from its events."""
        return self.console.run_state

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.view.fit_all()

    def _select_node(self, node_id: str) -> None:
        if node_id in self.scene.node_items:
            self.scene.select_nodes([node_id])
            self.view.centre_on_node(node_id)

    def _selection_changed(self) -> None:
        ids = self.scene.selected_node_ids()
        if len(ids) != 1:
            self.details.set_details(None)
            return
        self.console.show_node(ids[0])
        node = self.document.node(ids[0])
        self.details.set_details(self.console.node_details(ids[0]) or None, node.title if node else ids[0])

    def closeEvent(self, event: QCloseEvent) -> None:
        bridge = self.console.bridge
        if bridge.is_active and not bridge.release():  # paused: it stays paused in the run history
            bridge.cancel()
        self.scene.clear_run_states()
        event.accept()
