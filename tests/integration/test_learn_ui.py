"""Learning and routing in the window: the run form checks each variable's rules as the user
types (pattern, enum as a drop-down, min/max, pathMustExist) and refuses to start a run the
engine would refuse; Save as flow… on a run whose agent called tools; Repair… on a failed
node, then Run from here."""

from __future__ import annotations

from PySide6.QtWidgets import QComboBox

from editor.run.arguments import RunArguments

from .conftest import choose_provider
from .test_dataflow_ui import _agent, _flow, _open

DECLARED = [
    {"name": "code", "pattern": "[A-Z]{3}", "required": True},
    {"name": "colour", "enum": ["red", "green"], "value": "red"},
    {"name": "n", "type": "number", "min": 1, "max": 5, "value": 3},
    {"name": "file", "pathMustExist": True},
]


def test_fields_are_checked_as_you_type(qtbot, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "here.txt").write_text("x")
    form = RunArguments()
    qtbot.addWidget(form)
    form.set_variables(DECLARED)
    assert isinstance(form.fields["colour"], QComboBox)
    assert [form.fields["colour"].itemText(i) for i in range(form.fields["colour"].count())] == ["", "red", "green"]
    assert set(form.problems) == {"code"} and "required" in form.problems["code"]  # empty required
    with qtbot.waitSignal(form.validity_changed) as sig:
        form.fields["code"].setText("ABC")
    assert sig.args == [True] and form.valid
    form.fields["code"].setText("abc")
    assert "(pattern)" in form.problems["code"] and "code" in form.fields["code"].toolTip()
    assert "d1242f" in form.fields["code"].styleSheet()
    form.fields["code"].setText("XYZ")
    form.fields["n"].setText("6")
    assert "(max)" in form.problems["n"]
    form.fields["n"].setText("1")  # inclusive
    assert "n" not in form.problems
    form.fields["n"].setText("lots")
    assert "not a number" in form.problems["n"]
    form.fields["n"].setText("5")
    form.fields["file"].setText("nope.txt")
    assert "(pathMustExist)" in form.problems["file"]
    form.fields["file"].setText("here.txt")
    assert form.valid
    form.fields["colour"].setCurrentText("green")
    assert form.values()["colour"] == "green"


def test_the_console_refuses_a_run_the_form_marks(qtbot, window, tmp_path) -> None:
    _open(
        window,
        tmp_path,
        _flow(
            [
                {"id": "start", "type": "start", "x": 0, "y": 0,
                 "data": {"initialInput": "go", "variables": [{"name": "code", "pattern": "[A-Z]{3}", "value": "ABC"}]}},
                _agent("writer", 320, 0, "Code {{code}}"),
            ],
            [("start", "output", "writer")],
        ),
    )  # fmt: skip
    choose_provider(window, "echo")
    console = window.run_console
    console.arguments.fields["code"].setText("abcd")
    assert console.start_run() is None and not console.bridge.is_active
    assert "code" in console.header.status_text and "pattern" in console.header.status_text
    console.arguments.fields["code"].setText("XYZ")
    with qtbot.waitSignal(console.run_finished, timeout=10000) as finished:
        console.start_run()
    assert finished.args == ["completed"]
