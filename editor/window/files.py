"""Opening, saving, reverting and the recent-files list; what ``flowdesk [FILE]`` opens."""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from PySide6.QtCore import QPointF, QTimer
from PySide6.QtWidgets import QFileDialog, QMessageBox

from engine import (ExportRefused, Node, Workflow, WorkflowLoadError, atomic_write_text, export_anythingllm,
                    load_any_workflow, load_workflow)

from ..canvas.view import local_paths
from .opening import Opened, OpenJob
from .settings import settings, text_setting

MAX_RECENT = 10
FILE_FILTER = ("Flowdesk workflows (*.flow.json *.json);;AnythingLLM agent flows, TypeAgent recipes (*.json);;"
               "All files (*)")


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


class FilesMixin:
    """File commands of the main window. A file that cannot be read shows the loader's
    message and changes nothing; unsaved changes are asked about before they are replaced."""

    def recent_files(self) -> list[str]:
        value = settings().value("recentFiles", [])
        if isinstance(value, str):
            value = [value] if value else []
        return [str(v) for v in (value or [])]

    def _add_recent(self, path: str) -> None:
        recent = [p for p in self.recent_files() if p != path]
        recent.insert(0, path)
        s = settings()
        s.setValue("recentFiles", recent[:MAX_RECENT])
        s.setValue("lastFile", path)
        s.sync()

    def maybe_save(self) -> bool:
        """Ask about a running run and unsaved changes; False means the user cancelled."""
        if not self._may_stop_run():
            return False
        if not (self._has_document and self.document.is_modified()):
            return True
        answer = QMessageBox.question(
            self, "Unsaved changes", f"Save the changes to “{self.document.display_name()}” before closing it?",
            QMessageBox.StandardButton.Save | QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel,
            QMessageBox.StandardButton.Save)
        if answer == QMessageBox.StandardButton.Save:
            return self.save()
        return answer == QMessageBox.StandardButton.Discard

    def _may_stop_run(self) -> bool:
        """Closing the document stops its running run: ask first (a paused run is not asked
        about: it stays paused in the run history)."""
        bridge = self.run_console.bridge
        if not (self._has_document and bridge.is_active and bridge.status != "paused"):
            return True
        answer = QMessageBox.question(
            self, "A run is in progress",
            f"“{self.document.display_name()}” is running. Closing it stops the run (what it did so far "
            "stays in Run history). Stop the run?",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.Cancel)
        return answer not in (QMessageBox.StandardButton.Cancel, QMessageBox.StandardButton.No)

    def _replace_document(self, workflow: Workflow, path: str | None, opened: Opened | None = None) -> None:
        """Show ``workflow``; ``opened`` brings its issues and canvas projection when an open made
        them ahead (a big file, on a worker thread)."""
        self._doc_serial += 1  # a run shown on the previous document is not this one's
        # Runs belong to their document: the console shows none for the new one. A paused
        # run stays paused in the run history; a running one was asked about (maybe_save).
        paused = self.run_console.bridge.status == "paused" and self.run_console.bridge.is_active
        if opened is not None and opened.names is not None:
            self.run_console.use_names(opened.names)
        self.run_console.clear(workflow)  # nothing of the old document is kept there
        self._run_doc = None
        self.inspector_tabs.setCurrentWidget(self.inspector)  # no run to show on the new document
        if paused:
            self.statusBar().showMessage("The paused run stays in Run history; resume it from there.", 6000)
        self.autosaver.clear()
        if len(self.document.workflow.nodes) > self.scene.LAZY_NODES:
            # A big document goes: once it is freed (with the reset below), its memory is given back.
            QTimer.singleShot(0, return_freed_memory)
        if opened is not None and opened.projection is not None:
            self.scene.use_projection(opened.projection)
        self.document.reset(workflow, path)
        self._show_canvas()
        self.run_validation(opened.issues if opened is not None else None)
        self._validate_timer.stop()  # the reset's change is validated just above (once: a big file takes a while)
        if not self.view.isVisible():
            QTimer.singleShot(0, self.view.fit_all)  # the viewport has no size until shown
        self.view.fit_all()

    def new_document(self) -> None:
        if not self.maybe_save():
            return
        start = Node.model_validate({"id": "start", "type": "start", "x": 80, "y": 200, "data": {"initialInput": ""}})
        self._replace_document(Workflow(name="Untitled workflow", version=1, nodes=[start]), None)
        self.view.set_zoom(1.0, QPointF(420, 260))

    def document_folder(self) -> Path:
        """Where file dialogs open: the document's folder, else the last file's, else home."""
        if self._has_document and self.document.path:
            return Path(self.document.path).parent
        last = text_setting("lastFile")
        if last and Path(last).parent.is_dir():
            return Path(last).parent
        return Path.home()

    def open_dialog(self) -> None:
        if not self.maybe_save():
            return
        start = str(self.document_folder())
        path, _ = QFileDialog.getOpenFileName(self, "Open workflow", start, FILE_FILTER)
        if path:
            self.open_path(path, ask=False)

    def open_dropped(self, paths: list[str]) -> bool:
        """Files dropped on the window (from a file manager): the first one is opened as Open
        would (another tool's flow is imported); a window holds one workflow, so the others are
        named in the status bar, not opened."""
        paths = [p for p in paths if Path(p).is_file()]
        if not paths:
            self.statusBar().showMessage("Nothing to open there: drop a workflow file.", 5000)
            return False
        opened = self.open_path(paths[0])
        if opened and len(paths) > 1:
            rest = len(paths) - 1
            others = f"the other {rest} files were" if rest != 1 else "the other file was"
            self.statusBar().showMessage(f"Opened {Path(paths[0]).name}; a window holds one workflow, so {others} "
                                         "not opened.", 8000)
        return opened

    # A file dropped anywhere on the window (the welcome page, a panel); the canvas passes its own on.
    def dragEnterEvent(self, event) -> None:
        if local_paths(event.mimeData()):
            event.acceptProposedAction()
        else:
            super().dragEnterEvent(event)  # type: ignore[misc]

    def dropEvent(self, event) -> None:
        paths = local_paths(event.mimeData())
        if paths:
            event.acceptProposedAction()
            self.open_dropped(paths)
        else:
            super().dropEvent(event)  # type: ignore[misc]

    def open_path(self, path: str, ask: bool = True) -> bool:
        """Open ``path``; a file that cannot be read shows the loader's message and changes nothing.

        A big file (over ``BIG_FILE`` bytes) is read, checked and laid out in steps on a worker
        thread under a progress dialog with Cancel (:mod:`.opening`); the window keeps painting
        and a Cancel leaves the open document as it was."""
        if getattr(self, "_open_job", None) is not None:
            self.statusBar().showMessage("Another file is being opened; wait for it or cancel it first.", 4000)
            return False
        if ask and not self.maybe_save():
            return False
        with collector_paused():
            try:
                opened = self._load_with_progress(path)
            except WorkflowLoadError as err:
                QMessageBox.critical(self, "Cannot open workflow", str(err))
                return False
            if opened is None:  # cancelled: the open document stays as it was
                self.statusBar().showMessage(f"Opening {path} cancelled", 4000)
                return False
            if opened.imported is not None:
                imported = opened.imported
                text = (f"Opened {Path(path).name}, a {imported.label}, as a new unsaved workflow "
                        "(the original file is untouched)")
                self._add_recent(str(Path(path).resolve()))
                self.statusBar().showMessage(text, 15000)
                if imported.warnings:  # what changed on the way in, said where it can be read whole
                    notes = "\n".join(f"• {w.split(': ', 1)[-1]}" for w in imported.warnings)
                    QMessageBox.information(self, "Imported with notes", f"{text}.\n\n{notes}")
                return True
        self._add_recent(str(Path(path).resolve()))
        self.statusBar().showMessage(f"Opened {path}", 4000)
        return True

    def _show_opened(self, opened: Opened, path: str) -> None:
        """Replace the document by what an open read (its issues and canvas made ahead when given)."""
        if opened.imported is not None:
            # A file of another system opens as a new, unsaved document: saving never writes the original.
            self._replace_document(opened.workflow, None, opened)
            self.document.undo_stack.resetClean()  # unsaved: closing it asks first
            self._update_title()
        else:
            self._replace_document(opened.workflow, str(Path(path).resolve()), opened)

    def _load_with_progress(self, path: str) -> Opened | None:
        """Read ``path`` and show it; None when cancelled. A small file is read at once; a big one
        (over ``BIG_FILE`` bytes) in steps under a progress dialog (see :mod:`.opening`)."""
        try:
            size = Path(path).stat().st_size
        except OSError:
            size = 0
        if size <= BIG_FILE:
            workflow, imported = load_any_workflow(path)
            opened = Opened(workflow, imported, None, None)
            self._show_opened(opened, path)
            return opened
        if not hasattr(self, "_search_backend"):
            self._search_backend = self._web_search_available()
        job = OpenJob(self, path, size, self.scene.LAZY_NODES, self._search_backend)
        self._open_job = job
        self._open_progress = job.dialog
        try:
            return job.run(lambda opened: self._show_opened(opened, path))
        finally:
            self._open_job = None
            self._open_progress = None

    def cancel_open(self) -> None:
        """Cancel an open in progress (the window is closing, say); the document stays as it was."""
        job = getattr(self, "_open_job", None)
        if job is not None:
            job.cancel()

    def export_dialog(self) -> None:
        """File ▸ Export: the workflow as an AnythingLLM agent flow (refused, with the reason, when it
        uses what that format lacks)."""
        if not self._has_document:
            return
        try:
            export_anythingllm(self.document.workflow)  # refused (with why) before a path is asked for
        except ExportRefused as err:
            QMessageBox.warning(self, "Cannot export", str(err))
            return
        base = (self.document.workflow.name or "workflow").lower().replace(" ", "-")
        folder = Path(self.document.path).parent if self.document.path else Path.home()
        path, _ = QFileDialog.getSaveFileName(self, "Export as AnythingLLM agent flow",
                                              str(folder / f"{base}.anythingllm.json"),
                                              "AnythingLLM agent flows (*.json);;All files (*)")
        if not path:
            return
        self.export_to(path)

    def export_to(self, path: str) -> bool:
        import json

        try:
            text = json.dumps(export_anythingllm(self.document.workflow), ensure_ascii=False, indent=2) + "\n"
            atomic_write_text(path, text)
        except ExportRefused as err:
            QMessageBox.warning(self, "Cannot export", str(err))
            return False
        except OSError as err:
            QMessageBox.critical(self, "Cannot export", f"{path}: {err.strerror or err}")
            return False
        self.statusBar().showMessage(f"Exported {Path(path).name} as an AnythingLLM agent flow", 5000)
        return True

    def open_sample(self, path: str) -> bool:
        """Open a sample as an untitled copy, so saving never overwrites the shipped sample."""
        if not self.maybe_save():
            return False
        try:
            workflow = load_workflow(path)
        except WorkflowLoadError as err:
            QMessageBox.critical(self, "Cannot open sample", str(err))
            return False
        self._replace_document(workflow, None)
        self.statusBar().showMessage(f"Opened a copy of the sample {Path(path).name}; Save As to keep it.", 5000)
        return True

    def save(self) -> bool:
        if not self._has_document:
            return False
        if not self.document.path:
            return self.save_as()
        return self._save_to(self.document.path)

    def save_as(self) -> bool:
        if not self._has_document:
            return False
        # In the document's folder (an untitled one: the folder of the last file used).
        name = f"{(self.document.workflow.name or 'workflow').lower().replace(' ', '-')}.flow.json"
        suggested = self.document.path or str(self.document_folder() / name)
        path, _ = QFileDialog.getSaveFileName(self, "Save workflow as", suggested, FILE_FILTER)
        if not path:
            return False
        if not path.endswith(".json"):
            path += ".flow.json"
        return self._save_to(path)

    def _save_to(self, path: str) -> bool:
        try:
            self.document.save(path)
        except OSError as err:
            QMessageBox.critical(self, "Cannot save", f"{path}: {err.strerror or err}")
            return False
        except ValueError as err:  # text that cannot be written as UTF-8 (a lone surrogate); nothing was written
            QMessageBox.critical(self, "Cannot save", f"{path}: the workflow holds text that cannot be written "
                                 f"(not valid Unicode): {err}. The file was not changed; fix that text and save again.")
            return False
        self._add_recent(str(Path(path).resolve()))
        self.autosaver.clear()
        self._update_title()
        self._update_actions()
        self.statusBar().showMessage(f"Saved {path}", 4000)
        return True

    def revert(self) -> None:
        path = self.document.path
        if not path:
            return
        if self.document.is_modified():
            answer = QMessageBox.question(self, "Revert", f"Discard your changes and reload “{Path(path).name}”?",
                                          QMessageBox.StandardButton.Discard | QMessageBox.StandardButton.Cancel)
            if answer != QMessageBox.StandardButton.Discard:
                return
        self.open_path(path, ask=False)

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
