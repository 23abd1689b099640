"""The file kind in the inspector: its generated form has a path field with a Browse… file
picker; choosing a file is one edit of the node's data."""

from __future__ import annotations

from PySide6.QtWidgets import QFileDialog

from editor.panels.data_form import DataForm, FilePathEdit
from engine import FileData


def test_browse_sets_the_path(qtbot, tmp_path, monkeypatch) -> None:
    chosen = str(tmp_path / "rows.csv")
    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(lambda *a, **k: (chosen, "")))
    form = DataForm(FileData, "Read file")
    qtbot.addWidget(form)
    form.load(FileData())
    picker = form.widgets["path"]
    assert isinstance(picker, FilePathEdit)
    assert "format" in form.widgets and "maxChars" in form.widgets
    with qtbot.waitSignal(form.edited) as edited:
        picker.browse.click()
    assert edited.args == ["path", chosen, False]
    assert picker.line_edit.text() == chosen
    form.load(FileData(path="docs/{{name}}.txt"))
    assert picker.line_edit.text() == "docs/{{name}}.txt"
