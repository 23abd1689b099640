"""The run console at the app's default size: it can be made big (most of the window,
maximised, floating), a paused run shows its card beside at least six log entries, and
the Node tab's rows and the Subagents table's columns are not drawn over or cut."""

from __future__ import annotations

from PySide6.QtCore import QRect, Qt
from PySide6.QtWidgets import QApplication, QDockWidget

from editor.controllers.runs import CONSOLE_SHARE
from editor.run.details import NodeRunDetails
from editor.run.trace import SubagentTrace

from .conftest import SAMPLES, choose_provider


def settle(qtbot) -> None:
    QApplication.processEvents()
    qtbot.wait(20)
    QApplication.processEvents()


def default_size(qtbot, window) -> None:
    window.resize(1400, 860)
    qtbot.waitUntil(lambda: window.height() == 860, timeout=2000)
    settle(qtbot)


def test_the_run_console_can_take_most_of_the_window(qtbot, window, isolated):
    # a long recent list made the hidden welcome page's minimum height block the dock
    files = []
    for i in range(10):
        path = isolated / f"flow{i}.flow.json"
        path.write_text((SAMPLES / "hello.flow.json").read_text(encoding="utf-8"), encoding="utf-8")
        files.append(str(path))
    from editor.window.settings import settings

    settings().setValue("recentFiles", files)
    window.files.show_welcome()
    default_size(qtbot, window)
    dock = window.run_console_dock
    dock.show()
    dock.raise_()
    for opened in (False, True):
        if opened:
            assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
        window.resizeDocks([dock], [window.height()], Qt.Orientation.Vertical)
        settle(qtbot)
        assert dock.height() >= 0.7 * window.height(), (opened, dock.height(), window.height())
    assert dock.features() & QDockWidget.DockWidgetFeature.DockWidgetFloatable  # detachable


def test_the_run_console_maximises_and_comes_back(qtbot, window):
    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    default_size(qtbot, window)
    dock = window.run_console_dock
    dock.show()
    dock.raise_()
    settle(qtbot)
    before = dock.height()
    view_menu = next(a.menu() for a in window.menuBar().actions() if a.text() == "&View")
    assert window.act_max_console in view_menu.actions()
    assert window.act_max_console.shortcut().toString() == "Ctrl+Shift+M"
    window.act_max_console.trigger()
    settle(qtbot)
    assert window.act_max_console.isChecked()
    assert dock.isVisible() and not window.central.isVisible() and not window.palette_dock.isVisible()
    assert dock.height() >= 0.8 * window.height()
    window.act_max_console.trigger()
    settle(qtbot)
    assert not window.act_max_console.isChecked()
    assert window.central.isVisible() and window.palette_dock.isVisible() and window.inspector_dock.isVisible()
    assert abs(dock.height() - before) <= 4


def test_a_paused_run_shows_its_card_beside_six_log_entries_at_the_default_size(qtbot, window):
    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    default_size(qtbot, window)
    choose_provider(window, "echo")
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    console = window.run_console
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=5000):
        window.act_run.trigger()
    qtbot.waitUntil(lambda: console.approvals.active_card is not None, timeout=2000)
    settle(qtbot)
    card = console.approvals.active_card
    qtbot.waitUntil(lambda: card.approve_button.isVisible(), timeout=2000)
    # the input box is collapsed to one line while the run waits
    assert not console.input_edit.isVisible() and console.header.input_summary.isVisible()
    assert console.header.input_summary.text().startswith("Input: Hello")
    # the card is beside the log, not above it
    log_rect = QRect(console.view.mapTo(console, console.view.rect().topLeft()), console.view.size())
    card_rect = QRect(card.mapTo(console, card.rect().topLeft()), card.size())
    assert card_rect.left() >= log_rect.right(), (card_rect, log_rect)
    assert card_rect.top() < log_rect.bottom() and card_rect.bottom() > log_rect.top()
    for button in (card.approve_button, card.reject_button):
        r = QRect(button.mapTo(console, button.rect().topLeft()), button.size())
        assert console.rect().contains(r)
    viewport = console.view.viewport().rect()
    whole = [
        r
        for r in range(console.proxy.rowCount())
        if viewport.contains(console.view.visualRect(console.proxy.index(r, 0)))
    ]
    assert console.proxy.rowCount() >= 6 and len(whole) >= 6, (len(whole), viewport)


