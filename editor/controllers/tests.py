"""The Tests dock's wiring: built beside the run history, its runs made with the Run menu's
provider and model, a case's run opened in the history, and "Add Run as Test Case" on a run of
the history (its output becomes an ``equals`` expectation to edit)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QDockWidget

from ..panels.tests_panel import TestsPanel
from ..window.settings import text_setting

__all__ = ["install_tests_dock", "run_options"]


def run_options() -> dict[str, Any]:
    """The eval's provider and model: the Run menu's (Run ▸ LLM Provider), as runs started here."""
    provider = text_setting("run/provider") or None
    model = text_setting("run/model") or None
    return {k: v for k, v in (("provider", provider), ("model", model)) if v}


def install_tests_dock(window: Any) -> tuple[TestsPanel, QDockWidget]:
    """Add the Tests dock to ``window`` (tabbed with the run history) and wire it."""
    panel = TestsPanel(
        window.document, window.store, run_options=run_options, shown_run=lambda: window.run_console.run_id
    )
    dock = QDockWidget("Tests", window)
    dock.setObjectName("testsDock")
    dock.setWidget(panel)
    window.addDockWidget(Qt.DockWidgetArea.BottomDockWidgetArea, dock)
    window.tabifyDockWidget(window.history_dock, dock)
    window.problems_dock.raise_()
    history = window.history

    def open_run(run_id: str) -> None:
        history.refresh()
        history.open_run(run_id)

    panel.run_open_requested.connect(open_run)
    panel.eval_finished.connect(lambda _result: history.refresh())

    def add_selected(kind: str) -> None:
        ids = history.selected_run_ids()
        if len(ids) == 1:
            dock.show()
            dock.raise_()
            panel.add_run_as_case(ids[0], kind)

    add_equals = QAction("Add Run as Test Case (Output Equals)", history)
    add_equals.triggered.connect(lambda _checked=False: add_selected("equals"))
    add_contains = QAction("Add Run as Test Case (Output Contains)", history)
    add_contains.triggered.connect(lambda _checked=False: add_selected("contains"))
    history.extra_actions = [add_equals, add_contains]
    # View ▸ Tests, after the other docks (the menus are built before this dock)
    toggle = dock.toggleViewAction()
    toggle.triggered.connect(lambda on: dock.raise_() if on else None)
    for item in window.menuBar().actions():
        menu = item.menu()
        if menu is not None and item.text().replace("&", "") == "View":
            before = getattr(window, "act_max_console", None)
            if before is not None and before in menu.actions():
                menu.insertAction(before, toggle)
            else:
                menu.addAction(toggle)
    return panel, dock
