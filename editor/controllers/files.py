"""Files: new, open, save, revert, export, the recent-files list, what ``flowdesk [FILE]``
opens and the recovery of a crashed session's autosave.

The controller owns the document session (:class:`.session.DocumentSession`): it alone shows
or replaces a document. ``shown(bool)`` tells the window to show the canvas or the welcome
page; ``replacing(workflow, opened)`` comes just before a document replaces the one shown
(the run wiring lets go of the old document's run there); ``chrome_changed`` asks for the
title and the actions to be brought up to date. A file that cannot be read shows the
loader's message and changes nothing; unsaved changes are asked about before they go.
"""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from PySide6.QtCore import QObject, QPointF, QTimer, Signal
from PySide6.QtWidgets import QFileDialog, QMenu, QMessageBox, QWidget

from engine import (
    EvalCaseError,
    ExportRefused,
    Node,
    Workflow,
    WorkflowLoadError,
    atomic_write_text,
    eval_cases_file,
    export_anythingllm,
    load_any_workflow,
    load_workflow,
    read_test_cases,
    sample_paths,
)

from ..canvas.scene import CanvasScene
from ..canvas.view import CanvasView
from ..editing import WorkflowDocument
from ..files import Autosaver, orphaned_autosaves
from ..window.opening import Opened, OpenJob
from ..window.settings import settings, text_setting
from .autosave import AutosaveController
from .session import DocumentSession
from .validation import ValidationController

MAX_RECENT = 10
FILE_FILTER = (
    "Flowdesk workflows (*.flow.json *.json);;AnythingLLM agent flows, TypeAgent recipes (*.json);;All files (*)"
)

Status = Callable[[str, int], None]

BIG_FILE = 2_000_000  # bytes: a file this big (~10k nodes) is opened in steps under a progress dialog with Cancel
BIG_OBJECTS = 200_000  # more objects than this made by an open: they are frozen out of the cycle collector


@contextmanager
def collector_paused() -> Iterator[None]:
    """Opening a big file makes ~10 objects per node, and Python's cycle collector would walk
    every one of them again on each full pass while they are made (seconds for 100k nodes):
    it is paused for the open. Then, when the open made many objects, they are moved out of
    its way (``gc.freeze``: they live as long as the document; refcounting still frees them)."""
    was = gc.isenabled()
    before = gc.get_count()[0]
    gc.disable()
    try:
        yield
    finally:
        if was:
            if gc.get_count()[0] - before > BIG_OBJECTS:
                gc.freeze()
            gc.enable()


def return_freed_memory() -> None:
    """Hand the heap pages freed by a closed big document back to the system: glibc keeps
    them otherwise, and the process would stay at the big document's size (on Linux; a
    no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


def is_sample(path: str | Path) -> bool:
    """Whether ``path`` is one of the shipped samples (which always open as copies)."""
    try:
        resolved = Path(path).resolve()
        return any(resolved == sample.resolve() for sample in sample_paths())
    except OSError:
        return False


def recent_files() -> list[str]:
    """The recent files, newest first (a GUI setting)."""
    value = settings().value("recentFiles", [])
    if isinstance(value, str):
        value = [value] if value else []
    return [str(v) for v in (value or [])]


def with_sample_cases(workflow: Workflow, path: str) -> None:
    """A sample opens as an untitled copy, away from the ``NAME.tests.jsonl`` beside it: its test
    cases come along in the copy's ``tests`` list (kept by Save As), unless it has its own."""
    beside = eval_cases_file(path)
    if getattr(workflow, "tests", None) or not beside.is_file():
        return
    try:
        workflow.tests = [case.to_json() for case in read_test_cases(beside)]
    except EvalCaseError:
        pass  # the Tests panel says what is wrong with a case when the user looks there


