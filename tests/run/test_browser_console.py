"""A real browser step run from the console: its screenshot is shown as a picture in the entry
pane and in the node's Run tab (skipped without Playwright and Chromium)."""

from __future__ import annotations

import pytest

from engine import parse_workflow
from engine.browser import browser_problem
from tests.browser.site import Site

pytestmark = pytest.mark.skipif(browser_problem() is not None, reason=str((browser_problem() or ("", ""))[1]))


def test_a_browser_steps_screenshot_shows_in_the_console_and_the_run_tab(qtbot, console) -> None:
    with Site() as site:
        wf = parse_workflow(
            {
                "nodes": [
                    {"id": "s", "type": "start", "data": {}},
                    {
                        "id": "web",
                        "type": "browser",
                        "data": {
                            "steps": [
                                {"action": "goto", "value": site.url("/login")},
                                {"action": "type", "selector": "#user", "value": "ada"},
                                {"action": "screenshot"},
                                {"action": "extractText", "selector": "h1"},
                            ]
                        },
                    },
                ],
                "connections": [{"source": "s", "target": "web"}],
            }
        )
        console.set_workflow(wf)
        with qtbot.waitSignal(console.run_finished, timeout=30000):
            console.run_action.trigger()
    shots = [e for e in console.visible_entries() if e.type == "browser_screenshot"]
    assert len(shots) == 1
    console.entry_pane.show_entry(shots[0])
    assert console.entry_pane.kind == "image" and "<img" in console.entry_view.toHtml()
    details = console.node_details("web")
    assert details["screenshot"][:4] == b"\x89PNG"
    console.node_panel.set_details(details, "Browser")
    assert console.node_panel.screenshot.pixmap() is not None and not console.node_panel.screenshot.pixmap().isNull()
