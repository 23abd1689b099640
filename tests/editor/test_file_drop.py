"""A workflow file dropped on the window from a file manager opens (the canvas or the welcome
page); several: the first opens and the status bar says the rest did not; a folder: nothing."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication

from .conftest import copy_sample


def _drop(widget, paths) -> QDropEvent:
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    at = QPoint(widget.width() // 2, widget.height() // 2)
    enter = QDragEnterEvent(
        at, Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    )
    QApplication.sendEvent(widget, enter)
    assert enter.isAccepted()
    drop = QDropEvent(
        QPointF(at), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    )
    QApplication.sendEvent(widget, drop)
    return drop


def test_a_file_dropped_on_the_welcome_page_opens(window, qtbot, tmp_path):
    path = copy_sample(tmp_path, "review")
    assert window.document.path is None
    drop = _drop(window, [path])  # the window itself: the welcome page shows, no canvas
    assert drop.isAccepted()
    assert window.document.path == str(path)


def test_files_dropped_on_the_canvas_open_the_first(window, qtbot, tmp_path):
    first, second = copy_sample(tmp_path, "hello"), copy_sample(tmp_path, "review")
    assert window.files.open_path(str(first), ask=False)
    drop = _drop(window.view.viewport(), [second, first])
    assert drop.isAccepted()
    assert window.document.path == str(second)
    assert window.statusBar().currentMessage() == (
        "Opened review.flow.json; a window holds one workflow, so the other file was not opened."
    )


def test_a_folder_dropped_opens_nothing(window, qtbot, tmp_path):
    first = copy_sample(tmp_path, "hello")
    assert window.files.open_path(str(first), ask=False)
    _drop(window.view.viewport(), [tmp_path])
    assert window.document.path == str(first)
    assert window.statusBar().currentMessage() == "Nothing to open there: drop a workflow file."