class FilesController(QObject):
    """The window's file commands, and the one place a document is shown or replaced."""

    shown = Signal(bool)  # True: a document is shown (the canvas); False: none (the welcome page)
    replacing = Signal(object, object)  # (Workflow, Opened | None), before the document is replaced
    chrome_changed = Signal()  # the title and the actions may need updating

    def __init__(
        self,
        parent: QWidget,
        session: DocumentSession,
        document: WorkflowDocument,
        scene: CanvasScene,
        view: CanvasView,
        validation: ValidationController,
        run_in_progress: Callable[[], bool],
        status: Status,
    ) -> None:
        super().__init__(parent)
        self._parent = parent  # the dialogs' parent
        self.session = session
        self.document = document
        self.scene = scene
        self.view = view
        self.validation = validation
        self._run_in_progress = run_in_progress
        self._status = status
        self._open_job: OpenJob | None = None
        self._open_progress = None
        self.autosaver = Autosaver()
        self.autosave = AutosaveController(self, session, document, self.autosaver)

    # ------------------------------------------------------------------ showing
    def show_welcome(self) -> None:
        self.session.has_document = False
        self.shown.emit(False)

    def show_canvas(self) -> None:
        self.session.has_document = True
        self.shown.emit(True)

    # ------------------------------------------------------------------ recent files
    def recent_files(self) -> list[str]:
        return recent_files()

    def add_recent(self, path: str) -> None:
        recent = [p for p in recent_files() if p != path]
        recent.insert(0, path)
        s = settings()
        s.setValue("recentFiles", recent[:MAX_RECENT])
        s.setValue("lastFile", path)
        s.sync()

    def fill_recent_menu(self, menu: QMenu) -> None:
        menu.clear()
        recent = recent_files()
        if not recent:
            a = menu.addAction("(none)")
            a.setEnabled(False)
            return
        for path in recent:
            a = menu.addAction(Path(path).name)
            a.setToolTip(path)
            a.triggered.connect(lambda _=False, p=path: self.open_path(p))
        menu.addSeparator()
        clear = menu.addAction("Clear list")
        clear.triggered.connect(lambda: settings().setValue("recentFiles", []))

    # ------------------------------------------------------------------ replacing the document
    def maybe_save(self) -> bool:
        """Ask about a running run and unsaved changes; False means the user cancelled."""
        if not self._may_stop_run():
            return False
        if not (self.session.has_document and self.document.is_modified()):
            return True
        answer = QMessageBox.question(
            self._parent,
            "Unsaved changes",
            f"Save the changes to {self._named()} before closing it?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Save,
        )
        if answer == QMessageBox.StandardButton.Save:
            return self.save()
        return answer == QMessageBox.StandardButton.Discard

    def _named(self) -> str:
        """The document as a prompt names it: its file, else the unsaved workflow's own name."""
        if self.document.path:
            return f"“{self.document.display_name()}”"
        return f"the unsaved workflow “{self.document.workflow.display_name()}”"

    def _may_stop_run(self) -> bool:
        """Closing the document stops its running run: ask first (a paused run is not asked
        about: it stays paused in the run history)."""
        if not (self.session.has_document and self._run_in_progress()):
            return True
        answer = QMessageBox.question(
            self._parent,
            "A run is in progress",
            f"{self._named()[0].upper()}{self._named()[1:]} is running. Closing it stops the run (what it did so far "
            "stays in Run history). Stop the run?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Cancel,
        )
        return answer not in (QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.No)

    def replace_document(self, workflow: Workflow, path: str | None, opened: Opened | None = None) -> None:
        """Show ``workflow``; ``opened`` brings its issues and canvas projection when an open made
        them ahead (a big file, on a worker thread)."""
        self.session.next_document()  # a run shown on the previous document is not this one's
        # Runs belong to their document: the run wiring lets go of the old one's run here.
        self.replacing.emit(workflow, opened)
        self.autosaver.clear()
        if len(self.document.workflow.nodes) > self.scene.LAZY_NODES:
            # A big document goes: once it is freed (with the reset below), its memory is given back.
            QTimer.singleShot(0, return_freed_memory)
        if opened is not None and opened.projection is not None:
            self.scene.use_projection(opened.projection)
        self.document.reset(workflow, path)
        self.show_canvas()
        self.validation.run_validation(opened.issues if opened is not None else None)
        self.validation.cancel_pending()  # the reset's change is validated just above (once: a big file takes a while)
        if not self.view.isVisible():
            QTimer.singleShot(0, self.view.fit_all)  # the viewport has no size until shown
        self.view.fit_all()

    def new_document(self) -> None:
        if not self.maybe_save():
            return
        start = Node.model_validate({"id": "start", "type": "start", "x": 80, "y": 200, "data": {"initialInput": ""}})
        self.replace_document(Workflow(name="Untitled workflow", version=1, nodes=[start]), None)
        self.view.set_zoom(1.0, QPointF(420, 260))

    def document_folder(self) -> Path:
        """Where file dialogs open: the document's folder, else the last file's, else home."""
        if self.session.has_document and self.document.path:
            return Path(self.document.path).parent
        last = text_setting("lastFile")
        if last and Path(last).parent.is_dir():
            return Path(last).parent
        return Path.home()

    # ------------------------------------------------------------------ opening
    def open_dialog(self) -> None:
        """File ▸ Open: the file is chosen first; unsaved changes are asked about only once there
        is something to open instead (a cancelled dialog asks nothing)."""
        start = str(self.document_folder())
        path, _ = QFileDialog.getOpenFileName(self._parent, "Open workflow", start, FILE_FILTER)
        if path:
            self.open_path(path)

    def open_dropped(self, paths: list[str]) -> bool:
        """Files dropped on the window (from a file manager): the first one is opened as Open
        would (another tool's flow is imported); a window holds one workflow, so the others are
        named in the status bar, not opened."""
        paths = [p for p in paths if Path(p).is_file()]
        if not paths:
            self._status("Nothing to open there: drop a workflow file.", 5000)
            return False
        opened = self.open_path(paths[0])
        if opened and len(paths) > 1:
            rest = len(paths) - 1
            others = f"the other {rest} files were" if rest != 1 else "the other file was"
            self._status(f"Opened {Path(paths[0]).name}; a window holds one workflow, so {others} not opened.", 8000)
        return opened

    def open_path(self, path: str, ask: bool = True) -> bool:
        """Open ``path``; a file that cannot be read shows the loader's message and changes nothing.

        A big file (over ``BIG_FILE`` bytes) is read, checked and laid out in steps on a worker
        thread under a progress dialog with Cancel (:mod:`editor.window.opening`); the window keeps
        painting and a Cancel leaves the open document as it was."""
        if self._open_job is not None:
            self._status("Another file is being opened; wait for it or cancel it first.", 4000)
            return False
        if ask and not self.maybe_save():
            return False
        with collector_paused():
            try:
                opened = self._load_with_progress(path)
            except WorkflowLoadError as err:
                QMessageBox.critical(self._parent, "Cannot open workflow", str(err))
                return False
            if opened is None:  # cancelled: the open document stays as it was
                self._status(f"Opening {path} cancelled", 4000)
                return False
            if opened.imported is not None:
                imported = opened.imported
                text = (
                    f"Opened {Path(path).name}, a {imported.label}, as a new unsaved workflow "
                    "(the original file is untouched)"
                )
                self.add_recent(str(Path(path).resolve()))
                self._status(text, 15000)
                if imported.warnings:  # what changed on the way in, said where it can be read whole
                    notes = "\n".join(f"• {w.split(': ', 1)[-1]}" for w in imported.warnings)
                    QMessageBox.information(self._parent, "Imported with notes", f"{text}.\n\n{notes}")
                return True
        if is_sample(path):
            return True  # said by _show_opened; a sample is not a recent file (it opens as a copy)
        self.add_recent(str(Path(path).resolve()))
        self._status(f"Opened {path}", 4000)
        return True

    def _show_opened(self, opened: Opened, path: str) -> None:
        """Replace the document by what an open read (its issues and canvas made ahead when given).
        A shipped sample opens as an untitled copy, whichever way it was opened."""
        if opened.imported is None and is_sample(path):
            with_sample_cases(opened.workflow, path)
            self.replace_document(opened.workflow, None, opened)
            self._status(f"Opened a copy of the sample {Path(path).name}; Save As to keep it.", 5000)
        elif opened.imported is not None:
            # A file of another system opens as a new, unsaved document: saving never writes the original.
            self.replace_document(opened.workflow, None, opened)
            self.document.undo_stack.resetClean()  # unsaved: closing it asks first
            self.chrome_changed.emit()
        else:
            self.replace_document(opened.workflow, str(Path(path).resolve()), opened)

    def _load_with_progress(self, path: str) -> Opened | None:
        """Read ``path`` and show it; None when cancelled. A small file is read at once; a big one
        (over ``BIG_FILE`` bytes) in steps under a progress dialog (see :mod:`editor.window.opening`)."""
        try:
            size = Path(path).stat().st_size
        except OSError:
            size = 0
        if size <= BIG_FILE:
            workflow, imported = load_any_workflow(path)
            opened = Opened(workflow, imported, None, None)
            self._show_opened(opened, path)
            return opened
        job = OpenJob(self._parent, path, size, self.scene.LAZY_NODES, self.validation.search_backend())
        self._open_job = job
        self._open_progress = job.dialog
        try:
            return job.run(lambda opened: self._show_opened(opened, path))
        finally:
            self._open_job = None
            self._open_progress = None

    def cancel_open(self) -> None:
        """Cancel an open in progress (the window is closing, say); the document stays as it was."""
        if self._open_job is not None:
            self._open_job.cancel()

    def open_sample(self, path: str) -> bool:
        """Open a sample as an untitled copy, so saving never overwrites the shipped sample."""
        if not self.maybe_save():
            return False
        try:
            workflow = load_workflow(path)
        except WorkflowLoadError as err:
            QMessageBox.critical(self._parent, "Cannot open sample", str(err))
            return False
        with_sample_cases(workflow, path)
        self.replace_document(workflow, None)
        self._status(f"Opened a copy of the sample {Path(path).name}; Save As to keep it.", 5000)
        return True

    def start(self, argv: list[str]) -> None:
        """What ``flowdesk [FILE]`` opens: the file, else a crash recovery, else the last document."""
        files = [a for a in argv if not a.startswith("-")]
        if files:
            self.open_path(files[0], ask=False)
            return
        if self.offer_recovery():
            return
        last = settings().value("lastFile", "")
        if last and Path(str(last)).is_file():
            self.open_path(str(last), ask=False)

    def offer_recovery(self) -> bool:
        """Offer autosaves left by a crashed session; returns True when one was restored."""
        found = orphaned_autosaves()
        if not found:
            return False
        latest = found[0]
        where = latest.original_path or "an untitled workflow"
        answer = QMessageBox.question(
            self._parent,
            "Recover unsaved work?",
            f"Flowdesk closed unexpectedly with unsaved changes to {where} "
            f"({latest.workflow.display_name()}). Recover them?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
            QMessageBox.StandardButton.Yes,
        )
        for rec in found:
            try:
                rec.file.unlink()
            except OSError:
                pass
        if answer != QMessageBox.StandardButton.Yes:
            return False
        self.replace_document(latest.workflow, latest.original_path)
        self.document.undo_stack.resetClean()  # recovered work is unsaved
        self.chrome_changed.emit()
        self.autosave.autosave_now()
        return True

    # ------------------------------------------------------------------ saving
    def save(self) -> bool:
        if not self.session.has_document:
            return False
        if not self.document.path:
            return self.save_as()
        return self._save_to(self.document.path)

    def save_as(self) -> bool:
        if not self.session.has_document:
            return False
        # In the document's folder (an untitled one: the folder of the last file used).
        name = f"{(self.document.workflow.name or 'workflow').lower().replace(' ', '-')}.flow.json"
        suggested = self.document.path or str(self.document_folder() / name)
        path, _ = QFileDialog.getSaveFileName(self._parent, "Save workflow as", suggested, FILE_FILTER)
        if not path:
            return False
        if not path.endswith(".json"):
            path += ".flow.json"
        return self._save_to(path)

    def _save_to(self, path: str) -> bool:
        try:
            self.document.save(path)
        except OSError as err:
            QMessageBox.critical(self._parent, "Cannot save", f"{path}: {err.strerror or err}")
            return False
        except ValueError as err:  # text that cannot be written as UTF-8 (a lone surrogate); nothing was written
            QMessageBox.critical(
                self._parent,
                "Cannot save",
                f"{path}: the workflow holds text that cannot be "
                f"written (not valid Unicode): {err}. The file was not changed; fix that text and "
                "save again.",
            )
            return False
        self.add_recent(str(Path(path).resolve()))
        self.autosaver.clear()
        self.chrome_changed.emit()
        self._status(f"Saved {path}", 4000)
        return True

    def revert(self) -> None:
        path = self.document.path
        if not path:
            return
        if self.document.is_modified():
            answer = QMessageBox.question(
                self._parent,
                "Revert",
                f"Discard your changes and reload “{Path(path).name}”?",
                QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
            )
            if answer != QMessageBox.StandardButton.Discard:
                return
        self.open_path(path, ask=False)

    # ------------------------------------------------------------------ exporting
    def export_dialog(self) -> None:
        """File ▸ Export: the workflow as an AnythingLLM agent flow (refused, with the reason, when it
        uses what that format lacks)."""
        if not self.session.has_document:
            return
        try:
            export_anythingllm(self.document.workflow)  # refused (with why) before a path is asked for
        except ExportRefused as err:
            QMessageBox.warning(self._parent, "Cannot export", str(err))
            return
        base = (self.document.workflow.name or "workflow").lower().replace(" ", "-")
        folder = Path(self.document.path).parent if self.document.path else Path.home()
        path, _ = QFileDialog.getSaveFileName(
            self._parent,
            "Export as AnythingLLM agent flow",
            str(folder / f"{base}.anythingllm.json"),
            "AnythingLLM agent flows (*.json);;All files (*)",
        )
        if not path:
            return
        self.export_to(path)

    def export_to(self, path: str) -> bool:
        try:
            text = json.dumps(export_anythingllm(self.document.workflow), ensure_ascii=False, indent=2) + "\n"
            atomic_write_text(path, text)
        except ExportRefused as err:
            QMessageBox.warning(self._parent, "Cannot export", str(err))
            return False
        except OSError as err:
            QMessageBox.critical(self._parent, "Cannot export", f"{path}: {err.strerror or err}")
            return False
        self._status(f"Exported {Path(path).name} as an AnythingLLM agent flow", 5000)
        return True
