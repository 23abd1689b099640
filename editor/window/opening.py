"""Opening a big file in steps, with progress and a Cancel that leaves the open document as it was.

The expensive parts run on a worker thread, one step at a time, while the window's event
loop goes on (the progress dialog paints, Cancel answers at once):

1. read the file (``engine.load_any_workflow``),
2. check it (``engine.graph.validate``; its issues are shown when the document is, not computed again),
3. plan the canvas (link counts, each node's links, which size each card takes),
4. measure one sample card per kind (font metrics: the GUI thread, a few milliseconds),
5. place every card in the canvas's grid and make the overview's geometry; the run
   console's node names,

then, on the GUI thread and no longer cancellable, the document is replaced by the result
(the scene adopts the projection made in 3-5 instead of computing it). Each worker step hands
its result back through a queued signal. Nothing of the open document is touched before the
last step, so a Cancel (or a failure) at any earlier point changes nothing; a step already
running on the worker is left to finish and its result dropped (the canvas steps stop early).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QCoreApplication, QEventLoop, QObject, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import QProgressDialog, QPushButton, QWidget

from engine import ImportResult, Issue, Workflow, load_any_workflow, validate

from ..canvas.projection import Cancelled, Projection
from ..run.log_model import NodeNames

log = logging.getLogger(__name__)


@dataclass
class Opened:
    """What an open made ready: the workflow (and its importer's report), its issues and the
    canvas's projection of it."""

    workflow: Workflow
    imported: ImportResult | None
    issues: list[Issue] | None
    projection: Projection | None
    names: NodeNames | None = None


class _Relay(QObject):
    """Carries a worker's result to the GUI thread: made there (with the application as its
    parent, so the worker never owns it), its signal reaches :meth:`deliver` queued."""

    finished = Signal(object, object)  # result, exception (or None)

    def __init__(self, receive: Callable[[Any, BaseException | None], None]) -> None:
        super().__init__(QCoreApplication.instance())
        self._receive = receive
        self.finished.connect(self.deliver)

    @Slot(object, object)
    def deliver(self, result: Any, error: BaseException | None) -> None:
        receive, self._receive = self._receive, None
        self.deleteLater()
        if receive is not None:
            receive(result, error)


def on_worker(
    fn: Callable[[], Any], receive: Callable[[Any, BaseException | None], None], name: str = "flowdesk-worker"
) -> None:
    """Run ``fn()`` on a new (daemon) thread; ``receive(result, error)`` is called on the GUI
    thread with what it returned or raised, through a queued signal."""
    relay = _Relay(receive)

    def work() -> None:
        try:
            result, error = fn(), None
        except BaseException as err:  # handed to the GUI thread
            result, error = None, err
        try:
            relay.finished.emit(result, error)
        except RuntimeError:  # the application is gone (the window closed meanwhile)
            pass

    threading.Thread(target=work, name=name, daemon=True).start()


# How far along each step leaves the bar (out of 100): reading and checking take most of it.
_STEPS = (
    ("Reading the file…", 45),
    ("Checking the workflow…", 75),
    ("Preparing the canvas…", 85),
    ("Measuring the cards…", 86),
    ("Placing the cards…", 96),
    ("Showing the workflow…", 100),
)


class OpenJob(QObject):
    """One open of a big file under a window-modal progress dialog; :meth:`run` returns the
    :class:`Opened` result, None when cancelled, or raises what the loader raised."""

    def __init__(
        self, parent: QWidget, path: str, size: int, lazy_nodes: int, web_search_available: bool | None
    ) -> None:
        super().__init__()  # no parent: nothing keeps a finished job (and the document it read) alive
        self.path = path
        self.lazy_nodes = lazy_nodes
        self.web_search_available = web_search_available
        self.cancelled = False
        self._loop: QEventLoop | None = None
        self._outcome: tuple[Any, BaseException | None] | None = None
        name = Path(path).name
        size_text = f"{size / 1e6:.0f} MB" if size >= 1e6 else f"{size / 1e3:.0f} kB"
        self._title = f"Opening {name} ({size_text})"
        dialog = QProgressDialog(self._title, "Cancel", 0, 100, parent)
        dialog.setObjectName("openProgress")
        dialog.setWindowTitle("Opening workflow")
        dialog.setWindowModality(Qt.WindowModality.WindowModal)
        dialog.setMinimumDuration(0)
        dialog.setAutoClose(False)
        dialog.setAutoReset(False)
        dialog.setMinimumWidth(420)
        dialog.canceled.connect(self.cancel)
        self.dialog = dialog

    # ------------------------------------------------------------------ control
    def cancel(self) -> None:
        """Stop: the open document stays as it is (ignored once the document is being replaced)."""
        if self._showing:
            return
        self.cancelled = True
        if self._loop is not None:
            self._loop.quit()

    _showing = False
    _target = 0  # where the bar stops in the current step

    def check(self) -> None:
        """Called by the canvas steps on the worker now and then: stops them once cancelled."""
        if self.cancelled:
            raise Cancelled()

    # ------------------------------------------------------------------ the steps
    def run(self, show: Callable[[Opened], None]) -> Opened | None:
        """Read, check and prepare the file; then ``show(result)`` replaces the document. None
        when cancelled (nothing was touched)."""
        self.dialog.show()
        try:
            self._step(0)
            loaded = self._on_worker(lambda: load_any_workflow(self.path))
            if loaded is None:
                return None
            workflow, imported = loaded
            self._step(1)
            issues = self._on_worker(lambda: self._check(workflow))
            if self.cancelled:
                return None
            self._step(2)
            plan = self._on_worker(lambda: Projection.plan(workflow, self.lazy_nodes, self.check))
            if plan is None:
                return None
            self._step(3)
            plan.measure()
            self._step(4)
            names = self._on_worker(lambda: plan.place(self.check) or NodeNames.of(workflow))
            if names is None:
                return None
            if self.cancelled:
                return None
            self._step(5)
            self._showing = True
            button = self.dialog.findChild(QPushButton)
            if button is not None:
                button.setEnabled(False)  # too late to go back: the document is being replaced
            opened = Opened(workflow, imported, issues, plan, names)
            show(opened)
            log.debug("open %s: %s %.3f s", self.path, _STEPS[5][0], time.perf_counter() - self._t)
            return opened
        finally:
            self._outcome = None
            self.dialog.close()
            self.dialog.deleteLater()

    def _check(self, workflow: Workflow) -> list[Issue] | None:
        """The workflow's issues; None when the validator failed (it runs again on the GUI
        thread when the document is shown, where a failure is handled as for any edit)."""
        try:
            return validate(workflow, web_search_available=self.web_search_available)
        except Exception:
            log.exception("validating %s on the open's worker failed", self.path)
            return None

    def _step(self, i: int) -> None:
        now = time.perf_counter()
        if i:
            log.debug("open %s: %s %.3f s", self.path, _STEPS[i - 1][0], now - self._t)
        self._t = now
        text, self._target = _STEPS[i]
        self.dialog.setLabelText(f"{self._title}\n{text}")
        self.dialog.setValue(_STEPS[i - 1][1] if i else 0)

    def _creep(self) -> None:
        """The bar moves on within a step (ever more slowly towards the step's end: how long
        reading or checking takes is not known ahead), so a long step still shows life."""
        if self.dialog.wasCanceled():
            self.cancel()
            return
        value = self.dialog.value()
        if value < self._target - 1:
            self.dialog.setValue(value + max(1, (self._target - value) // 12))

    def _on_worker(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` on a worker thread while this one's event loop runs; its result, or None when
        cancelled meanwhile. What ``fn`` raised is raised here (Cancelled: None)."""
        if self.cancelled:
            return None
        loop = QEventLoop()
        self._outcome = None

        def got(result: Any, error: BaseException | None) -> None:
            if self._loop is loop:
                self._outcome = (result, error)
                loop.quit()

        self._loop = loop
        on_worker(fn, got, "flowdesk-open")
        # The dialog's cancel() (not only its button) counts: looked at now and then.
        watch = QTimer(interval=100)
        watch.timeout.connect(self._creep)
        watch.start()
        try:
            if not self.cancelled:
                loop.exec()
        finally:
            watch.stop()
            self._loop = None
        if self.cancelled or self._outcome is None:
            return None  # the worker's result, when it comes, goes nowhere
        result, error = self._outcome
        if isinstance(error, Cancelled):
            return None
        if error is not None:
            raise error
        return result
