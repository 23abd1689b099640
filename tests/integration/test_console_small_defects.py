"""Smaller defects of issue 14 around the console and the window: one sample list, word-cut
descriptions with "…", the palette hint, the inspector's empty state, the type filter per run,
the approval's input, the one-line failure banner, dialogs in the document's folder."""

from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtWidgets import QApplication, QFileDialog

from editor.window.welcome import SAMPLE_TEXT_WIDTH, sample_list

from .conftest import SAMPLES, choose_provider, click_node


def run_review_to_pause(qtbot, window) -> None:
    assert window.files.open_sample(str(SAMPLES / "review.flow.json"))
    choose_provider(window, "echo")
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    with qtbot.waitSignal(window.run_console.waiting_for_input_changed, timeout=5000):
        window.act_run.trigger()


def test_samples_have_one_name_and_whole_words(qtbot, window):
    menu_names = [a.text() for a in window.sample_menu.actions()]
    listed = sample_list()
    assert menu_names == [name for _p, name, _d in listed]
    for path, name, desc in listed:
        button = window.welcome.sample_buttons[path.name.removesuffix(".flow.json")]
        fm = button.fontMetrics()
        first, _, second = button.text().partition("\n")
        assert first == name
        assert fm.horizontalAdvance(second) <= SAMPLE_TEXT_WIDTH
        if second.endswith("…"):
            kept = second[:-1]
            assert desc.startswith(kept) and desc[len(kept)] in " ,;:.", (kept, desc)
        else:
            assert second == " ".join(desc.split())
    assert any(b.text().endswith("…") for b in window.welcome.sample_buttons.values())  # review's is long


def test_palette_hint_keeps_double_click_whole(window):
    from PySide6.QtWidgets import QLabel

    hint = next(label for label in window.palette.findChildren(QLabel) if label.objectName() == "hint")
    assert "double\u2011click" in hint.text()


def test_with_no_document_the_inspector_shows_an_empty_state(qtbot, window):
    assert not window.session.has_document
    assert window.inspector_stack.currentWidget() is window.inspector_empty
    assert "No workflow is open" in window.inspector_empty.text()
    window.files.new_document()
    assert window.inspector_stack.currentWidget() is window.inspector_tabs


def test_the_type_filter_is_reset_for_each_run(qtbot, window):
    run_review_to_pause(qtbot, window)
    console = window.run_console
    console.set_type_groups(["Errors"])
    assert console.type_button.text() != "Types: all"
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        console.approvals.active_card.approve_button.click()
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    with qtbot.waitSignal(console.waiting_for_input_changed, timeout=5000):
        window.act_run.trigger()
    assert console.type_button.text() == "Types: all"
    assert any(e.type == "step_start" for e in console.visible_entries())


def test_the_approval_shows_its_input_and_its_name_once(qtbot, window):
    run_review_to_pause(qtbot, window)
    console = window.run_console
    card_input = console.approvals.active_card.request.input_text
    click_node(qtbot, window.view, window.scene, "signoff")
    details = window.node_run_details
    assert details.details is not None and details.details["nodeId"] == "signoff"
    assert details.input_view.toPlainText().split() == card_input.split()
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        console.approvals.active_card.approve_button.click()
    click_node(qtbot, window.view, window.scene, "send")
    click_node(qtbot, window.view, window.scene, "signoff")
    assert details.input_view.toPlainText().split() == card_input.split()  # after the decision too
    # the entry header names the node once ("Approval (signoff)", not "... (signoff) (signoff)")
    row = next(r for r in range(console.proxy.rowCount()) if console.visible_entries()[r].node_id == "signoff")
    console.view.setCurrentIndex(console.proxy.index(row, 0))
    assert console.entry_header.text().count("signoff") == 1, console.entry_header.text()


def test_a_failed_run_banner_is_one_line(qtbot, window, tmp_path):
    data = json.loads((SAMPLES / "hello.flow.json").read_text(encoding="utf-8"))
    next(n for n in data["nodes"] if n["type"] == "agent")["data"]["provider"] = "no-such-provider"
    path = tmp_path / "broken.flow.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    assert window.files.open_path(str(path))
    console = window.run_console
    run_y = console.run_button.mapTo(console, console.run_button.rect().topLeft()).y()
    qtbot.waitUntil(lambda: window.act_run.isEnabled(), timeout=2000)
    with qtbot.waitSignal(console.run_finished, timeout=5000):
        window.act_run.trigger()
    QApplication.processEvents()
    label = console.status_label
    full = console.header.status_text
    assert full.startswith("● Failed") and len(full) > 60
    assert "\n" not in label.text() and label.text().endswith("…")
    assert label.height() <= label.fontMetrics().lineSpacing() * 2
    assert label.toolTip() == full and console.header.details_button.isVisible()
    assert console.run_button.mapTo(console, console.run_button.rect().topLeft()).y() == run_y


def test_save_as_and_exports_open_in_the_documents_folder(qtbot, window, tmp_path, monkeypatch):
    folder = tmp_path / "flows"
    folder.mkdir()
    path = folder / "hello.flow.json"
    path.write_text((SAMPLES / "hello.flow.json").read_text(encoding="utf-8"), encoding="utf-8")
    assert window.files.open_path(str(path))
    asked: list[str] = []
    monkeypatch.setattr(
        QFileDialog,
        "getSaveFileName",
        staticmethod(lambda _parent, _title, where, *_a, **_k: (asked.append(where), ("", ""))[1]),
    )
    window.files.save_as()
    console = window.run_console
    console._ask_export_jsonl()
    console._ask_export_record()
    assert len(asked) == 3
    assert all(Path(a).parent == folder for a in asked), asked


def test_the_palette_shows_its_last_entry_in_the_default_layout(qtbot, window):
    window.resize(1400, 860)
    lst = window.palette.list
    window._fit_palette()

    def last_visible() -> bool:
        QApplication.processEvents()
        rect = lst.visualItemRect(lst.item(lst.count() - 1))
        return rect.top() >= 0 and rect.bottom() <= lst.viewport().height()

    def bottom_at_its_minimum() -> bool:
        QApplication.processEvents()
        return window.problems_dock.height() <= 240 + 40  # (within the splitter's handle and margins)

    # With the join and loop kinds (issue 15) seven entries need more than 860 px leave at the
    # 240 px the bottom docks keep: the docks then give up all they can and the list scrolls.
    qtbot.waitUntil(lambda: last_visible() or bottom_at_its_minimum(), timeout=2000)


def test_every_sample_is_in_view_on_the_welcome_page_of_a_default_window(qtbot, window):
    """In the default layout at the size the window opens with (no recent files), the five
    samples all show without scrolling; the last one was cut off by the bottom panels."""
    from PySide6.QtWidgets import QScrollArea

    window.resize(1400, 860)
    window._fit_palette()  # as when the window is first shown (see the palette's test above)
    viewport = window.welcome.findChild(QScrollArea, "welcomeScroll").viewport()
    assert len(window.welcome.sample_buttons) >= 5 and not window.welcome.recent_head.isVisible()

    def all_in_view() -> bool:
        QApplication.processEvents()
        return all(
            0 <= b.mapTo(viewport, b.rect().bottomLeft()).y() < viewport.height()
            for b in window.welcome.sample_buttons.values()
        )

    qtbot.waitUntil(all_in_view, timeout=2000)
