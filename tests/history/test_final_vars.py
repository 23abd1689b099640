"""The history shows the variables a run ended with (kept in its record) in the input column's tooltip."""

from __future__ import annotations

from PySide6.QtCore import Qt

from editor.history.model import COL_INPUT, RunHistoryModel
from engine import RunInfo


def test_the_input_tooltip_says_the_final_variables(qtbot) -> None:
    model = RunHistoryModel()
    asked: list[str] = []
    model.final_vars = lambda run_id: asked.append(run_id) or {"city": "Oslo", "n": 3}
    done = RunInfo("r1", "Flow", None, "go", "completed", 1.0, 2.0, None, False, None, arguments={"city": "Oslo"})
    live = RunInfo("r2", "Flow", None, "go", "running", 1.0, None, None, False, None)
    model.set_page([done, live])
    tip = model.data(model.index(0, COL_INPUT), Qt.ItemDataRole.ToolTipRole)
    assert "Arguments: city=Oslo" in tip and "Variables at the end: city=Oslo, n=3" in tip
    tip = model.data(model.index(1, COL_INPUT), Qt.ItemDataRole.ToolTipRole)
    assert "Variables at the end" not in tip
    assert asked == ["r1"]  # a running run is not asked