def _rect(widget, ancestor) -> QRect:
    return QRect(widget.mapTo(ancestor, widget.rect().topLeft()), widget.size())


def test_the_node_tab_rows_never_overlap(qtbot, app):
    details = NodeRunDetails()
    qtbot.addWidget(details)
    details.set_details(
        {
            "nodeId": "triage",
            "state": "done",
            "duration": 1.5,
            "usage": {"prompt_tokens": 29, "completion_tokens": 31},
            "input": "in",
            "output": "out",
        },
        "Triage and draft",
    )
    for size in ((380, 90), (380, 140), (380, 600)):
        details.resize(*size)
        details.show()
        qtbot.waitExposed(details)
        settle(qtbot)
        body = details.scroll.widget()
        rows = [
            details.title,
            details.state_label,
            details.duration_label,
            details.tokens_label,
            details.input_view,
            details.output_view,
        ]
        rects = [_rect(w, body) for w in rows]
        for i, a in enumerate(rects):
            assert a.height() > 0
            for b in rects[i + 1 :]:
                assert not a.intersects(b), (size, a, b)


def test_the_subagents_table_shows_its_duration_and_input_columns(qtbot, app):
    trace = SubagentTrace()
    qtbot.addWidget(trace)
    for width in (380, 700):
        trace.resize(width, 300)
        trace.show()
        qtbot.waitExposed(trace)
        settle(qtbot)
        header = trace.tree.header()
        fm = header.fontMetrics()
        assert header.sectionSize(2) >= fm.horizontalAdvance("Duration") + 12
        visible = trace.tree.viewport().width()
        for col in range(5):
            assert header.sectionViewportPosition(col) + header.sectionSize(col) <= visible + 1, (width, col)
            assert header.sectionSize(col) >= 40


def test_on_a_short_window_a_paused_run_gets_room_to_read_the_card_and_gives_it_back(qtbot, window):
    # 1,280 × 690: a laptop screen. The console grew to about half the window at Run, and the
    # card got 150 px of it: the text under review was cut after two lines.
    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    window.resize(1280, 690)
    qtbot.waitUntil(lambda: window.height() == 690, timeout=2000)
    settle(qtbot)
    choose_provider(window, "echo")
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    console, dock = window.run_console, window.run_console_dock
    before = window.problems_dock.height()  # the bottom docks' height (tabbed): Run only grows it
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=5000):
        window.act_run.trigger()
    qtbot.waitUntil(lambda: console.approvals.active_card is not None, timeout=2000)
    card = console.approvals.active_card
    qtbot.waitUntil(lambda: card.review.isVisible(), timeout=2000)
    at_run = max(before, min(460, int(690 * CONSOLE_SHARE)))  # what Run gives the console
    qtbot.waitUntil(lambda: dock.height() > at_run + 40, timeout=2000)
    settle(qtbot)
    assert dock.height() <= 690 * 2 / 3 + 1  # the canvas keeps a third
    # the text under review is shown whole, inside the part of the card's panel that shows
    review = _rect(card.review, console.approvals)
    assert console.approvals.rect().contains(review), (review, console.approvals.rect())
    assert "charged twice" in card.review.toPlainText()
    # decided: the console goes back to the height it had
    qtbot.waitUntil(lambda: not console.bridge.is_busy, timeout=3000)
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        qtbot.mouseClick(card.approve_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: abs(dock.height() - at_run) <= 30, timeout=5000)
